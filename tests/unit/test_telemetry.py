"""``compile(telemetry=True)``: OpenTelemetry spans per run and node run (issue 14, point 1).

Checked with the SDK's in-memory exporter on the global tracer provider: span names,
parents, attributes and events for a fan-out, a guard used up, a node error and an
interrupt answered in a second run (linked to the first).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from corral import END, Graph, Guard, MemorySaver, NodeError, Resume, interrupt

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The global provider (set once per process) exporting into memory, emptied per test."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    return _EXPORTER


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


def test_telemetry_off_makes_no_spans(spans: InMemorySpanExporter) -> None:
    """Without telemetry=True nothing is exported."""
    build().compile().invoke({"n": 0})
    assert spans.get_finished_spans() == ()
