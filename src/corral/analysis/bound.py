"""How many node runs one run can take: ``g.bound()``, read from the spec alone.

**Per node.** Every run of a node is caused by a route taken into it (or by the start). A
route ``s → n`` is taken at most once per run of ``s`` (``w`` times for a router declaring
``max_sends=w``), and a guarded route at most ``max`` times in a whole run. So the runs of
``n`` are at most its start count plus, over its incoming routes, ``runs(s)`` (unguarded)
or ``min(max, runs(s))`` (guarded), capped by ``max_runs`` and, for a ``wait_for`` join,
by the runs of each node it waits for. Once CR201 holds, the unguarded routes form no
cycle, so these inequalities are solved in topological order of the unguarded routes,
reading a guarded route as its constant ``max``; further passes replace constants by
``min(max, runs(s))`` while that lowers anything. Every pass gives a sound bound.

**Per run.** With fan-out (a ``then=`` tuple, a list router, several start nodes, a
``Command`` that may go to several nodes, ``Send``, joins) several nodes run
per superstep, and the run's bound is the sum of the per-node bounds. Without fan-out, one
node runs at a time and a run is a walk, so the bound is the longest walk the guards allow,
found on the strongly connected groups of the graph in topological order:

- a node on no cycle adds one run to the longest walk into it;
- a group that is one simple cycle with one guarded route (``max=m``), no ``max_runs``, and
  no other route inside it is walked exactly: entered at ``x``, the walk can go round ``m``
  times past the guard and stop at any node ``y`` before the guard is used up again, so it
  runs ``pos(y) + 1 + k * (m - [y is past the guard])`` nodes (``k`` nodes in the cycle);
- any other group is sound but loose: between two guarded routes the walk follows
  unguarded routes, which form no cycle, so it runs at most ``(1 + sum of the group's
  guard maxima) * (longest unguarded path in the group)`` nodes, and never more than the
  sum of the group's per-node bounds.

**Subgraphs.** A subgraph node is not a node run: each entry is a fresh run of its child,
which takes at most the child's own bound (computed recursively; its guards count per
entry). So a subgraph node weighs its child's bound, where every other node weighs one run,
in the walk and in the sum, and the child's witness is spliced into the parent's.

That makes the bound exact on graphs without fan-out whose cycles are disjoint and each
cut by one guard, when each child's bound is exact too (the walk reaching it is returned as
the witness), and sound everywhere
else. Everything is linear in the size of the graph, apart from the exact cycle formula,
which is quadratic in the size of one cycle with many entries (bounded by a limit).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from corral.analysis._graph import SpecGraph
from corral.spec import GraphSpec, NodeSpec

__all__ = ["Bound", "bound_of"]

_PASSES = 4
"""Refinement passes over the per-node inequalities after the first."""
_EXACT_CYCLE_WORK = 10_000
"""The most ``entries * nodes`` for which a simple guarded cycle is walked exactly."""
_MANY = 10**18
"""The count beyond which a bound is not worth giving: it is reported as ``None``.

Counts are saturated at ``_MANY`` as they are computed. Without a ceiling, the per-node
bounds of a long chain of branching routes grow like Fibonacci numbers, thousands of digits
long on 10,000 nodes, and adding them made ``g.bound()`` (and CR203) quadratic in the size
of the graph.
"""


@dataclass(frozen=True)
class Bound:
    """The most node runs one run of a graph can take, per run and per node.

    >>> from typing import Literal, TypedDict
    >>> from corral import END, End, Graph, Guard
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State)
    >>> @g.node(start=True, then="critique")
    ... def draft(state: State) -> None: ...
    >>> @g.node()
    ... def critique(state: State) -> None: ...
    >>> @g.router("critique", guards=[Guard("revise", max=2, otherwise=END)])
    ... def after(state: State) -> Literal["revise"] | End:
    ...     return "revise"
    >>> @g.node(then="critique")
    ... def revise(state: State) -> None: ...
    >>> b = g.bound()
    >>> b.steps, b.per_node["critique"]
    (6, 3)
    >>> str(b)
    '6 node runs: draft → (critique → revise) ×2 → critique'
    >>> b.summary
    'at most 6 node runs'
    """

    steps: int | None
    """A sound upper bound on the node runs of one run; ``None`` when none can be given."""
    per_node: Mapping[str, int | None]
    """A sound upper bound on the runs of each node (a subgraph's nodes as ``child/node``)."""
    witness: tuple[str, ...] | None = None
    """A path of node runs that reaches ``steps``, when one is known (the bound is exact)."""
    reason: str | None = None
    """Why ``steps`` is ``None`` (an unguarded cycle, a ``Send`` with no ``max_sends``)."""
    path: str = field(default="", compare=False)
    """The witness written short: a cycle taken several times as ``(a → b) ×3``."""

    @property
    def summary(self) -> str:
        """The bound in a few words, as ``corral draw`` puts it in the title.

        ``"at most 8 node runs"``, or ``"unbounded: <reason>"``.
        """
        if self.steps is None:
            return f"unbounded: {self.reason}"
        return f"at most {self.steps} node run{'' if self.steps == 1 else 's'}"

    def __str__(self) -> str:
        if self.steps is None:
            return f"unbounded: {self.reason}"
        shown = f": {self.path}" if self.path else " (no single path is known to reach it)"
        return f"{self.steps} node runs{shown}"


@dataclass(frozen=True)
class _Unit:
    """What one run of a node stands for in a walk: one node run, or a whole child run."""

    runs: int
    """The node runs it takes (a subgraph node: its child's bound)."""
    nodes: tuple[str, ...] | None
    """Those node runs, by path; ``None`` when the child's bound has no witness."""
    text: str

    @classmethod
    def of_child(cls, name: str, child: Bound) -> _Unit:
        """Return the unit of a subgraph node ``name`` whose child has the bound ``child``."""
        assert child.steps is not None
        nodes = None if child.witness is None else tuple(f"{name}/{n}" for n in child.witness)
        return cls(child.steps, nodes, f"{name}[{child.path}]" if child.path else name)


@dataclass
class _Facts:
    """The spec's routes as the bound reads them."""

    spec: GraphSpec
    nodes: list[NodeSpec]
    names: Container[str]
    specs: dict[str, NodeSpec] = field(default_factory=dict)
    """Each node's spec by name."""
    incoming: dict[str, list[tuple[str, int | None, int]]] = field(default_factory=dict)
    """For each node: ``(source, guard max or None, runs per source run)`` per route pair."""
    starts: list[str] = field(default_factory=list)
    single: bool = True
    """True when one node runs at a time (no fan-out of any kind)."""
    unbounded: str | None = None
    units: dict[str, _Unit] = field(default_factory=dict)
    """The subgraph nodes' units (every other node is one node run)."""

    def weight(self, name: str) -> int:
        """Return the node runs one run of ``name`` takes."""
        unit = self.units.get(name)
        return 1 if unit is None else unit.runs

    def unit(self, name: str) -> _Unit:
        return self.units.get(name) or _Unit(1, (name,), name)


def bound_of(spec: GraphSpec, graph: SpecGraph | None = None) -> Bound:
    """Return the :class:`Bound` of ``spec`` (see the module docstring for how).

    ``graph`` is the spec's :class:`SpecGraph` when the caller has it already: the analyser
    builds it once per check and shares its routes, groups and order with the rules.
    """
    return _bound(graph if graph is not None else SpecGraph(spec), "", {})


def _bound(graph: SpecGraph, path: str, known: dict[int, Bound]) -> Bound:
    """Return the bound of ``graph``, a subgraph at ``path`` (``""`` at the top).

    ``known`` holds the bounds of the child specs already computed, by identity, so a child
    used several times is bounded once.
    """
    facts = _read(graph)
    if facts.unbounded is not None:
        return _unbounded(facts, facts.unbounded, path)
    order = graph.unguarded_order
    if order is None:
        return _unbounded(facts, "a cycle has no guarded route (CR201)", path)
    runs = _per_node(facts, order)
    per_node: dict[str, int | None] = {n: _known(count) for n, count in runs.items()}
    for node in facts.nodes:
        if node.subgraph is None:
            continue
        child_spec = node.subgraph.graph
        child = known.get(id(child_spec))
        if child is None:
            child = _bound(SpecGraph(child_spec), f"{path}{node.name}/", known)
            known[id(child_spec)] = child
        if child.steps is None:
            return Bound(None, {n.name: None for n in facts.nodes}, reason=child.reason)
        facts.units[node.name] = _Unit.of_child(node.name, child)
        for name, count in child.per_node.items():
            runs_there = None if count is None else _known(count * runs[node.name])
            per_node[f"{node.name}/{name}"] = runs_there
    total = _saturated(sum(_saturated(runs[n] * facts.weight(n)) for n in runs))
    if not facts.single:
        return _result(total, per_node)
    walk, witness = _longest_walk(facts, runs, order, graph.components)
    if walk > total:
        return _result(total, per_node)
    if witness is None:
        return _result(walk, per_node)
    nodes, text = witness
    return _result(walk, per_node, nodes, text)


def _saturated(count: int) -> int:
    return count if count < _MANY else _MANY


def _known(count: int) -> int | None:
    return count if count < _MANY else None


def _result(
    steps: int,
    per_node: dict[str, int | None],
    witness: tuple[str, ...] | None = None,
    path: str = "",
) -> Bound:
    if steps >= _MANY:
        return Bound(None, per_node, reason=f"the guards allow more than {_MANY:.0e} node runs")
    return Bound(steps, per_node, witness, path=path)


def _unbounded(facts: _Facts, reason: str, path: str) -> Bound:
    if path:
        reason = f"in subgraph {path.rstrip('/')!r}: {reason}"
    return Bound(None, {n.name: None for n in facts.nodes}, reason=reason)


def _read(graph: SpecGraph) -> _Facts:
    spec = graph.spec
    nodes = graph.nodes
    names = graph.rank
    facts = _Facts(spec, nodes, names, {n.name: n for n in nodes})
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
    for node in nodes:
        if node.command is not None and node.command.sends and facts.unbounded is None:
            facts.unbounded = f"node {node.name!r} may return Command(goto=Send(...)) values"
        if node.command_fanout or node.wait_for or (node.then and len(node.then) > 1):
            facts.single = False
    widths = {r.source: r.max_sends or 1 for r in spec.routers}
    facts.incoming = {n: [] for n in names}
    for (source, target), routes in graph.pairs.items():
        if source not in names or target not in names:
            continue  # from START or to END
        if facts.single and any(r.many for r in routes):
            facts.single = False
        width = max(widths.get(source, 1) if r.kind == "send" else 1 for r in routes)
        guarded = all(r.guard is not None for r in routes)
        cap = sum(r.guard.max for r in routes if r.guard is not None) if guarded else None
        facts.incoming[target].append((source, cap, width))
    return facts


def _per_node(
    facts: _Facts,
    order: list[str],
    starts: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Solve the per-node inequalities over the nodes of ``order`` (topological).

    Routes from nodes outside ``order`` are left out: ``starts`` stands for them.
    """
    if starts is None:
        starts = dict.fromkeys(facts.starts, 1)
    members = set(order)
    specs = facts.specs
    runs: dict[str, int] = {}
    for _ in range(_PASSES + 1):
        changed = False
        for name in order:
            total = starts.get(name, 0)
            for source, cap, width in facts.incoming[name]:
                if source not in members:
                    continue
                known = runs.get(source)
                if cap is None:
                    total += width * (known or 0)
                else:
                    total += cap if known is None else min(cap, width * known)
            total = _saturated(total)
            node = specs[name]
            if node.max_runs is not None:
                total = min(total, node.max_runs)
            for waited in node.wait_for:
                if waited in runs:
                    total = min(total, runs[waited])
            if runs.get(name) != total:
                changed = True
                runs[name] = total
        if not changed:
            break
    return runs


@dataclass(frozen=True)
class _Step:
    """How the longest walk ending at a node gets there."""

    length: int
    before: str | None
    """The node the walk left to enter this node's group; ``None`` from the start."""
    nodes: tuple[str, ...]
    """The walk's nodes inside the group, ending at this node."""
    text: str
    exact: bool


def _longest_walk(
    facts: _Facts,
    runs: Mapping[str, int],
    order: list[str],
    components: Sequence[Sequence[str]],
) -> tuple[int, tuple[tuple[str, ...], str] | None]:
    """Return the longest walk the guards allow and, when it is exact, the walk itself.

    ``order`` is the topological order of the unguarded routes; ``components`` are the
    strongly connected groups of nodes, sinks first.
    """
    names = [n.name for n in facts.nodes]
    groups = [list(group) for group in reversed(components)]
    group_of = {n: i for i, group in enumerate(groups) for n in group}
    position = {n: i for i, n in enumerate(order)}
    steps: dict[str, _Step] = {}
    for i, group in enumerate(groups):
        entries: dict[str, tuple[int, str | None, bool]] = {}
        for node in group:
            best: tuple[int, str | None, bool] | None = (
                (0, None, True) if node in facts.starts else None
            )
            for source, cap, _width in facts.incoming[node]:
                if group_of[source] == i or cap == 0 or source not in steps:
                    continue
                before = steps[source]
                if best is None or before.length > best[0]:
                    best = (before.length, source, before.exact)
            if best is not None:
                entries[node] = best
        if entries:
            steps.update(_walk_group(facts, runs, group, entries, position))
    if not steps:
        return 0, None
    last = max(names, key=lambda n: steps[n].length if n in steps else -1)
    return steps[last].length, _witness(steps, last)


def _walk_group(
    facts: _Facts,
    runs: Mapping[str, int],
    group: list[str],
    entries: Mapping[str, tuple[int, str | None, bool]],
    position: Mapping[str, int],
) -> dict[str, _Step]:
    members = set(group)
    inside = [(s, cap) for n in group for s, cap, _w in facts.incoming[n] if s in members]
    looped = len(group) > 1 or bool(inside)
    if not looped:
        (node,) = group
        length, before, exact = entries[node]
        unit = facts.unit(node)
        known = unit.nodes is not None
        length = _saturated(length + unit.runs)
        step = _Step(length, before, unit.nodes or (), unit.text, exact and known)
        return {node: step}
    cycle = _simple_guarded_cycle(facts, group)
    if cycle is not None and len(entries) * len(group) <= _EXACT_CYCLE_WORK:
        return _walk_cycle(facts, cycle[0], cycle[1], cycle[2], entries)
    order = sorted(group, key=position.__getitem__)  # the group's share of the topological order
    entry_runs = _per_node(facts, order, dict.fromkeys(entries, 1))
    caps = sum(cap for _s, cap in inside if cap is not None)
    inner = min(
        sum(runs[n] * facts.weight(n) for n in group),
        sum(count * facts.weight(n) for n, count in entry_runs.items()),
        (1 + caps) * _longest_unguarded_path(facts, order),
    )
    length, before, _exact = max(entries.values(), key=lambda e: e[0])
    step = _Step(_saturated(length + inner), before, (), "", exact=False)
    return dict.fromkeys(group, step)


def _simple_guarded_cycle(facts: _Facts, group: list[str]) -> tuple[list[str], int, int] | None:
    """Return ``(cycle, index of the guarded route's source, max)`` or ``None``.

    Only for a group that is exactly one cycle, with exactly one guarded route and no
    ``max_runs`` on its nodes.
    """
    members = set(group)
    if any(facts.specs[n].max_runs is not None for n in group):
        return None
    nexts: dict[str, str] = {}
    guarded: list[tuple[str, int]] = []
    for target in group:
        for source, cap, _width in facts.incoming[target]:
            if source not in members:
                continue
            if source in nexts:
                return None
            nexts[source] = target
            if cap is not None:
                guarded.append((source, cap))
    if len(nexts) != len(group) or len(guarded) != 1:
        return None
    cycle = [group[0]]
    while nexts[cycle[-1]] != cycle[0]:
        cycle.append(nexts[cycle[-1]])
        if len(cycle) > len(group):
            return None
    if len(cycle) != len(group):
        return None
    source, cap = guarded[0]
    return cycle, cycle.index(source), cap


def _walk_cycle(
    facts: _Facts,
    cycle: list[str],
    guard_at: int,
    times: int,
    entries: Mapping[str, tuple[int, str | None, bool]],
) -> dict[str, _Step]:
    k = len(cycle)
    index = {n: i for i, n in enumerate(cycle)}
    units = [facts.unit(n) for n in cycle]
    known = all(u.nodes is not None for u in units)
    lap_runs = sum(u.runs for u in units)
    before_runs = [0]  # node runs of the first i nodes of the cycle, twice round
    for i in range(2 * k):
        before_runs.append(before_runs[-1] + units[i % k].runs)
    found: dict[str, _Step] = {}
    for y in cycle:
        best: _Step | None = None
        for x, (length, before, exact) in entries.items():
            start = index[x]
            pos = (index[y] - start) % k
            past_guard = pos > (guard_at - start) % k
            laps = times - int(past_guard)
            if laps < 0:
                continue
            total = length + laps * lap_runs + before_runs[start + pos + 1] - before_runs[start]
            total = _saturated(total)
            if best is None or total > best.length:
                lap = [units[(start + i) % k] for i in range(k)]
                walked = lap * laps + lap[: pos + 1]
                nodes = tuple(n for u in walked for n in u.nodes or ())
                text = _lap_text([u.text for u in lap], laps, pos)
                best = _Step(total, before, nodes, text, exact and known)
        if best is not None:
            found[y] = best
    return found


def _lap_text(lap: list[str], laps: int, pos: int) -> str:
    """Write ``laps`` laps of ``lap`` then its first ``pos + 1`` nodes, short."""
    last = pos == len(lap) - 1
    full = laps + int(last)
    rest = [] if last else lap[: pos + 1]
    if full < 2:
        return " → ".join(lap * full + rest)
    text = f"({' → '.join(lap)}) ×{full}"
    return f"{text} → {' → '.join(rest)}" if rest else text


def _longest_unguarded_path(facts: _Facts, group: list[str]) -> int:
    """Return the most node runs on a path of unguarded routes inside ``group``.

    ``group`` is in topological order of the unguarded routes.
    """
    members = set(group)
    longest: dict[str, int] = {}
    for name in group:
        before = [
            longest[s]
            for s, cap, _w in facts.incoming[name]
            if cap is None and s in members and s in longest
        ]
        longest[name] = facts.weight(name) + max(before, default=0)
    return max(longest.values(), default=1)


def _witness(steps: Mapping[str, _Step], last: str) -> tuple[tuple[str, ...], str] | None:
    parts: list[_Step] = []
    node: str | None = last
    while node is not None:
        step = steps[node]
        if not step.exact:
            return None
        parts.append(step)
        node = step.before
    parts.reverse()
    nodes = tuple(n for part in parts for n in part.nodes)
    return nodes, " → ".join(part.text for part in parts)
