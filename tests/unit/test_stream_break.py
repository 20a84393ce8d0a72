"""A consumer that leaves a stream part way (``break``) loses nothing it was shown: every
update a stream delivered is in the thread, so continuing it (``invoke(None, ...)``) never
runs that node again, whatever the driver (``stream``, the ``stream`` of an async graph,
``astream``) and wherever the consumer stops."""

from __future__ import annotations

import asyncio
import gc
import operator
from collections import Counter
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, Graph
from corral.checkpoint import Checkpointer
from corral.runtime.app import CompiledGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def build(ran: Counter[str], is_async: bool) -> Graph[Log]:
    """``a`` (whose router awaits, in the async graph) → ``x`` and ``y`` at once → ``c``."""
    g = Graph(Log)

    def node(name: str) -> Any:
        def run(state: Log) -> dict[str, Any]:
            ran[name] += 1
            return {"log": [name]}

        async def run_async(state: Log) -> dict[str, Any]:
            await asyncio.sleep(0)
            return run(state)

        return run_async if is_async else run

    g.node("a", start=True)(node("a"))
    g.node("x", then="c")(node("x"))
    g.node("y", then="c")(node("y"))
    g.node("c", then=END)(node("c"))

    async def fan_out_async(state: Log) -> list[Literal["x", "y"]]:
        await asyncio.sleep(0.01)  # a router that waits, e.g. for a model
        return ["x", "y"]

    def fan_out(state: Log) -> list[Literal["x", "y"]]:
        return ["x", "y"]

    g.router("a")(fan_out_async if is_async else fan_out)
    return g


def seen_then_left(app: CompiledGraph[Log], how: str, items: int) -> list[str]:
    """Read ``items`` updates of a run of thread ``t``, then leave the stream; return the
    nodes whose updates were read."""
    seen: list[str] = []
    if how == "astream":

        async def read() -> None:
            async for node, _ in app.astream({"log": []}, thread_id="t"):
                seen.append(node)
                if len(seen) == items:
                    break

        asyncio.run(read())
    else:
        for node, _ in app.stream({"log": []}, thread_id="t"):
            seen.append(node)
            if len(seen) == items:
                break
    gc.collect()
    return seen


@pytest.mark.parametrize("items", [1, 2, 3])
@pytest.mark.parametrize("how", ["stream", "stream of an async graph", "astream"])
def test_a_stream_left_part_way_keeps_every_update_it_showed(
    saver: Checkpointer, how: str, items: int
) -> None:
    ran: Counter[str] = Counter()
    app = build(ran, is_async=how != "stream").compile(checkpointer=saver)
    seen = seen_then_left(app, how, items)
    assert len(seen) == items
    final = app.invoke(None, thread_id="t").state["log"]
    assert sorted(final) == ["a", "c", "x", "y"]
    assert all(ran[node] == 1 for node in seen), f"shown {seen}, ran {dict(ran)}"


@pytest.mark.parametrize("is_async", [False, True])
def test_ctrl_c_in_a_router_keeps_the_merged_superstep(saver: Checkpointer, is_async: bool) -> None:
    """A Ctrl-C while a router runs (after its node's update was merged) keeps that
    superstep: the thread is not in error, and continuing it takes the routes again without
    running the node a second time."""
    ran: Counter[str] = Counter()
    g = Graph(Log)

    @g.node(start=True)
    def a(state: Log) -> dict[str, Any]:
        ran["a"] += 1
        return {"log": ["a"]}

    @g.node(then=END)
    def b(state: Log) -> dict[str, Any]:
        ran["b"] += 1
        return {"log": ["b"]}

    pressed = [True]

    def route(state: Log) -> Literal["b"]:
        if pressed[0]:
            pressed[0] = False
            raise KeyboardInterrupt
        return "b"

    async def route_async(state: Log) -> Literal["b"]:
        await asyncio.sleep(0)
        return route(state)

    g.router("a")(route_async if is_async else route)
    app = g.compile(checkpointer=saver)
    with pytest.raises(KeyboardInterrupt):
        app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").status == "running" and app.get_state("t").error is None
    assert app.invoke(None, thread_id="t").state["log"] == ["a", "b"]
    assert ran == Counter({"a": 1, "b": 1})
