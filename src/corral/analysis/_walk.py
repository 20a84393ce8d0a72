"""The longest walk the guards allow: the per-run half of ``g.bound()`` without fan-out.

Without fan-out one node runs at a time and a run is a walk, so the bound is the longest
walk the guards allow, found on the strongly connected groups of the graph in topological
order:

- a node on no cycle adds one run (a subgraph node: its child's bound) to the longest walk
  into it;
- a group that is one simple cycle with one guarded route (``max=m``) and no other route
  inside it is walked exactly: entered at ``x``, the walk can go round ``m`` times past
  the guard and stop at any node ``y`` before the guard is used up again, so it runs
  ``pos(y) + 1 + k * (m - [y is past the guard])`` nodes (``k`` nodes in the cycle); a
  node's ``max_runs=c`` stops it before that node's ``c + 1``-th run (``NodeCapError``
  ends the run), so no walk runs more than ``pos(z) + c * k`` nodes of the cycle, and the
  laps are cut to fit;
- any other group is sound but loose: between two guarded routes the walk follows
  unguarded routes, which form no cycle, so it runs at most ``(1 + sum of the group's
  guard maxima) * (longest unguarded path in the group)`` nodes, and never more than the
  sum of the group's per-node bounds.

A walk is kept as numbers and laps (``(a → b) ×m``), never as its list of node runs, until
the longest one is chosen: the work does not grow with the guards' ``max``. Only the
chosen walk is written out as the witness, when it is at most :data:`WITNESS_LIMIT` node
runs long.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from corral.analysis._runs import Facts, per_node_runs, saturated

__all__ = ["WITNESS_LIMIT", "longest_walk"]

EXACT_CYCLE_WORK = 10_000
"""The most ``entries * nodes`` for which a simple guarded cycle is walked exactly."""
WITNESS_LIMIT = 1_000_000
"""The longest witness written out node run by node run (the short text is always given)."""


@dataclass(frozen=True, slots=True)
class _Step:
    """How the longest walk ending at a node gets there."""

    length: int
    before: str | None
    """The node the walk left to enter this node's group; ``None`` from the start."""
    lap: tuple[str, ...]
    """The node runs of one lap round this node's cycle (empty off a cycle)."""
    laps: int
    """How many times the walk goes round ``lap`` inside the group."""
    rest: tuple[str, ...]
    """The node runs after the laps, ending at this node."""
    text: str
    exact: bool
    spent: bool = True
    """Whether the walk may leave here by a guard's ``otherwise`` route: not when a node's
    ``max_runs`` stops it before the guard is used up (``NodeCapError`` ends the run)."""

    @property
    def runs(self) -> int:
        """Return how many node runs the walk takes inside the group."""
        return len(self.lap) * self.laps + len(self.rest)


def longest_walk(
    facts: Facts,
    runs: Mapping[str, int],
    order: list[str],
    components: Sequence[Sequence[str]],
) -> tuple[int, tuple[tuple[str, ...] | None, str] | None]:
    """Return the longest walk the guards allow and, when it is exact, the walk itself.

    The walk is its node runs (``None`` past :data:`WITNESS_LIMIT`) and its short text.
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
            if runs.get(node) == 0:
                continue  # it cannot run (e.g. reached only through an otherwise never taken)
            best: tuple[int, str | None, bool] | None = (
                (0, None, True) if node in facts.starts else None
            )
            for source, cap, _width in facts.incoming[node]:
                if group_of[source] == i or cap == 0 or source not in steps:
                    continue
                before = steps[source]
                if not before.spent and (source, node) in facts.held:
                    continue
                if best is None or before.length > best[0]:
                    best = (before.length, source, before.exact)
            if best is not None:
                entries[node] = best
        if entries:
            steps.update(_walk_group(facts, runs, group, entries, position))
    if not steps:
        return 0, None
    last, longest = names[0], -2  # the first node that ends a longest walk
    for name in names:
        step = steps.get(name)
        length = -1 if step is None else step.length
        if length > longest:
            last, longest = name, length
    return steps[last].length, _witness(steps, last)


def _walk_group(
    facts: Facts,
    runs: Mapping[str, int],
    group: list[str],
    entries: Mapping[str, tuple[int, str | None, bool]],
    position: Mapping[str, int],
) -> dict[str, _Step]:
    if len(group) == 1 and all(s != group[0] for s, _c, _w in facts.incoming[group[0]]):
        (node,) = group  # on no cycle
        length, before, exact = entries[node]
        unit = facts.unit(node)
        exact = exact and unit.nodes is not None
        return {
            node: _Step(
                saturated(length + unit.runs), before, (), 0, unit.nodes or (), unit.text, exact
            )
        }
    members = set(group)
    cycle = _simple_guarded_cycle(facts, group, members)
    if cycle is not None and len(entries) * len(group) <= EXACT_CYCLE_WORK:
        return _walk_cycle(facts, cycle[0], cycle[1], cycle[2], entries)
    order = sorted(group, key=position.__getitem__)  # the group's share of the topological order
    entry_runs = per_node_runs(facts, order, dict.fromkeys(entries, 1), members)
    caps = 0  # the guards' maxima on the routes inside the group
    for n in group:
        for s, cap, _w in facts.incoming[n]:
            if cap is not None and s in members:
                caps += cap
    inner = min(
        sum(runs[n] * facts.weight(n) for n in group),
        sum(count * facts.weight(n) for n, count in entry_runs.items()),
        (1 + caps) * _longest_unguarded_path(facts, order),
    )
    length, before, _exact = max(entries.values(), key=lambda e: e[0])
    step = _Step(saturated(length + inner), before, (), 0, (), "", exact=False)
    return dict.fromkeys(group, step)


def _simple_guarded_cycle(
    facts: Facts, group: list[str], members: Container[str]
) -> tuple[list[str], int, int] | None:
    """Return ``(cycle, index of the guarded route's source, max)`` or ``None``.

    Only for a group (``members``: its nodes) that is exactly one cycle, with exactly one
    guarded route.
    """
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
    facts: Facts,
    cycle: list[str],
    guard_at: int,
    times: int,
    entries: Mapping[str, tuple[int, str | None, bool]],
) -> dict[str, _Step]:
    """Return the longest walk ending at each node of ``cycle``, by the exact formula.

    Each candidate is a handful of numbers; the laps are written out (as one lap and a
    count) only for the best walk of each node, so the cost does not grow with ``times``.
    """
    k = len(cycle)
    index = {n: i for i, n in enumerate(cycle)}
    caps = [
        (i, n.max_runs)
        for i, n in enumerate(facts.specs[n] for n in cycle)
        if n.max_runs is not None
    ]
    units = [facts.unit(n) for n in cycle]
    known = all(u.nodes is not None for u in units)
    lap_runs = sum(u.runs for u in units)
    before_runs = [0]  # node runs of the first i nodes of the cycle, twice round
    for i in range(2 * k):
        before_runs.append(before_runs[-1] + units[i % k].runs)
    found: dict[str, _Step] = {}
    for y in cycle:
        best: tuple[int, int, int, int, str | None, bool, bool] | None = None
        spent = False  # some walk ending at y has used the guard up (or y is past it)
        for x, (length, before, exact) in entries.items():
            start = index[x]
            pos = (index[y] - start) % k
            past_guard = pos > (guard_at - start) % k
            laps = full = times - int(past_guard)
            if caps:  # the walk stops before a node's (max_runs + 1)th run (NodeCapError)
                visits = min((i - start) % k + cap * k for i, cap in caps)
                laps = min(laps, (visits - pos - 1) // k)
            if laps < 0:
                continue
            spent = spent or laps == full
            total = length + laps * lap_runs + before_runs[start + pos + 1] - before_runs[start]
            total = saturated(total)
            if best is None or total > best[0]:
                best = (total, start, pos, laps, before, exact, laps == full)
        if best is not None:
            total, start, pos, laps, before, exact, used_up = best
            lap = [units[(start + i) % k] for i in range(k)]
            lap_nodes = tuple(n for u in lap for n in u.nodes or ())
            rest = tuple(n for u in lap[: pos + 1] for n in u.nodes or ())
            text = _lap_text([u.text for u in lap], laps, pos)
            # When only a shorter walk uses the guard up, the longest one cannot leave by
            # the otherwise route: the length stays sound, the walk is no witness.
            exact = exact and known and (used_up or not spent)
            found[y] = _Step(total, before, lap_nodes, laps, rest, text, exact, spent)
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


def _longest_unguarded_path(facts: Facts, group: list[str]) -> int:
    """Return the most node runs on a path of unguarded routes inside ``group``.

    ``group`` is in topological order of the unguarded routes.
    """
    longest: dict[str, int] = dict.fromkeys(group, 0)  # 0: not reached yet in the order
    most = 0
    for name in group:
        before = 0
        for s, cap, _w in facts.incoming[name]:
            if cap is None and longest.get(s, 0) > before:
                before = longest[s]
        here = before + facts.weight(name)
        longest[name] = here
        if here > most:
            most = here
    return most if group else 1


def _witness(steps: Mapping[str, _Step], last: str) -> tuple[tuple[str, ...] | None, str] | None:
    """Return the walk ending at ``last``: its node runs (if short enough) and its text.

    ``None`` when some part of it is not exact.
    """
    parts: list[_Step] = []
    node: str | None = last
    while node is not None:
        step = steps[node]
        if not step.exact:
            return None
        parts.append(step)
        node = step.before
    parts.reverse()
    text = " → ".join(part.text for part in parts)
    if sum(part.runs for part in parts) > WITNESS_LIMIT:
        return None, text
    nodes = tuple(n for part in parts for n in (*(part.lap * part.laps), *part.rest))
    return nodes, text
