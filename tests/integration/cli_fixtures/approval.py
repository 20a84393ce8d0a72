"""A run that pauses for a person: run exits 3 and says how to resume."""

from typing import Literal, TypedDict

from corral import END, End, Graph, Guard, interrupt


class State(TypedDict):
    request: str
    draft: str
    approved: bool


g = Graph(State, name="approval")


@g.node(start=True, then="review")
def write(state: State) -> dict[str, object]:
    return {"draft": f"reply to {state['request']}"}


@g.node()
def review(state: State) -> dict[str, object]:
    return {"approved": interrupt({"draft": state["draft"]}) == "yes"}


@g.router("review", guards=[Guard("write", max=2, otherwise=END)])
def after_review(state: State) -> Literal["write"] | End:
    return END if state["approved"] else "write"
