"""Counting inside subgraphs: every node run anywhere is a top-level step, as it starts."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Context,
    End,
    Graph,
    Guard,
    MemorySaver,
    NodeError,
    Resume,
    Send,
    StepLimitError,
    interrupt,
)
from corral.runtime.events import Custom, Event, NodeEnd, NodeStart, SuperstepEnd


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    report: str


def long_loop(*, asynchronous: bool = False, rounds: int = 100) -> Graph[State]:
    """A child that loops ``rounds`` times with a generous cap of its own."""
    child = Graph(State, name="loop", max_steps=1000)
    if asynchronous:

        @child.node(start=True)
        async def work(state: State) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"notes": [state["topic"]]}

    else:

        @child.node(start=True)
        def work(state: State) -> dict[str, Any]:  # type: ignore[misc]
            return {"notes": [state["topic"]]}

    @child.router("work", guards=[Guard("work", max=rounds - 1, otherwise=END)])
    def again(state: State) -> Literal["work"] | End:
        return "work"

    return child


def test_a_long_child_loop_stops_exactly_at_the_parents_cap() -> None:
    """max_steps=7: begin + 6 child runs, then the run stops before the 7th child run."""
    g = Graph(State, max_steps=7)

    @g.node(start=True, then="loop")
    def begin(state: State) -> dict[str, Any]:
        return {"notes": ["begin"]}

    g.subgraph("loop", long_loop(), then=END)
    events: list[Event] = []
    with pytest.raises(StepLimitError) as info:
        g.compile().invoke({"topic": "t"}, on_event=events.append)
    error = info.value
    assert (error.steps, error.max_steps, error.node) == (7, 7, "loop/work")
    assert "stopped after 7 steps (max_steps=7) before running 'loop/work'" in str(error)
    ends = [(e.step, e.node) for e in events if isinstance(e, NodeEnd)]
    assert ends == [(1, "begin")] + [(n, "loop/work") for n in range(2, 8)]


def fan_out(child: Graph[State], cap: int) -> Graph[State]:
    g = Graph(State, max_steps=cap)

    @g.node(start=True)
    def split(state: State) -> None:
        return None

    @g.router("split")
    def fan(state: State) -> list[Send[Literal["loop"]]]:
        return [Send("loop", {"topic": t, "notes": []}) for t in ("a", "b")]

    g.subgraph("loop", child, then=END)
    return g


@pytest.mark.parametrize("asynchronous", [False, True])
def test_concurrent_entries_share_what_is_left_of_the_cap(asynchronous: bool) -> None:
    """Two entries of a long loop under max_steps=7: exactly 6 child runs start in all."""
    g = fan_out(long_loop(asynchronous=asynchronous), 7)
    events: list[Event] = []
    with pytest.raises(StepLimitError) as info:
        if asynchronous:
            asyncio.run(g.compile().ainvoke({"topic": "t"}, on_event=events.append))
        else:
            g.compile().invoke({"topic": "t"}, on_event=events.append)
    assert (info.value.steps, info.value.max_steps) == (7, 7)
    starts = [e.step for e in events if isinstance(e, NodeStart) and e.node != "loop"]
    assert sorted(starts) == list(range(1, 8))  # one number per node run, none twice


def test_concurrent_entries_that_finish_count_each_run_once_in_order() -> None:
    """Async fan-out, two 3-round entries: 7 steps, numbered 1..7, SuperstepEnd says 7."""
    g = fan_out(long_loop(asynchronous=True, rounds=3), 50)
    events: list[Event] = []
    run = asyncio.run(g.compile().ainvoke({"topic": "t"}, on_event=events.append))
    assert run.steps == 7 and run.state["notes"] == ["a", "a", "a", "b", "b", "b"]
    assert sorted(r.step for r in run.trace) == list(range(1, 8))
    assert sorted(e.step for e in events if isinstance(e, NodeEnd)) == list(range(1, 8))
    assert [e.steps for e in events if isinstance(e, SuperstepEnd)] == [1, 7]


def test_a_childs_node_end_and_custom_name_their_entry_through_their_step() -> None:
    """Entries side by side: each NodeEnd/Custom matches one NodeStart, which names the entry.

    NodeEnd, NodeRetry and Custom carry no ``entry`` field (docs/observability.md); their
    ``(node, step)`` must therefore name exactly one NodeStart, in an async fan-out too.
    """
    child = Graph(State, name="loop")

    @child.node(start=True, then=END)
    async def work(state: State, ctx: Context) -> dict[str, Any]:
        ctx.emit(state["topic"])
        await asyncio.sleep(0)
        return {"notes": [state["topic"]]}

    events: list[Event] = []
    asyncio.run(fan_out(child, 50).compile().ainvoke({"topic": "t"}, on_event=events.append))
    starts = {(e.node, e.step): e.entry for e in events if isinstance(e, NodeStart)}
    opened = {e.step for e in events if isinstance(e, NodeStart) and e.node == "loop"}
    assert len(opened) == 2
    ends = [e for e in events if isinstance(e, (NodeEnd, Custom)) and e.node == "loop/work"]
    assert len(ends) == 4
    entries = {starts[(e.node, e.step)] for e in ends}
    assert entries == {(step,) for step in opened}  # one entry each, both entries seen
    topic_of = {starts[(e.node, e.step)]: e.value for e in ends if isinstance(e, Custom)}
    assert sorted(topic_of.values()) == ["a", "b"]


def test_a_child_writing_a_plain_key_twice_hands_back_its_last_value() -> None:
    """Two child nodes in a row write 'report' (no reducer): no parallel-write error."""
    child = Graph(State, name="draft")

    @child.node(start=True, then="polish")
    def outline(state: State) -> dict[str, Any]:
        return {"report": "outline", "notes": ["outlined"]}

    @child.node(then=END)
    def polish(state: State) -> dict[str, Any]:
        return {"report": state["report"] + ", polished", "notes": ["polished"]}

    g = Graph(State)
    g.subgraph("draft", child, start=True, then=END)
    run = g.compile().invoke({"topic": "t", "report": ""})
    assert run.state["report"] == "outline, polished"
    assert run.state["notes"] == ["outlined", "polished"]


def test_one_send_to_a_subgraph_merges_into_the_parents_state() -> None:
    """A lone Send entry started from its argument: its writes are added to the parent's."""
    child = Graph(State, name="note")

    @child.node(start=True, then=END)
    def jot(state: State) -> dict[str, Any]:
        return {"notes": [f"{state['topic']} ({len(state['notes'])} before)"]}

    g = Graph(State)

    @g.node(start=True)
    def begin(state: State) -> dict[str, Any]:
        return {"notes": ["begin"]}

    @g.router("begin")
    def one(state: State) -> list[Send[Literal["note"]]]:
        return [Send("note", {"topic": "x", "notes": []})]

    g.subgraph("note", child, then=END)
    assert g.compile().invoke({"topic": "t"}).state["notes"] == ["begin", "x (0 before)"]


# --------------------------------------------------------------------------- pauses and ties


class Team(TypedDict):
    log: Annotated[list[str], operator.add]


def paused_team(*, ask: bool = True) -> Graph[Team]:
    """``plain`` and the subgraph ``sub`` (two runs, then a pause when ``ask``) share the
    first superstep; ``after`` follows both."""
    child = Graph(Team, name="sub")

    @child.node(start=True, then="y")
    def x(state: Team) -> dict[str, Any]:
        return {"log": ["x"]}

    @child.node(then="z")
    def y(state: Team) -> dict[str, Any]:
        return {"log": ["y"]}

    @child.node(then=END)
    def z(state: Team) -> dict[str, Any]:
        answer = interrupt("ok?") if ask else "auto"
        return {"log": [f"z {answer}"]}

    g = Graph(Team, max_steps=20)
    g.subgraph("sub", child, start=True, then="after")

    @g.node(start=True, then="after")
    def plain(state: Team) -> dict[str, Any]:
        return {"log": ["p"]}

    @g.node(then=END)
    def after(state: Team) -> dict[str, Any]:
        return {"log": ["a"]}

    return g


def _run(app: Any, arg: Any, asynchronous: bool, seen: list[Event]) -> Any:
    options = {"thread_id": "T", "on_event": seen.append}
    if asynchronous:
        return asyncio.run(app.ainvoke(arg, **options))
    return app.invoke(arg, **options)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_subgraph_and_a_plain_node_in_one_superstep_get_distinct_numbers(
    asynchronous: bool,
) -> None:
    """The plain task takes the superstep's first number, the child's runs the next ones,
    in both drivers, in the trace and in the events."""
    seen: list[Event] = []
    app = paused_team(ask=False).compile(checkpointer=MemorySaver())
    run = _run(app, {}, asynchronous, seen)
    numbers = {(t.step, t.node) for t in run.trace}
    assert numbers == {(1, "plain"), (2, "sub/x"), (3, "sub/y"), (4, "sub/z"), (5, "after")}
    assert run.steps == 5
    ends = {(e.step, e.node) for e in seen if isinstance(e, NodeEnd)}
    assert ends == numbers


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_paused_runs_steps_include_the_childs_runs_and_resume_counts_on(
    asynchronous: bool,
) -> None:
    """While the child is paused, run.steps counts its finished runs; after the resume the
    numbers go on from there, each node run counted once."""
    seen: list[Event] = []
    app = paused_team().compile(checkpointer=MemorySaver())
    run = _run(app, {}, asynchronous, seen)
    assert run.status == "interrupted" and run.steps == 3  # plain, sub/x, sub/y
    assert {(t.step, t.node) for t in run.trace} == {(1, "plain"), (2, "sub/x"), (3, "sub/y")}
    assert app.get_state("T").steps == 3
    run = _run(app, Resume("yes"), asynchronous, seen)
    assert run.status == "done" and run.steps == 5
    assert [(t.step, t.node) for t in run.trace] == [(4, "sub/z"), (5, "after")]
    assert run.state["log"] == ["x", "y", "z yes", "p", "a"]
    starts = [e.step for e in seen if isinstance(e, NodeEnd)]
    assert sorted(starts) == [1, 2, 3, 4, 5]


def test_a_pause_and_a_cap_count_the_childs_runs_once() -> None:
    """The top-level cap sees the child's runs before its pause exactly once after resume."""
    app = paused_team().compile(checkpointer=MemorySaver(), max_steps=4)
    assert app.invoke({}, thread_id="T").steps == 3
    with pytest.raises(StepLimitError) as info:
        app.invoke(Resume("yes"), thread_id="T")
    assert info.value.steps == 4 and info.value.node == "after"


def test_a_child_that_fails_after_its_resume_counts_each_run_once_when_run_again() -> None:
    """Paused (its first run counted), resumed, failed after one more run, run again: the
    child's runs before its pause are not counted twice, the one after it once."""
    failures = ["z"]
    child = Graph(Team, name="sub")

    @child.node(start=True, then="y")
    def x(state: Team) -> dict[str, Any]:
        return {"log": ["x"]}

    @child.node(then="z")
    def y(state: Team) -> dict[str, Any]:
        return {"log": [f"y {interrupt('ok?')}"]}

    @child.node(then=END)
    def z(state: Team) -> dict[str, Any]:
        if failures:
            raise ConnectionError(failures.pop())
        return {"log": ["z"]}

    g = Graph(Team, max_steps=20)
    g.subgraph("sub", child, start=True, then="after")

    @g.node(then=END)
    def after(state: Team) -> dict[str, Any]:
        return {"log": ["a"]}

    app = g.compile(checkpointer=MemorySaver())
    assert app.invoke({}, thread_id="T").steps == 1
    with pytest.raises(NodeError) as info:
        app.invoke(Resume("yes"), thread_id="T")
    assert info.value.node == "sub/z" and info.value.step == 3
    run = app.invoke(None, thread_id="T")
    assert run.status == "done" and run.steps == 4
    assert [(t.step, t.node) for t in run.trace] == [(3, "sub/z"), (4, "after")]
    assert run.state["log"] == ["x", "y yes", "z", "a"]


@pytest.mark.parametrize("driver", ["invoke", "stream", "ainvoke"])
def test_a_node_paused_inside_one_entry_holds_its_step_against_the_next(driver: str) -> None:
    """``ask``'s child pauses in ``q`` and ``work``'s child runs ``x`` then ``y``, in one
    superstep. ``q`` holds its step (API.md 5: counted once, when it completes), as a
    paused plain sibling does, so at max_steps=3 ``work`` may run one node: a, q, x, then
    ``y`` would be the fourth, under every driver."""

    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    asking = Graph(Log, name="asking")
    asking.node("q", start=True, then=END)(lambda state: {"log": [interrupt("ok?")]})
    working = Graph(Log, name="working")
    working.node("x", start=True, then="y")(lambda state: {"log": ["x"]})
    working.node("y", then=END)(lambda state: {"log": ["y"]})
    g = Graph(Log)
    g.node("a", start=True, then=("ask", "work"))(lambda state: {"log": ["a"]})
    g.subgraph("ask", asking, then=END)
    g.subgraph("work", working, then=END)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError, match="'work/y'") as caught:
        if driver == "invoke":
            app.invoke({"log": []}, thread_id="t", max_steps=3)
        elif driver == "stream":
            list(app.stream({"log": []}, thread_id="t", max_steps=3, mode="events"))
        else:
            asyncio.run(app.ainvoke({"log": []}, thread_id="t", max_steps=3))
    assert caught.value.steps == 3
