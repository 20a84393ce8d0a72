"""Fixtures of the unit tests: every engine test runs three ways (``engine_path``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from corral.runtime import drivers
from corral.runtime.app import CompiledGraph


@pytest.fixture(params=["invoke", "general", "ainvoke"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test's ``invoke`` calls one of three ways.

    ``invoke``: as they are (the inline path where it applies); ``general``: with the inline
    path turned off, so every superstep goes through the general driver loop; ``ainvoke``:
    ``invoke`` replaced by ``asyncio.run(app.ainvoke(...))`` (outside a running event loop).
    """
    if request.param == "general":
        monkeypatch.setattr(drivers, "run_inline", _no_inline)
    elif request.param == "ainvoke":
        sync_invoke = CompiledGraph.invoke

        def invoke(self: CompiledGraph[Any], input: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.ainvoke(input, **kwargs))
            return sync_invoke(self, input, **kwargs)

        monkeypatch.setattr(CompiledGraph, "invoke", invoke)
    return str(request.param)


def _no_inline(rs: Any) -> None:
    """Take no superstep inline: the driver's general loop runs them all."""
