"""The writer: draft a report (streaming its tokens), then ask a person to approve it.

``draft`` streams the model's answer and sends each token as a custom event
(``ctx.emit``): ``astream(mode="custom")`` hands them to a chat front-end while the node is
still running. ``approve`` pauses the run with ``interrupt()``; a "no" sends the draft back
with the reason, at most twice (a guarded route), then the writer gives up unapproved.

Its state has its own names (``text``, ``approved``): the supervisor maps them with
``input=`` and ``output=``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, Context, Cost, End, Graph, Guard, interrupt
from research_team.services import services_of


class WriterState(TypedDict):
    topic: str
    notes: list[str]
    text: str
    feedback: Annotated[list[str], operator.add]
    approved: bool


graph = Graph(WriterState, name="writer", max_steps=20)


@graph.node(start=True, then="approve", timeout=30.0, cost=Cost(calls=1, tokens=8_000, usd=0.05))
async def draft(state: WriterState, ctx: Context) -> dict[str, object]:
    prompt = f"a report from {len(state['notes'])} notes on: {state['topic']}"
    tokens: list[str] = []
    async for token in services_of(ctx).stream(prompt):
        ctx.emit(token)
        tokens.append(token)
    return {"text": "".join(tokens).strip()}


@graph.node()
def approve(state: WriterState) -> dict[str, object]:
    # On resume this node runs again from its start and interrupt() returns the answer.
    answer = str(interrupt({"draft": state["text"], "ask": "approve? 'yes' or 'no: why'"}))
    verdict, _, reason = answer.partition(":")
    if verdict.strip().lower() in ("yes", "y"):
        return {"approved": True}
    return {"approved": False, "feedback": [reason.strip() or "rejected"]}


@graph.router("approve", guards=[Guard("draft", max=2, otherwise=END)])
def revise(state: WriterState) -> Literal["draft"] | End:
    return END if state["approved"] else "draft"
