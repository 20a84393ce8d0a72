"""Check at scale: ``g.check()`` on graphs whose cycles are far too many to list.

A chain ``n0 → n1 → ... → END`` of 1,000 and of 10,000 nodes where every node's router can
also skip one node ahead and every tenth node can jump 100 nodes back through a guarded
route (more than 10^20 elementary cycles), and a dense 16-node graph where every node's
router can go to every node or END, every route guarded (over 10^12 elementary cycles).
``check()`` reads every annotation and runs every rule. Figures are the least CPU time of
several rounds, the sizes timed in turn; the 10,000-node chain against the 1,000-node one
is linear at 10x (the objects of the larger graph no longer fit the CPU's caches, which
adds the rest).

Each part of ``check()`` (reading the spec, indexing its routes, every rule) is also timed
apart at two sizes four times apart, so a rule gone quadratic (a membership test against a
tuple of every node, a walk of the graph per join) is not hidden by the rest: linear is
~4x, quadratic ~16x, the limit 9x. Three shapes: a ladder with a guard on every node into a
row of small guarded loops (1,000 and 4,000 nodes), a row of unguarded loops (a CR201
finding each; 400 and 1,600; reading the spec is timed on this shape only, it is the same
code for every shape) and a chain of fan-out/join diamonds (1,000 and 4,000). Parts under a
millisecond on the smaller graph are too small to judge.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypedDict

from _shared import Report, Row, command, least_times, python_version

from corral import END, Graph, Guard
from corral.analysis._graph import SpecGraph
from corral.analysis.rules import RULES
from corral.spec import GraphSpec

PART_FLOOR_S = 0.001
"""Parts quicker than this on the smaller graph are too small to judge: noise swamps them."""


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


def loops_graph(size: int, *, guarded: bool = True) -> Graph[State]:
    """``size // 3`` loops ``a → b → c → a`` in a row, each left for the next one; each
    loop's way back guarded (many small groups) or not (CR201 reports every loop)."""
    g = Graph(State, name=f"loops{size}")
    _add_loops(g, size, guarded=guarded, start=True)
    return g


def ladder_graph(size: int) -> Graph[State]:
    """A ladder of ``size // 2`` nodes (each also routing one back, guarded) that leads into
    ``size // 2`` guarded loops: a guard on every node, one group of cycles per loop."""
    g = Graph(State, name=f"ladder{size}")
    ladder = size // 2
    for i in range(ladder):
        name = f"n{i}"
        g.node(name, start=i == 0)(_node)
        ahead = f"n{i + 1}" if i + 1 < ladder else "a0"
        if i == 0:
            g.router(name)(_router_returning(ahead))
            continue
        back = f"n{i - 1}"
        g.router(name, guards=[Guard(back, max=2, otherwise=ahead)])(_router_returning(ahead, back))
    _add_loops(g, size - ladder, guarded=True, start=False)
    return g


def _add_loops(g: Graph[State], size: int, *, guarded: bool, start: bool) -> None:
    loops = max(1, size // 3)
    for i in range(loops):
        a, b, c = f"a{i}", f"b{i}", f"c{i}"
        g.node(a, start=start and i == 0, then=b)(_node)
        g.node(b, then=c)(_node)
        g.node(c)(_node)
        onward = f"a{i + 1}" if i + 1 < loops else END
        guards = [Guard(a, max=2, otherwise=onward)] if guarded else []
        g.router(c, guards=guards)(_router_returning(onward, a))


def joins_graph(size: int) -> Graph[State]:
    """A chain of ``size // 4`` diamonds: p → (a, b) → join (waits for both) → next p."""
    g = Graph(State, name=f"joins{size}")
    count = size // 4
    for i in range(count):
        after = f"p{i + 1}" if i + 1 < count else END
        g.node(f"p{i}", start=i == 0, then=(f"a{i}", f"b{i}"), writes=())(_nothing)
        g.node(f"a{i}", then=f"j{i}", writes=())(_nothing)
        g.node(f"b{i}", then=f"j{i}", writes=())(_nothing)
        g.node(f"j{i}", then=after, wait_for=(f"a{i}", f"b{i}"), writes=())(_nothing)
    return g


def _nothing(state: State) -> None:
    return None


def part_times(g: Graph[State], spec: GraphSpec | None) -> dict[str, float]:
    """Return the CPU time of each part of one ``check()`` of ``g``, by name; reading the
    spec is timed too unless ``spec`` is given."""
    times: dict[str, float] = {}
    if spec is None:
        started = time.process_time()
        spec = g.spec()
        times["spec"] = time.process_time() - started
    started = time.process_time()
    graph = SpecGraph(spec)
    times["SpecGraph"] = time.process_time() - started
    for code, rule in RULES.items():
        started = time.process_time()
        list(rule.check(graph))
        times[code] = time.process_time() - started
    return times


def part_growth(
    shape: Callable[[int], Graph[State]], size: int, read: bool, rounds: int
) -> dict[str, float]:
    """Return how much each part of ``check()`` grows from ``size`` nodes to ``4 * size``:
    least times over ``rounds``, the two sizes timed in turn, the collector paused."""
    graphs = [shape(size), shape(4 * size)]
    specs = [None if read else g.spec() for g in graphs]
    best: list[dict[str, float]] = [{}, {}]
    gc.disable()
    try:
        for _ in range(rounds):
            for i, g in enumerate(graphs):
                for part, spent in part_times(g, specs[i]).items():
                    best[i][part] = min(best[i].get(part, spent), spent)
    finally:
        gc.enable()
    small, large = best
    return {p: large[p] / max(small[p], 1e-6) for p in large if small[p] >= PART_FLOOR_S}


SHAPES: list[tuple[str, Callable[[int], Graph[State]], int, bool]] = [
    ("ladder", ladder_graph, 1000, False),
    ("unguarded loops", partial(loops_graph, guarded=False), 400, True),
    ("joins", joins_graph, 1000, False),
]


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
    growth = {
        f"{name} {part}": ratio
        for name, shape, size, read in SHAPES
        for part, ratio in part_growth(shape, size, read, rounds).items()
    }
    worst = max(growth, key=growth.__getitem__)
    return Report(
        rows=[
            Row("check() of a 1,000-node chain", small * 1e3, 100, "ms"),
            Row("check() of 10,000 nodes / of 1,000", large / small, 12, "x"),
            Row("check() of a dense 16-node graph", dense * 1e3, 50, "ms"),
            Row("any part of check() on a 4x graph", growth[worst], 9, "x"),
        ],
        notes=[
            f"10,000-node chain {large * 1e3:.0f} ms; least CPU time of {rounds} rounds "
            f"(python {python_version()})",
            f"the part that grows most on a 4x graph: {worst} ({growth[worst]:.1f}x); "
            f"{len(growth)} parts judged",
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
