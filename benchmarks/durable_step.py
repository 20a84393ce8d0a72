"""Durable step: a checkpointed superstep on SQLite against the one-commit floor.

A graph whose one node appends a ~500-byte message through a reducer runs 200 supersteps
with ``SqliteSaver`` (``synchronous=FULL``, its default: every checkpoint synced to disk).
The floor is a hand-written loop on plain ``sqlite3`` with the same settings (WAL,
``synchronous=FULL``) that appends the message to a list and INSERTs just the new message,
one COMMIT a step: the least any durable per-step store can do. Each figure is a run's
wall time divided by its steps (the run's input checkpoint included), the median of
interleaved rounds, each on a fresh file; wall time, because waiting for the disk is what
a durable step costs. The same run without a checkpointer is shown beside them: on a disk
that syncs in well under a millisecond (a write cache), the engine's own work per
superstep is about the floor's whole step, and the ratio then measures CPU, not the disk.
So a note also divides corral's step by the floor's step plus the step without a
checkpointer (the engine's own work, which the hand loop does not do). A shared disk's
sync time can change several-fold from one second to the next, so the ratio is the median
of each round's ratio (corral's run against the floor's run beside it), not a ratio of
medians that may come from different minutes.
"""

from __future__ import annotations

import json
import operator
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _shared import Report, Row, chat_graph, command, message, python_version, run_chat

from corral import SqliteSaver


def floor(path: Path, steps: int) -> tuple[float, float]:
    """Return the wall and CPU seconds of the hand loop's ``steps`` steps."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    state: dict[str, Any] = {"messages": []}
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO items (data) VALUES (?)", (json.dumps(new),))
        conn.execute("COMMIT")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    conn.close()
    assert len(state["messages"]) == steps
    return wall, cpu


def engine(path: Path, steps: int) -> tuple[float, float]:
    """Return the wall and CPU seconds of the graph's run of ``steps`` supersteps."""
    with SqliteSaver(path) as saver:
        app = chat_graph(steps).compile(checkpointer=saver)
        wall, cpu = time.perf_counter(), time.process_time()
        run_chat(app, steps)
        return time.perf_counter() - wall, time.process_time() - cpu


def bare(path: Path, steps: int) -> tuple[float, float]:
    """Return the wall and CPU seconds of the same run without a checkpointer."""
    app = chat_graph(steps).compile()
    wall, cpu = time.perf_counter(), time.process_time()
    run_chat(app, steps)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(quick: bool) -> Report:
    steps, rounds = (100, 3) if quick else (200, 7)
    loops = {"floor": floor, "engine": engine, "bare": bare}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in loops}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name in list(loops)[:: 1 if r % 2 == 0 else -1]:
                times[name].append(loops[name](Path(tmp) / f"{name}-{r}.sqlite", steps))
    wall = {k: statistics.median(t[0] for t in v) / steps for k, v in times.items()}
    cpu = {k: statistics.median(t[1] for t in v) / steps for k, v in times.items()}
    pairs = zip(times["engine"], times["floor"], strict=True)
    ratio = statistics.median(engine[0] / floor[0] for engine, floor in pairs)
    return Report(
        rows=[Row("durable step (SQLite) / one INSERT+COMMIT", ratio, 2, "x")],
        notes=[
            f"{steps} supersteps, a ~500-byte message each, synchronous=FULL; median of "
            f"{rounds} interleaved rounds (python {python_version()}, SQLite "
            f"{sqlite3.sqlite_version})",
            f"a step: floor {wall['floor'] * 1e3:.3f} ms ({cpu['floor'] * 1e3:.3f} ms CPU), "
            f"corral {wall['engine'] * 1e3:.3f} ms ({cpu['engine'] * 1e3:.3f} ms CPU); "
            f"without a checkpointer {wall['bare'] * 1e3:.3f} ms",
            f"corral / (floor + without a checkpointer): "
            f"{wall['engine'] / (wall['floor'] + wall['bare']):.2f}x",
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
