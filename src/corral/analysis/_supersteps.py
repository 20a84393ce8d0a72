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

from corral.analysis._cuts import reach
from corral.spec import Guard

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["coactive_pairs", "partners"]

_ROUTE_KINDS = ("then", "router", "command", "send", "otherwise")


def coactive_pairs(graph: SpecGraph) -> set[tuple[str, str]]:
    """Return the pairs of nodes that may run in the same superstep.

    A pair ``(a, a)`` means ``a`` may run more than once in one superstep (``Send``).
    Pairs are ordered by registration. The relation is the least one that holds:

    - the targets of one fan-out: several start nodes, a ``then=`` tuple, a
      list-returning router, a ``Command`` whose ``goto`` may be a list (a ``wait_for``
      join among them only if that route may complete it, see below); the ``Send``
      targets of a list-returning router pair with themselves;
    - if ``a`` and ``b`` may run together, so may any successor of ``a`` with any
      successor of ``b`` (distinct nodes), and a node both reach through a ``Send``
      pairs with itself. Branches that reach the same node merge (targets are
      de-duplicated), which is how branches of equal length join.

    A ``wait_for`` join runs in the superstep after the one that completes it: the route
    into it or the run of a node it waits for, once every node it waits for has run by
    then (in that superstep or an earlier one). So a join is a successor of such a node
    ``t`` only when, for each node it waits for, ``t`` is that node, or a node that may run
    beside it, or what one of those leads to by routes; it then also pairs with
    the successors of the nodes that may run with ``t``, possibly supersteps after a route
    into it was taken. As these pairs decide which nodes run beside each other, the
    relation is grown again until it holds still. Routers and guards are read as "may
    take any of their routes", so the relation over-approximates.
    """
    groups = list(_fanouts(graph))
    if not any(together or sends for _source, together, sends in groups):
        return set()  # no fan-out: nothing runs together, so no successor index is built
    succ = _successors(graph)
    waits = _waits(graph)
    completes: set[tuple[str, str]] = set()
    while True:
        kept = {
            # a Send runs a join at once, without holding it
            n: {(t, s) for t, s in out if s or t not in waits or (n, t) in completes}
            for n, out in succ.items()
        }
        releasing: dict[str, list[str]] = {}
        for trigger, join in sorted(completes):
            if trigger in waits[join]:
                releasing.setdefault(trigger, []).append(join)
        pairs = _grown(graph, groups, kept, waits, releasing)
        grown = _completing(waits, succ, pairs)
        if grown <= completes:
            return pairs
        completes |= grown


def _grown(
    graph: SpecGraph,
    groups: list[tuple[str | None, list[tuple[str, str]], list[str]]],
    succ: dict[str, set[tuple[str, bool]]],
    waits: dict[str, list[str]],
    releasing: dict[str, list[str]],
) -> set[tuple[str, str]]:
    """Return the least relation of :func:`coactive_pairs` with the successors ``succ``
    (a join only after a node that may complete it) and, for each node some joins wait
    for, those it may complete (``releasing``)."""
    pairs: set[tuple[str, str]] = set()
    queue: deque[tuple[str, str]] = deque()

    def add(a: str, b: str) -> None:
        pair = (a, b) if graph.rank[a] <= graph.rank[b] else (b, a)
        if pair not in pairs:
            pairs.add(pair)
            queue.append(pair)

    for source, together, sends in groups:
        # a join a fan-out's route holds runs later, paired by what releases it
        held = set() if source is None else set(waits) - {t for t, _send in succ.get(source, ())}
        for a, b in together:
            if a not in held and b not in held:
                add(a, b)
        for s in sends:
            add(s, s)
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


def _completing(
    waits: dict[str, list[str]],
    succ: dict[str, set[tuple[str, bool]]],
    pairs: set[tuple[str, str]],
) -> set[tuple[str, str]]:
    """Return ``(t, join)`` where a run of ``t`` may complete ``join``: every node it waits
    for may have run by ``t``'s superstep (``t`` is that node, or a node beside it, or
    what one of those leads to)."""
    beside = partners(pairs)
    names = {n: [t for t, _send in out] for n, out in succ.items()}
    found: set[tuple[str, str]] = set()
    for source, out in succ.items():
        for join, _send in out:
            if join in waits and all(
                _leads_to({w, *beside.get(w, ())}, source, names) for w in waits[join]
            ):
                found.add((source, join))
    return found


def partners(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Return, for each node of ``pairs``, the other nodes it may run beside."""
    found: dict[str, set[str]] = {}
    for a, b in pairs:
        if a != b:
            found.setdefault(a, set()).add(b)
            found.setdefault(b, set()).add(a)
    return found


SEARCH_LIMIT = 256
"""The most nodes :func:`_leads_to` visits; past it the answer is "may" (so the pairs stay
an over-approximation, and a join costs no walk of a large graph)."""


def _leads_to(starts: set[str], target: str, succ: dict[str, list[str]]) -> bool:
    """Return whether ``target`` is one of ``starts`` or may follow one by routes."""
    found = reach(starts, succ, limit=SEARCH_LIMIT)
    return target in found or len(found) > SEARCH_LIMIT


def _released_beside(
    joins: list[str], after: set[tuple[str, bool]], add: Callable[[str, str], None]
) -> None:
    """Pair each of ``joins`` with the nodes of ``after``: they may run in one superstep."""
    for join in joins:
        for node, _send in after:
            if node != join:
                add(join, node)


def _waits(graph: SpecGraph) -> dict[str, list[str]]:
    """Return each join's awaited nodes (the registered ones)."""
    return {
        node.name: [w for w in dict.fromkeys(node.wait_for) if graph.is_node(w)]
        for node in graph.nodes
        if node.wait_for
    }


def _successors(graph: SpecGraph) -> dict[str, set[tuple[str, bool]]]:
    """Return each node's successors, flagged when reached by a ``Send``; a join some route
    enters (it can be held) is a successor of each node it waits for too."""
    succ: dict[str, set[tuple[str, bool]]] = {n: set() for n in graph.names}
    for edge in graph.edges:
        if edge.kind in _ROUTE_KINDS and edge.source in succ and edge.target in graph.rank:
            succ[edge.source].add((edge.target, edge.kind == "send"))
    entered = {t for out in succ.values() for t, _send in out}
    for node in graph.nodes:
        for waited in node.wait_for:
            if waited in succ and node.name in entered:
                succ[waited].add((node.name, False))
    return succ


def _fanouts(
    graph: SpecGraph,
) -> Iterator[tuple[str | None, list[tuple[str, str]], list[str]]]:
    """Yield ``(the node that fans out, pairs of targets that may run together, Send
    targets that may run repeatedly)`` for each fan-out (``None`` for the start nodes,
    which run first without waiting). A used-up guard swaps its target for its otherwise,
    which then runs beside the other branches (never beside its own target)."""
    known = graph.rank

    def group(names: Iterable[str], guards: tuple[Guard, ...]) -> list[tuple[str, str]]:
        branches = []
        for name in dict.fromkeys(names):
            ways = [name, *(g.otherwise for g in guards if g.target == name and g.otherwise)]
            branches.append([w for w in dict.fromkeys(ways) if w in known])
        return [
            (a, b)
            for first, second in combinations(branches, 2)
            for a in first
            for b in second
            if a != b
        ]

    starts = [n.name for n in graph.nodes if n.start]
    yield None, list(combinations(starts, 2)), []
    for node in graph.nodes:
        if node.then is not None:
            yield node.name, group(node.then, node.guards), []
        command = node.command
        if command is not None and command.names is not None:
            if node.command_fanout:
                sends = [t for t in command.sends if t in known]
                yield node.name, group(command.names, node.guards), sends
    for router in graph.spec.routers:
        targets = router.targets
        if targets.many and targets.names is not None and router.source in known:
            sends = [t for t in targets.sends if t in known]
            yield router.source, group(targets.names, router.guards), sends
