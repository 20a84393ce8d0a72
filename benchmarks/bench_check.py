"""Time the analyser on graphs whose elementary cycles are far too many to list.

Run: ``python benchmarks/bench_check.py``. It builds

- a 1,000-node graph: a chain ``n0 → n1 → ... → n999 → END`` where every node's router can
  also skip one node ahead, and every tenth node can jump 100 nodes back through a guarded
  route (more than 10^20 elementary cycles), and
- a dense 16-node complete graph: every node's router can go to every node (itself
  included) or END, and every route is guarded (over 10^12 elementary cycles),

then prints the best of several timings of ``g.check()`` (which reads every annotation and
runs every rule) and of ``analyse(spec)`` alone, next to the goals from issue 2, and the
ratio measured / goal (below 1 means the goal is met).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypedDict

from corral import END, Graph, Guard
from corral.analysis import analyse, list_cycles


class State(TypedDict):
    step: int


def _node(state: State) -> dict[str, Any]:
    return {"step": state["step"] + 1}


def _router_returning(*targets: str) -> Callable[[State], str]:
    def route(state: State) -> str:
        return targets[0]

    route.__annotations__ = {"state": State, "return": Literal[targets]}
    return route


def chain_graph(size: int = 1000, span: int = 100) -> Graph[State]:
    """Return a chain of ``size`` nodes with guarded back routes.

    Every node routes one and two nodes ahead (unguarded), so there are Fibonacci-many paths
    forward; every tenth node from ``span`` on also routes ``span`` nodes back through a
    guarded route, closing more than 10^20 elementary cycles.
    """
    g = Graph(State, name=f"chain{size}")
    for i in range(size):
        name = f"n{i}"
        g.node(name, start=i == 0)(_node)
        ahead = [f"n{j}" if j < size else END for j in (i + 1, i + 2)]
        forward = list(dict.fromkeys(ahead))
        if i >= span and i % 10 == 9:
            back = f"n{i - span}"
            route = _router_returning(*forward, back)
            g.router(name, guards=[Guard(back, max=2, otherwise=forward[0])])(route)
        else:
            g.router(name)(_router_returning(*forward))
    return g


def complete_graph(size: int = 16) -> Graph[State]:
    """Return ``size`` nodes where every node routes to every node and END, all guarded."""
    g = Graph(State, name=f"complete{size}")
    names = [f"n{i}" for i in range(size)]
    for i, name in enumerate(names):
        g.node(name, start=i == 0)(_node)
        guards = [Guard(t, max=2, otherwise=END) for t in names]
        g.router(name, guards=guards)(_router_returning(*names, END))
    return g


def best_of(func: Callable[[], object], repeat: int = 7) -> float:
    """Return the fastest of ``repeat`` timings of ``func()`` in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    """Print the timings and return 1 if a goal is missed."""
    print(f"python {sys.version.split()[0]}")
    missed = False
    for label, g, goal in (
        ("1,000-node chain, guarded back routes", chain_graph(), 0.2),
        ("dense 16-node complete graph, all routes guarded", complete_graph(), 0.05),
    ):
        found = g.check()
        # every cycle is guarded and END is reachable (CR203 may warn: max_steps=50 is far
        # below what these guards allow)
        assert [d for d in found if d.code != "CR203"] == [], found
        spec = g.spec()
        check_s = best_of(g.check)
        analyse_s = best_of(partial(analyse, spec))
        sample = list_cycles(spec, limit=1000)
        print(
            f"{label}: {len(spec.nodes)} nodes, {sum(1 for _ in spec.edges())} routes\n"
            f"  check()        {check_s * 1000:8.2f} ms  goal {goal * 1000:.0f} ms  "
            f"ratio {check_s / goal:.3f}\n"
            f"  analyse(spec)  {analyse_s * 1000:8.2f} ms\n"
            f"  cycles(limit=1000): {len(sample)} listed, truncated={sample.truncated}"
        )
        missed = missed or check_s > goal
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
