"""``corral draw`` and ``corral cycles``: one graph, shown without running it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from corral.analysis import Bound, CycleList, bound, list_cycles
from corral.cli._load import load_one
from corral.render import render_dot, render_mermaid
from corral.spec import END, Guard

__all__ = ["cycles", "draw", "format_cycles"]


def draw(args: argparse.Namespace) -> int:
    """Print the graph as Mermaid or DOT text; return 0."""
    target = load_one(args.path, verbose=args.verbose)
    spec = target.spec()
    render = render_dot if args.format == "dot" else render_mermaid
    taken = None
    if args.thread is not None:
        from corral.cli._threads import open_existing
        from corral.history import taken_routes

        taken = taken_routes(open_existing(args.db), args.thread, spec, collapse=args.collapse)
    # LangGraph has no guards: `corral cycles` and `lint` say why its loops have no bound
    shown = None if target.langgraph is not None else bound(spec).summary
    print(render(spec, collapse=args.collapse, taken=taken, bound=shown))
    return 0


def cycles(args: argparse.Namespace) -> int:
    """List the elementary cycles of one graph with their guards; return 0."""
    target = load_one(args.path, verbose=args.verbose)
    spec = target.spec()
    found = list_cycles(spec, limit=args.limit)
    langgraph = target.langgraph is not None
    # LangGraph has no guards: its cycles say why it has no bound
    found_bound = None if langgraph else bound(spec)
    if args.format == "json":
        print(json.dumps(_cycles_json(target.label, found, found_bound), indent=2))
        return 0
    print(format_cycles(target.label, found, limit=args.limit, langgraph=langgraph))
    if found_bound is not None:
        print(f"bound: {found_bound}")
        if found_bound.cost is None or found_bound.cost or spec.budget is not None:
            print(f"cost ceiling: {found_bound.cost_text}")
    return 0


def _cycles_json(name: str, found: CycleList, bound: Bound | None) -> dict[str, Any]:
    """Return what ``corral cycles --format json`` prints."""
    out: dict[str, Any] = {
        "graph": name,
        "cycles": [
            {
                "nodes": list(c.nodes),
                "unguarded": c.unguarded,
                "guards": [_guard_text(g) for g in c.guards],
            }
            for c in found
        ],
        "truncated": found.truncated,
    }
    if bound is not None:
        cost = None if bound.cost is None else bound.cost.to_json()
        out["bound"] = {"steps": bound.steps, "path": bound.path, "reason": bound.reason}
        out["cost"] = {"ceiling": cost, "path": bound.cost_path, "reason": bound.cost_reason}
    return out


def format_cycles(name: str, found: CycleList, *, limit: int, langgraph: bool = False) -> str:
    """Return the cycle listing: one line per cycle, unguarded ones marked.

    A LangGraph graph has no guards: its cycles are marked as stopped only by
    ``recursion_limit`` (``corral lint`` tells a counter-bounded one apart, CR204).

    >>> from corral import Guard
    >>> from corral.spec import Cycle
    >>> cycle = Cycle(("a", "b"), (Guard("b", max=3, otherwise="c"),))
    >>> print(format_cycles("g", CycleList([cycle]), limit=100))
    g: 1 cycle
      a → b → a    guarded: b ≤3, then c
    """
    if not found:
        return f"{name}: no cycles"
    count = f"{len(found)} cycle" if len(found) == 1 else f"{len(found)} cycles"
    more = f" (stopped at --limit {limit}; there are more)" if found.truncated else ""
    lines = [f"{name}: {count}{more}"]
    width = max(len(str(c)) for c in found)
    for cycle in found:
        if cycle.unguarded and cycle.guards and cycle.fallbacks:  # looks guarded, is not
            fallbacks = ", ".join(
                f"{s} → {g.otherwise} is where Guard({g.target!r}) falls back"
                for s, g in cycle.fallbacks
            )
            how = (
                f"UNGUARDED (CR201): {fallbacks}, and a fallback counts no guard; send that "
                "otherwise elsewhere or add a Guard to another route"
            )
        elif cycle.guards and not cycle.unguarded:
            how = "guarded: " + "; ".join(_guard_text(g) for g in cycle.guards)
        elif langgraph:
            how = "UNBOUNDED: only a counter or recursion_limit stops it (lint: CR201, CR204)"
        else:
            how = "UNGUARDED (CR201): add a Guard to one of its routes"
        lines.append(f"  {str(cycle).ljust(width)}    {how}")
    return "\n".join(lines)


def _guard_text(guard: Guard) -> str:
    then = {None: "error", END: "END"}.get(guard.otherwise, guard.otherwise)
    return f"{guard.target} ≤{guard.max}, then {then}"
