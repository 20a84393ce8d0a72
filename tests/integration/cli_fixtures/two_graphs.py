"""Two graphs in one module: draw needs ``:name`` to pick one."""

from typing import TypedDict

from corral import END, Graph


class State(TypedDict):
    n: int


first = Graph(State, name="first")


@first.node(start=True, then=END)
def one(state: State) -> dict[str, object]:
    return {}


second = Graph(State, name="second")


@second.node(start=True, then=("left", "right"))
def fork(state: State) -> dict[str, object]:
    return {}


@second.node(then=END)
def left(state: State) -> dict[str, object]:
    return {}


@second.node(then=END)
def right(state: State) -> dict[str, object]:
    return {}
