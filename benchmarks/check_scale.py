"""Check at scale: ``g.check()`` on graphs whose cycles are far too many to list.

A chain ``n0 → n1 → ... → END`` of 1,000 and of 10,000 nodes where every node's router can
also skip one node ahead and every tenth node can jump 100 nodes back through a guarded
route (more than 10^20 elementary cycles), and a dense 16-node graph where every node's
router can go to every node or END, every route guarded (over 10^12 elementary cycles).
``check()`` reads every annotation and runs every rule. Figures are the least CPU time of
several rounds, the sizes timed in turn; the 10,000-node chain against the 1,000-node one
is linear at 10x (the objects of the larger graph no longer fit the CPU's caches, which
adds the rest).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, TypedDict

from _shared import Report, Row, command, least_times, python_version

from corral import END, Graph, Guard


class State(TypedDict):
    step: int


def _node(state: State) -> dict[str, Any]:
    return {"step": state["step"] + 1}


def _router_returning(*targets: str) -> Callable[[State], str]:
    def route(state: State) -> str:
        return targets[0]

    route.__annotations__ = {"state": State, "return": Literal[targets]}
    return route


def chain_graph(size: int, span: int = 100) -> Graph[State]:
    """Return the chain of ``size`` nodes with guarded back routes every tenth node."""
    g = Graph(State, name=f"chain{size}")
    for i in range(size):
        name = f"n{i}"
        g.node(name, start=i == 0)(_node)
        forward = list(dict.fromkeys(f"n{j}" if j < size else END for j in (i + 1, i + 2)))
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


def measure(quick: bool) -> Report:
    rounds = 3 if quick else 7
    graphs = [chain_graph(1_000), chain_graph(10_000), complete_graph()]
    for g in graphs:
        # Every cycle is guarded and END is reachable (CR203 may warn: max_steps is far
        # below what these guards allow).
        assert [d for d in g.check() if d.code != "CR203"] == [], g.name
    small, large, dense = least_times(
        *(g.check for g in graphs), repeats=rounds, clock=time.process_time
    )
    return Report(
        rows=[
            Row("check() of a 1,000-node chain", small * 1e3, 100, "ms"),
            Row("check() of 10,000 nodes / of 1,000", large / small, 12, "x"),
            Row("check() of a dense 16-node graph", dense * 1e3, 50, "ms"),
        ],
        notes=[
            f"10,000-node chain {large * 1e3:.0f} ms; least CPU time of {rounds} rounds "
            f"(python {python_version()})"
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
