"""A graph built inside a function, with a local route alias, under postponed annotations."""

from __future__ import annotations

from typing import Literal, TypedDict

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
