"""What chooses the way out of a cycle, and the hand-made counter it compares, if any.

A loop bounded by hand keeps a number in the state: a node on the loop returns it
incremented and the router (or ``Command`` node) that picks the way out compares it with a
bound. The facts come from the spec (:class:`~corral.spec.CounterFacts`, read from the
source by :mod:`corral.counters` when the spec was built); nothing is parsed here. CR204
reports such a loop on a LangGraph graph; on a corral graph it stays CR201, whose message
says to replace the counter with a ``Guard``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.spec import CounterFacts

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = ["CounterLoop", "counter_loop"]

_NO_FACTS = CounterFacts()


@dataclass(frozen=True)
class CounterLoop:
    """What chooses one cycle's way out, as far as the source shows."""

    chooser: str
    """Who picks the way out: ``router 'should_retry'`` or ``node 'review'``."""
    key: str | None = None
    """The counter: compared by the chooser and returned incremented by ``counter_node``."""
    counter_node: str | None = None
    """A node on the cycle that returns ``key`` incremented."""
    discarded: tuple[str, ...] = ()
    """Keys the chooser (a router) compares and increments itself: LangGraph drops them."""
    unwritten: tuple[str, ...] = ()
    """Keys the chooser compares that no node writes."""
    counted: bool = True
    """True for a number incremented; False for a list appended to or consumed, or a plan
    whose steps are filled (``key`` advances rather than counts)."""


def counter_loop(graph: SpecGraph, cycle: Sequence[str]) -> CounterLoop | None:
    """Return what chooses the way out of ``cycle``, with its counter if it has one.

    A chooser is a router of a node on the cycle, or a node on the cycle with ``Command``
    targets, that can route off the cycle. ``None`` when there is none. The cost grows with
    the cycle, not the graph (CR201 asks once per cycle it reports).
    """
    spec = graph.spec
    members = set(cycle)
    choosers: list[tuple[str, CounterFacts, bool]] = []
    for router in graph.routers_among(members):
        names = router.targets.names
        if names is not None and not set(names) <= members:
            choosers.append((f"router {router.name!r}", router.counters or _NO_FACTS, True))
    for name in cycle:
        node = spec.node(name)
        if node is not None and node.command is not None and node.command.names is not None:
            if not set(node.command.names) <= members:
                choosers.append((f"node {name!r}", node.counters or _NO_FACTS, False))
    if not choosers:
        return None
    return _bounded(graph, cycle, choosers) or _unbounded(graph, choosers)


def _bounded(
    graph: SpecGraph, cycle: Sequence[str], choosers: list[tuple[str, CounterFacts, bool]]
) -> CounterLoop | None:
    """Return the key a chooser tests and a node on the cycle moves one way, if any."""
    spec = graph.spec
    nodes = [n for n in (spec.node(name) for name in cycle) if n is not None]
    for who, facts, _ in choosers:
        for key in sorted(facts.compares):
            for node in nodes:
                if key in (node.counters or _NO_FACTS).increments:
                    return CounterLoop(who, key, node.name)
    accumulated = {k.name for k in spec.keys if k.reducer is not None}
    for who, facts, _ in choosers:
        for key in sorted(facts.compares | facts.inspects):
            for node in nodes:
                if _advances(node.counters or _NO_FACTS, node.writes, key, accumulated):
                    return CounterLoop(who, key, node.name, counted=False)
    for who, facts, _ in choosers:
        for key in sorted(facts.iterates):  # the steps may be filled in place, out of sight
            return CounterLoop(who, key, counted=False)
    return None


def _unbounded(
    graph: SpecGraph, choosers: list[tuple[str, CounterFacts, bool]]
) -> CounterLoop | None:
    """Return the chooser of a loop with no bound, with the bounds that look like one."""
    written = graph.written
    found: CounterLoop | None = None
    for who, facts, is_router in choosers:
        discarded = tuple(sorted(facts.compares & facts.bumps)) if is_router else ()
        unwritten = () if written is None else tuple(sorted(facts.compares - written))
        unwritten = tuple(k for k in unwritten if k not in discarded)
        if found is None or not (found.discarded or found.unwritten):
            found = CounterLoop(who, discarded=discarded, unwritten=unwritten)
    return found


def _advances(
    facts: CounterFacts, writes: frozenset[str] | None, key: str, accumulated: set[str]
) -> bool:
    """Return whether a node moves ``key`` one way: increments it, builds it from its old
    value, or writes it through a reducer that accumulates (a list appended to)."""
    if key in facts.increments or key in facts.advances:
        return True
    return key in accumulated and writes is not None and key in writes
