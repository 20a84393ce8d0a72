"""ctx.emit: custom events in stream(mode="custom"), in lists of modes, and live."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from corral import END, Context, Graph
from corral.errors import StreamModeError
from corral.runtime import Custom, NodeEnd


class State(TypedDict):
    text: Annotated[list[str], operator.add]


def talker() -> Graph[State]:
    g = Graph(State)

    @g.node(start=True, then="after")
    def speak(state: State, ctx: Context) -> dict[str, Any]:
        for token in ("Hel", "lo"):
            ctx.emit(token)
        return {"text": ["Hello"]}

    @g.node(then=END)
    def after(state: State, ctx: Context) -> dict[str, Any]:
        ctx.emit({"done": True})
        return {"text": ["!"]}

    return g


def test_custom_mode_yields_node_and_value() -> None:
    """stream(mode="custom") yields (node, value) for each ctx.emit, in order."""
    assert list(talker().compile().stream({}, mode="custom")) == [
        ("speak", "Hel"),
        ("speak", "lo"),
        ("after", {"done": True}),
    ]


def test_a_list_of_modes_yields_mode_and_payload_custom_before_the_update() -> None:
    """mode=["updates", "custom"]: (mode, payload); a node's tokens come before its update."""
    assert list(talker().compile().stream({}, mode=["updates", "custom"])) == [
        ("custom", ("speak", "Hel")),
        ("custom", ("speak", "lo")),
        ("updates", ("speak", {"text": ["Hello"]})),
        ("custom", ("after", {"done": True})),
        ("updates", ("after", {"text": ["!"]})),
    ]


def test_events_carry_custom_records() -> None:
    """on_event gets a Custom record with the node and step, before that node's NodeEnd."""
    seen: list[Any] = []
    talker().compile().invoke({}, on_event=seen.append)
    picked = [e for e in seen if isinstance(e, (Custom, NodeEnd))]
    assert [(type(e).__name__, e.node) for e in picked] == [
        ("Custom", "speak"),
        ("Custom", "speak"),
        ("NodeEnd", "speak"),
        ("Custom", "after"),
        ("NodeEnd", "after"),
    ]
    assert picked[0] == Custom("speak", "Hel", 1)


def test_emit_with_no_one_listening_does_nothing() -> None:
    """invoke without a stream or on_event runs the same."""
    assert talker().compile().invoke({}).state["text"] == ["Hello", "!"]


def test_an_unknown_mode_in_a_list_is_refused() -> None:
    """A bad mode inside a list is refused at the call."""
    with pytest.raises(StreamModeError):
        talker().compile().stream({}, mode=["updates", "tokens"])  # type: ignore[list-item]


def live_graph(received: list[Any]) -> Graph[State]:
    g = Graph(State)

    @g.node(start=True, then=END)
    async def speak(state: State, ctx: Context) -> dict[str, Any]:
        ctx.emit("first token")
        for _ in range(5):
            await asyncio.sleep(0)
        assert received == [("speak", "first token")], "the token had not arrived yet"
        return {"text": ["done"]}

    return g


def test_astream_delivers_custom_events_while_the_node_runs() -> None:
    """The consumer of astream has the token before the node that sent it returns."""
    received: list[Any] = []

    async def consume() -> list[Any]:
        app = live_graph(received).compile()
        async for item in app.astream({}, mode=["custom", "updates"]):
            if item[0] == "custom":
                received.append(item[1])
        return received

    assert asyncio.run(consume()) == [("speak", "first token")]


def test_on_event_delivers_custom_events_while_the_node_runs() -> None:
    """on_event is called at the emit, inside the running node."""
    received: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, Custom):
            received.append((event.node, event.value))

    run = asyncio.run(live_graph(received).compile().ainvoke({}, on_event=on_event))
    assert run.state["text"] == ["done"]
