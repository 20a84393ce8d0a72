"""One node run, tried as many times as its ``Retry`` allows, each try under its timeout.

The engine calls a node through :func:`call_sync` or :func:`call_async` when the node has a
retry policy or a timeout. Each failed attempt that the policy retries is recorded (a
``NodeRetry`` event and a trace entry with the error), then the call waits
``policy.delay(n)`` seconds through :func:`corral.retry.sleep` (or ``async_sleep``), looked
up at each wait so tests can replace them, and calls the node again from its start. The
last error is raised as it is, for the engine to wrap in ``NodeError`` (the attempt it came
from is ``rs.retried``'s, as for a success); all attempts are one node run.

A timeout applies to each attempt of an async node: the attempt's task is cancelled at its
next ``await`` and ``NodeTimeoutError`` (retryable by default) is raised in its place.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any

from corral import retry as retry_module
from corral.errors import NodeTimeoutError
from corral.runtime.events import NodeRetry
from corral.runtime.run_state import Call, RunState

__all__ = ["call_async", "call_sync"]


def _retry_delay(
    rs: RunState, call: Call, attempt: int, exc: Exception, start: float
) -> float | None:
    """Return the seconds to wait before ``call``'s node is tried again after its failed
    ``attempt``, recording it (a trace entry with the error and a ``NodeRetry`` event); or
    ``None`` when it is not tried again."""
    position, task, step = call
    policy = task.node.retry
    if policy is None or attempt >= policy.attempts or not policy.retries(exc):
        return None
    name, error = task.node.path, f"{type(exc).__name__}: {exc}"
    seconds, delay = perf_counter() - start, policy.delay(attempt, error=exc)
    rs.trace.append((step, name, None, seconds, attempt, error))
    if rs.emit is not None:
        rs.emit(NodeRetry(step, name, attempt, error, delay))
    rs.retried[position] = attempt + 1  # names the next attempt's trace record or error
    return delay


def call_sync(rs: RunState, call: Call, once: Callable[[], Any]) -> Any:
    """Return ``once()`` (a call of ``call``'s node from its start), calling it again on
    each error the node's ``Retry`` retries."""
    for attempt in itertools.count(1):
        start = perf_counter()
        try:
            return once()
        except Exception as exc:
            delay = _retry_delay(rs, call, attempt, exc, start)
            if delay is None:
                raise
        retry_module.sleep(delay)


async def call_async(rs: RunState, call: Call, once: Callable[[], Any]) -> Any:
    """Return the (awaited) result of ``once()`` like :func:`call_sync`, each attempt under
    the node's ``timeout=``."""
    _, task, _ = call
    node = task.node
    for attempt in itertools.count(1):
        start = perf_counter()
        try:
            return await _one(once, node.path, node.timeout_s)
        except Exception as exc:
            delay = _retry_delay(rs, call, attempt, exc, start)
            if delay is None:
                raise
        await retry_module.async_sleep(delay)


async def _one(call: Callable[[], Any], node: str, timeout_s: float | None) -> Any:
    out = call()
    if not isinstance(out, Awaitable):
        return out
    if timeout_s is None:
        return await out
    try:
        async with asyncio.timeout(timeout_s) as scope:
            return await out
    except TimeoutError:
        if not scope.expired():
            raise  # the node's own TimeoutError, not ours
        msg = (
            f"node {node!r} ran longer than its timeout={timeout_s:g} s and was cancelled; "
            "raise timeout=, or give it a Retry to try again"
        )
        raise NodeTimeoutError(msg, node=node, timeout_s=timeout_s) from None
