"""Where a ``wait_for`` join can never be released, or is entered again with no way out (CR304).

A join runs once every node it waits for has run since its own last run; a route into it
holds it until then, and a run that ends with a join still held raises ``StuckJoinError``.
The routes alone show three ways a join that some route enters is held forever:

- **A node it waits for runs only after it.** Before the join's first run every node it
  waits for must run, along routes that do not pass through the join. A listed node that no
  path from the start reaches without the join (the join itself, or a node after it) never
  arrives in time.
- **Two nodes it waits for never run in one run before it.** Both run before the join only
  if one leads to the other without the join, or a fan-out leads to both (two branches,
  several ``Send`` runs, several start nodes). Otherwise they are exclusive (the two routes
  of one router): whichever runs, the other never does.
- **A node it waits for loops alongside it.** A listed node that routes to the join and can
  run again without it (it is on a cycle that avoids the join), while another route into
  the join is taken in the same superstep, lets the join be released mid-loop; the loop's
  later route into the join holds it again, and every listed node must then run again. One
  that cannot run after the join (not after it, and not after any loop that avoids it) never
  does.

Each test reads "may run" as any route may be taken (guards and routers ignored), an
over-approximation, so a join reported here is held forever by every run that takes the
reported routes. A join some ``Send`` targets is left alone: a ``Send`` runs it at once,
without holding it.

Cost: what can run before a join is read from the dominator tree of the routes (built once
per check; a node runs before ``j``'s first run unless ``j`` dominates it), the searches
for two awaited nodes' common ancestors stop at :data:`ANCESTOR_LIMIT` nodes (past it the
pair is not judged), and a looping node is found in its strongly connected group, shared by
the check; only a join a looping awaited node routes to costs a walk of the graph. So a
graph of thousands of joins is checked in time close to linear (``test_check_scaling``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.analysis._cuts import strongly_connected
from corral.spec import START, NodeSpec

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["Exclusive", "LoopsAlongside", "RunsAfter", "StuckJoin", "stuck_joins"]


@dataclass(frozen=True)
class RunsAfter:
    """The join waits for ``waited``, which can only run after the join (or is the join)."""

    join: str
    waited: str


@dataclass(frozen=True)
class Exclusive:
    """The join waits for ``first`` and ``second``, which never both run before it."""

    join: str
    first: str
    second: str


@dataclass(frozen=True)
class LoopsAlongside:
    """``looping`` may re-enter the join after it ran, and ``waited`` cannot run again."""

    join: str
    looping: str
    waited: str


StuckJoin = RunsAfter | Exclusive | LoopsAlongside


def stuck_joins(
    graph: SpecGraph,
    joins: Iterable[tuple[NodeSpec, list[str]]],
    coactive: Callable[[], Collection[tuple[str, str]]],
) -> Iterator[StuckJoin]:
    """Yield how each join of ``joins`` (with the nodes it waits for) is held forever.

    ``coactive`` returns the pairs of nodes that may run in the same superstep; it is
    called at most once, for a join a looping node routes to.
    """
    succ = graph.node_succ
    pred: dict[str, list[str]] = {}
    for source, targets in succ.items():
        for target in targets:
            pred.setdefault(target, []).append(source)
    starts = [t for t in graph.succ[START] if graph.is_node(t)]
    fanouts = _fanout_sources(graph)
    if len(starts) > 1:
        fanouts.add(START)
    sent = {t for r in graph.spec.routers for t in r.targets.sends}
    sent.update(t for n in graph.nodes if n.command is not None for t in n.command.sends)
    dominators = _Dominators(starts, succ, pred)
    pairs: list[Collection[tuple[str, str]]] = []

    def coactive_once() -> Collection[tuple[str, str]]:
        if not pairs:
            pairs.append(coactive())
        return pairs[0]

    for node, waits in joins:
        join = node.name
        if join in sent:
            continue  # a Send runs the join at once, never held: not judged here
        entries = [s for s in pred.get(join, ()) if dominators.before(s, join)]
        if not entries:
            continue  # no run enters the join (CR103 reports it if it is dead)
        waited = [w for w in dict.fromkeys(waits) if graph.is_node(w)]
        late = [w for w in waited if not dominators.before(w, join)]
        for w in late:
            yield RunsAfter(join, w)
        if late:
            continue
        pair = _exclusive_pair(waited, pred, dominators, fanouts, join)
        if pair is not None:
            yield Exclusive(join, *pair)
            continue
        yield from _loops_alongside(graph, join, waited, entries, succ, coactive_once)


class _Dominators:
    """The dominator tree of the routes from the start (Cooper, Harvey and Kennedy).

    A node ``j`` dominates ``n`` when every path of routes from the start to ``n`` passes
    through ``j``: then ``n`` can run only after ``j`` has. Built once per check; each
    question is answered in constant time by the tree's depth-first numbering.
    """

    def __init__(
        self,
        starts: list[str],
        succ: Mapping[str, Iterable[str]],
        pred: Mapping[str, Iterable[str]],
    ) -> None:
        order: list[str] = []  # reverse postorder from the start
        seen: set[str] = set()
        for root in starts:
            if root in seen:
                continue
            seen.add(root)
            stack: list[tuple[str, Iterator[str]]] = [(root, iter(succ.get(root, ())))]
            while stack:
                name, following = stack[-1]
                child = next((c for c in following if c not in seen), None)
                if child is None:
                    stack.pop()
                    order.append(name)
                else:
                    seen.add(child)
                    stack.append((child, iter(succ.get(child, ()))))
        order.reverse()
        rank = {name: i + 1 for i, name in enumerate(order)}  # 0: the virtual start
        idom: dict[str, str] = dict.fromkeys(starts, START)
        changed = True
        while changed:
            changed = False
            for name in order:
                best: str | None = START if idom.get(name) == START else None
                for parent in pred.get(name, ()):
                    if parent not in idom:
                        continue  # not reached from the start, or not yet processed
                    best = parent if best is None else _meet(parent, best, idom, rank)
                if best is not None and idom.get(name) != best:
                    idom[name] = best
                    changed = True
        below: dict[str, list[str]] = {}
        for name, parent in idom.items():
            below.setdefault(parent, []).append(name)
        self.enter: dict[str, int] = {}
        self.leave: dict[str, int] = {}
        clock = 0
        walk: list[tuple[str, bool]] = [(START, False)]
        while walk:
            name, done = walk.pop()
            clock += 1
            if done:
                self.leave[name] = clock
                continue
            self.enter[name] = clock
            walk.append((name, True))
            walk.extend((child, False) for child in below.get(name, ()))

    def before(self, name: str, join: str) -> bool:
        """Return whether ``name`` can run before ``join``'s first run: some path from the
        start reaches it without passing through ``join``."""
        if name == join or name not in self.enter:
            return False
        if join not in self.enter:
            return True
        return not (self.enter[join] <= self.enter[name] and self.leave[name] <= self.leave[join])


def _meet(a: str, b: str, idom: Mapping[str, str], rank: Mapping[str, int]) -> str:
    """Return the nearest common dominator of ``a`` and ``b`` (``START`` at the top)."""
    while a != b:
        while a != START and (b == START or rank[a] > rank[b]):
            a = idom[a]
        while b != START and (a == START or rank[b] > rank[a]):
            b = idom[b]
    return a


def _fanout_sources(graph: SpecGraph) -> set[str]:
    """Return the nodes one run of which may start several branches (or ``Send`` runs)."""
    found = {n.name for n in graph.nodes if n.command_fanout or (n.then and len(n.then) > 1)}
    for router in graph.spec.routers:
        if router.targets.many or router.targets.sends:
            found.add(router.source)
    return found


def _reach(
    starts: Iterable[str],
    succ: Mapping[str, Iterable[str]],
    avoid: str,
    within: Collection[str] = (),
) -> set[str]:
    """Return the nodes reached from ``starts`` (included) without entering ``avoid``.

    With ``within``, only those nodes are walked.
    """
    seen = {s for s in starts if s != avoid and (not within or s in within)}
    queue = deque(seen)
    while queue:
        for child in succ.get(queue.popleft(), ()):
            if child != avoid and child not in seen and (not within or child in within):
                seen.add(child)
                queue.append(child)
    return seen


ANCESTOR_LIMIT = 256
"""The most ancestors searched for each node a join waits for; past it the pair is not
judged (the search would grow with the graph for every join)."""


def _exclusive_pair(
    waited: list[str],
    pred: Mapping[str, list[str]],
    dominators: _Dominators,
    fanouts: set[str],
    join: str,
) -> tuple[str, str] | None:
    """Return two nodes of ``waited`` that never both run before the join's first run."""
    if len(waited) < 2 or START in fanouts:
        return None
    ancestors: dict[str, set[str] | None] = {}
    for w in waited:
        ancestors[w] = _ancestors(w, pred, dominators, join)
    for i, first in enumerate(waited):
        for second in waited[i + 1 :]:
            a, b = ancestors[first], ancestors[second]
            if a is None or b is None:
                continue  # too many to search: not judged
            if first in b or second in a or a & b & fanouts:
                continue  # one leads to the other, or a fan-out leads to both
            return first, second
    return None


def _ancestors(
    node: str, pred: Mapping[str, list[str]], dominators: _Dominators, join: str
) -> set[str] | None:
    """Return the nodes (``node`` included) that reach ``node`` before ``join``'s first run,
    or ``None`` past :data:`ANCESTOR_LIMIT` of them."""
    seen = {node}
    queue = deque(seen)
    while queue:
        for parent in pred.get(queue.popleft(), ()):
            if parent not in seen and dominators.before(parent, join):
                if len(seen) >= ANCESTOR_LIMIT:
                    return None
                seen.add(parent)
                queue.append(parent)
    return seen


def _loops_alongside(
    graph: SpecGraph,
    join: str,
    waited: list[str],
    entries: list[str],
    succ: Mapping[str, list[str]],
    coactive: Callable[[], Collection[tuple[str, str]]],
) -> Iterator[LoopsAlongside]:
    """Yield the listed nodes that cannot run again once a looping listed node re-entered."""
    looping_entries = [x for x in waited if x in entries and _loops_without(graph, x, join)]
    if not looping_entries:
        return  # most joins: nothing else is computed for them
    rest = {n: [t for t in succ[n] if t != join] for n in graph.names if n != join}
    looping: set[str] = set()
    for group in strongly_connected(rest, rest):
        if len(group) > 1 or group[0] in rest[group[0]]:
            looping.update(group)
    pairs = coactive()
    fanouts = _fanout_sources(graph)
    after = _reach(succ[join], succ, avoid="")
    again = after | _reach(looping, rest, avoid=join)
    for x in looping_entries:
        alongside = x in fanouts or any(
            (x, y) in pairs or (y, x) in pairs for y in entries if y != x
        )
        if not alongside:
            continue
        for w in waited:
            if w not in again:
                yield LoopsAlongside(join, x, w)
        return


def _loops_without(graph: SpecGraph, node: str, join: str) -> bool:
    """Return whether ``node`` is on a cycle of routes that avoids ``join``.

    Only the strongly connected group of ``node`` (shared by the whole check) is searched,
    and only when ``join`` is in it.
    """
    succ = graph.node_succ
    if node in succ[node]:
        return True
    group = graph.group_of(node)
    if len(group) == 1:
        return False
    if join not in group:
        return True
    seen = {t for t in succ[node] if t in group and t != join}
    stack = list(seen)
    while stack:
        for child in succ[stack.pop()]:
            if child == node:
                return True
            if child in group and child != join and child not in seen:
                seen.add(child)
                stack.append(child)
    return False
