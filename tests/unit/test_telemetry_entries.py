"""Subgraph entries side by side: each child's spans under its own entry (issue 14, point 1).

A ``Send`` fan-out to a subgraph node, or two subgraph nodes in one superstep, runs several
entries in one superstep; under ``ainvoke`` their children run interleaved. Each child node
run's span must still be the child of its own ``corral.subgraph`` span, and the routes the
child takes (guards counted inside it) reach the parent's ``on_event`` and the entry's span.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

import pytest
from memory_spans import memory_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from corral import END, Graph, Guard, MemorySaver, Resume, Send, interrupt
from corral.runtime import Event, NodeStart, RouteTaken


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The process's in-memory exporter, emptied per test."""
    return memory_spans()


class Team(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def researcher(name: str = "researcher", *, loops: int = 0) -> Graph[Team]:
    """plan -> search (-> search again, ``loops`` times by a guard) -> END; async nodes that
    let the other entries run in between, so that entries interleave under ``ainvoke``."""
    child = Graph(Team, name=name)

    @child.node(start=True, then="search")
    async def plan(state: Team) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"notes": [f"plan {state['topic']}"]}

    @child.node(then=None if loops else END)
    async def search(state: Team) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"notes": [f"found {state['topic']}"]}

    if loops:

        @child.router("search", guards=[Guard("search", max=loops, otherwise=END)])
        def again(state: Team) -> Literal["search"]:
            return "search"

    return child


def fan_out(child: Graph[Team]) -> Graph[Team]:
    """brief sends one entry of ``research`` per topic, then write."""
    g = Graph(Team, name="fan")

    @g.node(start=True)
    def brief(state: Team) -> dict[str, object]:
        return {}

    @g.router("brief")
    def send(state: Team) -> list[Send[Literal["research"]]]:
        return [Send("research", {"topic": t, "notes": []}) for t in ("tides", "reefs", "kelp")]

    g.subgraph("research", child, then="write")

    @g.node(then=END)
    def write(state: Team) -> dict[str, object]:
        return {}

    return g


def _attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def _parent_of(span: Any) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _children(finished: Sequence[Any], parent: Any) -> list[str]:
    """Return the ``corral.node`` of the spans directly under ``parent``, sorted."""
    found = [s for s in finished if _parent_of(s) == parent.context.span_id]
    return sorted(_attrs(s)["corral.node"] for s in found)


def _run(app: Any, how: str, on_event: Any = None, **kwargs: Any) -> None:
    """Run ``app`` with ``invoke``, ``ainvoke`` or ``astream`` (to its end)."""
    start = {"topic": "", "notes": []}
    if how == "ainvoke":
        asyncio.run(app.ainvoke(start, on_event=on_event, **kwargs))
    elif how == "astream":

        async def drain() -> None:
            async for _ in app.astream(start, mode="events", on_event=on_event, **kwargs):
                pass

        asyncio.run(drain())
    else:
        app.invoke(start, on_event=on_event, **kwargs)


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "astream"])
@pytest.mark.parametrize("saver", [None, "memory"])
def test_each_entry_of_a_send_fan_out_has_its_own_child_spans(
    spans: InMemorySpanExporter, how: str, saver: str | None
) -> None:
    """Three entries of research: three corral.subgraph spans, each over one plan and one search."""
    app = fan_out(researcher()).compile(
        telemetry=True, checkpointer=MemorySaver() if saver else None
    )
    _run(app, how, thread_id="t" if saver else None)
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "corral.run"]
    assert _attrs(root)["corral.status"] == "done"
    steps_taken = _attrs(root)["corral.steps"]
    entries = [s for s in finished if s.name == "corral.subgraph"]
    assert len(entries) == 3
    for entry in entries:
        assert _parent_of(entry) == root.context.span_id
        assert _attrs(entry)["corral.send"] is True
        assert _children(finished, entry) == ["research/plan", "research/search"]
        for span in finished:
            if _parent_of(span) == entry.context.span_id:
                assert entry.start_time <= span.start_time <= span.end_time <= entry.end_time
    nodes = [s for s in finished if s.name == "corral.node"]
    assert len(nodes) == steps_taken == 8  # brief, 3 x (plan, search), write
    steps = sorted(_attrs(s)["corral.step"] for s in nodes)
    assert steps == list(range(1, steps_taken + 1))  # each node run numbered once


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_two_subgraph_nodes_in_one_superstep_each_nest_their_own_child(
    spans: InMemorySpanExporter, how: str
) -> None:
    """research and review run side by side; each child's node runs are under its own entry."""
    g = Graph(Team, name="two")

    @g.node(start=True, then=("research", "review"))
    def brief(state: Team) -> dict[str, object]:
        return {}

    g.subgraph("research", researcher(), then=END)
    g.subgraph("review", researcher("reviewer"), then=END)
    _run(g.compile(telemetry=True), how)
    finished = spans.get_finished_spans()
    entries = {_attrs(s)["corral.node"]: s for s in finished if s.name == "corral.subgraph"}
    assert sorted(entries) == ["research", "review"]
    assert _children(finished, entries["research"]) == ["research/plan", "research/search"]
    assert _children(finished, entries["review"]) == ["review/plan", "review/search"]


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "astream"])
def test_entries_of_a_fan_out_nest_their_own_inner_subgraph(
    spans: InMemorySpanExporter, how: str
) -> None:
    """Send fan-out to a graph that itself enters a subgraph: inner entries under their own."""
    desk = Graph(Team, name="desk")
    desk.subgraph("inner", researcher(), start=True, then=END)
    _run(fan_out(desk).compile(telemetry=True), how)
    finished = spans.get_finished_spans()
    entries = [s for s in finished if s.name == "corral.subgraph"]
    outer = [s for s in entries if _attrs(s)["corral.node"] == "research"]
    assert len(outer) == 3
    for entry in outer:
        [inner] = [s for s in entries if _parent_of(s) == entry.context.span_id]
        assert _attrs(inner)["corral.node"] == "research/inner"
        assert _attrs(inner)["corral.subgraph"] == "research"
        expected = ["research/inner/plan", "research/inner/search"]
        assert _children(finished, inner) == expected


# --------------------------------------------------------------------------- routes


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "astream"])
def test_a_childs_routes_and_guard_counts_reach_on_event_by_path(how: str) -> None:
    """Each entry's routes, guard counts and used-up guard are handed on, named by path."""
    seen: list[Event] = []
    app = fan_out(researcher(loops=2)).compile()
    _run(app, how, seen.append)
    entries = {e.step for e in seen if isinstance(e, NodeStart) and e.node == "research"}
    assert len(entries) == 3
    inside = [e for e in seen if isinstance(e, RouteTaken) and e.entry]
    for step in entries:
        routes = [(r.source, r.target, r.via, r.guard) for r in inside if r.entry == (step,)]
        assert routes == [
            ("research/plan", "research/search", "then", None),
            ("research/search", "research/search", "router", (1, 2)),
            ("research/search", "research/search", "router", (2, 2)),
            ("research/search", "research/__end__", "otherwise", (2, 2)),
        ]
    top = [(r.source, r.target) for r in seen if isinstance(r, RouteTaken) and not r.entry]
    assert top.count(("brief", "research")) == 3
    assert ("write", END) in top


def test_a_guard_used_up_inside_a_subgraph_is_an_event_of_its_entry_span(
    spans: InMemorySpanExporter,
) -> None:
    """The child's corral.route and corral.guard_used_up events sit on its entry's span."""
    asyncio.run(fan_out(researcher(loops=1)).compile(telemetry=True).ainvoke({"topic": ""}))
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "corral.run"]
    entries = [s for s in finished if s.name == "corral.subgraph"]
    for entry in entries:
        used_up = [_attrs(e) for e in entry.events if e.name == "corral.guard_used_up"]
        assert used_up == [
            {
                "corral.source": "research/search",
                "corral.target": "research/__end__",
                "corral.via": "otherwise",
                "corral.guard.count": 1,
                "corral.guard.max": 1,
            }
        ]
        assert len([e for e in entry.events if e.name == "corral.route"]) == 3
    assert not [e for e in root.events if e.name == "corral.guard_used_up"]
    assert all(not str(_attrs(e)["corral.source"]).startswith("research/") for e in root.events
               if e.name == "corral.route")  # fmt: skip


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_three_levels_deep_a_node_run_keeps_its_step_and_entries(how: str) -> None:
    """outer > inner > deep > work: work is step 1 (entering is no step), inside all three;
    a subgraph node's NodeStart names the entry it opens at every depth, the top one too."""
    leaf = Graph(Team, name="leaf")

    @leaf.node(start=True, then=END)
    def work(state: Team) -> dict[str, object]:
        return {"notes": ["w"]}

    deep = Graph(Team, name="mid2")
    deep.subgraph("deep", leaf, start=True, then=END)
    inner = Graph(Team, name="mid1")
    inner.subgraph("inner", deep, start=True, then=END)
    top = Graph(Team, name="top")
    top.subgraph("outer", inner, start=True, then=END)
    seen: list[Event] = []
    _run(top.compile(), how, seen.append)
    starts = [(e.node, e.step, e.entry) for e in seen if isinstance(e, NodeStart)]
    assert starts == [
        ("outer", 1, (1,)),
        ("outer/inner", 1, (1, 1)),
        ("outer/inner/deep", 1, (1, 1, 1)),
        ("outer/inner/deep/work", 1, (1, 1, 1)),
    ]


def asker() -> Graph[Team]:
    """plan -> search, which asks a person."""
    child = Graph(Team, name="asker")

    @child.node(start=True, then="search")
    async def plan(state: Team) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"notes": [f"plan {state['topic']}"]}

    @child.node(then=END)
    def search(state: Team) -> dict[str, object]:
        return {"notes": [str(interrupt(f"source for {state['topic']}?"))]}

    return child


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_entries_that_pause_side_by_side_keep_their_spans_apart_across_the_resume(
    spans: InMemorySpanExporter, how: str
) -> None:
    """Three entries ask: each search span has its own interrupt id, under its own entry;
    the run that answers all three nests each entry's spans again and links to run 1."""
    app = fan_out(asker()).compile(telemetry=True, checkpointer=MemorySaver())
    _run(app, how, thread_id="t")
    paused = app.get_state("t")
    assert paused.status == "interrupted" and len(paused.interrupts) == 3
    answers = {i.id: f"answer {n}" for n, i in enumerate(paused.interrupts)}
    if how == "ainvoke":
        asyncio.run(app.ainvoke(Resume(answers), thread_id="t"))
    else:
        app.invoke(Resume(answers), thread_id="t")
    assert app.get_state("t").status == "done"
    finished = spans.get_finished_spans()
    roots = [s for s in finished if s.name == "corral.run"]
    assert [_attrs(r)["corral.status"] for r in roots] == ["interrupted", "done"]
    [link] = roots[1].links
    assert link.context.span_id == roots[0].context.span_id
    for number, root in enumerate(roots):
        entries = [
            s
            for s in finished
            if s.name == "corral.subgraph" and _parent_of(s) == root.context.span_id
        ]
        assert len(entries) == 3
        asked = []
        for entry in entries:
            under = [s for s in finished if _parent_of(s) == entry.context.span_id]
            searches = [s for s in under if _attrs(s)["corral.node"] == "research/search"]
            assert len(searches) == 1
            asked.append(_attrs(searches[0]).get("corral.interrupt_id"))
        if number == 0:
            assert sorted(asked) == sorted(answers)  # each pause named on its own span
        else:
            assert asked == [None, None, None]
