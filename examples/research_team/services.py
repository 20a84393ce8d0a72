"""The model and the search tool the team calls, as offline fakes.

A real deployment passes its own clients as ``deps``; the graphs only need these methods.
The fake search fails once per query with ``ConnectionError`` (a dropped connection), so the
``Retry`` on the search node has something to do; the fake model answers from templates and
streams the report word by word.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

__all__ = ["FakeServices", "Services", "services_of"]


class Services(Protocol):
    """What the team's nodes call (``ctx.deps``)."""

    async def complete(self, prompt: str) -> str:
        """Return the model's answer to ``prompt``."""
        ...

    def stream(self, prompt: str) -> AsyncIterator[str]:
        """Yield the model's answer to ``prompt`` token by token."""
        ...

    def search(self, query: str) -> str:
        """Return what the search tool finds for ``query``."""
        ...


class FakeServices:
    """Offline stand-ins: a templated model and a search tool that drops every first call."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        """How many times each query was searched (failed attempts included)."""

    async def complete(self, prompt: str) -> str:
        await asyncio.sleep(0)  # a real client awaits the network here
        topic = prompt.rpartition(":")[2].strip()
        return f"{topic} {'history' if 'first' in prompt else 'open questions'}"

    async def stream(self, prompt: str) -> AsyncIterator[str]:
        topic = prompt.rpartition(":")[2].strip()
        for word in f"Report on {topic}: the notes agree; more study is needed.".split():
            await asyncio.sleep(0)
            yield word + " "

    def search(self, query: str) -> str:
        self.calls[query] = self.calls.get(query, 0) + 1
        if self.calls[query] == 1:
            raise ConnectionError(f"connection reset while searching {query!r}")
        return f"3 sources on {query}"


_OFFLINE = FakeServices()


def services_of(ctx: Any) -> Services:
    """Return the clients passed as ``deps``, or the offline fakes when none were."""
    deps: Services | None = ctx.deps
    return deps if deps is not None else _OFFLINE
