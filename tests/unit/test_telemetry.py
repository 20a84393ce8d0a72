"""``compile(telemetry=True)``: OpenTelemetry spans per run and node run (issue 14, point 1).

Checked with the SDK's in-memory exporter on the global tracer provider: span names,
parents, attributes and events for a fan-out, a guard used up, a node error and an
interrupt answered in a second run (linked to the first).
"""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from memory_spans import memory_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from corral import (
    END,
    Context,
    Cost,
    Graph,
    Guard,
    MemorySaver,
    NodeError,
    PostgresSaver,
    Resume,
    Retry,
    SqliteSaver,
    interrupt,
)
from corral import retry as retry_module


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The process's in-memory exporter, emptied per test."""
    return memory_spans()


class State(TypedDict):
    n: int
    found: Annotated[list[str], operator.add]
    ok: bool


def build(*, fail: bool = False, ask: bool = False) -> Graph[State]:
    g = Graph(State, name="traced")

    @g.node(start=True, then=("a", "b"))
    def plan(state: State) -> dict[str, object]:
        return {}

    @g.node(then="check")
    def a(state: State) -> dict[str, object]:
        return {"found": ["a"]}

    @g.node(then="check")
    def b(state: State) -> dict[str, object]:
        if fail:
            msg = "b broke"
            raise ValueError(msg)
        return {"found": ["b"]}

    @g.node(wait_for=("a", "b"))
    def check(state: State) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("check", guards=[Guard("plan", max=1, otherwise="finish")])
    def again(state: State) -> Literal["plan", "finish"]:
        return "plan"

    @g.node(then=END)
    def finish(state: State) -> dict[str, object]:
        return {"ok": interrupt("ship it?") == "yes"} if ask else {"ok": True}

    return g


def test_a_run_has_one_run_span_with_a_child_per_node_run(spans: InMemorySpanExporter) -> None:
    """corral.run with graph/thread/steps/status; corral.node children with their attributes."""
    app = build().compile(telemetry=True, checkpointer=MemorySaver())
    run = app.invoke({"n": 0}, thread_id="t1")
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "corral.run"]
    nodes = [s for s in finished if s.name == "corral.node"]
    assert dict(root.attributes or {}) == {
        "corral.graph": "traced",
        "corral.thread_id": "t1",
        "corral.steps": run.steps,
        "corral.status": "done",
    }
    assert len(nodes) == run.steps
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in nodes)
    names = [(s.attributes or {})["corral.node"] for s in sorted(nodes, key=_step)]
    assert names[:4] == ["plan", "a", "b", "check"] or names[:4] == ["plan", "b", "a", "check"]
    fanned = [s for s in nodes if (s.attributes or {})["corral.node"] in ("a", "b")]
    assert len(fanned) == 4  # two rounds of the fan-out
    first_round = sorted(fanned, key=_step)[:2]
    assert {(s.attributes or {})["corral.superstep"] for s in first_round} == {2}
    check = next(s for s in nodes if (s.attributes or {})["corral.node"] == "check")
    assert tuple((check.attributes or {})["corral.keys_written"]) == ("n",)
    assert (check.attributes or {})["corral.attempts"] == 1
    events = [(e.name, dict(e.attributes or {})) for e in root.events]
    assert (
        "corral.route",
        {"corral.source": "plan", "corral.target": "a", "corral.via": "then"},
    ) in events
    used_up = [a for name, a in events if name == "corral.guard_used_up"]
    assert used_up and used_up[0]["corral.target"] == "finish"


def _step(span: Any) -> int:
    return int((span.attributes or {})["corral.step"])


def test_a_node_error_ends_the_spans_with_status_error(spans: InMemorySpanExporter) -> None:
    """The failing node's span and the run span are ERROR, with the exception recorded."""
    app = build(fail=True).compile(telemetry=True)
    with pytest.raises(NodeError):
        app.invoke({"n": 0})
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "corral.run"]
    assert root.status.status_code is StatusCode.ERROR
    assert (root.attributes or {})["corral.status"] == "error"
    failed = [s for s in finished if s.status.status_code is StatusCode.ERROR and s is not root]
    assert [(s.attributes or {})["corral.node"] for s in failed] == ["b"]
    assert any(e.name == "exception" for e in failed[0].events)


def test_a_resumed_run_is_linked_to_the_run_it_continues(spans: InMemorySpanExporter) -> None:
    """An interrupt ends run 1 as interrupted; run 2 (the answer) links to run 1."""
    app = build(ask=True).compile(telemetry=True, checkpointer=MemorySaver())
    first = app.invoke({"n": 0}, thread_id="t2")
    assert first.status == "interrupted"
    app.invoke(Resume("yes"), thread_id="t2")
    roots = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    assert [(r.attributes or {})["corral.status"] for r in roots] == ["interrupted", "done"]
    paused = [e for e in roots[0].events if e.name == "corral.paused"]
    assert paused and list((paused[0].attributes or {})["corral.interrupt_ids"]) == [
        first.interrupts[0].id
    ]
    [link] = roots[1].links
    assert link.context.span_id == roots[0].context.span_id
    finishes = [s for s in spans.get_finished_spans() if _attrs(s).get("corral.node") == "finish"]
    assert [_attrs(s).get("corral.interrupt_id") for s in finishes] == [
        first.interrupts[0].id,
        None,
    ]
    assert [_parent_of(s) for s in finishes] == [r.context.span_id for r in roots]


class CountingSaver(MemorySaver):
    """A MemorySaver that counts how often a thread's chain is read."""

    reads = 0

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Any]:
        self.reads += 1
        return super().chain(thread_id, checkpoint_id)


def test_a_traced_resume_reads_the_thread_once_as_an_untraced_one_does(
    spans: InMemorySpanExporter,
) -> None:
    """The link to the previous run comes from the checkpoint the run loads anyway."""
    reads = []
    for telemetry in (False, True):
        saver = CountingSaver()
        app = build(ask=True).compile(telemetry=telemetry, checkpointer=saver)
        app.invoke({"n": 0}, thread_id="t")
        saver.reads = 0
        app.invoke(Resume("yes"), thread_id="t")
        reads.append(saver.reads)
    assert reads[0] == reads[1]
    [_, resumed] = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    assert len(resumed.links) == 1


def test_telemetry_off_makes_no_spans(spans: InMemorySpanExporter) -> None:
    """Without telemetry=True nothing is exported."""
    build().compile().invoke({"n": 0})
    assert spans.get_finished_spans() == ()


# --------------------------------------------------------------------------- helpers


def _attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def _by_node(finished: Sequence[Any], name: str = "corral.node") -> dict[str, Any]:
    """Return the spans called ``name`` by their ``corral.node`` (one span per path)."""
    return {_attrs(s)["corral.node"]: s for s in finished if s.name == name}


def _parent_of(span: Any) -> int | None:
    return span.parent.span_id if span.parent is not None else None


# --------------------------------------------------------------------------- retries


class Calls(TypedDict):
    calls: int
    out: str


@pytest.fixture
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries wait for nothing (the suite never sleeps)."""

    async def async_sleep(seconds: float) -> None:
        return None

    monkeypatch.setattr(retry_module, "sleep", lambda seconds: None)
    monkeypatch.setattr(retry_module, "async_sleep", async_sleep)


def flaky(failures: int) -> Graph[Calls]:
    tries: list[int] = []
    g = Graph(Calls, name="flaky")

    @g.node(start=True, then=END, retry=Retry(attempts=3, backoff=0.5, jitter=False))
    def fetch(state: Calls) -> dict[str, object]:
        tries.append(1)
        if len(tries) <= failures:
            msg = f"reset {len(tries)}"
            raise ConnectionError(msg)
        return {"out": "ok"}

    return g


@pytest.mark.usefixtures("no_waits")
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_node_that_succeeds_on_its_third_attempt_has_attempts_3(
    spans: InMemorySpanExporter, how: str
) -> None:
    """One span for the node run, corral.attempts=3, a corral.retry event per failed attempt."""
    app = flaky(2).compile(telemetry=True)
    run = app.invoke({}) if how == "invoke" else asyncio.run(app.ainvoke({}))
    assert run.steps == 1
    [fetch] = [s for s in spans.get_finished_spans() if s.name == "corral.node"]
    assert fetch.status.status_code is StatusCode.UNSET
    assert _attrs(fetch)["corral.attempts"] == 3
    retries = [dict(e.attributes or {}) for e in fetch.events if e.name == "corral.retry"]
    assert retries == [
        {"corral.attempt": 1, "corral.error": "ConnectionError: reset 1", "corral.delay_s": 0.5},
        {"corral.attempt": 2, "corral.error": "ConnectionError: reset 2", "corral.delay_s": 1.0},
    ]


@pytest.mark.usefixtures("no_waits")
def test_a_node_out_of_attempts_is_error_with_every_attempt_counted(
    spans: InMemorySpanExporter,
) -> None:
    """Three failures: the span is ERROR, corral.attempts=3, two retry events, the last raised."""
    with pytest.raises(NodeError):
        flaky(5).compile(telemetry=True).invoke({})
    [fetch] = [s for s in spans.get_finished_spans() if s.name == "corral.node"]
    assert fetch.status.status_code is StatusCode.ERROR
    assert _attrs(fetch)["corral.attempts"] == 3
    assert [e.name for e in fetch.events] == ["corral.retry", "corral.retry", "exception"]


@pytest.mark.usefixtures("no_waits")
def test_a_retried_node_inside_a_subgraph_counts_its_attempts(spans: InMemorySpanExporter) -> None:
    """The child's retry events reach its node's span (named by path, stepped as the run)."""
    g = Graph(Calls, name="outer")

    @g.node(start=True, then="inner")
    def warm(state: Calls) -> dict[str, object]:
        return {"calls": 1}

    g.subgraph("inner", flaky(1), then=END)
    g.compile(telemetry=True).invoke({})
    fetch = _by_node(spans.get_finished_spans())["inner/fetch"]
    assert _attrs(fetch)["corral.attempts"] == 2
    assert [e.name for e in fetch.events] == ["corral.retry"]


# --------------------------------------------------------------------------- subgraphs


class Team(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    report: str


def researcher(*, fail: bool = False, ask: bool = False) -> Graph[Team]:
    child = Graph(Team, name="researcher")

    @child.node(start=True, then="search")
    def plan(state: Team) -> dict[str, object]:
        return {"notes": ["plan"]}

    @child.node(then=END)
    def search(state: Team) -> dict[str, object]:
        if fail:
            msg = "search engine down"
            raise ValueError(msg)
        if ask:
            return {"notes": [str(interrupt("which source?"))]}
        return {"notes": ["found"]}

    return child


def team(child: Graph[Team], *, nested: bool = False) -> Graph[Team]:
    g = Graph(Team, name="team")

    @g.node(start=True, then="research")
    def brief(state: Team) -> dict[str, object]:
        return {"notes": ["brief"]}

    if nested:  # research runs a graph whose one node is the researcher
        middle = Graph(Team, name="desk")
        middle.subgraph("inner", child, start=True, then=END)
        child = middle
    g.subgraph("research", child, then="write")

    @g.node(then=END)
    def write(state: Team) -> dict[str, object]:
        return {"report": ", ".join(state["notes"])}

    return g


@pytest.mark.parametrize("saver", [None, "memory"])
def test_a_subgraph_entry_is_a_span_with_its_child_node_runs_under_it(
    spans: InMemorySpanExporter, engine_path: str, saver: str | None
) -> None:
    """run > brief, corral.subgraph research > research/plan, research/search; run > write."""
    app = team(researcher()).compile(telemetry=True, checkpointer=MemorySaver() if saver else None)
    app.invoke({"topic": "tides"}, thread_id="t" if saver else None)
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "corral.run"]
    [entry] = [s for s in finished if s.name == "corral.subgraph"]
    nodes = _by_node(finished)
    assert sorted(nodes) == ["brief", "research/plan", "research/search", "write"]
    assert _attrs(entry) == {
        "corral.node": "research",
        "corral.graph": "researcher",
        "corral.superstep": 2,
        "corral.send": False,
    }
    assert _parent_of(entry) == root.context.span_id
    for path in ("brief", "write"):
        assert _parent_of(nodes[path]) == root.context.span_id
        assert "corral.subgraph" not in _attrs(nodes[path])
    for path in ("research/plan", "research/search"):
        assert _parent_of(nodes[path]) == entry.context.span_id
        assert _attrs(nodes[path])["corral.subgraph"] == "research"
        assert entry.start_time <= nodes[path].start_time <= nodes[path].end_time
        assert nodes[path].end_time <= entry.end_time
    assert _attrs(nodes["research/search"])["corral.step"] == 3  # counted in the run's steps
    assert entry.end_time <= nodes["write"].start_time


def test_nested_subgraphs_nest_their_spans(spans: InMemorySpanExporter) -> None:
    """research > research/inner > research/inner/plan: one level of spans per graph."""
    team(researcher(), nested=True).compile(telemetry=True).invoke({"topic": "tides"})
    finished = spans.get_finished_spans()
    entries = _by_node(finished, "corral.subgraph")
    assert sorted(entries) == ["research", "research/inner"]
    assert _attrs(entries["research"])["corral.graph"] == "desk"
    assert _attrs(entries["research/inner"])["corral.graph"] == "researcher"
    assert _parent_of(entries["research/inner"]) == entries["research"].context.span_id
    nodes = _by_node(finished)
    for path in ("research/inner/plan", "research/inner/search"):
        assert _parent_of(nodes[path]) == entries["research/inner"].context.span_id
        assert _attrs(nodes[path])["corral.subgraph"] == "research/inner"


def test_an_error_inside_a_subgraph_marks_the_node_its_entry_and_the_run(
    spans: InMemorySpanExporter,
) -> None:
    """The failing child node (by path), its subgraph span and the run span are ERROR."""
    with pytest.raises(NodeError):
        team(researcher(fail=True)).compile(telemetry=True).invoke({"topic": "tides"})
    finished = spans.get_finished_spans()
    failed = sorted(
        (s.name, _attrs(s)["corral.node"] if s.name != "corral.run" else "")
        for s in finished
        if s.status.status_code is StatusCode.ERROR
    )
    assert failed == [
        ("corral.node", "research/search"),
        ("corral.run", ""),
        ("corral.subgraph", "research"),
    ]


def test_a_pause_inside_a_subgraph_ends_its_spans_and_the_answer_nests_again(
    spans: InMemorySpanExporter,
) -> None:
    """Run 1 pauses in research/search (span ended, interrupt id noted); run 2 links to it."""
    app = team(researcher(ask=True)).compile(telemetry=True, checkpointer=MemorySaver())
    first = app.invoke({"topic": "tides"}, thread_id="t")
    [asked] = first.interrupts
    assert asked.node == "research/search"
    done = app.invoke(Resume("atlas"), thread_id="t")
    assert done.status == "done"
    finished = spans.get_finished_spans()
    roots = [s for s in finished if s.name == "corral.run"]
    assert [_attrs(r)["corral.status"] for r in roots] == ["interrupted", "done"]
    searches = [s for s in finished if _attrs(s).get("corral.node") == "research/search"]
    assert len(searches) == 2  # asked in run 1, ran again from its start in run 2
    assert _attrs(searches[0])["corral.interrupt_id"] == asked.id
    entries = [s for s in finished if s.name == "corral.subgraph"]
    assert len(entries) == 2
    for search, entry, root in zip(searches, entries, roots, strict=True):
        assert _parent_of(search) == entry.context.span_id
        assert _parent_of(entry) == root.context.span_id
    [link] = roots[1].links
    assert link.context.span_id == roots[0].context.span_id


# --------------------------------------------------------------------------- across processes


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_run_resumed_by_another_process_links_to_the_run_it_continues(
    spans: InMemorySpanExporter, tmp_path: Path, request: pytest.FixtureRequest, store: str
) -> None:
    """Two apps compiled apart, each with its own saver on one database, as two processes."""
    if store == "sqlite":
        path = tmp_path / "runs.sqlite"

        def open_saver() -> Any:
            return SqliteSaver(path)
    else:
        url = request.getfixturevalue("postgres_url")

        def open_saver() -> Any:
            return PostgresSaver(url)

    first = build(ask=True).compile(telemetry=True, checkpointer=open_saver())
    paused = first.invoke({"n": 0}, thread_id="t")
    assert paused.status == "interrupted"
    [run1] = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    ids = f"{run1.context.trace_id:032x}-{run1.context.span_id:016x}"
    [stored] = {c.meta.get("traceparent") for c in open_saver().checkpoints("t")}
    assert stored.startswith(f"00-{ids}-")  # W3C trace context: version-trace-span-flags
    assert int(stored.rpartition("-")[2], 16) & 1  # sampled
    spans.clear()
    second = build(ask=True).compile(telemetry=True, checkpointer=open_saver())
    assert second.invoke(Resume("yes"), thread_id="t").status == "done"
    [run2] = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    [link] = run2.links
    assert (link.context.trace_id, link.context.span_id) == (
        run1.context.trace_id,
        run1.context.span_id,
    )
    assert dict(link.attributes or {}) == {
        "corral.link": "continues",
        "corral.checkpoint_id": paused.checkpoint_id,
    }


def test_a_run_on_a_thread_that_no_traced_run_wrote_has_no_link(
    spans: InMemorySpanExporter,
) -> None:
    """Telemetry off for run 1: nothing to link to, and run 2 still traces."""
    saver = MemorySaver()
    build(ask=True).compile(checkpointer=saver).invoke({"n": 0}, thread_id="t")
    app = build(ask=True).compile(telemetry=True, checkpointer=saver)
    app.invoke(Resume("yes"), thread_id="t")
    [root] = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    assert root.links == ()


NO_SDK = """
from typing import TypedDict
from corral import END, Graph, MemorySaver

class State(TypedDict):
    n: int

g = Graph(State)

@g.node(start=True, then=END)
def bump(state: State) -> dict[str, object]:
    return {"n": state["n"] + 1}

saver = MemorySaver()
run = g.compile(telemetry=True, checkpointer=saver).invoke({"n": 1}, thread_id="t")
metas = [c.meta for c in saver.checkpoints("t")]
print(run.state["n"], len(metas), any("traceparent" in m for m in metas))
"""


def test_without_an_sdk_a_traced_run_runs_and_stores_no_trace_context() -> None:
    """The API alone (a fresh process, no provider set): no spans to link, nothing stored."""
    done = subprocess.run(
        [sys.executable, "-c", NO_SDK], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["2", "2", "False"]


def test_a_fork_links_to_the_run_that_wrote_the_checkpoint_it_starts_from(
    spans: InMemorySpanExporter,
) -> None:
    """invoke(..., checkpoint_id=an old one): the link names that checkpoint and its run."""
    saver = MemorySaver()
    app = build().compile(telemetry=True, checkpointer=saver)
    app.invoke({"n": 0}, thread_id="t")
    oldest = saver.checkpoints("t")[0].checkpoint_id
    app.invoke(None, thread_id="t", checkpoint_id=oldest)
    first, fork = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    [link] = fork.links
    assert link.context.span_id == first.context.span_id
    assert dict(link.attributes or {})["corral.checkpoint_id"] == oldest


def test_the_run_span_carries_what_the_run_spent(spans: InMemorySpanExporter) -> None:
    g = Graph(State, name="spending")

    @g.node(start=True, then=END, cost=Cost(tokens=500, usd="0.01"))
    def ask(state: State, ctx: Context) -> None:
        ctx.spend(calls=1, tokens=300, usd="0.005")

    g.compile(telemetry=True).invoke({"n": 0})
    [root] = [s for s in spans.get_finished_spans() if s.name == "corral.run"]
    attributes = dict(root.attributes or {})
    assert (attributes["corral.spent.tokens"], attributes["corral.spent.usd"]) == (300, 0.005)


def test_each_node_span_carries_what_that_node_run_spent(spans: InMemorySpanExporter) -> None:
    """Two nodes of one superstep spend at once (async, interleaved): each span gets its own
    spend, the run span the sum, and a node that spent nothing has no spent attribute."""
    g = Graph(State, name="spending")
    declared = Cost(tokens=500, usd="0.01")

    @g.node(start=True, then=("a", "b"))
    def plan(state: State) -> None:
        return None

    async def spend(ctx: Context, tokens: int, usd: str) -> None:
        for _ in range(2):
            ctx.spend(tokens=tokens // 2, usd=Decimal(usd) / 2)
            await asyncio.sleep(0)

    @g.node(then=END, cost=declared)
    async def a(state: State, ctx: Context) -> None:
        await spend(ctx, 100, "0.002")

    @g.node(then=END, cost=declared)
    async def b(state: State, ctx: Context) -> None:
        await spend(ctx, 300, "0.006")

    asyncio.run(g.compile(telemetry=True).ainvoke({"n": 0}))
    found = {
        s.name if s.name == "corral.run" else dict(s.attributes or {})["corral.node"]: (
            dict(s.attributes or {}).get("corral.spent.tokens"),
            dict(s.attributes or {}).get("corral.spent.usd"),
        )
        for s in spans.get_finished_spans()
    }
    assert found == {
        "plan": (None, None),
        "a": (100, 0.002),
        "b": (300, 0.006),
        "corral.run": (400, 0.008),
    }
