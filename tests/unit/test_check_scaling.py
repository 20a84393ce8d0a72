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
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from corral import Graph

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_check import State, guarded_graph, loops_graph, part_times

BAR = 9.0
"""The most a part may grow when the graph grows 4x (linear: ~4x; quadratic: ~16x)."""
FLOOR_S = 0.001
"""Parts quicker than this on the smaller graph are too small to judge: noise swamps them."""
ROUNDS = 3


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
