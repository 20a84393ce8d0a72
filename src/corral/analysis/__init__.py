"""The analyser: spec -> networkx graph -> rules -> sorted ``Diagnostic`` list.

:func:`analyse` runs every rule of :mod:`corral.analysis.rules` and returns every finding at
once; :func:`list_cycles` enumerates elementary cycles for display (never to decide a rule).

Importing this package is cheap: networkx and the rules are imported the first time the
analyser runs, so ``import corral`` (which needs only :class:`Diagnostic`) does not pay for
them when a program only runs graphs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from corral.analysis.bound import Bound, bound_of
from corral.analysis.diagnostic import Diagnostic
from corral.spec import Cycle, GraphSpec

if TYPE_CHECKING:
    from corral.analysis.rules import RULES, Finding, Rule

__all__ = [
    "RULES",
    "Bound",
    "CycleList",
    "Diagnostic",
    "Rule",
    "analyse",
    "bound",
    "collector_paused",
    "list_cycles",
]


def __getattr__(name: str) -> Any:
    if name in ("RULES", "Rule"):
        from corral.analysis import rules

        return getattr(rules, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


class CycleList(list[Cycle]):
    """The cycles :func:`list_cycles` found; ``truncated`` is true when more exist."""

    truncated: bool = False


def analyse(spec: GraphSpec, rules: Mapping[str, Rule] | None = None) -> list[Diagnostic]:
    """Return every finding for ``spec`` of ``rules`` (every rule by default), sorted by place,
    then code.

    A finding is dropped when a node's (or router's) ``ignore=`` holds a prefix of its
    code: a finding placed at a router or node route (CR101, CR201, CR202, CR401) is
    dropped by that declaration's ``ignore=``; any finding is dropped when every registered
    node it names ignores the code.

    >>> from typing import TypedDict
    >>> from corral import Graph
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State)
    >>> @g.node(start=True, then="loop")
    ... def loop(state: State) -> dict[str, int]:
    ...     return {}
    >>> [(d.code, d.nodes) for d in analyse(g.spec())]
    [('CR105', ('loop',)), ('CR201', ('loop',))]
    """
    from corral.analysis._graph import SpecGraph
    from corral.analysis.rules import RULES
    from corral.analysis.rules.subgraphs import child_diagnostics

    found: list[Diagnostic] = []
    seen: set[Diagnostic] = set()
    with collector_paused():
        graph = SpecGraph(spec)
        for rule in (RULES if rules is None else rules).values():
            for finding in rule.check(graph):
                if _suppressed(spec, rule.code, finding):
                    continue
                diagnostic = rule.place(finding, spec)
                if diagnostic not in seen:  # one defect declared twice is reported once
                    seen.add(diagnostic)
                    found.append(diagnostic)
        found.extend(d for d in child_diagnostics(graph, analyse) if d not in seen)
    return sorted(found, key=lambda d: d.sort_key)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the analyser runs (if it was on).

    The analyser allocates many short-lived containers, which reference counting frees;
    with the collector on, they trigger full collections that each walk the whole heap, the
    graph's own objects included: a quarter of ``check()`` on 10,000 nodes, and a share that
    grows with the graph. Cycles made meanwhile are collected once the collector is back on.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _suppressed(spec: GraphSpec, code: str, finding: Finding) -> bool:
    if any(code.startswith(prefix) for prefix in finding.site_ignore):
        return True
    nodes = [node for name in finding.nodes if (node := spec.node(name)) is not None]
    return bool(nodes) and all(
        any(code.startswith(prefix) for prefix in node.ignore) for node in nodes
    )


def list_cycles(spec: GraphSpec, *, limit: int = 1000) -> CycleList:
    """Return at most ``limit`` elementary cycles, unguarded ones first.

    The result's ``truncated`` attribute says whether more cycles exist.

    >>> from typing import TypedDict
    >>> from corral import Graph
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State)
    >>> @g.node(start=True, then=("b", "__end__"))
    ... def a(state: State) -> dict[str, int]:
    ...     return {}
    >>> @g.node(then="a")
    ... def b(state: State) -> dict[str, int]:
    ...     return {}
    >>> cycles = list_cycles(g.spec())
    >>> [str(c) for c in cycles], cycles.truncated
    (['a → b → a'], False)
    """
    if limit < 0:
        msg = f"limit={limit!r} must be 0 or more"
        raise ValueError(msg)
    from corral.analysis._graph import SpecGraph

    cycles, truncated = SpecGraph(spec).cycles(limit)
    result = CycleList(cycles)
    result.truncated = truncated
    return result


def bound(spec: GraphSpec) -> Bound:
    """Return how many node runs one run of ``spec`` can take (see :mod:`.bound`)."""
    return bound_of(spec)
