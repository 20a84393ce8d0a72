"""The draft → critique → revise loop without a guard: one CR201 at the router."""

from typing import Literal, TypedDict

from corral import END, End, Graph


class State(TypedDict):
    score: int


g = Graph(State, name="unguarded_loop")


@g.node(start=True, then="critique")
def draft(state: State) -> dict[str, object]:
    return {"score": 0}


@g.node()
def critique(state: State) -> dict[str, object]:
    return {}


@g.router("critique")
def after_critique(state: State) -> Literal["revise"] | End:
    return END if state["score"] >= 80 else "revise"


@g.node(then="critique")
def revise(state: State) -> dict[str, object]:
    return {"score": state["score"] + 20}
