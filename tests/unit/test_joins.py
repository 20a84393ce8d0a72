"""Joins judged against every run of the real runtime: CR304 on joins no run can release,
CR301 on what runs beside a join released late."""

from __future__ import annotations

from exhaustive import Shape, Way, build, every_run, forward_shapes, shapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import graph_specs

from corral import END, Guard
from corral.analysis._graph import SpecGraph
from corral.analysis._joins import _Dominators
from corral.errors import InvalidUpdateError, StuckJoinError
from corral.spec import START, GraphSpec

NEW_KINDS = ("can only run after", "no run runs both", "waits for itself")
"""Words of the CR304 findings about joins no run releases (analysis/_joins.py)."""
SOME_KINDS = (
    "loop that avoids",
    "superstep the join runs in",
    "it may take one",
    "re-enters it",
    "may run again",
)
"""Words of the CR304 findings about joins some runs leave held: entered again by a node
running beside them, or left by a list router that takes one branch."""


def cr304(shape: Shape) -> list[tuple[tuple[str, ...], str]]:
    return [(d.nodes, d.message) for d in build(shape).check() if d.code == "CR304"]


def every_run_is_stuck(shape: Shape) -> bool:
    outcomes, complete = every_run(build(shape))
    assert complete
    return all(isinstance(o.error, StuckJoinError) for o in outcomes)


AFTER = Shape(
    (
        ("plan", Way("then", ("a",), start=True)),
        ("a", Way("then", ("join",))),
        ("join", Way("then", ("b",), wait_for=("a", "b"))),
        ("b", Way("then", (END,))),
    )
)
EXCLUSIVE = Shape(
    (
        ("pick", Way("router", ("a", "b"), start=True)),
        ("a", Way("then", ("join",))),
        ("b", Way("then", ("join",))),
        ("join", Way("then", (END,), wait_for=("a", "b"))),
    )
)
LOOPING = Shape(
    (
        ("plan", Way("then", ("work", "b"), start=True)),
        ("work", Way("router", ("work", "join"), guards=(Guard("work", max=2, otherwise="join"),))),
        ("b", Way("then", ("join",))),
        ("join", Way("then", (END,), wait_for=("work", "b"))),
    )
)
ITSELF = Shape(
    (
        ("plan", Way("then", ("join",), start=True)),
        ("join", Way("then", (END,), wait_for=("plan", "join"))),
    )
)


def test_a_join_waiting_for_a_node_after_it_is_cr304() -> None:
    """join waits for b, which only runs after join: every run is stuck, and CR304 says why."""
    assert every_run_is_stuck(AFTER)
    assert cr304(AFTER) == [
        (
            ("join", "b"),
            "the join 'join' waits for 'b', which can only run after it (no route from the "
            "start reaches 'b' without passing through 'join'): a run that routes to 'join' "
            "waits there forever (StuckJoinError); drop 'b' from wait_for, or route to it "
            "before the join",
        )
    ]


def test_a_join_waiting_for_itself_is_cr304() -> None:
    """A join listed in its own wait_for never runs before it does."""
    assert every_run_is_stuck(ITSELF)
    assert [nodes for nodes, _ in cr304(ITSELF)] == [("join",)]


def test_a_join_waiting_for_two_exclusive_routes_is_cr304() -> None:
    """pick routes to a or to b, never both: join, waiting for both, never runs."""
    assert every_run_is_stuck(EXCLUSIVE)
    assert cr304(EXCLUSIVE) == [
        (
            ("join", "a", "b"),
            "the join 'join' waits for 'a' and 'b', but no run runs both before it (neither "
            "leads to the other and no fan-out leads to both, e.g. two routes of one router): "
            "a run that routes to 'join' waits there forever (StuckJoinError); without "
            "wait_for the node runs after whichever ran, or run both with a fan-out, e.g. "
            "then=('a', 'b')",
        )
    ]


def test_a_join_a_looping_node_re_enters_is_cr304() -> None:
    """work loops beside b: join is released after work's first lap and b's arrival, then
    work's way out enters it again, waiting for b, which never runs again."""
    outcomes, complete = every_run(build(LOOPING))
    assert complete
    stuck = [o for o in outcomes if isinstance(o.error, StuckJoinError)]
    assert len(stuck) == len(outcomes) - 1  # only the run where work never loops ends
    assert cr304(LOOPING) == [
        (
            ("join", "work", "b"),
            "node 'work' routes to the join 'join' and can run again without it (it is on a "
            "loop that avoids the join), so the join may be released while 'work' still "
            "loops, then entered again by it; the join then waits for 'b' again, which cannot "
            "run after it: a run that routes to 'join' waits there forever (StuckJoinError); "
            "route the loop's way out through a node that runs once and wait for that node "
            "instead of 'work'",
        )
    ]


def test_joins_every_run_releases_are_quiet() -> None:
    """Branches of different lengths, a join in a guarded loop, a loop that ends before the
    join, a listed node that routes elsewhere, and several Send runs of one node: no run is
    stuck and CR304 is silent."""
    quiet = [
        Shape(
            (
                ("plan", Way("then", ("a", "b"), start=True)),
                ("a", Way("then", ("c",))),
                ("c", Way("then", ("join",))),
                ("b", Way("then", ("join",))),
                (
                    "join",
                    Way(
                        "router",
                        ("plan", END),
                        (Guard("plan", max=2, otherwise=END),),
                        wait_for=("c", "b"),
                    ),
                ),
            )
        ),
        Shape(
            (
                ("plan", Way("then", ("work",), start=True)),
                (
                    "work",
                    Way("router", ("work", "join"), (Guard("work", max=2, otherwise="join"),)),
                ),
                ("join", Way("then", (END,), wait_for=("plan", "work"))),
            )
        ),
        Shape(  # a listed node counts when it has run, wherever it routes (API.md 4)
            (
                ("a", Way("then", ("c",), start=True)),
                ("b", Way("then", ("join",), start=True)),
                ("c", Way("then", (END,))),
                ("join", Way("then", (END,), wait_for=("a", "b"))),
            )
        ),
        Shape(
            (
                ("plan", Way("send", ("work",), start=True)),
                ("work", Way("then", ("join",))),
                ("join", Way("then", (END,), wait_for=("work",))),
            )
        ),
    ]
    for shape in quiet:
        outcomes, complete = every_run(build(shape))
        assert complete and not [o for o in outcomes if o.error is not None], shape
        assert cr304(shape) == [], shape


def _start_join_among_starts(shape: Shape) -> bool:
    """Whether a join is a start node beside other start nodes: CR304 counts what ran
    beside the join's unconditional first run toward every later run too, so a join held
    on its second run for a start node that never runs again is not seen (docs/rules.md,
    "What it cannot see"); its claims are still judged."""
    starts = [way for _, way in shape.ways if way.start]
    return len(starts) > 1 and any(way.wait_for for way in starts)


def _waits_for_a_looping_node(shape: Shape) -> bool:
    """Whether a join waits for a node on a loop of routes that does not route to it, or
    whose route back is guarded: how often it runs is then decided by guards, which CR304
    does not read (a listed node whose loop ends first leaves the join held; docs/rules.md,
    "What it cannot see"); its claims are still judged."""
    succ = {
        name: set(way.targets) | {g.otherwise for g in way.guards if g.otherwise}
        for name, way in shape.ways
    }

    def loops(node: str) -> bool:
        seen, stack = set(), list(succ.get(node, ()))
        while stack:
            n = stack.pop()
            if n == node:
                return True
            if n not in seen:
                seen.add(n)
                stack.extend(succ.get(n, ()))
        return False

    guarded = {g.target for _, way in shape.ways for g in way.guards}
    return any(
        loops(w) and (join not in succ.get(w, ()) or w in guarded)
        for join, way in shape.ways
        for w in way.wait_for
    )


def _guards_a_route_never_taken(shape: Shape) -> bool:
    """Whether a guard allows its route no run (``max=0``): CR304 reads every route as
    taken, so a listed node only that route runs again may be counted on, and the join
    some guard count leaves waiting is not seen (docs/rules.md, "What it cannot see")."""
    return any(g.max == 0 for _, way in shape.ways for g in way.guards)


def _judged(shape: Shape) -> None:
    g = build(shape)
    found = g.check()
    if not any(w.wait_for for _, w in shape.ways):
        return
    if any(d.severity == "error" and d.code != "CR304" for d in found):
        return
    outcomes, complete = every_run(g, limit=300)
    if not complete:
        return
    stuck = [o for o in outcomes if isinstance(o.error, StuckJoinError)]
    messages = [d.message for d in found if d.code == "CR304"]
    if (
        stuck
        and len(stuck) == len(outcomes)
        and not _start_join_among_starts(shape)
        and not _waits_for_a_looping_node(shape)
        and not _guards_a_route_never_taken(shape)
    ):
        assert messages, "every run is stuck at a join, and CR304 is silent"
    ways = dict(shape.ways)
    for finding in found:
        if finding.code != "CR304":
            continue  # other findings may name no node (CR203 on max_steps)
        join = finding.nodes[0]
        ran = any(join in o.ran for o in outcomes)
        if any(kind in finding.message for kind in SOME_KINDS):
            if len(finding.nodes) > 2:
                entries = [ways[finding.nodes[-2]]]
            else:  # a route back into the join: its nodes are the join and the awaited node
                entries = list(ways.values()) if "re-enters it" in finding.message else []
            if any(g.target == join for entry in entries for g in entry.guards):
                continue  # a guard may stop the route back into the join: guards are not read
            if len(finding.nodes) > 2 and any(
                g.target == finding.nodes[1] for way in ways.values() for g in way.guards
            ):
                continue  # a guard may stop the route that runs the entry or the fork again
            if _guards_a_route_never_taken(shape):
                continue  # the loop that enters the join again may be one no run takes
            assert stuck or not ran, "CR304 says some run leaves a join held, none does"
        elif any(kind in finding.message for kind in NEW_KINDS):
            if any(join in w.targets for w in ways.values() if w.kind == "send"):
                # a Send runs the join without holding it: the finding is on its routes
                assert stuck or not ran, "CR304 says a route into a join holds it, none does"
            else:
                assert not ran, "CR304 says no run releases a join, and a run ran it"


JUDGED = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@JUDGED
@given(forward_shapes(sends=True))
def test_cr304_against_every_run(shape: Shape) -> None:
    """A graph every run of which is stuck at a join has CR304; a join CR304 says no run
    releases never runs, and one it says a loop re-enters is stuck in some run, or never
    entered (mostly forward graphs, joins, fan-outs, Send)."""
    _judged(shape)


@JUDGED
@given(st.integers(3, 5).flatmap(lambda n: shapes(max_nodes=n)))
def test_cr304_against_every_run_on_any_routes(shape: Shape) -> None:
    """The same on graphs with routes anywhere (self-joins, back routes, otherwise routes)."""
    _judged(shape)


LATE = Shape(
    (
        ("plan", Way("then", ("a", "b"), start=True)),
        ("a", Way("then", ("join",))),
        ("b", Way("then", ("c",))),
        ("c", Way("then", ("d",))),
        ("d", Way("then", (END,), writes_x=True)),
        ("join", Way("then", (END,), wait_for=("a", "c"), writes_x=True)),
    )
)


def test_a_join_released_a_superstep_after_its_route_conflicts_with_what_runs_beside_it() -> None:
    """a routes to join in superstep 2; join waits for c too, which runs in superstep 3, so
    join runs in superstep 4 beside d: both write x, which has no reducer (CR301)."""
    outcomes, complete = every_run(build(LATE))
    assert complete and len(outcomes) == 1
    error = outcomes[0].error
    assert isinstance(error, InvalidUpdateError) and set(error.nodes) == {"d", "join"}
    found = [(d.code, d.nodes) for d in build(LATE).check() if d.severity == "error"]
    assert found == [("CR301", ("d", "join"))]


LONG_BRANCH = Shape(
    (
        ("plan", Way("then", ("a", "b"), start=True)),
        ("a", Way("then", ("c",))),
        ("c", Way("then", ("join",), writes_x=True)),
        ("b", Way("then", ("join",))),
        ("join", Way("then", (END,), wait_for=("c", "b"), writes_x=True)),
    )
)


def test_a_join_after_a_longer_branch_does_not_run_beside_its_last_node() -> None:
    """b routes to join in superstep 2, but join waits for c too, which runs in superstep
    3: join runs in superstep 4, after c, so their writes of x never meet (no CR301)."""
    outcomes, complete = every_run(build(LONG_BRANCH))
    assert complete and [(o.ran, o.error) for o in outcomes] == [
        (["plan", "a", "b", "c", "join"], None)
    ]
    assert build(LONG_BRANCH).check() == []


def test_a_start_join_runs_first_without_waiting() -> None:
    """A join that is a start node runs in the first superstep (its first run waits for
    nothing), then once its listed node has run: no CR304 for the start's route into it."""
    shape = Shape(
        (
            ("a", Way("then", ("join",), start=True)),
            ("join", Way("then", (END,), wait_for=("a",), start=True)),
        )
    )
    outcomes, complete = every_run(build(shape))
    assert complete and [(o.ran, o.error) for o in outcomes] == [(["a", "join", "join"], None)]
    assert build(shape).check() == []


@JUDGED
@given(forward_shapes(sends=True))
def test_cr301_against_every_run(shape: Shape) -> None:
    """Two nodes some run makes write x in one superstep (no reducer) are a CR301 finding."""
    g = build(shape)
    reported = [set(d.nodes) for d in g.check() if d.code == "CR301"]
    outcomes, _complete = every_run(g, limit=200)
    for outcome in outcomes:
        if isinstance(outcome.error, InvalidUpdateError):
            assert any(set(outcome.error.nodes) <= nodes for nodes in reported), outcome.error


@settings(max_examples=300, deadline=None)
@given(graph_specs(max_nodes=8))
def test_what_runs_before_a_join_is_what_a_walk_avoiding_it_reaches(spec: GraphSpec) -> None:
    """The dominator tree CR304 asks (built once per check) answers 'can n run before j's
    first run' exactly as a walk from the start that never enters j."""
    graph = SpecGraph(spec)
    succ = graph.node_succ
    pred: dict[str, list[str]] = {}
    for source, targets in succ.items():
        for target in targets:
            pred.setdefault(target, []).append(source)
    starts = [n for n in graph.succ[START] if graph.is_node(n)]
    dominators = _Dominators(starts, succ, pred)
    for join in graph.names:
        seen = {s for s in starts if s != join}
        stack = list(seen)
        while stack:
            for child in succ[stack.pop()]:
                if child != join and child not in seen:
                    seen.add(child)
                    stack.append(child)
        assert {n for n in graph.names if dominators.before(n, join)} == seen


def test_a_join_a_send_targets_and_a_route_enters_is_held_when_it_waits_for_itself() -> None:
    """n0 may send to n2, which waits for itself: a Send runs it at once, but n1's route
    into it holds it until n2 runs since its own last run, which never happens, so every
    run raises StuckJoinError (CR304 left joins a Send targets alone and was silent)."""
    shape = Shape(
        (
            ("n0", Way("send", ("n1", "n2"), start=True)),
            ("n1", Way("then", ("n2",), start=True)),
            ("n2", Way("then", (END,), wait_for=("n0", "n1", "n2"))),
        )
    )
    outcomes, complete = every_run(build(shape))
    assert complete and all(isinstance(o.error, StuckJoinError) for o in outcomes)
    assert any("n2" in o.ran for o in outcomes)  # the Send ran it
    assert cr304(shape) == [
        (
            ("n2",),
            "the join 'n2' waits for itself, which cannot run before it does: a run that "
            "routes to 'n2' waits there forever (StuckJoinError); drop 'n2' from its own "
            "wait_for",
        )
    ]


def test_a_start_join_a_send_targets_is_not_held_by_the_start() -> None:
    """A start join that waits for itself and that only a Send enters again runs first
    without waiting and then only by Send: no run is held, and CR304 is silent."""
    shape = Shape(
        (
            ("n0", Way("send", ("n1",), start=True)),
            ("n1", Way("then", ("n2",), wait_for=("n0", "n1"), start=True)),
            ("n2", Way("then", (END,), start=True)),
        )
    )
    outcomes, complete = every_run(build(shape))
    assert complete and not [o for o in outcomes if o.error is not None]
    assert cr304(shape) == []


def test_a_start_join_waiting_for_itself_counts_its_first_run() -> None:
    """n2 is a start node a Send targets and waits for itself: its first run counts toward
    its next one (like n0's beside it), so n1's route into it is released once n1 has run:
    every run ends, and CR304 is silent (it said a route into n2 waits forever)."""
    shape = Shape(
        (
            ("n0", Way("send", ("n1", "n2"), start=True)),
            ("n1", Way("then", ("n2",), wait_for=("n0",))),
            ("n2", Way("then", (END,), wait_for=("n0", "n1", "n2"), start=True)),
        )
    )
    outcomes, complete = every_run(build(shape))
    assert complete and not [o for o in outcomes if o.error is not None]
    assert ["n0", "n2", "n1", "n2"] in [o.ran for o in outcomes]
    assert cr304(shape) == []


def test_a_join_a_fan_out_holds_does_not_run_beside_its_other_branch() -> None:
    """b routes to join and to a at once; join waits for a too, so it runs a superstep
    after a, never beside it: a does not enter it again after it ran, every run ends,
    and CR304 is silent (it read join as running beside a, the fan-out's other branch)."""
    shape = Shape(
        (
            ("s", Way("then", ("a",), start=True)),
            ("a", Way("then", ("join",))),
            ("b", Way("then", ("join", "a"), start=True)),
            ("join", Way("then", (END,), wait_for=("s", "a", "b"))),
        )
    )
    outcomes, complete = every_run(build(shape))
    assert complete and [(o.ran, o.error) for o in outcomes] == [(["s", "b", "a", "join"], None)]
    assert cr304(shape) == []
