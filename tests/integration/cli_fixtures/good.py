"""A guarded writing loop: lint finds nothing; run finishes in six steps."""

from typing import Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    score: int


g = Graph(State, name="good", max_steps=20)


@g.node(start=True, then="critique")
def draft(state: State) -> dict[str, object]:
    return {}


@g.node()
def critique(state: State) -> dict[str, object]:
    return {}


@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
def after_critique(state: State) -> Literal["revise"] | End:
    return END if state["score"] >= 80 else "revise"


@g.node(then="critique")
def revise(state: State) -> dict[str, object]:
    if state["score"] < 0:
        raise ValueError(f"score {state['score']} is negative")
    return {"score": state["score"] + 20}


app = g.compile()
