"""Engine: what a run costs per trivial node run, against a hand-written loop.

The counter loop (one node adding 1, a guarded router back to itself, 2,000 node runs,
``invoke`` with no checkpointer) against a ~20-line hand-written loop that calls the node,
merges the update through the reducers, checks the cap and calls the router; and a 3-way
fan-out, a reducer merge and a join looped 100 times, against a hand-written superstep
loop doing the same work. The same counter loop compiled with ``telemetry=True`` and no
OpenTelemetry SDK configured must cost what it costs without. Figures are the least thread
CPU time over repeats, the sides taking turns; with LangGraph installed, the same graphs
run on it in the same process (the peer column).
"""

from __future__ import annotations

import importlib.metadata
import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from _shared import Report, Row, command, least_times, python_version

from corral import END, End, Graph, Guard

RUNS = 2_000
LAPS = 100


class Count(TypedDict):
    n: int


def counter_app(*, telemetry: bool = False) -> Any:
    g = Graph(Count, max_steps=RUNS + 1)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=RUNS + 1)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= RUNS else "count"

    return g.compile(telemetry=telemetry)


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


def hand_fanout() -> tuple[dict[str, Any], int]:
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
            updates.append(nodes[name](state))
            steps += 1
        new = dict(state)
        for update in updates:
            for key, value in (update or {}).items():
                reducer = reducers[key]
                new[key] = reducer(new[key], value) if reducer else value
        state = new
        following: list[str] = []
        for name in active:
            for target in routes[name](state):
                if target != END and target not in following:
                    following.append(target)
        active = following
        supersteps += 1
    return state, supersteps


def langgraph_apps() -> tuple[Any, Any, str] | None:
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
    for branch in ("a", "b", "c"):
        fan.add_node(branch, lambda s, b=branch: {"found": [b]})
        fan.add_edge("plan", branch)
    fan.add_node("join", lambda s: {})
    fan.add_edge(LG_START, "plan")
    fan.add_edge(["a", "b", "c"], "join")
    fan.add_conditional_edges(
        "join", lambda s: LG_END if s["lap"] >= LAPS else "plan", ["plan", LG_END]
    )
    return counter.compile(), fan.compile(), importlib.metadata.version("langgraph")


def measure(quick: bool) -> Report:
    repeats = 10 if quick else 40
    counter, traced = counter_app(), counter_app(telemetry=True)
    assert counter.invoke({"n": 0}).state["n"] == RUNS
    hand_a, corral_a, traced_a = least_times(
        hand_counter,
        lambda: counter.invoke({"n": 0}),
        lambda: traced.invoke({"n": 0}),
        repeats=repeats,
    )
    fan = fanout_app()
    hand_state, supersteps = hand_fanout()
    fan_run = fan.invoke({"lap": 0})
    assert fan_run.state == hand_state and fan_run.supersteps == supersteps
    hand_b, corral_b = least_times(hand_fanout, lambda: fan.invoke({"lap": 0}), repeats=repeats)
    peer_a = peer_b = ""
    lg = langgraph_apps()
    if lg is not None:
        lg_counter, lg_fan, version = lg
        config = {"recursion_limit": 10 * RUNS}
        assert lg_counter.invoke({"n": 0}, config)["n"] == RUNS
        assert lg_fan.invoke({"lap": 0, "found": []}, config) == fan_run.state
        (lg_a,) = least_times(lambda: lg_counter.invoke({"n": 0}, config), repeats=3)
        (lg_b,) = least_times(lambda: lg_fan.invoke({"lap": 0, "found": []}, config), repeats=3)
        peer_a = f"LangGraph {version}: {lg_a / hand_a:.0f}x"
        peer_b = f"LangGraph {version}: {lg_b / hand_b:.0f}x"
    return Report(
        rows=[
            Row("engine: a node run / the hand loop's", corral_a / hand_a, 12, "x", peer_a),
            Row(
                "engine: a fan-out superstep / the hand loop's", corral_b / hand_b, 12, "x", peer_b
            ),
            Row("telemetry on, no SDK / off", traced_a / corral_a, 1.2, "x"),
        ],
        notes=[
            f"counter loop, {RUNS} node runs: hand loop {hand_a / RUNS * 1e6:.2f} us a run, "
            f"corral {corral_a / RUNS * 1e6:.2f} us, with telemetry and no SDK "
            f"{traced_a / RUNS * 1e6:.2f} us",
            f"fan-out + merge + join, {supersteps} supersteps: hand loop "
            f"{hand_b / supersteps * 1e6:.2f} us a superstep, corral "
            f"{corral_b / supersteps * 1e6:.2f} us",
            f"least thread CPU time of {repeats} repeats, the sides in turn; "
            f"python {python_version()}",
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
