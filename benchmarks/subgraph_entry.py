"""Subgraph entry: entering a child graph, against the same nodes written into the parent.

Both graphs run the chain ``a → b → c`` (each node appending to a list through
``operator.add``) 200 times in a guarded loop: inlined, the three nodes are the parent's
and a router after ``c`` loops back to ``a``; as a subgraph, they are a child graph and the
parent's one node is ``g.subgraph("work", child)`` with a router looping back to it. An
entry's cost is the difference of the two runs divided by the entries, in units of one
inlined node run; without a checkpointer (the limit) and with a ``MemorySaver``, where an
entry also writes the child's own checkpoints. Least CPU time of interleaved repeats.

An entry's cost holds the parent's own superstep for ``work`` (its router included), the
child's own run (its run state and core, its loop started and ended; its node runs take
their step numbers and names from the parent as they run, so nothing is renamed after) and
the merge of the child's three writes through the parent's reducers, which copies the
growing list again (``operator.add``): it grows with the state the child writes to.
"""

from __future__ import annotations

import operator
import time
from functools import partial
from typing import Annotated, Any, Literal, TypedDict

from _shared import Report, Row, command, least_times, python_version

from corral import END, End, Graph, Guard, MemorySaver

ENTRIES = 200


class State(TypedDict):
    log: Annotated[list[int], operator.add]


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


def entry_cost(repeats: int, checkpointed: bool) -> tuple[float, float]:
    """Return an entry's cost in inlined node runs, and an inlined node run's seconds."""
    plain, sub = inlined(), nested()
    apps = [
        g.compile(checkpointer=MemorySaver()) if checkpointed else g.compile() for g in (plain, sub)
    ]
    for app in apps:
        run = app.invoke({})
        assert run.steps == 3 * ENTRIES and len(run.state["log"]) == 3 * ENTRIES
    flat, entered = least_times(
        *(partial(app.invoke, {}) for app in apps), repeats=repeats, clock=time.process_time
    )
    per_run = flat / (3 * ENTRIES)
    return (entered - flat) / ENTRIES / per_run, per_run


def measure(quick: bool) -> Report:
    repeats = 5 if quick else 15
    bare, bare_run = entry_cost(repeats, checkpointed=False)
    saved, saved_run = entry_cost(repeats, checkpointed=True)
    return Report(
        rows=[Row("a subgraph entry", bare, 3, "node runs")],
        notes=[
            f"an inlined node run: {bare_run * 1e6:.1f} us without a checkpointer, "
            f"{saved_run * 1e6:.1f} us with a MemorySaver; an entry with a MemorySaver "
            f"costs {saved:.1f} node runs",
            f"least CPU time of {repeats} interleaved repeats (python {python_version()})",
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
