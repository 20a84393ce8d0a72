"""A lone subgraph entry of an unwatched run takes the inline path: same run as the general one.

Passing ``on_event`` makes a run take the general path; both must give the same state, steps,
trace and errors, whether the child runs inline itself or not (a ``max_runs`` node in it).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, Graph, Guard, NodeError, StepLimitError


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    last: str


def child(*, capped: bool = False, fail: bool = False, own_cap: int = 50) -> Graph[State]:
    g = Graph(State, name="work", max_steps=own_cap)

    @g.node(start=True, then="b", max_runs=9 if capped else None)
    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"], "last": "a"}

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        if fail and len(state["log"]) > 4:
            raise ValueError("boom")
        return {"log": ["b"], "last": "b"}

    return g


def parent(sub: Graph[State], *, entries: int = 3, max_steps: int = 100) -> Graph[State]:
    g = Graph(State, max_steps=max_steps)
    g.subgraph("work", sub, start=True)

    @g.router("work", guards=[Guard("work", max=entries - 1, otherwise="done")])
    def again(state: State) -> Literal["work", "done"]:
        return "work"

    @g.node(then=END)
    def done(state: State) -> dict[str, Any]:
        return {"last": "done"}

    return g


def both(g: Graph[State]) -> list[Any]:
    """Return what the inline and the general path make of ``g``: (state, steps, trace) or
    (error type, message, node, steps)."""
    seen: list[Any] = []
    app = g.compile()
    for options in ({}, {"on_event": lambda event: None}):
        try:
            run = app.invoke({}, **options)  # type: ignore[arg-type]
        except (NodeError, StepLimitError) as exc:
            seen.append((type(exc), str(exc), exc.node, getattr(exc, "steps", None)))
        else:
            seen.append((run.state, run.steps, [(t.step, t.node, t.update) for t in run.trace]))
    return seen


@pytest.mark.parametrize("capped", [False, True])
def test_a_lone_entry_runs_the_same_inline_and_in_general(capped: bool) -> None:
    inline, general = both(parent(child(capped=capped)))
    assert inline == general
    state, steps, trace = inline
    assert state == {"log": ["a", "b"] * 3, "last": "done"}
    assert steps == 7
    assert [name for _, name, _ in trace] == ["work/a", "work/b"] * 3 + ["done"]
    assert [step for step, _, _ in trace] == list(range(1, 8))


@pytest.mark.parametrize(
    ("sub", "max_steps", "kind"),
    [
        (child(fail=True), 100, NodeError),  # a child node fails in the third entry
        (child(), 5, StepLimitError),  # the top-level cap stops the child inside an entry
        (child(own_cap=1), 100, StepLimitError),  # the child's own cap
    ],
)
def test_errors_inside_an_inline_entry_are_the_general_paths(
    sub: Graph[State], max_steps: int, kind: type[Exception]
) -> None:
    inline, general = both(parent(sub, max_steps=max_steps))
    assert inline == general
    assert inline[0] is kind
    assert str(inline[2]).startswith("work/")


def test_an_entry_at_the_cap_is_refused_before_it_starts() -> None:
    inline, general = both(parent(child(), max_steps=6, entries=4))
    assert inline == general
    assert inline[0] is StepLimitError
