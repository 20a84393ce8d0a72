# $ corral lint examples/broken/dead_node.py
# (recorded when the CLI lands)
# exit 1
"""BROKEN: a node nothing routes to (CR103).

``escalate`` was written, tested on its own and registered, but the router's annotation
was never updated, so no run can reach it: angry customers get the polite answer.

Fix: add ``"escalate"`` to the router's ``Literal`` and return it for angry tickets.
"""

from typing import Literal, TypedDict

from corral import END, Graph


class State(TypedDict):
    ticket: str
    mood: str
    answer: str


g = Graph(State)


@g.node(start=True)
def classify(state: State) -> dict[str, object]:
    return {"mood": "angry" if "!!" in state["ticket"] else "calm"}


@g.router("classify")
def route(state: State) -> Literal["answer"]:
    return "answer"


@g.node(then=END)
def answer(state: State) -> dict[str, object]:
    return {"answer": "Thanks for writing in."}


@g.node(then=END)
def escalate(state: State) -> dict[str, object]:
    return {"answer": "A manager will call you today."}
