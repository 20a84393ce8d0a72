# pyright: strict
"""Typing at the graph's edges: what ``invoke`` takes, what a ``Run`` holds, ``Send`` and guards.

Checked by ``mypy --strict`` (``mypy.ini``), by pyright in strict mode, and by
``tests/unit/test_typing.py``; never run.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Annotated, Any, Literal, TypedDict, assert_type

from corral import (
    END,
    Command,
    CompiledGraph,
    Context,
    End,
    Graph,
    Guard,
    MemorySaver,
    Resume,
    Run,
    Send,
)


class State(TypedDict):
    topic: str
    messages: Annotated[list[str], operator.add]
    steps: list[str]


class StateUpdate(TypedDict, total=False):
    topic: str
    messages: list[str]
    steps: list[str]


class Step(TypedDict):
    """What a ``Send`` hands to ``execute``."""

    task: str


Nodes = Literal["plan", "execute", "review", "finish"]

g = Graph(State, StateUpdate, Nodes)


@g.node(start=True, guards=[Guard("execute", max=5, otherwise="finish")])
def plan(state: State) -> StateUpdate:
    return {"steps": ["look", "write"]}


# Send takes the node function itself: mypy checks the payload against its first parameter.
@g.router("plan")
def fan_out(state: State) -> list[Send[Literal["execute"]]]:
    return [Send(execute, {"task": step}) for step in state["steps"]]


@g.node(then="review", input=Step)
def execute(step: Step, ctx: Context) -> StateUpdate:
    return {"messages": [step["task"]]}


# The name form keeps working, and a Send of either form fits a Command's goto.
@g.node(guards=[Guard("execute", max=2, otherwise=END)])
def review(state: State) -> Command[Literal["execute", "finish"]]:
    if len(state["messages"]) < 2:
        return Command(goto=[Send(execute, Step(task="again")), Send("execute", {"task": "x"})])
    return Command(goto="finish")


@g.node(then=END)
def finish(state: State) -> None:
    return None


assert_type(Send(execute, {"task": "a"}), Send[Any])
assert_type(Send("execute", 1), Send[str])

# invoke/stream take the update schema: any subset of the keys, or None / Resume / Command.
app = g.compile(checkpointer=MemorySaver())
assert_type(app, CompiledGraph[State, StateUpdate])
run = app.invoke({"topic": "tides"}, thread_id="t1")
assert_type(run, Run[State])
app.invoke(None, thread_id="t1")
app.invoke(Resume("yes"), thread_id="t1")
app.invoke(Command(resume="yes"), thread_id="t1")
app.update_state("t1", {"messages": ["edited"]})
assert_type(app.stream({"topic": "t"}), Iterator[tuple[str, dict[str, Any]]])
assert_type(app.stream({"topic": "t"}, mode="values"), Iterator[State])


# run.state has the state's type: each key has its own type, so this returns no Any.
def last_messages(run: Run[State]) -> list[str]:
    return run.state["messages"]


assert_type(run.state["topic"], str)
assert_type(last_messages(run), list[str])


async def run_async() -> list[str]:
    done = await app.ainvoke({"topic": "t"}, thread_id="t2")
    stream: AsyncIterator[Any] = app.astream({"steps": []}, thread_id="t3")
    async for _ in stream:
        pass
    return done.state["messages"]


# A compiled graph of any state and input fits CompiledGraph[Any], and a bare Run too.
def steps_of(any_app: CompiledGraph[Any], value: Mapping[str, Any]) -> Run:
    return any_app.invoke(value)


steps_of(app, {"topic": "t"})

# A graph with no update schema takes any mapping as input; run.state is still typed.
loose = Graph(State)


@loose.node(start=True, then=END)
def only(state: State) -> dict[str, object]:
    return {}


loose_run = loose.compile().invoke({"anything": 1})
assert_type(loose_run.state["steps"], list[str])

# A guard built apart from its router: annotate it with the node names to check it there.
retry_guard: Guard[Nodes] = Guard("execute", max=3, otherwise="finish")
plain_guard = Guard("anything", max=1)  # a Guard[str]: fine on a graph without nodes=
assert_type(plain_guard, Guard[str])
named = Graph(State, StateUpdate, Literal["a", "b"])


@named.node(start=True, guards=[Guard("b", max=1, otherwise=END)])
def a(state: State) -> StateUpdate:
    return {}


@named.router("a")
def after_a(state: State) -> Literal["b"] | End:
    return "b"


@named.node(then="a")
def b(state: State) -> StateUpdate:
    return {}


@loose.node(guards=[plain_guard])
def guarded(state: State) -> Command[Literal["anything"]]:
    return Command(goto="anything")


@g.node(guards=[retry_guard])
def with_guard(state: State) -> None:
    return None
