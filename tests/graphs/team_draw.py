"""A parent graph with a child drawn inside it (``corral draw`` fixture)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    notes: Annotated[list[str], operator.add]


def _research() -> Graph[State]:
    child = Graph(State, name="research")

    @child.node(start=True, then="search")
    def plan(state: State) -> None:
        return None

    @child.node()
    def search(state: State) -> None:
        return None

    @child.router("search", guards=[Guard("plan", max=2, otherwise=END)])
    def more(state: State) -> Literal["plan"] | End:
        return END

    return child


g = Graph(State, name="team")


@g.node(start=True, then="research")
def begin(state: State) -> None:
    return None


g.subgraph("research", _research(), then="write", max_runs=2)


@g.node(then=END)
def write(state: State) -> None:
    return None
