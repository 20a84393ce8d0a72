"""The graphs the serve tests run: a review that asks a person, and a slow token writer."""

from __future__ import annotations

import operator
import os
import time
from typing import Annotated, Any, Literal, TypedDict

from corral import END, Cost, Graph, Guard, interrupt


class Review(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]
    answer: str
    rounds: int


review = Graph(Review, name="review")


@review.node(start=True, then="critique", cost=Cost(calls=1))
def draft(state: Review, ctx: Any) -> dict[str, object]:
    ctx.emit({"token": "drafting"})
    ctx.spend(calls=1)
    return {"log": [f"drafted {state.get('topic', '')}"]}


@review.node()
def critique(state: Review) -> dict[str, object]:
    return {"rounds": state.get("rounds", 0) + 1}


@review.router("critique", guards=[Guard("draft", max=2, otherwise="ask")])
def after_critique(state: Review) -> Literal["draft", "ask"]:
    return "draft" if state.get("rounds", 0) < 2 else "ask"


@review.node(then=END)
def ask(state: Review) -> dict[str, object]:
    answer = interrupt({"question": f"publish {state.get('topic', '')!r}?"})
    return {"answer": answer, "log": ["asked"]}


class Slow(TypedDict, total=False):
    text: str
    tokens: Annotated[list[str], operator.add]


slow = Graph(Slow, name="slow")


@slow.node(start=True, then="finish")
def write(state: Slow, ctx: Any) -> dict[str, object]:
    """Emit a token, then wait until the test lets the node return (a file appears)."""
    ctx.emit("first")
    gate = state.get("text", "")
    deadline = time.monotonic() + 30
    while gate.startswith("/") and not os.path.exists(gate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nobody opened the gate {gate!r}")
        time.sleep(0.02)
    ctx.emit("second")
    return {"tokens": ["written"]}


@slow.node(then=END)
def finish(state: Slow) -> dict[str, object]:
    if state.get("text") == "boom":
        raise ValueError("the finish node broke")
    return {"tokens": ["done"]}
