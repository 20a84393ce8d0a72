"""The spec as a networkx ``DiGraph``, and the graph algorithms the rules ask about.

This is the only module that imports networkx. :class:`SpecGraph` holds one ``DiGraph`` with
``START``, ``END`` and every registered node; an edge ``s → t`` carries the list of routes
(:class:`~corral.spec.Edge`) declared from ``s`` to ``t`` (``routes``) and is marked
``guarded`` only when every one of those routes carries a guard (a guard's ``otherwise``
route never does).

Guard coverage is polynomial: a cycle with no guarded route is a cycle of the subgraph left
after dropping guarded edges, so it exists exactly when that subgraph has a strongly
connected component with two or more nodes, or a self-loop (Tarjan, linear time). One
witness cycle per component is found by a breadth-first search inside it. Elementary
cycles are only enumerated (Johnson's algorithm, output-sensitive) for display, with a
limit, never to decide a rule.

Which nodes may run in the same superstep is a sound over-approximation computed on pairs
of nodes (see :meth:`SpecGraph.coactive_pairs`).
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator
from functools import cached_property
from itertools import combinations

import networkx as nx

from corral.analysis._cuts import Cut, cut_group, shortest_cycle
from corral.spec import END, START, Cycle, Edge, GraphSpec, Guard, NodeSpec, RouterSpec

__all__ = ["SpecGraph"]

_ROUTE_KINDS = ("then", "router", "command", "send", "otherwise")


class SpecGraph:
    """A :class:`GraphSpec` with its routes as a networkx ``DiGraph``."""

    def __init__(self, spec: GraphSpec) -> None:
        self.spec = spec
        self.rank: dict[str, int] = {name: i for i, name in enumerate(spec.names)}
        """Registration order of every distinct node name (used to sort findings)."""
        self.edges: tuple[Edge, ...] = tuple(spec.edges())
        """Every declared route, ``START`` and ``otherwise`` routes included."""
        graph: nx.DiGraph[str] = nx.DiGraph()
        graph.add_node(START)
        graph.add_nodes_from(spec.names)
        graph.add_node(END)
        self.unknown_targets: list[Edge] = []
        """Routes whose target is neither a node nor ``END`` (CR101)."""
        for edge in self.edges:
            if edge.target not in self.rank and edge.target != END:
                self.unknown_targets.append(edge)
                continue
            if edge.source not in self.rank and edge.source != START:
                continue
            guarded = edge.guard is not None
            if graph.has_edge(edge.source, edge.target):
                data = graph.edges[edge.source, edge.target]
                data["routes"].append(edge)
                data["guarded"] = data["guarded"] and guarded
            else:
                graph.add_edge(edge.source, edge.target, routes=[edge], guarded=guarded)
        self.graph = graph
        self._routers: dict[str, list[RouterSpec]] = {}
        for router in spec.routers:
            self._routers.setdefault(router.source, []).append(router)

    # -- lookups -------------------------------------------------------------------------

    def is_node(self, name: str) -> bool:
        """Return whether ``name`` is a registered node."""
        return name in self.rank

    def routers_of(self, source: str) -> list[RouterSpec]:
        """Return the routers registered for ``source`` (an indexed ``GraphSpec.routers_of``)."""
        return self._routers.get(source, [])

    def sort(self, names: Iterable[str]) -> list[str]:
        """Return ``names`` in registration order (unknown names last, alphabetically)."""
        return sorted(set(names), key=lambda n: (self.rank.get(n, len(self.rank)), n))

    def routes(self, source: str, target: str) -> list[Edge]:
        """Return the routes declared from ``source`` to ``target``."""
        if not self.graph.has_edge(source, target):
            return []
        routes: list[Edge] = self.graph.edges[source, target]["routes"]
        return routes

    def is_guarded(self, source: str, target: str) -> bool:
        """Return whether every route from ``source`` to ``target`` carries a guard."""
        if not self.graph.has_edge(source, target):
            return False
        guarded: bool = self.graph.edges[source, target]["guarded"]
        return guarded

    # -- reachability --------------------------------------------------------------------

    @cached_property
    def distance(self) -> dict[str, int]:
        """Return the number of routes from ``START`` to each node it reaches."""
        lengths: dict[str, int] = nx.single_source_shortest_path_length(self.graph, START)
        return lengths

    def reachable(self, *, repaired: bool = False) -> set[str]:
        """Return the nodes some path from ``START`` reaches.

        With ``repaired``, misspelt names are read as the names they are closest to
        (:attr:`repairs`), so what a typo strands is not reported as dead.
        """
        if repaired and self.repairs:
            lengths = nx.single_source_shortest_path_length(self._repaired, START)
            return {n for n in lengths if n in self.rank}
        return {n for n in self.distance if n in self.rank}

    @cached_property
    def repairs(self) -> list[tuple[str, str]] | None:
        """Return the routes misspelt names would be once fixed, or ``None`` if one cannot be.

        A route to a name that is no node is read as a route to the closest node name (or
        ``END``); a router registered for a name that is no node is read as the router of the
        closest node. ``None`` when some name is close to none.
        """
        names = [*self.spec.names, END]
        found: list[tuple[str, str]] = []
        for edge in self.unknown_targets:
            match = difflib.get_close_matches(edge.target, names, n=1, cutoff=0.6)
            if not match:
                return None
            found.append((edge.source, match[0]))
        for router in self.spec.routers:
            if router.source in self.rank:
                continue
            match = difflib.get_close_matches(router.source, self.spec.names, n=1, cutoff=0.6)
            if not match:
                return None
            for target in router.targets.names or ():
                if target in self.rank or target == END:
                    found.append((match[0], target))
        return found

    @cached_property
    def _repaired(self) -> nx.DiGraph[str]:
        repaired = self.graph.copy()
        repaired.add_edges_from(self.repairs or ())
        return repaired

    def finishing(self, excused: Iterable[str] = ()) -> set[str]:
        """Return the nodes from which a path reaches ``END``.

        A node in ``excused`` counts as reaching ``END``: its way out is already reported
        (unknown route, no way out, unreadable annotation), so the nodes that lead only to it
        are not reported again.
        """
        seen: set[str] = {END, *excused}
        queue = deque(seen)
        while queue:
            node = queue.popleft()
            for pred in self.graph.predecessors(node):
                if pred not in seen:
                    seen.add(pred)
                    queue.append(pred)
        return {n for n in seen if n in self.rank}

    # -- cycles --------------------------------------------------------------------------

    @cached_property
    def unguarded(self) -> nx.DiGraph[str]:
        """Return the node-to-node subgraph of routes that are not all guarded."""
        sub: nx.DiGraph[str] = nx.DiGraph()
        sub.add_nodes_from(self.spec.names)
        for source, target in self.graph.edges:
            if source in self.rank and target in self.rank:
                if not self.is_guarded(source, target):
                    sub.add_edge(source, target)
        return sub

    @cached_property
    def _components(self) -> dict[str, int]:
        """Return the strongly connected component index of every node (all routes)."""
        return self._component_index(self.graph)

    @cached_property
    def _repaired_components(self) -> dict[str, int]:
        return self._component_index(self._repaired)

    def _component_index(self, graph: nx.DiGraph[str]) -> dict[str, int]:
        nodes_only = graph.subgraph(self.spec.names)
        index: dict[str, int] = {}
        for i, component in enumerate(nx.strongly_connected_components(nodes_only)):
            for node in component:
                index[node] = i
        return index

    def on_cycle(self, source: str, target: str, *, repaired: bool = False) -> bool:
        """Return whether the route ``source → target`` lies on some cycle.

        With ``repaired``, misspelt names are read as the names they are closest to.
        """
        if source == target:
            return True
        comp = self._repaired_components if repaired and self.repairs else self._components
        return source in comp and comp.get(source) == comp.get(target)

    def unguarded_components(self, guarded: Collection[tuple[str, str]] = ()) -> list[list[str]]:
        """Return each set of nodes joined by cycles with no guarded route, sorted.

        Routes in ``guarded`` count as guarded too.
        """
        found: list[list[str]] = []
        sub = self.unguarded
        if guarded:
            sub = sub.copy()
            sub.remove_edges_from(guarded)
        for component in nx.strongly_connected_components(sub):
            if len(component) > 1 or any(sub.has_edge(n, n) for n in component):
                found.append(self.sort(component))
        return sorted(found, key=lambda c: self.rank[c[0]])

    def cycle_cuts(
        self,
        component: list[str],
        cuttable: Callable[[tuple[str, str]], bool],
        score: Callable[[tuple[str, str]], tuple[Hashable, ...]],
        guarded: Collection[tuple[str, str]] = (),
    ) -> tuple[list[Cut], list[list[str]]]:
        """Return the routes to guard in one unguarded group, and its uncuttable cycles.

        See :mod:`corral.analysis._cuts`; each uncuttable cycle is given as its nodes,
        starting at the one closest to ``START``. Routes in ``guarded`` count as guarded.
        """
        members = set(component)
        sub = self.unguarded
        pairs = [
            (s, t)
            for s in component
            for t in sub.successors(s)
            if t in members and (s, t) not in guarded
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
        sub = self.unguarded
        first = min(component, key=self._entry_key)
        if sub.has_edge(first, first):
            return [first]
        members = set(component)
        parent: dict[str, str] = {}
        queue = deque([first])
        while queue:
            node = queue.popleft()
            for succ in sorted(sub.successors(node), key=self.rank.__getitem__):
                if succ == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(parent[path[-1]])
                    return path[::-1]
                if succ in members and succ not in parent:
                    parent[succ] = node
                    queue.append(succ)
        return [first]  # unreachable: a strongly connected component has a cycle

    def cycles(self, limit: int) -> tuple[list[Cycle], bool]:
        """Return at most ``limit`` elementary cycles, unguarded ones first, and whether more exist.

        Unguarded cycles are those of the unguarded subgraph; the rest come from the full
        graph, skipping the ones already listed (there are fewer than ``limit`` of them).
        """
        unguarded: list[Cycle] = []
        truncated = False
        for path in nx.simple_cycles(self.unguarded):
            if len(unguarded) == limit:
                truncated = True
                break
            unguarded.append(self._cycle(path))
        guarded: list[Cycle] = []
        if not truncated:
            listed = {c.nodes for c in unguarded}
            nodes_only = self.graph.subgraph(self.spec.names)
            for path in nx.simple_cycles(nodes_only):
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

    def _cycle(self, path: list[str]) -> Cycle:
        start = path.index(min(path, key=self._entry_key))
        nodes = tuple(path[start:] + path[:start])
        guards: list[Guard] = []
        for i, source in enumerate(nodes):
            target = nodes[(i + 1) % len(nodes)]
            for route in self.routes(source, target):
                if route.guard is not None and route.guard not in guards:
                    guards.append(route.guard)
        return Cycle(nodes, tuple(guards))

    # -- supersteps ----------------------------------------------------------------------

    def coactive_pairs(self) -> set[tuple[str, str]]:
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
        may be released in the superstep after any of them runs. Routers and guards are
        read as "may take any of their routes", so the relation over-approximates.
        """
        succ = self._successors()
        pairs: set[tuple[str, str]] = set()
        queue: deque[tuple[str, str]] = deque()

        def add(a: str, b: str) -> None:
            pair = (a, b) if self.rank[a] <= self.rank[b] else (b, a)
            if pair not in pairs:
                pairs.add(pair)
                queue.append(pair)

        for group, sends in self._fanouts():
            for a, b in combinations(group, 2):
                add(a, b)
            for s in sends:
                add(s, s)
        while queue:
            a, b = queue.popleft()
            for a2, a_send in succ[a]:
                for b2, b_send in succ[b]:
                    if a2 != b2:
                        add(a2, b2)
                    elif a_send or b_send:
                        add(a2, a2)
        return pairs

    def _successors(self) -> dict[str, set[tuple[str, bool]]]:
        """Return each node's successors, flagged when reached by a ``Send`` (joins included)."""
        succ: dict[str, set[tuple[str, bool]]] = {n: set() for n in self.spec.names}
        for edge in self.edges:
            if edge.kind in _ROUTE_KINDS and edge.source in succ and edge.target in self.rank:
                succ[edge.source].add((edge.target, edge.kind == "send"))
        for node in self._first_nodes():
            for waited in node.wait_for:
                if waited in succ:
                    succ[waited].add((node.name, False))
        return succ

    def _first_nodes(self) -> Iterator[NodeSpec]:
        seen: set[str] = set()
        for node in self.spec.nodes:
            if node.name not in seen:
                seen.add(node.name)
                yield node

    def _fanouts(self) -> Iterator[tuple[list[str], list[str]]]:
        """Yield ``(targets that may run together, Send targets that may run repeatedly)``."""
        known = self.rank

        def group(names: Iterable[str], guards: tuple[Guard, ...]) -> list[str]:
            # A used-up guard swaps its target for its otherwise, which then runs with the
            # other branches of the fan-out.
            chosen = list(dict.fromkeys(names))
            chosen += [g.otherwise for g in guards if g.target in chosen and g.otherwise]
            return [t for t in dict.fromkeys(chosen) if t in known]

        starts = [n.name for n in self._first_nodes() if n.start]
        yield starts, []
        for node in self._first_nodes():
            if node.then is not None:
                yield group(node.then, node.guards), []
            command = node.command
            if command is not None and command.names is not None:
                if node.command_fanout:
                    sends = [t for t in command.sends if t in known]
                    yield group(command.names, node.guards), sends
        for router in self.spec.routers:
            targets = router.targets
            if targets.many and targets.names is not None and router.source in known:
                sends = [t for t in targets.sends if t in known]
                yield group(targets.names, router.guards), sends

    def sink_components(self, nodes: Iterable[str]) -> list[list[str]]:
        """Return the strongly connected groups of ``nodes`` with no route to another group.

        ``nodes`` should be closed under successors (as the nodes that cannot finish are).
        """
        members = set(nodes)
        sub = self.graph.subgraph(members)
        condensed = nx.condensation(sub)
        groups: list[list[str]] = []
        for index in condensed.nodes:
            if condensed.out_degree(index) == 0:
                groups.append(self.sort(condensed.nodes[index]["members"]))
        return sorted(groups, key=lambda g: self.rank[g[0]])
