"""How many times each node can run in one run: the per-node half of ``g.bound()``.

Every run of a node is caused by a route taken into it (or by the start). A route
``s → n`` is taken at most once per run of ``s`` (``w`` times for a router declaring
``max_sends=w``), and a guarded route at most ``max`` times in a whole run. So the runs of
``n`` are at most its start count plus, over its incoming routes, ``runs(s)`` (unguarded)
or ``min(max, runs(s))`` (guarded), capped by ``max_runs`` and, for a ``wait_for`` join,
by the runs of each node it waits for (not for a join a ``Send`` targets: a ``Send`` runs
it at once, without holding it). Once CR201 holds, the unguarded routes form no
cycle, so these inequalities are solved in topological order of the unguarded routes,
reading a guarded route as its constant ``max``; further passes replace constants by
``min(max, runs(s))`` while that lowers anything. Every pass gives a sound bound.

Counts are saturated at :data:`MANY`: on a long chain of branching routes the per-node
bounds grow like Fibonacci numbers, and adding numbers thousands of digits long made the
bound quadratic in the size of the graph. A count that reaches ``MANY`` is reported as no
bound at all.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.analysis._cuts import reach
from corral.analysis._fallbacks import untaken_fallbacks
from corral.spec import END, START, Edge, GraphSpec, Guard, NodeSpec

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["MANY", "Facts", "Unit", "known", "per_node_runs", "read_facts", "saturated"]

PASSES = 4
"""Refinement passes over the per-node inequalities after the first."""
MANY = 10**18
"""The count beyond which a bound is not worth giving: it is reported as ``None``."""


def saturated(count: int) -> int:
    """Return ``count``, or :data:`MANY` if it is more."""
    return count if count < MANY else MANY


def known(count: int) -> int | None:
    """Return ``count`` as a bound: ``None`` once it reaches :data:`MANY`."""
    return count if count < MANY else None


@dataclass(frozen=True, slots=True)
class Unit:
    """What one run of a node stands for in a walk: one node run, or a whole child run."""

    runs: int
    """The node runs it takes (a subgraph node: its child's bound)."""
    nodes: tuple[str, ...] | None
    """Those node runs, by path; ``None`` when the child's bound has no witness."""
    text: str

    @classmethod
    def of_child(cls, name: str, steps: int, witness: tuple[str, ...] | None, path: str) -> Unit:
        """Return the unit of a subgraph node ``name`` whose child takes ``steps`` runs.

        ``witness`` and ``path`` are the child's bound's.
        """
        nodes = None if witness is None else tuple(f"{name}/{n}" for n in witness)
        return cls(steps, nodes, f"{name}[{path}]" if path else name)


@dataclass
class Facts:
    """The spec's routes as the bound reads them."""

    nodes: list[NodeSpec]
    specs: dict[str, NodeSpec] = field(default_factory=dict)
    """Each node's spec by name."""
    limits: dict[str, tuple[int | None, tuple[str, ...], int]] = field(default_factory=dict)
    """``(max_runs, wait_for, free runs)`` of the nodes that declare either (most declare
    neither); a start join's first run waits for nothing, so it has one free run."""
    incoming: dict[str, list[tuple[str, int | None, int]]] = field(default_factory=dict)
    """For each node: ``(source, guard max or None, runs per source run)`` per route pair."""
    held: dict[tuple[str, str], int] = field(default_factory=dict)
    """Route pairs made only of guards' ``otherwise`` routes, with the source runs that
    cannot take them: a guard's ``otherwise`` is taken only once its target has been taken
    ``max`` times, so the pair is taken at most ``runs(s) - max // w`` (``w`` the most
    ``Send`` values of the guarded route per source run, 1 for any other route)."""
    starts: list[str] = field(default_factory=list)
    single: bool = True
    """True when one node runs at a time (no fan-out of any kind)."""
    components: list[list[str]] | None = None
    """The strongly connected groups of the routes left once the ``otherwise`` routes no run
    takes are dropped (:mod:`corral.analysis._fallbacks`); ``None`` when none is."""
    unbounded: str | None = None
    units: dict[str, Unit] = field(default_factory=dict)
    """The subgraph nodes' units (every other node is one node run)."""

    def weight(self, name: str) -> int:
        """Return the node runs one run of ``name`` takes."""
        unit = self.units.get(name)
        return 1 if unit is None else unit.runs

    def unit(self, name: str) -> Unit:
        """Return what one run of ``name`` stands for in a walk."""
        return self.units.get(name) or Unit(1, (name,), name)


def read_facts(graph: SpecGraph) -> Facts:
    """Return the routes of ``graph`` between nodes, with their guards and widths.

    Without fan-out, the guards' ``otherwise`` routes no run takes are left out
    (:mod:`corral.analysis._fallbacks`), with the groups of the routes left.
    """
    spec = graph.spec
    nodes = graph.nodes
    names = graph.rank
    facts = Facts(nodes, {n.name: n for n in nodes})
    facts.starts = [n.name for n in nodes if n.start]
    facts.single = len(facts.starts) <= 1
    for router in spec.routers:
        if router.targets.sends and router.source in names:
            facts.single = False
            if router.max_sends is None and facts.unbounded is None:
                facts.unbounded = (
                    f"router {router.name!r} returns Send values and declares no max_sends; "
                    f"give it @g.router({router.source!r}, max_sends=N)"
                )
    # A Send runs its target at once, even a join: its runs are not bounded by those of
    # the nodes it waits for.
    for node in nodes:
        waits = () if node.name in graph.sent else node.wait_for
        if node.max_runs is not None or waits:
            facts.limits[node.name] = (node.max_runs, waits, int(node.start))
        if node.command is not None and node.command.sends and facts.unbounded is None:
            facts.unbounded = f"node {node.name!r} may return Command(goto=Send(...)) values"
        if node.command_fanout or node.wait_for or (node.then and len(node.then) > 1):
            facts.single = False
    widths = {r.source: r.max_sends or 1 for r in spec.routers}
    held = _otherwise_held(graph)
    incoming: dict[str, list[tuple[str, int | None, int]]] = {n: [] for n in names}
    facts.incoming = incoming
    single = facts.single
    mixed: list[tuple[str, str]] = []  # otherwise routes and routes no run takes
    for pair, routes in graph.pairs.items():
        source, target = pair
        if source not in names or target not in names:
            continue  # from START or to END
        single = single and not any(r.many for r in routes)
        width = max(widths.get(source, 1) if r.kind == "send" else 1 for r in routes)
        guarded = all(r.guard is not None for r in routes)
        cap = sum(r.guard.max for r in routes if r.guard is not None) if guarded else None
        otherwise = all(r.kind == "otherwise" for r in routes)
        if not otherwise and cap is None and _closed_but_otherwise(routes):
            mixed.append(pair)
        incoming[target].append((source, cap, width))
        if otherwise and pair in held:
            facts.held[pair] = held[pair]
    facts.single = single
    if single and (facts.held or mixed):
        _drop_untaken(graph, facts, [*facts.held, *mixed])
    return facts


def drop_routes_from(facts: Facts, source: str) -> None:
    """Leave every route from ``source`` out of ``facts``: no run takes one."""
    for target, incoming in facts.incoming.items():
        if any(fact[0] == source for fact in incoming):
            incoming[:] = [fact for fact in incoming if fact[0] != source]
            facts.held.pop((source, target), None)


def always_failing(nodes: Iterable[NodeSpec]) -> list[str]:
    """Return the subgraph nodes of ``nodes`` whose child no run of can end normally.

    A child's run ends normally only by reaching ``END``; a route guarded with ``max=0``
    and no ``otherwise`` raises ``GuardExhaustedError`` whenever it is taken, so a child
    whose every path to ``END`` takes one (or enters a child of its own that cannot end)
    fails on every entry.
    """
    return [n.name for n in nodes if n.subgraph is not None and not _can_end(n.subgraph.graph)]


def _can_end(spec: GraphSpec) -> bool:
    """Return whether some path of routes no run must fail on leads from ``START`` to
    ``END`` in ``spec``."""
    failing = always_failing(spec.nodes)
    succ: dict[str, list[str]] = {}
    for edge in spec.edges():
        if edge.guard is not None and edge.guard.max == 0:
            continue  # raises (or goes to its otherwise, a route of its own)
        if edge.source not in failing:
            succ.setdefault(edge.source, []).append(edge.target)
    return END in reach([START], succ)


def _closed_but_otherwise(routes: tuple[Edge, ...]) -> bool:
    """Return whether ``routes`` hold an ``otherwise`` route and, besides, only guards of
    ``max=0`` (routes no run takes): the pair is taken only when its ``otherwise`` is."""
    fallback = False
    for route in routes:
        if route.kind == "otherwise":
            fallback = True
        elif route.guard is None or route.guard.max:
            return False
    return fallback


def _drop_untaken(graph: SpecGraph, facts: Facts, fallbacks: list[tuple[str, str]]) -> None:
    """Leave out of ``facts`` the pairs no run takes, their ``otherwise`` routes never taken.

    Only without fan-out. A pair that also holds a route some run may take is kept whole:
    read as unguarded (taken at most once a run of its source) it is sound, and in a cycle
    cut by one other guard the walk stays exact, where a second guarded route would make
    it loose.
    """
    untaken, components = untaken_fallbacks(graph, fallbacks)
    if not untaken:
        return
    for source, target in untaken:
        facts.held.pop((source, target), None)
        incoming = facts.incoming[target]
        incoming[:] = [fact for fact in incoming if fact[0] != source]
    facts.components = components


def _otherwise_held(graph: SpecGraph) -> dict[tuple[str, str], int]:
    """Return, per ``(source, otherwise)``, the least count of source runs that take a
    guard falling back there without taking its ``otherwise``.

    A route taken at most ``w`` times a run of its source (``w`` is ``max_sends`` for a
    ``Send`` route, else 1) is used up after ``max`` takings; the source run that uses it
    up may take the ``otherwise`` too when one of its ``Send`` values is left over. So at
    least ``max // w`` source runs take the guarded route and not its ``otherwise``.
    """
    held: dict[tuple[str, str], int] = {}
    sites: list[tuple[str, tuple[Guard, ...], tuple[str, ...]]]
    sites = [(n.name, n.guards, ()) for n in graph.nodes]
    sites += [(r.source, r.guards, r.targets.sends) for r in graph.spec.routers]
    widths = {r.source: r.max_sends or 1 for r in graph.spec.routers}
    for source, guards, sends in sites:
        for guard in guards:
            if guard.otherwise is not None:
                pair = (source, guard.otherwise)
                kept = guard.max // (widths[source] if guard.target in sends else 1)
                held[pair] = min(held.get(pair, kept), kept)
    return held


def per_node_runs(
    facts: Facts,
    order: list[str],
    starts: Mapping[str, int] | None = None,
    members: Container[str] | None = None,
) -> dict[str, int]:
    """Solve the per-node inequalities over the nodes of ``order`` (topological).

    Routes from nodes outside ``order`` are left out: ``starts`` stands for them.
    ``members`` holds the nodes of ``order`` when the caller has them at hand (a set of
    thousands of names is not made again for every call).

    The first pass reads a route from a node later in ``order`` (a guarded one: the
    unguarded routes follow ``order``) as its ``max``. When the runs it gives each such
    source leave that ``max`` the lesser (``width * runs(s) >= max``) and no ``wait_for``
    names a later node, a second pass would compute the same counts: it is skipped.
    """
    if starts is None:
        starts = dict.fromkeys(facts.starts, 1)
    if members is None:
        members = set(order)
    limits = facts.limits
    held = facts.held
    incoming = facts.incoming
    runs: dict[str, int] = {}
    for done in range(PASSES + 1):
        changed = False
        ahead: list[tuple[str, int, int]] = []  # (source, max, width) read as max, in pass 1
        waits_ahead = False
        for name in order:
            total = starts.get(name, 0)
            for source, cap, width in incoming[name]:
                if source not in members:
                    continue
                counted = runs.get(source)
                if cap is None:
                    taken = width * (counted or 0)
                    if held and (source, name) in held:
                        taken = max(0, taken - held[source, name])
                    total += taken
                elif counted is None:
                    total += cap
                    ahead.append((source, cap, width))
                else:
                    total += min(cap, width * counted)
            total = saturated(total)
            if name in limits:
                total, waits = _limited(total, limits[name], runs, members)
                waits_ahead = waits_ahead or waits
            if runs.get(name) != total:
                changed = True
                runs[name] = total
        if not changed:
            break
        if done == 0 and not waits_ahead and all(w * runs[s] >= cap for s, cap, w in ahead):
            break
    return runs


def _limited(
    total: int,
    limits: tuple[int | None, tuple[str, ...], int],
    runs: Mapping[str, int],
    members: Container[str],
) -> tuple[int, bool]:
    """Return ``total`` capped by a node's ``(max_runs, wait_for, free runs)``, and whether
    it waits for a node of ``members`` not counted yet (later in the order).

    Every run of a join but a free one needs a run of each node it waits for since its
    last run, so it runs at most as often as each of them, plus its free runs.
    """
    max_runs, wait_for, free = limits
    if max_runs is not None:
        total = min(total, max_runs)
    ahead = False
    for waited in wait_for:
        if waited in runs:
            total = min(total, runs[waited] + free)
        elif waited in members:
            ahead = True
    return total, ahead
