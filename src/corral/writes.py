"""Infer the state keys a node writes from the dict literals it returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["infer_writes"]


def infer_writes(func: Callable[..., Any]) -> frozenset[str] | None:
    """Return the keys ``func`` may write, or ``None`` when they cannot be known."""
    return None
