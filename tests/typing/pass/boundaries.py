# pyright: strict
"""Typing at a run's boundaries: ``astream`` per mode, typed answers and deps, the model protocol.

Checked by ``mypy --strict`` (``mypy.ini``), by pyright in strict mode, and by
``tests/unit/test_typing.py``; never run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, TypedDict, assert_type

from corral import END, CompiledGraph, Context, Graph, MemorySaver, Resume, interrupt
from corral.agents import AssistantMessage, Message, ToolSchema, assistant, react_agent
from corral.runtime.events import Event


class State(TypedDict):
    n: int


class Tools(Protocol):
    def score(self, n: int) -> int: ...


class RealTools:
    def score(self, n: int) -> int:
        return n + 1


g = Graph(State)


@g.node(start=True, then=END)
def ask(state: State, ctx: Context[Tools]) -> State:
    approved = interrupt({"n": state["n"]}, bool)
    assert_type(approved, bool)
    assert_type(interrupt("free form"), Any)
    return {"n": ctx.deps.score(state["n"]) if approved else 0}


app = g.compile(checkpointer=MemorySaver(), deps_type=Tools, answer_type=bool)
assert_type(app, CompiledGraph[State, Mapping[str, Any], Tools, bool])
app.invoke({"n": 1}, thread_id="t", deps=RealTools())
app.invoke(Resume(True), thread_id="t", deps=RealTools())
app.invoke(Resume({"interrupt-id": False}), thread_id="t")
untyped = g.compile(checkpointer=MemorySaver())
untyped.invoke(Resume("anything"), thread_id="t", deps=object())


async def consume() -> None:
    assert_type(app.astream(None, thread_id="t"), AsyncIterator[tuple[str, dict[str, Any]]])
    assert_type(app.astream(None, mode="values", thread_id="t"), AsyncIterator[State])
    assert_type(app.astream(None, mode="events", thread_id="t"), AsyncIterator[Event])
    assert_type(app.astream(None, mode=["values", "custom"]), AsyncIterator[tuple[str, Any]])
    async for node, update in app.astream(None, thread_id="t"):
        assert_type(node, str)
        assert_type(update, dict[str, Any])


def model(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
    return assistant("done")


async def async_model(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
    return assistant("done")


react_agent(model, [])
react_agent(async_model, [])
