"""Layout 6 written by two corrals: this one (fold on the view ``put_fold``) and one of
layout 6 as first built (fold an ``AFTER INSERT`` trigger of ``checkpoints``).

``tests/fixtures/sqlite/layout6-moved.sqlite`` is ``layout6.sqlite`` (written by main at
90e97d2) opened and moved by this corral, which then put :func:`write_moved`'s ``"new"``
part, and then written by main at 90e97d2 again: its ``"old"`` part, many snapshot puts
whose values that corral no longer folds (its ``INSERT INTO checkpoints`` carries no fold
on a moved file). The tests read it with this corral and compare with a ``MemorySaver`` fed
the same history.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from layout_history import message, same, write_history

from corral import MemorySaver, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite._layout import THREAD_BITS
from corral.checkpoint.sqlite._runs import MIN_FOLD

MOVED = Path(__file__).parent.parent / "fixtures" / "sqlite" / "layout6-moved.sqlite"
OLD_STEPS = 3 * MIN_FOLD


def write_moved(saver: Any, part: str) -> None:
    """Put the fixture's history after ``layout6.sqlite``'s: ``"new"`` (this corral, just
    after moving the file) a snapshot after 'a''s newest 'f8'; ``"old"`` (the first-form
    corral) :data:`OLD_STEPS` more checkpoints of 'a', a snapshot every 20, and a new thread
    'd' of 50."""
    if part == "new":
        state = {"m": [message("a", i) for i in range(8)], "n": 100}
        saver.put(Checkpoint("a", "n0", "f8", state, [("edit", {"n": 100})], {"i": 9}))
        return
    msgs = [message("a", i) for i in range(8)]
    for i in range(1, OLD_STEPS + 1):
        msgs.append(message("o", i))
        state = {"m": list(msgs), "n": i} if i % 20 == 0 else None
        writes = [("talk", {"m": [msgs[-1]], "n": i})]
        saver.put(Checkpoint("a", f"o{i}", f"o{i - 1}" if i > 1 else "n0", state, writes, {}))
    for i in range(50):
        state = {"m": [message("d", n) for n in range(i + 1)]} if i % 25 == 0 else None
        writes = [("talk", {"m": [message("d", i)]})]
        saver.put(Checkpoint("d", f"d{i}", f"d{i - 1}" if i else None, state, writes, {}))


def reference() -> MemorySaver:
    saver = MemorySaver()
    write_history(saver)
    write_moved(saver, "new")
    write_moved(saver, "old")
    return saver


def unfolded(conn: sqlite3.Connection, thread: int) -> int:
    """Return the thread's value rows after its last run (what no fold has taken yet)."""
    low = (thread - 1) << THREAD_BITS  # the fixture's first range is 0 (a layout-6 file)
    query = (
        "SELECT count(*) FROM checkpoints WHERE thread IS NULL AND seq > max(?, coalesce("
        "(SELECT last FROM runs WHERE seq >= ? AND seq < ? ORDER BY seq DESC LIMIT 1), 0)) "
        "AND seq < ?"
    )
    high = low + (1 << THREAD_BITS)
    return int(conn.execute(query, (low, low, high, high)).fetchone()[0])


def test_a_moved_file_a_first_form_corral_wrote_reads_as_put(tmp_path: Path) -> None:
    """The fixture is moved (the fold on ``put_fold`` only), the first-form corral's puts
    after the move folded nothing, and every checkpoint and chain reads back as put; opening
    it changes no schema (one query tells the file is moved)."""
    path = tmp_path / "m.sqlite"
    shutil.copy(MOVED, path)
    conn = sqlite3.connect(path)
    triggers = "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger' ORDER BY 1"
    assert conn.execute(triggers).fetchall() == [  # the old writer made no fold of its own
        ("fold", "put_fold"),
        ("ids_batch", "checkpoints"),
        ("put_checks", "checkpoints"),
        ("put_done", "checkpoints"),
    ]
    assert unfolded(conn, 1) >= OLD_STEPS  # 'a': the first-form corral's values, all rows
    cookie = conn.execute("PRAGMA schema_version").fetchone()
    ref = reference()
    with SqliteSaver(path) as saver:
        assert saver.threads() == ["a", "b", "c", "d"]
        for thread in saver.threads():
            same(saver.checkpoints(thread), ref.checkpoints(thread))
            same(saver.chain(thread), ref.chain(thread))
        for cid in ("f8", "n0", "o20", "o61", f"o{OLD_STEPS}"):
            same(saver.chain("a", cid), ref.chain("a", cid))
    assert conn.execute("PRAGMA schema_version").fetchone() == cookie
    conn.close()


def test_this_corral_folds_what_a_first_form_corral_left(tmp_path: Path) -> None:
    """This corral's next snapshots of a thread the first-form corral wrote after the move
    fold its rows (a window at a time) and every thread reads back as put."""
    path = tmp_path / "m.sqlite"
    shutil.copy(MOVED, path)
    ref = reference()
    parent = f"o{OLD_STEPS}"
    msgs = [message("a", i) for i in range(8)] + [message("o", i) for i in range(1, 121)]
    conn = sqlite3.connect(path)
    assert unfolded(conn, 1) >= OLD_STEPS and conn.execute("SELECT * FROM runs").fetchall() == []
    conn.close()
    with SqliteSaver(path) as saver:
        for i in range(4):
            msgs.append(message("z", i))
            state = {"m": list(msgs)} if i % 2 == 0 else None
            for s in (saver, ref):
                s.put(Checkpoint("a", f"z{i}", parent, state, [("talk", {"m": [msgs[-1]]})], {}))
            parent = f"z{i}"
    conn = sqlite3.connect(path)
    assert unfolded(conn, 1) < MIN_FOLD  # two snapshots, two windows: caught up
    conn.close()
    with SqliteSaver(path) as saver:
        for thread in ("a", "d"):
            same(saver.checkpoints(thread), ref.checkpoints(thread))
            same(saver.chain(thread), ref.chain(thread))
