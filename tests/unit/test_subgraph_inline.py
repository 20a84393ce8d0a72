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


class Flat(TypedDict):
    last: str
    count: int


class Mixed(TypedDict):
    log: Annotated[list[str], operator.add]
    last: str
    count: int


class Replacing(TypedDict):
    log: list[str]
    last: str
    count: int


class Own(TypedDict):
    log: Annotated[list[str], operator.add]
    last: str
    count: int
    scratch: str


def _flat_child() -> Graph[Flat]:
    """A child of immutable values that writes ``last`` twice and ``count`` once."""
    g = Graph(Flat, name="work")

    @g.node(start=True, then="b")
    def a(state: Flat) -> dict[str, Any]:
        return {"last": "a", "count": state.get("count", 0) + 1}

    @g.node(then=END)
    def b(state: Flat) -> dict[str, Any]:
        return {"last": f"b{state['count']}"}

    return g


def _fan_child(schema: Any) -> Graph[Any]:
    """A child that fans out to two nodes in one superstep, then joins."""
    g = Graph(schema, name="work")

    @g.node(start=True, then=["left", "right"])
    def split(state: Any) -> dict[str, Any]:
        return {"log": ["split"], "count": state.get("count", 0) + 1}

    @g.node(then="join")
    def left(state: Any) -> dict[str, Any]:
        return {"log": ["left"]}

    @g.node(then="join")
    def right(state: Any) -> dict[str, Any]:
        return {"log": ["right"]}

    @g.node(wait_for=["left", "right"], then=END)
    def join(state: Any) -> dict[str, Any]:
        update: dict[str, Any] = {"log": ["join"], "last": f"join{state['count']}"}
        if "scratch" in state:
            update["scratch"] = "mine"
        return update

    return g


def _chain_child(schema: Any) -> Graph[Any]:
    """A child of two nodes, each writing ``log`` (and ``last`` twice)."""
    g = Graph(schema, name="work")

    @g.node(start=True, then="b")
    def a(state: Any) -> dict[str, Any]:
        return {"log": ["a"], "last": "a", "count": state.get("count", 0) + 1}

    @g.node(then=END)
    def b(state: Any) -> dict[str, Any]:
        return {"log": [f"b{len(state['log'])}"], "last": f"b{state['count']}"}

    return g


def _nested_child(schema: Any) -> Graph[Any]:
    """A child whose middle node is itself a subgraph (the fan-out child, same schema)."""
    g = Graph(schema, name="outer")

    @g.node(start=True, then="inner")
    def before(state: Any) -> dict[str, Any]:
        return {"log": ["before"], "last": "before"}

    g.subgraph("inner", _fan_child(schema), then="after")

    @g.node(then=END)
    def after(state: Any) -> dict[str, Any]:
        return {"log": [f"after {len(state['log'])}"]}

    return g


NESTED = {
    "log": [*"before split left right join".split(), "after 5",
            *"before split left right join".split(), "after 11",
            *"before split left right join".split(), "after 17"],
    "count": 3,
    "last": "join3",
}  # fmt: skip


def _looping(schema: Any, sub: Graph[Any]) -> Graph[Any]:
    """A parent of ``schema`` that enters ``sub`` three times, reading its state between."""
    g = Graph(schema, max_steps=100)
    g.subgraph("work", sub, start=True)

    @g.router("work", guards=[Guard("work", max=2, otherwise=END)])
    def again(state: Any) -> Literal["work"]:
        assert state["count"] >= 1
        return "work"

    return g


@pytest.mark.parametrize(
    ("schema", "sub", "expected"),
    [
        (Flat, _flat_child(), {"last": "b3", "count": 3}),
        (Mixed, _fan_child(Mixed), {"log": ["split", "left", "right", "join"] * 3,
                                    "last": "join3", "count": 3}),
        (Mixed, _chain_child(Mixed), {"log": ["a", "b1", "a", "b3", "a", "b5"],
                                      "last": "b3", "count": 3}),
        # the child replaces its list; the parent's reducer appends each write once
        (Mixed, _chain_child(Replacing), {"log": ["a", "b1"] * 3, "last": "b3", "count": 3}),
        # a key of the child's own is not handed back
        (Mixed, _fan_child(Own), {"log": ["split", "left", "right", "join"] * 3,
                                  "last": "join3", "count": 3}),
        (Mixed, _nested_child(Mixed), NESTED),
        # the outer child's writes are merged; its inner child's state is the outer's next
        (Mixed, _nested_child(Own), NESTED),
    ],
    ids=["flat-state", "fan-out", "chain", "other-reducer", "own-key", "nested", "nested-own"],
)  # fmt: skip
def test_entries_of_every_child_shape_run_the_same_inline_and_in_general(
    schema: Any, sub: Graph[Any], expected: dict[str, Any]
) -> None:
    """Whether the child's keys and reducers are all the parent's (its final state is the
    parent's next) or not (its writes are merged), the inline path gives the general one's
    state, steps and trace, and each write is applied once."""
    inline, general = both(_looping(schema, sub))
    assert inline == general
    state, steps, trace = inline
    assert state == expected
    assert steps == len(trace)
    assert all(name.startswith("work/") for _, name, _ in trace)
