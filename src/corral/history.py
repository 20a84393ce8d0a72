"""A thread's history, read from its checkpoints: one row per checkpoint, and the routes
it took through its graph (for ``corral history``, ``corral draw --thread`` and the page of
``corral serve``).

A checkpoint closes one superstep: it holds the writes of the nodes that ran, each node's
runs so far (meta ``runs``) and the nodes the next superstep runs (meta ``next``). A route
``a → b`` of the graph is counted each time ``a`` ran and ``b`` was next: ``START`` for the
input, ``END`` when the run finished after ``a``, and, for a child thread (which has no
input checkpoint), ``START → a`` for each start node ``a`` of its first superstep. It counts
as many times as ``b`` is next when ``a`` is the one node that ran with a route to ``b`` (a
``Send`` fan-out), and as a guard's fallback when that guard was used up and its own target
is not next.

A subgraph entry runs its child on a thread of its own (``PARENT/NODE@RUN.SUPERSTEP.TASK``),
so the routes inside a subgraph are read, the same way, from the child threads of each
entry, and added up. Routes are named as the drawing names its arrows: by path inside a
child (``research/plan``), and a route into (or out of) a subgraph drawn expanded ends at
its ``research/__start__`` (starts at its ``research/__end__``). A guard inside a subgraph
counts per entry: the drawing shows the highest count any entry reached.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from corral.checkpoint import Checkpoint, Checkpointer
from corral.loader import UsageError
from corral.render import Taken, expanded_children, route_ends
from corral.runtime.restore import snapshot_of
from corral.spec import END, START, GraphSpec

__all__ = [
    "CHILD_THREAD",
    "HistoryRow",
    "child_threads",
    "history_rows",
    "ordered",
    "ran_nodes",
    "taken_routes",
    "written_at",
]

_INPUT = "__input__"
CHILD_THREAD = re.compile(
    r"(?P<parent>.+)/(?P<node>[^/]+)@(?P<run>\d+)\.(?P<step>\d+)\.\d+(~(?P<fork>[0-9a-f]+))?"
)
"""A subgraph child's thread id: ``PARENT/NODE@RUN.SUPERSTEP.TASK``, with ``~FORK`` after
it on a fork's branch (``runtime.child_graph.child_thread``)."""


@dataclass(frozen=True)
class HistoryRow:
    """One checkpoint of a thread, as ``corral history`` shows it."""

    checkpoint_id: str
    step: int
    """Node runs so far in this run (``steps`` of the checkpoint)."""
    nodes: tuple[str, ...]
    """The nodes that ran in the superstep this checkpoint closes (``input`` for the run's
    input; see :func:`ran_nodes`)."""
    keys: tuple[str, ...]
    """The state keys those writes set."""
    status: str
    time: str | None = None
    """When the checkpoint was written (ISO 8601, UTC); ``None`` if it does not say."""


def ran_nodes(checkpoint: Checkpoint, parent: Checkpoint | None) -> tuple[str, ...]:
    """Return the nodes that ran in the superstep ``checkpoint`` closes (``input`` for a run's
    input): those whose writes it holds, and those whose count of runs in its meta went up
    since ``parent`` (a node that returned no update, a subgraph entry)."""
    nodes = dict.fromkeys("input" if n == _INPUT else n for n, _ in checkpoint.writes)
    runs = checkpoint.meta.get("runs")
    before = parent.meta.get("runs") if parent is not None else None
    if isinstance(runs, dict):
        earlier = before if isinstance(before, dict) else {}
        for name, count in runs.items():
            if int(count) > int(earlier.get(name, 0)):
                nodes[str(name)] = None
    return tuple(nodes)


def history_rows(checkpoints: list[Checkpoint]) -> list[HistoryRow]:
    """Return one row per checkpoint, oldest first."""
    by_id = {c.checkpoint_id: c for c in checkpoints}
    return [
        HistoryRow(
            c.checkpoint_id,
            int(c.meta.get("steps", 0)),
            ran_nodes(c, by_id.get(c.parent_id) if c.parent_id is not None else None),
            tuple(dict.fromkeys(k for _, update in c.writes for k in update)),
            str(c.meta.get("status", "running")),
            written_at(c.meta),
        )
        for c in checkpoints
    ]


def written_at(meta: dict[str, Any]) -> str | None:
    """Return when a checkpoint was written, from its meta, as ISO 8601 UTC to the second."""
    seconds = meta.get("time")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None  # written by a corral that did not record the time
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds")


def child_threads(ids: list[str]) -> dict[str, list[str]]:
    """Return the subgraph child threads among ``ids``, under the thread of each one's entry.

    A child thread is named ``PARENT/NODE@RUN.SUPERSTEP.TASK`` by the runtime; a thread id
    of that shape counts as a child only when ``PARENT`` is a thread of the same database.
    """
    known = frozenset(ids)
    children: dict[str, list[str]] = {}
    for thread in ids:
        match = CHILD_THREAD.fullmatch(thread)
        if match is not None and match["parent"] in known:
            children.setdefault(match["parent"], []).append(thread)
    return children


def ordered(saver: Checkpointer, thread: str) -> list[Checkpoint]:
    """Return the checkpoints of ``thread``, oldest first, each meta read as the engine reads
    it (one it cannot read is a damaged checkpoint, named); none is a usage error."""
    found = saver.checkpoints(thread)
    if not found:
        msg = f"thread {thread!r} has no checkpoints in this database; `corral threads` lists them"
        raise UsageError(msg)
    for checkpoint in found:
        snapshot_of({}, checkpoint, saver)
    return sorted(found, key=lambda c: int(c.meta.get("seq", 0)) or 0)


Routes = dict[tuple[str, str, bool], int]
Guards = dict[tuple[str, str], int]


def taken_routes(
    saver: Checkpointer, thread: str, spec: GraphSpec, *, collapse: bool = False
) -> Taken:
    """Return the routes ``thread`` took in ``spec`` (its subgraphs' too) and its guard counts.

    With ``collapse``, a subgraph is one node of the drawing: the routes inside it are not
    counted, and the routes into and out of it name the node.
    """
    children = child_threads(saver.threads())
    routes: Routes = {}
    guards: Guards = {}

    def count(thread: str, spec: GraphSpec, prefix: str) -> None:
        """Add the routes and guard counts of ``thread`` (running ``spec``, drawn under
        ``prefix``) and of its subgraph entries' child threads."""
        expanded = expanded_children(spec, collapse)
        checkpoints = ordered(saver, thread)
        for (source, target, via), times in _routes(checkpoints, spec).items():
            key = (*route_ends(source, target, prefix, expanded), via)
            routes[key] = routes.get(key, 0) + times
        for source, target, times in checkpoints[-1].meta.get("guards", []):
            route = route_ends(str(source), str(target), prefix, expanded)
            guards[route] = max(guards.get(route, 0), int(times))
        for child in children.get(thread, ()):
            node = child[len(thread) + 1 :].partition("@")[0]
            if node in expanded:
                count(child, expanded[node], f"{prefix}{node}/")

    count(thread, spec, "")
    return Taken(routes, guards)


def _routes(checkpoints: list[Checkpoint], spec: GraphSpec) -> Routes:
    """Return how many times each route ``(source, target, fallback)`` of one thread was
    taken, by the names of ``spec``."""
    edges = {(e.source, e.target) for e in spec.edges()}
    fallbacks = _fallbacks(spec)
    routes: Routes = {}
    by_id = {c.checkpoint_id: c for c in checkpoints}
    for checkpoint in checkpoints:
        parent = by_id.get(checkpoint.parent_id) if checkpoint.parent_id is not None else None
        ran = {START if n == "input" else n for n in ran_nodes(checkpoint, parent)}
        if not ran:
            continue  # a pause or a fork: no node ran
        if parent is None and START not in ran:  # a child's first superstep: it has no input
            for node in ran:
                if (START, node) in edges:
                    routes[(START, node, False)] = routes.get((START, node, False), 0) + 1
        meta = checkpoint.meta
        following = Counter(str(t.get("node")) for t in meta.get("next", []))
        if meta.get("status") == "done":
            following[END] = 1
        counts = {(str(s), str(t)): int(n) for s, t, n in meta.get("guards", [])}
        for target, times in following.items():
            sources = [source for source in ran if (source, target) in edges]
            for source in sources:
                via = any(
                    counts.get((source, guarded), 0) >= bound and guarded not in following
                    for guarded, bound in fallbacks.get((source, target), ())
                )
                key = (source, target, via)
                # several runs of one target (a Send fan-out) came from the one source
                routes[key] = routes.get(key, 0) + (times if len(sources) == 1 else 1)
    return routes


def _fallbacks(spec: GraphSpec) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """Return the guards ``(target, max)`` behind each fallback route ``(source, otherwise)``."""
    found: dict[tuple[str, str], list[tuple[str, int]]] = {}
    owners = [(n.name, n.guards) for n in spec.nodes]
    owners += [(r.source, r.guards) for r in spec.routers]
    for source, guards in owners:
        for guard in guards:
            target = guard.otherwise if guard.otherwise is not None else ""
            found.setdefault((source, target), []).append((guard.target, guard.max))
    return found
