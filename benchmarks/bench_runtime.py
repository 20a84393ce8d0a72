"""Runtime overhead against hand-written loops, measured in one process.

(a) per node run: ``invoke`` of a 2,000-run counter loop (one node, a guarded router back to
    itself) against a ~20-line hand-written loop (dict of nodes, dict of routes, reducer
    merge, cap check before each run); (a') the same with a 20-item list of strings in the
    state that the node does not read, and (a'') that the node reads at every run (the
    hand loop reads it too, without a copy);
(b) per superstep: a 3-way fan-out, a reducer merge and a join, looped 100 times, against a
    hand-written superstep loop doing the same work.

Each figure is the least thread CPU time over several repeats, the sides of a ratio taking
turns in each repeat, so that a machine loaded by other processes slows both alike; the
ratio is what matters (both sides run in this process on this machine). Run:
``python benchmarks/bench_runtime.py``.

When ``langgraph`` can be imported (a scratch environment, never a dependency of corral:
``python -m venv /tmp/lg && /tmp/lg/bin/pip install langgraph -e .``), the same two graphs
are also run on LangGraph in the same process and reported against the same hand loops.
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
REPEATS = 40


def best(*funcs: Callable[[], Any], repeats: int = REPEATS) -> list[float]:
    """Return the least thread CPU time of each of ``funcs``, called in turn ``repeats`` times."""
    times = [float("inf")] * len(funcs)
    for _ in range(repeats):
        for index, func in enumerate(funcs):
            start = time.thread_time()
            func()
            times[index] = min(times[index], time.thread_time() - start)
    return times


# ----------------------------------------------------------------------------- (a) counter


class Count(TypedDict):
    n: int


class CountWithList(TypedDict):
    n: int
    notes: list[str]


def counter_app(schema: Any = Count, *, reads: bool = False) -> Any:
    g = Graph(schema, max_steps=RUNS + 1)

    if reads:

        @g.node(start=True)
        def count(state: CountWithList) -> dict[str, object]:
            return {"n": state["n"] + len(state["notes"]) // 20}

    else:

        @g.node(start=True)
        def count(state: Count) -> dict[str, object]:
            return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=RUNS + 1)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= RUNS else "count"

    return g.compile()


def hand_counter(reads: bool = False) -> dict[str, Any]:
    """The hand-written loop: nodes, routes, reducer merge, cap check before each run."""
    if reads:
        nodes = {"count": lambda s: {"n": s["n"] + len(s["notes"]) // 20}}
    else:
        nodes = {"count": lambda s: {"n": s["n"] + 1}}
    routes = {"count": lambda s: END if s["n"] >= RUNS else "count"}
    reducers: dict[str, Any] = {"n": None}
    state: dict[str, Any] = {"n": 0, "notes": ["x"] * 20}
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


# ----------------------------------------------------------------------------- LangGraph


def langgraph_apps() -> tuple[Any, Any] | None:
    """Build the same two graphs on LangGraph, when it is installed."""
    try:
        from langgraph.graph import END as LG_END
        from langgraph.graph import START as LG_START
        from langgraph.graph import StateGraph
    except ImportError:
        return None

    counter = StateGraph(Count)
    counter.add_node("count", lambda s: {"n": s["n"] + 1})
    counter.add_edge(LG_START, "count")
    counter.add_conditional_edges(
        "count", lambda s: LG_END if s["n"] >= RUNS else "count", ["count", LG_END]
    )

    fan = StateGraph(Fan)
    fan.add_node("plan", lambda s: {"lap": s["lap"] + 1})
    fan.add_node("a", lambda s: {"found": ["a"]})
    fan.add_node("b", lambda s: {"found": ["b"]})
    fan.add_node("c", lambda s: {"found": ["c"]})
    fan.add_node("join", lambda s: {})
    fan.add_edge(LG_START, "plan")
    for branch in ("a", "b", "c"):
        fan.add_edge("plan", branch)
    fan.add_edge(["a", "b", "c"], "join")
    fan.add_conditional_edges(
        "join", lambda s: LG_END if s["lap"] >= LAPS else "plan", ["plan", LG_END]
    )
    return counter.compile(), fan.compile()


def main() -> int:
    counter = counter_app()
    run = counter.invoke({"n": 0})
    assert run.steps == RUNS and run.state["n"] == RUNS
    # The same loop with a list in the state: nodes then get the copy-on-read StateView
    # instead of the FlatView an all-immutable state allows.
    listed = counter_app(CountWithList)
    hand_a, corral_a, corral_a2 = (
        t / RUNS
        for t in best(
            hand_counter,
            lambda: counter.invoke({"n": 0}),
            lambda: listed.invoke({"n": 0, "notes": ["x"] * 20}),
        )
    )
    # And a node that reads the list at every run: it gets its own copy each time.
    reader = counter_app(CountWithList, reads=True)
    assert reader.invoke({"n": 0, "notes": ["x"] * 20}).state["n"] == RUNS
    hand_a3, corral_a3 = (
        t / RUNS
        for t in best(
            lambda: hand_counter(reads=True),
            lambda: reader.invoke({"n": 0, "notes": ["x"] * 20}),
        )
    )

    fan = fanout_app()
    fan_run = fan.invoke({"lap": 0})
    hand_run = hand_fanout()
    assert fan_run.state == hand_run["state"], (fan_run.state, hand_run["state"])
    supersteps = fan_run.supersteps
    assert supersteps == hand_run["supersteps"]
    hand_b, corral_b = (t / supersteps for t in best(hand_fanout, lambda: fan.invoke({"lap": 0})))

    lg = langgraph_apps()
    lg_a = lg_b = None
    if lg is not None:
        lg_counter, lg_fan = lg
        config = {"recursion_limit": 10 * RUNS}
        assert lg_counter.invoke({"n": 0}, config)["n"] == RUNS
        assert lg_fan.invoke({"lap": 0, "found": []}, config) == fan_run.state
        lg_a = best(lambda: lg_counter.invoke({"n": 0}, config), repeats=3)[0] / RUNS
        lg_b = (
            best(lambda: lg_fan.invoke({"lap": 0, "found": []}, config), repeats=3)[0] / supersteps
        )

    print(f"python {sys.version.split()[0]}")
    print(
        f"(a) counter, {RUNS} node runs: hand loop {hand_a * 1e6:.2f} us/run, "
        f"corral {corral_a * 1e6:.2f} us/run, ratio {corral_a / hand_a:.1f}x"
    )
    print(
        f"(a') the same with a 20-item list in the state: corral {corral_a2 * 1e6:.2f} us/run, "
        f"ratio {corral_a2 / hand_a:.1f}x"
    )
    print(
        f"(a'') the node reads the 20-item list at every run: hand loop "
        f"{hand_a3 * 1e6:.2f} us/run, corral {corral_a3 * 1e6:.2f} us/run, "
        f"ratio {corral_a3 / hand_a3:.1f}x"
    )
    print(
        f"(b) fan-out+merge+join, {LAPS} laps = {supersteps} supersteps: hand loop "
        f"{hand_b * 1e6:.2f} us/superstep, corral {corral_b * 1e6:.2f} us/superstep, "
        f"ratio {corral_b / hand_b:.1f}x"
    )
    if lg_a is not None and lg_b is not None:
        import importlib.metadata

        version = importlib.metadata.version("langgraph")
        print(
            f"LangGraph {version}, same graphs: (a) {lg_a * 1e6:.1f} us/run, ratio "
            f"{lg_a / hand_a:.0f}x; (b) {lg_b * 1e6:.1f} us/superstep, ratio {lg_b / hand_b:.0f}x"
        )
    else:
        print("LangGraph: not installed here (optional; see the module docstring)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
