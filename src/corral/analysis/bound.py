"""How many node runs one run can take: ``g.bound()``, read from the spec alone.

**Per node** (:mod:`corral.analysis._runs`). Every run of a node is caused by a route taken
into it (or by the start): a route is taken at most once per run of its source, a guarded
route at most ``max`` times per run. Once CR201 holds, the unguarded routes form no cycle,
so these inequalities are solved in topological order of the unguarded routes. Without
fan-out, a guard's ``otherwise`` route that no run can take (its guarded route's target
never leads back to the source: :mod:`corral.analysis._fallbacks`) is left out first.

**Per run.** With fan-out (a ``then=`` tuple, a list router, several start nodes, a
``Command`` that may go to several nodes, ``Send``, joins) several nodes run per
superstep, and the run's bound is the sum of the per-node bounds. Without fan-out, one node
runs at a time and a run is a walk, so the bound is the longest walk the guards allow
(:mod:`corral.analysis._walk`), found on the strongly connected groups of the graph in
topological order; a group that is one simple cycle cut by one guard is walked exactly.

**Subgraphs.** A subgraph node is not a node run: each entry is a fresh run of its child,
which takes at most the child's own bound (computed recursively; its guards count per
entry). So a subgraph node weighs its child's bound, where every other node weighs one run,
in the walk and in the sum, and the child's witness is spliced into the parent's. A child
no run of which can end (every way to ``END`` passes a route guarded with ``max=0`` and no
``otherwise``, or a child of its own that cannot end) raises on every entry, so its
node's routes are never taken: they are left out, and a witness ends in that child.

That makes the bound exact on graphs without fan-out whose cycles are disjoint and each
cut by one guard, when each child's bound is exact too (the walk reaching it is returned as
the witness), and sound everywhere else. Everything is linear in the size of the graph,
apart from the exact cycle formula, which is quadratic in the size of one cycle with many
entries (bounded by a limit); nothing grows with the guards' ``max``. The analyser shares
its :class:`~corral.analysis._graph.SpecGraph` (routes, groups, topological order) with the
bound, so CR203 costs no second reading of the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial

from corral.analysis._fallbacks import fallback_note
from corral.analysis._graph import SpecGraph
from corral.analysis._runs import (
    MANY,
    Facts,
    Unit,
    always_failing,
    drop_routes_from,
    known,
    per_node_runs,
    read_facts,
    saturated,
)
from corral.analysis._walk import longest_walk
from corral.cost import FIELDS, Cost
from corral.spec import GraphSpec, NodeSpec

__all__ = ["Bound", "bound_of", "every_node"]


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
    """A sound upper bound on the node runs of one run; ``None`` when none can be given
    (also past 10**18 node runs)."""
    per_node: Mapping[str, int | None]
    """A sound upper bound on the runs of each node (a subgraph's nodes as ``child/node``)."""
    witness: tuple[str, ...] | None = None
    """A path of node runs that reaches ``steps``, when one is known (the bound is exact)
    and at most 1,000,000 node runs long (``path`` writes a longer one short)."""
    reason: str | None = None
    """Why ``steps`` is ``None`` (an unguarded cycle, a ``Send`` with no ``max_sends``)."""
    path: str = field(default="", compare=False)
    """The witness written short: a cycle taken several times as ``(a → b) ×3``."""
    cost: Cost | None = field(default_factory=Cost)
    """The most one run can spend (the cost ceiling), per field; ``None`` when no ceiling
    can be given (``cost_reason`` says why)."""
    cost_path: str = field(default="", compare=False)
    """The walk that reaches the ceiling in dollars (else tokens, else calls), written short;
    empty when it is not known."""
    cost_reason: str | None = None
    """Why ``cost`` is ``None``."""

    @property
    def summary(self) -> str:
        """The bound in a few words, as ``corral draw`` puts it in the title.

        ``"at most 8 node runs"``, or ``"unbounded: <reason>"``; with the cost ceiling
        after it when a node declares a cost (``"at most 8 node runs, $0.24"``).
        """
        if self.steps is None:
            return f"unbounded: {self.reason}"
        runs = f"at most {self.steps} node run{'' if self.steps == 1 else 's'}"
        if self.cost is None:
            return f"{runs}, cost unbounded"
        return f"{runs}, {self.cost}" if self.cost else runs

    @property
    def cost_text(self) -> str:
        """The cost ceiling in words, as ``corral cycles`` prints it.

        ``"$0.24: plan → (draft → review) ×2"``, or ``"none: <reason>"``.
        """
        if self.cost is None:
            return f"none: {self.cost_reason}"
        return f"{self.cost}: {self.cost_path}" if self.cost_path else str(self.cost)

    def __str__(self) -> str:
        if self.steps is None:
            return f"unbounded: {self.reason}"
        shown = f": {self.path}" if self.path else " (no single path is known to reach it)"
        return f"{self.steps} node runs{shown}"


def bound_of(spec: GraphSpec, graph: SpecGraph | None = None) -> Bound:
    """Return the :class:`Bound` of ``spec`` (see the module docstring for how).

    ``graph`` is the spec's :class:`SpecGraph` when the caller has it already: the analyser
    builds it once per check and shares its routes, groups and order with the rules.
    """
    return graph.shared(_bound_of) if graph is not None else _bound_of(SpecGraph(spec))


def _bound_of(graph: SpecGraph) -> Bound:
    return _with_cost(graph, _bound(graph, "", {}))


def _with_cost(graph: SpecGraph, bound: Bound) -> Bound:
    """Return ``bound`` with the cost ceiling: the same bound, each node run weighing the
    cost its node declares (times its attempts, one more when it can pause), each subgraph
    node its child's ceiling."""
    nodes = list(every_node(graph.spec, ""))
    declared = {f for _, n in nodes if n.cost is not None for f in FIELDS if getattr(n.cost, f)}
    for path, node in nodes:
        if node.cost is None and "spend" in node.called:
            reason = (
                f"node {path + node.name!r} calls ctx.spend but declares no cost; "
                f"give it @g.node({node.name!r}, cost=Cost(...))"
            )
            return replace(bound, cost=None, cost_reason=reason)
    if not declared:
        return bound
    if bound.steps is None:
        return replace(bound, cost=None, cost_reason=bound.reason)
    digits = max(_places(n.cost.usd) for _, n in nodes if n.cost is not None)
    # Each node run also weighs 1/scale of a unit, below any amount (scale > the most node
    # runs), so that among the walks that spend the most the witness is the longest one:
    # a run goes on through the nodes that spend nothing.
    scale = bound.steps + 1
    most = dict.fromkeys(FIELDS, 0)
    path = ""
    for name in ("usd", "tokens", "calls"):  # the witness shown is the first field declared
        if name in declared:
            weight = partial(_weight, name=name, digits=digits, scale=scale)
            ceiling = _bound(graph, "", {}, weight)
            if ceiling.steps is None:
                return replace(bound, cost=None, cost_reason=ceiling.reason)
            most[name] = ceiling.steps // scale
            path = path or ceiling.path
    usd = Decimal(most["usd"]).scaleb(-digits)
    return replace(bound, cost=Cost(most["calls"], most["tokens"], usd), cost_path=path)


def _weight(node: NodeSpec, name: str, digits: int, scale: int) -> int:
    """Return the most a run of ``node`` spends of ``name`` (dollars in ``10**-digits``),
    times ``scale``, plus its one node run."""
    if node.cost is None:
        return 1
    amount = node.cost.usd.scaleb(digits) if name == "usd" else getattr(node.cost, name)
    times = (node.retry.attempts if node.retry is not None else 1) + ("interrupt" in node.called)
    return int(amount) * times * scale + 1


def _places(usd: Decimal) -> int:
    """Return how many decimal places ``usd`` is written with."""
    exponent = usd.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def every_node(spec: GraphSpec, path: str) -> Iterator[tuple[str, NodeSpec]]:
    """Yield every node of ``spec`` and of its subgraphs, with the path it is under."""
    for node in spec.nodes:
        yield path, node
        if node.subgraph is not None:
            yield from every_node(node.subgraph.graph, f"{path}{node.name}/")


def _bound(
    graph: SpecGraph,
    path: str,
    done: dict[int, Bound],
    weight: Callable[[NodeSpec], int] | None = None,
) -> Bound:
    """Return the bound of ``graph``, a subgraph at ``path`` (``""`` at the top).

    ``done`` holds the bounds of the child specs already computed, by identity, so a child
    used several times is bounded once. With ``weight``, a run of a node that is not a
    subgraph weighs ``weight(node)`` instead of one node run: the bound is the most of what
    the weight counts.
    """
    facts = read_facts(graph)
    if facts.unbounded is not None:
        return _unbounded(facts, facts.unbounded, path)
    order = graph.unguarded_order
    if order is None:
        return _unbounded(facts, _unguarded_reason(graph), path)
    children: dict[str, Bound] = {}
    for node in facts.nodes:
        if node.subgraph is None:
            continue
        child_spec = node.subgraph.graph
        child = done.get(id(child_spec))
        if child is None:
            child = _bound(SpecGraph(child_spec), f"{path}{node.name}/", done, weight)
            done[id(child_spec)] = child
        if child.steps is None:
            return Bound(None, {n.name: None for n in facts.nodes}, reason=child.reason)
        children[node.name] = child
        facts.units[node.name] = Unit.of_child(node.name, child.steps, child.witness, child.path)
    if weight is not None:
        facts.units.update(
            (n.name, Unit(weight(n), (n.name,), n.name)) for n in facts.nodes if not n.subgraph
        )
    for name in always_failing(graph.nodes):
        drop_routes_from(facts, name)  # its entry raises, so its routes are never taken
    runs = per_node_runs(facts, order, members=graph.rank)  # order holds every node
    per_node: dict[str, int | None] = {n: known(count) for n, count in runs.items()}
    for name, child in children.items():
        for inner, count in child.per_node.items():
            per_node[f"{name}/{inner}"] = None if count is None else known(count * runs[name])
    if facts.units:
        total = saturated(sum(saturated(runs[n] * facts.weight(n)) for n in runs))
    else:  # every node is one node run, and each count is saturated already
        total = saturated(sum(runs.values()))
    if not facts.single:
        return _result(total, per_node)
    components = graph.components if facts.components is None else facts.components
    walk, witness = longest_walk(facts, runs, order, components)
    if walk > total:
        return _result(total, per_node)
    if witness is None:
        return _result(walk, per_node)
    nodes, text = witness
    return _result(walk, per_node, nodes, text)


def _result(
    steps: int,
    per_node: dict[str, int | None],
    witness: tuple[str, ...] | None = None,
    path: str = "",
) -> Bound:
    if steps >= MANY:
        return Bound(None, per_node, reason="the guards allow more than 10**18 node runs")
    return Bound(steps, per_node, witness, path=path)


def _unguarded_reason(graph: SpecGraph) -> str:
    """Say that a cycle has no guarded route; name it when a guard's ``otherwise`` route
    is a step of it (beside a guarded route, the cycle looks guarded where it is not)."""
    for component in graph.unguarded_components():
        cycle = graph.witness(component)
        note = fallback_note(graph, cycle)
        if note:
            shown = " → ".join([*cycle, cycle[0]])
            return f"cycle {shown} has no guarded route (CR201): {note}"
    return "a cycle has no guarded route (CR201)"


def _unbounded(facts: Facts, reason: str, path: str) -> Bound:
    if path:
        reason = f"in subgraph {path.rstrip('/')!r}: {reason}"
    return Bound(None, {n.name: None for n in facts.nodes}, reason=reason)
