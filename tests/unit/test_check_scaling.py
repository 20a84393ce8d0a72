"""check() stays linear: four times the nodes costs about four times the time, not sixteen.

A rule that goes quadratic again (a membership test against a tuple of every node, a pass
over every node per group or per guard) makes four times the graph cost sixteen times as
much. Each part of ``check()`` (reading the spec, indexing its routes, every rule) is timed
apart, so a slow rule is not hidden by the rest, on two shapes at two sizes:

- a ladder with a guard on every node that leads into a row of small guarded loops (one
  group of cycles each), at 1,000 and 4,000 nodes: large enough that a scan of every node
  per guard, done in C, outgrows the linear work;
- a row of unguarded loops (a CR201 finding each), at 400 and 1,600 nodes; reading the
  spec is timed on this shape only (it is the same code for every shape);
- a chain of fan-out/join diamonds (a ``wait_for`` join each), at 1,000 and 4,000 nodes:
  CR304 asks what runs before each join, which must not be a walk of the graph per join.

The figure is the least CPU time of a few rounds, the sizes timed in turn and the collector
paused, and the bar (9x) is far above linear and far below quadratic, so a loaded machine
does not make it flaky. Parts that take under a millisecond on the smaller graph are too
small to judge.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypedDict

import pytest

from corral import END, Graph, Guard
from corral.analysis._graph import SpecGraph
from corral.analysis.rules import RULES
from corral.spec import GraphSpec

BAR = 9.0
"""The most a part may grow when the graph grows 4x (linear: ~4x; quadratic: ~16x)."""
FLOOR_S = 0.001
"""Parts quicker than this on the smaller graph are too small to judge: noise swamps them."""
ROUNDS = 3


class State(TypedDict):
    step: int


def _node(state: State) -> dict[str, Any]:
    return {"step": state["step"] + 1}


def _router_returning(*targets: str) -> Callable[[State], str]:
    def route(state: State) -> str:
        return targets[0]

    route.__annotations__ = {"state": State, "return": Literal[targets]}
    return route


def loops_graph(size: int, *, guarded: bool = True) -> Graph[State]:
    """``size // 3`` loops ``a → b → c → a`` in a row, each left for the next one; each
    loop's way back guarded (many small groups) or not (CR201 reports every loop)."""
    g = Graph(State, name=f"loops{size}")
    _add_loops(g, size, guarded=guarded, start=True)
    return g


def guarded_graph(size: int) -> Graph[State]:
    """A ladder of ``size // 2`` nodes (each also routing one back, guarded) that leads into
    ``size // 2`` guarded loops: a guard on every node, one group of cycles per loop."""
    g = Graph(State, name=f"guarded{size}")
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


def part_times(g: Graph[State], spec: GraphSpec | None = None) -> dict[str, float]:
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


def least_times(graphs: list[Graph[State]], *, read: bool) -> list[dict[str, float]]:
    """Return each part's least time over the rounds, per graph, the graphs timed in turn.

    ``read``: time reading the spec too (the same code for every shape, so once is enough).
    """
    best: list[dict[str, float]] = [{} for _ in graphs]
    specs = [None if read else g.spec() for g in graphs]
    was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(ROUNDS):
            for i, g in enumerate(graphs):
                for part, spent in part_times(g, specs[i]).items():
                    best[i][part] = min(best[i].get(part, spent), spent)
    finally:
        if was_on:
            gc.enable()
    return best


def joins_graph(size: int) -> Graph[State]:
    """A chain of ``size // 4`` diamonds: p → (a, b) → join (waits for both) → next p."""
    g = Graph(State)
    count = size // 4
    for i in range(count):
        after = f"p{i + 1}" if i + 1 < count else "__end__"
        g.node(f"p{i}", start=i == 0, then=(f"a{i}", f"b{i}"), writes=())(_nothing)
        g.node(f"a{i}", then=f"j{i}", writes=())(_nothing)
        g.node(f"b{i}", then=f"j{i}", writes=())(_nothing)
        g.node(f"j{i}", then=after, wait_for=(f"a{i}", f"b{i}"), writes=())(_nothing)
    return g


def _nothing(state: State) -> None:
    return None


@pytest.mark.parametrize(
    ("shape", "size", "read"),
    [
        (guarded_graph, 1000, False),
        (partial(loops_graph, guarded=False), 400, True),
        (joins_graph, 1000, False),
    ],
    ids=["guarded", "unguarded-loops", "joins"],
)
def test_every_part_of_check_grows_linearly(
    shape: Callable[[int], Graph[State]], size: int, read: bool
) -> None:
    """No part of check() on a graph 4x as large costs 9x the time."""
    small, large = least_times([shape(size), shape(4 * size)], read=read)
    grown = {part: large[part] / max(small[part], 1e-6) for part in large if small[part] >= FLOOR_S}
    assert grown, small  # the graphs are big enough for some parts to be judged
    assert {part: f"{ratio:.1f}x" for part, ratio in grown.items() if ratio > BAR} == {}, {
        part: f"{small[part] * 1000:.2f} ms -> {large[part] * 1000:.2f} ms" for part in grown
    }
