"""A thread whose last run failed says so (contract 14): status ``"error"`` and
``snapshot.error`` on every saver, in ``corral threads`` and ``corral show``; a later
``invoke(None, ...)`` continues it from where it failed."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Context,
    Graph,
    Guard,
    NodeCapError,
    NodeError,
    RunLimitError,
    SqliteSaver,
    StepLimitError,
)
from corral.checkpoint import Checkpointer
from corral.cli import main
from corral.errors import RunFailedError


class N(TypedDict):
    n: int


def flaky(broken: list[bool]) -> Graph[N]:
    """one -> two; two raises while ``broken[0]``."""
    g = Graph(N)

    @g.node(start=True, then="two")
    def one(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.node(then=END)
    def two(state: N) -> dict[str, Any]:
        if broken[0]:
            raise ValueError("the service is down")
        return {"n": state["n"] + 10}

    return g


def test_a_node_error_leaves_the_thread_in_error(saver: Checkpointer) -> None:
    """After a NodeError the thread's status is 'error' with the error's type and message,
    never 'running'; once fixed, invoke(None) runs the failed node, not the one before."""
    broken = [True]
    app = flaky(broken).compile(checkpointer=saver)
    with pytest.raises(NodeError):
        app.invoke({"n": 0}, thread_id="t")
    snapshot = app.get_state("t")
    assert snapshot.status == "error" and snapshot.next == ("two",)
    assert snapshot.error is not None and snapshot.error.type == "NodeError"
    assert "node 'two' raised ValueError: the service is down" in snapshot.error.message
    assert app.history("t")[0].error == snapshot.error
    broken[0] = False
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and run.state["n"] == 11
    assert app.get_state("t").error is None


def test_a_cap_leaves_the_thread_in_error(saver: Checkpointer) -> None:
    """A StepLimitError or NodeCapError is recorded like a node error."""
    g = Graph(N)

    @g.node(start=True, max_runs=2, ignore=("CR105",))
    def spin(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.router("spin", ignore=("CR201",))
    def again(state: N) -> Literal["spin"]:
        return "spin"

    app = g.compile(checkpointer=saver, max_steps=50)
    with pytest.raises(NodeCapError):
        app.invoke({"n": 0}, thread_id="runs", max_steps=50)
    assert app.get_state("runs").error is not None
    assert app.get_state("runs").error.type == "NodeCapError"  # type: ignore[union-attr]
    with pytest.raises(StepLimitError):
        app.invoke({"n": 0}, thread_id="steps", max_steps=1)
    failed = app.get_state("steps")
    assert failed.status == "error" and failed.error is not None
    assert failed.error.type == "StepLimitError" and "max_steps=1" in failed.error.message


@pytest.mark.parametrize(
    ("max_runs", "max_steps", "raised"), [(2, 50, NodeCapError), (9, 3, StepLimitError)]
)
def test_every_bound_is_caught_as_a_run_limit_with_the_state_reached(
    max_runs: int, max_steps: int, raised: type[RunLimitError]
) -> None:
    """``except RunLimitError`` catches a run stopped by any of its bounds, with the state
    it reached; a node that raises is not one."""
    g = Graph(N)

    @g.node(start=True, max_runs=max_runs, ignore=("CR105",))
    def spin(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.router("spin", ignore=("CR201",))
    def again(state: N) -> Literal["spin"]:
        return "spin"

    try:
        g.compile().invoke({"n": 0}, max_steps=max_steps)
    except RunLimitError as err:
        assert type(err) is raised and err.state == {"n": min(max_runs, max_steps)}
    else:
        pytest.fail("the run was not stopped")
    with pytest.raises(NodeError) as caught:
        flaky([True]).compile().invoke({"n": 0})
    assert not isinstance(caught.value, RunLimitError)


def test_a_failed_routers_superstep_continues_with_each_routers_own_step(
    saver: Checkpointer,
) -> None:
    """A router that raised after its parallel superstep merged: the continued run takes
    the superstep's routes again, and each router's ``ctx.step`` is its own node run's,
    as in a run that never failed (not the run's count of node runs)."""

    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    failing, seen = [False], []
    g = Graph(Log)

    @g.node(start=True, then=("a", "b"))
    def fan(state: Log) -> dict[str, Any]:
        return {}

    @g.node()
    def a(state: Log) -> dict[str, Any]:
        return {"log": ["a"]}

    @g.node()
    def b(state: Log) -> dict[str, Any]:
        return {"log": ["b"]}

    @g.node(then=END)
    def c(state: Log) -> dict[str, Any]:
        return {"log": ["c"]}

    @g.router("a")
    def after_a(state: Log, ctx: Context) -> Literal["c"]:
        seen.append(("a", ctx.step))
        return "c"

    @g.router("b")
    def after_b(state: Log, ctx: Context) -> Literal["c"]:
        seen.append(("b", ctx.step))
        if failing[0]:
            failing[0] = False
            raise ValueError("the router's service is down")
        return "c"

    g.compile().invoke({"log": []})
    clean, seen[:] = list(seen), []
    app = g.compile(checkpointer=saver)
    failing[0] = True
    with pytest.raises(NodeError):
        app.invoke({"log": []}, thread_id="t")
    assert seen == clean
    seen.clear()
    assert app.invoke(None, thread_id="t").state["log"] == ["a", "b", "c"]
    assert seen == clean == [("a", 2), ("b", 3)]


def test_corral_threads_and_show_report_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`corral threads` and `corral show` say 'error' and what the error was."""
    db = tmp_path / "runs.sqlite"
    with SqliteSaver(db) as sqlite:
        app = flaky([True]).compile(checkpointer=sqlite)
        with pytest.raises(NodeError):
            app.invoke({"n": 0}, thread_id="t1")
    capsys.readouterr()
    assert main(["threads", "--db", str(db), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "error" and row["error"].startswith("NodeError: node 'two'")
    assert main(["show", "t1", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "thread t1: error after 1 steps" in text
    assert "failed: NodeError: node 'two' raised ValueError" in text
    # the command is wrapped as a shell reads it: between words, and inside a long path
    joined = text.replace(" \\\n   ", "").replace("\\\n", "")
    assert f"corral run PATH --thread t1 --db {db}" in joined


def test_a_run_failed_in_a_worker_leaves_the_thread_in_error(tmp_path: Path) -> None:
    """A queued run whose node raises in a worker: wait raises RunFailedError, and the
    thread's status is 'error' with the same error, not 'running'."""
    from corral.workers import Worker

    broken = [True]
    with SqliteSaver(tmp_path / "q.sqlite") as sqlite:
        app = flaky(broken).compile(checkpointer=sqlite)
        app.submit({"n": 0}, thread_id="w")
        Worker(app, concurrency=1, poll_s=0.01, log=None).run(until_idle=True)
        with pytest.raises(RunFailedError, match="the service is down"):
            app.wait("w", timeout=10)
        snapshot = app.get_state("w")
        assert snapshot.status == "error" and snapshot.error is not None
        assert "the service is down" in snapshot.error.message


def test_an_update_of_a_failed_thread_keeps_the_error_until_a_run_continues(
    saver: Checkpointer,
) -> None:
    """update_state on a failed thread (a fix of its state) keeps status and error; as_node
    of the failed node stands in for its run, and the thread is done."""
    app = flaky([True]).compile(checkpointer=saver)
    with pytest.raises(NodeError):
        app.invoke({"n": 0}, thread_id="t")
    app.update_state("t", {"n": 5})
    edited = app.get_state("t")
    assert edited.status == "error" and edited.error is not None and edited.next == ("two",)
    app.update_state("t", {"n": 50}, as_node="two")
    done = app.get_state("t")
    assert (done.status, done.error, done.next, done.values["n"]) == ("done", None, (), 50)


def capped_beside(calls: list[str], broken: bool) -> Graph[N]:
    """start -> (capped, other) twice: the second time ``capped`` is at its ``max_runs``;
    ``other`` raises on its second run when ``broken``."""
    g = Graph(N)

    @g.node(start=True, then=("capped", "other"))
    def start(state: N) -> None:
        return None

    @g.node(max_runs=1, then="start", guards=[Guard("start", max=1, otherwise=END)])
    def capped(state: N) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    @g.node(then=END)
    def other(state: N) -> None:
        calls.append("other")
        if broken and len(calls) == 2:
            raise ValueError("the service is down")

    return g


@pytest.mark.parametrize("broken", [False, True])
def test_a_cap_refuses_its_node_alone(saver: Checkpointer, engine_path: str, broken: bool) -> None:
    """max_runs caps that node alone: a sibling in the same superstep still runs (it is
    saved and not run again on resume); a sibling's failure is the run's error, as in any
    superstep (it is found before the cap's error is raised)."""
    calls: list[str] = []
    app = capped_beside(calls, broken).compile(checkpointer=saver)
    with pytest.raises(NodeError if broken else NodeCapError) as caught:
        app.invoke({"n": 0}, thread_id="t")
    assert calls == ["other", "other"]
    assert caught.value.node == ("other" if broken else "capped")  # type: ignore[attr-defined]
    failed = app.get_state("t")
    assert failed.status == "error" and failed.next == ("capped", "other")
    assert failed.error is not None and failed.error.type == type(caught.value).__name__
    if not broken:  # the finished sibling is not run again
        with pytest.raises(NodeCapError):
            app.invoke(None, thread_id="t")
        assert calls == ["other", "other"]
