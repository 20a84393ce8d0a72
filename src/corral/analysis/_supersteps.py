"""Which nodes may run in the same superstep: a sound over-approximation on pairs (CR301).

Two nodes that may run in the same superstep and write the same key without a reducer make
the merge order decide the state. The relation is the least fixed point of a few rules on
pairs of nodes, grown from the graph's fan-outs forward; no run is explored.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import combinations
from typing import TYPE_CHECKING

from corral.spec import Guard

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["coactive_pairs"]

_ROUTE_KINDS = ("then", "router", "command", "send", "otherwise")


def coactive_pairs(graph: SpecGraph) -> set[tuple[str, str]]:
    """Return the pairs of nodes that may run in the same superstep.

    A pair ``(a, a)`` means ``a`` may run more than once in one superstep (``Send``).
    Pairs are ordered by registration. The relation is the least one that holds:

    - the targets of one fan-out: several start nodes, a ``then=`` tuple, a
      list-returning router, a ``Command`` whose ``goto`` may be a list; the ``Send``
      targets of a list-returning router pair with themselves;
    - if ``a`` and ``b`` may run together, so may any successor of ``a`` with any
      successor of ``b`` (distinct nodes), and a node both reach through a ``Send``
      pairs with itself. Branches that reach the same node merge (targets are
      de-duplicated), which is how branches of equal length join.

    A ``wait_for`` join is treated as a successor of every node it waits for, because it
    may be released in the superstep after any of them runs; and a join may have been
    held since a route into it was taken supersteps earlier, so it also pairs with every
    successor of a node it waits for, and of the nodes that may run with that node.
    Routers and guards are read as "may take any of their routes", so the relation
    over-approximates.
    """
    pairs: set[tuple[str, str]] = set()
    queue: deque[tuple[str, str]] = deque()

    def add(a: str, b: str) -> None:
        pair = (a, b) if graph.rank[a] <= graph.rank[b] else (b, a)
        if pair not in pairs:
            pairs.add(pair)
            queue.append(pair)

    for group, sends in _fanouts(graph):
        for a, b in combinations(group, 2):
            add(a, b)
        for s in sends:
            add(s, s)
    if not queue:
        return pairs  # no fan-out: nothing runs together, so no successor index is built
    succ = _successors(graph)
    releasing = _releasing(graph)
    for waited, joins in releasing.items():
        _released_beside(joins, succ[waited], add)
    while queue:
        a, b = queue.popleft()
        for a2, a_send in succ[a]:
            for b2, b_send in succ[b]:
                if a2 != b2:
                    add(a2, b2)
                elif a_send or b_send:
                    add(a2, a2)
        if a in releasing:
            _released_beside(releasing[a], succ[b], add)
        if b in releasing:
            _released_beside(releasing[b], succ[a], add)
    return pairs


def _released_beside(
    joins: list[str], after: set[tuple[str, bool]], add: Callable[[str, str], None]
) -> None:
    """Pair each of ``joins`` with the nodes of ``after``: they may run in one superstep."""
    for join in joins:
        for node, _send in after:
            if node != join:
                add(join, node)


def _releasing(graph: SpecGraph) -> dict[str, list[str]]:
    """Return, for each node some join waits for, those joins.

    A join held by a route taken earlier is released in the superstep after the one in
    which its last awaited node ran, so it runs beside the successors of that node and of
    every node running with it: possibly supersteps after the route into it was taken.
    """
    found: dict[str, list[str]] = {}
    for node in graph.nodes:
        for waited in dict.fromkeys(node.wait_for):
            if graph.is_node(waited):
                found.setdefault(waited, []).append(node.name)
    return found


def _successors(graph: SpecGraph) -> dict[str, set[tuple[str, bool]]]:
    """Return each node's successors, flagged when reached by a ``Send`` (joins included)."""
    succ: dict[str, set[tuple[str, bool]]] = {n: set() for n in graph.names}
    for edge in graph.edges:
        if edge.kind in _ROUTE_KINDS and edge.source in succ and edge.target in graph.rank:
            succ[edge.source].add((edge.target, edge.kind == "send"))
    for node in graph.nodes:
        for waited in node.wait_for:
            if waited in succ:
                succ[waited].add((node.name, False))
    return succ


def _fanouts(graph: SpecGraph) -> Iterator[tuple[list[str], list[str]]]:
    """Yield ``(targets that may run together, Send targets that may run repeatedly)``."""
    known = graph.rank

    def group(names: Iterable[str], guards: tuple[Guard, ...]) -> list[str]:
        # A used-up guard swaps its target for its otherwise, which then runs with the
        # other branches of the fan-out.
        chosen = list(dict.fromkeys(names))
        chosen += [g.otherwise for g in guards if g.target in chosen and g.otherwise]
        return [t for t in dict.fromkeys(chosen) if t in known]

    starts = [n.name for n in graph.nodes if n.start]
    yield starts, []
    for node in graph.nodes:
        if node.then is not None:
            yield group(node.then, node.guards), []
        command = node.command
        if command is not None and command.names is not None:
            if node.command_fanout:
                sends = [t for t in command.sends if t in known]
                yield group(command.names, node.guards), sends
    for router in graph.spec.routers:
        targets = router.targets
        if targets.many and targets.names is not None and router.source in known:
            sends = [t for t in targets.sends if t in known]
            yield group(targets.names, router.guards), sends
