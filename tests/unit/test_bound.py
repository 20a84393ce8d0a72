"""g.bound(): never below a real run, exact on disjoint singly-guarded cycles; CR203."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any, Literal, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import END, Cost, End, Graph, Guard, NodeCapError, Retry
from corral.analysis._cuts import strongly_connected
from corral.analysis.bound import bound_of
from corral.spec import GraphSpec


class State(TypedDict):
    n: int


def _node(state: State) -> None:
    return None


def _router(*targets: str) -> Any:
    def route(state: State) -> str:
        return targets[0]

    route.__annotations__ = {"state": State, "return": Literal[targets]}
    return route


@st.composite
def guarded_graphs(draw: st.DrawFn) -> Graph[State]:
    """Small graphs with one start and no fan-out: routers or then=, random guards."""
    size = draw(st.integers(1, 5))
    names = [f"n{i}" for i in range(size)]
    g = Graph(State, max_steps=10_000)
    for i, name in enumerate(names):
        targets = draw(
            st.lists(st.sampled_from([*names, END]), min_size=1, max_size=3, unique=True)
        )
        guards = []
        for target in targets:
            if target != END and draw(st.booleans()):
                otherwise = draw(st.sampled_from([None, END, *names]))
                guards.append(Guard(target, max=draw(st.integers(0, 2)), otherwise=otherwise))
        max_runs = draw(st.sampled_from([None, None, None, 1, 2]))
        if len(targets) == 1 and draw(st.booleans()):
            g.node(name, start=i == 0, then=targets[0], guards=guards, max_runs=max_runs)(_node)
        else:
            g.node(name, start=i == 0, max_runs=max_runs)(_node)
            g.router(name, guards=guards)(_router(*targets))
    return g


def longest_run(spec: GraphSpec, weight: Mapping[str, int] | None = None) -> int:
    """Explore every router choice; return the most node runs any run takes (with
    ``weight``, the most of the nodes' weights added up over a run)."""
    nodes = {n.name: n for n in spec.nodes}
    routes: dict[str, list[str]] = {}
    guards: dict[tuple[str, str], Guard] = {}
    for node in spec.nodes:
        if node.then is not None:
            routes[node.name] = list(node.then)
            guards.update({(node.name, gd.target): gd for gd in node.guards})
    for router in spec.routers:
        routes[router.source] = list(router.targets.names or ())
        guards.update({(router.source, gd.target): gd for gd in router.guards})
    best = 0

    def visit(
        node: str, steps: int, runs: dict[str, int], counts: dict[tuple[str, str], int]
    ) -> None:
        nonlocal best
        cap = nodes[node].max_runs
        if cap is not None and runs.get(node, 0) >= cap:
            best = max(best, steps)  # NodeCapError: the run ends before this node runs
            return
        steps += 1 if weight is None else weight[node]
        best = max(best, steps)
        runs = {**runs, node: runs.get(node, 0) + 1}
        for target in routes[node]:
            guard = guards.get((node, target))
            nxt: str | None = target
            new_counts = counts
            if guard is not None:
                used = counts.get((node, target), 0)
                if used < guard.max:
                    new_counts = {**counts, (node, target): used + 1}
                else:
                    nxt = guard.otherwise
            if nxt is None or nxt == END:
                continue
            visit(nxt, steps, runs, new_counts)

    start = next(n.name for n in spec.nodes if n.start)
    visit(start, 0, {}, {})
    return best


def in_exact_class(spec: GraphSpec) -> bool:
    """Cycles disjoint, each one simple cycle with exactly one guarded route (max_runs on
    any node).

    Left out (documented in docs/concepts.md): a cycle through a pair of nodes that holds
    both a guarded route and a guard's ``otherwise`` route. The pair reads as unguarded
    (the ``otherwise`` route is), so the walk may go round past the other route's guard.
    """
    succ: dict[str, set[str]] = {n.name: set() for n in spec.nodes}
    guarded: dict[tuple[str, str], bool] = {}
    kinds: dict[tuple[str, str], set[str]] = {}
    for edge in spec.edges():
        if edge.source in succ and edge.target in succ:
            succ[edge.source].add(edge.target)
            pair = (edge.source, edge.target)
            guarded[pair] = guarded.get(pair, True) and edge.guard is not None
            kinds.setdefault(pair, set()).add("guarded" if edge.guard else edge.kind)
    for group in strongly_connected(list(succ), succ):
        members = set(group)
        inside = [(s, t) for s in group for t in succ[s] if t in members]
        if not inside:
            continue
        if len(inside) != len(group) or sum(guarded[p] for p in inside) != 1:
            return False
        if any({"guarded", "otherwise"} <= kinds[p] for p in inside):
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(guarded_graphs())
def test_the_bound_is_never_below_a_run_and_exact_on_its_class(g: Graph[State]) -> None:
    """Brute force over every router choice: bound ≥ every run; = the longest on the class."""
    found = g.check()
    if any(d.code in ("CR201", "CR105") for d in found):
        return
    spec = g.spec()
    bound = g.bound()
    assert bound.steps is not None
    longest = longest_run(spec)
    assert bound.steps >= longest
    if in_exact_class(spec):
        assert bound.steps == longest
        assert bound.witness is not None and len(bound.witness) == bound.steps


@settings(max_examples=150, deadline=None)
@given(
    guarded_graphs(),
    st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), min_size=5, max_size=5),
)
def test_the_cost_ceiling_is_never_below_a_run_and_exact_on_its_class(
    g: Graph[State], declared: list[tuple[int, int]]
) -> None:
    """With random declared costs and retry attempts, brute force over every router choice:
    the ceiling is at least what any run spends (each node run: its cost times its
    attempts), and equal to the most on the exact class, in each field."""
    if any(d.code in ("CR201", "CR105") for d in g.check()):
        return
    spec = g.spec()
    per_run = {n.name: w * k for n, (w, k) in zip(spec.nodes, declared, strict=False)}
    nodes = [
        replace(n, cost=Cost(tokens=w, usd=Decimal(w) / 100), retry=Retry(attempts=k))
        for n, (w, k) in zip(spec.nodes, declared, strict=False)
    ]
    ceiling = bound_of(replace(spec, nodes=tuple(nodes))).cost
    assert ceiling is not None
    most = longest_run(spec, per_run)
    assert ceiling.tokens >= most and ceiling.usd >= Decimal(most) / 100
    if in_exact_class(spec):
        assert (ceiling.tokens, ceiling.usd) == (most, Decimal(most) / 100)


def loop(max_steps: int, times: int = 3) -> Graph[State]:
    g = Graph(State, max_steps=max_steps)

    @g.node(start=True, then="critique")
    def draft(state: State) -> None: ...

    @g.node()
    def critique(state: State) -> None: ...

    @g.router("critique", guards=[Guard("revise", max=times, otherwise=END)])
    def after(state: State) -> Literal["revise"] | End:
        return END

    @g.node(then="critique")
    def revise(state: State) -> None: ...

    return g


def test_bound_of_a_guarded_loop_with_its_witness() -> None:
    """draft → (critique → revise) ×3 → critique: 8 node runs."""
    bound = loop(50).bound()
    assert (bound.steps, dict(bound.per_node)) == (8, {"draft": 1, "critique": 4, "revise": 3})
    assert bound.witness == ("draft", *("critique", "revise") * 3, "critique")
    assert str(bound) == "8 node runs: draft → (critique → revise) ×3 → critique"


def test_cap_below_bound_warns_with_both_numbers_and_the_path() -> None:
    """CR203: max_steps=5 is below 8."""
    [d] = loop(5).check()
    assert (d.code, d.severity) == ("CR203", "warning")
    assert d.message == (
        "max_steps=5 is below the 8 node runs the guards allow, e.g. draft → (critique → "
        "revise) ×3 → critique; the cap can stop a run the guards would end: raise max_steps "
        "to 8 or lower a guard's max"
    )
    assert loop(8).check() == []


def test_an_unguarded_cycle_has_no_bound() -> None:
    """No guard, no bound; the reason says why."""
    g = Graph(State)

    @g.node(start=True, then="a")
    def a(state: State) -> None: ...

    bound = g.bound()
    assert bound.steps is None and bound.reason is not None and "CR201" in bound.reason


def test_send_without_a_declared_width_has_no_bound_and_names_the_router() -> None:
    """A Send router with no max_sends= cannot be bounded; with it, it can."""
    from corral import Send

    for width in (None, 4):
        g = Graph(State)

        @g.node(start=True)
        def plan(state: State) -> None: ...

        @g.router("plan", max_sends=width)
        def fan(state: State) -> list[Send[Literal["work"]]]:
            return [Send("work", 1)]

        @g.node(then=END)
        def work(state: int) -> None: ...

        bound = g.bound()
        if width is None:
            assert bound.steps is None and bound.reason is not None and "'fan'" in bound.reason
        else:
            assert bound.steps == 5 and bound.per_node["work"] == 4


def _nested_loops(choices: list[int], seen: list[int]) -> Graph[State]:
    """A parent looping (guarded, max 2) around a subgraph with its own guarded loop (max 2).

    Each router takes the next entry of ``choices`` (0: loop, 1: leave; 0 once they run
    out) and records how many options it had in ``seen``.
    """

    def choose() -> int:
        seen.append(2)
        return choices[len(seen) - 1] if len(seen) <= len(choices) else 0

    child = Graph(State, max_steps=1000)

    @child.node(start=True, then="search")
    def plan(state: State) -> None: ...

    @child.node(then="read")
    def search(state: State) -> None: ...

    @child.node()
    def read(state: State) -> None: ...

    @child.router("read", guards=[Guard("search", max=2, otherwise=END)])
    def more(state: State) -> Literal["search"] | End:
        return "search" if choose() == 0 else END

    g = Graph(State, max_steps=1000)

    @g.node(start=True, then="research")
    def draft(state: State) -> None: ...

    g.subgraph("research", child, then="review")

    @g.node()
    def review(state: State) -> None: ...

    @g.router("review", guards=[Guard("research", max=2, otherwise=END)])
    def again(state: State) -> Literal["research"] | End:
        return "research" if choose() == 0 else END

    return g


def test_a_subgraph_runs_count_its_entries_times_the_childs_bound() -> None:
    """Every router choice, run for real: the bound is the longest run, and its witness."""
    longest = 0
    pending: list[list[int]] = [[]]
    while pending:  # every sequence of router choices, by running the graph
        choices = pending.pop()
        seen: list[int] = []
        run = _nested_loops(choices, seen).compile().invoke({"n": 0})
        longest = max(longest, run.steps)
        pending.extend(
            [*choices, *([0] * (i - len(choices))), 1] for i in range(len(choices), len(seen))
        )
    bound = _nested_loops([], []).bound()
    child = "research/plan", *("research/search", "research/read") * 3
    assert (bound.steps, longest) == (25, 25)
    assert bound.witness == ("draft", *(*child, "review") * 3)
    assert dict(bound.per_node) == {
        "draft": 1, "research": 3, "review": 3,
        "research/plan": 3, "research/search": 9, "research/read": 9,
    }  # fmt: skip
    assert str(bound) == ("25 node runs: draft → (research[plan → (search → read) ×3] → review) ×3")


def test_a_subgraph_without_a_bound_names_its_path() -> None:
    """A child with an unguarded cycle, two levels down: the parent's reason names the path."""
    inner = Graph(State)

    @inner.node(start=True, then="spin")
    def spin(state: State) -> None: ...

    middle = Graph(State)
    middle.subgraph("deep", inner, start=True, then=END)
    g = Graph(State)
    g.subgraph("outer", middle, start=True, then=END)
    bound = g.bound()
    assert bound.steps is None
    assert bound.reason == "in subgraph 'outer/deep': a cycle has no guarded route (CR201)"


def test_a_large_max_is_walked_without_writing_out_every_lap() -> None:
    """The walk is kept as laps: Guard(max=10**12) is bounded at once, written short."""
    bound = loop(50, times=10_000).bound()
    assert bound.steps == 2 * 10_000 + 2
    assert bound.witness == ("draft", *("critique", "revise") * 10_000, "critique")
    assert bound.path == "draft → (critique → revise) ×10000 → critique"
    huge = loop(50, times=10**12).bound()
    assert (huge.steps, huge.per_node["revise"]) == (2 * 10**12 + 2, 10**12)
    assert huge.witness is None  # a million node runs at most are written out
    assert huge.path == "draft → (critique → revise) ×1000000000000 → critique"
    assert str(huge) == f"{2 * 10**12 + 2} node runs: {huge.path}"


def test_a_bound_past_10_to_the_18_is_no_bound() -> None:
    """Counts saturate: more than 10**18 node runs is reported as unbounded, with why."""
    bound = loop(50, times=10**18).bound()
    assert bound.steps is None
    assert bound.reason == "the guards allow more than 10**18 node runs"
    assert bound.per_node["draft"] == 1 and bound.per_node["revise"] is None


def test_an_otherwise_route_counts_only_runs_past_its_guards_max() -> None:
    """Guard('b', max=1, otherwise='c') on a node that runs once: 'c' never runs."""
    g = Graph(State, max_steps=10_000)
    g.node("a", start=True)(_node)
    g.router("a", guards=[Guard("b", max=1, otherwise="c")])(_router("b"))
    g.node("b")(_node)
    g.router("b")(_router(END))
    g.node("c")(_node)
    g.router("c")(_router("b"))
    bound = g.bound()
    assert (bound.steps, bound.per_node["c"], bound.witness) == (2, 0, ("a", "b"))


def _fallback_never_taken(back: tuple[str, ...], back_max: int) -> Graph[State]:
    """n0's guard on n0 → n1 (max 1) falls back to n3, but n1 never leads back to n0.

    n3's router goes to ``back`` with Guard('n0', max=back_max); n2 is a dead node.
    """
    g = Graph(State, max_steps=10_000)
    g.node("n0", start=True)(_node)
    g.router("n0", guards=[Guard("n1", max=1, otherwise="n3")])(_router("n1", END))
    g.node("n1")(_node)
    g.router("n1")(_router(END))
    g.node("n2")(_node)
    g.router("n2")(_router(END))
    g.node("n3")(_node)
    g.router("n3", guards=[Guard("n0", max=back_max)])(_router(*back))
    return g


def test_an_otherwise_route_whose_guards_target_never_leads_back_is_never_taken() -> None:
    """Without fan-out, n0 runs again after n0 → n1 only if n1 leads back to n0: it does
    not, so n0 → n1 is taken once at most and its guard's otherwise (n3) never runs.

    The longest run is n0 → n1 (2 node runs) whether n3 goes back to n0 or not.
    """
    for back, back_max in ((("n1", "n0"), 0), (("n0",), 1)):
        g = _fallback_never_taken(back, back_max)
        assert longest_run(g.spec()) == 2
        bound = g.bound()
        assert (bound.steps, bound.witness) == (2, ("n0", "n1")), back
        assert dict(bound.per_node) == {"n0": 1, "n1": 1, "n2": 0, "n3": 0}, back


def test_a_dropped_fallback_can_cut_the_only_way_back_of_another_guard() -> None:
    """s1 → a never comes back, so s1's fallback o1 is never taken; without o1, t2 no
    longer leads back to x, so x's fallback y is never taken either (x loops on itself).
    """
    g = Graph(State, max_steps=10_000)
    g.node("x", start=True)(_node)
    guards = [Guard("x", max=2), Guard("t2", max=1, otherwise="y")]
    g.router("x", guards=guards)(_router("x", "t2", END))
    g.node("t2", then="s1")(_node)
    g.node("s1")(_node)
    g.router("s1", guards=[Guard("a", max=1, otherwise="o1")])(_router("a"))
    g.node("a", then=END)(_node)
    g.node("o1", then="x")(_node)
    g.node("y", then=END)(_node)
    bound = g.bound()
    assert longest_run(g.spec()) == bound.steps == 6
    assert bound.witness == ("x", "x", "x", "t2", "s1", "a")
    assert (bound.per_node["o1"], bound.per_node["y"]) == (0, 0)


def test_with_fan_out_a_fallback_whose_target_never_leads_back_still_counts() -> None:
    """p fans out to s and q, and q goes to s: s runs twice though t never leads back to
    it, so s → t is used up on the second run and the otherwise route to o is taken."""
    g = Graph(State, max_steps=10_000)

    @g.node(start=True, then=("s", "q"))
    def p(state: State) -> None: ...

    @g.node(then="s")
    def q(state: State) -> None: ...

    @g.node()
    def s(state: State) -> None: ...

    @g.router("s", guards=[Guard("t", max=1, otherwise="o")])
    def route(state: State) -> Literal["t"]:
        return "t"

    @g.node(then=END)
    def t(state: State) -> None: ...

    @g.node(then=END)
    def o(state: State) -> dict[str, int]:
        return {"n": 1}

    run = g.compile().invoke({"n": 0})
    assert run.state["n"] == 1  # o ran
    bound = g.bound()
    assert bound.per_node["o"] == 1
    assert bound.steps is not None and bound.steps >= run.steps


def test_a_pair_of_an_untaken_fallback_and_a_max_0_route_is_never_taken() -> None:
    """n0 → n3 is a route guarded with max=0 and the otherwise of n0 → n1 (never used
    up, n1 ends): no run takes it, so n3 never runs."""
    g = Graph(State, max_steps=10_000)
    g.node("n0", start=True)(_node)
    guards = [Guard("n1", max=1, otherwise="n3"), Guard("n3", max=0)]
    g.router("n0", guards=guards)(_router("n1", "n3"))
    g.node("n1", then=END)(_node)
    g.node("n3")(_node)
    g.router("n3", guards=[Guard("n0", max=1)])(_router("n0"))
    bound = g.bound()
    assert longest_run(g.spec()) == bound.steps == 2
    assert (bound.witness, bound.per_node["n3"]) == (("n0", "n1"), 0)


def test_a_cap_on_a_cycle_node_cuts_the_laps_and_gives_the_witness() -> None:
    """revise's max_runs=2 stops the third lap before it (NodeCapError): the longest run is
    draft → (critique → revise) ×2 → critique, and the bound says so, with that witness."""
    capped = Graph(State, max_steps=100)

    @capped.node(start=True, then="critique")
    def draft(state: State) -> None: ...

    @capped.node()
    def critique(state: State) -> None: ...

    @capped.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
    def after(state: State) -> Literal["revise"] | End:
        return "revise"

    @capped.node(then="critique", max_runs=2)
    def revise(state: State) -> None: ...

    bound = capped.bound()
    assert bound.steps == longest_run(capped.spec()) == 6
    assert bound.witness == ("draft", "critique", "revise", "critique", "revise", "critique")
    assert bound.path == "draft → (critique → revise) ×2 → critique"


def test_a_cap_before_the_guard_is_used_up_keeps_the_run_off_its_otherwise() -> None:
    """work's guard allows two laps, but max_runs=2 refuses the third run of work first
    (NodeCapError), so the run never reaches the otherwise route to wrap: the longest run
    is start → work → work, and wrap runs only when start's router picks it."""
    g = Graph(State, max_steps=50)

    @g.node(start=True)
    def start(state: State) -> None: ...

    @g.router("start")
    def pick(state: State) -> Literal["work", "wrap"]:
        return "work"

    @g.node(then="work", guards=[Guard("work", max=2, otherwise="wrap")], max_runs=2)
    def work(state: State) -> None: ...

    @g.node(then=END)
    def wrap(state: State) -> None: ...

    with pytest.raises(NodeCapError):
        g.compile().invoke({"n": 0})
    bound = g.bound()
    assert (bound.steps, bound.witness) == (3, ("start", "work", "work"))
    assert bound.steps == longest_run(g.spec())


def test_a_fallback_whose_guard_its_source_cannot_use_up_is_never_taken() -> None:
    """n0 → n0 (max=1) is used up only by a second run of n0, which max_runs=1 refuses
    (NodeCapError), so its otherwise to n2 is never taken; n0 → n2 itself is guarded with
    max=0: every run fails after n0, and the bound is 1."""
    g = Graph(State, max_steps=50)
    g.node("n0", start=True, max_runs=1)(_node)
    guards = [Guard("n0", max=1, otherwise="n2"), Guard("n2", max=0)]
    g.router("n0", guards=guards)(_router("n0", "n2"))
    g.node("n2", then=END)(_node)
    bound = g.bound()
    assert longest_run(g.spec()) == bound.steps == 1
    assert (bound.witness, bound.per_node["n2"]) == (("n0",), 0)


def test_a_child_that_always_fails_ends_the_witness() -> None:
    """Every run of the child takes a route guarded with max=0 and no otherwise, so every
    entry raises GuardExhaustedError and the parent's next node never runs: the bound is
    the run p → sub/a, not p → sub/a → q."""
    from corral import GuardExhaustedError

    child = Graph(State)

    @child.node(start=True, then="b", guards=[Guard("b", max=0)], ignore=["CR202"])
    def a(state: State) -> None: ...

    @child.node(then=END)
    def b(state: State) -> None: ...

    g = Graph(State)

    @g.node(start=True, then="sub")
    def p(state: State) -> None: ...

    g.subgraph("sub", child, then="q")

    @g.node(then=END)
    def q(state: State) -> None: ...

    with pytest.raises(GuardExhaustedError):
        g.compile().invoke({"n": 0})
    bound = g.bound()
    assert (bound.steps, bound.witness) == (2, ("p", "sub/a"))
    assert bound.per_node["q"] == 0
