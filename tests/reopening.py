"""A function that opens a NEW saver on one store at each call, for tests of a thread read
back by another saver (another process): ``memory`` hands back its one MemorySaver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from corral import MemorySaver, PostgresSaver, SqliteSaver
from corral.checkpoint import Checkpointer

Opener = Callable[[], Checkpointer]


@contextmanager
def reopening(request: pytest.FixtureRequest, path: Path) -> Iterator[Opener]:
    """Yield the opener of the store ``request.param`` names (``memory``, ``sqlite`` at
    ``path``, ``postgres`` on a new database of the session's cluster); close what it opened."""
    kind = request.param
    memory = MemorySaver()
    url = request.getfixturevalue("postgres_cluster").new_database() if kind == "postgres" else ""
    opened: list[Any] = []

    def open_saver() -> Checkpointer:
        if kind == "memory":
            return memory
        saver = SqliteSaver(path) if kind == "sqlite" else PostgresSaver(url)
        opened.append(saver)
        return saver

    try:
        yield open_saver
    finally:
        for saver in opened:
            saver.close()
