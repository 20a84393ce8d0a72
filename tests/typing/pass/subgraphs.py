# pyright: strict
"""Subgraphs, retries and timeouts type-check under ``--strict`` with no annotations to add.

Checked by ``mypy --strict`` (``mypy.ini``); never run.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from corral import END, Graph, Retry


class State(TypedDict):
    topic: str
    notes: list[str]


class ChildState(TypedDict):
    topic: str
    notes: list[str]
    query: str


class Update(TypedDict, total=False):
    topic: str
    notes: list[str]


child = Graph(ChildState, retry=Retry(attempts=2))


@child.node(start=True, then=END, retry=Retry(on=(ValueError,), jitter=False), timeout=2.5)
async def search(state: ChildState) -> dict[str, object]:
    return {"notes": [state["query"]]}


parent = Graph(State, Update, Literal["research", "write"])
parent.subgraph(
    "research",
    child,
    start=True,
    then="write",
    input=lambda state: {"topic": state["topic"], "query": state["topic"]},
    output=lambda final: Update(notes=final["notes"]),
    max_runs=2,
)


@parent.node(then=END)
def write(state: State) -> Update:
    return {"notes": []}


picky = Retry(on=lambda exc: "again" in str(exc))
