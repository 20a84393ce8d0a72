"""Ctrl-C during a run with SqliteSaver: KeyboardInterrupt, no lock left, resume is exact.

Each trial sends SIGINT to this process at a random moment of a 20-step run (while it
packs, waits for the file, commits, or runs a node). The run must raise KeyboardInterrupt;
afterwards another connection can take the write lock at once, and the same saver
continues the thread to the result of an uninterrupted run. A run that waits for another
process's write lock is interrupted at once too, not when SQLite's wait ends.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
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


_WAITER = """
import json, signal, sys, threading, time
from counting import counter
from corral import SqliteSaver

signal.signal(signal.SIGINT, signal.default_int_handler)
saver = SqliteSaver(sys.argv[1], synchronous="NORMAL", timeout_s=20)
app = counter(3).compile(checkpointer=saver, interrupt_before=["count"])
if sys.argv[2] == "later":  # this process put the thread's first checkpoint: one INSERT
    app.invoke({"n": 0, "log": []}, thread_id="t")
main = threading.main_thread().ident


def in_put():
    frame = sys._current_frames().get(main)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "put" and code.co_filename.endswith(("saver.py", "_store.py")):
            return frame
        frame = frame.f_back
    return None


def watch():  # says 'waiting' once the run has sat in one put for 0.2 s: a lock wait
    seen, since = None, 0.0
    while True:
        frame = in_put()
        if frame is None or frame is not seen:
            seen, since = frame, time.monotonic()
        elif time.monotonic() - since > 0.2:
            print("waiting", flush=True)
            return
        time.sleep(0.005)


print("open", flush=True)
sys.stdin.readline()  # the test takes the write lock now
threading.Thread(target=watch, daemon=True).start()
try:
    app.invoke(None if sys.argv[2] == "later" else {"n": 0, "log": []}, thread_id="t")
    print("not interrupted", flush=True)
except KeyboardInterrupt as exc:
    tb, where = exc.__traceback__, []
    while tb is not None:
        where.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    print(json.dumps(where), flush=True)
sys.stdin.readline()  # the test checks the locks, then asks to go on
if not saver.chain("t"):
    app.invoke({"n": 0, "log": []}, thread_id="t")
while app.get_state("t").next:
    app.invoke(None, thread_id="t")
print(json.dumps(dict(app.get_state("t").values)), flush=True)
"""


@pytest.mark.parametrize(("put", "waits_in"), [("first", "transaction"), ("later", "transaction")])
def test_sigint_while_waiting_for_another_writer_is_honoured_at_once(
    put: str, waits_in: str, tmp_path: Path
) -> None:
    """A run blocked in put behind another process's write transaction (timeout_s=20)
    raises KeyboardInterrupt within a second of SIGINT, whether it is the thread's first put
    or a later one (both wait to begin their transaction); it holds no lock
    and no open transaction afterwards, and resumes to the result of an uninterrupted run."""
    path = tmp_path / "c.sqlite"
    SqliteSaver(path).close()  # the file exists: the child's open takes no lock
    expected = dict(counter(3).compile().invoke({"n": 0, "log": []}).state)
    tests = str(Path(__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, *sys.path])}
    child = subprocess.Popen(
        [sys.executable, "-c", _WAITER, str(path), put],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        assert child.stdout.readline() == "open\n"
        holder.execute("BEGIN IMMEDIATE")
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "waiting\n"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        where = json.loads(child.stdout.readline())
        took = time.monotonic() - sent
        assert took < 1.0, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert "put" in where and waits_in in where, where
        holder.execute("ROLLBACK")
        third = sqlite3.connect(path, timeout=0, isolation_level=None)
        third.execute("BEGIN IMMEDIATE")  # 'database is locked' if the child kept a lock
        third.execute("ROLLBACK")
        third.close()
        child.stdin.write("go on\n")
        child.stdin.flush()
        assert json.loads(child.stdout.readline()) == expected
        assert child.wait(timeout=60) == 0
    finally:
        holder.close()
        if child.poll() is None:
            child.kill()
            child.wait()
