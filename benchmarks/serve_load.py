"""Serve under load and faults: ``corral serve`` through the LangGraph SDK, SQLite and PostgreSQL.

A real ``corral serve`` process serves this file's ``graph`` (three nodes, each working
20 ms and emitting a token), with 8 workers, on a SQLite file and on a throwaway PostgreSQL
server (``fsync`` on), in three phases:

* streams: 50 clients stream a run each at once (``values`` and ``custom``); a stream is
  lost unless it ends with all three tokens and the final values;
* queued: 500 runs created at once (5 per thread, ``enqueue``), then joined; a run is
  lost unless it succeeds, and a thread is wrong unless it holds each run's input once and
  its three steps once per run;
* crash: 200 runs queued, the server SIGKILLed while it runs them, restarted (with a 2 s
  lease), every run joined: each input applied and each node's step committed exactly
  once per run, every run ``success``.

The row counts what was lost or doubled over the three phases; the notes give the times.
"""

from __future__ import annotations

import operator
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _shared import Report, Row, command

from corral import END, Context, Graph

HERE = Path(__file__).resolve().parent
NODE_S = 0.02
"""How long each node works (a stand-in for a model call)."""
WORKERS = ("--workers", "8")


class Job(TypedDict, total=False):
    inputs: Annotated[list[str], operator.add]
    steps: Annotated[list[str], operator.add]


graph = Graph(Job, name="bench")


def _work(name: str, ctx: Context[Any]) -> dict[str, object]:
    time.sleep(NODE_S)
    ctx.emit(name)
    return {"steps": [name]}


@graph.node(start=True, then="s2")
def s1(state: Job, ctx: Context[Any]) -> dict[str, object]:
    return _work("s1", ctx)


@graph.node(then="s3")
def s2(state: Job, ctx: Context[Any]) -> dict[str, object]:
    return _work("s2", ctx)


@graph.node(then=END)
def s3(state: Job, ctx: Context[Any]) -> dict[str, object]:
    return _work("s3", ctx)


_LOCAL = threading.local()


def _client(url: str) -> Any:
    """Return this thread's SDK client for ``url`` (making one costs ~0.2 s of CPU)."""
    import langgraph_sdk

    clients = _LOCAL.__dict__.setdefault("clients", {})
    if url not in clients:
        clients[url] = langgraph_sdk.get_sync_client(url=url, timeout=300)
    return clients[url]


def streams(url: str, count: int) -> tuple[int, str]:
    """Stream ``count`` runs at once; return how many were lost, and the phase's note."""
    import langgraph_sdk

    client = _client(url)
    threads = [client.threads.create()["thread_id"] for _ in range(count)]
    own: list[Any] = [langgraph_sdk.get_sync_client(url=url, timeout=300) for _ in threads]
    took: list[float] = []

    def one(index: int) -> bool:
        start = time.perf_counter()
        parts = list(
            own[index].runs.stream(
                threads[index], "bench", input={"inputs": ["x"]}, stream_mode=["values", "custom"]
            )
        )
        took.append(time.perf_counter() - start)
        tokens: list[Any] = [p.data for p in parts if p.event == "custom"]
        final = [p.data for p in parts if p.event == "values"][-1]
        return bool(tokens == ["s1", "s2", "s3"] and final["steps"] == ["s1", "s2", "s3"])

    start = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        ok = list(pool.map(one, range(count)))
    wall = time.perf_counter() - start
    p95 = sorted(took)[max(0, int(len(took) * 0.95) - 1)]
    note = (
        f"{count} streams at once in {wall:.2f} s (a stream p50 "
        f"{statistics.median(took):.2f} s, p95 {p95:.2f} s)"
    )
    return ok.count(False), note


def queue(url: str, runs: int, per_thread: int) -> tuple[dict[str, list[str]], list[Any]]:
    """Create ``runs`` runs at once, ``per_thread`` on each thread (``enqueue``)."""
    client = _client(url)
    ids = [client.threads.create()["thread_id"] for _ in range(runs // per_thread)]
    created: dict[str, list[str]] = {tid: [] for tid in ids}
    records: list[Any] = []

    def one(index: int) -> None:
        tid, marker = ids[index // per_thread], f"r{index}"
        records.append(_client(url).runs.create(tid, "bench", input={"inputs": [marker]}))
        created[tid].append(marker)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(len(ids) * per_thread)))
    return created, records


def wrong(url: str, created: dict[str, list[str]], records: list[Any]) -> int:
    """Join every run; return the runs that failed plus the threads whose inputs or steps
    are not each run's exactly once."""
    client = _client(url)
    for record in records:
        client.runs.join(record["thread_id"], record["run_id"])
    failed = sum(
        client.runs.get(r["thread_id"], r["run_id"])["status"] != "success" for r in records
    )
    for tid, markers in created.items():
        values = client.threads.get_state(tid)["values"]
        good = sorted(values.get("inputs", [])) == sorted(markers)
        failed += not good or values.get("steps") != ["s1", "s2", "s3"] * len(markers)
    return int(failed)


def queued(url: str, runs: int) -> tuple[int, str]:
    start = time.perf_counter()
    created, records = queue(url, runs, per_thread=5)
    lost = wrong(url, created, records)
    wall = time.perf_counter() - start
    return (
        lost,
        f"{len(records)} queued runs done in {wall:.2f} s ({len(records) / wall:.1f} runs/s)",
    )


def crash(db: str, folder: Path, runs: int) -> tuple[int, str]:
    from serving.server import serving  # type: ignore[import-not-found]

    args = (*WORKERS, "--lease", "2")
    with serving(db, folder, *args, paths=[f"{__file__}:graph"]) as server:
        created, records = queue(server.url, runs, per_thread=4)
        client = _client(server.url)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill once some runs are done and others not
            sample = records[:: max(1, len(records) // 20)]
            done = sum(
                client.runs.get(r["thread_id"], r["run_id"])["status"] == "success" for r in sample
            )
            if done >= 3:
                break
            time.sleep(0.1)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
    start = time.perf_counter()
    with serving(db, folder, *args, paths=[f"{__file__}:graph"]) as server:
        lost = wrong(server.url, created, records)
    wall = time.perf_counter() - start
    return (
        lost,
        f"{len(records)} runs, SIGKILL mid-run, the rest done in {wall:.2f} s after restart",
    )


@contextmanager
def databases() -> Iterator[list[tuple[str, str]]]:
    """Yield (label, database) for SQLite and, when installed, a PostgreSQL server."""
    from postgres_cluster import Cluster, find_bin  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory() as tmp:
        chosen = [("SQLite", str(Path(tmp) / "runs.sqlite"))]
        bin_dir = find_bin()
        if bin_dir is None:
            yield chosen
            return
        cluster = Cluster(bin_dir, durable=True)
        cluster.start()
        try:
            yield [*chosen, ("PostgreSQL", cluster.new_database())]
        finally:
            cluster.remove()


def measure(quick: bool) -> Report:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from serving.server import serving

    count, runs, crash_runs = (10, 50, 20) if quick else (50, 500, 200)
    report = Report()
    with databases() as chosen:
        for label, db in chosen:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                with serving(db, folder, *WORKERS, paths=[f"{__file__}:graph"]) as server:
                    phases = [streams(server.url, count), queued(server.url, runs)]
                crash_db = db if "://" in db else str(folder / "crash.sqlite")
                phases.append(crash(crash_db, folder, crash_runs))
            total = count + runs + crash_runs
            lost = sum(n for n, _ in phases)
            report.rows.append(
                Row(f"serve ({label}): runs lost or doubled, of {total}", lost, 0, "lost")
            )
            report.notes.append(f"{label}: " + "; ".join(note for _, note in phases))
    return report


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
