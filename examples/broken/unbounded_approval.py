# $ corral lint examples/broken/unbounded_approval.py
# examples/broken/unbounded_approval.py:42:1: CR201 cycle draft → review → draft has no guarded route, so only max_steps stops it; add a guard to one of its routes, e.g. Guard('draft', max=3, otherwise=END) on router 'after_review' (review → draft), or on node 'draft' (draft → review)
# Found 1 error in 1 graph (1 file).
# exit 1
"""BROKEN: an approval loop with no guard (CR201).

A reviewer who keeps saying "no" keeps this agent redrafting forever: the only thing that
would stop it is the global step cap, after burning 50 model calls. corral refuses to
compile a cycle that no guard bounds, and ``corral lint`` says where to put one.

Fix: ``@g.router("review", guards=[Guard("draft", max=3, otherwise="give_up")])`` and a
``give_up`` node, as in ``examples/incident_response.py``.
"""

# ruff: noqa: E501  (the recorded lint output above is kept verbatim)

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
