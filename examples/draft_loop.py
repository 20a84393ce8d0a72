"""Draft, critique, revise: a writing loop that a guard keeps finite.

The writer drafts, a critic scores the draft, and the router sends it back for revision
until the score reaches 80. The route ``critique → revise`` carries a guard: it may be
taken at most three times in one run, and the fourth time the run ends instead. Without
the guard ``corral lint`` reports CR201 (unguarded cycle) and ``compile()`` refuses.

Counting convention: a *step* is one node run. Starting at 40 points with 20 points per
revision, the run is draft, critique, revise, critique, revise, critique: six steps, and
the guarded route was taken twice.

The model is a fake passed in through ``deps`` (``app.invoke(..., deps=FakeWriter())``),
so the example runs offline and a test can hand in any writer it likes.

Run it::

    python examples/draft_loop.py

or through the command line, which checkpoints every superstep to
``.corral/checkpoints.sqlite`` and shows each step and guard count on stderr::

    corral run examples/draft_loop.py --deps examples/draft_loop.py:FakeWriter \
        --input '{"topic": "guards", "score": 0}'
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol, TypedDict

from corral import END, Context, End, Graph, Guard, Run


class State(TypedDict):
    """What the loop knows: the topic, every draft, the critic's notes and latest score."""

    topic: str
    score: int
    drafts: Annotated[list[str], operator.add]
    notes: Annotated[list[str], operator.add]


class StateUpdate(TypedDict, total=False):
    """What a node may return: any subset of the state's keys (mypy checks the names)."""

    topic: str
    score: int
    drafts: list[str]
    notes: list[str]


class Writer(Protocol):
    """The model calls the loop needs; a real client or a fake."""

    def draft(self, topic: str) -> str: ...
    def critique(self, text: str) -> tuple[int, str]: ...
    def revise(self, text: str, note: str) -> str: ...


Nodes = Literal["draft", "critique", "revise"]

g = Graph(State, StateUpdate, Nodes, name="draft_loop", max_steps=50)


@g.node(start=True, then="critique")
def draft(state: State, ctx: Context) -> StateUpdate:
    writer: Writer = ctx.deps
    return {"drafts": [writer.draft(state["topic"])]}


@g.node()
def critique(state: State, ctx: Context) -> StateUpdate:
    writer: Writer = ctx.deps
    score, note = writer.critique(state["drafts"][-1])
    return {"score": score, "notes": [note]}


@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
def after_critique(state: State) -> Literal["revise"] | End:
    return END if state["score"] >= 80 else "revise"


@g.node(then="critique")
def revise(state: State, ctx: Context) -> StateUpdate:
    writer: Writer = ctx.deps
    return {"drafts": [writer.revise(state["drafts"][-1], state["notes"][-1])]}


app = g.compile()


@dataclass
class FakeWriter:
    """An offline stand-in for a model: each revision earns ``step`` points."""

    start: int = 40
    step: int = 20

    def draft(self, topic: str) -> str:
        return f"{topic} (v1)"

    def critique(self, text: str) -> tuple[int, str]:
        version = int(text.rsplit("(v", 1)[1].rstrip(")"))
        score = self.start + self.step * (version - 1)
        return score, f"v{version} scores {score}; tighten the opening"

    def revise(self, text: str, note: str) -> str:
        topic, version = text.rsplit(" (v", 1)
        return f"{topic} (v{int(version.rstrip(')')) + 1})"


def write(topic: str, writer: Writer | None = None) -> Run:
    """Run the loop on ``topic`` with ``writer`` (a :class:`FakeWriter` by default)."""
    return app.invoke({"topic": topic, "score": 0}, deps=writer or FakeWriter())


def main() -> None:
    run = write("Why every loop needs a guard")
    state = run.state
    used = run.guards.get(("critique", "revise"), 0)
    print(f"final draft: {state['drafts'][-1]}")
    print(f"score: {state['score']} after {run.steps} steps ({len(state['drafts'])} drafts)")
    print(f"guard critique → revise used {used} of 3")


if __name__ == "__main__":
    main()
