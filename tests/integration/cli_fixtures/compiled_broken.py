"""``app = g.compile()`` at module level on a graph with a typo: its import raises GraphError."""

from typing import Literal, TypedDict

from corral import END, Graph


class State(TypedDict):
    text: str


g = Graph(State)


@g.node(start=True)
def classify(state: State) -> dict[str, object]:
    return {}


@g.router("classify")
def route(state: State) -> Literal["replyy"]:
    return "replyy"


@g.node(then=END)
def reply(state: State) -> dict[str, object]:
    return {}


app = g.compile()
