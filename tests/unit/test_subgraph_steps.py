"""Step numbers inside subgraphs: a node run's ``ctx.step`` is its step in ``run.trace`` and
its events, at any depth, under every driver, in fan-outs of entries and after a resume."""

from __future__ import annotations

import asyncio
import operator
from types import SimpleNamespace
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, Context, Cost, Graph, MemorySaver, Resume, Send, StepLimitError, interrupt
from corral.runtime.events import Event, NodeEnd, NodeStart


class State(TypedDict):
    topic: str
    seen: Annotated[list[tuple[str, int]], operator.add]


class Outer(TypedDict):
    topic: str
    seen: Annotated[list[tuple[str, int]], operator.add]
    secret: str


def step_node(g: Graph[Any], name: str, **options: Any) -> None:
    """Register ``name`` on ``g``: it records its ``ctx.node`` and ``ctx.step``."""

    def record(state: Any, ctx: Context) -> dict[str, Any]:
        return {"seen": [(ctx.node, ctx.step)]}

    record.__name__ = name
    g.node(name, **options)(record)


def two_levels() -> Graph[State]:
    """a -> outer (c1 -> inner (d1 -> d2) -> c2) -> b."""
    inner = Graph(State, name="inner")
    step_node(inner, "d1", start=True, then="d2")
    step_node(inner, "d2", then=END)
    mid = Graph(State, name="mid")
    step_node(mid, "c1", start=True, then="inner")
    mid.subgraph("inner", inner, then="c2")
    step_node(mid, "c2", then=END)
    g = Graph(State)
    step_node(g, "a", start=True, then="outer")
    g.subgraph("outer", mid, then="b")
    step_node(g, "b", then=END)
    return g


def fan_out() -> Graph[State]:
    """a sends three entries of work (w1 -> w2) beside a plain sibling p, then b."""
    child = Graph(State, name="work")
    step_node(child, "w1", start=True, then="w2")
    step_node(child, "w2", then=END)
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a")
    def spread(state: State) -> list[Send[Literal["work", "p"]]]:
        return [
            *(Send("work", {"topic": t, "seen": []}) for t in "xyz"),
            Send("p", {"topic": "", "seen": []}),
        ]

    g.subgraph("work", child, then="b")
    step_node(g, "p", then="b")
    step_node(g, "b", then=END)
    return g


def run(app: Any, how: str, start: Any, **kwargs: Any) -> tuple[Any, list[Event]]:
    """Run ``app`` with ``how``; return the run's state (``state``, ``trace`` is ``[]`` for a
    stream, which yields the last values) and its events."""
    seen: list[Event] = []
    if how == "invoke":
        return app.invoke(start, on_event=seen.append, **kwargs), seen
    if how == "ainvoke":
        return asyncio.run(app.ainvoke(start, on_event=seen.append, **kwargs)), seen
    if how == "stream":
        items = list(app.stream(start, mode=["events", "values"], **kwargs))
    else:

        async def drain() -> list[Any]:
            return [i async for i in app.astream(start, mode=["events", "values"], **kwargs)]

        items = asyncio.run(drain())
    last = [item for mode, item in items if mode == "values"][-1]
    return SimpleNamespace(state=last, trace=[]), [e for mode, e in items if mode == "events"]


def steps_agree(seen: list[tuple[str, int]], events: list[Event], run: Any = None) -> None:
    """Each node run's ``(ctx.node, ctx.step)`` is its trace record's and its events':
    the step numbers are those of the run, one per node run."""
    ends = {e.step: e.node for e in events if isinstance(e, NodeEnd)}
    assert sorted(step for _, step in seen) == sorted(ends) == list(range(1, len(seen) + 1))
    assert all(ends[step].rpartition("/")[2] == node for node, step in seen)
    if run is not None and run.trace:
        assert {r.step: r.node for r in run.trace} == ends


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
def test_ctx_step_is_the_runs_step_two_subgraphs_deep(how: str) -> None:
    """a=1, outer/c1=2, outer/inner/d1=3, outer/inner/d2=4, outer/c2=5, b=6."""
    result, events = run(two_levels().compile(), how, {"topic": "", "seen": []})
    starts = [(e.node, e.step) for e in events if isinstance(e, NodeStart)]
    runs = [s for s in starts if s[0] not in ("outer", "outer/inner")]
    assert runs == [
        ("a", 1),
        ("outer/c1", 2),
        ("outer/inner/d1", 3),
        ("outer/inner/d2", 4),
        ("outer/c2", 5),
        ("b", 6),
    ]
    assert result.state["seen"] == [
        ("a", 1),
        ("c1", 2),
        ("d1", 3),
        ("d2", 4),
        ("c2", 5),
        ("b", 6),
    ]
    steps_agree(result.state["seen"], events, result)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("saver", [None, "memory"])
def test_entries_sharing_a_superstep_take_distinct_steps_their_nodes_see(
    how: str, saver: str | None
) -> None:
    """Three entries of work beside p: p is step 2, the six child runs 3..8, b 9."""
    app = fan_out().compile(checkpointer=MemorySaver() if saver else None)
    kwargs = {"thread_id": "t"} if saver else {}
    result, events = run(app, how, {"topic": "", "seen": []}, **kwargs)
    seen = result.state["seen"]
    assert len(seen) == 8 and ("p", 2) in seen and ("b", 9) in seen
    steps_agree([("a", 1), *seen], events, result)


def asking() -> Graph[State]:
    """go -> sub (c1 -> ask, which asks a person -> c3) -> done."""
    child = Graph(State, name="child")
    step_node(child, "c1", start=True, then="ask")

    @child.node(then="c3")
    def ask(state: State, ctx: Context) -> dict[str, Any]:
        interrupt("ok?")
        return {"seen": [(ctx.node, ctx.step)]}

    step_node(child, "c3", then=END)
    g = Graph(State)
    step_node(g, "go", start=True, then="sub")
    g.subgraph("sub", child, then="done")
    step_node(g, "done", then=END)
    return g


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_resumed_childs_node_runs_see_the_steps_the_trace_gives_them(how: str) -> None:
    """Paused in sub/ask after go=1 and sub/c1=2: resumed, ask=3, c3=4, done=5."""
    app = asking().compile(checkpointer=MemorySaver())
    paused, _ = run(app, how, {"topic": "", "seen": []}, thread_id="t")
    assert paused.status == "interrupted"
    assert [(r.node, r.step) for r in paused.trace] == [("go", 1), ("sub/c1", 2)]
    done, events = run(app, how, Resume("yes"), thread_id="t")
    assert done.state["seen"] == [("go", 1), ("c1", 2), ("ask", 3), ("c3", 4), ("done", 5)]
    assert [(r.node, r.step) for r in done.trace] == [  # the node runs of this call
        ("sub/ask", 3),
        ("sub/c3", 4),
        ("done", 5),
    ]
    assert [(e.node, e.step) for e in events if isinstance(e, NodeEnd)] == [
        ("sub/ask", 3),
        ("sub/c3", 4),
        ("done", 5),
    ]


def test_a_child_continued_after_a_failure_numbers_on_from_its_finished_runs() -> None:
    """sub/c2 fails once: continued, it runs as step 3 (after go=1, sub/c1=2), c3 is 4."""
    failures = [RuntimeError("flaky")]
    child = Graph(State, name="child")
    step_node(child, "c1", start=True, then="c2")

    @child.node(then="c3")
    def c2(state: State, ctx: Context) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return {"seen": [(ctx.node, ctx.step)]}

    step_node(child, "c3", then=END)
    g = Graph(State)
    step_node(g, "go", start=True, then="sub")
    g.subgraph("sub", child, then="done")
    step_node(g, "done", then=END)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(Exception, match="flaky"):
        app.invoke({"topic": "", "seen": []}, thread_id="t")
    done = app.invoke(None, thread_id="t")
    assert done.state["seen"] == [("go", 1), ("c1", 2), ("c2", 3), ("c3", 4), ("done", 5)]
    assert [(r.node, r.step) for r in done.trace][-3:] == [
        ("sub/c2", 3),
        ("sub/c3", 4),
        ("done", 5),
    ]


def test_a_child_node_and_a_parent_node_of_one_name_keep_their_own_spending() -> None:
    """x beside sub (whose node is x too) in one superstep, under ainvoke: each NodeEnd says
    what its own run spent."""
    child = Graph(State, name="child")

    @child.node(start=True, then=END, cost=Cost(tokens=100))
    async def x(state: State, ctx: Context) -> dict[str, Any]:
        ctx.spend(tokens=7)
        return {}

    g = Graph(State)

    @g.node("x", start=True, then=END, cost=Cost(tokens=100))
    async def parent_x(state: State, ctx: Context) -> dict[str, Any]:
        ctx.spend(tokens=3)
        return {}

    g.subgraph("sub", child, start=True, then=END)
    result, events = run(g.compile(), "ainvoke", {"topic": "", "seen": []})
    spent = {e.node: e.spent.tokens for e in events if isinstance(e, NodeEnd)}
    assert spent == {"x": 3, "sub/x": 7}
    assert result.spent.tokens == 10


def test_a_childs_step_limit_error_carries_the_parents_state() -> None:
    """The parent's max_steps stops the child: err.state is the state of the run that
    stopped, the parent's (with its own key ``secret``)."""
    child = Graph(State, name="child")
    step_node(child, "c1", start=True, then="c2")
    step_node(child, "c2", then=END)
    g = Graph(Outer, max_steps=2)
    step_node(g, "a", start=True, then="sub")
    g.subgraph("sub", child, then=END)
    with pytest.raises(StepLimitError) as caught:
        g.compile().invoke({"topic": "t", "seen": [], "secret": "s"})
    assert caught.value.node == "sub/c2"
    assert caught.value.state == {"topic": "t", "seen": [("a", 1)], "secret": "s"}


@pytest.mark.parametrize(("cap", "node"), [(3, "mid/inner/d2"), (None, "mid/inner/d3")])
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_grandchilds_step_limit_error_carries_the_top_level_state(
    how: str, cap: int | None, node: str
) -> None:
    """Two levels down, the top level's max_steps (3) or the grandchild's own (2) stops the
    whole run: either way err.state is the top-level run's, not a child's."""
    inner = Graph(State, name="inner", max_steps=2)
    step_node(inner, "d1", start=True, then="d2")
    step_node(inner, "d2", then="d3")
    step_node(inner, "d3", then=END)
    mid = Graph(State, name="mid")
    step_node(mid, "c1", start=True, then="inner")
    mid.subgraph("inner", inner, then=END)
    g = Graph(Outer, max_steps=cap or 10)
    step_node(g, "a", start=True, then="mid")
    g.subgraph("mid", mid, then=END)
    with pytest.raises(StepLimitError) as caught:
        run(g.compile(), how, {"topic": "t", "seen": [], "secret": "s"})
    assert caught.value.node == node
    assert caught.value.state == {"topic": "t", "seen": [("a", 1)], "secret": "s"}


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_routers_ctx_step_is_the_step_of_the_node_whose_route_it_chooses(how: str) -> None:
    """Top level: s1 and s2 run side by side (steps 2 and 3), each router sees its node's
    step; inside sub (after a=1 and p=4), c1 is step 5 and its router sees 5."""
    routed: list[tuple[str, int]] = []
    child = Graph(State, name="child")
    step_node(child, "c1", start=True)
    step_node(child, "c2", then=END)

    @child.router("c1")
    def after_c1(state: State, ctx: Context) -> Literal["c2"]:
        routed.append((f"sub/{ctx.node}", ctx.step))
        return "c2"

    g = Graph(State)
    step_node(g, "a", start=True, then=("s1", "s2"))
    for name in ("s1", "s2"):
        step_node(g, name)

        def choose(state: State, ctx: Context) -> Literal["p"]:
            routed.append((ctx.node, ctx.step))
            return "p"

        g.router(name)(choose)
    step_node(g, "p", then="sub")
    g.subgraph("sub", child, then=END)
    result, events = run(g.compile(), how, {"topic": "", "seen": []})
    assert routed == [("s1", 2), ("s2", 3), ("sub/c1", 5)]
    steps_agree(result.state["seen"], events, result)
