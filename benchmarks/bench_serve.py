"""``corral serve`` under load and faults, through the LangGraph SDK, on SQLite and PostgreSQL.

Run: ``python benchmarks/bench_serve.py [--streams 50] [--queued 500] [--crash-runs 200]
[--workers 8] [--only sqlite,postgres]``

Three phases per database, each against a real ``corral serve`` process serving this
file's ``graph`` (three nodes, each sleeping ``NODE_S`` and emitting a token):

* streams: ``--streams`` clients stream a run each at once (``values`` and ``custom``);
  every stream must end with all three tokens and the final values;
* queued: ``--queued`` runs created at once (5 per thread, enqueued), then joined; every
  run must succeed and every thread must hold each run's input once and 3 steps per run;
* crash: ``--crash-runs`` runs queued, the server SIGKILLed while it runs them, restarted
  (``--lease 2``), and every run joined: each input applied exactly once, each node's
  step committed exactly once per run, every run ``success``.

Prints one line per phase: wall time, runs per second, and what was checked.
"""

from __future__ import annotations

import argparse
import operator
import signal
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

from corral import END, Context, Graph

HERE = Path(__file__).resolve().parent
NODE_S = 0.02
"""How long each node works (a stand-in for a model call)."""


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


def streams(url: str, count: int) -> str:
    """``count`` concurrent streams; return the phase's line."""
    import langgraph_sdk

    client = _client(url)
    threads = [client.threads.create()["thread_id"] for _ in range(count)]
    own_clients = [langgraph_sdk.get_sync_client(url=url, timeout=300) for _ in threads]
    took: list[float] = []

    def one(index: int) -> bool:
        own, tid = own_clients[index], threads[index]
        start = time.perf_counter()
        parts = list(
            own.runs.stream(tid, "bench", input={"inputs": [tid]}, stream_mode=["values", "custom"])
        )
        took.append(time.perf_counter() - start)
        tokens: list[Any] = [p.data for p in parts if p.event == "custom"]
        final = [p.data for p in parts if p.event == "values"][-1]
        return tokens == ["s1", "s2", "s3"] and final["steps"] == ["s1", "s2", "s3"]

    start = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        ok = list(pool.map(one, range(count)))
    wall = time.perf_counter() - start
    assert all(ok), f"{ok.count(False)} of {count} streams lost events"
    p50 = statistics.median(took)
    p95 = sorted(took)[int(len(took) * 0.95) - 1]
    return (
        f"streams  {count} at once: {wall:.2f} s wall, {count / wall:.1f} runs/s, "
        f"stream p50 {p50:.2f} s p95 {p95:.2f} s; every token and final state arrived"
    )


def _queue(url: str, runs: int, per_thread: int = 5) -> tuple[dict[str, list[str]], list[Any]]:
    client = _client(url)
    created: dict[str, list[str]] = {}
    records: list[Any] = []

    def one(index: int) -> None:
        own = _client(url)
        tid = created_ids[index // per_thread]
        marker = f"r{index}"
        records.append(own.runs.create(tid, "bench", input={"inputs": [marker]}))
        created.setdefault(tid, []).append(marker)

    created_ids = [client.threads.create()["thread_id"] for _ in range(runs // per_thread)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(len(created_ids) * per_thread)))
    return created, records


def _check(url: str, created: dict[str, list[str]], records: list[Any]) -> None:
    client = _client(url)
    for record in records:
        client.runs.join(record["thread_id"], record["run_id"])
    statuses = [client.runs.get(r["thread_id"], r["run_id"])["status"] for r in records]
    assert statuses.count("success") == len(records), f"statuses: {set(statuses)}"
    for tid, markers in created.items():
        values = client.threads.get_state(tid)["values"]
        assert sorted(values["inputs"]) == sorted(markers), f"{tid}: inputs {values['inputs']}"
        assert len(values["steps"]) == 3 * len(markers), f"{tid}: steps {values['steps']}"
        assert values["steps"] == ["s1", "s2", "s3"] * len(markers), tid


def queued(url: str, runs: int) -> str:
    start = time.perf_counter()
    created, records = _queue(url, runs)
    queued_s = time.perf_counter() - start
    _check(url, created, records)
    wall = time.perf_counter() - start
    return (
        f"queued   {len(records)} runs ({len(created)} threads x 5, enqueue): created in "
        f"{queued_s:.2f} s, all done in {wall:.2f} s, {len(records) / wall:.1f} runs/s; "
        "each input once, 3 steps per run"
    )


def crash(db: str, folder: Path, runs: int, workers: int) -> str:
    from serving.server import serving  # type: ignore[import-not-found]

    args = ("--workers", str(workers), "--lease", "2")
    with serving(db, folder, *args, paths=[f"{__file__}:graph"]) as server:
        created, records = _queue(server.url, runs, per_thread=4)
        client = _client(server.url)
        deadline = time.monotonic() + 120
        while True:  # kill once some runs are done and others are not
            done = sum(
                client.runs.get(r["thread_id"], r["run_id"])["status"] == "success"
                for r in records[:: max(1, len(records) // 20)]
            )
            if done >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
    start = time.perf_counter()
    with serving(db, folder, *args, paths=[f"{__file__}:graph"]) as server:
        _check(server.url, created, records)
    wall = time.perf_counter() - start
    return (
        f"crash    {len(records)} runs, server SIGKILLed mid-run (~{done * 5}% done), restarted: "
        f"the rest done in {wall:.2f} s; every run success, each input and step exactly once"
    )


def bench(db: str, label: str, args: argparse.Namespace) -> None:
    from serving.server import serving

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        options = ("--workers", str(args.workers))
        with serving(db, folder, *options, paths=[f"{__file__}:graph"]) as server:
            print(f"[{label}] {streams(server.url, args.streams)}", flush=True)
            print(f"[{label}] {queued(server.url, args.queued)}", flush=True)
        crash_db = db if "://" in db else str(folder / "crash.sqlite")
        print(f"[{label}] {crash(crash_db, folder, args.crash_runs, args.workers)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--queued", type=int, default=500)
    parser.add_argument("--crash-runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--only", default="sqlite,postgres")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent / "tests"))
    chosen = args.only.split(",")
    if "sqlite" in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            bench(str(Path(tmp) / "runs.sqlite"), "sqlite", args)
    if "postgres" in chosen:
        from postgres_cluster import Cluster, find_bin  # type: ignore[import-not-found]

        bin_dir = find_bin()
        if bin_dir is None:
            sys.exit("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl)")
        cluster = Cluster(bin_dir, durable=True)
        cluster.start()
        try:
            bench(cluster.new_database(), "postgres", args)
        finally:
            cluster.remove()


if __name__ == "__main__":
    main()
