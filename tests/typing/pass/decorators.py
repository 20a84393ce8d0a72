# pyright: strict
"""Decorated nodes and routers keep their exact types, and well-typed routes check.

Checked by ``mypy --strict`` (``mypy.ini``) and by ``tests/unit/test_typing.py``; never run.
The ``assert_type`` checks on routers use positional-only state parameters where they compare
with a ``Callable[...]``, because a ``Callable`` type has no parameter names to compare. Nodes
keep their parameter names, so their checks call them by keyword instead (mypy rejects a node
whose first parameter is positional-only: see ``corral.dsl.NodeFunction``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypedDict, assert_type

from corral import END, START, Command, Context, End, Graph, Guard, Send


class State(TypedDict):
    topic: str
    score: int
    drafts: Annotated[list[str], operator.add]


class StateUpdate(TypedDict, total=False):
    topic: str
    score: int
    drafts: list[str]


class Doc(TypedDict):
    name: str


Nodes = Literal["draft", "critique", "revise", "work", "finish", "choose"]
Desk = Literal["revise", "finish"]

g = Graph(State, StateUpdate, Nodes)
s: State = {"topic": "t", "score": 0, "drafts": []}
ctx: Context = Context(deps=None, node="draft", step=1, thread_id=None, runs={}, guards={})


@g.node(start=True, then="critique")
def draft(state: State) -> StateUpdate:
    return {"drafts": ["v1"]}


assert_type(draft(state=s), StateUpdate)


@g.node(guards=[Guard("revise", max=3, otherwise=END)])
def critique(state: State, ctx: Context) -> Command[Literal["revise", "finish"]]:
    if state["score"] < 80:
        return Command(goto="revise", update={"score": state["score"] + 20})
    return Command(goto="finish")


# Named parameters are kept: the node can still be called by keyword.
assert_type(critique(state=s, ctx=ctx), Command[Literal["revise", "finish"]])


@g.node(then=("critique", END), max_runs=5, wait_for=["draft"], writes=("drafts",))
async def revise(state: State) -> StateUpdate | None:
    return None if state["score"] >= 80 else {"drafts": ["v+"]}


async def await_revise() -> None:
    # Awaited rather than compared with Coroutine[...]: pyright says CoroutineType.
    assert_type(await revise(state=s), StateUpdate | None)


@g.node(name="work", then="finish", input=Doc)
def work_on(doc: Doc, ctx: Context) -> StateUpdate:
    """A node that a ``Send`` runs takes the ``Send``'s argument (``input=``), not the state."""
    return {"drafts": [doc["name"]]}


assert_type(work_on(doc={"name": "a"}, ctx=ctx), StateUpdate)


@g.node(then=END)
def finish(state: Mapping[str, Any]) -> None:
    """A node may take a wider type than the state (here any mapping)."""
    return None


assert_type(finish(state={"any": "mapping"}), None)  # the parameter's own type is kept


@g.node()
def choose(state: State) -> StateUpdate:
    return {}


@g.router("choose")
def pick(state: State, /) -> Desk | End:
    return END if state["score"] > 90 else "revise"


assert_type(pick, Callable[[State], Literal["revise", "finish"] | End])


@g.router("choose")
def pick_again(state: State, ctx: Context) -> Desk:
    """A router may call another router: the decorated one keeps its exact return type."""
    chosen = pick(state)
    return "finish" if chosen == END else chosen


assert_type(pick_again(s, ctx=ctx), Desk)


@g.router("choose")
def fan_out(state: State) -> list[Send[Literal["work"]]]:
    return [Send("work", {"name": d}) for d in state["drafts"]]


assert_type(fan_out, Callable[[State], list[Send[Literal["work"]]]])


@g.router("choose")
def branches(state: State) -> list[Literal["revise", "finish"]]:
    return ["revise", "finish"]


@g.router("choose")
async def later(state: State, ctx: Context, /) -> Literal["finish"] | End:
    return "finish" if ctx.step < 3 else END


async def await_later() -> None:
    assert_type(await later(s, ctx), Literal["finish"] | End)


@g.router("choose")
def loose_state(state: Mapping[str, Any]) -> End:
    """A router may take a wider type than the state (here any mapping)."""
    return END


# END is the value side of End: `return END` checks against `-> ... | End`.
assert_type(END, Literal["__end__"])
assert_type(START, Literal["__start__"])
end: End = END


# Level 0: with no update schema or node names, any mapping update and any name check.
loose = Graph(State)


@loose.node(start=True, then="anything")
def first(state: State) -> dict[str, object]:
    return {"score": 1}


@loose.node()
def typed(state: State) -> StateUpdate:
    return {"score": 1}


@loose.router("anything")
def anywhere(state: State) -> Literal["first", "somewhere"] | End:
    return "somewhere"


@loose.node()
def commands(state: State) -> Command[Literal["first"]] | dict[str, int]:
    return Command(goto="first", update={"score": 2})


class Scored(TypedDict):
    """A part of the state: every ``State`` is a ``Scored`` (a supertype of the state)."""

    score: int


@loose.node(then=END)
def read_score(state: Scored, ctx: Context) -> None:
    return None


@loose.node(then=END)
def anything(state: object) -> None:
    return None


# Any type works as a Send node's input: a TypedDict, a dataclass, a builtin, a generic.
@loose.node(then=END, input=str)
def shout(text: str) -> dict[str, object]:
    return {"topic": text.upper()}


assert_type(shout(text="a"), dict[str, object])


@loose.node(then=END, input=list[str])
async def join_words(words: list[str], ctx: Context) -> dict[str, object]:
    return {"topic": " ".join(words)}


@loose.node(then=END, input=Doc)
def loose_doc(doc: Mapping[str, object]) -> None:
    """A Send node may take a wider type than its ``input=`` too."""
    return None
