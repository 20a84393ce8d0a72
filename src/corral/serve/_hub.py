"""Live events of the runs this process runs, for the streams that follow them.

A server worker (a thread) publishes each event of a run as it happens; a stream (a
coroutine on the server's event loop) reads the run's channel from a cursor. A channel
keeps its events, so a stream that dropped and joins again with ``Last-Event-ID`` gets
what it missed: event ids are the 1-based position in the channel. Ended channels are
dropped once :data:`_KEPT_RUNS` newer ones exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Channel", "Hub"]

_KEPT_RUNS = 1000
"""How many runs' channels the hub keeps (the oldest ended ones go first)."""


@dataclass
class Channel:
    """The events of one run: ``(event name, data)`` in order, and whether it ended."""

    events: list[tuple[str, Any]] = field(default_factory=list)
    ended: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set (on the server's loop) when events were added; readers clear it, then read.
    (An ``asyncio.Event`` binds to the loop that first waits on it, so any thread may make
    one.)"""


class Hub:
    """The channels of the runs, shared by the worker threads and the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._channels: OrderedDict[str, Channel] = OrderedDict()

    def channel(self, run_id: str) -> Channel | None:
        """Return the run's channel, or ``None`` when no worker of this process ran it."""
        with self._lock:
            return self._channels.get(run_id)

    def open(self, run_id: str) -> None:
        """Start (or, for a run taken over, continue) the run's channel."""
        with self._lock:
            found = self._channels.get(run_id)
            if found is None:
                found = self._channels[run_id] = Channel()
            found.ended = False
            while len(self._channels) > _KEPT_RUNS:
                oldest = next((k for k, c in self._channels.items() if c.ended), None)
                if oldest is None:
                    return
                del self._channels[oldest]

    def publish(self, run_id: str, event: str, data: Any) -> None:
        """Add an event to the run's channel and wake its readers (any thread)."""
        self._add(run_id, (event, data))

    def end(self, run_id: str) -> None:
        """Mark the run's channel ended."""
        self._add(run_id, None)

    def _add(self, run_id: str, event: tuple[str, Any] | None) -> None:
        with self._lock:
            found = self._channels.get(run_id)
            if found is None:
                return
            if event is None:
                found.ended = True
            else:
                found.events.append(event)
        # a closed loop: the server is stopping, nobody reads
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(found.changed.set)
