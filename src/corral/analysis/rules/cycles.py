"""CR2xx: cycles and their guards."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from corral.analysis._fallbacks import fallback_note
from corral.analysis._graph import SpecGraph
from corral.analysis.bound import bound_of, every_node
from corral.analysis.rules._base import (
    Finding,
    GuardSite,
    guard_sites,
    meant_names,
    quote_names,
    route_owner,
    routes_unresolved,
    rule,
    site_ignore,
)
from corral.analysis.rules._loops import counter_loop
from corral.spec import END, Edge

_KIND_PREFERENCE = {"router": 0, "send": 0, "command": 1, "then": 2}


@rule("CR201", "unguarded-cycle")
def unguarded_cycles(graph: SpecGraph) -> Iterator[Finding]:
    """Report the routes to guard so that every cycle has a guarded route.

    Every cycle must pass through at least one guarded route, or a run could loop until the
    global step cap. For each group of cycles with no guarded route (a strongly connected
    group of unguarded routes) the rule picks a small set of routes whose guards would bound
    every cycle of the group, and reports each route of the set once, with a cycle that
    route closes, e.g. `critique → revise → critique`, at the router (or node) that declares
    it. A self-loop inside a larger loop is its own finding. The suggested route is one a
    router declares where there is one (a guard sits most naturally there), and among those
    a back route: one that returns towards the start, not the first step of the happy path.
    When a node on the cycle increments a state key that the router choosing the way out
    compares with a bound (a loop bounded by hand, CR204 on LangGraph graphs), the message
    says so: corral cannot check such a counter, so replace it with the guard.

    Fix: add a guard to the route, e.g.
    `@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])`.
    """
    meant = _misspelt_guard_routes(graph)
    for component in graph.unguarded_components(meant):
        cuts, stuck = graph.cycle_cuts(component, _cuttable(graph), _score(graph), meant)
        for nodes in stuck:
            shown = " → ".join([*nodes, nodes[0]])
            note = fallback_note(graph, nodes, all_steps=True)
            yield Finding(
                f"cycle {shown} closes through guards' otherwise routes ({note}), so no guard "
                "can cut it; send those guards' otherwise elsewhere (e.g. END)",
                tuple(nodes),
            )
        for cut in cuts:
            yield _cut_finding(graph, cut.pair, cut.cycle)


def _misspelt_guard_routes(graph: SpecGraph) -> set[tuple[str, str]]:
    """Return the routes that guards with a misspelt target (CR101) are meant to guard.

    They count as guarded until the name is fixed: one mistake, one finding. A target close
    to one of the site's routes is read as that route; one close to no name at all may be
    meant for any of them.
    """
    meant: set[tuple[str, str]] = set()
    for site in guard_sites(graph):
        own = [t for t in site.declared or () if graph.is_node(t)]
        for guard in site.guards:
            if graph.is_node(guard.target) or guard.target in (END, *(site.declared or ())):
                continue
            match = graph.closest(guard.target)
            targets = own if match is None else [t for t in own if t == match]
            meant.update((site.source, t) for t in targets)
    return meant


def _unguarded_routes(graph: SpecGraph, source: str, target: str) -> list[Edge]:
    return [r for r in graph.routes(source, target) if r.guard is None]


def _cuttable(graph: SpecGraph) -> Callable[[tuple[str, str]], bool]:
    def cuttable(pair: tuple[str, str]) -> bool:
        routes = _unguarded_routes(graph, *pair)
        return bool(routes) and all(r.kind in _KIND_PREFERENCE for r in routes)

    return cuttable


def _score(graph: SpecGraph) -> Callable[[tuple[str, str]], tuple[int, int, int, int]]:
    far = len(graph.rank) + 1
    distance = graph.distance

    def score(pair: tuple[str, str]) -> tuple[int, int, int, int]:
        source, target = pair
        forward = distance.get(target, far) > distance.get(source, far)
        kinds = [_KIND_PREFERENCE.get(r.kind, 3) for r in _unguarded_routes(graph, *pair)]
        return (max(kinds, default=3), int(forward), graph.rank[source], graph.rank[target])

    return score


def _cut_finding(graph: SpecGraph, pair: tuple[str, str], cycle: tuple[str, ...]) -> Finding:
    shown = " → ".join([*cycle, cycle[0]])
    score = _score(graph)
    steps = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
    others = sorted((p for p in steps if p != pair and _cuttable(graph)(p)), key=score)
    # Every unguarded route of a pair needs the guard (two declarations may route there,
    # CR107): a guard on one of them leaves the other closing the cycle.
    where = [
        " and on ".join(
            f"{route_owner(e, graph)} ({e.source} → {e.target})"
            for e in _unguarded_routes(graph, *p)
        )
        for p in (pair, *others)
    ]
    best = _unguarded_routes(graph, *pair)[0]
    alternatives = f", or on {', '.join(where[1:])}" if len(where) > 1 else ""
    note = fallback_note(graph, cycle)
    why = f" ({note})" if note else ""
    return Finding(
        f"cycle {shown} has no guarded route{why}, so only max_steps stops it; add a guard "
        f"to one of its routes, e.g. Guard({best.target!r}, max=3, otherwise=END) on "
        f"{where[0]}{alternatives}{_counter_note(graph, cycle)}",
        cycle,
        best.location,
        site_ignore(best, graph),
    )


def _counter_note(graph: SpecGraph, cycle: tuple[str, ...]) -> str:
    """Say so when the cycle is bounded by hand, by a counter in the state (CR204's pattern)."""
    loop = counter_loop(graph, cycle)
    if loop is None or loop.key is None:
        return ""
    return (
        f"; the loop is bounded by hand by the counter {loop.key!r} (node "
        f"{loop.counter_node!r} increments it, {loop.chooser} compares it with a bound), "
        "which corral cannot check: replace the counter with the Guard"
    )


@rule("CR202", "useless-guard", "warning")
def useless_guards(graph: SpecGraph) -> Iterator[Finding]:
    """Report guards on routes that are on no cycle, or that their owner cannot take.

    A guard counts a route that lies on no cycle (it can be taken at most once per visit, so
    the bound adds nothing), or that its router or node never takes (its target is not in the
    annotation). Usually a leftover from a refactor, or a guard on the wrong router.

    Fix: move the guard to a route on the cycle, or remove it. To keep it on purpose,
    suppress the warning where the guard is declared: on its router,
    `@g.router("review", guards=[...], ignore=("CR202",))`; on a node's `then=` route,
    `@g.node(then=..., guards=[...], ignore=("CR202",))`.
    """
    unresolved = routes_unresolved(graph)
    for site in guard_sites(graph):
        if graph.is_node(site.source):
            yield from _useless_guards_of(graph, site, unresolved)


def _useless_guards_of(graph: SpecGraph, site: GuardSite, unresolved: bool) -> Iterator[Finding]:
    source, who = site.source, site.who
    counted: set[str] = set()
    for guard in site.guards:
        nodes = (source, guard.target) if graph.is_node(guard.target) else (source,)
        place = (nodes, site.location, site.ignore)
        if guard.target in counted:
            yield Finding(
                f"{who} has more than one guard on its route to {guard.target!r}; keep one",
                *place,
            )
            continue
        counted.add(guard.target)
        declared = None if site.declared is None else meant_names(graph, site.declared)
        if declared is None:
            continue  # CR401 (or CR101 on a name close to none) says the routes are unknown
        if guard.target not in declared:
            if not graph.is_node(guard.target) and guard.target != END:
                continue  # CR101
            routers = graph.spec.routers_of(source) if site.is_node else ()
            if routers and not declared:
                yield Finding(
                    f"Guard({guard.target!r}) on {who} never counts: a node's guards apply to "
                    f"its then= and Command routes; move it to @g.router({source!r}, "
                    f"guards=[...]) on {routers[0].name!r}",
                    *place,
                )
                continue
            allowed = quote_names(declared) if declared else "no node"
            yield Finding(
                f"Guard({guard.target!r}) on {who} never counts: {who} cannot route to "
                f"{guard.target!r} (it routes to {allowed}); guard one of its routes or "
                "remove it",
                *place,
            )
        elif guard.target == END or not (
            unresolved or graph.on_cycle(source, guard.target, repaired=True)
        ):
            yield Finding(
                f"Guard({guard.target!r}) on {who} guards the route "
                f"{source} → {guard.target}, which is on no cycle; remove it (only cycles "
                "need guards; max_runs= caps a node)",
                *place,
            )


@rule("CR203", "cap-below-bound", "warning")
def cap_below_bound(graph: SpecGraph) -> Iterator[Finding]:
    """Report a ``max_steps`` below the most node runs the guards allow (``g.bound()``).

    The guards bound every cycle, so a run ends after at most `g.bound().steps` node runs;
    a `max_steps` below that can stop with `StepLimitError` a run that the guards would
    have ended. The message gives both numbers and a path that reaches the bound.

    Fix: raise `max_steps` to the bound (on `Graph(...)`, `compile()` or `invoke()`), or
    lower a guard's `max`.
    """
    spec = graph.spec
    found = bound_of(spec, graph)
    if found.steps is None or spec.max_steps >= found.steps:
        return
    how = f", e.g. {found.path}" if found.path else ""
    yield Finding(
        f"max_steps={spec.max_steps} is below the {found.steps} node runs the guards allow"
        f"{how}; the cap can stop a run the guards would end: raise max_steps to "
        f"{found.steps} or lower a guard's max",
        (),
        spec.location,
    )


@rule("CR205", "over-budget")
def over_budget(graph: SpecGraph) -> Iterator[Finding]:
    """Report a cost ceiling (`g.bound().cost`) above the graph's `budget`.

    The ceiling is the most one run can spend when every node keeps its declared `cost`;
    over the budget, some run can stop with `BudgetError`. The message gives both amounts,
    the path that reaches the ceiling and the node that spends the most on it. A graph with
    a budget whose ceiling cannot be proved (an unbounded loop, a `Send` without
    `max_sends`, a node that calls `ctx.spend` without a `cost`) gets a warning.

    Fix: lower a guard's `max` (or `react_agent`'s `max_turns`) on the path, or a node's
    `cost`, or raise the budget.
    """
    spec = graph.spec
    if spec.budget is None:
        return
    found = bound_of(spec, graph)
    facts = {
        "ceiling": None if found.cost is None else found.cost.to_json(),
        "budget": spec.budget.to_json(),
        "path": found.cost_path,
        "reason": found.cost_reason,
    }
    if found.cost is None:
        yield Finding(
            f"budget {spec.budget} cannot be proved enough: {found.cost_reason}",
            (),
            spec.location,
            severity="warning",
            facts=facts,
        )
        return
    over = found.cost.over(spec.budget)
    if not over:
        return
    runs = found.per_node
    spent = [
        (getattr(n.cost, over[0]) * (runs.get(path + n.name) or 0), path + n.name, n.cost)
        for path, n in every_node(spec, "")
        if n.cost is not None
    ]
    most = max(spent, default=None)
    lower = ""
    if most is not None:
        _, name, cost = most
        lower = f", the cost of {name!r} ({cost} an attempt, up to {runs[name]} runs)"
    path = f" along {found.cost_path}" if found.cost_path else ""
    yield Finding(
        f"cost ceiling {found.cost} passes the budget {spec.budget} ({', '.join(over)}): a "
        f"run can spend it{path}; lower a guard's max or max_turns on that path{lower}, or "
        "raise the budget",
        (),
        spec.location,
        facts=facts,
    )
