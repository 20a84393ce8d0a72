"""``interrupt()``: pause a run for a person."""

from __future__ import annotations

from typing import Any

__all__ = ["interrupt"]


def interrupt(payload: Any) -> Any:
    """Pause the run and surface ``payload``; return the person's answer on resume."""
    raise NotImplementedError
