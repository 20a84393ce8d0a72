"""``Diagnostic``: one finding of the analyser (data only; printing is the CLI's job)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Diagnostic", "Severity"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One finding: a rule code, where it is, and what to do about it."""

    code: str
    """``CR`` and three digits, e.g. ``CR201``."""
    slug: str
    """The rule's kebab-case name, e.g. ``unguarded-cycle``."""
    severity: Severity
    message: str
    nodes: tuple[str, ...] = ()
    """The nodes the finding is about."""
    file: str = "<unknown>"
    line: int = 0
    """1-based line of the ``def`` (or ``Graph(...)``) the finding points at."""
    col: int = 0
    """1-based column."""
    facts: Mapping[str, Any] | None = field(default=None, compare=False)
    """What a finding measured, as JSON values, for tools (CR205: the cost ceiling, the
    budget and the path); ``None`` for most findings."""

    @property
    def sort_key(self) -> tuple[str, int, int, str, tuple[str, ...], str]:
        """Return the key diagnostics are sorted by: place, then code, nodes and message."""
        return (self.file, self.line, self.col, self.code, self.nodes, self.message)
