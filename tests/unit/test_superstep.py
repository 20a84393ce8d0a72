"""The superstep core's decisions as a user sees them: Command nodes that end their branch,
joins left waiting, forks as a Command node, and streams that check their arguments at once."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Command,
    Graph,
    InvalidUpdateError,
    MemorySaver,
    StuckJoinError,
)
from corral.errors import StreamModeError


class S(TypedDict):
    n: int


def triage_graph(returns: Any) -> Graph[S]:
    g = Graph(S)

    @g.node(start=True)
    def triage(state: S) -> Command[Literal["a", "b"]]:
        return returns  # type: ignore[no-any-return]

    @g.node(then=END)
    def a(state: S) -> dict[str, object]:
        return {"n": state["n"] + 10}

    @g.node(then=END)
    def b(state: S) -> None:
        return None

    return g


@pytest.mark.parametrize(
    "returns", [{"n": 1}, None, Command(update={"n": 1})], ids=["dict", "none", "no-goto"]
)
@pytest.mark.parametrize("how", ["invoke", "on_event", "ainvoke", "stream"])
def test_a_command_node_without_goto_ends_its_branch(returns: Any, how: str) -> None:
    """A Command node that returns no goto ends its branch: status done, 1 step, every path."""
    app = triage_graph(returns).compile()
    if how == "invoke":
        run = app.invoke({"n": 0})
    elif how == "on_event":
        run = app.invoke({"n": 0}, on_event=lambda event: None)
    elif how == "ainvoke":
        import asyncio

        run = asyncio.run(app.ainvoke({"n": 0}))
    else:
        updates = list(app.stream({"n": 0}))
        assert [node for node, _ in updates] == ["triage"]
        return
    assert (run.status, run.steps, run.supersteps) == ("done", 1, 1)
    assert run.state["n"] == (0 if returns is None else 1)


def test_update_state_as_a_command_node_goes_where_its_command_says() -> None:
    """update_state(as_node=<Command node>) is that node returning the value: a Command's
    goto is followed; a plain dict ends its branch, as it does in a run (contract 7a)."""
    app = triage_graph(Command(goto="a")).compile(
        checkpointer=MemorySaver(), interrupt_before=["triage"]
    )
    app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", Command(update={"n": 5}, goto="a"), as_node="triage")
    snapshot = app.get_state("t")
    assert snapshot.next == ("a",) and snapshot.status == "running"
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and run.state["n"] == 15
    app.invoke({"n": 0}, thread_id="u")
    app.update_state("u", {"n": 5}, as_node="triage")
    assert app.get_state("u").next == () and app.get_state("u").status == "done"


class Fan(TypedDict):
    n: int


def stuck_join_graph() -> Graph[Fan]:
    g = Graph(Fan)

    @g.node(start=True)
    def split(state: Fan) -> Command[Literal["left", "join"]]:
        return Command(goto="join")

    @g.node(then="join")
    def left(state: Fan) -> None: ...

    @g.node(wait_for=("left",), then=END, ignore=("CR304",))  # stuck on purpose
    def join(state: Fan) -> None: ...

    return g


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "checkpointer"])
def test_a_listed_node_counts_at_its_join_without_routing_there(how: str) -> None:
    """API.md section 4: a join runs once every listed node has run since its own last run;
    ``a`` routes elsewhere and still counts, as ``b`` does beside the join (toward the
    join's next run: there is none here, so the run ends)."""
    g = Graph(Log)
    g.node("fork", start=True, then=("a", "b"))(lambda state: {"log": ["fork"]})
    g.node("a", then="after")(lambda state: {"log": ["a"]})
    g.node("b", then="join")(lambda state: {"log": ["b"]})
    g.node("after", then=END)(lambda state: {"log": ["after"]})
    g.node("join", wait_for=("a", "b"), then=END)(lambda state: {"log": ["join"]})
    assert g.check() == []
    app = g.compile(checkpointer=MemorySaver()) if how == "checkpointer" else g.compile()
    if how == "ainvoke":
        import asyncio

        run = asyncio.run(app.ainvoke({"log": []}))
    else:
        run = app.invoke({"log": []}, thread_id="t" if how == "checkpointer" else None)
    assert run.state["log"] == ["fork", "a", "b", "after", "join"]


@pytest.mark.parametrize("how", ["invoke", "on_event", "checkpointer", "ainvoke"])
def test_a_run_that_would_end_with_a_waiting_join_raises(how: str) -> None:
    """A run ending while join 'join' still waits for 'left' raises StuckJoinError (CR304)."""
    g = stuck_join_graph()
    app = g.compile(checkpointer=MemorySaver()) if how == "checkpointer" else g.compile()
    with pytest.raises(StuckJoinError) as info:
        if how == "ainvoke":
            import asyncio

            asyncio.run(app.ainvoke({"n": 0}))
        elif how == "on_event":
            app.invoke({"n": 0}, on_event=lambda event: None)
        else:
            app.invoke({"n": 0}, thread_id="t" if how == "checkpointer" else None)
    err = info.value
    assert (err.join, err.waiting_for) == ("join", ("left",))
    assert "join 'join' still waits for ['left']" in str(err)
    if how == "checkpointer":
        assert app.get_state("t").status == "error"


def test_stream_checks_its_mode_and_input_at_the_call() -> None:
    """stream() raises at the call, before any next(), for a bad mode or a bad input."""
    app = triage_graph(None).compile()
    with pytest.raises(StreamModeError) as info:
        app.stream({"n": 0}, mode="update")  # type: ignore[call-overload]
    assert info.value.mode == "update"
    with pytest.raises(InvalidUpdateError):
        app.stream({"m": 0})
    with pytest.raises(InvalidUpdateError):
        app.astream({"m": 0})


@pytest.mark.parametrize("update", [5, "n", [("n", 1)]], ids=["int", "str", "pairs"])
@pytest.mark.parametrize("how", ["invoke", "on_event", "ainvoke"])
def test_a_command_whose_update_is_not_a_dict_names_the_node(update: Any, how: str) -> None:
    """Command(update=5) from a node is an InvalidUpdateError naming the node and what to
    return, never a bare TypeError."""
    app = triage_graph(Command(update=update, goto="a")).compile()
    with pytest.raises(
        InvalidUpdateError, match=r"node 'triage' returned Command\(update="
    ) as info:
        if how == "ainvoke":
            import asyncio

            asyncio.run(app.ainvoke({"n": 0}))
        elif how == "on_event":
            app.invoke({"n": 0}, on_event=lambda event: None)
        else:
            app.invoke({"n": 0})
    assert info.value.node == "triage" and info.value.key is None
    assert "dict" in str(info.value)
