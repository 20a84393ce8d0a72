"""The cost of entering a subgraph, against the same nodes inlined in the parent.

Both graphs run the same three-node chain (``a`` → ``b`` → ``c``, each appending to a list
through ``operator.add``) ``ENTRIES`` times in a guarded loop:

- inlined: the three nodes are the parent's, and a router after ``c`` loops back to ``a``;
- subgraph: the three nodes are a child graph, and the parent's only node is
  ``g.subgraph("work", child)`` with a router looping back to it.

The overhead of one entry is the difference of the two times divided by ``ENTRIES``, shown
in units of one inlined node run (the inlined time divided by its ``3 * ENTRIES`` node runs).
The goal is at most ~3 node runs per entry without a checkpointer. With a ``MemorySaver``
both sides checkpoint; the child then also runs on a thread of its own, so an entry costs
its own checkpoints (its input, one per superstep) on top.

Each figure is the least CPU time of several interleaved repeats; run:
``python benchmarks/bench_subgraph.py``. Measured 2026-12-01 on a machine shared with other
work (load average 6-8; one inlined node run ~3.6 us here), three runs each:

- no checkpointer: 13.2 -> 9.8 node runs per entry when the child's tables, state and writes
  were prepared once per compiled parent; then 9.1-10.9 (38-44 us) -> 4.0-7.6 (17-33 us)
  when a lone entry of an unwatched run took the inline path (the parent plans no superstep
  for it, the child runs inline without a relay or driver, its outcome is counted and
  merged without the core's records); then 4.8-5.5 (16-18 us) -> 3.6-4.0 (12.4-13.7 us, least
  wall time of 150 interleaved runs, load ~2) when the child's run became a copy of one
  prepared per child graph, started from a copy of the parent's dict when it shares all its
  keys, and its outcome was handed back without slices or ``NamedTuple.__new__``; then
  4.1-4.5 (14.0-15.9 us, median 4.1) -> 2.1-2.8 (7.1-10.2 us, median 2.5; this script five
  times each, alternating with the code before, load average 4.6) when a child whose keys
  and reducers are all the parent's keeps no log on the inline path and hands its final
  state back as the parent's next (no writes to translate, no final values to merge);
- MemorySaver: 15.9 -> 3.6 with the input checkpoint dropped and a lone entry's merge taken
  from the child's final values; 3.7-6.4 -> 3.8-4.6 (within noise) after the inline entry,
  which a checkpointed run does not take; then 4.1-4.7 (228-246 us) -> 2.4-3.8 (179-231 us)
  when a fresh entry's checkpoint writer became a copy of one made once (making one asks
  twice whether the store is a protocol's: ~26 us, a copy ~3 us). The child's first
  checkpoint carries a snapshot of its state (here a list of up to 600 items). Then, with
  the encoder's flat paths (a long list of ints or of flat dicts checked and copied whole;
  two base/new pairs, load ~1.5): an inlined node run 27.6-30.3 -> 25.5-28.3 us, an entry
  103-127 -> 69-87 us (3.7-4.2 -> 2.7-3.1 node runs).

What is left without a checkpointer is the child's own run state (~1.5 us), starting and
ending its loop (~2 us), and renumbering its trace and counting it in the parent's (~1 us).
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal, TypedDict

from corral import END, End, Graph, Guard, MemorySaver

ENTRIES = 200
REPEATS = 15


class State(TypedDict):
    log: Annotated[list[int], operator.add]


def best(func: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Return the least CPU time of ``func`` over ``repeats`` calls.

    CPU time, not wall time: on a machine shared with other work, the time this process
    waits for a core is not the engine's cost.
    """
    times = []
    for _ in range(repeats):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


def chain(g: Graph[State], last: str | None) -> None:
    """Register a → b → c on ``g``; ``c`` goes to ``last`` (or has a router added later)."""

    @g.node(start=True, then="b")
    def a(state: State) -> dict[str, Any]:
        return {"log": [1]}

    @g.node(then="c")
    def b(state: State) -> dict[str, Any]:
        return {"log": [2]}

    @g.node(then=last)
    def c(state: State) -> dict[str, Any]:
        return {"log": [3]}


def inlined() -> Graph[State]:
    g = Graph(State, max_steps=10 * ENTRIES)
    chain(g, None)

    @g.router("c", guards=[Guard("a", max=ENTRIES - 1, otherwise=END)])
    def again(state: State) -> Literal["a"] | End:
        return "a"

    return g


def nested() -> Graph[State]:
    child = Graph(State)
    chain(child, END)
    g = Graph(State, max_steps=10 * ENTRIES)
    g.subgraph("work", child, start=True)

    @g.router("work", guards=[Guard("work", max=ENTRIES - 1, otherwise=END)])
    def again(state: State) -> Literal["work"] | End:
        return "work"

    return g


def measure(checkpointed: bool) -> tuple[float, float]:
    """Return the inlined and the subgraph times of one whole run."""
    plain, sub = inlined(), nested()
    if checkpointed:
        apps = (plain.compile(checkpointer=MemorySaver()), sub.compile(checkpointer=MemorySaver()))
    else:
        apps = (plain.compile(), sub.compile())
    for app in apps:
        run = app.invoke({})
        assert run.steps == 3 * ENTRIES and len(run.state["log"]) == 3 * ENTRIES
    # Interleaved, so that a machine loaded by others slows both sides alike.
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEATS):
        for app, spent in zip(apps, times, strict=True):
            spent.append(best(partial(app.invoke, {}), 1))
    return min(times[0]), min(times[1])


def main() -> None:
    for checkpointed in (False, True):
        t_inline, t_sub = measure(checkpointed)
        per_run = t_inline / (3 * ENTRIES)
        per_entry = (t_sub - t_inline) / ENTRIES
        label = "MemorySaver" if checkpointed else "no checkpointer"
        print(
            f"{label:>16}: inlined {t_inline * 1e3:7.2f} ms, subgraph {t_sub * 1e3:7.2f} ms "
            f"({t_sub / t_inline:4.2f}x); one entry costs {per_entry * 1e6:6.1f} us = "
            f"{per_entry / per_run:4.1f} node runs ({per_run * 1e6:.1f} us each)"
        )


if __name__ == "__main__":
    main()
