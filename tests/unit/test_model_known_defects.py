"""Defects the reference model found or met (issues 27 and 28), each as a small example.

Each test asserts what API.md and docs/ say, and failed on the engine before its fix. While
a defect is open its test fails (it is not marked ``xfail``); where the random machine of
``test_model_machine.py`` meets it too often, ``refmodel.shapes.KNOWN_DEFECTS`` names it
and the machine keeps away from the combination. Whoever fixes it deletes that entry.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Command,
    ConcurrentRunError,
    Graph,
    Guard,
    InvalidUpdateError,
    MemorySaver,
    NodeCapError,
    NodeError,
    Resume,
    StepLimitError,
    StuckJoinError,
    interrupt,
)
from corral.checkpoint.base import Checkpointer
from corral.runtime.app import CompiledGraph


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    topic: str
    summary: str
    seen: int


def _boom(state: Log) -> dict[str, Any]:
    raise RuntimeError("boom")


def test_a_thread_whose_node_failed_has_status_error() -> None:
    g = Graph(Log)
    g.node("a", start=True, then="b")(lambda state: {"log": ["a"]})
    g.node("b", then=END)(_boom)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(NodeError):
        app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").status == "error"


def test_a_thread_stopped_by_a_cap_has_status_error() -> None:
    g = Graph(Log)
    g.node("a", start=True, then="b")(lambda state: {"log": ["a"]})
    g.node("b", then=END)(lambda state: {"log": ["b"]})
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError):
        app.invoke({"log": []}, thread_id="t", max_steps=1)
    assert app.get_state("t").status == "error"


def test_as_node_notes_the_arrival_at_a_join() -> None:
    """c has run; update_state(as_node="b") stands in for b, the join's other listed node."""
    g = Graph(Log)
    g.node("a", start=True, then="c")(lambda state: {"log": ["a"]})
    g.node("c", then="b")(lambda state: {"log": ["c"]})
    g.node("b", then="j")(lambda state: {"log": ["b"]})
    g.node("j", then=END, wait_for=("b", "c"))(lambda state: {"log": ["j"]})
    app = g.compile(checkpointer=MemorySaver(), interrupt_before=["b"])
    app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"log": ["b by hand"]}, as_node="b")
    assert app.get_state("t").next == ("j",)
    assert app.invoke(None, thread_id="t").state["log"][-1] == "j"


def test_a_fork_before_a_subgraph_runs_the_child_afresh() -> None:
    child = Graph(Log, name="child")
    child.node("write", start=True, then=END)(
        lambda state: {"summary": f"summary of {state['topic']}"}
    )
    g = Graph(Log)
    g.node("plan", start=True, then="sub")(lambda state: {"log": ["plan"]})
    g.subgraph("sub", child, then=END)
    app = g.compile(checkpointer=MemorySaver())
    app.invoke({"topic": "tides", "log": []}, thread_id="t")
    before = next(h for h in app.history("t") if h.next == ("sub",))
    app.update_state("t", {"topic": "volcanoes"}, checkpoint_id=before.checkpoint_id)
    assert app.invoke(None, thread_id="t").state["summary"] == "summary of volcanoes"


def test_a_refused_run_leaves_no_input_behind() -> None:
    """A second run starts inside the first's node: the first holds the thread, so the
    second is refused before it stores anything, and the first goes on."""
    g = Graph(Log)
    refused: list[ConcurrentRunError] = []

    def work(state: Log) -> dict[str, Any]:
        if state["log"][-1] == "first":
            with pytest.raises(ConcurrentRunError) as caught:
                app.invoke({"log": ["second"]}, thread_id="t")
            refused.append(caught.value)
        return {"log": ["work"]}

    g.node("work", start=True, then=END)(work)
    app = g.compile(checkpointer=MemorySaver())
    app.invoke({"log": ["zero"]}, thread_id="t")
    assert app.invoke({"log": ["first"]}, thread_id="t").state["log"][-2:] == ["first", "work"]
    assert len(refused) == 1 and "second" not in app.get_state("t").values["log"]
    assert app.invoke({"log": ["third"]}, thread_id="t").state["log"][-1] == "work"


# ------------------------------------------------------------- found by the model


def test_steps_at_a_pause_count_a_finished_subgraph_entry() -> None:
    """n3 pauses; the subgraph entry beside it ran its node to the end: 2 node runs so far
    (n0 and sub/c0), as a plain sibling's run would be counted."""
    child = Graph(Log, name="child")
    child.node("c0", start=True, then=END)(lambda state: {"log": ["sub/c0"]})
    g = Graph(Log)
    g.node("n0", start=True, then=("n3", "sub"))(lambda state: {"log": ["n0"]})
    g.node("n3", then=END)(lambda state: {"log": [f"n3={interrupt('n3?')}"]})
    g.subgraph("sub", child, then=END)
    app = g.compile(checkpointer=MemorySaver())
    paused = app.invoke({"log": []}, thread_id="t")
    assert paused.status == "interrupted"
    assert (paused.steps, app.get_state("t").steps) == (2, 2)
    assert app.invoke(Resume("yes"), thread_id="t").steps == 3


def test_as_node_on_a_command_node_ends_its_branch() -> None:
    """A Command node that returns a plain dict ends its branch; as_node stands for that."""
    g = Graph(Log)

    @g.node(start=True)
    def triage(state: Log) -> Command[Literal["billing", "support"]]:
        return Command(update={"log": ["triage"]}, goto="billing")

    g.node("billing", then=END)(lambda state: {"log": ["billing"]})
    g.node("support", then=END)(lambda state: {"log": ["support"]})
    app = g.compile(checkpointer=MemorySaver())
    app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"log": ["by hand"]}, as_node="triage")
    assert app.get_state("t").next == ()
    assert app.get_state("t").guards == {}


def test_as_node_pauses_before_a_listed_node_like_a_run() -> None:
    g = Graph(Log)
    g.node("a", start=True, then="b")(lambda state: {"log": ["a"]})
    g.node("b", then=END)(lambda state: {"log": ["b"]})
    app = g.compile(checkpointer=MemorySaver(), interrupt_before=["b"])
    app.invoke({"log": []}, thread_id="t")
    app.invoke(None, thread_id="t")
    app.update_state("t", {"log": ["a by hand"]}, as_node="a")
    snapshot = app.get_state("t")
    assert snapshot.status == "interrupted"
    assert [(i.node, i.value) for i in snapshot.interrupts] == [("b", None)]
    assert app.invoke(None, thread_id="t").state["log"] == ["a", "b", "a by hand", "b"]


def test_update_state_after_a_failed_fan_out_runs_the_siblings_on_the_new_state() -> None:
    """s1 finished on the old state and s2 failed; after update_state the superstep runs
    afresh on the updated state (a fork, API.md 7 and 7a), so s1 sees the new item."""
    fail = [True]

    def s2(state: Log) -> dict[str, Any]:
        if fail:
            fail.clear()
            raise RuntimeError("s2 failed")
        return {"log": ["s2"]}

    g = Graph(Log)
    g.node("f", start=True, then=("s1", "s2"))(lambda state: {"log": ["f"]})
    g.node("s1", then=END)(lambda state: {"seen": len(state["log"])})
    g.node("s2", then=END)(s2)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(NodeError):
        app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"log": ["fixed by hand"]})
    run = app.invoke(None, thread_id="t")
    assert run.state["seen"] == 2  # ["f", "fixed by hand"]


def test_an_answer_is_kept_when_the_answered_node_fails_alone_in_its_superstep() -> None:
    """A node answered by Resume fails before it returns: the answer is kept across the
    failure (API.md 7: Resume re-runs the node until it completes), so invoke(None) hands
    it to the node instead of asking again."""
    fail = [True]

    def ask(state: Log) -> dict[str, Any]:
        answer = interrupt("publish?")
        if fail:
            fail.clear()
            raise RuntimeError("the mail server is down")
        return {"log": [f"answer {answer}"]}

    g = Graph(Log)
    g.node("ask", start=True, then=END)(ask)
    app = g.compile(checkpointer=MemorySaver())
    app.invoke({"log": []}, thread_id="t")
    with pytest.raises(NodeError):
        app.invoke(Resume("yes"), thread_id="t")
    run = app.invoke(None, thread_id="t")
    assert (run.status, run.state["log"]) == ("done", ["answer yes"])


def test_check_reports_a_join_whose_list_router_fork_may_take_one_branch() -> None:
    """Every run in which the router takes one branch raises StuckJoinError: CR304 says
    the router may take one."""
    g = Graph(Log)
    g.node("fork", start=True)(lambda state: {"log": ["fork"]})

    @g.router("fork")
    def branches(state: Log) -> list[Literal["short", "long"]]:
        return ["short"] if len(state["log"]) % 2 else ["short", "long"]

    g.node("short", then="join")(lambda state: {"log": ["short"]})
    g.node("long", then="join")(lambda state: {"log": ["long"]})
    g.node("join", then=END, wait_for=("short", "long"))(lambda state: {"log": ["join"]})
    (found,) = g.check()
    assert (found.code, found.nodes) == ("CR304", ("join", "short", "long"))
    assert "only when 'fork' takes both branches, and it may take one" in found.message
    with pytest.raises(StuckJoinError):
        CompiledGraph(g.spec()).invoke({"log": []})  # fork's router takes "short" only


def test_a_join_counts_a_listed_node_that_ran_without_routing_to_it() -> None:
    """API.md 4: a join runs "once every listed node has run since its own last run",
    routed there or not. Here ``a`` and ``b`` run first, so the join runs in the second
    superstep beside ``b``'s second run (from ``a``), which counts toward the join's next
    run; ``a`` never runs again, so every run is stuck: check() says so (CR304) and the
    run raises StuckJoinError instead of ending quietly."""
    g = Graph(Log)
    g.node("a", start=True, then="b")(lambda state: {"log": ["a"]})
    g.node("b", start=True, then="join")(lambda state: {})
    g.node("join", wait_for=("a", "b"), then=END)(lambda state: {"log": ["join"]})
    assert [d.code for d in g.check()] == ["CR304"]
    with pytest.raises(StuckJoinError):
        CompiledGraph(g.spec()).invoke({"log": []})


def test_check_reports_a_join_entered_again_after_its_start_nodes_ran() -> None:
    """``a`` and ``b`` start; ``a`` routes to ``b`` and to the join, ``b`` to the join: the
    join runs in the second superstep beside ``b``'s second run, which routes to the join
    again while ``a`` never runs again, so every run raises StuckJoinError."""
    g = Graph(Log)
    g.node("a", start=True, then=("b", "join"))(lambda state: {"log": ["a"]})
    g.node("b", start=True, then="join")(lambda state: {})
    g.node("join", wait_for=("a", "b"), then=END)(lambda state: {"log": ["join"]})
    assert [(d.code, d.nodes) for d in g.check()] == [("CR304", ("join", "b", "a"))]
    with pytest.raises(StuckJoinError):
        CompiledGraph(g.spec()).invoke({"log": []})


def test_check_reports_a_join_whose_fork_runs_in_two_successive_supersteps() -> None:
    """``a`` routes to ``f`` and to ``b``, which routes to ``f`` again: ``j`` runs once ``s``
    and ``m`` (one superstep behind) have both arrived, then ``m``'s second run arrives
    alone and every run raises StuckJoinError."""
    g = Graph(Log)
    g.node("a", start=True, then=("b", "f"))(lambda state: {"log": ["a"]})
    g.node("b", then="f")(lambda state: {"log": ["b"]})
    g.node("f", then=("s", "l"))(lambda state: {"log": ["f"]})
    g.node("s", then="j")(lambda state: {"log": ["s"]})
    g.node("l", then="m")(lambda state: {"log": ["l"]})
    g.node("m", then="j")(lambda state: {"log": ["m"]})
    g.node("j", wait_for=("s", "m"), then=END)(lambda state: {"log": ["j"]})
    assert [(d.code, d.nodes) for d in g.check()] == [("CR304", ("j", "f", "s", "m", "b"))]
    with pytest.raises(StuckJoinError):
        CompiledGraph(g.spec()).invoke({"log": []})


def test_a_paused_sibling_holds_its_step_against_a_subgraph_entry() -> None:
    """``ask`` pauses and holds its step (API.md 5: counted once, when it completes), so at
    ``max_steps=3`` the child beside it may run one node, not two: a, ask, x, then y is
    the fourth; the sync and async drivers agree."""
    child = Graph(Log, name="child")
    child.node("x", start=True, then="y")(lambda state: {"log": ["x"]})
    child.node("y", then=END)(lambda state: {"log": ["y"]})
    g = Graph(Log)
    g.node("a", start=True, then=("ask", "sub"))(lambda state: {"log": ["a"]})
    g.node("ask", then=END)(lambda state: {"log": [interrupt("ok?")]})
    g.subgraph("sub", child, then=END)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError, match="'sub/y'"):
        app.invoke({"log": []}, thread_id="t", max_steps=3)
    with pytest.raises(StepLimitError, match="'sub/y'"):
        asyncio.run(app.ainvoke({"log": []}, thread_id="a", max_steps=3))


def test_as_node_of_a_task_that_finished_replaces_what_it_returned() -> None:
    """s and l both write ``topic`` (no reducer), so the superstep after the fork fails
    (InvalidUpdateError) with both finished. ``update_state(as_node="s")`` stands in for
    s's finished run (a person correcting what it returned): merged with l's, the conflict
    is gone and the join runs. It used to add a second run of s, which failed the same way
    and left ``next`` listing s twice."""
    g = Graph(Log)
    g.node("f", start=True, then=("s", "l"))(lambda state: {"log": ["f"]})
    g.node("s", then="j", ignore=["CR301"])(lambda state: {"log": ["s"], "topic": "s"})
    g.node("l", then="j", ignore=["CR301"])(lambda state: {"log": ["l"], "topic": "l"})
    g.node("j", then=END, wait_for=("s", "l"))(lambda state: {"log": ["j"]})
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(InvalidUpdateError):
        app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").next == ("s", "l")
    app.update_state("t", {"log": ["s, by hand"]}, as_node="s")
    state = app.get_state("t")
    assert (state.next, state.values["topic"]) == (("j",), "l")
    assert app.invoke(None, thread_id="t").state["log"] == ["f", "s, by hand", "l", "j"]


def test_update_state_asks_again_a_finished_node_that_used_an_answer(
    saver: Checkpointer,
) -> None:
    """s asks, then writes ``topic``; l writes it too (no reducer). Answered, s finishes and
    the superstep fails (InvalidUpdateError). update_state without as_node makes the
    finished nodes run again on the new state (docs/persistence.md), s included: its
    answer was to a question about the old state, so it asks again and the run pauses
    instead of reusing the answer and failing the same way."""
    g = Graph(Log)
    g.node("f", start=True, then=("s", "l"))(lambda state: {"log": ["f"]})
    g.node("s", then="j", ignore=["CR301"])(lambda state: {"topic": interrupt("topic?")})
    g.node("l", then="j", ignore=["CR301"])(lambda state: {"log": ["l"], "topic": "l"})
    g.node("j", then=END, wait_for=("s", "l"))(lambda state: {"log": ["j"]})
    app = g.compile(checkpointer=saver)
    assert app.invoke({"log": []}, thread_id="t").status == "interrupted"
    with pytest.raises(InvalidUpdateError):
        app.invoke(Resume("volcanoes"), thread_id="t")
    app.update_state("t", {"log": ["by hand"]})
    run = app.invoke(None, thread_id="t")
    assert run.status == "interrupted"
    assert [(i.node, i.value) for i in app.get_state("t").interrupts] == [("s", "topic?")]


def test_an_entry_beside_a_capped_node_runs_and_its_childs_step_limit_is_the_error() -> None:
    """The second superstep holds x (at its max_runs), y (which takes the last step) and
    the entry sub. A cap refuses only its own node (concepts.md "Caps inside a
    superstep"), and a subgraph node is not a node run, so max_steps does not refuse the
    entry: its child runs and its first node hits the cap. That StepLimitError is the
    entry's failure, which beats x's refusal, under invoke and ainvoke alike (the engine
    refused the entry at planning and raised x's NodeCapError)."""
    child = Graph(Log, name="child")
    child.node("c0", start=True, then=END)(lambda state: {"log": ["c0"]})
    g = Graph(Log)
    g.node("x", start=True, max_runs=1)(lambda state: {"log": ["x"]})

    @g.router("x", guards=[Guard("x", max=1)])
    def fan(state: Log) -> list[Literal["x", "y", "sub"]]:
        return ["x", "y", "sub"]

    g.node("y", then=END)(lambda state: {"log": ["y"]})
    g.subgraph("sub", child, then=END)
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError) as caught:
        app.invoke({"log": []}, thread_id="t", max_steps=2)
    assert (caught.value.node, caught.value.max_steps) == ("sub/c0", 2)
    with pytest.raises(StepLimitError) as caught:
        asyncio.run(app.ainvoke({"log": []}, thread_id="a", max_steps=2))
    assert (caught.value.node, caught.value.max_steps) == ("sub/c0", 2)


def _capped_beside_an_entry(entry_first: bool) -> CompiledGraph:
    """x (max_runs=1) fans out to x again, y and the entry sub, in the superstep order
    sub, x, y (``entry_first``) or x, y, sub."""
    child = Graph(Log, name="child")
    child.node("c0", start=True, then=END)(lambda state: {"log": ["c0"]})
    g = Graph(Log)
    if entry_first:
        g.subgraph("sub", child, then=END)
    g.node("x", start=True, max_runs=1)(lambda state: {"log": ["x"]})

    @g.router("x", guards=[Guard("x", max=1)])
    def fan(state: Log) -> list[Literal["x", "y", "sub"]]:
        return ["x", "y", "sub"]

    g.node("y", then=END)(lambda state: {"log": ["y"]})
    if not entry_first:
        g.subgraph("sub", child, then=END)
    return g.compile(checkpointer=MemorySaver())


@pytest.mark.parametrize("entry_first", [False, True], ids=["entry_last", "entry_first"])
@pytest.mark.parametrize("driver", ["invoke", "ainvoke"])
def test_a_refused_sibling_takes_no_step_from_a_subgraph_entry(
    driver: str, entry_first: bool
) -> None:
    """x is at its max_runs, so the plan refuses it: it never starts and takes no step
    (concepts.md "Caps inside a superstep"). At max_steps=3, y takes step 2 and the child's
    c0 step 3; the child finishes, and x's NodeCapError is the run's error, wherever the
    entry stands in the superstep, under invoke and ainvoke alike (the engine reserved a
    step for x and stopped the child with StepLimitError at 'sub/c0')."""
    app = _capped_beside_an_entry(entry_first)
    with pytest.raises(NodeCapError) as caught:
        if driver == "invoke":
            app.invoke({"log": []}, thread_id="t", max_steps=3)
        else:
            asyncio.run(app.ainvoke({"log": []}, thread_id="t", max_steps=3))
    assert caught.value.node == "x"
    state = app.get_state("t")
    assert state.steps == 3  # x, then y and sub/c0 saved as finished beside the refusal


# ------------------------------------------------ found by the model through ainvoke/astream


def _capped_looping_beside_an_entry() -> CompiledGraph[Any]:
    """x (``max_runs=1``) runs, then goes to itself and to the entry ``sub`` (two nodes)."""
    child = Graph(Log, name="child")
    child.node("c0", start=True, then="c1")(lambda state: {"log": ["c0"]})
    child.node("c1", then=END)(lambda state: {"log": ["c1"]})
    g = Graph(Log, max_steps=3)
    g.node("x", start=True, then=("x", "sub"), max_runs=1, guards=[Guard("x", max=5)])(
        lambda state: {"log": ["x"]}
    )
    g.subgraph("sub", child, then=END)
    return g.compile(checkpointer=MemorySaver())


def test_an_async_run_does_not_count_the_step_of_a_node_its_cap_refused() -> None:
    """The second superstep holds x (at its ``max_runs``) and the entry ``sub``. The cap
    refuses x, which takes no step (concepts.md "Caps inside a superstep"); the child
    runs c0 and c1 (steps 2 and 3 of ``max_steps=3``), and x's ``NodeCapError`` is the
    run's error, as under ``invoke``. ``ainvoke`` counted x's refused step in its step
    pool, so c1 became step 4: ``StepLimitError``, and ``get_state().steps`` 2."""
    app = _capped_looping_beside_an_entry()
    with pytest.raises(NodeCapError):
        app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").steps == 3
    with pytest.raises(NodeCapError):
        asyncio.run(app.ainvoke({"log": []}, thread_id="a"))
    assert app.get_state("a").steps == 3
