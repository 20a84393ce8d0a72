"""What ``stream`` and ``astream`` yield: the items of one mode, or of several.

A run's events are picked per mode: ``"updates"`` takes each ``NodeEnd`` as ``(node,
update)``, ``"values"`` each ``SuperstepEnd`` as the whole state, ``"custom"`` each
``Custom`` (what a node passed to ``ctx.emit``) as ``(node, value)``, and ``"events"`` every
record. A list of modes yields ``(mode, item)`` pairs, in the order the events happened.

``astream`` delivers live: the run is driven by a task of its own and every event is picked
the moment it is emitted (so ``"values"`` sees the state of that moment) and queued for the
consumer, who therefore gets a node's custom events while that node is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal, get_args

from corral.errors import StreamModeError
from corral.runtime.events import Custom, Event, NodeEnd, SuperstepEnd
from corral.runtime.run_state import RunState
from corral.runtime.state import copy_value

__all__ = [
    "MODES",
    "LiveBuffer",
    "StreamMode",
    "check_mode",
    "in_new_loop",
    "live",
    "picks",
]

StreamMode = Literal["updates", "values", "events", "custom"]
MODES: tuple[str, ...] = get_args(StreamMode)
"""Every stream mode."""

_NONE: Any = object()
"""No item: an event that gives nothing in a mode, or the end of a run's items."""


def check_mode(mode: str | Sequence[str]) -> str | tuple[str, ...]:
    """Return ``mode`` (a list as a tuple) if every mode in it is known; else raise."""
    modes = (mode,) if isinstance(mode, str) else tuple(mode)
    for one in modes:
        if one not in MODES:
            msg = (
                f"stream mode {one!r} is not one of {', '.join(map(repr, MODES))}; pass one "
                "of them, or a list of them"
            )
            raise StreamModeError(msg, mode=str(one))
    if not modes:
        msg = "stream mode [] names no mode; pass one of them, or a list of them"
        raise StreamModeError(msg, mode="[]")
    return mode if isinstance(mode, str) else modes


def _pick(rs: RunState | None, event: Event, mode: str) -> Any:
    if mode == "events":
        return event
    if mode == "updates":
        if isinstance(event, NodeEnd):
            return (event.node, dict(event.update) if event.update is not None else {})
        return _NONE
    if mode == "custom":
        return (event.node, event.value) if isinstance(event, Custom) else _NONE
    if isinstance(event, SuperstepEnd):
        assert rs is not None  # a run's first superstep ends after it started
        return copy_value(rs.values)  # the caller's to keep: a deep copy
    return _NONE


def picks(rs: RunState | None, event: Event, mode: str | tuple[str, ...]) -> list[Any]:
    """Return what ``event`` gives in ``mode`` (``(mode, item)`` pairs for a list of modes)."""
    if isinstance(mode, str):
        item = _pick(rs, event, mode)
        return [] if item is _NONE else [item]
    return [(one, item) for one in mode if (item := _pick(rs, event, one)) is not _NONE]


class LiveBuffer(list[Event]):
    """A stream's event buffer that picks each event as it is emitted and queues the items.

    It stays empty (so the driver has nothing to flush). What the run emits while it is set
    up (a checkpoint written, a pause) is picked before ``rs`` is set, which only the
    ``"values"`` of a finished superstep need.
    """

    def __init__(self, mode: str | tuple[str, ...]) -> None:
        super().__init__()
        self.mode = mode
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.rs: RunState | None = None

    def append(self, event: Event) -> None:
        """Pick ``event`` now and queue its items for the consumer."""
        for item in picks(self.rs, event, self.mode):
            self.queue.put_nowait(item)


async def live(events: AsyncIterator[Event], buffer: LiveBuffer) -> AsyncIterator[Any]:
    """Drive a run in a task of its own; yield its items as they are queued."""

    async def drive() -> None:
        try:
            async for _ in events:
                pass
        finally:
            buffer.queue.put_nowait(_NONE)

    task = asyncio.ensure_future(drive())
    try:
        while True:
            item = await buffer.queue.get()
            if item is _NONE:
                break
            yield item
        await task  # the run's error, if it failed
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def in_new_loop(items: AsyncIterator[Any]) -> Iterator[Any]:
    """Yield what an async iterator yields, driving it on an event loop of its own.

    The loop is an ``asyncio.Runner``, as ``asyncio.run`` makes: Ctrl-C cancels the run's
    task (whose cleanup runs) before ``KeyboardInterrupt`` is raised, and closing the loop
    closes the iterator, so a consumer that stops early still ends the run.
    """
    with asyncio.Runner() as runner:
        while (item := runner.run(_next(items))) is not _NONE:
            yield item


async def _next(items: AsyncIterator[Any]) -> Any:
    return await anext(items, _NONE)  # Runner.run takes a coroutine, not an awaitable
