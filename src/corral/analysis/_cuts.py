"""Which routes to guard so that every unguarded cycle of a group is bounded (CR201).

A group is a strongly connected component of the unguarded routes. A set of routes whose
guards bound every cycle of the group is a *feedback arc set* of it: the group without
those routes has no cycle. Finding a smallest one is NP-hard in general, so:

- a group with at most :data:`EXACT_LIMIT` candidate routes is searched exactly: every set
  of 1, 2, ... routes in turn, each tested for acyclicity in linear time (Kahn's
  algorithm), so at most ``2 ** EXACT_LIMIT`` tests; the first size that works is the
  minimum, and among the sets of that size the best-scored one wins;
- a larger group is cut greedily: while a cycle is left, the best-scored candidate route of
  each remaining component joins the set; then every route whose removal keeps the group
  acyclic is dropped again, so each route left closes a cycle that no other route of the
  set cuts. Polynomial: at most one pass per route, each linear.

No cycle is ever enumerated. A route's score prefers a *back route* (its target is no
farther from ``START`` than its source, so it closes a loop as seen from the start, rather
than being the first step of the happy path), then routes a router declares, then
``Command`` routes, then ``then=`` routes. Routes that cannot carry a guard (a guard's
``otherwise`` route) are never chosen; a cycle made of them alone is returned apart.

For each chosen route ``u → v`` a cycle it closes is the route plus a shortest path
``v → … → u`` in the group without the other chosen routes; it exists because the set is
minimal.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, NamedTuple

__all__ = [
    "EXACT_LIMIT",
    "Cut",
    "component_index",
    "cut_group",
    "reach",
    "shortest_cycle",
    "strongly_connected",
]

EXACT_LIMIT = 12
"""The most candidate routes a group may have for the exact minimum search."""

Pair = tuple[str, str]


class Cut(NamedTuple):
    """One route of a cutting set and a cycle that only it cuts."""

    pair: Pair
    """The route ``(source, target)`` to guard."""
    cycle: tuple[str, ...]
    """The nodes of a cycle it closes, starting at its target."""


def strongly_connected(nodes: Iterable[str], succ: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Return the strongly connected components of ``nodes`` (Tarjan, iterative).

    >>> strongly_connected("abc", {"a": "b", "b": "a", "c": ""})
    [['b', 'a'], ['c']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    work: list[tuple[str, Any]] = []

    def enter(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(succ.get(node, ()))))

    for root in nodes:
        if root in index:
            continue
        enter(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    enter(child)
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


def reach(
    starts: Iterable[str],
    succ: Mapping[str, Iterable[str]],
    keep: Callable[[str], bool] | None = None,
    limit: int | None = None,
) -> set[str]:
    """Return the nodes reached from ``starts`` (included) by ``succ``, entering only nodes
    ``keep`` accepts; the search stops once more than ``limit`` are found.

    >>> sorted(reach("a", {"a": "bc", "c": "d"}, keep=lambda n: n != "c"))
    ['a', 'b']
    """
    seen = {s for s in starts if keep is None or keep(s)}
    stack = list(seen)
    while stack:
        for child in succ.get(stack.pop(), ()):
            if child not in seen and (keep is None or keep(child)):
                if limit is not None and len(seen) >= limit:
                    return seen | {child}
                seen.add(child)
                stack.append(child)
    return seen


def component_index(components: Iterable[list[str]]) -> dict[str, int]:
    """Return the index of the group (of ``components``) that holds each node."""
    return {node: i for i, group in enumerate(components) for node in group}


def _acyclic(nodes: Sequence[str], pairs: Iterable[Pair], rep: Mapping[str, str]) -> bool:
    """Return whether the routes ``pairs`` over ``nodes`` form no cycle (Kahn).

    Nodes with the same representative in ``rep`` count as one: a cycle among them is one
    that no guard can cut, and it is reported apart.
    """
    indegree: dict[str, int] = {rep[n]: 0 for n in nodes}
    succ: dict[str, list[str]] = {r: [] for r in indegree}
    for source, target in pairs:
        a, b = rep[source], rep[target]
        if a == b:
            if source == target:
                return False
            continue
        succ[a].append(b)
        indegree[b] += 1
    queue = deque(r for r, d in indegree.items() if d == 0)
    seen = 0
    while queue:
        node = queue.popleft()
        seen += 1
        for child in succ[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    return seen == len(indegree)


def cut_group(
    nodes: Sequence[str],
    pairs: Sequence[Pair],
    cuttable: Callable[[Pair], bool],
    score: Callable[[Pair], tuple[Hashable, ...]],
) -> tuple[list[Cut], list[list[str]]]:
    """Return a small set of routes that cuts every cycle of a group, and uncuttable cycles.

    Args:
        nodes: the nodes of one strongly connected group of unguarded routes.
        pairs: its routes as ``(source, target)``, self-loops included.
        cuttable: whether a route can carry a guard.
        score: a route's preference; lower is better.

    Returns:
        the chosen routes with a cycle each closes, best first; and the groups of nodes
        whose cycles run only through routes that cannot carry a guard.
    """
    fixed = [p for p in pairs if not cuttable(p)]
    fixed_succ: dict[str, list[str]] = {}
    for source, target in fixed:
        fixed_succ.setdefault(source, []).append(target)
    rep: dict[str, str] = {}
    stuck: list[list[str]] = []
    for component in strongly_connected(nodes, fixed_succ):
        looped = len(component) > 1 or component[0] in fixed_succ.get(component[0], ())
        if looped:
            stuck.append(component)
        for member in component:
            rep[member] = component[0]
    candidates = sorted((p for p in pairs if cuttable(p)), key=score)
    # A self-loop no guard can carry is reported in ``stuck``; the search ignores it.
    kept = [p for p in pairs if p[0] != p[1] or cuttable(p)]

    def works(chosen: set[Pair]) -> bool:
        return _acyclic(nodes, (p for p in kept if p not in chosen), rep)

    if len(candidates) <= EXACT_LIMIT:
        best = _exact(candidates, works, score)
    else:
        best = _greedy(nodes, kept, candidates, works, score)
    cuts = [Cut(p, _closed_cycle(p, pairs, set(best) - {p})) for p in best]
    return cuts, stuck


def _exact(
    candidates: Sequence[Pair],
    works: Callable[[set[Pair]], bool],
    score: Callable[[Pair], tuple[Hashable, ...]],
) -> list[Pair]:
    for size in range(len(candidates) + 1):
        found: list[list[Pair]] = [
            list(combo) for combo in combinations(candidates, size) if works(set(combo))
        ]
        if found:
            return min(found, key=lambda chosen: sorted(map(score, chosen)))
    return list(candidates)


def _greedy(
    nodes: Sequence[str],
    pairs: Sequence[Pair],
    candidates: Sequence[Pair],
    works: Callable[[set[Pair]], bool],
    score: Callable[[Pair], tuple[Hashable, ...]],
) -> list[Pair]:
    allowed = set(candidates)
    chosen: set[Pair] = set()
    while not works(chosen):
        succ: dict[str, list[str]] = {}
        for source, target in pairs:
            if (source, target) not in chosen:
                succ.setdefault(source, []).append(target)
        added = False
        for component in strongly_connected(nodes, succ):
            members = set(component)
            inside = [
                p
                for p in pairs
                if p in allowed and p not in chosen and p[0] in members and p[1] in members
            ]
            if inside and (len(component) > 1 or inside[0][0] == inside[0][1]):
                chosen.add(min(inside, key=score))
                added = True
        if not added:
            break  # only uncuttable cycles are left
    for pair in sorted(chosen, key=score, reverse=True):
        if works(chosen - {pair}):
            chosen.discard(pair)
    return sorted(chosen, key=score)


def shortest_cycle(start: str, pairs: Sequence[Pair]) -> tuple[str, ...]:
    """Return the nodes of a shortest cycle through ``start`` made of ``pairs``.

    >>> shortest_cycle("a", [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a")])
    ('a', 'b')
    """
    if (start, start) in pairs:
        return (start,)
    best: tuple[str, ...] = (start,)
    for source, target in pairs:
        if target == start:
            found = _closed_cycle((source, start), pairs, set())
            if len(best) == 1 or len(found) < len(best):
                best = found
    return best


def _closed_cycle(pair: Pair, pairs: Sequence[Pair], others: set[Pair]) -> tuple[str, ...]:
    """Return the nodes of a shortest cycle through ``pair`` avoiding ``others``."""
    source, target = pair
    if source == target:
        return (source,)
    succ: dict[str, list[str]] = {}
    for a, b in pairs:
        if (a, b) not in others and (a, b) != pair:
            succ.setdefault(a, []).append(b)
    parent: dict[str, str] = {target: target}
    queue = deque([target])
    while queue:
        node = queue.popleft()
        if node == source:
            break
        for child in succ.get(node, ()):
            if child not in parent:
                parent[child] = node
                queue.append(child)
    if source not in parent:
        return (target, source)  # only when the set is not minimal; not expected
    path = [source]
    while path[-1] != target:
        path.append(parent[path[-1]])
    return tuple(reversed(path))
