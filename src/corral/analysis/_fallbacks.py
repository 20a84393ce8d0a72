"""Which guards' ``otherwise`` routes no run can take, in a graph without fan-out.

A guard on ``s → t`` with ``max=m`` sends a run of ``s`` to its ``otherwise`` route only
once ``s → t`` has been taken ``m`` times, each on an earlier run of ``s``. With ``m >= 1``
that needs a run of ``s`` after one that took ``s → t``. Without fan-out a run is one path:
after ``s → t`` the next node is ``t`` (or the run ends, at ``END``), so ``s`` runs again
only along routes leading from ``t`` back to ``s``. Since ``s → t`` is a route, they exist
exactly when ``s`` and ``t`` are in one strongly connected group. When they are not, or
when ``s`` declares ``max_runs`` of ``m`` or fewer (its ``m + 1``-th run, the first that
could fall back, raises ``NodeCapError`` instead), the ``otherwise`` route never fires:
:func:`untaken_fallbacks` finds the pairs of nodes whose ``otherwise`` routes (every guard
of ``s`` falling back there) are all such routes, and whose other routes, if any, are
guarded with ``max=0``: no run takes them.

Dropping such pairs can split a group, so that more guards' targets no longer lead back to
their sources: the rule is applied again on the groups left, at most :data:`PASSES` times.
Each pass is sound: a run that took a dropped route would have gone from ``t`` back to
``s`` along pairs no run takes, dropped by an earlier pass, or along pairs that were left,
and the groups of the pairs left say no such path exists.

With fan-out (a ``Send``, several ``then`` targets, a join, several start nodes) ``s`` may
run again on another branch, so nothing is dropped: the caller asks only without fan-out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from corral.analysis._cuts import component_index, strongly_connected
from corral.spec import Guard

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["PASSES", "fallback_note", "untaken_fallbacks"]

PASSES = 4
"""The most times the rule is applied again on the groups left after a drop."""

Pair = tuple[str, str]


def untaken_fallbacks(
    graph: SpecGraph, fallbacks: Collection[Pair]
) -> tuple[set[Pair], list[list[str]] | None]:
    """Return the pairs of ``fallbacks`` no run takes, and the groups of the pairs left.

    ``fallbacks`` are pairs made of guards' ``otherwise`` routes and, besides, only routes
    no run takes (guarded with ``max=0``); ``graph`` has no fan-out. The groups are the
    strongly connected groups of nodes (sinks first, as :attr:`SpecGraph.components`) once
    the untaken pairs are dropped, ``None`` when none is.
    """
    guards = {pair: graph.falling_back(*pair) for pair in fallbacks}
    group = component_index(graph.components)
    untaken: set[Pair] = set()
    components: list[list[str]] | None = None
    succ: dict[str, list[str]] = dict(graph.node_succ)  # dropped pairs: lists replaced, not changed
    for _ in range(PASSES):
        found = [
            pair
            for pair in fallbacks
            if pair not in untaken and _never_fires(graph, pair[0], guards[pair], group)
        ]
        if not found:
            break
        untaken.update(found)
        for source in {s for s, _t in found}:
            succ[source] = [t for t in succ[source] if (source, t) not in untaken]
        components = strongly_connected(graph.names, succ)
        group = component_index(components)
    return untaken, components


def _never_fires(
    graph: SpecGraph, source: str, guards: list[Guard], group: Mapping[str, int]
) -> bool:
    """Return whether every guard of ``source`` in ``guards`` never falls back.

    A guard never falls back when its ``max`` is 1 or more and its route leads to a node
    (or ``END``) from which no route leads back to ``source``, or ``source`` may not run
    more than ``max`` times. ``False`` with no guard (an ``otherwise`` route whose guard is
    not found is kept).
    """
    if not guards:
        return False
    spec = graph.spec.node(source)
    cap = None if spec is None else spec.max_runs
    for guard in guards:
        target = guard.target
        if guard.max < 1 or (source, target) not in graph.pairs:
            return False  # max=0 falls back at once; an undeclared route: not counted here
        if group.get(target) == group[source] and (cap is None or cap > guard.max):
            return False
    return True


def fallback_note(graph: SpecGraph, cycle: Iterable[str], *, all_steps: bool = False) -> str:
    """Return words naming each step of ``cycle`` that is a guard's ``otherwise`` route
    ("" when none is): falling back counts no guard, so such a step is unguarded even when
    a guard sits on another route between the same nodes.

    Unless ``all_steps``, a step that also has a plain (unguarded) route is left out: it is
    plainly unguarded, and the fallback is not what hides it.
    """
    parts: list[str] = []
    for source, guard in graph.fallbacks_on(cycle):
        target = guard.otherwise
        others = [r for r in graph.routes(source, target or "") if r.kind != "otherwise"]
        if not all_steps and any(r.guard is None for r in others):
            continue
        text = f"{source} → {target} is where Guard({guard.target!r}) on {source!r} falls back"
        counted = [r.guard for r in others if r.guard is not None]
        if counted:
            text += (
                f", and a fallback counts no guard, not even Guard({counted[0].target!r}) on "
                "that route"
            )
        elif others:
            text += " (as well as a plain route), and a fallback counts no guard"
        else:
            text += ", and a fallback counts no guard"
        parts.append(text)
    return "; ".join(parts)
