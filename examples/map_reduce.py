"""Map-reduce: summarise every document in parallel with ``Send``, then combine them.

``split`` reads the documents; its router returns one ``Send(summarise, doc)`` per
document, so ``summarise`` runs once per document, all in the same superstep, each with its
own document as its input instead of the state (``input=Document`` tells mypy so, and
naming the node function in the ``Send`` lets mypy check each ``doc`` against it). Their
summaries merge through the ``summaries`` reducer, and ``combine`` runs once, after every
branch has finished.

``summaries`` must have a reducer: several runs of one node in one superstep write it, and
without one ``corral lint`` reports CR301 (parallel write) instead of letting one summary
silently overwrite the others.

Run it::

    python examples/map_reduce.py
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, Protocol, TypedDict

from corral import END, Context, Graph, Run, Send


class Document(TypedDict):
    """One document to summarise: the input of one ``summarise`` run."""

    name: str
    text: str


class State(TypedDict):
    """The documents, their summaries (merged by a reducer) and the final report."""

    documents: list[Document]
    summaries: Annotated[list[str], operator.add]
    report: str


class StateUpdate(TypedDict, total=False):
    """Any subset of the state's keys."""

    documents: list[Document]
    summaries: list[str]
    report: str


class Summariser(Protocol):
    """The model call that summarises one text."""

    def summarise(self, text: str) -> str: ...


Nodes = Literal["split", "summarise", "combine"]

g = Graph(State, StateUpdate, Nodes, name="map_reduce")


@g.node(start=True)
def split(state: State) -> StateUpdate:
    return {"documents": [d for d in state["documents"] if d["text"].strip()]}


@g.router("split")
def fan_out(state: State) -> list[Send[Literal["summarise"]]]:
    return [Send(summarise, doc) for doc in state["documents"]]


@g.node(then="combine", input=Document)
def summarise(doc: Document, ctx: Context) -> StateUpdate:
    model: Summariser = ctx.deps
    return {"summaries": [f"{doc['name']}: {model.summarise(doc['text'])}"]}


@g.node(then=END)
def combine(state: State) -> StateUpdate:
    lines = sorted(state["summaries"])
    return {"report": f"{len(lines)} documents\n" + "\n".join(f"- {s}" for s in lines)}


app = g.compile()


class FirstSentence:
    """An offline summariser: the first sentence and the word count."""

    def summarise(self, text: str) -> str:
        first = text.split(".")[0].strip()
        return f"{first}. ({len(text.split())} words)"


DOCUMENTS: list[Document] = [
    {"name": "postmortem.md", "text": "The cache expired at once. Traffic hit the database."},
    {"name": "roadmap.md", "text": "Ship the router first. Then the checkpoint store."},
    {"name": "empty.md", "text": "   "},
    {"name": "faq.md", "text": "Guards bound every loop. Caps bound every run. Lint first."},
]


def summarise_all(documents: list[Document], model: Summariser | None = None) -> Run[State]:
    """Summarise ``documents`` (skipping empty ones) and combine the summaries."""
    return app.invoke({"documents": documents}, deps=model or FirstSentence())


def main() -> None:
    run = summarise_all(DOCUMENTS)
    print(run.state["report"])
    print(f"({run.steps} steps in {run.supersteps} supersteps)")


if __name__ == "__main__":
    main()
