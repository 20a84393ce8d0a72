"""Retries, timeouts and custom events at run time (the suite never sleeps for real)."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from corral import END, Graph, MemorySaver, NodeError, NodeTimeoutError, Resume, Retry, interrupt
from corral import retry as retry_module
from corral.runtime import NodeRetry


class State(TypedDict):
    calls: int
    out: str


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Replace both sleep functions; return the waits asked for, in order."""
    asked: list[float] = []

    async def async_sleep(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(retry_module, "sleep", asked.append)
    monkeypatch.setattr(retry_module, "async_sleep", async_sleep)
    return asked


def flaky_graph(
    failures: int, policy: Retry | None, error: type[Exception] = ConnectionError
) -> tuple[Graph[State], list[int]]:
    tries: list[int] = []
    g = Graph(State)

    @g.node(start=True, then=END, retry=policy)
    def fetch(state: State) -> dict[str, Any]:
        tries.append(len(tries) + 1)
        if len(tries) <= failures:
            raise error(f"reset {len(tries)}")
        return {"out": "ok"}

    return g, tries


def test_a_retried_node_is_one_step_with_every_attempt_traced(waits: list[float]) -> None:
    """Two failures then success: 1 step, 3 trace records, 2 NodeRetry events, 2 waits."""
    policy = Retry(attempts=3, backoff=0.5, jitter=False)
    g, tries = flaky_graph(2, policy)
    events: list[Any] = []
    run = g.compile().invoke({}, on_event=events.append)
    assert run.state["out"] == "ok" and run.steps == 1 and tries == [1, 2, 3]
    assert [(r.step, r.attempt, r.error) for r in run.trace] == [
        (1, 1, "ConnectionError: reset 1"),
        (1, 2, "ConnectionError: reset 2"),
        (1, 3, None),
    ]
    retried = [e for e in events if isinstance(e, NodeRetry)]
    assert [(e.node, e.attempt, e.delay_s) for e in retried] == [
        ("fetch", 1, 0.5),
        ("fetch", 2, 1.0),
    ]
    assert waits == [0.5, 1.0]


def test_after_the_last_attempt_the_error_is_a_node_error_with_attempts(waits: list[float]) -> None:
    """attempts=3, three failures: NodeError.attempts == 3, the original is __cause__."""
    g, tries = flaky_graph(5, Retry(attempts=3, jitter=False))
    with pytest.raises(NodeError) as info:
        g.compile().invoke({})
    assert info.value.attempts == 3 and tries == [1, 2, 3]
    assert isinstance(info.value.__cause__, ConnectionError)
    assert "attempt 3 of 3" in str(info.value)
    assert len(waits) == 2


def test_an_exception_object_raised_again_counts_only_its_own_attempts(
    waits: list[float],
) -> None:
    """One exception object raised by a retried node, then by a node without retries: the
    second NodeError counts its own one attempt (the object carries nothing between runs)."""
    down = ConnectionError("down")

    def raising(policy: Retry | None) -> Graph[State]:
        g = Graph(State)

        @g.node(start=True, then=END, retry=policy)
        def fetch(state: State) -> dict[str, Any]:
            raise down

        return g

    with pytest.raises(NodeError) as first:
        raising(Retry(attempts=2, jitter=False)).compile().invoke({})
    with pytest.raises(NodeError) as second:
        raising(None).compile().invoke({})
    assert (first.value.attempts, second.value.attempts) == (2, 1)
    assert "attempt" not in str(second.value)


def test_errors_outside_on_are_not_retried(waits: list[float]) -> None:
    """A ValueError under the default policy fails at once, attempts == 1."""
    g, tries = flaky_graph(1, Retry(), error=ValueError)
    with pytest.raises(NodeError) as info:
        g.compile().invoke({})
    assert info.value.attempts == 1 and tries == [1] and waits == []


def test_the_graph_default_applies_to_every_node(waits: list[float]) -> None:
    """Graph(State, retry=...) retries a node that has no retry= of its own."""
    tries: list[int] = []
    g = Graph(State, retry=Retry(attempts=2, jitter=False))

    @g.node(start=True, then=END)
    def fetch(state: State) -> dict[str, Any]:
        tries.append(1)
        if len(tries) == 1:
            raise TimeoutError("slow")
        return {"out": "ok"}

    assert g.compile().invoke({}).state["out"] == "ok" and len(tries) == 2


def test_interrupt_is_never_retried(waits: list[float]) -> None:
    """A pause inside a retried node pauses the run; the answer resumes it once."""
    tries: list[int] = []
    g = Graph(State)

    @g.node(start=True, then=END, retry=Retry(on=lambda exc: True))
    def ask(state: State) -> dict[str, Any]:
        tries.append(1)
        return {"out": str(interrupt("ok?"))}

    app = g.compile(checkpointer=MemorySaver())
    assert app.invoke({}, thread_id="T").status == "interrupted"
    assert app.invoke(Resume("yes"), thread_id="T").state["out"] == "yes"
    assert len(tries) == 2 and waits == []


def test_async_nodes_retry_through_async_sleep(waits: list[float]) -> None:
    """An async node's waits go through retry.async_sleep."""
    tries: list[int] = []
    g = Graph(State)

    @g.node(start=True, then=END, retry=Retry(attempts=3, backoff=2.0, jitter=False))
    async def fetch(state: State) -> dict[str, Any]:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("reset")
        return {"out": "ok"}

    run = asyncio.run(g.compile().ainvoke({}))
    assert run.state["out"] == "ok" and run.steps == 1 and waits == [2.0, 4.0]


def test_a_timeout_cancels_an_async_node() -> None:
    """A node that waits forever is cancelled; NodeTimeoutError is the NodeError's cause."""
    cancelled: list[bool] = []
    g = Graph(State)

    @g.node(start=True, then=END, timeout=0.01)
    async def hang(state: State) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {}

    with pytest.raises(NodeError) as info:
        g.compile().invoke({})
    cause = info.value.__cause__
    assert isinstance(cause, NodeTimeoutError)
    assert (cause.node, cause.timeout_s) == ("hang", 0.01)
    assert cancelled == [True]


def test_a_timed_out_attempt_is_retried(waits: list[float]) -> None:
    """NodeTimeoutError is retryable by default: a hang, then a quick answer."""
    tries: list[int] = []
    g = Graph(State)

    @g.node(start=True, then=END, timeout=0.01, retry=Retry(attempts=2, jitter=False))
    async def fetch(state: State) -> dict[str, Any]:
        tries.append(1)
        if len(tries) == 1:
            await asyncio.Event().wait()
        return {"out": "ok"}

    run = g.compile().invoke({})
    assert run.state["out"] == "ok" and run.steps == 1
    assert next(r.error for r in run.trace).startswith("NodeTimeoutError")


def test_a_nodes_own_timeout_error_is_not_ours() -> None:
    """A TimeoutError the node raises itself is not turned into NodeTimeoutError."""
    g = Graph(State)

    @g.node(start=True, then=END, timeout=5.0)
    async def fetch(state: State) -> dict[str, Any]:
        raise TimeoutError("upstream")

    with pytest.raises(NodeError) as info:
        g.compile().invoke({})
    assert type(info.value.__cause__) is TimeoutError
