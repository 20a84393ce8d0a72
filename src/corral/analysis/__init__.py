"""The analyser: spec -> networkx graph -> rules -> sorted ``Diagnostic`` list."""

from __future__ import annotations

from corral.analysis.diagnostic import Diagnostic
from corral.spec import Cycle, GraphSpec

__all__ = ["Diagnostic", "analyse", "list_cycles"]


def analyse(spec: GraphSpec) -> list[Diagnostic]:
    """Return every finding for ``spec``, sorted. (Placeholder until the analyser lands.)"""
    return []


def list_cycles(spec: GraphSpec, *, limit: int = 1000) -> list[Cycle]:
    """Return at most ``limit`` elementary cycles. (Placeholder until the analyser lands.)"""
    return []
