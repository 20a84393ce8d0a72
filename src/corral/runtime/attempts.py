"""One node run, tried as many times as its ``Retry`` allows, each try under its timeout.

The engine calls a node through :func:`call_sync` or :func:`call_async` when the node has a
retry policy or a timeout. Each failed attempt that the policy retries is recorded (a
``NodeRetry`` event and a trace entry with the error), then the call waits
``policy.delay(n)`` seconds through :func:`corral.retry.sleep` (or ``async_sleep``), looked
up at each wait so tests can replace them, and calls the node again from its start. The
last error is raised as it is, carrying how many attempts were made (read with
:func:`attempts_of`), for the engine to wrap in ``NodeError``; all attempts are one node run.

A timeout applies to each attempt of an async node: the attempt's task is cancelled at its
next ``await`` and ``NodeTimeoutError`` (retryable by default) is raised in its place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableSequence
from time import perf_counter
from typing import Any

from corral import retry as retry_module
from corral.errors import NodeTimeoutError
from corral.retry import Retry
from corral.runtime.events import Event, NodeRetry

__all__ = ["Attempts", "attempts_of", "call_async", "call_sync"]

_ATTEMPTS = "_corral_attempts"


def attempts_of(exc: BaseException) -> int:
    """Return how many attempts the node run that raised ``exc`` made (1 without retries)."""
    count = getattr(exc, _ATTEMPTS, 1)
    return count if isinstance(count, int) else 1


def _mark(exc: BaseException, count: int) -> None:
    try:
        setattr(exc, _ATTEMPTS, count)
    except (AttributeError, TypeError):  # an exception type with __slots__
        pass


class Attempts:
    """Where a node run's failed attempts are recorded: the run's trace and its events."""

    __slots__ = ("emit", "node", "position", "retried", "step", "trace")

    def __init__(
        self,
        node: str,
        step: int,
        trace: MutableSequence[Any],
        emit: Callable[[Event], None] | None,
        position: int = 0,
        retried: dict[int, int] | None = None,
    ) -> None:
        self.node = node
        self.step = step
        self.trace = trace
        self.emit = emit
        self.position = position
        self.retried = retried
        """Where the attempt that succeeded is noted (by task position) for its trace record."""

    def succeeded(self, attempt: int) -> None:
        """Note that ``attempt`` (after failed ones) succeeded."""
        if attempt > 1 and self.retried is not None:
            self.retried[self.position] = attempt

    def failed(self, attempt: int, exc: Exception, seconds: float, delay: float) -> None:
        """Record that ``attempt`` failed with ``exc`` and the next one runs after ``delay``."""
        error = f"{type(exc).__name__}: {exc}"
        self.trace.append((self.step, self.node, None, seconds, attempt, error))
        if self.emit is not None:
            self.emit(NodeRetry(self.step, self.node, attempt, error, delay))


def call_sync(policy: Retry | None, call: Callable[[], Any], record: Attempts) -> Any:
    """Return ``call()``, calling it again on each error ``policy`` retries."""
    if policy is None:
        return call()
    attempt = 1
    while True:
        start = perf_counter()
        try:
            out = call()
        except Exception as exc:
            if attempt >= policy.attempts or not policy.retries(exc):
                _mark(exc, attempt)
                raise
            delay = policy.delay(attempt, error=exc)
            record.failed(attempt, exc, perf_counter() - start, delay)
        else:
            record.succeeded(attempt)
            return out
        retry_module.sleep(delay)
        attempt += 1


async def call_async(
    policy: Retry | None,
    call: Callable[[], Any],
    record: Attempts,
    *,
    timeout_s: float | None,
) -> Any:
    """Return the (awaited) result of ``call()``, under ``timeout_s``, retried by ``policy``."""
    attempt = 1
    while True:
        start = perf_counter()
        try:
            out = await _one(call, record.node, timeout_s)
        except Exception as exc:
            if policy is None or attempt >= policy.attempts or not policy.retries(exc):
                _mark(exc, attempt)
                raise
            delay = policy.delay(attempt, error=exc)
            record.failed(attempt, exc, perf_counter() - start, delay)
        else:
            record.succeeded(attempt)
            return out
        await retry_module.async_sleep(delay)
        attempt += 1


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
