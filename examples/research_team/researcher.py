"""The researcher: plan a query, search, and loop until there are enough notes.

``plan`` asks the model (an async call under ``timeout=``: a hung request is cancelled and,
being a ``NodeTimeoutError``, retried by the graph's default ``Retry``); ``search`` calls a
tool that drops connections now and then, under a ``Retry`` of its own. The loop back to
``plan`` is guarded: at most two more rounds, then the researcher ends with what it has.

This graph runs alone (``corral run examples/research_team/researcher.py``) or as the
``research`` node of the supervisor: it shares ``topic`` and ``notes`` with it, and its
``queries`` stay its own.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, Context, Cost, End, Graph, Guard, Retry
from research_team.services import services_of


class ResearchState(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    """Shared with the supervisor: what the search found."""
    queries: Annotated[list[str], operator.add]
    """The researcher's own: every query it ran."""


graph = Graph(ResearchState, name="researcher", max_steps=20, retry=Retry(attempts=2))

ENOUGH_NOTES = 2


@graph.node(start=True, then="search", timeout=10.0, cost=Cost(calls=1, tokens=2_000, usd=0.01))
async def plan(state: ResearchState, ctx: Context) -> dict[str, object]:
    which = "first" if not state["queries"] else "next"
    query = await services_of(ctx).complete(f"the {which} query about: {state['topic']}")
    return {"queries": [query]}


@graph.node(retry=Retry(attempts=3, on=(ConnectionError,), backoff=0.2, max_backoff=2.0))
def search(state: ResearchState, ctx: Context) -> dict[str, object]:
    found = services_of(ctx).search(state["queries"][-1])
    return {"notes": [found]}


@graph.router("search", guards=[Guard("plan", max=2, otherwise=END)])
def enough(state: ResearchState) -> Literal["plan"] | End:
    return END if len(state["notes"]) >= ENOUGH_NOTES else "plan"
