"""``invoke`` and ``ainvoke`` agree: the sync and the async driver run the same core.

On random graphs (routers, guards with ``otherwise``, ``max_runs``, ``Command`` nodes that may
return no ``goto``, ``Send`` fan-outs, ``wait_for`` joins, ``interrupt()``, cap errors),
``invoke`` and ``ainvoke`` give the same ``Run`` (or the same error), the same trace and
``updates`` stream and, with a ``MemorySaver``, the same sequence of checkpoints.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral import END, Command, CompiledGraph, CorralError, MemorySaver, Resume, Send, interrupt
from corral.checkpoint.base import Checkpoint
from corral.spec import GraphSpec, Guard, KeySpec, Location, NodeSpec, RouterSpec, TargetSet

FILE = "random_graph.py"


# --------------------------------------------------------------------------- random graphs


def _pick(state: Any, options: tuple[str, ...], salt: int) -> str:
    """Choose one of ``options`` from the state: deterministic, varied along the run."""
    index = (len(state["log"]) * 7 + state["n"] + salt) % len(options)
    return options[index]


def _node(name: str, *, asks: bool, command: tuple[str, ...] | None, counts: bool) -> Any:
    def run(state: Any) -> Any:
        if not isinstance(state, dict):  # a Send's argument
            return {"log": [f"{name}:{state}"]}
        entry = name
        if asks and state["log"].count(name) % 2 == 0:
            entry = f"{name}={interrupt(name)}"
        update: dict[str, Any] = {"log": [entry]}
        if counts:
            update["n"] = state["n"] + 1
        if command is None:
            return update
        choice = len(state["log"]) % (len(command) + 1)
        if choice == len(command):
            return update if choice % 2 else None  # no goto: the branch ends here
        return Command(update=update, goto=command[choice])

    run.__name__ = name
    return run


def _router(options: tuple[str, ...], how: str, salt: int) -> Any:
    def route(state: Any) -> Any:
        first = _pick(state, options, salt)
        if how == "one":
            return first
        if how == "many":
            second = _pick(state, options, salt + 1)
            return [first] if first == second else [first, second]
        return [Send(first, len(state["log"])), Send(first, state["n"])]

    return route


@st.composite
def random_specs(draw: st.DrawFn) -> GraphSpec:
    """Draw a random runnable graph over nodes n0..nk (n0 starts; only n0 writes ``n``)."""
    count = draw(st.integers(1, 5))
    names = [f"n{i}" for i in range(count)]
    nodes: list[NodeSpec] = []
    routers: list[RouterSpec] = []
    joins = set(draw(st.lists(st.sampled_from(names[1:] or ["-"]), max_size=1))) - {"-"}
    for index, name in enumerate(names):
        where = Location(FILE, index * 10 + 1, 1)
        way = draw(st.sampled_from(["then", "router", "many", "send", "command", "none"]))
        outs = tuple(
            draw(st.lists(st.sampled_from([*names, END]), min_size=1, max_size=3, unique=True))
        )
        if way == "send":
            outs = tuple(t for t in outs if t != END and t not in joins) or (END,)
            if outs == (END,):
                way = "one"
        guards = tuple(
            Guard(
                t,
                max=draw(st.sampled_from([2, 1, 0])),
                otherwise=draw(st.sampled_from([None, END, *names])),
            )
            for t in outs
            if t != END and way != "send" and draw(st.booleans())
        )
        wait_for: tuple[str, ...] = ()
        if name in joins:
            wait_for = tuple(
                draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
            )
        func = _node(
            name,
            asks=draw(st.integers(0, 7)) == 7,
            command=outs if way == "command" else None,
            counts=index == 0,
        )
        common: dict[str, Any] = {
            "start": index == 0 or draw(st.integers(0, 5)) == 5,
            "max_runs": draw(st.sampled_from([None, None, None, 1, 3])),
            "wait_for": wait_for,
        }
        if way == "then":
            nodes.append(NodeSpec(name, func, where, then=outs, guards=guards, **common))
        elif way == "command":
            nodes.append(
                NodeSpec(name, func, where, command=TargetSet(outs), guards=guards, **common)
            )
        elif way in ("router", "many", "send", "one"):
            nodes.append(NodeSpec(name, func, where, **common))
            how = {"router": "one", "one": "one", "many": "many", "send": "send"}[way]
            targets = TargetSet(outs, many=how != "one", sends=outs if how == "send" else ())
            route = _router(outs, how, index)
            routers.append(RouterSpec(name, f"route_{name}", route, where, targets, guards=guards))
        else:
            nodes.append(NodeSpec(name, func, where, **common))
    return GraphSpec(
        name="random",
        location=Location(FILE, 0, 1),
        keys=(KeySpec("n", int), KeySpec("log", list[str], operator.add, [])),
        nodes=tuple(nodes),
        routers=tuple(routers),
        max_steps=draw(st.sampled_from([25, 12, 4])),
    )


# --------------------------------------------------------------------------- both drivers


def _outcome(call: Callable[[], Any], runs: list[Any] | None = None) -> Any:
    """Return what a run gives: its facts, or the error's type, message and facts."""
    try:
        run = call()
        if runs is not None:
            runs.append(run)
    except CorralError as err:
        facts = {k: v for k, v in vars(err).items() if not k.startswith("_")}
        return ("error", type(err).__name__, str(err), facts)
    trace = [(t.step, t.node, t.update) for t in run.trace]
    return (
        "run",
        run.state,
        run.steps,
        run.supersteps,
        run.status,
        run.guards,
        [(i.node, i.value, i.when) for i in run.interrupts],
        trace,
    )


def _updates(app: CompiledGraph[Any], how: str) -> Any:
    try:
        if how == "async":

            async def collect() -> list[Any]:
                return [item async for item in app.astream({"n": 0, "log": []})]

            return asyncio.run(collect())
        return list(app.stream({"n": 0, "log": []}))
    except CorralError as err:
        return ("error", type(err).__name__, str(err))


def _checkpoints(saver: MemorySaver, thread_id: str) -> list[Any]:
    """Return a thread's checkpoints as comparable data (ids differ by a random suffix)."""
    ids: dict[str, int] = {}

    def seq(checkpoint_id: str | None) -> int | None:
        return None if checkpoint_id is None else ids.setdefault(checkpoint_id, len(ids))

    out = []
    for checkpoint in reversed(list(saver.checkpoints(thread_id))):
        assert isinstance(checkpoint, Checkpoint)
        out.append(
            (
                seq(checkpoint.checkpoint_id),
                seq(checkpoint.parent_id),
                checkpoint.snapshot,
                checkpoint.writes,
                {k: v for k, v in checkpoint.meta.items() if k != "time"},  # when: differs
            )
        )
    return out


def _invoke(app: CompiledGraph[Any], how: str, value: Any) -> Any:
    if how == "async":
        return asyncio.run(app.ainvoke(value, thread_id="t"))
    return app.invoke(value, thread_id="t")


def _resumed_until_done(app: CompiledGraph[Any], how: str) -> Iterator[Any]:
    """Run thread 't' from the input, answering each pause, for at most five rounds."""
    value: Any = {"n": 0, "log": []}
    runs: list[Any] = []
    for round_ in range(5):
        outcome = _outcome(lambda value=value: _invoke(app, how, value), runs)
        yield outcome
        if outcome[0] != "run" or outcome[4] != "interrupted":
            return
        value = Resume({i.id: f"yes{round_}" for i in runs[-1].interrupts})


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=random_specs())
def test_invoke_and_ainvoke_agree_on_random_graphs(spec: GraphSpec) -> None:
    """invoke and ainvoke give the same runs, update streams and checkpoints."""
    app: CompiledGraph[Any] = CompiledGraph(spec)
    via_sync = _outcome(lambda: app.invoke({"n": 0, "log": []}))
    via_async = _outcome(lambda: asyncio.run(app.ainvoke({"n": 0, "log": []})))
    assert via_sync == via_async
    assert _updates(app, "sync") == _updates(app, "async")
    if via_sync[0] == "run":
        assert _updates(app, "sync") == [(node, update or {}) for _, node, update in via_sync[7]]

    saved: list[Any] = []
    for how in ("sync", "async"):
        saver = MemorySaver()
        with_saver: CompiledGraph[Any] = CompiledGraph(spec, checkpointer=saver)
        rounds = list(_resumed_until_done(with_saver, how))
        saved.append((rounds, _checkpoints(saver, "t")))
    assert saved[0] == saved[1]
