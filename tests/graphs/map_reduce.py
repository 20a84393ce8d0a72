"""A map-reduce graph: a router sends one ``work`` run per document (``Send``)."""

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, Graph, Send


class State(TypedDict):
    docs: list[str]
    summaries: Annotated[list[str], operator.add]
    last: str


g = Graph(State, name="map_reduce")


@g.node(start=True)
def split(state: State) -> dict[str, object]:
    return {}


@g.router("split")
def fan(state: State) -> list[Send[Literal["work"]]]:
    return [Send("work", doc) for doc in state["docs"]]


@g.node(then="reduce", input=str)
def work(doc: str) -> dict[str, object]:
    return {"summaries": [doc[:10]]}


@g.node(then=END)
def reduce(state: State) -> dict[str, object]:
    return {}
