"""What ``stream`` and ``astream`` yield: the items of one mode, or of several.

A run's events are picked per mode: ``"updates"`` takes each ``NodeEnd`` as ``(node,
update)``, ``"values"`` each ``SuperstepEnd`` as the whole state, ``"custom"`` each
``Custom`` (what a node passed to ``ctx.emit``) as ``(node, value)``, and ``"events"`` every
record. A list of modes yields ``(mode, item)`` pairs, in the order the events happened.

Every event is picked the moment it is emitted (a :class:`Picker` listens to the run).
``stream`` yields the items at each point where its driver stops for the caller, so the run
goes no further than its consumer asks. ``astream`` delivers live: the run is driven by a
task of its own and the items are queued for the consumer, who therefore gets a node's
custom events while that node is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal, get_args

from corral.errors import StreamModeError
from corral.runtime.events import Custom, Event, NodeEnd, SuperstepEnd
from corral.runtime.run_state import RunState
from corral.runtime.state import copy_value

__all__ = [
    "MODES",
    "Picker",
    "StreamMode",
    "drained",
    "in_new_loop",
    "live",
]

StreamMode = Literal["updates", "values", "events", "custom"]
MODES: tuple[str, ...] = get_args(StreamMode)
"""Every stream mode."""

_NONE: Any = object()
"""No item: an event that gives nothing in a mode, or the end of a run's items."""


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


class Picker:
    """Picks each event a run emits in a stream's mode(s) as it is emitted (``"values"``
    sees the state of that moment) and hands the items to ``put``, where the stream's
    consumer takes them; a list of modes gives ``(mode, item)`` pairs."""

    def __init__(self, mode: str | Sequence[str], put: Callable[[Any], object]) -> None:
        """Raises ``StreamModeError`` when ``mode`` names no mode or one that is unknown."""
        self.modes = (mode,) if isinstance(mode, str) else tuple(mode)
        for one in self.modes:
            if one not in MODES:
                msg = (
                    f"stream mode {one!r} is not one of {', '.join(map(repr, MODES))}; pass "
                    "one of them, or a list of them"
                )
                raise StreamModeError(msg, mode=str(one))
        if not self.modes:
            msg = "stream mode [] names no mode; pass one of them, or a list of them"
            raise StreamModeError(msg, mode="[]")
        self.pairs = not isinstance(mode, str)
        self.put = put
        self.rs: RunState | None = None
        """The run, once set up (what it emits while it is set up needs no state)."""

    def __call__(self, event: Event) -> None:
        for mode in self.modes:
            item = _pick(self.rs, event, mode)
            if item is not _NONE:
                self.put((mode, item) if self.pairs else item)


def drained(points: Iterator[None], items: list[Any]) -> Iterator[Any]:
    """Yield the ``items`` picked so far at each point of a run the driver yields, and the
    last ones once it ended, or before its error."""
    try:
        for _ in points:
            yield from items
            items.clear()
    except Exception:
        yield from items
        raise
    yield from items


async def live(points: AsyncIterator[None], queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """Drive a run in a task of its own; yield its items as they are queued."""

    async def drive() -> None:
        try:
            async for _ in points:
                pass
        finally:
            queue.put_nowait(_NONE)

    task = asyncio.ensure_future(drive())
    try:
        while True:
            item = await queue.get()
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
