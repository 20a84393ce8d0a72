# $ corral lint examples/broken/typo_route.py
# (recorded when the CLI lands)
# exit 1
"""BROKEN: a typo in a route (CR101).

The router promises ``"biling"``; there is no such node. LangGraph finds out when a ticket
about an invoice arrives in production; corral reports it before anything runs. With a
``Nodes = Literal[...]`` passed to ``Graph`` (see docs/typing.md), mypy reports it too.

Fix: ``Literal["billing", "technical"]``.
"""

from typing import Literal, TypedDict

from corral import END, Graph


class State(TypedDict):
    ticket: str
    answer: str


g = Graph(State)


@g.node(start=True)
def classify(state: State) -> dict[str, object]:
    return {}


@g.router("classify")
def route(state: State) -> Literal["biling", "technical"]:
    return "biling" if "invoice" in state["ticket"] else "technical"


@g.node(then=END)
def billing(state: State) -> dict[str, object]:
    return {"answer": "Your invoice is on its way."}


@g.node(then=END)
def technical(state: State) -> dict[str, object]:
    return {"answer": "Have you tried turning it off and on again?"}
