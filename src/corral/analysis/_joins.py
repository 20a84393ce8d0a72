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
without holding it. Each join costs a few breadth-first searches of the graph.
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
    called only for a join a looping node routes to.
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
    for node, waits in joins:
        join = node.name
        if join in sent:
            continue  # a Send runs the join at once, never held: not judged here
        before = _reach(starts, succ, avoid=join)
        entries = [s for s in pred.get(join, ()) if s in before]
        if not entries:
            continue  # no run enters the join (CR103 reports it if it is dead)
        waited = [w for w in dict.fromkeys(waits) if graph.is_node(w)]
        late = [w for w in waited if w not in before]
        for w in late:
            yield RunsAfter(join, w)
        if late:
            continue
        pair = _exclusive_pair(waited, pred, before, fanouts, join)
        if pair is not None:
            yield Exclusive(join, *pair)
            continue
        yield from _loops_alongside(graph, join, waited, entries, succ, coactive)


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


def _exclusive_pair(
    waited: list[str],
    pred: Mapping[str, list[str]],
    before: set[str],
    fanouts: set[str],
    join: str,
) -> tuple[str, str] | None:
    """Return two nodes of ``waited`` that never both run before the join's first run."""
    if len(waited) < 2 or START in fanouts:
        return None
    ancestors = {w: _reach([w], pred, avoid=join, within=before) for w in waited}
    for i, first in enumerate(waited):
        for second in waited[i + 1 :]:
            if first in ancestors[second] or second in ancestors[first]:
                continue  # one leads to the other
            if ancestors[first] & ancestors[second] & fanouts:
                continue  # a fan-out leads to both
            return first, second
    return None


def _loops_alongside(
    graph: SpecGraph,
    join: str,
    waited: list[str],
    entries: list[str],
    succ: Mapping[str, list[str]],
    coactive: Callable[[], Collection[tuple[str, str]]],
) -> Iterator[LoopsAlongside]:
    """Yield the listed nodes that cannot run again once a looping listed node re-entered."""
    rest = {n: [t for t in succ[n] if t != join] for n in graph.names if n != join}
    looping: set[str] = set()
    for group in strongly_connected(rest, rest):
        if len(group) > 1 or group[0] in rest[group[0]]:
            looping.update(group)
    looping_entries = [x for x in waited if x in looping and x in entries]
    if not looping_entries:
        return
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
