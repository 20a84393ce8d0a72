"""Workers under faults: killed mid-run, a lease that expires under a slow node, a database
restart under load. In each, every submitted run ends with the state of an uninterrupted
run and each node's committed run appears exactly once in the thread's history.

Bounded in time: leases of a fraction of a second, few hypothesis examples.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypedDict

import psycopg
import pytest
from graphs.worker_graph import CLEAN, g
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_cluster import Cluster

from corral import END, CompiledGraph, Graph, PostgresSaver, SqliteSaver
from corral.workers import Worker

GRAPH = str(Path(__file__).resolve().parents[1] / "graphs" / "worker_graph.py") + ":g"
FAST = ["--lease", "0.4", "--poll", "0.02", "--until-idle"]
NODES = ["plan", "draft", "check_a", "check_b", "review", "publish"]


def start() -> dict[str, Any]:
    return {"topic": "x", "log": [], "total": 0, "answer": ""}


def committed(app: CompiledGraph[Any], thread: str) -> Counter[str]:
    """Count the node writes in the thread's history (every checkpoint ever committed)."""
    assert app.checkpointer is not None
    return Counter(node for c in app.checkpointer.checkpoints(thread) for node, _ in c.writes)


def assert_clean(app: CompiledGraph[Any], thread: str) -> None:
    run = app.wait(thread, timeout=30)
    assert run.status == "done"
    assert {k: run.state[k] for k in CLEAN} == CLEAN
    counts = committed(app, thread)
    assert counts == Counter({"__input__": 1, **dict.fromkeys(NODES, 1)}), counts


class Events(io.StringIO):
    """A log that remembers the events and signals when one of ``wanted`` arrives."""

    def __init__(self, *wanted: str) -> None:
        super().__init__()
        self.wanted = wanted
        self.seen = threading.Event()

    def write(self, text: str) -> int:
        if any(f'"event": "{w}"' in text for w in self.wanted):
            self.seen.set()
        return super().write(text)


class Background:
    """A Worker running in a thread of this process until stopped."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.thread = threading.Thread(target=worker.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


@pytest.fixture
def pg_app(postgres_url: str) -> Iterator[CompiledGraph[Any]]:
    saver = PostgresSaver(postgres_url)
    yield g.compile(checkpointer=saver)
    saver.close()


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(NODES))
def test_a_worker_killed_mid_run_is_taken_over(
    pg_app: CompiledGraph[Any], postgres_url: str, tmp_path: Path, node: str
) -> None:
    """SIGKILL inside any node: after the lease expires another worker finishes the run
    from the last checkpoint; no committed node runs again."""
    thread = f"kill-{node}-{uuid.uuid4().hex[:6]}"
    flag = tmp_path / f"die-{thread}"
    flag.touch()
    pg_app.submit(start(), thread_id=thread)
    env = {**os.environ, "CORRAL_DIE_AT": node, "CORRAL_DIE_FLAG": str(flag)}
    victim = subprocess.run(
        [sys.executable, "-m", "corral", "worker", GRAPH, "--db", postgres_url, *FAST],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert victim.returncode == -9, victim.stderr
    rescuer = Background(Worker(pg_app, lease_s=5, poll_s=0.02, log=None))
    try:
        assert_clean(pg_app, thread)
    finally:
        rescuer.stop()


class Slow(TypedDict):
    log: list[str]


def slow_graph(entered: threading.Event, gate: threading.Event) -> Graph[Slow]:
    """``first -> slow -> last``; the first run of ``slow`` waits for ``gate``."""
    h = Graph(Slow)
    calls: list[int] = []

    @h.node(start=True, then="slow")
    def first(state: Slow) -> dict[str, object]:
        return {"log": [*state["log"], "first"]}

    @h.node(then="last")
    def slow(state: Slow) -> dict[str, object]:
        calls.append(1)
        if len(calls) == 1:
            entered.set()
            assert gate.wait(30)
        return {"log": [*state["log"], f"slow#{len(calls)}"]}

    @h.node(then=END)
    def last(state: Slow) -> dict[str, object]:
        return {"log": [*state["log"], "last"]}

    return h


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_a_late_commit_after_lease_expiry_is_refused(
    kind: Literal["postgres", "sqlite"], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Worker A's lease expires while its node runs (no heartbeat in time); B takes over and
    finishes; A's late commit is refused (its lease is B's now), not applied."""
    saver: PostgresSaver | SqliteSaver = (
        PostgresSaver(request.getfixturevalue("postgres_url"))
        if kind == "postgres"
        else SqliteSaver(tmp_path / "c.sqlite")
    )
    entered, gate = threading.Event(), threading.Event()
    app = slow_graph(entered, gate).compile(checkpointer=saver)
    app.submit({"log": []}, thread_id="t")
    log_a = Events("lost", "done", "failed")
    a = Background(Worker(app, lease_s=0.3, heartbeat_s=60, poll_s=0.01, log=log_a, name="A"))
    try:
        assert entered.wait(30)
        b = Background(Worker(app, lease_s=10, poll_s=0.01, log=None, name="B"))
        try:
            run = app.wait("t", timeout=30)
        finally:
            b.stop()
        assert run.state["log"] == ["first", "slow#2", "last"]
        gate.set()
        assert log_a.seen.wait(30)
    finally:
        gate.set()
        a.stop()
    events = log_a.getvalue()
    assert '"event": "lost"' in events and '"event": "done"' not in events
    assert app.get_state("t").values["log"] == ["first", "slow#2", "last"]
    writers = [node for c in saver.checkpoints("t") for node, _ in c.writes]
    assert writers == ["__input__", "first", "slow", "last"]
    saver.close()


def test_a_database_restart_under_load_loses_nothing(
    postgres_cluster: Cluster, postgres_url: str
) -> None:
    """Two workers, 40 runs; the server crashes (immediate stop) and restarts mid-way.
    Every run ends clean, each node committed once."""
    saver = PostgresSaver(postgres_url, timeout_s=60)
    app = g.compile(checkpointer=saver)
    threads = [f"load-{i}" for i in range(40)]
    for thread in threads:
        app.submit(start(), thread_id=thread)
    workers = [
        Background(Worker(app, concurrency=2, lease_s=5, poll_s=0.01, log=None, name=f"w{i}"))
        for i in range(2)
    ]
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            while True:
                row = conn.execute(
                    "SELECT count(*) FROM corral_runs WHERE status = 'done'"
                ).fetchone()
                assert row is not None
                if row[0] >= 3:
                    break
        assert row[0] < 40, "the restart must come while runs are left"
        postgres_cluster.restart("immediate")
        for thread in threads:
            assert_clean(app, thread)
    finally:
        for worker in workers:
            worker.stop()
        saver.close()
