"""A loop of one node: what its router's context reads, the facts on errors, and states kept
past their run, which later runs never change."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, Context, End, Graph, Guard, GuardExhaustedError, NodeError

pytestmark = pytest.mark.usefixtures("engine_path")
"""Each test runs through invoke and through ainvoke."""


class Tally(TypedDict):
    n: int
    seen: Annotated[list[int], operator.add]


def loop(seen: list[tuple[int, int, int]], *, fail_at: int = 0) -> Graph[Tally]:
    g = Graph(Tally, max_steps=40)

    @g.node(start=True)
    def count(state: Tally) -> dict[str, object]:
        if state["n"] + 1 == fail_at:
            raise ValueError("boom")
        # Every third run also appends, so the state switches between flat and not.
        if state["n"] % 3 == 2:
            return {"n": state["n"] + 1, "seen": [state["n"]]}
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=5)])
    def again(state: Tally, ctx: Context[None]) -> Literal["count"] | End:
        seen.append((ctx.step, ctx.runs("count"), state["n"]))
        return END if state["n"] >= 9 else "count"

    return g


def run_loop(**kwargs: Any) -> tuple[Any, list[tuple[int, int, int]]]:
    seen: list[tuple[int, int, int]] = []
    app = loop(seen, **kwargs).compile()
    try:
        run = app.invoke({"n": 0})
        result: Any = (run.state, run.steps, run.supersteps, dict(run.guards), run.status)
    except (NodeError, GuardExhaustedError) as err:
        result = (type(err).__name__, str(err), getattr(err, "state", None))
    return result, seen


def test_router_context_and_guard_exhaustion() -> None:
    """The guard allows 5 returns to 'count' (6 runs); the 6th return raises, with the state."""
    result, seen = run_loop()
    assert result[0] == "GuardExhaustedError"
    assert result[2] == {"n": 6, "seen": [2, 5]}
    assert seen == [(step, step, step) for step in range(1, 7)]


def test_node_error_mid_loop_names_its_step() -> None:
    """A node failing at its 4th run names step 4."""
    result, seen = run_loop(fail_at=4)
    assert result[0] == "NodeError"
    assert "(step 4)" in result[1]
    assert seen == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]


class Count(TypedDict):
    n: int
    label: str


def test_a_state_kept_by_a_node_or_router_never_changes_afterwards() -> None:
    """States kept past their run (by a node, by a router) still read what they read then."""
    kept: list[tuple[int, Any]] = []
    last: list[Any] = [None]
    g = Graph(Count, max_steps=40)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        if state["n"] % 2:
            kept.append((state["n"], state))
        last[0] = state  # kept until the next run only
        return {"n": state["n"] + 1, "label": f"run {state['n'] + 1}"}

    @g.router("count", guards=[Guard("count", max=20)])
    def again(state: Count) -> Literal["count"] | End:
        if state["n"] % 3 == 0:
            kept.append((state["n"], state))
        return END if state["n"] >= 12 else "count"

    run = g.compile().invoke({"n": 0, "label": "start"})
    assert run.state == {"n": 12, "label": "run 12"}
    assert len(kept) == 6 + 4
    for n, state in kept:
        assert state == {"n": n, "label": f"run {n}" if n else "start"}
    assert last[0] == {"n": 11, "label": "run 11"}


class Fan(TypedDict):
    items: list[str]
    seen: Annotated[list[str], operator.add]


def test_fan_out_siblings_never_see_what_one_of_them_changed_in_its_state() -> None:
    """Siblings of a fan-out share a read-only view only until one reads a mutable value."""
    kept: list[Any] = []
    g = Graph(Fan)

    @g.node(start=True, then=("a", "b", "c"))
    def plan(state: Fan) -> None:
        return None

    @g.node(then=END)
    def a(state: Fan) -> dict[str, object]:
        kept.append(state)
        state["items"].append("a")  # its own copy
        return {"seen": [f"a:{len(state['items'])}"]}

    @g.node(then=END)
    def b(state: Fan) -> dict[str, object]:
        state["items"].append("b")
        return {"seen": [f"b:{len(state['items'])}"]}

    @g.node(then=END)
    def c(state: Fan) -> dict[str, object]:
        return {"seen": [f"c:{len(state['items'])}"]}

    run = g.compile().invoke({"items": ["x"]})
    assert run.state == {"items": ["x"], "seen": ["a:2", "b:2", "c:1"]}
    assert (run.steps, run.supersteps) == (4, 2)
    assert kept[0]["items"] == ["x", "a"]  # a's view still holds a's copy, not b's
