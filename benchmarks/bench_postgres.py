"""PostgresSaver and workers: per-step durable cost, bytes stored, worker throughput.

Run: ``python benchmarks/bench_postgres.py [--steps 200] [--rounds 3] [--runs 200]``

It starts its own throwaway PostgreSQL server (the machine's binaries, a unix socket, the
server's default durability: ``fsync=on``, ``synchronous_commit=on``) and prints:

1. Per-superstep durable cost. ``floor``: one connection in autocommit mode that INSERTs
   just the step's new ~500-byte message, one COMMIT per step: the least a durable
   per-step store can do on this server. ``engine``: the real graph (one node looping
   through a guard, a reducer appending the message) compiled with ``PostgresSaver`` on
   the same server and socket; its steps are timed as each ``put`` returns. Medians over
   interleaved rounds; the ratio engine/floor.
2. Bytes against payload: threads of 50, 100, 200 and 400 such steps; the bytes corral
   stored for each (the texts of its rows: checkpoints, stored values) against the JSON
   bytes of the messages, so "linear" shows as a flat ratio (goal: under 2x). The on-disk
   size of the tables (pages, indexes and row headers included) is printed too.
3. Throughput: ``--runs`` short queued runs (three one-line nodes each) drained by 1, 2 and
   4 ``corral worker`` processes (``--concurrency 1`` each); runs per second, and the CPU
   seconds the workers and the server used, which says what limits it on this machine.
"""

from __future__ import annotations

import argparse
import itertools
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Annotated, Literal, TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import psycopg  # noqa: E402
from postgres_cluster import Cluster, find_bin  # type: ignore[import-not-found]  # noqa: E402

from corral import END, End, Graph, Guard, PostgresSaver  # noqa: E402
from corral.checkpoint import Checkpoint  # noqa: E402

MESSAGE = 500


class Chat(TypedDict):
    n: int
    messages: Annotated[list[str], operator.add]


def message(i: int) -> str:
    return (f"message {i:05d} " * 40)[:MESSAGE]


def chat_graph(steps: int) -> Graph[Chat]:
    g = Graph(Chat, max_steps=steps + 10)

    @g.node(start=True)
    def talk(state: Chat) -> dict[str, object]:
        return {"n": state["n"] + 1, "messages": [message(state["n"])]}

    @g.router("talk", guards=[Guard("talk", max=steps + 10)])
    def again(state: Chat) -> Literal["talk"] | End:
        return END if state["n"] >= steps else "talk"

    return g


class TimedSaver(PostgresSaver):
    """Notes the time each put returns, so the engine's steps are timed without events."""

    marks: list[float]

    def put(self, checkpoint: Checkpoint) -> None:
        super().put(checkpoint)
        self.marks.append(time.perf_counter())


def floor(url: str, steps: int) -> list[float]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS floor (id bigserial PRIMARY KEY, m text)")
        out = []
        for i in range(steps):
            t = time.perf_counter()
            conn.execute("INSERT INTO floor (m) VALUES (%s)", (message(i),))
            out.append(time.perf_counter() - t)
        return out


def engine(url: str, steps: int, thread: str) -> list[float]:
    saver = TimedSaver(url)
    saver.marks = []
    app = chat_graph(steps).compile(checkpointer=saver)
    app.invoke({"n": 0, "messages": []}, thread_id=thread)
    saver.close()
    marks = saver.marks
    return [b - a for a, b in itertools.pairwise(marks)]


def per_step(cluster: Cluster, steps: int, rounds: int) -> None:
    print(f"1. per-superstep durable cost ({steps} steps, {rounds} rounds, fsync on)")
    floors: list[float] = []
    engines: list[float] = []
    for r in range(rounds):
        url = cluster.new_database()
        floors.append(statistics.median(floor(url, steps)))
        engines.append(statistics.median(engine(url, steps, f"r{r}")))
    f, e = statistics.median(floors), statistics.median(engines)
    print(f"   floor  (INSERT+COMMIT of the new message): {f * 1e6:8.0f} us/step")
    print(f"   engine (graph + PostgresSaver.put):         {e * 1e6:8.0f} us/step")
    print(f"   ratio engine/floor: {e / f:.2f}x")


def stored_bytes(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT coalesce(sum(octet_length(coalesce(snapshot, '')) "
            "+ octet_length(writes) + octet_length(meta) + octet_length(checkpoint_id) "
            "+ octet_length(coalesce(parent_id, ''))), 0) "
            "FROM corral_checkpoints) + "
            "(SELECT coalesce(sum(octet_length(data)), 0) FROM corral_items), "
            "pg_total_relation_size('corral_checkpoints') + "
            "pg_total_relation_size('corral_items') + pg_total_relation_size('corral_threads')"
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


def bytes_vs_payload(cluster: Cluster) -> None:
    print("2. bytes stored against payload (JSON bytes of the messages)")
    for steps in (50, 100, 200, 400):
        url = cluster.new_database()
        with PostgresSaver(url) as saver:
            chat_graph(steps).compile(checkpointer=saver).invoke(
                {"n": 0, "messages": []}, thread_id="t"
            )
        payload = sum(len(message(i)) + 3 for i in range(steps))
        logical, disk = stored_bytes(url)
        print(
            f"   {steps:4d} steps: payload {payload / 1024:7.1f} KiB, stored {logical / 1024:7.1f}"
            f" KiB = {logical / payload:.2f}x; on disk (pages, indexes) {disk / payload:.2f}x"
        )


WORK = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict
    from corral import END, Graph

    class Job(TypedDict):
        n: int
        log: Annotated[list[str], operator.add]

    g = Graph(Job)

    @g.node(start=True, then="middle")
    def first(state: Job) -> dict[str, object]:
        return {"n": state["n"] + 1, "log": ["first"]}

    @g.node(then="last")
    def middle(state: Job) -> dict[str, object]:
        return {"n": state["n"] + 1, "log": ["middle"]}

    @g.node(then=END)
    def last(state: Job) -> dict[str, object]:
        return {"n": state["n"] + 1, "log": ["last"]}
    """
)


DRAIN = ["--until-idle", "--poll", "0.05"]


def cpu_of(pids: list[int]) -> float:
    """Return the CPU seconds (user + system) the processes and their children used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def server_pids(cluster: Cluster) -> list[int]:
    pid = int((cluster.data / "postmaster.pid").read_text().split()[0])
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *map(int, children)]


def throughput(cluster: Cluster, runs: int, folder: Path) -> None:
    print(f"3. throughput: {runs} queued runs of 3 nodes, corral worker processes")
    module = folder / "work.py"
    module.write_text(WORK)
    sys.path.insert(0, str(folder))
    from work import g  # type: ignore[import-not-found]

    base = None
    for workers in (1, 2, 4):
        url = cluster.new_database()
        with PostgresSaver(url) as saver:
            app = g.compile(checkpointer=saver)
            for i in range(runs):
                app.submit({"n": 0, "log": []}, thread_id=f"t{i}")
        before = cpu_of(server_pids(cluster))
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "corral", "worker", f"{module}:g", "--db", url, *DRAIN],
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        usage_before = os.times()
        for p in procs:
            p.wait()
        wall = time.perf_counter() - start
        usage = os.times()
        worker_cpu = (usage.children_user - usage_before.children_user) + (
            usage.children_system - usage_before.children_system
        )
        server_cpu = cpu_of(server_pids(cluster)) - before
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM corral_runs WHERE status = 'done'").fetchone()
        done = row[0] if row else 0
        rate = done / wall
        base = base or rate
        print(
            f"   {workers} worker(s): {done} runs in {wall:5.2f} s = {rate:6.1f} runs/s "
            f"({rate / base:.2f}x of 1); CPU s: workers {worker_cpu:.2f}, server "
            f"{server_cpu:.2f}, of {wall * (os.cpu_count() or 1):.2f} available"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    bin_dir = find_bin()
    if bin_dir is None:
        sys.exit("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl)")
    cluster = Cluster(bin_dir, durable=True)
    cluster.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            per_step(cluster, args.steps, args.rounds)
            bytes_vs_payload(cluster)
            throughput(cluster, args.runs, Path(folder))
    finally:
        cluster.remove()


if __name__ == "__main__":
    main()
