"""The command line: ``corral lint``, ``draw``, ``cycles`` and ``run``."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code. (Placeholder until the CLI issue.)"""
    return 0
