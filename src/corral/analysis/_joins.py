"""Where a ``wait_for`` join can never be released, or is entered again with no way out (CR304).

A join runs once every node it waits for has run since its own last run; a route into it
holds it until then, and a run that ends with a join still held raises ``StuckJoinError``.
The routes alone show four ways a join that some route enters is held:

- **A node it waits for runs only after it.** Before the join's first run every node it
  waits for must run, along routes that do not pass through the join. A listed node that no
  path from the start reaches without the join (the join itself, or a node after it) never
  arrives in time.
- **Two nodes it waits for never run in one run before it.** Both run before the join only
  if one leads to the other without the join, or a fan-out leads to both (two branches,
  several ``Send`` runs, several start nodes). Otherwise they are exclusive (the two routes
  of one router): whichever runs, the other never does. When the only fan-outs that lead
  to both choose their branches (a list router, a ``Command`` whose ``goto`` may be a
  list; the nearest node every path to both passes decides), every run in which one of
  them takes a single branch is held there.
- **It is entered again after it ran.** By a route back to it (the join is on a loop), or
  by a listed node that routes to it and may run in the superstep the join runs in (it is
  on a loop that avoids the join, or a route reaches it again a superstep later): that
  run counts toward the join's next run, and its route holds the join again, so every
  listed node must run again. One that can run neither beside the join nor after it
  never does. A join that is a start node runs first without waiting: only this applies.
- **Its fork runs again too soon.** The node every path to the listed nodes passes (their
  nearest common dominator) reaches them by routes of different lengths. If it may run
  again within that difference (a node beside it reaches it then, or a short loop), the
  sooner node's second run arrives before the join runs and the later node's after it:
  the join is held again for a node that does not run again.

Each test reads "may run" as any route may be taken (guards and routers ignored), an
over-approximation, so a join reported here is held forever by every run that takes the
reported routes (and, for a choosing fan-out, the reported choice). A join some ``Send``
targets is judged only for waiting for itself: a ``Send`` runs it at once, without
holding it, and that run counts toward its next one, so a route into it is held forever
only while another listed node cannot run after the join's first run.

Cost: what can run before a join is read from the dominator tree of the routes (built once
per check; a node runs before ``j``'s first run unless ``j`` dominates it), the searches
for two awaited nodes' common ancestors stop at :data:`ANCESTOR_LIMIT` nodes (past it the
pair is not judged), and what runs beside a join is read from the pairs CR301 uses
(computed once per check); only a join on a loop, or one a listed node may enter beside
it, costs a walk of the graph, and a fork's timing is read at most :data:`LENGTH_LIMIT`
routes deep.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

from corral.analysis._cuts import reach
from corral.spec import START, NodeSpec

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["EnteredAgain", "Exclusive", "ForkTwice", "RunsAfter", "StuckJoin", "stuck_joins"]


@dataclass(frozen=True)
class RunsAfter:
    """The join waits for ``waited``, which can only run after the join (or is the join)."""

    join: str
    waited: str


@dataclass(frozen=True)
class Exclusive:
    """The join waits for ``first`` and ``second``, which never both run before it, or
    only when ``chooser`` (a list router's or ``Command`` node) takes both branches."""

    join: str
    first: str
    second: str
    chooser: str | None = None


@dataclass(frozen=True)
class EnteredAgain:
    """``entry`` may enter the join again after it ran, and ``waited`` cannot run again:
    by a route ``back`` (the join is on a loop), or running beside the join (on a ``loop``
    that avoids it, or reached again a superstep later: ``beside``)."""

    join: str
    entry: str
    waited: str
    how: Literal["back", "loop", "beside"]


@dataclass(frozen=True)
class ForkTwice:
    """Every path to the listed nodes passes ``fork``, which reaches ``early`` ``spread``
    supersteps sooner than ``late``, and may run again ``gap`` (at most ``spread``)
    supersteps after it ran (``again`` runs beside it and reaches it then): the join runs
    once, after ``late``'s first run, beside or before ``late``'s second run, while
    ``early``'s second run was counted before it and ``early`` never runs again."""

    join: str
    fork: str
    again: str
    early: str
    late: str
    gap: int
    spread: int


StuckJoin = RunsAfter | Exclusive | EnteredAgain | ForkTwice


def stuck_joins(
    graph: SpecGraph,
    joins: Iterable[tuple[NodeSpec, list[str]]],
    partners: Callable[[], Mapping[str, set[str]]],
) -> Iterator[StuckJoin]:
    """Yield how each join of ``joins`` (with the nodes it waits for) is held forever.

    ``partners`` returns, for each node, the nodes that may run in the same superstep; it
    is called at most once, for a join a looping node routes to.
    """
    succ = graph.node_succ
    pred: dict[str, list[str]] = {}
    for source, targets in succ.items():
        for target in targets:
            pred.setdefault(target, []).append(source)
    starts = [t for t in graph.succ[START] if graph.is_node(t)]
    fanouts = _fanout_sources(graph)
    if len(starts) > 1:
        fanouts[0].add(START)
    dominators = _Dominators(starts, succ, pred)
    beside_once = cache(partners)

    for node, waits in joins:
        join = node.name
        waited = [w for w in dict.fromkeys(waits) if graph.is_node(w)]
        if join in graph.sent:
            # A Send runs the join at once, never held, and resets what it waits for, so
            # only waiting for itself is judged. Its own run counts toward its next run,
            # like a listed node's beside it: a route into it is held forever only when the
            # join cannot have run before (no start node) and another listed node runs only
            # before it ever can (a start node nothing routes to runs in the first
            # superstep alone).
            if (
                join in waited
                and join not in starts
                and any(w in starts and w not in pred for w in waited)
                and _routed_into(graph, join, dominators.enter)
            ):
                yield RunsAfter(join, join)
            continue
        preds = pred.get(join, [])
        if join in starts:  # its first run waits for nothing: only later runs are held
            entries = [s for s in preds if s in dominators.enter]
        else:
            entries = [s for s in preds if dominators.before(s, join)]
            if not entries:
                continue  # no run enters the join (CR103 reports it if it is dead)
            first: list[StuckJoin] = [
                RunsAfter(join, w) for w in waited if not dominators.before(w, join)
            ]
            pair = None if first else _exclusive_pair(waited, pred, dominators, fanouts, join)
            if pair is not None:
                first.append(pair)
            if first:
                yield from first
                continue
        again: list[StuckJoin] = [*_entered_again(graph, join, waited, entries, preds, beside_once)]
        if not again and join not in starts:
            twice = _fork_twice(graph, join, waited, preds, pred, dominators, beside_once)
            again = [twice] if twice is not None else []
        yield from again


def _routed_into(graph: SpecGraph, join: str, reached: Collection[str]) -> bool:
    """Return whether a route other than a ``Send`` leads into ``join`` from a node the
    start reaches (the start is not a route into a start join: its first run waits for
    nothing)."""
    return any(
        source != START and source in reached and any(r.kind != "send" for r in routes)
        for (source, target), routes in graph.pairs.items()
        if target == join
    )


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
        self.rank = rank = {name: i + 1 for i, name in enumerate(order)}  # 0: the start
        self.idom = idom = dict.fromkeys(starts, START)
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

    def meet(self, a: str, b: str) -> str | None:
        """Return the node nearest to ``a`` and ``b`` that every path to either passes."""
        found = _meet(a, b, self.idom, self.rank)
        return None if found == START else found

    def dominates(self, above: str, name: str) -> bool:
        """Return whether every path from the start to ``name`` passes through ``above``."""
        return self.enter[above] <= self.enter[name] and self.leave[name] <= self.leave[above]

    def before(self, name: str, join: str) -> bool:
        """Return whether ``name`` can run before ``join``'s first run: some path from the
        start reaches it without passing through ``join``."""
        if name == join or name not in self.enter:
            return False
        if join not in self.enter:
            return True
        return not self.dominates(join, name)


def _meet(a: str, b: str, idom: Mapping[str, str], rank: Mapping[str, int]) -> str:
    """Return the nearest common dominator of ``a`` and ``b`` (``START`` at the top)."""
    while a != b:
        while a != START and (b == START or rank[a] > rank[b]):
            a = idom[a]
        while b != START and (a == START or rank[b] > rank[a]):
            b = idom[b]
    return a


def _fanout_sources(graph: SpecGraph) -> tuple[set[str], set[str]]:
    """Return the nodes one run of which starts several branches (or ``Send`` runs), and
    those that may start several or one, as they choose (list routers, ``Command``)."""
    fixed = {n.name for n in graph.nodes if n.then and len(n.then) > 1}
    choosing = {n.name for n in graph.nodes if n.command_fanout}
    for router in graph.spec.routers:
        if router.targets.many and router.targets.names:
            choosing.add(router.source)
        elif router.targets.sends:
            fixed.add(router.source)
    return fixed - choosing, choosing


ANCESTOR_LIMIT = 256
"""The most ancestors searched for each node a join waits for; past it the pair is not
judged (the search would grow with the graph for every join)."""


def _exclusive_pair(
    waited: list[str],
    pred: Mapping[str, list[str]],
    dominators: _Dominators,
    fanouts: tuple[set[str], set[str]],
    join: str,
) -> Exclusive | None:
    """Return two nodes of ``waited`` that never both run before the join's first run, or
    only when a choosing fan-out (``fanouts[1]``) takes both branches."""
    fixed, choosing = fanouts
    if len(waited) < 2:
        return None
    ancestors: dict[str, set[str] | None] = {}
    for w in waited:
        ancestors[w] = _ancestors(w, pred, dominators, join)
    for i, first in enumerate(waited):
        for second in waited[i + 1 :]:
            a, b = ancestors[first], ancestors[second]
            if a is None or b is None:
                continue  # too many to search: not judged
            if first in b or second in a:
                continue  # one leads to the other
            meet = dominators.meet(first, second)
            if meet in choosing and not any(
                n != meet and dominators.dominates(meet, n) for n in a & b & fixed
            ):
                # every path to both passes a list router and no fan-out after it leads to
                # both: a run in which it takes one branch (each time it runs) is held
                return Exclusive(join, first, second, meet)
            if START in fixed or a & b & fixed:
                continue  # a fan-out (or several start nodes) leads to both
            return Exclusive(join, first, second, min(a & b & choosing, default=None))
    return None


def _ancestors(
    node: str, pred: Mapping[str, list[str]], dominators: _Dominators, join: str
) -> set[str] | None:
    """Return the nodes (``node`` included) that reach ``node`` before ``join``'s first run,
    or ``None`` past :data:`ANCESTOR_LIMIT` of them."""
    found = reach([node], pred, lambda n: n == node or dominators.before(n, join), ANCESTOR_LIMIT)
    return found if len(found) <= ANCESTOR_LIMIT else None


def _entered_again(
    graph: SpecGraph,
    join: str,
    waited: list[str],
    entries: list[str],
    preds: list[str],
    partners: Callable[[], Mapping[str, set[str]]],
) -> Iterator[EnteredAgain]:
    """Yield the listed nodes that cannot run again once the join is entered again: by a
    route back to it, or by a listed entry that ran beside it."""
    succ = graph.node_succ
    on_loop = join in succ[join] or len(graph.group_of(join)) > 1
    after = reach(succ[join], succ) if on_loop else None
    back = [x for x in preds if x in after] if after is not None and join in after else []
    beside = partners().get(join, set())
    again_entries = back + [x for x in entries if x in beside and x in waited]
    if not again_entries:
        return  # most joins: nothing else is computed for them
    if after is None:
        after = reach(succ[join], succ)
    # what runs in the join's superstep (the join too) counts toward its next run
    again = {join} | after | reach(beside, succ, join.__ne__)
    for x in again_entries:
        missing = [w for w in waited if w not in again]
        how: Literal["back", "loop", "beside"] = (
            "back" if x in back else "loop" if _loops_without(graph, x, join) else "beside"
        )
        for w in missing:
            yield EnteredAgain(join, x, w, how)
        if missing:
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
    if len(group) == 1 or join not in group:
        return len(group) > 1
    return node in reach(succ[node], succ, lambda n: n in group and n != join)


LENGTH_LIMIT = 32
"""The most routes followed from a join's fork towards the nodes it waits for; a listed
node further away is not judged by :func:`_fork_twice` (its timing is too far to read)."""


def _fork_twice(
    graph: SpecGraph,
    join: str,
    waited: list[str],
    preds: list[str],
    pred: Mapping[str, list[str]],
    dominators: _Dominators,
    partners: Callable[[], Mapping[str, set[str]]],
) -> ForkTwice | None:
    """Return how the fork every path to ``waited`` passes may run again too soon.

    The fork reaches each listed node some number of supersteps after it runs (the routes
    from it, other joins left out, whose timing is not read). A second run of the fork
    ``gap`` supersteps after the first, where ``gap`` is at most how much longer the way to
    ``late`` is than the way to ``early``, makes ``early`` run again before the join runs
    (one arrival, counted once) and ``late`` beside it or after it (an arrival toward the
    join's next run, and a route that holds it): the join then waits for ``early``, which
    does not run again.
    """
    if len(waited) < 2:
        return None
    fork: str | None = waited[0]
    for name in waited[1:]:
        fork = dominators.meet(fork, name) if fork is not None else None
    if fork is None:
        return None
    succ = graph.node_succ
    joins = {n.name for n in graph.nodes if n.wait_for}
    lengths: dict[str, list[int]] = {w: [] for w in waited}
    layer = {fork}
    for step in range(LENGTH_LIMIT + 1):
        for name in layer & lengths.keys():
            lengths[name].append(step)
        layer = {
            child
            for name in layer
            for child in succ[name]
            if child != fork and child not in joins and dominators.dominates(fork, child)
        }
        if not layer:
            break
    if not all(lengths.values()):
        return None  # a listed node only reached through another join, or too far
    after: set[str] | None = None
    for late in waited:
        if late not in preds:
            continue  # its arrival does not hold the join again
        top = max(lengths[late])
        for early in waited:
            low = min(lengths[early])
            if low >= top or not all(any(low <= n <= top for n in lengths[w]) for w in waited):
                continue
            found = _runs_again_within(fork, top - low, pred, partners, joins)
            if found is None:
                continue
            if after is None:
                after = reach(succ[join], succ)
            if early in after or early in reach(succ[late], succ, join.__ne__):
                continue  # it may run again after the join: not judged
            gap, again = found
            return ForkTwice(join, fork, again, early, late, gap, top - low)
    return None


def _runs_again_within(
    fork: str,
    most: int,
    pred: Mapping[str, list[str]],
    partners: Callable[[], Mapping[str, set[str]]],
    joins: Collection[str],
) -> tuple[int, str] | None:
    """Return the fewest supersteps (at most ``most``) after which ``fork`` may run again,
    and the node that reaches it then: ``fork`` itself (a loop), or a node that may run
    beside it and reaches it by that many routes (other joins left out)."""
    beside = partners().get(fork, set())
    layer = {fork}
    for step in range(1, most + 1):
        layer = {p for name in layer for p in pred.get(name, ()) if p not in joins}
        hits = sorted(n for n in layer if n == fork or n in beside)
        if hits:
            return step, hits[0]
        if not layer:
            break
    return None
