"""Reload: a 2,000-message thread read back, against one SELECT and one ``json.loads``.

The chat graph of ``durable_step.py`` runs 2,000 supersteps into a SQLite file. Then, in
interleaved rounds: ``get_state`` of the thread through a new ``SqliteSaver`` (opened before
the clock starts: nothing of the thread is cached in the process), against the floor, one
SELECT of the same 2,000 messages stored as one JSON text in one row and one
``json.loads`` of it (on a connection opened before the clock starts). Figures are the
median CPU time of the rounds (the file is in the operating system's cache for both).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _shared import Report, Row, chat_graph, command, message, python_version, run_chat

from corral import SqliteSaver

STEPS = 2_000


def build(folder: Path) -> tuple[Path, Path]:
    """Write the thread and the floor's one-row copy of its messages."""
    thread, flat = folder / "thread.sqlite", folder / "floor.sqlite"
    with SqliteSaver(thread, synchronous="NORMAL") as saver:
        run_chat(chat_graph(STEPS).compile(checkpointer=saver), STEPS, "t")
    conn = sqlite3.connect(flat, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE state (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    text = json.dumps([message(i) for i in range(STEPS)], separators=(",", ":"))
    conn.execute("INSERT INTO state (data) VALUES (?)", (text,))
    conn.close()
    return thread, flat


def floor(path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    cpu = time.process_time()
    (text,) = conn.execute("SELECT data FROM state WHERE id = 1").fetchone()
    messages: list[Any] = json.loads(text)
    cpu = time.process_time() - cpu
    conn.close()
    assert len(messages) == STEPS
    return cpu


def get_state(path: Path) -> float:
    with SqliteSaver(path) as saver:
        app = chat_graph(STEPS).compile(checkpointer=saver)
        cpu = time.process_time()
        snapshot = app.get_state("t")
        cpu = time.process_time() - cpu
    assert len(snapshot.values["messages"]) == STEPS
    return cpu


def measure(quick: bool) -> Report:
    rounds = 5 if quick else 15
    times: dict[str, list[float]] = {"floor": [], "get_state": []}
    with tempfile.TemporaryDirectory() as tmp:
        thread, flat = build(Path(tmp))
        for _ in range(rounds):
            times["floor"].append(floor(flat))
            times["get_state"].append(get_state(thread))
    cpu = {name: statistics.median(t) for name, t in times.items()}
    return Report(
        rows=[
            Row(
                "reload of 2,000 messages / SELECT+json.loads",
                cpu["get_state"] / cpu["floor"],
                3,
                "x",
            )
        ],
        notes=[
            f"CPU a read, median of {rounds} rounds: floor {cpu['floor'] * 1e3:.2f} ms, "
            f"get_state {cpu['get_state'] * 1e3:.2f} ms (python {python_version()}, SQLite "
            f"{sqlite3.sqlite_version})"
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
