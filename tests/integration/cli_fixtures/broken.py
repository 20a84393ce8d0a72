"""An unguarded cycle and a node nothing routes to: lint exits 1."""

from typing import Literal, TypedDict

from corral import END, End, Graph


class State(TypedDict):
    n: int


g = Graph(State)


@g.node(start=True)
def ask(state: State) -> dict[str, object]:
    return {"n": state["n"] + 1}


@g.router("ask")
def again(state: State) -> Literal["ask"] | End:
    return END if state["n"] > 3 else "ask"


@g.node(then=END)
def orphan(state: State) -> dict[str, object]:
    return {}
