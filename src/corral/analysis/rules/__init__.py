"""Every rule of the analyser: one small function per code that yields findings.

A rule reads a :class:`~corral.analysis._graph.SpecGraph` and yields :class:`Finding` values;
it never raises. :func:`corral.analysis.analyse` runs them all, places each finding, applies
the ``ignore=`` suppressions and sorts the result. The rules live by family:
:mod:`~corral.analysis.rules.structure` (CR1xx), :mod:`~corral.analysis.rules.cycles`
(CR2xx), :mod:`~corral.analysis.rules.state` (CR3xx) and :mod:`~corral.analysis.rules.routes`
(CR4xx). A rule's docstring is its documentation: the first line is the summary the CLI
shows, the rest the text of ``corral lint --explain`` when ``docs/rules.md`` is not at hand.

Each defect is reported once, where it is: with no start node (CR102) nothing is reported
dead (CR103); a node whose way out is already reported (CR101, CR104, CR401) counts as
finishing for CR105, and so does every node that only leads to it.
"""

from __future__ import annotations

from corral.analysis.rules import cycles, routes, state, structure
from corral.analysis.rules._base import RULES, Finding, Rule, rule

__all__ = [
    "RULES",
    "Finding",
    "Rule",
    "cycles",
    "langgraph",
    "routes",
    "rule",
    "state",
    "structure",
    "subgraphs",
]

from corral.analysis.rules import (
    langgraph,  # CR109, CR110, CR204: LangGraph graphs
    subgraphs,  # CR111, CR112: subgraph nodes
)
