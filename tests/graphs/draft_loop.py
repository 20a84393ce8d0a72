"""The contract's draft → critique → revise loop, guarded; aliases defined after use."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    score: int
    drafts: Annotated[list[str], operator.add]


g = Graph(State, max_steps=50)


@g.node(start=True, then="critique")
def draft(state: State) -> dict[str, object]:
    return {"drafts": ["v1"]}


@g.node()
def critique(state: State) -> dict[str, object]:
    return {}


@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
def after_critique(state: State) -> Choice:
    return END if state["score"] >= 80 else "revise"


@g.node(then="critique")
def revise(state: State) -> dict[str, object]:
    return {"score": state["score"] + 20, "drafts": ["v+"]}


Choice = Literal["revise"] | End  # defined after the router that uses it
