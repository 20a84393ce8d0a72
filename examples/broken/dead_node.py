# $ corral lint examples/broken/dead_node.py
# examples/broken/dead_node.py:45:1: CR103 node 'escalate' is not reachable from the start; route to it or remove it
# Found 1 error in 1 graph (1 file).
# exit 1
"""BROKEN: a node nothing routes to (CR103).

``escalate`` was written, tested on its own and registered, but the router's annotation
was never updated, so no run can reach it: angry customers get the polite answer.

Fix: add ``"escalate"`` to the router's ``Literal`` and return it for angry tickets.
"""

# ruff: noqa: E501  (the recorded lint output above is kept verbatim)

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
