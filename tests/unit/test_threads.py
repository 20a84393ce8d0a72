"""Threads with MemorySaver: resume, new runs, history, forks, time travel, checkpoints."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    CheckpointError,
    CompiledGraph,
    ConcurrentRunError,
    End,
    Graph,
    Guard,
    MemorySaver,
    NodeError,
    Overwrite,
    Send,
    StepLimitError,
    ThreadStateError,
)
from corral.checkpoint import Checkpoint
from corral.checkpoint._store import SNAPSHOT_MIN
from corral.runtime import CheckpointWritten

pytestmark = pytest.mark.usefixtures("engine_path")
"""Each test runs three ways: invoke, invoke through the general path, ainvoke."""


class Count(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def counter(target: int, calls: list[int] | None = None, *, extra: bool = False) -> Graph[Count]:
    g = Graph(Count, max_steps=1000)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        if calls is not None:
            calls.append(state["n"] + 1)
        return {"n": state["n"] + 1, "log": [f"c{state['n'] + 1}"]}

    @g.router("count", guards=[Guard("count", max=10_000)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= target else "count"

    if extra:

        @g.node(start=True, then=END)
        def other(state: Count) -> None:
            return None

    return g


def test_a_thread_id_is_created_when_missing() -> None:
    """With a checkpointer and no thread_id, invoke creates one."""
    app = counter(3).compile(checkpointer=MemorySaver())
    run = app.invoke({"n": 0})
    assert isinstance(run.thread_id, str) and run.thread_id
    assert app.get_state(run.thread_id).values["n"] == 3
    assert run.checkpoint_id == app.get_state(run.thread_id).checkpoint_id


def test_a_checkpoint_id_without_its_thread_id_is_refused() -> None:
    """invoke(input, checkpoint_id=...) with no thread_id names the id and asks for the
    thread, instead of starting a new thread that ignores the checkpoint."""
    app = counter(3).compile(checkpointer=MemorySaver())
    first = app.invoke({"n": 0}).checkpoint_id
    with pytest.raises(ThreadStateError, match="thread_id") as caught:
        app.invoke({"n": 1}, checkpoint_id=first)
    assert caught.value.checkpoint_id == first and repr(first) in str(caught.value)


def test_step_limit_then_continue_with_bigger_cap() -> None:
    """After StepLimitError, invoke(None, thread_id=T, max_steps=bigger) goes on; no re-runs."""
    calls: list[int] = []
    app = counter(30, calls).compile(checkpointer=MemorySaver())
    with pytest.raises(StepLimitError):
        app.invoke({"n": 0}, thread_id="t", max_steps=12)
    assert app.get_state("t").values["n"] == 12
    run = app.invoke(None, thread_id="t", max_steps=100)
    assert run.state["n"] == 30 and run.steps == 30
    assert calls == list(range(1, 31)), "a finished node run never runs again"
    assert run.state["log"] == [f"c{i}" for i in range(1, 31)]


def test_node_error_keeps_state_and_resume_retries() -> None:
    """A crash in a node leaves the last superstep's checkpoint; invoke(None) retries it."""
    flaky = {"fail": True}
    g = Graph(Count)

    @g.node(start=True, then="b")
    def a(state: Count) -> dict[str, object]:
        return {"n": 1}

    @g.node(then=END)
    def b(state: Count) -> dict[str, object]:
        if flaky["fail"]:
            raise ConnectionError("flaky")
        return {"n": state["n"] + 1}

    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(NodeError):
        app.invoke({"n": 0}, thread_id="t")
    assert app.get_state("t").values["n"] == 1
    assert app.get_state("t").next == ("b",)
    flaky["fail"] = False
    run = app.invoke(None, thread_id="t")
    assert run.state["n"] == 2 and run.steps == 2


def test_siblings_that_finished_before_an_error_do_not_rerun() -> None:
    """When one branch of a fan-out fails, the finished branches are kept for the resume."""
    calls: list[str] = []
    flaky = {"fail": True}

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True, then=END)
    def a(state: S) -> dict[str, object]:
        calls.append("a")
        return {"log": ["a"]}

    @g.node(start=True, then=END)
    def b(state: S) -> dict[str, object]:
        calls.append("b")
        if flaky["fail"]:
            raise RuntimeError("down")
        return {"log": ["b"]}

    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(NodeError):
        app.invoke({}, thread_id="t")
    flaky["fail"] = False
    run = app.invoke(None, thread_id="t")
    assert run.state["log"] == ["a", "b"]
    assert calls == ["a", "b", "b"]


def test_new_input_on_a_finished_thread_starts_a_new_run() -> None:
    """invoke(input, thread_id=T) on a finished thread merges the input; counters restart."""
    app = counter(3).compile(checkpointer=MemorySaver())
    first = app.invoke({"n": 0}, thread_id="t")
    assert first.steps == 3
    second = app.invoke({"log": ["again"]}, thread_id="t")
    assert second.steps == 1, "n is already 3, so count runs once and the router ends"
    assert second.state["n"] == 4
    assert second.state["log"] == ["c1", "c2", "c3", "again", "c4"]
    assert second.guards == {("count", "count"): 0}
    saver = app.checkpointer
    assert saver is not None
    inputs = [c for c in saver.checkpoints("t") if c.meta["source"] == "input"]
    assert len(inputs) == 2 and inputs[0].snapshot is not None
    # the new run's input is a write on the first run's last checkpoint (test_new_runs.py)
    assert inputs[1].snapshot is None and inputs[1].parent_id == first.checkpoint_id
    assert inputs[1].writes == [("__input__", {"log": ["again"]})]


class Chat(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


@pytest.mark.parametrize("nested", [False, True])
def test_a_continued_run_hands_out_copies_of_the_lists_it_rebuilt(
    tmp_path: Any, nested: bool
) -> None:
    """A thread continued with a new saver rebuilds its list of messages; a node and a
    router that change what they read (the messages, flat or with a list inside) change
    neither the state nor what the next reader gets."""
    from corral import SqliteSaver

    seen: list[list[dict[str, Any]]] = []
    g = Graph(Chat, max_steps=1000)

    @g.node(start=True)
    def chat(state: Chat) -> dict[str, object]:
        messages = state["messages"]
        seen.append(json.loads(json.dumps(messages)))
        new: dict[str, Any] = {"text": f"m{len(messages)}"}
        if nested:
            new["parts"] = [len(messages)]
        for message in messages:
            message["text"] = "changed by the node"
            if nested:
                message["parts"].append(-1)
        return {"messages": [new]}

    @g.router("chat", guards=[Guard("chat", max=10_000)])
    def again(state: Chat) -> Literal["chat"] | End:
        messages = state["messages"]
        messages[0]["text"] = "changed by the router"
        if nested:
            messages[-1]["parts"].clear()
        return "chat" if len(messages) < 6 else END

    path = tmp_path / "chat.sqlite"

    def wanted(n: int) -> list[dict[str, Any]]:
        return [{"text": f"m{i}", **({"parts": [i]} if nested else {})} for i in range(n)]

    with SqliteSaver(path) as saver, pytest.raises(StepLimitError):
        g.compile(checkpointer=saver).invoke({"messages": []}, thread_id="t", max_steps=3)
    with SqliteSaver(path) as saver:
        run = g.compile(checkpointer=saver).invoke(None, thread_id="t")
    assert run.state["messages"] == wanted(6)
    assert seen == [wanted(n) for n in range(6)]


def test_invoke_none_on_a_finished_thread_returns_it() -> None:
    """Continuing a finished thread runs nothing."""
    app = counter(2).compile(checkpointer=MemorySaver())
    app.invoke({"n": 0}, thread_id="t")
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and run.state["n"] == 2 and run.trace == []


def test_unknown_thread_is_a_clear_error() -> None:
    """invoke(None) on a thread with no checkpoint says how to start it."""
    app = counter(2).compile(checkpointer=MemorySaver())
    with pytest.raises(CheckpointError, match="no checkpoint"):
        app.invoke(None, thread_id="nope")


def test_history_is_newest_first_and_get_state_matches() -> None:
    """history() lists a snapshot per checkpoint, newest first."""
    app = counter(3).compile(checkpointer=MemorySaver())
    app.invoke({"n": 0}, thread_id="t")
    history = app.history("t")
    assert [h.values["n"] for h in history] == [3, 2, 1, 0]
    assert [h.source for h in history] == ["loop", "loop", "loop", "input"]
    assert history[0] == app.get_state("t")
    assert history[0].status == "done" and history[0].next == ()
    assert history[-1].next == ("count",)
    assert history[1].guards == {("count", "count"): 2}


class Messages(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


def test_each_snapshot_of_history_is_its_own() -> None:
    """Changing a message in one snapshot of history (a flat one, a nested one, the list)
    changes no other snapshot, no later history and no stored state."""
    g = Graph(Messages, max_steps=100)

    @g.node(start=True)
    def chat(state: Messages) -> dict[str, object]:
        n = len(state["messages"])
        return {"messages": [{"n": n, "tags": ["t"]} if n % 2 else {"n": n, "text": "hi"}]}

    @g.router("chat", guards=[Guard("chat", max=30, otherwise=END)])
    def again(state: Messages) -> Literal["chat"] | End:
        return "chat" if len(state["messages"]) < SNAPSHOT_MIN + 5 else END

    app = g.compile(checkpointer=MemorySaver())
    app.invoke({"messages": [{"n": -1, "text": "first"}]}, thread_id="t")
    expected = [
        [dict(m, tags=list(m["tags"])) if "tags" in m else dict(m) for m in h.values["messages"]]
        for h in app.history("t")
    ]
    history = app.history("t")
    for i, snapshot in enumerate(history):
        for message in snapshot.values["messages"]:
            message["n"] = "changed"
            if "tags" in message:
                message["tags"].append("changed")
        snapshot.values["messages"].append({"n": "extra"})
        assert [h.values["messages"] for h in history[i + 1 :]] == expected[i + 1 :]
        assert [h.values["messages"] for h in app.history("t")] == expected
    assert app.get_state("t").values["messages"] == expected[0]


def test_update_state_forks_and_keeps_history() -> None:
    """update_state writes a new checkpoint through the reducers and leaves history intact."""
    app = counter(5).compile(checkpointer=MemorySaver(), interrupt_before=["count"])
    app.invoke({"n": 0}, thread_id="t")
    before = app.history("t")
    new_id = app.update_state("t", {"n": 3, "log": ["edited"]})
    after = app.history("t")
    assert len(after) == len(before) + 1 and after[1:] == before
    state = app.get_state("t")
    assert state.checkpoint_id == new_id and state.values == {"n": 3, "log": ["edited"]}
    assert state.next == ("count",)
    run = app.invoke(None, thread_id="t")
    assert run.state["n"] == 4 and run.steps == 1
    assert run.status == "interrupted", "interrupt_before pauses before every run of count"


def test_update_state_as_node_takes_that_nodes_routes() -> None:
    """With as_node, the next nodes are that node's routes on the new state."""
    app = counter(5).compile(checkpointer=MemorySaver())
    app.invoke({"n": 0}, thread_id="t", max_steps=100)
    app.update_state("t", {"n": 1}, as_node="count")
    assert app.get_state("t").next == ("count",)
    run = app.invoke(None, thread_id="t")
    assert run.state["n"] == 5


def test_time_travel_from_an_older_checkpoint() -> None:
    """invoke(None, thread_id=T, checkpoint_id=old) reruns from there as a fork."""
    calls: list[int] = []
    app = counter(4, calls).compile(checkpointer=MemorySaver())
    app.invoke({"n": 0}, thread_id="t")
    history = app.history("t")
    old = next(h for h in history if h.values["n"] == 2)
    calls.clear()
    run = app.invoke(None, thread_id="t", checkpoint_id=old.checkpoint_id)
    assert run.state["n"] == 4 and calls == [3, 4]
    assert len(app.history("t")) == len(history) + 2
    assert app.get_state("t", old.checkpoint_id).values["n"] == 2


class ChainCounting(MemorySaver):
    """A MemorySaver that records the checkpoint each chain() call asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str | None] = []

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        self.asked.append(checkpoint_id)
        return super().chain(thread_id, checkpoint_id)


def test_a_fork_names_the_newest_without_reading_its_state() -> None:
    """A fork reads the chain of the checkpoint it starts from only (the thread's newest is
    named by newest_id, not rebuilt), and still refuses to go on once another run moved the
    thread past the newest it named."""
    saver = ChainCounting()
    app = counter(30).compile(checkpointer=saver)
    app.invoke({"n": 0}, thread_id="t")
    old = next(h for h in app.history("t") if h.values["n"] == 2)
    saver.asked.clear()
    run = app.invoke(None, thread_id="t", checkpoint_id=old.checkpoint_id)
    assert run.state["n"] == 30 and saver.asked == [old.checkpoint_id]

    class Late(ChainCounting):  # another run puts a checkpoint after the fork named the newest
        def newest_id(self, thread_id: str) -> str | None:
            newest = super().newest_id(thread_id)
            app.invoke({"n": 0}, thread_id="t")
            return newest

    late = Late()
    app = counter(3).compile(checkpointer=late)
    app.invoke({"n": 0}, thread_id="t")
    first = app.history("t")[-1].checkpoint_id
    with pytest.raises(ConcurrentRunError):
        app.invoke(None, thread_id="t", checkpoint_id=first)


def test_a_checkpoint_from_a_changed_graph_is_refused() -> None:
    """Resuming a thread written by a graph whose nodes changed raises CheckpointError."""
    saver = MemorySaver()
    with pytest.raises(StepLimitError):
        counter(10).compile(checkpointer=saver).invoke({"n": 0}, thread_id="t", max_steps=3)
    changed = counter(10, extra=True).compile(checkpointer=saver)
    with pytest.raises(CheckpointError, match="different nodes or routes"):
        changed.invoke(None, thread_id="t")


def test_one_checkpoint_per_superstep_with_writes_and_periodic_snapshots() -> None:
    """Each superstep puts one checkpoint of its writes; a snapshot comes every K."""
    saver = MemorySaver()
    puts: list[Checkpoint] = []
    original = saver.put

    def spy(checkpoint: Checkpoint) -> None:
        puts.append(checkpoint)
        original(checkpoint)

    saver.put = spy  # type: ignore[method-assign]
    events: list[Any] = []
    run = (
        counter(45)
        .compile(checkpointer=saver)
        .invoke({"n": 0}, thread_id="t", on_event=events.append)
    )
    assert len(puts) == run.supersteps + 1 == 46
    assert sum(isinstance(e, CheckpointWritten) for e in events) == 46
    with_snapshot = [i for i, c in enumerate(puts) if c.snapshot is not None]
    assert with_snapshot == [0, SNAPSHOT_MIN, 2 * SNAPSHOT_MIN]
    assert puts[5].writes == [("count", {"n": 5, "log": ["c5"]})]
    for checkpoint in puts:
        json.dumps(checkpoint.meta)
    assert CompiledGraph(counter(45).spec(), checkpointer=saver).get_state("t").values["n"] == 45


def test_overwrite_and_send_args_survive_replay() -> None:
    """State rebuilt from writes equals the live state, Overwrite and Send args included."""

    class S(TypedDict):
        docs: list[str]
        out: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True)
    def split(state: S) -> dict[str, object]:
        return {"out": Overwrite(["reset"])}

    @g.router("split")
    def fan(state: S) -> list[Send[Literal["work"]]]:
        return [Send("work", (i, d)) for i, d in enumerate(state["docs"])]

    @g.node(then=END, max_runs=5)
    def work(arg: tuple[int, str]) -> dict[str, object]:
        return {"out": [f"{arg[0]}:{arg[1]}"]}

    app = g.compile(checkpointer=MemorySaver(), interrupt_after=["split"])
    paused = app.invoke({"docs": ["a", "b"], "out": ["old"]}, thread_id="t")
    assert paused.status == "interrupted" and paused.state["out"] == ["reset"]
    run = app.invoke(None, thread_id="t")
    assert run.state["out"] == ["reset", "0:a", "1:b"]
    assert app.get_state("t").values == run.state


def test_a_failed_route_keeps_the_merged_superstep() -> None:
    """A guard used up without otherwise raises after the merge; the merged state is saved."""
    calls: list[int] = []
    g = Graph(Count)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        calls.append(state["n"])
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=2)])
    def again(state: Count) -> Literal["count"] | End:
        return "count"

    from corral import GuardExhaustedError

    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(GuardExhaustedError) as caught:
        app.invoke({"n": 0}, thread_id="t")
    assert caught.value.state["n"] == 3
    state = app.get_state("t")
    assert state.values["n"] == 3 and state.status == "error"
    with pytest.raises(GuardExhaustedError):
        app.invoke(None, thread_id="t")
    assert calls == [0, 1, 2], "the routes are evaluated again; no node runs again"


def test_thread_api_errors_are_clear() -> None:
    """Thread calls without a checkpointer, and bad updates, say what is wrong."""
    from corral import CorralError, InvalidUpdateError

    plain = counter(2).compile()
    with pytest.raises(CheckpointError, match="checkpointer"):
        plain.get_state("t")
    with pytest.raises(CorralError, match="checkpointer"):
        plain.invoke(None, thread_id="t")
    app = counter(2).compile(checkpointer=MemorySaver())
    app.invoke({"n": 0}, thread_id="t")
    with pytest.raises(InvalidUpdateError, match="'nope'"):
        app.update_state("t", {"nope": 1})
    with pytest.raises(CheckpointError, match="no checkpoint"):
        app.get_state("t", "missing-id")


def test_history_of_a_write_the_reducers_no_longer_take_is_a_checkpoint_error() -> None:
    """A graph whose reducer refuses what the thread stored: history names the checkpoint
    it cannot replay, with the same CheckpointError as get_state, not the reducer's error
    blamed on a node."""
    saver = MemorySaver()
    counter(3).compile(checkpointer=saver).invoke({"n": 0, "log": []}, thread_id="t")

    def refuse(current: list[str], update: list[str]) -> list[str]:
        raise ValueError("no")

    class Strict(TypedDict):
        n: int
        log: Annotated[list[str], refuse]

    g = Graph(Strict)

    @g.node(start=True, then=END)
    def count(state: Strict) -> dict[str, object]:
        return {}

    app = g.compile(checkpointer=saver)
    for read in (app.get_state, app.history):
        with pytest.raises(CheckpointError, match="cannot be replayed with this graph's reducers"):
            read("t")
