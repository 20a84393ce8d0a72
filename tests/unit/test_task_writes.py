"""Finished tasks of a fan-out are recorded as they finish, so a crash re-runs only the rest.

A crash is simulated in-process by a node raising :class:`Crash`, a ``BaseException`` the
runtime does not catch (as it does not catch ``KeyboardInterrupt``): nothing after it runs,
no partial checkpoint is written, and the thread is continued with ``invoke(None, ...)``.
The real thing, with processes killed by ``os._exit``, is in
``tests/integration/test_crash_recovery.py``.
"""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    CheckpointError,
    Graph,
    MemorySaver,
    PostgresSaver,
    Resume,
    Send,
    SqliteSaver,
    interrupt,
)
from corral.checkpoint import Checkpoint
from corral.errors import SerializationError


class Crash(BaseException):
    """Stands for the process dying inside a node."""


class Fan(TypedDict):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]


def fanout(calls: list[str], crash: set[str], *, is_async: bool = False) -> Graph[Fan]:
    """``plan`` fans out to ``a``, ``b`` and ``c``, which join in ``report``.

    Each run appends its name to ``calls``; a name in ``crash`` dies (once) before returning.
    """
    g = Graph(Fan, name="fan")

    def body(name: str, value: int) -> dict[str, object]:
        calls.append(name)
        if name in crash:
            crash.discard(name)
            raise Crash(name)
        return {"log": [name], "total": value}

    if is_async:
        # a waits until c has finished: so when c dies, b has finished and a has not.
        gates: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}  # one per asyncio.run

        def gate() -> asyncio.Event:
            return gates.setdefault(asyncio.get_running_loop(), asyncio.Event())

        @g.node(start=True, then=("a", "b", "c"))
        async def plan(state: Fan) -> dict[str, object]:
            return body("plan", 0)

        @g.node(then="report")
        async def a(state: Fan) -> dict[str, object]:
            await gate().wait()
            return body("a", 1)

        @g.node(then="report")
        async def b(state: Fan) -> dict[str, object]:
            return body("b", 10)

        @g.node(then="report")
        async def c(state: Fan) -> dict[str, object]:
            await asyncio.sleep(0)
            out = body("c", 100)
            gate().set()
            return out

    else:

        @g.node(start=True, then=("a", "b", "c"))
        def plan(state: Fan) -> dict[str, object]:
            return body("plan", 0)

        @g.node(then="report")
        def a(state: Fan) -> dict[str, object]:
            return body("a", 1)

        @g.node(then="report")
        def b(state: Fan) -> dict[str, object]:
            return body("b", 10)

        @g.node(then="report")
        def c(state: Fan) -> dict[str, object]:
            return body("c", 100)

    @g.node(then=END)
    def report(state: Fan) -> dict[str, object]:
        return body("report", 1000)

    return g


CLEAN = {"log": ["plan", "a", "b", "c", "report"], "total": 1111}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[MemorySaver | SqliteSaver | PostgresSaver]:
    made: MemorySaver | SqliteSaver | PostgresSaver
    if request.param == "memory":
        made = MemorySaver()
    elif request.param == "postgres":
        made = PostgresSaver(request.getfixturevalue("postgres_url"))
    else:
        made = SqliteSaver(tmp_path / "c.sqlite")
    yield made
    made.close()


def test_a_crash_in_a_fan_out_reruns_only_the_unfinished_task(
    saver: MemorySaver | SqliteSaver,
) -> None:
    """a and b finished before c died: on resume only c runs again, then the join."""
    calls: list[str] = []
    app = fanout(calls, {"c"}).compile(checkpointer=saver)
    with pytest.raises(Crash):
        app.invoke({"log": []}, thread_id="t")
    assert calls == ["plan", "a", "b", "c"]
    run = app.invoke(None, thread_id="t")
    assert calls == ["plan", "a", "b", "c", "c", "report"]
    assert run.state == CLEAN
    assert run.steps == 5 and run.supersteps == 3, "recovered tasks count once, like any run"


def test_an_async_fan_out_records_tasks_in_finish_order(saver: MemorySaver | SqliteSaver) -> None:
    """Under ainvoke, b finished, c died while a still slept: only a and c run again."""
    calls: list[str] = []
    app = fanout(calls, {"c"}, is_async=True).compile(checkpointer=saver)
    with pytest.raises(Crash):
        asyncio.run(app.ainvoke({"log": []}, thread_id="t"))
    assert calls == ["plan", "b", "c"]
    run = asyncio.run(app.ainvoke(None, thread_id="t"))
    assert calls == ["plan", "b", "c", "c", "a", "report"]
    assert run.state == CLEAN, "merged in task order, whatever order they finished in"
    assert run.steps == 5


def test_a_single_task_superstep_records_nothing_before_its_checkpoint() -> None:
    """One task per superstep: one put and no put_writes, so a loop keeps one commit a step."""
    calls: list[str] = []
    counted = Counting()
    app = fanout(calls, set()).compile(checkpointer=counted)
    app.invoke({"log": []}, thread_id="t")
    # input and plan: a put each; the fan-out: a put_writes per task, then its put; report
    assert counted.calls == ["put", "put"] + ["put_writes"] * 3 + ["put", "put"]


def test_send_tasks_of_one_node_are_told_apart_by_position(
    saver: MemorySaver | SqliteSaver,
) -> None:
    """Three Send runs of one node: the two that finished are kept, only the third reruns."""

    class Map(TypedDict):
        items: list[int]
        out: Annotated[list[int], operator.add]

    g = Graph(Map)
    calls: list[int] = []
    crash = {30}

    @g.node(start=True)
    def split(state: Map) -> None:
        return None

    @g.router("split")
    def fan(state: Map) -> list[Send[Literal["work"]]]:
        return [Send("work", i) for i in state["items"]]

    @g.node(then=END)
    def work(item: int) -> dict[str, object]:
        calls.append(item)
        if item in crash:
            crash.discard(item)
            raise Crash(item)
        return {"out": [item * 2]}

    app = g.compile(checkpointer=saver)
    with pytest.raises(Crash):
        app.invoke({"items": [10, 20, 30]}, thread_id="t")
    run = app.invoke(None, thread_id="t")
    assert calls == [10, 20, 30, 30]
    assert run.state["out"] == [20, 40, 60]


def test_pending_writes_are_superseded_by_the_next_checkpoint(
    saver: MemorySaver | SqliteSaver,
) -> None:
    """A record lives until its superstep's checkpoint is put, then the store drops it."""
    saver.put(Checkpoint("t", "1", None, {"n": 0}))
    record = {"task": 1, "node": "b", "update": {"n": 1}, "goto": [Send("w", (1, 2))]}
    saver.put_writes("t", "1", 1, record)
    saver.put_writes("t", "1", 0, {"task": 0, "node": "a", "update": None, "goto": None})
    assert saver.pending_writes("t", "1") == {
        0: {"task": 0, "node": "a", "update": None, "goto": None},
        1: record,
    }
    saver.put_writes("t", "1", 1, {**record, "update": {"n": 2}})
    assert saver.pending_writes("t", "1")[1]["update"] == {"n": 2}, "a second put replaces"
    assert saver.pending_writes("t", "nope") == {} and saver.pending_writes("x", "1") == {}
    saver.put(Checkpoint("t", "2", "1", None, [("a", {"n": 1})]))
    assert saver.pending_writes("t", "1") == {}
    if type(saver) is SqliteSaver:
        conn = sqlite3.connect(saver.path)
        assert conn.execute("SELECT count(*) FROM corral_pending").fetchone() == (0,)
        conn.close()
    if isinstance(saver, PostgresSaver):
        with saver.pool.connection() as pg:
            assert pg.execute("SELECT count(*) FROM corral_pending").fetchone() == (0,)


def test_a_fork_supersedes_the_records_after_its_parent(
    saver: MemorySaver | SqliteSaver | PostgresSaver,
) -> None:
    """A fork's first checkpoint continues an older checkpoint: the tasks recorded after
    that one are superseded too, the newest's are kept."""
    saver.put(Checkpoint("t", "1", None, {"n": 0}))
    saver.put(Checkpoint("t", "2", "1", None, [("a", {"n": 1})]))
    saver.put_writes("t", "1", 0, {"task": 0, "node": "a", "update": {"n": 1}, "goto": None})
    saver.put_writes("t", "2", 0, {"task": 0, "node": "a", "update": {"n": 2}, "goto": None})
    saver.put(Checkpoint("t", "3", "1", {"n": 5}, newest_read="2"))
    assert saver.pending_writes("t", "1") == {}
    assert saver.pending_writes("t", "2")[0]["update"] == {"n": 2}


def test_a_write_for_an_unknown_checkpoint_is_refused(saver: MemorySaver | SqliteSaver) -> None:
    """put_writes names the checkpoint it cannot find and says to put it first."""
    saver.put(Checkpoint("t", "1", None, {"n": 0}))
    for thread, checkpoint in (("t", "9"), ("nobody", "1")):
        with pytest.raises(CheckpointError, match=r"no such checkpoint; put the checkpoint"):
            saver.put_writes(thread, checkpoint, 0, {"task": 0, "node": "a"})


def test_an_unstorable_update_in_a_fan_out_is_named_and_keeps_the_checkpoint(
    saver: MemorySaver | SqliteSaver,
) -> None:
    """A sibling's value JSON cannot hold fails when it is recorded, naming key and node;
    the finished siblings before it stay recorded and the thread stays resumable."""

    class S(TypedDict):
        log: Annotated[list[object], operator.add]

    g = Graph(S)

    @g.node(start=True, then=END)
    def a(state: S) -> dict[str, object]:
        return {"log": ["a"]}

    @g.node(start=True, then=END)
    def b(state: S) -> dict[str, object]:
        return {"log": [object()]}

    app = g.compile(checkpointer=saver)
    with pytest.raises(SerializationError) as caught:
        app.invoke({"log": []}, thread_id="t")
    assert caught.value.location == "update['log'][0]"
    assert "(written by 'b')" in str(caught.value)
    snapshot = app.get_state("t")
    assert snapshot.next == ("a", "b") and snapshot.values == {"log": []}
    assert list(saver.pending_writes("t", snapshot.checkpoint_id)) == [0]


class ThreeMethods:
    """A store of one's own with only put, chain and checkpoints (enough before there was
    one Checkpointer protocol)."""

    def put(self, checkpoint: Checkpoint) -> None: ...

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        return []

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        return []


def test_a_store_lacking_methods_is_refused_at_compile_naming_them() -> None:
    """compile() names what a store of one's own lacks, instead of an AttributeError later
    in a run (the one crash-safe task record needs put_writes and pending_writes)."""
    with pytest.raises(CheckpointError) as caught:
        fanout([], set()).compile(checkpointer=ThreeMethods())  # type: ignore[arg-type]
    message = str(caught.value)
    assert "lacks newest_id, wants_snapshot, put_writes, pending_writes" in message
    assert "check_free, release" in message and "Checkpointer" in message


def test_update_state_after_a_crash_runs_the_finished_tasks_again() -> None:
    """An update written while a superstep is half done drops the writes its finished tasks
    recorded (made on the state before the update): they run again on the new state."""
    calls: list[str] = []
    app = fanout(calls, {"c"}).compile(checkpointer=MemorySaver())
    with pytest.raises(Crash):
        app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"total": 5})
    run = app.invoke(None, thread_id="t")
    assert calls == ["plan", "a", "b", "c", "a", "b", "c", "report"]
    assert run.state["total"] == 1116


def test_a_crash_after_an_interrupt_resume_keeps_both_kinds_of_finished_task() -> None:
    """Siblings kept by an interrupt and siblings recorded after the resume both stay done."""

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(S)
    calls: list[str] = []
    crash: set[str] = set()

    @g.node(start=True, then=("a", "b", "c"))
    def plan(state: S) -> None:
        return None

    @g.node(then=END)
    def a(state: S) -> dict[str, object]:
        calls.append("a")
        return {"log": ["a"]}

    @g.node(then=END)
    def b(state: S) -> dict[str, object]:
        calls.append("b")
        return {"log": [f"b {interrupt('b?')}"]}

    @g.node(then=END)
    def c(state: S) -> dict[str, object]:
        calls.append("c")
        answer = interrupt("c?")
        if "c" in crash:
            crash.discard("c")
            raise Crash
        return {"log": [f"c {answer}"]}

    app = g.compile(checkpointer=MemorySaver())
    paused = app.invoke({"log": []}, thread_id="t")
    assert paused.status == "interrupted" and calls == ["a", "b", "c"]
    answers = {p.id: f"{p.value[0]} ok" for p in paused.interrupts}
    crash.add("c")
    with pytest.raises(Crash):
        app.invoke(Resume(answers), thread_id="t")
    assert calls == ["a", "b", "c", "b", "c"]
    run = app.invoke(Resume(answers), thread_id="t")
    assert calls == ["a", "b", "c", "b", "c", "c"], "a kept by the pause, b by its record"
    assert run.state["log"] == ["a", "b b ok", "c c ok"]
    assert run.steps == 4


class Counting(MemorySaver):
    """A checkpointer that records which writing method the runtime called, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def put(self, checkpoint: Checkpoint) -> None:
        self.calls.append("put")
        super().put(checkpoint)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        self.calls.append("put_writes")
        super().put_writes(thread_id, checkpoint_id, task, record)


def test_a_crash_while_routing_a_fan_out_runs_no_node_again(
    saver: MemorySaver | SqliteSaver,
) -> None:
    """Every node of the superstep had returned and was recorded: only the routes run again."""

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(S)
    calls: list[str] = []
    crash = {"route"}

    @g.node(start=True)
    def a(state: S) -> dict[str, object]:
        calls.append("a")
        return {"log": ["a"]}

    @g.router("a")
    def after_a(state: S) -> Literal["done"]:
        calls.append("route")
        if "route" in crash:
            crash.discard("route")
            raise Crash
        return "done"

    @g.node(start=True, then="done")
    def b(state: S) -> dict[str, object]:
        calls.append("b")
        return {"log": ["b"]}

    @g.node(then=END)
    def done(state: S) -> dict[str, object]:
        calls.append("done")
        return {"log": ["done"]}

    app = g.compile(checkpointer=saver)
    with pytest.raises(Crash):
        app.invoke({"log": []}, thread_id="t")
    run = app.invoke(None, thread_id="t")
    assert calls == ["a", "b", "route", "route", "done"]
    assert run.state["log"] == ["a", "b", "done"] and run.steps == 3
