"""The routes a thread took, for ``corral draw --thread``, read from its checkpoints.

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

from collections import Counter

from corral.checkpoint import Checkpoint, Checkpointer
from corral.cli._threads import ordered, parent_thread, ran_nodes, thread_ids
from corral.render import Taken
from corral.spec import END, START, GraphSpec

__all__ = ["taken_routes"]

Routes = dict[tuple[str, str, bool], int]
Guards = dict[tuple[str, str], int]


def taken_routes(
    saver: Checkpointer, thread: str, spec: GraphSpec, *, collapse: bool = False
) -> Taken:
    """Return the routes ``thread`` took in ``spec`` (its subgraphs' too) and its guard counts.

    With ``collapse``, a subgraph is one node of the drawing: the routes inside it are not
    counted, and the routes into and out of it name the node.
    """
    ids = thread_ids(saver)
    known = frozenset(ids)
    children: dict[str, list[str]] = {}
    for other in ids:
        parent = parent_thread(other, known)
        if parent is not None:
            children.setdefault(parent, []).append(other)
    routes: Routes = {}
    guards: Guards = {}
    _count(saver, thread, spec, "", collapse, children, routes, guards)
    return Taken(routes, guards)


def _count(
    saver: Checkpointer,
    thread: str,
    spec: GraphSpec,
    prefix: str,
    collapse: bool,
    children: dict[str, list[str]],
    routes: Routes,
    guards: Guards,
) -> None:
    """Add the routes and guard counts of ``thread`` (running ``spec``, drawn under
    ``prefix``) and of its subgraph entries' child threads to ``routes`` and ``guards``."""
    expanded = {
        n.name: n.subgraph.graph for n in spec.nodes if n.subgraph is not None and not collapse
    }

    def drawn(name: str, end: str) -> str:
        return f"{prefix}{name}/{end}" if name in expanded else prefix + name

    checkpoints = ordered(saver, thread)
    for (source, target, via), count in _routes(checkpoints, spec).items():
        key = (drawn(source, END), drawn(target, START), via)
        routes[key] = routes.get(key, 0) + count
    last = checkpoints[-1].meta
    for source, target, count in last.get("guards", []):
        route = (drawn(str(source), END), drawn(str(target), START))
        guards[route] = max(guards.get(route, 0), int(count))
    for child in children.get(thread, ()):
        node = child[len(thread) + 1 :].partition("@")[0]
        if node in expanded:
            inner = f"{prefix}{node}/"
            _count(saver, child, expanded[node], inner, collapse, children, routes, guards)


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
