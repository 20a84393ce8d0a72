"""Three parallel branches writing a list key: the classic parallel-write bug (CR301)."""

import operator
from typing import Annotated, TypedDict

from corral import END, Graph


class State(TypedDict):
    topic: str
    results: list[str]
    notes: Annotated[list[str], operator.add]


g = Graph(State, name="fanout")


@g.node(start=True, then=("search_web", "search_papers", "search_code"))
def plan(state: State) -> dict[str, object]:
    return {"topic": state["topic"].strip()}


@g.node(then="merge")
def search_web(state: State) -> dict[str, object]:
    return {"results": ["web"], "notes": ["web done"]}


@g.node(then="merge")
def search_papers(state: State) -> dict[str, object]:
    return {"results": ["paper"], "notes": ["papers done"]}


@g.node(then="merge")
def search_code(state: State) -> dict[str, object]:
    return {"results": ["code"]}


@g.node(then=END, wait_for=("search_web", "search_papers", "search_code"))
def merge(state: State) -> dict[str, object]:
    return {"topic": "done"}
