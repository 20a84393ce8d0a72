"""g.bound() stays above real runs on fan-outs, wait_for joins and Send, judged by every run."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Literal, TypedDict

import pytest
from exhaustive import Shape, Way, build, every_run, forward_shapes, shapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral import END, End, Graph, Guard


class Ran(TypedDict):
    ran: Annotated[list[str], operator.add]


def fan_loop(*, join: bool, long_branch: bool, laps: int) -> Graph[Ran]:
    """plan → (a, b) → join → plan, guarded; ``a`` goes through ``c`` on the long branch."""
    g = Graph(Ran, max_steps=1000)

    def record(name: str) -> dict[str, list[str]]:
        return {"ran": [name]}

    g.node("plan", start=True, then=("a", "b"))(lambda state: record("plan"))
    g.node("a", then="c" if long_branch else "join")(lambda state: record("a"))
    if long_branch:
        g.node("c", then="join")(lambda state: record("c"))
    g.node("b", then="join")(lambda state: record("b"))
    waits = ("c" if long_branch else "a", "b") if join else ()
    g.node("join", wait_for=waits)(lambda state: record("join"))

    @g.router("join", guards=[Guard("plan", max=laps, otherwise=END)])
    def again(state: Ran) -> Literal["plan"] | End:
        return "plan"  # always loop: the longest run the guard allows

    return g


@pytest.mark.parametrize("join", [True, False])
@pytest.mark.parametrize("long_branch", [False, True])
@pytest.mark.parametrize("laps", [0, 2])
def test_the_bound_is_never_below_a_run_with_fan_out_and_joins(
    join: bool, long_branch: bool, laps: int
) -> None:
    """Steps and every node's runs: the bound is at least what a real run takes."""
    g = fan_loop(join=join, long_branch=long_branch, laps=laps)
    assert [d.code for d in g.check() if d.severity == "error"] == []
    bound = g.bound()
    ran = Counter(g.compile().invoke({"ran": []}).state["ran"])
    assert bound.steps is not None and bound.steps >= sum(ran.values())
    for node, count in ran.items():
        most = bound.per_node[node]
        assert most is not None and most >= count, (node, most, count)


def test_a_join_loop_bound_is_the_run_it_allows() -> None:
    """plan → (a, b) → join (waits for both) → plan twice more: 3 laps of 4 node runs."""
    g = fan_loop(join=True, long_branch=False, laps=2)
    assert g.bound().steps == 12
    assert len(g.compile().invoke({"ran": []}).state["ran"]) == 12


JUDGED = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def _judged(shape: Shape) -> None:
    g = build(shape)
    if any(d.code == "CR201" for d in g.check()):
        return
    bound = g.bound()
    if bound.steps is None or bound.steps > 50:
        return  # no bound to judge, or runs longer than the step cap of the shapes
    outcomes, complete = every_run(g, limit=300)
    for outcome in outcomes:
        assert len(outcome.ran) <= bound.steps, (outcome.ran, bound)
        for node, count in Counter(outcome.ran).items():
            most = bound.per_node[node]
            assert most is not None and count <= most, (node, outcome.ran, bound)
    if bound.witness is not None and complete:
        assert bound.witness in {tuple(o.ran) for o in outcomes}, bound


@JUDGED
@given(forward_shapes(sends=True))
def test_the_bound_against_every_run_with_joins_and_send(shape: Shape) -> None:
    """g.bound() is never below a run of the runtime, per run and per node, and its witness
    is a run (fan-outs, joins, Send with max_sends, guards, otherwise routes)."""
    _judged(shape)


@JUDGED
@given(st.integers(3, 5).flatmap(lambda n: shapes(max_nodes=n, sends=True)))
def test_the_bound_against_every_run_on_any_routes(shape: Shape) -> None:
    """The same with routes anywhere, max_runs on any node and joins a Send targets."""
    _judged(shape)


def test_a_join_a_send_targets_is_not_bounded_by_what_it_waits_for() -> None:
    """plan sends two tasks to join (which waits for plan): a Send runs its target at once,
    so join runs twice although plan ran once; the bound counts both (it said 3, runs
    take 4, and CR203 stayed silent at max_steps=3)."""
    shape = Shape(
        (
            ("plan", Way("send", ("join",), start=True, max_sends=2)),
            ("join", Way("then", ("done",), wait_for=("plan",))),
            ("done", Way("then", (END,))),
        ),
        max_steps=3,
    )
    g = build(shape)
    outcomes, _complete = every_run(build(Shape(shape.ways)))
    assert max(len(o.ran) for o in outcomes) == 4
    bound = g.bound()
    assert bound.steps is not None and bound.steps >= 4
    assert bound.per_node["join"] == 2
    assert [d.code for d in g.check()] == ["CR203"]


def test_a_send_guard_falls_back_in_the_run_that_uses_it_up() -> None:
    """n0 sends itself twice past Guard('n0', max=1, otherwise='n1'): the first Send uses
    the guard up and the second goes to n1 in the same superstep, so n1 runs after each
    run of n0 and besides at the start: 5 node runs (the bound said 4)."""
    shape = Shape(
        (
            (
                "n0",
                Way(
                    "send",
                    ("n0",),
                    guards=(Guard("n0", max=1, otherwise="n1"),),
                    start=True,
                    writes_x=True,
                ),
            ),
            ("n1", Way("then", (END,), start=True)),
        )
    )
    g = build(shape)
    outcomes, complete = every_run(g)
    assert complete and max(len(o.ran) for o in outcomes) == 5
    bound = g.bound()
    assert bound.steps == 5 and bound.per_node == {"n0": 2, "n1": 3}
