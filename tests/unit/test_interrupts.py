"""People in the loop: interrupt(), Resume, interrupt_before / interrupt_after."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    CorralError,
    End,
    Graph,
    GraphError,
    Guard,
    MemorySaver,
    NodeError,
    Resume,
    interrupt,
)
from corral.checkpoint.base import Checkpoint

pytestmark = pytest.mark.usefixtures("engine_path")
"""Each test runs three ways: invoke, invoke through the general path, ainvoke."""


class S(TypedDict):
    log: Annotated[list[str], operator.add]
    answer: str


def approval_graph(calls: list[str]) -> Graph[S]:
    g = Graph(S)

    @g.node(start=True, then="review")
    def draft(state: S) -> dict[str, object]:
        calls.append("draft")
        return {"log": ["drafted"]}

    @g.node(then=END)
    def review(state: S) -> dict[str, object]:
        calls.append("review")
        answer = interrupt({"question": "ship it?"})
        calls.append(f"review got {answer}")
        return {"answer": answer, "log": ["reviewed"]}

    return g


def test_interrupt_pauses_and_resume_answers() -> None:
    """interrupt() pauses the run; Resume(value) re-runs the node and interrupt() returns it."""
    calls: list[str] = []
    app = approval_graph(calls).compile(checkpointer=MemorySaver())
    run = app.invoke({}, thread_id="t")
    assert run.status == "interrupted"
    assert [(i.node, i.value) for i in run.interrupts] == [("review", {"question": "ship it?"})]
    assert run.steps == 1
    assert app.get_state("t").next == ("review",)
    done = app.invoke(Resume("yes"), thread_id="t")
    assert done.status == "done"
    assert done.state == {"log": ["drafted", "reviewed"], "answer": "yes"}
    assert calls == ["draft", "review", "review", "review got yes"]
    assert done.steps == 2, "a node run cut short by interrupt() counts once, when it completes"


def test_several_interrupts_in_one_node_are_matched_in_order() -> None:
    """The n-th interrupt() call of a node returns the n-th answer."""
    g = Graph(S)

    @g.node(start=True, then=END)
    def ask(state: S) -> dict[str, object]:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"answer": f"{first}+{second}"}

    app = g.compile(checkpointer=MemorySaver())
    run = app.invoke({}, thread_id="t")
    assert [i.value for i in run.interrupts] == ["first?"]
    run = app.invoke(Resume("a"), thread_id="t")
    assert [i.value for i in run.interrupts] == ["second?"]
    run = app.invoke(Resume("b"), thread_id="t")
    assert run.status == "done" and run.state["answer"] == "a+b"
    assert run.steps == 1


def test_parallel_interrupts_are_answered_by_id_and_finished_siblings_kept() -> None:
    """Two nodes pausing in one superstep are answered with Resume({id: value});
    a sibling that finished is not run again."""
    calls: list[str] = []
    g = Graph(S)

    @g.node(start=True, then=END)
    def left(state: S) -> dict[str, object]:
        calls.append("left")
        return {"log": [f"left {interrupt('left?')}"]}

    @g.node(start=True, then=END)
    def middle(state: S) -> dict[str, object]:
        calls.append("middle")
        return {"log": ["middle"]}

    @g.node(start=True, then=END)
    def right(state: S) -> dict[str, object]:
        calls.append("right")
        return {"log": [f"right {interrupt('right?')}"]}

    app = g.compile(checkpointer=MemorySaver())
    run = app.invoke({}, thread_id="t")
    assert run.status == "interrupted"
    ids = {i.value: i.id for i in run.interrupts}
    assert set(ids) == {"left?", "right?"}
    with pytest.raises(CorralError, match="pending interrupts"):
        app.invoke(Resume("x"), thread_id="t")
    done = app.invoke(Resume({ids["left?"]: "L", ids["right?"]: "R"}), thread_id="t")
    assert done.state["log"] == ["left L", "middle", "right R"]
    assert calls.count("middle") == 1
    assert done.steps == 3 and done.supersteps == 1


def test_interrupt_without_checkpointer_is_a_graph_error() -> None:
    """interrupt() in a graph with no checkpointer raises GraphError, not NodeError."""
    app = approval_graph([]).compile()
    with pytest.raises(GraphError, match="checkpointer") as caught:
        app.invoke({})
    assert not isinstance(caught.value, NodeError)


def test_interrupt_before_needs_a_checkpointer() -> None:
    """compile(interrupt_before=...) without a checkpointer raises GraphError."""
    with pytest.raises(GraphError, match="checkpointer"):
        approval_graph([]).compile(interrupt_before=["review"])


def test_interrupt_before_pauses_before_the_node_and_none_goes_on() -> None:
    """interrupt_before pauses before the node runs; invoke(None, thread_id=T) continues."""
    calls: list[str] = []
    g = Graph(S)

    @g.node(start=True, then="act")
    def plan(state: S) -> dict[str, object]:
        calls.append("plan")
        return {"log": ["plan"]}

    @g.node(then=END)
    def act(state: S) -> dict[str, object]:
        calls.append("act")
        return {"log": ["act"]}

    app = g.compile(checkpointer=MemorySaver(), interrupt_before=["act"])
    run = app.invoke({}, thread_id="t")
    assert run.status == "interrupted"
    assert [(i.node, i.value) for i in run.interrupts] == [("act", None)]
    assert calls == ["plan"]
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and calls == ["plan", "act"]
    assert run.state["log"] == ["plan", "act"]


def test_interrupt_before_a_start_node() -> None:
    """A start node in interrupt_before pauses before anything runs."""
    app = approval_graph([]).compile(checkpointer=MemorySaver(), interrupt_before=["draft"])
    run = app.invoke({}, thread_id="t")
    assert run.status == "interrupted" and run.steps == 0
    assert app.get_state("t").next == ("draft",)


def test_interrupt_after_pauses_after_the_node() -> None:
    """interrupt_after pauses once the node's superstep is merged."""
    calls: list[str] = []
    g = Graph(S)

    @g.node(start=True, then="act")
    def plan(state: S) -> dict[str, object]:
        calls.append("plan")
        return {"log": ["plan"]}

    @g.node(then=END)
    def act(state: S) -> dict[str, object]:
        calls.append("act")
        return {"log": ["act"]}

    app = g.compile(checkpointer=MemorySaver(), interrupt_after=["plan"])
    run = app.invoke({}, thread_id="t")
    assert run.status == "interrupted" and run.state["log"] == ["plan"]
    assert run.interrupts[0].node == "plan" and run.interrupts[0].when == "after"
    done = app.invoke(None, thread_id="t")
    assert done.status == "done" and calls == ["plan", "act"]


def test_resume_when_nothing_is_pending_is_refused() -> None:
    """Resume on a finished thread says what to do instead."""
    g = Graph(S)

    @g.node(start=True, then=END)
    def only(state: S) -> None:
        return None

    app = g.compile(checkpointer=MemorySaver())
    app.invoke({}, thread_id="t")
    with pytest.raises(CorralError, match="not waiting"):
        app.invoke(Resume("x"), thread_id="t")


def test_interrupt_inside_a_loop_keeps_guard_counts() -> None:
    """Guard counts and steps belong to the run across resumes."""

    class Q(TypedDict):
        n: int

    g = Graph(Q)

    @g.node(start=True)
    def ask(state: Q) -> dict[str, object]:
        value = interrupt(f"n={state['n']}")
        return {"n": state["n"] + int(value)}

    @g.router("ask", guards=[Guard("ask", max=2, otherwise=END)])
    def more(state: Q) -> Literal["ask"] | End:
        return "ask"

    app = g.compile(checkpointer=MemorySaver())
    run: Any = app.invoke({"n": 0}, thread_id="t")
    payloads = []
    while run.status == "interrupted":
        payloads.append(run.interrupts[0].value)
        run = app.invoke(Resume("1"), thread_id="t")
    assert payloads == ["n=0", "n=1", "n=2"]
    assert run.state["n"] == 3 and run.steps == 3
    assert run.guards == {("ask", "ask"): 2}


def test_interrupt_after_the_last_node_then_continue_finishes_the_thread() -> None:
    """Continuing a pause after the last node records the thread as done."""
    g = Graph(S)

    @g.node(start=True, then=END)
    def only(state: S) -> dict[str, object]:
        return {"log": ["only"]}

    app = g.compile(checkpointer=MemorySaver(), interrupt_after=["only"])
    assert app.invoke({}, thread_id="t").status == "interrupted"
    assert app.get_state("t").status == "interrupted"
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and run.state["log"] == ["only"]
    assert app.get_state("t").status == "done"


def test_events_show_the_pause_and_the_checkpoints() -> None:
    """stream(mode="events") yields CheckpointWritten and a Paused record with the payload."""
    from corral.runtime import CheckpointWritten, Paused, RunEnd

    app = approval_graph([]).compile(checkpointer=MemorySaver())
    events = list(app.stream({}, mode="events", thread_id="t"))
    paused = [e for e in events if isinstance(e, Paused)]
    assert [i.value for i in paused[0].interrupts] == [{"question": "ship it?"}]
    written = [e for e in events if isinstance(e, CheckpointWritten)]
    assert [e.status for e in written] == ["running", "running", "interrupted"]
    assert written[-1].checkpoint_id == app.get_state("t").checkpoint_id
    assert events[-1] == RunEnd("interrupted", 1, 1)


def test_command_resume_is_an_alias_of_resume() -> None:
    """invoke(Command(resume=value)) answers like Resume(value), as in LangGraph."""
    from corral import Command

    app = approval_graph([]).compile(checkpointer=MemorySaver())
    app.invoke({}, thread_id="t")
    assert app.invoke(Command(resume="ok"), thread_id="t").state["answer"] == "ok"


def test_async_interrupt_without_checkpointer_is_a_graph_error() -> None:
    """In ainvoke too, interrupt() without a checkpointer is a GraphError, not a NodeError."""
    import asyncio

    g = Graph(S)

    @g.node(start=True, then=END)
    async def ask(state: S) -> dict[str, object]:
        return {"answer": interrupt("?")}

    with pytest.raises(GraphError) as caught:
        asyncio.run(g.compile().ainvoke({}))
    assert not isinstance(caught.value, NodeError)


class _IdlessSaver(MemorySaver):
    """A MemorySaver whose stored pauses lost their ``id`` (a meta edited by hand)."""

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        return [_idless(c) for c in super().chain(thread_id, checkpoint_id)]

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        return [_idless(c) for c in super().checkpoints(thread_id)]


def _idless(checkpoint: Checkpoint) -> Checkpoint:
    pauses = [
        {k: v for k, v in p.items() if k != "id"} for p in checkpoint.meta.get("interrupts", [])
    ]
    if pauses:
        checkpoint.meta["interrupts"] = pauses
    return checkpoint


def test_a_saved_pause_without_an_id_gets_the_id_the_engine_gives_it() -> None:
    """A pause record with no 'id' is shown and answered by the id the engine would give it."""
    calls: list[str] = []
    app = approval_graph(calls).compile(checkpointer=MemorySaver())
    asked = app.invoke({}, thread_id="t").interrupts[0]
    idless = approval_graph(calls).compile(checkpointer=_IdlessSaver())
    paused = idless.invoke({}, thread_id="t")
    assert [i.id for i in paused.interrupts] == [asked.id]
    snapshot = idless.get_state("t")
    assert [(i.id, i.node) for i in snapshot.interrupts] == [(asked.id, "review")]
    assert [i.id for i in idless.history("t")[0].interrupts] == [asked.id]
    done = idless.invoke(Resume({asked.id: "yes"}), thread_id="t")
    assert done.status == "done" and done.state["answer"] == "yes"
