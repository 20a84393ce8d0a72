"""One durable step's ``INSERT`` in an older layout against this corral's, in one process.

Run: ``python benchmarks/bench_layout.py [--base 4|6] [--first] [--steps 1000] [--rounds 14]
[--sync NORMAL|FULL] [--dir PATH]``

Each round writes ``--steps`` steps into a fresh file of each layout, interleaved: the
statement ``bench_checkpoint.py``'s ``floor+`` runs (a ~500-byte message's value row and
a checkpoint row with id, parent, write and meta, in one ``INSERT``), with the layout's
tables, index and triggers. The older layout's come from ``tests/fixtures/sqlite/``:
``layout4.sqlite`` (written by main at 85f4e0f) or ``layout6.sqlite`` (layout 6 as first
built, main at 90e97d2: the fold a trigger of ``checkpoints``); this corral's from
``_layout.SCHEMA``. Printed: the medians (and least) of wall and CPU time a put, the ratio
new / old, and the pages a step (WAL frames of one more run with automatic WAL checkpoints
off).

``--first`` times instead what a new connection's first put costs (a new saver continuing a
thread): each round opens a new connection to a file of each layout holding ``--steps``
steps and times its first put (SQLite prepares the ``INSERT`` with every trigger of the
table) and its second.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from corral.checkpoint.sqlite._layout import SCHEMA, range_start

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures" / "sqlite"
INSERT = (
    "INSERT INTO checkpoints (seq, thread, checkpoint_id, parent, writes, meta, meta_is_delta, "
    "data) VALUES (?, NULL, NULL, NULL, NULL, NULL, NULL, ?), (?, ?, ?, ?, ?, ?, 0, NULL)"
)
META = json.dumps({"next": ["chat"], "steps": 1, "supersteps": 1, "status": "running"})


def old_layout(version: int) -> list[str]:
    """Return the statements that create the fixture's tables, index, views and triggers."""
    fixture = FIXTURES / f"layout{version}.sqlite"
    conn = sqlite3.connect(f"file:{fixture}?mode=ro&immutable=1", uri=True)
    rows = conn.execute(
        "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY type = 'trigger', rowid"
    ).fetchall()
    conn.close()
    return [sql for (sql,) in rows]


def puts(conn: sqlite3.Connection, thread: int, start: int, steps: int) -> None:
    """Put ``steps`` steps of floor+'s ``INSERT`` on ``thread``, from the row after ``start``
    (the thread's last row; its range's start when it has none)."""
    seq = start + 1
    parent = None if start & 0xFFFFFFFF == 0 else start
    for i in range(steps):
        message = json.dumps({"role": "assistant", "content": f"step {i} " + "w" * 470})
        write = f'[["chat",{{"messages":[{{"$corral":{seq}}}]}}]]'
        conn.execute(INSERT, (seq, message, seq + 1, thread, f"{seq:08x}", parent, write, META))
        parent, seq = seq + 1, seq + 2


def new_file(folder: str, schema: list[str], sync: str) -> tuple[Path, sqlite3.Connection, int]:
    """Return a new file with ``schema``, a connection to it and the thread ``'bench'``."""
    path = Path(tempfile.mkdtemp(dir=folder)) / "f.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    for statement in schema:
        conn.execute(statement)
    thread = conn.execute("INSERT INTO threads (name) VALUES ('bench')").lastrowid
    assert thread is not None
    return path, conn, thread


def run(folder: str, schema: list[str], steps: int, sync: str, pages: bool) -> tuple[float, ...]:
    """Return wall and CPU seconds a put (or, with ``pages``, the WAL frames a put)."""
    path, conn, thread = new_file(folder, schema, sync)
    if pages:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    start_bytes = Path(f"{path}-wal").stat().st_size
    wall, cpu = time.perf_counter(), time.process_time()
    puts(conn, thread, range_start(thread, 0), steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frames = (Path(f"{path}-wal").stat().st_size - start_bytes) / (4096 + 24)
    conn.close()
    return (frames / steps,) if pages else (wall / steps, cpu / steps)


def first(folder: str, schema: list[str], steps: int, sync: str) -> tuple[float, float, float]:
    """Return the wall and CPU seconds of a new connection's first put on a thread of
    ``steps`` steps, and the CPU seconds of its second."""
    path, conn, thread = new_file(folder, schema, sync)
    puts(conn, thread, range_start(thread, 0), steps)
    conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous = {sync}")
    (last,) = conn.execute("SELECT max(seq) FROM checkpoints").fetchone()
    wall, cpu = time.perf_counter(), time.process_time()
    puts(conn, thread, last, 1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    again = time.process_time()
    puts(conn, thread, last + 2, 1)
    again = time.process_time() - again
    conn.close()
    return wall, cpu, again


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--base", type=int, choices=[4, 6], default=4, help="the older layout")
    parser.add_argument("--first", action="store_true", help="a new connection's first put")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--sync", choices=["FULL", "NORMAL"], default="NORMAL")
    parser.add_argument("--dir", default=None, help="where the files go (default: the temp dir)")
    args = parser.parse_args(argv)
    old = f"layout {args.base}"
    layouts = {old: old_layout(args.base), "this": list(SCHEMA)}
    if args.first:
        return print_first(args, layouts)
    times: dict[str, list[tuple[float, ...]]] = {name: [] for name in layouts}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for _ in range(args.rounds):
            for name, schema in layouts.items():
                times[name].append(run(folder, schema, args.steps, args.sync, pages=False))
        pages = {
            n: run(folder, s, args.steps, args.sync, pages=True)[0] for n, s in layouts.items()
        }
    print(
        f"{args.steps} puts of floor+'s INSERT, synchronous={args.sync}, "
        f"{args.rounds} interleaved rounds (medians, least in brackets)"
    )
    med: dict[str, tuple[float, float]] = {}
    for name, runs in times.items():
        wall = [w for w, _ in runs]
        cpu = [c for _, c in runs]
        med[name] = (statistics.median(wall), statistics.median(cpu))
        print(
            f"{name:>8}: wall {med[name][0] * 1e6:6.1f} us ({min(wall) * 1e6:6.1f}) | "
            f"cpu {med[name][1] * 1e6:6.1f} us ({min(cpu) * 1e6:6.1f}) | pages {pages[name]:4.2f}"
        )
    base, new = med[old], med["this"]
    print(f"this / {old}: wall {new[0] / base[0]:4.2f}x, cpu {new[1] / base[1]:4.2f}x")
    return 0


def print_first(args: argparse.Namespace, layouts: dict[str, list[str]]) -> int:
    """Print what a new connection's first and second puts cost in each layout."""
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in layouts}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for _ in range(args.rounds):
            for name, schema in layouts.items():
                times[name].append(first(folder, schema, args.steps, args.sync))
    print(
        f"a new connection's first put on a thread of {args.steps} steps, "
        f"synchronous={args.sync}, {args.rounds} interleaved rounds (medians, least in brackets)"
    )
    cpu: dict[str, float] = {}
    for name, runs in times.items():
        walls, cpus, agains = zip(*runs, strict=True)
        cpu[name] = statistics.median(cpus)
        print(
            f"{name:>8}: first put wall {statistics.median(walls) * 1e6:6.1f} us "
            f"({min(walls) * 1e6:6.1f}) | cpu {cpu[name] * 1e6:6.1f} us ({min(cpus) * 1e6:6.1f})"
            f" | second put cpu {statistics.median(agains) * 1e6:6.1f} us"
        )
    names = list(layouts)
    print(f"this / {names[0]}: first put cpu {cpu['this'] / cpu[names[0]]:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
