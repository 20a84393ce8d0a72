# $ corral lint examples/broken/unbounded_approval.py
# (recorded when the CLI lands)
# exit 1
"""BROKEN: an approval loop with no guard (CR201).

A reviewer who keeps saying "no" keeps this agent redrafting forever: the only thing that
would stop it is the global step cap, after burning 50 model calls. corral refuses to
compile a cycle that no guard bounds, and ``corral lint`` says where to put one.

Fix: ``@g.router("review", guards=[Guard("draft", max=3, otherwise="give_up")])`` and a
``give_up`` node, as in ``examples/incident_response.py``.
"""

from typing import Literal, TypedDict

from corral import END, Graph, interrupt


class State(TypedDict):
    request: str
    draft: str
    approved: bool


g = Graph(State)


@g.node(start=True, then="review")
def draft(state: State) -> dict[str, object]:
    return {"draft": f"reply to {state['request']!r}"}


@g.node()
def review(state: State) -> dict[str, object]:
    return {"approved": interrupt({"draft": state["draft"]}) == "yes"}


@g.router("review")
def after_review(state: State) -> Literal["publish", "draft"]:
    return "publish" if state["approved"] else "draft"


@g.node(then=END)
def publish(state: State) -> dict[str, object]:
    return {}


app = g.compile()  # raises GraphError: the loop has no guard
