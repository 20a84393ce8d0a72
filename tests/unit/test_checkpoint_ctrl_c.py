"""Ctrl-C during a run with SqliteSaver: KeyboardInterrupt, no lock left, resume is exact.

Each trial sends SIGINT to this process at a random moment of a 20-step run (while it
packs, waits for the file, commits, or runs a node). The run must raise KeyboardInterrupt;
afterwards another connection can take the write lock at once, and the same saver
continues the thread to the result of an uninterrupted run.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from counting import Count, counter

from corral import SqliteSaver
from corral.runtime import CompiledGraph

TRIALS = 30
STEPS = 20


class Armed:
    """A SIGINT handler that raises KeyboardInterrupt only while a trial runs."""

    def __init__(self) -> None:
        self.armed = False
        self.delivered = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.armed:
            self.armed = False
            self.delivered += 1
            raise KeyboardInterrupt


def finish(app: CompiledGraph[Count], saver: SqliteSaver, thread_id: str) -> dict[str, Any]:
    """Continue the thread to its end from whatever it has stored."""
    if not saver.chain(thread_id):  # interrupted before its first checkpoint
        return dict(app.invoke({"n": 0, "log": []}, thread_id=thread_id).state)
    state = app.get_state(thread_id)
    if state.next:
        return dict(app.invoke(None, thread_id=thread_id).state)
    return dict(state.values)


def test_sigint_at_random_moments_leaves_no_lock_and_resumes(tmp_path: Path) -> None:
    """Across TRIALS runs each interrupted at a random moment: KeyboardInterrupt, the file
    is writable by others at once, and the thread resumes to the uninterrupted result."""
    graph = counter(STEPS)
    with SqliteSaver(tmp_path / "clean.sqlite", synchronous="NORMAL") as saver:
        clean = graph.compile(checkpointer=saver)
        expected = dict(clean.invoke({"n": 0, "log": []}).state)
        began = time.perf_counter()
        clean.invoke({"n": 0, "log": []})
        duration = time.perf_counter() - began
    rng = random.Random(18)
    handler = Armed()
    previous = signal.signal(signal.SIGINT, handler)
    interrupted = 0
    try:
        for trial in range(TRIALS):
            path = tmp_path / f"t{trial}.sqlite"
            saver = SqliteSaver(path, synchronous="NORMAL")  # the same locks, fewer fsyncs
            app = graph.compile(checkpointer=saver)
            timer = threading.Timer(rng.uniform(0, duration), os.kill, (os.getpid(), signal.SIGINT))
            try:
                handler.armed = True
                timer.start()
                app.invoke({"n": 0, "log": []}, thread_id="t")
                timer.join()  # a late signal lands here, still inside the try
                time.sleep(0)
            except KeyboardInterrupt:
                interrupted += 1
            finally:
                handler.armed = False
                timer.cancel()
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # raises 'database is locked' if a lock is left
            other.execute("ROLLBACK")
            other.close()
            assert finish(app, saver, "t") == expected
            saver.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupted == handler.delivered
    assert interrupted >= TRIALS // 2  # most signals land inside the run
