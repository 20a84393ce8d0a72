"""``corral serve`` with runs taken by ``corral worker`` processes, and a server SIGKILLed
mid-run: its runs are taken over and finish exactly once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
from serving.server import GRAPHS, serving  # noqa: E402


def _until(client: Any, tid: str, run_id: str, status: str) -> None:
    deadline = time.monotonic() + 60
    while client.runs.get(tid, run_id)["status"] != status:
        assert time.monotonic() < deadline, f"run {run_id} never became {status}"
        time.sleep(0.05)


def test_runs_left_to_corral_worker_processes(tmp_path: Path) -> None:
    """--workers 0: a corral worker on the same database runs them; wait, stream (values
    as checkpoints land), resume and statuses work as with the server's own workers."""
    db = str(tmp_path / "runs.sqlite")
    with serving(db, tmp_path, "--workers", "0", paths=[f"{GRAPHS}:review"]) as server:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "corral",
                "worker",
                f"{GRAPHS}:review",
                "--db",
                db,
                "--poll",
                "0.05",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            client = langgraph_sdk.get_sync_client(url=server.url)
            tid = client.threads.create()["thread_id"]
            paused = client.runs.wait(tid, "review", input={"topic": "far"})
            assert paused["__interrupt__"][0]["value"] == {"question": "publish 'far'?"}
            assert client.threads.get(tid)["status"] == "interrupted"
            parts = list(client.runs.stream(tid, "review", command={"resume": "yes"}))
            assert parts[0].event == "metadata"
            assert parts[-1].event == "values" and parts[-1].data["answer"] == "yes"
            assert [r["status"] for r in client.runs.list(tid)] == ["success", "success"]
        finally:
            worker.terminate()
            worker.wait(timeout=30)


def test_a_server_killed_mid_run_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL while a node runs; a new server takes the run over after its lease and
    finishes it once: the node's update lands once and the next node runs once."""
    db = str(tmp_path / "runs.sqlite")
    gate = tmp_path / "gate"
    with serving(db, tmp_path, "--lease", "1") as first:
        client = langgraph_sdk.get_sync_client(url=first.url)
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "slow", input={"text": str(gate)})
        queued = client.runs.create(tid, "slow", input={"text": "after"})
        _until(client, tid, run["run_id"], "running")
        first.kill()
    with serving(db, tmp_path, "--lease", "1") as second:
        client = langgraph_sdk.get_sync_client(url=second.url)
        gate.touch()
        client.runs.join(tid, queued["run_id"])
        statuses = [client.runs.get(tid, r["run_id"])["status"] for r in (run, queued)]
        assert statuses == ["success", "success"]
        tokens = client.threads.get_state(tid)["values"]["tokens"]
        assert tokens == ["written", "done", "written", "done"]


def _worker(db: str, graph: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "corral", "worker", f"{GRAPHS}:{graph}", "--db", db]
    return subprocess.Popen(
        [*command, "--poll", "0.05"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def test_a_corral_worker_honours_cancel_and_a_command_update(tmp_path: Path) -> None:
    """A run taken by a corral worker process stops before its next node once cancelled
    (the node it was running finishes and is kept), and a later run's command
    {"update": ...} is merged by that worker before the thread goes on."""
    db = str(tmp_path / "runs.sqlite")
    gate = tmp_path / "gate"
    with serving(db, tmp_path, "--workers", "0", paths=[f"{GRAPHS}:slow"]) as server:
        worker = _worker(db, "slow")
        try:
            client = langgraph_sdk.get_sync_client(url=server.url)
            tid = client.threads.create()["thread_id"]
            run = client.runs.create(tid, "slow", input={"text": str(gate)})
            _until(client, tid, run["run_id"], "running")
            client.runs.cancel(tid, run["run_id"])
            gate.touch()
            client.runs.join(tid, run["run_id"])
            assert client.runs.get(tid, run["run_id"])["status"] == "interrupted"
            state = client.threads.get_state(tid)
            assert state["values"]["tokens"] == ["written"] and state["next"] == ["finish"]

            done = client.runs.wait(tid, "slow", command={"update": {"tokens": ["patched"]}})
            assert done["tokens"] == ["written", "patched", "done"]
        finally:
            worker.terminate()
            worker.wait(timeout=30)


def test_a_corral_worker_takes_only_its_graphs_runs_as_the_server_would(tmp_path: Path) -> None:
    """A corral worker for PATH:slow=quick (the server's name for it) takes only quick's
    runs, in queue order; it stops where the run's own interrupt_before says, and a
    stateless run's thread is gone when the run ends, as with the server's own workers."""
    db = str(tmp_path / "runs.sqlite")
    paths = [f"{GRAPHS}:review", f"{GRAPHS}:slow=quick"]
    with serving(db, tmp_path, "--workers", "0", paths=paths) as server:
        worker = _worker(db, "slow=quick")
        try:
            client = langgraph_sdk.get_sync_client(url=server.url)
            other = client.threads.create()["thread_id"]
            review = client.runs.create(other, "review", input={"topic": "t"})
            tid = client.threads.create()["thread_id"]
            client.runs.wait(tid, "quick", input={"text": "x"}, interrupt_before=["finish"])
            state = client.threads.get_state(tid)
            assert state["values"]["tokens"] == ["written"] and state["next"] == ["finish"]
            assert client.threads.get(tid)["status"] == "interrupted"

            before = {t["thread_id"] for t in client.threads.search(limit=1000)}
            client.runs.wait(None, "quick", input={"text": "y"})
            assert {t["thread_id"] for t in client.threads.search(limit=1000)} == before
            assert client.runs.get(other, review["run_id"])["status"] == "pending"
        finally:
            worker.terminate()
            worker.wait(timeout=30)
