"""PostgreSQL workers: the durable step, storage and queued runs on a PostgreSQL server.

It starts its own throwaway server (the machine's PostgreSQL binaries, a unix socket, the
server's default durability: ``fsync`` and ``synchronous_commit`` on) and measures:

* the durable step: the chat graph of ``durable_step.py`` with ``PostgresSaver``, a run's
  wall time a step, against the floor, one connection in autocommit mode INSERTing just
  the step's new message (one commit a step); the median of interleaved rounds, each in a
  new database;
* storage: the bytes the second half of a thread's steps added to the database (tables,
  indexes and TOAST, as PostgreSQL counts them) against those messages' JSON bytes;
* queued runs: runs of a three-node graph queued with ``app.submit`` and drained by
  ``corral worker`` processes; every run must be done with its three steps exactly once
  (a lost or doubled run counts). Runs a second are shown for one and two workers.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _shared import Report, Row, chat_graph, command, message, payload_bytes, run_chat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import psycopg  # noqa: E402
from postgres_cluster import Cluster, find_bin  # type: ignore[import-not-found]  # noqa: E402

from corral import PostgresSaver  # noqa: E402

WORK = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict
    from corral import END, Graph

    class Job(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(Job)

    @g.node(start=True, then="middle")
    def first(state: Job) -> dict[str, object]:
        return {"log": ["first"]}

    @g.node(then="last")
    def middle(state: Job) -> dict[str, object]:
        return {"log": ["middle"]}

    @g.node(then=END)
    def last(state: Job) -> dict[str, object]:
        return {"log": ["last"]}
    """
)


def floor(url: str, steps: int) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE floor (id bigserial PRIMARY KEY, data text NOT NULL)")
        start = time.perf_counter()
        for i in range(steps):
            conn.execute("INSERT INTO floor (data) VALUES (%s)", (str(message(i)),))
        return time.perf_counter() - start


def engine(url: str, steps: int) -> float:
    with PostgresSaver(url) as saver:
        app = chat_graph(steps).compile(checkpointer=saver)
        start = time.perf_counter()
        run_chat(app, steps)
        return time.perf_counter() - start


def database_bytes(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()
        assert row is not None
        return int(row[0])


def stored(cluster: Any, steps: int) -> int:
    url = cluster.new_database()
    with PostgresSaver(url) as saver:
        run_chat(chat_graph(steps).compile(checkpointer=saver), steps)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM")  # settles the free space map and visibility map forks
    return database_bytes(url)


def drain(cluster: Any, module: Path, runs: int, workers: int) -> tuple[float, int]:
    """Queue ``runs`` runs, drain them with ``workers`` processes; return the wall time
    and how many runs were lost or doubled."""
    url = cluster.new_database()
    sys.path.insert(0, str(module.parent))
    from work import g  # type: ignore[import-not-found]

    with PostgresSaver(url) as saver:
        app = g.compile(checkpointer=saver)
        for i in range(runs):
            app.submit({"log": []}, thread_id=f"t{i}")
        start = time.perf_counter()
        command = [sys.executable, "-m", "corral", "worker", f"{module}:g", "--db", url]
        procs = [
            subprocess.Popen(
                [*command, "--until-idle", "--poll", "0.05"], stderr=subprocess.DEVNULL
            )
            for _ in range(workers)
        ]
        for proc in procs:
            proc.wait()
        wall = time.perf_counter() - start
        wrong = sum(
            app.get_state(f"t{i}").values.get("log") != ["first", "middle", "last"]
            for i in range(runs)
        )
    return wall, wrong


def measure(quick: bool) -> Report:
    bin_dir = find_bin()
    if bin_dir is None:
        return Report(notes=["skipped: PostgreSQL is not installed (no pg_ctl)"])
    steps, rounds, runs = (100, 2, 30) if quick else (200, 3, 100)
    cluster = Cluster(bin_dir, durable=True)
    cluster.start()
    try:
        floors, engines = [], []
        for _ in range(rounds):
            url = cluster.new_database()
            floors.append(floor(url, steps) / steps)
            engines.append(engine(url, steps) / steps)
        first, both = stored(cluster, steps), stored(cluster, 2 * steps)
        added_payload = payload_bytes(2 * steps) - payload_bytes(steps)
        with tempfile.TemporaryDirectory() as tmp:
            module = Path(tmp) / "work.py"
            module.write_text(WORK)
            drained = {n: drain(cluster, module, runs, n) for n in (1, 2)}
    finally:
        cluster.remove()
    step_floor, step_engine = statistics.median(floors), statistics.median(engines)
    return Report(
        rows=[
            Row("durable step (PostgreSQL) / one INSERT+COMMIT", step_engine / step_floor, 2, "x"),
            Row("storage (PostgreSQL) / payload", (both - first) / added_payload, 2.5, "x"),
            Row(
                f"queued runs lost or doubled, of {2 * runs}",
                sum(w for _, w in drained.values()),
                0,
                "lost",
            ),
        ],
        notes=[
            f"a step: floor {step_floor * 1e3:.2f} ms, corral {step_engine * 1e3:.2f} ms "
            f"({steps} steps, median of {rounds} rounds)",
            f"database bytes after {steps} steps {first}, after {2 * steps} {both}",
            ", ".join(
                f"{n} worker(s): {runs / wall:.1f} runs/s" for n, (wall, _) in drained.items()
            )
            + f" ({runs} queued runs of 3 nodes, interpreter start included)",
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
