"""A snapshot put goes through the view ``put_fold`` (its trigger inserts the rows and
folds): the compare-and-set refuses it as it refuses any put, nothing of a refused or
killed put is left, and every process reads the file as it was put.

Each test uses real files; the reference is a ``MemorySaver`` fed the same checkpoints.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from corral import CheckpointError, ConcurrentRunError, MemorySaver, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite._runs import MIN_FOLD


def message(i: int) -> dict[str, str]:
    """Return a ~300-byte message (a value row of its own)."""
    return {"role": "user", "content": f"message {i} " + "lorem ipsum " * 24}


def checkpoint(i: int, every: int, width: int = 1) -> Checkpoint:
    """Return checkpoint ``i`` of thread 't': ``width`` new messages, a snapshot of all of
    them every ``every`` checkpoints."""
    new = [message(width * i + k) for k in range(width)]
    state = {"m": [message(n) for n in range(width * (i + 1))]} if i % every == 0 else None
    return Checkpoint("t", f"c{i}", f"c{i - 1}" if i else None, state, [("talk", {"m": new})], {})


def contents(path: Path) -> list[list[Any]]:
    """Return every row of the file's tables (what a refused put must leave alone)."""
    conn = sqlite3.connect(path)
    tables = ["checkpoints", "runs", "ids", "threads", "pending_writes"]
    out = [conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables]
    conn.close()
    return out


def rows(c: Checkpoint) -> tuple[Any, ...]:
    return (c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta)


@pytest.mark.parametrize("new_values", [0, 3, 150], ids=["no-values", "one-statement", "long"])
@pytest.mark.parametrize("fresh", [False, True], ids=["same-saver", "other-saver"])
def test_a_refused_snapshot_put_is_refused_as_any_put(
    tmp_path: Path, new_values: int, fresh: bool
) -> None:
    """A snapshot put (through ``put_fold``) with a stale parent raises ConcurrentRunError
    naming the newest, one with a taken id CheckpointError naming the id, as a put without
    a snapshot does; neither writes or folds anything, one saver's or another's (the long
    way), with no, a few or more value rows than one statement takes."""
    path = tmp_path / "t.sqlite"
    ref = MemorySaver()
    with SqliteSaver(path) as saver:
        for i in range(2 * MIN_FOLD + 5):  # small values waiting for the next snapshot's fold
            for s in (saver, ref):
                s.put(checkpoint(i, every=1000))
        newest = f"c{2 * MIN_FOLD + 4}"
        before = contents(path)
        writer = SqliteSaver(path) if fresh else saver
        state = {"m": [message(10_000 + k) for k in range(new_values)]}
        for snapshot in (None, state):
            stale = Checkpoint("t", "x", "c3", snapshot, [], {})
            with pytest.raises(ConcurrentRunError) as err:
                writer.put(stale)
            assert (err.value.expected, err.value.newest) == ("c3", newest)
            taken = Checkpoint("t", "c7", newest, snapshot, [], {})
            with pytest.raises(CheckpointError, match=r"'c7' already exists in thread 't'"):
                writer.put(taken)
            assert contents(path) == before
        for s in (writer, ref):  # the saver goes on after its refusals, and folds
            s.put(Checkpoint("t", "last", newest, state, [], {}))
        assert before[1] == [] and len(contents(path)[1]) == 1
        if fresh:
            writer.close()
    with SqliteSaver(path) as again:
        assert list(map(rows, again.checkpoints("t"))) == list(map(rows, ref.checkpoints("t")))


WRITER = """
import sys
sys.path[:0] = sys.argv[3:]
from test_sqlite_put_fold import checkpoint
from corral import SqliteSaver
with SqliteSaver(sys.argv[1]) as saver:
    start = len(saver.checkpoints("t"))
    for i in range(start, start + int(sys.argv[2])):
        saver.put(checkpoint(i, every=2, width=60))
        print(i, flush=True)
"""


def test_a_process_killed_in_snapshot_puts_leaves_the_file_whole(tmp_path: Path) -> None:
    """Writers killed with SIGKILL at random moments of a run of snapshot puts (each folds
    the values of the one before, one statement or a transaction) leave a file that passes
    SQLite's integrity check and reads back as every put it committed, and the next writer
    goes on from its newest checkpoint."""
    path = tmp_path / "k.sqlite"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    here = str(Path(__file__).parent)
    paths = [here, *sys.path]
    killed = 0
    for delay in (0.05, 0.15, 0.25, 0.35):  # after its first put: killed while putting
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), "1000", *paths],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stdout is not None
        first = writer.stdout.readline()
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate()
        killed += writer.returncode == -signal.SIGKILL
        done = int((first + out).split()[-1]) + 1  # the checkpoints it reported put
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        with SqliteSaver(path) as saver:
            got = saver.checkpoints("t")
            n = len(got)
            assert done <= n <= done + 1  # a put it committed but could not report
            assert list(map(rows, got)) == [rows(checkpoint(i, 2, 60)) for i in range(n)]
    assert killed == 4
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), "3", *paths], env=env, capture_output=True
    )
    assert writer.returncode == 0, writer.stderr
    with SqliteSaver(path) as saver:
        got = saver.checkpoints("t")
        assert list(map(rows, got)) == [rows(checkpoint(i, 2, 60)) for i in range(len(got))]
        assert saver.chain("t")[-1].checkpoint_id == f"c{len(got) - 1}"
