"""A graph built inside a function, with a local route alias, under postponed annotations."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    score: int


def build() -> Graph[State]:
    """Return a draft/critique/revise loop whose router names a local alias."""
    Choice = Literal["revise"] | End
    g = Graph(State)

    @g.node(start=True, then="critique")
    def draft(state: State) -> dict[str, object]:
        return {"score": 0}

    @g.node()
    def critique(state: State) -> dict[str, object]:
        return {}

    @g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
    def after_critique(state: State) -> Choice:
        return END if state["score"] >= 80 else "revise"

    @g.node(then="critique")
    def revise(state: State) -> dict[str, object]:
        return {"score": state["score"] + 20}

    return g


def build_with_local_state() -> Graph[Any, Any]:
    """Return a graph whose state, update schema and reducer are all local to this function.

    Under postponed annotations the ``TypedDict``s' key types are strings naming
    ``Annotated``, ``operator`` and ``Note``, which only this function's locals hold.
    """
    import operator
    from typing import Annotated, NotRequired

    class Note(TypedDict):
        text: str

    class LocalState(TypedDict):
        log: Annotated[list[Note], operator.add]
        count: int

    class LocalUpdate(TypedDict):
        log: NotRequired[Annotated[list[Note], operator.add]]
        count: NotRequired[int]

    g: Graph[LocalState, LocalUpdate] = Graph(LocalState, LocalUpdate)

    @g.node(start=True, then=END)
    def note(state: LocalState) -> LocalUpdate:
        return {"log": [{"text": "noted"}], "count": state["count"] + 1}

    return g
