"""Durable workers: app.submit / app.wait and ``corral worker``, on PostgreSQL and SQLite.

Faults (killed workers, expired leases, a database restart) are in test_worker_faults.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
from graphs.worker_graph import CLEAN, g

from corral import (
    END,
    Command,
    CompiledGraph,
    CorralError,
    Graph,
    MemorySaver,
    PostgresSaver,
    Resume,
    SqliteSaver,
)
from corral.errors import RunFailedError, WaitTimeoutError
from corral.workers import Worker, queue_for
from corral.workers.queue import QueuedRun, dump_input

HERE = Path(__file__).resolve().parent
GRAPH = f"{HERE.parent / 'graphs' / 'worker_graph.py'}:g"


def start(topic: str = "x") -> dict[str, Any]:
    return {"topic": topic, "log": [], "total": 0, "answer": ""}


@pytest.fixture(params=["postgres", "sqlite"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The --db of a fresh store: a PostgreSQL URL or a SQLite file."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "runs.sqlite")


@pytest.fixture
def app(db: str) -> Iterator[CompiledGraph[Any]]:
    saver = PostgresSaver(db) if db.startswith("postgresql://") else SqliteSaver(db)
    yield g.compile(checkpointer=saver)
    saver.close()


def drain(app: CompiledGraph[Any], concurrency: int = 2) -> int:
    """Run a worker in this process until no queued run is ready."""
    worker = Worker(app, concurrency=concurrency, poll_s=0.01, log=None)
    return worker.run(until_idle=True)


def test_a_submitted_run_ends_like_invoke(app: CompiledGraph[Any]) -> None:
    """submit queues, a worker runs, wait returns the Run an invoke would have."""
    app.submit(start(), thread_id="t1")
    assert drain(app) == 1
    run = app.wait("t1", timeout=10)
    expected = g.compile(checkpointer=MemorySaver()).invoke(start())
    assert (run.status, run.state, run.thread_id) == ("done", expected.state, "t1")
    assert {k: run.state[k] for k in CLEAN} == CLEAN


def test_many_runs_and_runs_of_one_thread_go_in_order(app: CompiledGraph[Any]) -> None:
    """Ten threads at once; two runs of one thread run one after the other."""
    for i in range(10):
        app.submit(start(), thread_id=f"t{i}")
    app.submit({"topic": "again", "log": ["second"]}, thread_id="t0")
    assert drain(app, concurrency=4) == 11
    for i in range(1, 10):
        assert app.wait(f"t{i}", timeout=10).state["total"] == 11_111
    again = app.wait("t0", timeout=10).state
    assert again["log"] == [*CLEAN["log"], "second", *CLEAN["log"]]
    assert again["total"] == 22_222 and again["topic"] == "again"


def test_an_interrupted_run_waits_for_resume(app: CompiledGraph[Any]) -> None:
    """An interrupt leaves the queue; submit(Resume(v)) continues the thread."""
    app.submit(start("ask"), thread_id="t")
    drain(app)
    paused = app.wait("t", timeout=10)
    assert paused.status == "interrupted"
    assert [i.value for i in paused.interrupts] == ["publish?"]
    assert drain(app) == 0, "nothing runs until it is answered"
    app.submit(Resume("ship it"), thread_id="t")
    drain(app)
    done = app.wait("t", timeout=10)
    assert done.status == "done" and done.state["answer"] == "ship it"
    assert done.state["log"] == CLEAN["log"]


def test_a_failed_run_is_reported_by_wait(app: CompiledGraph[Any]) -> None:
    """A node that raises: the run is failed and wait raises RunFailedError naming it."""
    app.submit(start("boom"), thread_id="t")
    drain(app)
    with pytest.raises(RunFailedError, match=r"run \d+ of thread 't' failed in a worker") as info:
        app.wait("t", timeout=10)
    assert "publish" in info.value.error and "the printer is on fire" in info.value.error
    assert info.value.thread_id == "t"


def test_wait_without_a_worker_times_out(app: CompiledGraph[Any]) -> None:
    """No worker: wait(timeout=...) raises WaitTimeoutError saying the run is queued."""
    app.submit(start(), thread_id="t")
    with pytest.raises(WaitTimeoutError, match=r"still queued after timeout=0.05") as info:
        app.wait("t", timeout=0.05)
    assert info.value.status == "queued" and isinstance(info.value, TimeoutError)
    with pytest.raises(CorralError, match=r"thread 'nobody' has no queued run"):
        app.wait("nobody")


def test_submit_needs_a_store_with_a_queue() -> None:
    """MemorySaver keeps no queue: submit says which checkpointers do."""
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(CorralError, match=r"PostgresSaver\(url\) or SqliteSaver\(path\)"):
        app.submit(start(), thread_id="t")


def worker_process(db: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``corral worker`` on the test graph in a child process."""
    return subprocess.Popen(
        [sys.executable, "-m", "corral", "worker", GRAPH, "--db", db, "--poll", "0.02", *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_the_worker_command_runs_queued_runs(app: CompiledGraph[Any], db: str) -> None:
    """corral worker --until-idle runs what is queued; events are JSON lines on stderr."""
    for i in range(3):
        app.submit(start(), thread_id=f"t{i}")
    proc = worker_process(db, "--until-idle", "--concurrency", "2")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    kinds = [e["event"] for e in events(err)]
    assert kinds[0] == "started" and kinds[-1] == "stopped"
    assert kinds.count("claimed") == 3 and kinds.count("done") == 3
    assert all(app.wait(f"t{i}", timeout=1).state["total"] == 11_111 for i in range(3))


def test_sigterm_releases_a_run_that_does_not_finish(
    app: CompiledGraph[Any], db: str, tmp_path: Path
) -> None:
    """SIGTERM: no new run is taken; a held run still going after --grace goes back to the
    queue, and another worker finishes it from its last checkpoint."""
    hold = tmp_path / "hold"
    hold.touch()
    app.submit(start(), thread_id="t")
    proc = worker_process(db, "--grace", "0.2", env={"CORRAL_HOLD_FLAG": str(hold)})
    assert proc.stderr is not None
    for line in proc.stderr:
        if '"claimed"' in line:
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    kinds = [e["event"] for e in events(err)]
    assert "stopping" in kinds and "released" in kinds and kinds[-1] == "stopped"
    hold.unlink()
    assert drain(app) == 1
    run = app.wait("t", timeout=10)
    assert run.state["log"] == CLEAN["log"]


def test_two_workers_share_the_queue(app: CompiledGraph[Any]) -> None:
    """Two workers on one database: every run is done exactly once."""
    for i in range(12):
        app.submit(start(), thread_id=f"t{i}")
    counts: list[int] = []
    threads = [threading.Thread(target=lambda: counts.append(drain(app, 2))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == 12
    for i in range(12):
        assert app.wait(f"t{i}", timeout=1).state["log"] == CLEAN["log"]


def test_ctrl_c_while_the_queue_waits_for_another_writer_is_heard_at_once(
    tmp_path: Path,
) -> None:
    """Submitting to a SQLite run queue whose file another connection holds (timeout_s=20)
    raises KeyboardInterrupt within a second of SIGINT, not when SQLite's wait ends, leaves
    no transaction open, and the queue works once the lock is gone."""
    import sqlite3
    import time

    from corral.workers._sqlite import SqliteQueue

    path = str(tmp_path / "q.sqlite")
    queue = SqliteQueue(path, timeout_s=20)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    # Ctrl-C must mean KeyboardInterrupt here, as in a terminal: pytest started in the
    # background by a shell without job control (`pytest &`) inherits SIGINT ignored, and
    # Python keeps it ignored, so the signal would be dropped and submit would wait 20 s.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            queue.submit("t", None, resume=False)
        took = time.monotonic() - started
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        holder.execute("ROLLBACK")
        holder.close()
    assert took < 1.5, f"KeyboardInterrupt {took:.2f} s after the wait began (SIGINT at 0.3 s)"
    assert queue.submit("t", None, resume=False) >= 1


def test_a_queue_that_another_writer_holds_past_timeout_s_says_so(tmp_path: Path) -> None:
    """Submitting to a SQLite run queue whose file another connection holds longer than
    timeout_s raises CheckpointError naming the file, timeout_s and a way out, as the
    saver does, not SQLite's bare 'database is locked'."""
    import sqlite3

    from corral.errors import CheckpointError
    from corral.workers._sqlite import SqliteQueue

    path = str(tmp_path / "q.sqlite")
    queue = SqliteQueue(path, timeout_s=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(CheckpointError) as info:
            queue.submit("t", None, resume=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(info.value) == (
        f"cannot queue a run in {path!r}: another process held it for more than "
        "timeout_s=0.2; raise timeout_s or run fewer writers at once"
    )
    assert info.value.path == path
    assert queue.submit("t", None, resume=False) >= 1


def test_the_worker_command_in_process_gives_back_the_signal_handlers(tmp_path: Path) -> None:
    """main(['worker', ...]) run in-process (a test, an embedding app) hands SIGINT and
    SIGTERM back to the handlers it found, so Ctrl-C works again once it returns."""
    from corral.cli import main

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    db = str(tmp_path / "runs.sqlite")
    assert main(["worker", GRAPH, "--db", db, "--until-idle", "--poll", "0.01"]) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


DEPS_GRAPH = f"{HERE.parent / 'graphs' / 'deps_graph.py'}"


def deps_worker(db: str, *args: str) -> list[str]:
    """The command line of ``corral worker`` on the deps graph."""
    return [sys.executable, "-m", "corral", "worker", f"{DEPS_GRAPH}:g", "--db", db, *args]


@pytest.fixture
def deps_app(db: str) -> Iterator[CompiledGraph[Any]]:
    from graphs.deps_graph import g as deps_graph

    saver = PostgresSaver(db) if db.startswith("postgresql://") else SqliteSaver(db)
    yield deps_graph.compile(checkpointer=saver)
    saver.close()


def test_the_worker_command_hands_deps_to_every_run(deps_app: CompiledGraph[Any], db: str) -> None:
    """--deps MODULE:FACTORY: FACTORY() is called once, when the worker starts, and every
    run the worker makes (from both its threads) reads that object as ctx.deps."""
    for i in range(3):
        deps_app.submit({"name": f"n{i}", "answer": ""}, thread_id=f"t{i}")
    proc = subprocess.Popen(
        deps_worker(db, "--deps", f"{DEPS_GRAPH}:make_tools", "--until-idle", "--concurrency", "2"),
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    answers = [deps_app.wait(f"t{i}", timeout=1).state["answer"] for i in range(3)]
    assert answers == [f"hello n{i} from client 1 of process {proc.pid}" for i in range(3)]


def test_a_worker_hands_its_deps_to_every_run(deps_app: CompiledGraph[Any]) -> None:
    """Worker(app, deps=...) in a process of your own."""
    from graphs.deps_graph import Tools

    tools = Tools()
    deps_app.submit({"name": "ann", "answer": ""}, thread_id="t")
    Worker(deps_app, poll_s=0.01, log=None, deps=tools).run(until_idle=True)
    answer = deps_app.wait("t", timeout=1).state["answer"]
    assert answer == f"hello ann from client {tools.number} of process {os.getpid()}"


@pytest.mark.parametrize(
    ("deps", "says"),
    [
        ("make_tools", "must be MODULE:FACTORY"),
        (f"{DEPS_GRAPH}:nothing", "has no attribute 'nothing'"),
        ("no_such_module_here:make", "no_such_module_here"),
    ],
)
def test_a_worker_given_bad_deps_takes_no_run(
    deps_app: CompiledGraph[Any], db: str, deps: str, says: str
) -> None:
    deps_app.submit({"name": "ann", "answer": ""}, thread_id="t")
    done = subprocess.run(
        deps_worker(db, "--deps", deps, "--until-idle"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert says in " ".join(done.stderr.split()) and "Traceback" not in done.stderr
    with pytest.raises(WaitTimeoutError):
        deps_app.wait("t", timeout=0.01)


class _Count(TypedDict):
    n: int


routed = Graph(_Count, name="routed")


@routed.node(start=True)
def decide(state: _Count) -> Command[Literal["big", "__end__"]]:
    return Command(update={"n": state["n"] * 10}, goto="big" if state["n"] > 1 else END)


@routed.node(then=END)
def big(state: _Count) -> dict[str, object]:
    return {"n": state["n"] + 1}


def test_a_queued_command_updates_the_thread_and_takes_its_goto(db: str) -> None:
    """A run queued with a Command (as corral serve queues command={"update", "goto"}) is
    applied by the worker as if the node that ran last had returned it; a goto that node
    gives no route to fails the run with the engine's message."""
    from corral.workers.queue import dump_command

    saver = PostgresSaver(db) if db.startswith("postgresql://") else SqliteSaver(db)
    app = routed.compile(checkpointer=saver)
    runs = queue_for(app)

    def queue(thread: str, command: Command[Any]) -> None:
        uuid = f"run-{thread}-{command.goto}"
        runs.add(
            QueuedRun(0, thread, None, False, None, 0, "routed", dump_command(command), uuid=uuid)
        )

    try:
        assert app.invoke({"n": 1}, thread_id="t").state == {"n": 10}  # decide ended it
        queue("t", Command(update={"n": 5}, goto="big"))
        drain(app)
        assert app.wait("t", timeout=10).state == {"n": 6}  # decide's update, then big
        queue("t", Command(goto="decide"))  # big, which ran last, routes only to END
        drain(app)
        with pytest.raises(RunFailedError, match="big"):
            app.wait("t", timeout=10)
    finally:
        saver.close()


def test_a_queued_run_keeps_its_budget(db: str) -> None:
    """submit(..., budget=) travels with the queued run: the worker stops it with
    BudgetError under a small budget, and a larger one lets the thread go on."""
    from unit.test_cost_runtime import looping

    from corral import Budget, Cost

    saver = PostgresSaver(db) if db.startswith("postgresql://") else SqliteSaver(db)
    app = looping().compile(checkpointer=saver)
    try:
        app.submit({"n": 0, "log": []}, thread_id="t", budget=Budget(usd="0.05"))
        drain(app)
        with pytest.raises(RunFailedError, match=r"BudgetError: stopped before 'work'"):
            app.wait("t", timeout=10)
        assert app.get_state("t").spent == Cost(calls=3, usd="0.05")
        app.submit(None, thread_id="t", budget=Budget(usd=1))
        drain(app)
        run = app.wait("t", timeout=10)
        assert (run.status, run.spent) == ("done", Cost(calls=6, usd="0.11"))
        with pytest.raises(CorralError, match=r"budget"):
            app.submit(None, thread_id="t", budget={"usd": 1})  # type: ignore[arg-type]
    finally:
        saver.close()


def test_a_worker_takes_only_the_runs_of_its_graphs(app: CompiledGraph[Any]) -> None:
    """A run queued for another graph (corral serve's graph column) is left to that
    graph's workers; a worker takes its own graph's runs and those of app.submit."""
    runs = queue_for(app)
    queued = {}
    for graph in ("other", "work"):
        input, resume = dump_input(start(), getattr(app.checkpointer, "serializer", None))
        run = QueuedRun(0, f"t-{graph}", input, resume, None, 0, graph, uuid=str(uuid.uuid4()))
        runs.add(run)
        queued[graph] = run.uuid
    app.submit(start(), thread_id="t-submit")
    assert drain(app) == 2
    statuses = {graph: runs.get(run_uuid) for graph, run_uuid in queued.items()}
    assert {graph: run and run.status for graph, run in statuses.items()} == {
        "other": "queued",
        "work": "done",
    }
