"""The spec as a graph of routes, and the graph algorithms the rules ask about.

:class:`SpecGraph` indexes the spec's routes once, in plain dictionaries: for each pair
``s → t`` of ``START``, ``END`` and registered nodes, the routes (:class:`~corral.spec.Edge`)
declared from ``s`` to ``t``, marked *guarded* only when every one of them carries a guard
(a guard's ``otherwise`` route never does). Every question a rule asks is answered in time
linear in the number of routes, and the facts several rules share (distances from
``START``, the strongly connected groups of nodes) are computed once per check, so
``check()`` stays linear in the size of the graph.

Guard coverage is polynomial: a cycle with no guarded route is a cycle of the subgraph left
after dropping guarded routes, so it exists exactly when that subgraph has a strongly
connected component with two or more nodes, or a self-loop (Tarjan, linear time). One
witness cycle per component is found by a breadth-first search inside it. Elementary
cycles are only enumerated (Johnson's algorithm in networkx, output-sensitive, imported
then) for display, with a limit, never to decide a rule.

Which nodes may run in the same superstep is in :mod:`corral.analysis._supersteps`.
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from corral.analysis._cuts import (
    Cut,
    component_index,
    cut_group,
    reach,
    shortest_cycle,
    strongly_connected,
)
from corral.spec import END, START, Cycle, Edge, GraphSpec, Guard, NodeSpec, RouterSpec

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["SpecGraph"]

Pair = tuple[str, str]
_T = TypeVar("_T")


class SpecGraph:
    """A :class:`GraphSpec` with its routes indexed by pair of nodes."""

    def __init__(self, spec: GraphSpec) -> None:
        self.spec = spec
        self.names: tuple[str, ...] = spec.names
        """Every distinct node name, in registration order."""
        self.rank: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        """Registration order of every distinct node name (used to sort findings)."""
        self.edges: tuple[Edge, ...] = tuple(spec.edges())
        """Every declared route, ``START`` and ``otherwise`` routes included."""
        self.unknown_targets: list[Edge] = []
        """Routes whose target is neither a node nor ``END`` (CR101)."""
        pairs: dict[Pair, tuple[Edge, ...]] = {}
        guarded: set[Pair] = set()
        succ: dict[str, list[str]] = {START: [], **{n: [] for n in self.names}, END: []}
        rank = self.rank
        # one pass over the routes fills all three (on 10,000 nodes each further pass over
        # the routes reads memory the caches no longer hold)
        for edge in self.edges:
            source, target = edge.source, edge.target
            if target not in rank and target != END:
                self.unknown_targets.append(edge)
            elif source in rank or source == START:
                pair = (source, target)
                routes = pairs.get(pair)
                if routes is None:
                    pairs[pair] = (edge,)
                    succ[source].append(target)
                    if edge.guard is not None:
                        guarded.add(pair)
                else:
                    pairs[pair] = (*routes, edge)
                    if edge.guard is None:
                        guarded.discard(pair)
        self.pairs = pairs
        """The routes between each pair of ``START``, ``END`` and nodes, in declaration order."""
        self._guarded = guarded
        self.succ = succ
        """Each node's successors (``START`` and ``END`` included), in declaration order."""
        self._shared: dict[Callable[[SpecGraph], Any], Any] = {}

    def shared(self, compute: Callable[[SpecGraph], _T]) -> _T:
        """Return ``compute(self)``, computed once per graph for every rule that reads it
        (the bound of CR203 and CR205, the cycles of CR201 and CR204 on LangGraph graphs)."""
        if compute not in self._shared:
            self._shared[compute] = compute(self)
        found: _T = self._shared[compute]
        return found

    # -- lookups -------------------------------------------------------------------------

    def is_node(self, name: str) -> bool:
        """Return whether ``name`` is a registered node."""
        return name in self.rank

    def routers_among(self, sources: Iterable[str]) -> list[RouterSpec]:
        """Return the routers registered for any of ``sources``, in registration order."""
        found = [r for source in set(sources) for r in self.spec.routers_of(source)]
        return sorted(found, key=lambda router: self._router_rank[id(router)])

    @cached_property
    def _router_rank(self) -> dict[int, int]:
        return {id(router): i for i, router in enumerate(self.spec.routers)}

    @cached_property
    def written(self) -> set[str] | None:
        """Return the state keys some node may write; ``None`` if a node's writes are unknown."""
        written: set[str] = set()
        for node in self.spec.nodes:
            if node.writes is None:
                return None
            written.update(node.writes)
        return written

    @cached_property
    def sent(self) -> set[str]:
        """Return the names some ``Send`` targets (a router's or a ``Command``'s)."""
        sent = {t for r in self.spec.routers for t in r.targets.sends}
        sent.update(t for n in self.spec.nodes if n.command is not None for t in n.command.sends)
        return sent

    def sort(self, names: Iterable[str]) -> list[str]:
        """Return ``names`` in registration order (unknown names last, alphabetically)."""
        return sorted(set(names), key=lambda n: (self.rank.get(n, len(self.rank)), n))

    def routes(self, source: str, target: str) -> tuple[Edge, ...]:
        """Return the routes declared from ``source`` to ``target``."""
        return self.pairs.get((source, target), ())

    @cached_property
    def nodes(self) -> list[NodeSpec]:
        """Return the first node registered under each name, in registration order."""
        return [node for node in self.spec.nodes if self.spec.node(node.name) is node]

    @cached_property
    def node_succ(self) -> dict[str, list[str]]:
        """Return each node's successors among the nodes (no ``START``, no ``END``)."""
        rank = self.rank
        return {n: [t for t in self.succ[n] if t in rank] for n in self.names}

    # -- reachability --------------------------------------------------------------------

    @cached_property
    def distance(self) -> dict[str, int]:
        """Return the number of routes from ``START`` to each node it reaches."""
        return _distances(self.succ, START)

    def reachable(self, *, repaired: bool = False) -> set[str]:
        """Return the nodes some path from ``START`` reaches.

        With ``repaired``, misspelt names are read as the names they are closest to
        (:attr:`repairs`), so what a typo strands is not reported as dead.
        """
        if repaired and self.repairs:
            lengths = _distances(self._repaired, START)
            return {n for n in lengths if n in self.rank}
        reached = set(self.distance)  # START, the nodes, END: no unknown name has a route
        reached.discard(START)
        reached.discard(END)
        return reached

    @cached_property
    def repairs(self) -> list[Pair] | None:
        """Return the routes misspelt names would be once fixed, or ``None`` if one cannot be.

        A route to a name that is no node is read as a route to the closest node name (or
        ``END``); a router registered for a name that is no node is read as the router of the
        closest node. ``None`` when some name is close to none.
        """
        found: list[Pair] = []
        for edge in self.unknown_targets:
            target = self.closest(edge.target)
            if target is None:
                return None
            found.append((edge.source, target))
        for router in self.spec.routers:
            if router.source in self.rank:
                continue
            source = self.closest(router.source, end=False)
            if source is None:
                return None
            for target in router.targets.names or ():
                if target in self.rank or target == END:
                    found.append((source, target))
        return found

    def closest(self, name: str, *, end: bool = True) -> str | None:
        """Return the node name (or, with ``end``, ``END``) a misspelt ``name`` is closest
        to; ``None`` when it is close to none."""
        names = [*self.names, END] if end else self.names
        match = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        return match[0] if match else None

    @cached_property
    def _repaired(self) -> dict[str, list[str]]:
        repaired = {n: list(targets) for n, targets in self.succ.items()}
        for source, target in self.repairs or ():
            if source in repaired and target not in repaired[source]:
                repaired[source].append(target)
        return repaired

    def finishing(self, excused: Iterable[str] = ()) -> set[str]:
        """Return the nodes from which a path reaches ``END``.

        A node in ``excused`` counts as reaching ``END``: its way out is already reported
        (unknown route, no way out, unreadable annotation), so the nodes that lead only to it
        are not reported again.
        """
        reached = reach([END, *excused], self._pred)
        return {n for n in reached if n in self.rank}

    @cached_property
    def _pred(self) -> dict[str, list[str]]:
        pred: dict[str, list[str]] = {}
        for source, target in self.pairs:
            pred.setdefault(target, []).append(source)
        return pred

    # -- cycles --------------------------------------------------------------------------

    @cached_property
    def components(self) -> list[list[str]]:
        """Return the strongly connected groups of nodes (all routes), sinks first (Tarjan).

        Computed once per check and shared: CR202 asks which routes lie on a cycle, and
        ``g.bound()`` (CR203) walks the groups in topological order.
        """
        return strongly_connected(self.names, self.node_succ)

    @cached_property
    def _components(self) -> dict[str, int]:
        return component_index(self.components)

    @cached_property
    def _component_sets(self) -> list[frozenset[str]]:
        return [frozenset(group) for group in self.components]

    def group_of(self, node: str) -> frozenset[str]:
        """Return the strongly connected group (all routes) that holds ``node``."""
        return self._component_sets[self._components[node]]

    @cached_property
    def _repaired_components(self) -> dict[str, int]:
        rank = self.rank
        succ = {n: [t for t in self._repaired[n] if t in rank] for n in self.names}
        return component_index(strongly_connected(self.names, succ))

    def on_cycle(self, source: str, target: str, *, repaired: bool = False) -> bool:
        """Return whether the route ``source → target`` lies on some cycle.

        With ``repaired``, misspelt names are read as the names they are closest to.
        """
        if source == target:
            return True
        comp = self._repaired_components if repaired and self.repairs else self._components
        return source in comp and comp.get(source) == comp.get(target)

    @cached_property
    def unguarded_succ(self) -> dict[str, list[str]]:
        """Return each node's successors through routes that are not all guarded."""
        guarded = self._guarded
        return {
            source: [t for t in targets if (source, t) not in guarded]
            for source, targets in self.node_succ.items()
        }

    @cached_property
    def unguarded_order(self) -> list[str] | None:
        """Return the nodes in a topological order of the unguarded routes (Kahn).

        ``None`` when the unguarded routes form a cycle (CR201).
        """
        succ = self.unguarded_succ
        indegree = dict.fromkeys(self.names, 0)
        for targets in succ.values():
            for target in targets:
                indegree[target] += 1
        order = [n for n in self.names if indegree[n] == 0]
        for node in order:  # the list grows as nodes are freed
            for child in succ[node]:
                indegree[child] -= 1
                if indegree[child] == 0:
                    order.append(child)
        return order if len(order) == len(indegree) else None

    def unguarded_components(self, guarded: Collection[Pair] = ()) -> list[list[str]]:
        """Return each set of nodes joined by cycles with no guarded route, sorted.

        Routes in ``guarded`` count as guarded too.
        """
        if self.unguarded_order is not None:
            return []  # no unguarded cycle: no need for Tarjan
        found: list[list[str]] = []
        sub = self.unguarded_succ
        if guarded:
            sub = {s: [t for t in targets if (s, t) not in guarded] for s, targets in sub.items()}
        for component in strongly_connected(self.names, sub):
            if len(component) > 1 or component[0] in sub[component[0]]:
                found.append(self.sort(component))
        return sorted(found, key=lambda c: self.rank[c[0]])

    def cycle_cuts(
        self,
        component: list[str],
        cuttable: Callable[[Pair], bool],
        score: Callable[[Pair], tuple[Hashable, ...]],
        guarded: Collection[Pair] = (),
    ) -> tuple[list[Cut], list[list[str]]]:
        """Return the routes to guard in one unguarded group, and its uncuttable cycles.

        See :mod:`corral.analysis._cuts`; each uncuttable cycle is given as its nodes,
        starting at the one closest to ``START``. Routes in ``guarded`` count as guarded.
        """
        members = set(component)
        sub = self.unguarded_succ
        pairs = [
            (s, t) for s in component for t in sub[s] if t in members and (s, t) not in guarded
        ]
        cuts, stuck = cut_group(component, pairs, cuttable, score)
        cuts = [cut._replace(cycle=self._from_entry(cut.cycle)) for cut in cuts]
        cycles = []
        for group in stuck:
            inside = set(group)
            fixed = [p for p in pairs if p[0] in inside and p[1] in inside and not cuttable(p)]
            first = min(group, key=self._entry_key)
            cycles.append(list(shortest_cycle(first, fixed)))
        return cuts, cycles

    def _from_entry(self, cycle: tuple[str, ...]) -> tuple[str, ...]:
        """Return ``cycle`` rotated to start at its node closest to ``START``."""
        first = cycle.index(min(cycle, key=self._entry_key))
        return cycle[first:] + cycle[:first]

    def _entry_key(self, node: str) -> tuple[int, int]:
        return (self.distance.get(node, len(self.rank) + 1), self.rank[node])

    def witness(self, component: list[str]) -> list[str]:
        """Return one unguarded cycle through ``component`` as a node path.

        The path starts at the node of the component closest to ``START`` (so it reads
        ``critique → revise → critique``) and is a shortest cycle through that node.
        """
        members = set(component)
        sub = self.unguarded_succ
        pairs = [(s, t) for s in self.sort(component) for t in sub[s] if t in members]
        return list(shortest_cycle(min(component, key=self._entry_key), pairs))

    def cycles(self, limit: int) -> tuple[list[Cycle], bool]:
        """Return at most ``limit`` elementary cycles, unguarded ones first, and whether more exist.

        Unguarded cycles are those of the unguarded subgraph; the rest come from the full
        graph, skipping the ones already listed (there are fewer than ``limit`` of them).
        """
        import networkx as nx

        unguarded: list[Cycle] = []
        truncated = False
        for path in nx.simple_cycles(_digraph(self.names, self.unguarded_succ)):
            if len(unguarded) == limit:
                truncated = True
                break
            unguarded.append(self._cycle(path, unguarded=True))
        guarded: list[Cycle] = []
        if not truncated:
            listed = {c.nodes for c in unguarded}
            for path in nx.simple_cycles(_digraph(self.names, self.node_succ)):
                cycle = self._cycle(path)
                if cycle.nodes in listed:
                    continue
                if len(unguarded) + len(guarded) == limit:
                    truncated = True
                    break
                guarded.append(cycle)

        def order(cycle: Cycle) -> tuple[int, list[tuple[int, int]]]:
            return (len(cycle.nodes), [self._entry_key(n) for n in cycle.nodes])

        return sorted(unguarded, key=order) + sorted(guarded, key=order), truncated

    def _cycle(self, path: list[str], *, unguarded: bool = False) -> Cycle:
        start = path.index(min(path, key=self._entry_key))
        nodes = tuple(path[start:] + path[:start])
        guards: list[Guard] = []
        for i, source in enumerate(nodes):
            target = nodes[(i + 1) % len(nodes)]
            for route in self.routes(source, target):
                if route.guard is not None and route.guard not in guards:
                    guards.append(route.guard)
        return Cycle(nodes, tuple(guards), unguarded, tuple(self.fallbacks_on(nodes)))

    def fallbacks_on(self, cycle: Iterable[str]) -> list[tuple[str, Guard]]:
        """Return ``(source, guard)`` for each guard whose ``otherwise`` route is a step of
        ``cycle`` (its nodes in route order)."""
        nodes = list(cycle)
        found: list[tuple[str, Guard]] = []
        for i, source in enumerate(nodes):
            target = nodes[(i + 1) % len(nodes)]
            if any(r.kind == "otherwise" for r in self.routes(source, target)):
                found.extend((source, g) for g in self.falling_back(source, target))
        return found

    def falling_back(self, source: str, target: str) -> list[Guard]:
        """Return the guards of ``source`` (its node's and its routers') whose ``otherwise``
        is ``target``."""
        node = self.spec.node(source)
        sites = [node.guards if node is not None else ()]
        sites += [router.guards for router in self.spec.routers_of(source)]
        return [g for guards in sites for g in guards if g.otherwise == target]

    def sink_components(self, nodes: Iterable[str]) -> list[list[str]]:
        """Return the strongly connected groups of ``nodes`` with no route to another group.

        ``nodes`` should be closed under successors (as the nodes that cannot finish are).
        """
        members = set(nodes)
        succ = {n: [t for t in self.node_succ[n] if t in members] for n in self.sort(members)}
        groups: list[list[str]] = []
        for group in strongly_connected(succ, succ):
            inside = set(group)
            if all(t in inside for n in group for t in succ[n]):
                groups.append(self.sort(group))
        return sorted(groups, key=lambda g: self.rank[g[0]])


def _distances(succ: Mapping[str, Iterable[str]], source: str) -> dict[str, int]:
    """Return the number of routes from ``source`` to every name it reaches (breadth first)."""
    found = {source: 0}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        step = found[node] + 1
        for child in succ.get(node, ()):
            if child not in found:
                found[child] = step
                queue.append(child)
    return found


def _digraph(names: Iterable[str], succ: Mapping[str, Iterable[str]]) -> nx.DiGraph[str]:
    import networkx as nx

    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from((s, t) for s, targets in succ.items() for t in targets)
    return graph
