"""A worker frozen (SIGSTOP) while it holds a run, taken over, then thawed (SIGCONT).

The contract (API.md section 14): a queued input is applied exactly once, whatever happens
to the workers that hold it; a worker whose lease was taken over commits nothing more: its
next commit is refused, it stops running that run, and no node after the one it had in
flight runs twice. Every worker here is a real ``corral worker`` process; the frozen one
stops itself at a named point (see ``tests/graphs/worker_graph.py``), so the test does not
race it.
"""

from __future__ import annotations

import io
import json
import operator
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from graphs.worker_graph import CLEAN, g

from corral import END, CompiledGraph, Graph, PostgresSaver, SqliteSaver
from corral.workers import Worker

GRAPH = str(Path(__file__).resolve().parents[1] / "graphs" / "worker_graph.py") + ":g"
NODES = ["plan", "draft", "check_a", "check_b", "review", "publish"]
HOOKS = ("CORRAL_FREEZE_AT", "CORRAL_FREEZE_FLAG", "CORRAL_HOLD_FLAG", "CORRAL_RUNS_LOG")


def start() -> dict[str, Any]:
    return {"topic": "x", "log": [], "total": 0, "answer": ""}


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


class WorkerProcess:
    """One ``corral worker`` process; its JSON event lines go to a file."""

    def __init__(self, db: str, log: Path, *, lease: float, until_idle: bool, **env: str):
        self.log = log
        clean = {k: v for k, v in os.environ.items() if k not in HOOKS}
        args = [sys.executable, "-m", "corral", "worker", GRAPH, "--db", db]
        args += ["--lease", str(lease), "--poll", "0.02", "--grace", "5"]
        with log.open("w") as err:
            self.process = subprocess.Popen(
                [*args, *(["--until-idle"] if until_idle else [])],
                env={**clean, **env},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.pid = self.process.pid

    def events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def named(self) -> list[str]:
        return [e["event"] for e in self.events()]

    def wait_stopped(self) -> None:
        """Wait until the process stopped itself (state ``T`` in /proc)."""
        deadline = time.monotonic() + 60
        while _state(self.pid) != "T":
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the worker never froze"
            time.sleep(0.01)

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def end(self) -> int:
        """SIGTERM (and SIGCONT, in case it is stopped); return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            os.kill(self.pid, signal.SIGCONT)
        return self.process.wait(timeout=60)


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def committed(app: CompiledGraph[Any], thread: str) -> Counter[str]:
    """Count the node writes in the thread's history (every checkpoint ever committed)."""
    assert app.checkpointer is not None
    return Counter(node for c in app.checkpointer.checkpoints(thread) for node, _ in c.writes)


def assert_applied_once(app: CompiledGraph[Any], thread: str) -> None:
    values = app.get_state(thread).values
    assert {k: values[k] for k in CLEAN} == CLEAN, values
    counts = committed(app, thread)
    assert counts == Counter({"__input__": 1, **dict.fromkeys(NODES, 1)}), counts


def node_runs(path: Path, pid: int) -> list[str]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [node for who, node in (line.split() for line in lines) if who == str(pid)]


def test_a_thawed_worker_does_not_apply_the_input_again(
    app: CompiledGraph[Any], db: str, tmp_path: Path
) -> None:
    """A freezes after deciding the run starts afresh, before its input is committed; B
    takes the run over once A's lease expired and finishes it. Thawed, A's commit of the
    input is refused: the thread holds the input once and each node's write once."""
    app.submit(start(), thread_id="t")
    flag = tmp_path / "freeze"
    flag.touch()
    a = WorkerProcess(
        db,
        tmp_path / "a.log",
        lease=0.5,
        until_idle=True,
        CORRAL_FREEZE_AT="input",
        CORRAL_FREEZE_FLAG=str(flag),
    )
    b: WorkerProcess | None = None
    try:
        a.wait_stopped()
        b = WorkerProcess(db, tmp_path / "b.log", lease=30, until_idle=False)
        run = app.wait("t", timeout=60)
        assert run.status == "done"
        assert b.end() == 0
        a.thaw()
        assert a.process.wait(timeout=60) == 0, a.log.read_text()
    finally:
        a.end()
        if b is not None:
            b.end()
    assert_applied_once(app, "t")
    assert "lost" in a.named(), a.named()
    assert "done" not in a.named()


def test_a_taken_over_worker_commits_nothing_more(
    app: CompiledGraph[Any], db: str, tmp_path: Path
) -> None:
    """A freezes inside ``draft``; B takes the run over and is inside ``draft`` too when A
    thaws. A's commit of ``draft`` is refused and A stops: it runs no later node. B
    finishes the run; each node's write is committed once."""
    app.submit(start(), thread_id="t")
    freeze, hold, runs = tmp_path / "freeze", tmp_path / "hold", tmp_path / "runs"
    freeze.touch()
    hold.touch()
    a = WorkerProcess(
        db,
        tmp_path / "a.log",
        lease=0.5,
        until_idle=True,
        CORRAL_FREEZE_AT="draft",
        CORRAL_FREEZE_FLAG=str(freeze),
        CORRAL_RUNS_LOG=str(runs),
    )
    b: WorkerProcess | None = None
    try:
        a.wait_stopped()
        b = WorkerProcess(
            db,
            tmp_path / "b.log",
            lease=30,
            until_idle=False,
            CORRAL_HOLD_FLAG=str(hold),
            CORRAL_RUNS_LOG=str(runs),
        )
        deadline = time.monotonic() + 60
        while node_runs(runs, b.pid) != ["draft"]:
            assert time.monotonic() < deadline, (b.log.read_text(), runs.read_text(), b.pid)
            time.sleep(0.01)
        a.thaw()
        assert a.process.wait(timeout=60) == 0, a.log.read_text()
        hold.unlink()
        run = app.wait("t", timeout=60)
        assert run.status == "done"
        assert b.end() == 0
    finally:
        hold.unlink(missing_ok=True)
        a.end()
        if b is not None:
            b.end()
    assert node_runs(runs, a.pid) == ["plan", "draft"], a.log.read_text()
    assert node_runs(runs, b.pid) == ["draft", "check_a", "check_b", "review", "publish"]
    assert_applied_once(app, "t")
    assert "lost" in a.named(), a.named()


class Steps(TypedDict):
    log: Annotated[list[str], operator.add]


def gated_graph(entered: list[threading.Event], gates: list[threading.Event]) -> Graph[Steps]:
    """``first -> slow -> last``; the n-th run of ``slow`` sets ``entered[n]`` and waits for
    ``gates[n]``."""
    h = Graph(Steps)
    calls: list[int] = []

    @h.node(start=True, then="slow")
    def first(state: Steps) -> dict[str, object]:
        return {"log": ["first"]}

    @h.node(then="last")
    def slow(state: Steps) -> dict[str, object]:
        n = len(calls)
        calls.append(n)
        entered[n].set()
        assert gates[n].wait(30)
        return {"log": [f"slow#{n}"]}

    @h.node(then=END)
    def last(state: Steps) -> dict[str, object]:
        return {"log": ["last"]}

    return h


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_a_run_released_on_stop_gets_no_commit_from_the_worker_that_released_it(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A worker in your process stops (``stop()``) while a node still runs; after
    ``grace_s`` it releases the run, which B claims. When the old node returns, its commit
    is refused: the released run is B's alone, and ``last`` runs once, in B."""
    saver: PostgresSaver | SqliteSaver = (
        PostgresSaver(request.getfixturevalue("postgres_url"))
        if kind == "postgres"
        else SqliteSaver(tmp_path / "c.sqlite")
    )
    entered = [threading.Event(), threading.Event()]
    gates = [threading.Event(), threading.Event()]
    app = gated_graph(entered, gates).compile(checkpointer=saver)
    app.submit({"log": []}, thread_id="t")
    log_a = io.StringIO()
    a = Worker(app, lease_s=30, grace_s=0.1, poll_s=0.01, log=log_a, name="A")
    a_thread = threading.Thread(target=a.run, daemon=True)
    b = Worker(app, lease_s=30, poll_s=0.01, log=None, name="B")
    b_thread = threading.Thread(target=b.run, daemon=True)
    try:
        a_thread.start()
        assert entered[0].wait(30)
        a.stop()
        a_thread.join(30)
        assert '"event": "released"' in log_a.getvalue()
        b_thread.start()
        assert entered[1].wait(30)
        gates[0].set()  # A's node returns while B's runs
        deadline = time.monotonic() + 30
        while '"event": "lost"' not in log_a.getvalue():
            assert time.monotonic() < deadline, log_a.getvalue()
            time.sleep(0.01)
        gates[1].set()
        assert app.wait("t", timeout=30).state["log"] == ["first", "slow#1", "last"]
    finally:
        for gate in gates:
            gate.set()
        b.stop()
        b_thread.join(30)
    writers = [node for c in saver.checkpoints("t") for node, _ in c.writes]
    assert writers == ["__input__", "first", "slow", "last"]
    saver.close()
