"""Runtime overhead against hand-written loops, measured in one process.

(a) per node run: ``invoke`` of a 2,000-run counter loop (one node, a guarded router back to
    itself) against a ~20-line hand-written loop (dict of nodes, dict of routes, reducer
    merge, cap check before each run);
(b) per superstep: a 3-way fan-out, a reducer merge and a join, looped 100 times, against a
    hand-written superstep loop doing the same work.

Each figure is the best of several repeats; the ratio is what matters (both sides run in
this process on this machine). Run: ``python benchmarks/bench_runtime.py``.
"""

from __future__ import annotations

import operator
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from corral import END, End, Graph, Guard

RUNS = 2_000
LAPS = 100
REPEATS = 7


def best(func: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Return the best wall time of ``func`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


# ----------------------------------------------------------------------------- (a) counter


class Count(TypedDict):
    n: int


def counter_app() -> Any:
    g = Graph(Count, max_steps=RUNS + 1)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=RUNS + 1)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= RUNS else "count"

    return g.compile()


def hand_counter() -> dict[str, Any]:
    """The hand-written loop: nodes, routes, reducer merge, cap check before each run."""
    nodes = {"count": lambda s: {"n": s["n"] + 1}}
    routes = {"count": lambda s: END if s["n"] >= RUNS else "count"}
    reducers: dict[str, Any] = {"n": None}
    state: dict[str, Any] = {"n": 0}
    current, steps, max_steps = "count", 0, RUNS + 1
    while current != END:
        if steps >= max_steps:
            raise RuntimeError("cap")
        update = nodes[current](state)
        steps += 1
        for key, value in update.items():
            reducer = reducers[key]
            state[key] = reducer(state[key], value) if reducer else value
        current = routes[current](state)
    assert state["n"] == RUNS
    return state


# ----------------------------------------------------------------------------- (b) fan-out


class Fan(TypedDict):
    lap: int
    found: Annotated[list[str], operator.add]


def fanout_app() -> Any:
    g = Graph(Fan, max_steps=10 * LAPS)

    @g.node(start=True, then=("a", "b", "c"))
    def plan(state: Fan) -> dict[str, object]:
        return {"lap": state["lap"] + 1}

    @g.node(then="join")
    def a(state: Fan) -> dict[str, object]:
        return {"found": ["a"]}

    @g.node(then="join")
    def b(state: Fan) -> dict[str, object]:
        return {"found": ["b"]}

    @g.node(then="join")
    def c(state: Fan) -> dict[str, object]:
        return {"found": ["c"]}

    @g.node(wait_for=("a", "b", "c"))
    def join(state: Fan) -> None:
        return None

    @g.router("join", guards=[Guard("plan", max=LAPS)])
    def again(state: Fan) -> Literal["plan"] | End:
        return END if state["lap"] >= LAPS else "plan"

    return g.compile()


def hand_fanout() -> dict[str, Any]:
    """A hand-written superstep loop: run the active set, merge in order, route, de-dup."""
    nodes: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
        "plan": lambda s: {"lap": s["lap"] + 1},
        "a": lambda s: {"found": ["a"]},
        "b": lambda s: {"found": ["b"]},
        "c": lambda s: {"found": ["c"]},
        "join": lambda s: None,
    }
    routes: dict[str, Callable[[dict[str, Any]], tuple[str, ...]]] = {
        "plan": lambda s: ("a", "b", "c"),
        "a": lambda s: ("join",),
        "b": lambda s: ("join",),
        "c": lambda s: ("join",),
        "join": lambda s: (END,) if s["lap"] >= LAPS else ("plan",),
    }
    reducers: dict[str, Any] = {"lap": None, "found": operator.add}
    state: dict[str, Any] = {"lap": 0, "found": []}
    active, steps, supersteps, max_steps = ["plan"], 0, 0, 10 * LAPS
    while active:
        updates = []
        for name in active:
            if steps >= max_steps:
                raise RuntimeError("cap")
            updates.append((name, nodes[name](state)))
            steps += 1
        new = dict(state)
        for _, update in updates:
            for key, value in (update or {}).items():
                reducer = reducers[key]
                new[key] = reducer(new[key], value) if reducer else value
        state = new
        following: list[str] = []
        for name, _ in updates:
            for target in routes[name](state):
                if target != END and target not in following:
                    following.append(target)
        active = following
        supersteps += 1
    assert len(state["found"]) == 3 * LAPS
    return {"state": state, "supersteps": supersteps}


def main() -> int:
    counter = counter_app()
    run = counter.invoke({"n": 0})
    assert run.steps == RUNS and run.state["n"] == RUNS
    hand_a = best(hand_counter) / RUNS
    corral_a = best(lambda: counter.invoke({"n": 0})) / RUNS

    fan = fanout_app()
    fan_run = fan.invoke({"lap": 0})
    hand_run = hand_fanout()
    assert fan_run.state == hand_run["state"], (fan_run.state, hand_run["state"])
    supersteps = fan_run.supersteps
    assert supersteps == hand_run["supersteps"]
    hand_b = best(hand_fanout) / supersteps
    corral_b = best(lambda: fan.invoke({"lap": 0})) / supersteps

    print(f"python {sys.version.split()[0]}")
    print(
        f"(a) counter, {RUNS} node runs: hand loop {hand_a * 1e6:.2f} us/run, "
        f"corral {corral_a * 1e6:.2f} us/run, ratio {corral_a / hand_a:.1f}x"
    )
    print(
        f"(b) fan-out+merge+join, {LAPS} laps = {supersteps} supersteps: hand loop "
        f"{hand_b * 1e6:.2f} us/superstep, corral {corral_b * 1e6:.2f} us/superstep, "
        f"ratio {corral_b / hand_b:.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
