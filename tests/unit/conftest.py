"""Fixtures of the unit tests: every engine test runs through both drivers (``engine_path``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral import MemorySaver, PostgresSaver, SqliteSaver
from corral.checkpoint import Checkpointer
from corral.runtime.app import CompiledGraph


@pytest.fixture(params=["invoke", "ainvoke"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test's ``invoke`` calls through the sync driver or the async one.

    ``invoke``: as they are; ``ainvoke``: ``invoke`` replaced by
    ``asyncio.run(app.ainvoke(...))`` (outside a running event loop), so a graph with no async
    node gives the same answer through both entry points.
    """
    if request.param == "ainvoke":
        sync_invoke = CompiledGraph.invoke

        def invoke(self: CompiledGraph[Any], input: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.ainvoke(input, **kwargs))
            return sync_invoke(self, input, **kwargs)

        monkeypatch.setattr(CompiledGraph, "invoke", invoke)
    return str(request.param)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    """Each saver the contract names (a test file's own ``saver`` fixture takes precedence)."""
    if request.param == "memory":
        yield MemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver(tmp_path / "t.sqlite") as sqlite:
            yield sqlite
    else:
        url = request.getfixturevalue("postgres_url")
        with PostgresSaver(url) as postgres:
            yield postgres
