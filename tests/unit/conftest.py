"""Fixtures of the unit tests: every engine test runs through both drivers (``engine_path``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
