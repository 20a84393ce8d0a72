"""Time travel through every feature (contract 7a) on every saver: ``update_state`` with
``as_node`` behaves as if that node had run and returned the update, and a fork runs what
comes after it afresh, a subgraph's child included."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from corral import (
    END,
    Command,
    CorralError,
    End,
    Graph,
    Guard,
    MemorySaver,
    Resume,
    StuckJoinError,
    interrupt,
)
from corral.checkpoint import Checkpointer


class Fan(TypedDict):
    log: Annotated[list[str], operator.add]


def fan_join() -> Graph[Fan]:
    """a fans out to b and c; both lead to the join, which waits for both; then d."""
    g = Graph(Fan)

    @g.node(start=True, then=("b", "c"))
    def a(state: Fan) -> dict[str, Any]:
        return {"log": ["a"]}

    @g.node(then="join")
    def b(state: Fan) -> dict[str, Any]:
        return {"log": ["b"]}

    @g.node(then="join")
    def c(state: Fan) -> dict[str, Any]:
        return {"log": ["c"]}

    @g.node(wait_for=("b", "c"), then="d")
    def join(state: Fan) -> dict[str, Any]:
        return {"log": ["join"]}

    @g.node(then=END)
    def d(state: Fan) -> dict[str, Any]:
        return {"log": ["d"]}

    return g


def test_as_node_of_a_listed_node_is_heard_by_its_join(saver: Checkpointer) -> None:
    """update_state(as_node='b') while b and c wait: b arrives at the join, c still runs,
    and the join and its successor run, as if b had run and returned the update."""
    app = fan_join().compile(checkpointer=saver, interrupt_before=["b"])
    app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").next == ("b", "c")
    app.update_state("t", {"log": ["B by hand"]}, as_node="b")
    snapshot = app.get_state("t")
    assert snapshot.values["log"] == ["a", "B by hand"]
    assert snapshot.next == ("c",) and snapshot.status == "running"
    run = app.invoke(None, thread_id="t")
    assert run.status == "done"
    assert run.state["log"] == ["a", "B by hand", "c", "join", "d"]


def test_as_node_after_the_other_listed_node_releases_the_join(saver: Checkpointer) -> None:
    """c ran first and arrived; as_node='b' completes the join's wait: the join is next."""
    g = Graph(Fan)

    @g.node(start=True, then=("c", "x"))
    def a(state: Fan) -> dict[str, Any]:
        return {"log": ["a"]}

    @g.node(then="join")
    def c(state: Fan) -> dict[str, Any]:
        return {"log": ["c"]}

    @g.node(then="b")
    def x(state: Fan) -> dict[str, Any]:
        return {"log": ["x"]}

    @g.node(then="join")
    def b(state: Fan) -> dict[str, Any]:
        return {"log": ["b"]}

    @g.node(wait_for=("b", "c"), then="d")
    def join(state: Fan) -> dict[str, Any]:
        return {"log": ["join"]}

    @g.node(then=END)
    def d(state: Fan) -> dict[str, Any]:
        return {"log": ["d"]}

    app = g.compile(checkpointer=saver, interrupt_before=["b"])
    app.invoke({"log": []}, thread_id="t")
    assert app.get_state("t").next == ("b",)
    app.update_state("t", {"log": ["B"]}, as_node="b")
    assert app.get_state("t").next == ("join",)
    run = app.invoke(None, thread_id="t")
    assert run.state["log"][-2:] == ["join", "d"] and run.status == "done"


def test_as_node_counts_guards_and_uses_the_otherwise_route(saver: Checkpointer) -> None:
    """as_node takes a guarded route like a run: counted, and once used up, its otherwise."""

    class N(TypedDict):
        n: int

    g = Graph(N)

    @g.node(start=True, then="work", guards=[Guard("work", max=1, otherwise="stop")])
    def work(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.node(then=END)
    def stop(state: N) -> None:
        return None

    app = g.compile(checkpointer=saver, interrupt_before=["work", "stop"])
    app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", {"n": 10}, as_node="work")
    first = app.get_state("t")
    assert first.guards[("work", "work")] == 1 and first.next == ("work",)
    assert first.status == "interrupted", "interrupt_before=['work'] pauses as in a run"
    app.update_state("t", {"n": 20}, as_node="work")
    second = app.get_state("t")
    assert second.next == ("stop",) and second.values["n"] == 20


def test_as_node_returning_a_command_goes_where_it_says(saver: Checkpointer) -> None:
    """update_state(T, Command(update=..., goto='a'), as_node=X) routes like X returning it;
    a plain dict from a Command node ends its branch, as a real run of it does."""

    class N(TypedDict):
        n: int

    g = Graph(N)

    @g.node(start=True)
    def triage(state: N) -> Command[Literal["a", "b"]]:
        return Command(goto="b")

    @g.node(then=END)
    def a(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 10}

    @g.node(then=END)
    def b(state: N) -> None:
        return None

    app = g.compile(checkpointer=saver, interrupt_before=["triage"])
    app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", Command(update={"n": 5}, goto="a"), as_node="triage")
    assert app.get_state("t").next == ("a",)
    assert app.invoke(None, thread_id="t").state["n"] == 15
    app.invoke({"n": 0}, thread_id="u")
    app.update_state("u", {"n": 5}, as_node="triage")
    ended = app.get_state("u")
    assert ended.next == () and ended.status == "done" and ended.values["n"] == 5


def test_as_node_calls_the_router_on_the_updated_state(saver: Checkpointer) -> None:
    """A router after the as_node node reads the state with the update merged."""

    class N(TypedDict):
        n: int

    g = Graph(N)

    @g.node(start=True)
    def count(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=100)])
    def again(state: N) -> Literal["count"] | End:
        return END if state["n"] >= 3 else "count"

    app = g.compile(checkpointer=saver)
    app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", {"n": 1}, as_node="count")
    assert app.get_state("t").next == ("count",)
    app.update_state("t", {"n": 7}, as_node="count")
    assert app.get_state("t").next == () and app.get_state("t").status == "done"


def test_as_node_inside_an_interrupted_fan_out_keeps_the_finished_sibling(
    saver: Checkpointer,
) -> None:
    """b finished, c paused in interrupt(): as_node='c' completes the superstep, and b's
    update is merged with c's at its barrier, once."""
    g = Graph(Fan)

    @g.node(start=True, then=("b", "c"))
    def a(state: Fan) -> dict[str, Any]:
        return {"log": ["a"]}

    @g.node(then="join")
    def b(state: Fan) -> dict[str, Any]:
        return {"log": ["b"]}

    @g.node(then="join")
    def c(state: Fan) -> dict[str, Any]:
        return {"log": [str(interrupt("c?"))]}

    @g.node(wait_for=("b", "c"), then=END)
    def join(state: Fan) -> dict[str, Any]:
        return {"log": ["join"]}

    app = g.compile(checkpointer=saver)
    assert app.invoke({"log": []}, thread_id="t").status == "interrupted"
    app.update_state("t", {"log": ["C"]}, as_node="c")
    snapshot = app.get_state("t")
    assert snapshot.values["log"] == ["a", "b", "C"] and snapshot.next == ("join",)
    assert snapshot.interrupts == ()
    run = app.invoke(None, thread_id="t")
    assert run.state["log"] == ["a", "b", "C", "join"]


def test_resume_still_answers_after_a_plain_update(saver: Checkpointer) -> None:
    """update_state without as_node keeps the pause: Resume answers it as before."""

    class N(TypedDict):
        n: int

    g = Graph(N)

    @g.node(start=True, then=END)
    def ask(state: N) -> dict[str, Any]:
        return {"n": state["n"] + int(interrupt("how many?"))}

    app = g.compile(checkpointer=saver)
    app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", {"n": 100})
    assert app.invoke(Resume(5), thread_id="t").state["n"] == 105


class Loop(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def loop_graph(replace: tuple[str, int, dict[str, Any]] | None = None) -> Graph[Loop]:
    """inc loops through a router and double through then=, both guarded; with ``replace``
    = (node, k, update), that node's k-th run (from 0) returns ``update`` instead."""
    g = Graph(Loop)
    runs: dict[str, int] = {}

    def given(name: str, out: dict[str, Any]) -> dict[str, Any]:
        k = runs.get(name, 0)
        runs[name] = k + 1
        if replace is not None and replace[:2] == (name, k):
            return replace[2]
        return out

    @g.node(start=True)
    def inc(state: Loop) -> dict[str, Any]:
        return given("inc", {"n": state["n"] + 1, "log": ["inc"]})

    @g.router("inc", guards=[Guard("inc", max=4, otherwise=END), Guard("double", max=2)])
    def after_inc(state: Loop) -> Literal["inc", "double"] | End:
        if state["n"] > 12:
            return END
        return "double" if state["n"] % 3 == 0 else "inc"

    @g.node(then="inc", guards=[Guard("inc", max=3, otherwise=END)])
    def double(state: Loop) -> dict[str, Any]:
        return given("double", {"n": state["n"] * 2, "log": ["double"]})

    return g


def outcome_of(call: Any) -> tuple[Any, ...]:
    """Return what a run ended with: its values and counters, or the error's type."""
    try:
        run = call()
    except CorralError as error:
        return ("raised", type(error).__name__)
    return ("ended", run.status, run.state, run.steps, dict(run.guards))


@settings(max_examples=40, deadline=None)
@given(
    node=st.sampled_from(["inc", "double"]),
    k=st.integers(0, 3),
    n=st.integers(0, 15),
    start=st.integers(0, 5),
)
def test_as_node_is_that_node_returning_the_update(node: str, k: int, n: int, start: int) -> None:
    """Pausing before every run of a node and answering its k-th run with
    update_state(as_node=node) ends exactly like a run in which that run returned the
    update: the same values, steps, guard counts, status or error."""
    update = {"n": n, "log": ["given"]}
    app = loop_graph().compile(checkpointer=MemorySaver(), interrupt_before=[node])
    thread = "t"

    def drive() -> Any:
        run = app.invoke({"n": start, "log": []}, thread_id=thread)
        seen = 0
        while run.status == "interrupted":
            if seen == k:
                app.update_state(thread, update, as_node=node)
            seen += 1
            run = app.invoke(None, thread_id=thread)
        assume(seen > k)  # the node ran k times or more, so its k-th run was replaced
        return run

    expected = outcome_of(
        lambda: loop_graph((node, k, update)).compile().invoke({"n": start, "log": []})
    )
    got = outcome_of(drive)
    assert got == expected


def test_as_node_that_strands_a_join_ends_like_the_run_would(saver: Checkpointer) -> None:
    """as_node routes only to a join whose other node can no longer run: the checkpoint
    says 'error' with StuckJoinError, as the run would have ended, and continuing raises
    it; it never says 'done' with the join held."""
    g = Graph(Fan)

    @g.node(start=True)
    def split(state: Fan) -> Command[Literal["left", "join"]]:
        return Command(goto="left")

    @g.node(then="join")
    def left(state: Fan) -> dict[str, Any]:
        return {"log": ["left"]}

    @g.node(wait_for=("left",), then=END, ignore=("CR304",))
    def join(state: Fan) -> dict[str, Any]:
        return {"log": ["join"]}

    app = g.compile(checkpointer=saver, interrupt_before=["split"])
    app.invoke({"log": []}, thread_id="t")
    app.update_state("t", Command(goto="join"), as_node="split")
    snapshot = app.get_state("t")
    assert snapshot.status == "error" and snapshot.error is not None
    assert snapshot.error.type == "StuckJoinError"
    with pytest.raises(StuckJoinError):
        app.invoke(None, thread_id="t")
