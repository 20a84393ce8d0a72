# $ corral lint examples/broken/typo_route.py
# examples/broken/typo_route.py:37:1: CR101 router 'route' routes to 'biling', which is not a node; fix the name (did you mean 'billing'?) or register a node named 'biling'
# Found 1 error in 1 graph (1 file).
# exit 1
"""BROKEN: a typo in a route (CR101).

The router promises ``"biling"``; there is no such node, so no invoice question would ever
reach ``billing``. A router returning plain strings finds out when the first invoice ticket
arrives; corral reads the annotation and reports the unknown name before anything runs (once:
``billing``, which the typo strands, is not reported as dead until the name is fixed). With a ``Nodes = Literal[...]`` passed to ``Graph`` (see
docs/typing.md), mypy reports it too.

Fix: ``Literal["billing", "technical"]``.
"""

# ruff: noqa: E501  (the recorded lint output above is kept verbatim)

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
