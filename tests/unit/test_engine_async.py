"""Async nodes and routers: ainvoke/astream run a superstep's async nodes concurrently."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, CorralError, End, Graph, Guard, MemorySaver, NodeError, Resume, interrupt


class S(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


def meeting_graph() -> Graph[S]:
    """Two start nodes that each wait for the other to have started: only concurrency ends."""
    g = Graph(S)
    arrived: dict[str, asyncio.Event] = {}

    def event(name: str) -> asyncio.Event:
        return arrived.setdefault(name, asyncio.Event())

    @g.node(start=True, then="after")
    async def left(state: S) -> dict[str, object]:
        event("left").set()
        await asyncio.wait_for(event("right").wait(), timeout=2)
        return {"log": ["left"]}

    @g.node(start=True, then="after")
    async def right(state: S) -> dict[str, object]:
        event("right").set()
        await asyncio.wait_for(event("left").wait(), timeout=2)
        return {"log": ["right"]}

    @g.node(then=END)
    def after(state: S) -> dict[str, object]:
        arrived.clear()
        return {"n": len(state["log"])}

    return g


def test_ainvoke_runs_async_nodes_of_a_superstep_concurrently() -> None:
    """Two async branches that wait for each other finish only when run concurrently."""
    run = asyncio.run(meeting_graph().compile().ainvoke({"n": 0}))
    assert run.state == {"log": ["left", "right"], "n": 2}
    assert run.supersteps == 2


def test_invoke_runs_async_nodes_in_a_fresh_loop() -> None:
    """Plain invoke runs a graph with async nodes (concurrently, in its own event loop)."""
    run = meeting_graph().compile().invoke({"n": 0})
    assert run.state["log"] == ["left", "right"]


def test_invoke_inside_a_running_loop_says_to_use_ainvoke() -> None:
    """invoke of an async graph from inside a running event loop raises a CorralError."""
    app = meeting_graph().compile()

    async def main() -> None:
        app.invoke({"n": 0})

    with pytest.raises(CorralError, match="ainvoke"):
        asyncio.run(main())


def test_merge_order_is_registration_order_not_finish_order() -> None:
    """The branch that finishes first does not merge first."""
    g = Graph(S)

    @g.node(start=True, then=END)
    async def slow(state: S) -> dict[str, object]:
        await asyncio.sleep(0.02)
        return {"log": ["slow"]}

    @g.node(start=True, then=END)
    async def fast(state: S) -> dict[str, object]:
        return {"log": ["fast"]}

    assert g.compile().invoke({"n": 0}).state["log"] == ["slow", "fast"]


def test_async_router_and_astream() -> None:
    """An async router is awaited; astream yields (node, update) per node run."""
    g = Graph(S)

    @g.node(start=True)
    async def work(state: S) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=5)])
    async def again(state: S) -> Literal["work"] | End:
        await asyncio.sleep(0)
        return END if state["n"] >= 3 else "work"

    async def collect() -> list[Any]:
        return [item async for item in g.compile().astream({"n": 0})]

    assert asyncio.run(collect()) == [("work", {"n": 1}), ("work", {"n": 2}), ("work", {"n": 3})]
    assert list(g.compile().stream({"n": 0}, mode="values"))[-1] == {"n": 3, "log": []}


def test_async_node_error_is_wrapped() -> None:
    """An exception in an async node is a NodeError with the original as its cause."""
    g = Graph(S)

    @g.node(start=True, then=END)
    async def boom(state: S) -> None:
        raise ValueError("async boom")

    with pytest.raises(NodeError) as caught:
        asyncio.run(g.compile().ainvoke({"n": 0}))
    assert caught.value.node == "boom" and isinstance(caught.value.__cause__, ValueError)


def test_async_interrupt_and_resume() -> None:
    """interrupt() works in async nodes too."""
    g = Graph(S)

    @g.node(start=True, then=END)
    async def ask(state: S) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"log": [interrupt("ok?")]}

    app = g.compile(checkpointer=MemorySaver())

    async def main() -> Any:
        run = await app.ainvoke({"n": 0}, thread_id="t")
        assert run.status == "interrupted" and run.interrupts[0].value == "ok?"
        return await app.ainvoke(Resume("yes"), thread_id="t")

    assert asyncio.run(main()).state["log"] == ["yes"]


def test_sync_graph_runs_under_ainvoke() -> None:
    """ainvoke runs plain sync nodes as well."""
    g = Graph(S)

    @g.node(start=True, then=END)
    def plain(state: S) -> dict[str, object]:
        return {"n": 7}

    assert asyncio.run(g.compile().ainvoke({"n": 0})).state["n"] == 7


def test_caps_inside_an_async_superstep_match_the_sync_loop() -> None:
    """With room for two more runs, an async 3-way fan-out runs two branches and stops."""
    from corral import StepLimitError

    g = Graph(S)

    @g.node(start=True, then=("a", "b", "c"))
    async def plan(state: S) -> None:
        return None

    @g.node(then=END)
    async def a(state: S) -> dict[str, object]:
        return {"log": ["a"]}

    @g.node(then=END)
    async def b(state: S) -> dict[str, object]:
        return {"log": ["b"]}

    @g.node(then=END)
    async def c(state: S) -> dict[str, object]:
        return {"log": ["c"]}

    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError) as caught:
        asyncio.run(app.ainvoke({"n": 0}, thread_id="t", max_steps=3))
    assert (caught.value.node, caught.value.steps) == ("c", 3)
    run = asyncio.run(app.ainvoke(None, thread_id="t"))
    assert run.state["log"] == ["a", "b", "c"] and run.steps == 4
