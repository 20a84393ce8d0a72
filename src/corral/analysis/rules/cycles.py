"""CR2xx: cycles and their guards."""

from __future__ import annotations

from collections.abc import Iterator

from corral.analysis._graph import SpecGraph
from corral.analysis.rules._base import (
    Finding,
    GuardSite,
    guard_sites,
    quote_names,
    route_owner,
    routes_unresolved,
    rule,
    site_ignore,
)
from corral.spec import END, Edge

_KIND_PREFERENCE = {"router": 0, "send": 0, "command": 1, "then": 2}


@rule("CR201", "unguarded-cycle")
def unguarded_cycles(graph: SpecGraph) -> Iterator[Finding]:
    """Report each group of cycles with no guarded route, with one witness cycle.

    Every cycle must pass through at least one guarded route, or a run could loop until the
    global step cap. The message shows the cycle, e.g. `critique → revise → critique`, and the
    finding points at a router (or node) of the cycle where a guard would cut it.

    Fix: add a guard to a route on the cycle, e.g.
    `@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])`.
    """
    for component in graph.unguarded_components():
        path = graph.witness(component)
        shown = " → ".join([*path, path[0]])
        options: list[Edge] = []
        for i, source in enumerate(path):
            target = path[(i + 1) % len(path)]
            for route in graph.routes(source, target):
                if route.guard is None and route.kind in _KIND_PREFERENCE and route not in options:
                    options.append(route)
        others = [n for n in component if n not in path]
        tail = f"; {quote_names(others)} also loop with it" if others else ""
        if not options:
            yield Finding(
                f"cycle {shown} closes only through guards' otherwise routes, which cannot be "
                "guarded; send those guards' otherwise elsewhere (e.g. END)" + tail,
                tuple(path),
            )
            continue
        options.sort(
            key=lambda e: (_KIND_PREFERENCE[e.kind], e.target != path[0], path.index(e.source))
        )
        best = options[0]
        where = [f"{route_owner(e, graph)} ({e.source} → {e.target})" for e in options]
        alternatives = f", or on {', '.join(where[1:])}" if len(where) > 1 else ""
        yield Finding(
            f"cycle {shown} has no guarded route, so only max_steps stops it; add a guard to "
            f"one of its routes, e.g. Guard({best.target!r}, max=3, otherwise=END) on "
            f"{where[0]}{alternatives}{tail}",
            tuple(path),
            best.location,
            site_ignore(best, graph),
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
        if site.declared is None:
            continue  # CR401 already says the routes cannot be read
        if guard.target not in site.declared:
            if not graph.is_node(guard.target) and guard.target != END:
                continue  # CR101
            routers = graph.routers_of(source) if site.is_node else []
            if routers and not site.declared:
                yield Finding(
                    f"Guard({guard.target!r}) on {who} never counts: a node's guards apply to "
                    f"its then= and Command routes; move it to @g.router({source!r}, "
                    f"guards=[...]) on {routers[0].name!r}",
                    *place,
                )
                continue
            allowed = quote_names(site.declared) if site.declared else "no node"
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
