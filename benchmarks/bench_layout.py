"""One durable step's ``INSERT`` in layout 4 against this corral's layout, in one process.

Run: ``python benchmarks/bench_layout.py [--steps 1000] [--rounds 14] [--sync NORMAL|FULL]
[--dir PATH]``

Each round writes ``--steps`` steps into a fresh file of each layout, interleaved: the
statement ``bench_checkpoint.py``'s ``floor+`` runs (a ~500-byte message's value row and
a checkpoint row with id, parent, write and meta, in one ``INSERT``), with the layout's
tables, index and triggers. Layout 4's come from ``tests/fixtures/sqlite/layout4.sqlite``
(written by main at 85f4e0f); this corral's from ``_layout.SCHEMA``. Printed: the medians
(and least) of wall and CPU time a put, the ratio new / layout 4, and the pages a step (WAL
frames of one more run with automatic WAL checkpoints off).
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

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "sqlite" / "layout4.sqlite"
INSERT = (
    "INSERT INTO checkpoints (seq, thread, checkpoint_id, parent, writes, meta, meta_is_delta, "
    "data) VALUES (?, NULL, NULL, NULL, NULL, NULL, NULL, ?), (?, ?, ?, ?, ?, ?, 0, NULL)"
)
META = json.dumps({"next": ["chat"], "steps": 1, "supersteps": 1, "status": "running"})


def layout_4() -> list[str]:
    """Return the statements that create layout 4's tables, index and triggers."""
    conn = sqlite3.connect(f"file:{FIXTURE}?mode=ro&immutable=1", uri=True)
    rows = conn.execute(
        "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY type = 'trigger', rowid"
    ).fetchall()
    conn.close()
    return [sql for (sql,) in rows]


def run(folder: str, schema: list[str], steps: int, sync: str, pages: bool) -> tuple[float, ...]:
    """Return wall and CPU seconds a put (or, with ``pages``, the WAL frames a put)."""
    path = Path(tempfile.mkdtemp(dir=folder)) / "f.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    for statement in schema:
        conn.execute(statement)
    if pages:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    thread = conn.execute("INSERT INTO threads (name) VALUES ('bench')").lastrowid
    assert thread is not None
    seq, parent = range_start(thread, 0) + 1, None
    start_bytes = Path(f"{path}-wal").stat().st_size
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        message = json.dumps({"role": "assistant", "content": f"step {i} " + "w" * 470})
        write = f'[["chat",{{"messages":[{{"$corral":{seq}}}]}}]]'
        conn.execute(INSERT, (seq, message, seq + 1, thread, f"{i + 1:08x}", parent, write, META))
        parent, seq = seq + 1, seq + 2
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frames = (Path(f"{path}-wal").stat().st_size - start_bytes) / (4096 + 24)
    conn.close()
    return (frames / steps,) if pages else (wall / steps, cpu / steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--sync", choices=["FULL", "NORMAL"], default="NORMAL")
    parser.add_argument("--dir", default=None, help="where the files go (default: the temp dir)")
    args = parser.parse_args(argv)
    layouts = {"layout 4": layout_4(), "this": list(SCHEMA)}
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
    old, new = med["layout 4"], med["this"]
    print(f"this / layout 4: wall {new[0] / old[0]:4.2f}x, cpu {new[1] / old[1]:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
