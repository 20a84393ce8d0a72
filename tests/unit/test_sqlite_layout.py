"""SqliteSaver's layout: what one put writes, and files written by older layouts.

``tests/fixtures/sqlite/layout3.sqlite`` was written by corral's layout 3 (main at 45cb3a3),
``layout4.sqlite`` by layout 4 (main at 85f4e0f), ``layout5.sqlite`` by layout 5 (main at
cdcc26e) and ``layout6.sqlite`` by layout 6 as first built (main at 90e97d2: the fold a
trigger of ``checkpoints``), each with ``layout_history.write_history``; the tests open them
with this corral and compare what they read with a ``MemorySaver`` fed the same history.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from layout_history import message, reference, same
from read_only import read_only

from corral import CheckpointError, ConcurrentRunError, MemorySaver, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite import SCHEMA_VERSION
from corral.checkpoint.sqlite._layout import BATCH
from corral.checkpoint.sqlite._runs import MIN_FOLD

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sqlite"
OLD_LAYOUTS = [FIXTURES / f"layout{n}.sqlite" for n in (3, 4, 5, 6)]


@pytest.fixture(params=OLD_LAYOUTS, ids=lambda p: p.stem)
def old_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copy(request.param, path)
    return path


def test_an_old_file_reads_as_it_was_written(old_file: Path) -> None:
    """Every checkpoint, chain and recorded task of a file written by layout 3, 4, 5 or 6 (as
    first built) reads back equal to what was put, and the file is upgraded to this corral's
    layout."""
    ref = reference()
    with SqliteSaver(old_file) as saver:
        assert saver.threads() == ["a", "b", "c"]
        for thread in ("a", "b", "c"):
            same(saver.checkpoints(thread), ref.checkpoints(thread))
            same(saver.chain(thread), ref.chain(thread))
        for cid in ("a3", "a7", "a11"):
            same(saver.chain("a", cid), ref.chain("a", cid))
        assert saver.chain("a")[-1].checkpoint_id == "f8"
        assert saver.pending_writes("a", "f8") == ref.pending_writes("a", "f8")
    conn = sqlite3.connect(old_file)
    assert conn.execute("SELECT version FROM corral_schema").fetchone() == (SCHEMA_VERSION,)
    assert folds(conn) == "put_fold"
    conn.close()


def folds(conn: sqlite3.Connection) -> str:
    """Return what the file's fold is a trigger of (the table ``checkpoints`` made every
    put's ``INSERT`` carry it: layout 6 as first built)."""
    query = "SELECT tbl_name FROM sqlite_schema WHERE type = 'trigger' AND name = 'fold'"
    ((table,),) = conn.execute(query).fetchall()
    return str(table)


def test_only_a_snapshot_put_goes_through_the_fold(tmp_path: Path) -> None:
    """In a new file the fold is the trigger of the view ``put_fold``, not of
    ``checkpoints``: only snapshot puts fold, and the thread reads back equal."""
    path = tmp_path / "n.sqlite"
    ref = MemorySaver()
    runs: list[int] = []
    with SqliteSaver(path) as saver:
        parent = None
        for i in range(2 * MIN_FOLD + 1):
            snapshot = {"m": [message("a", n) for n in range(i)]} if i % MIN_FOLD == 0 else None
            talk = [("talk", {"m": [message("a", i)]})]
            for s in (saver, ref):
                s.put(Checkpoint("t", f"c{i}", parent, snapshot, talk, {}))
            parent = f"c{i}"
            conn = sqlite3.connect(path)
            runs.append(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
            assert folds(conn) == "put_fold"
            conn.close()
    assert runs[-1] > 0
    assert all(runs[i] == runs[i - 1] for i in range(1, len(runs)) if i % MIN_FOLD)
    with SqliteSaver(path) as saver:
        same(saver.checkpoints("t"), ref.checkpoints("t"))
        same(saver.chain("t", "c79"), ref.chain("t", "c79"))


def test_a_new_file_keeps_its_schema_on_one_page(tmp_path: Path) -> None:
    """The tables, views and triggers of a new file fit its first page: one more would be
    two more pages in every file (200 steps of bench_checkpoint: 2.00x -> 2.08x the
    payload)."""
    path = tmp_path / "n.sqlite"
    with SqliteSaver(path) as saver:
        saver.put(Checkpoint("t", "c0", None, {"m": []}, [], {}))
    conn = sqlite3.connect(path)
    try:
        pages = conn.execute("SELECT count(*) FROM dbstat WHERE name = 'sqlite_schema'")
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat table")
    assert pages.fetchone() == (1,)
    conn.close()


def test_an_old_thread_goes_on_and_refuses_a_stale_parent(old_file: Path) -> None:
    """A thread of an old file continues from its newest checkpoint: a put after it is
    taken (and drops its recorded task), one after an older checkpoint is refused, and
    the next chain reads across the old and the new rows."""
    ref = reference()
    with SqliteSaver(old_file) as saver:
        stale = Checkpoint("a", "x", "a11", None, [("talk", {"n": 1})], {"i": 12})
        with pytest.raises(ConcurrentRunError) as err:
            saver.put(stale)
        assert err.value.newest == "f8"
        for s in (saver, ref):
            s.put(
                Checkpoint("a", "g9", "f8", None, [("talk", {"m": [message("a", 99)]})], {"i": 9})
            )
            s.put(Checkpoint("a", "g10", "g9", None, [("talk", {"n": 5})], {"i": 10}))
            s.put(Checkpoint("c", "c1", "c0", None, [("talk", {"n": 1})], {"i": 1}))
        assert saver.pending_writes("a", "f8") == {}
        for thread in ("a", "c"):
            same(saver.chain(thread), ref.chain(thread))
            same(saver.checkpoints(thread), ref.checkpoints(thread))
        with pytest.raises(ConcurrentRunError):
            saver.put(Checkpoint("a", "y", "g9", None, [], {}))
        for taken in ("a3", "f8", "g9"):  # an old id, the old newest, a new one
            with pytest.raises(CheckpointError, match=f"'{taken}' already exists"):
                saver.put(Checkpoint("a", taken, "g10", None, [], {}))
    with SqliteSaver(old_file) as again:  # a new process: the newest is the last row
        same(again.chain("a"), ref.chain("a"))
        for i in range(11, 11 + 2 * BATCH):  # past a block or two: ids copied, and not
            parent = f"g{i - 1}"
            again.put(Checkpoint("a", f"g{i}", parent, None, [("talk", {"n": i})], {"i": i}))
    with SqliteSaver(old_file) as third:
        new = [f"g{i}" for i in range(9, 11 + 2 * BATCH)]
        for cid in ["a0", "a7", "a11", "f8", *new]:
            assert third.chain("a", cid)[-1].checkpoint_id == cid
        for taken in ("a0", "f8", new[0], new[-3], new[-1]):
            with pytest.raises(CheckpointError, match=f"'{taken}' already exists"):
                third.put(Checkpoint("a", taken, new[-1], None, [], {}))


def test_a_new_thread_in_an_old_file(old_file: Path) -> None:
    """A thread begun after the upgrade lives beside the old ones; forks work in both."""
    with SqliteSaver(old_file) as saver:
        saver.put(Checkpoint("d", "d0", None, {"m": [message("d", 0)]}, [], {}))
        saver.put(Checkpoint("d", "d1", "d0", None, [("talk", {"m": [message("d", 1)]})], {}))
        saver.put(Checkpoint("d", "e1", "d0", None, [("edit", {})], {}, newest_read="d1"))
        saver.put(Checkpoint("a", "h8", "a7", None, [("edit", {})], {}, newest_read="f8"))
        with pytest.raises(ConcurrentRunError):
            saver.put(Checkpoint("a", "k8", "a7", None, [], {}, newest_read="f8"))
        assert [c.checkpoint_id for c in saver.chain("d")] == ["d0", "e1"]
        assert saver.chain("a")[-1].checkpoint_id == "h8"
        assert saver.threads() == ["a", "b", "c", "d"]


def wal_frames(path: Path, puts: list[Checkpoint]) -> float:
    """Return the WAL frames (pages) written per put of ``puts``, after the first."""
    keep = sqlite3.connect(path)  # holds the WAL open so that closing keeps it
    with SqliteSaver(path, synchronous="NORMAL") as saver:
        assert saver._conn is not None
        saver._conn.execute("PRAGMA wal_autocheckpoint = 0")
        saver.put(puts[0])
        before = keep.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert before[0] == 0
        start = Path(f"{path}-wal").stat().st_size
        for checkpoint in puts[1:]:
            saver.put(checkpoint)
        end = Path(f"{path}-wal").stat().st_size
    keep.close()
    return (end - start) / (4096 + 24) / (len(puts) - 1)


def test_a_step_writes_one_page(tmp_path: Path) -> None:
    """A put of one superstep's checkpoint and its stored message writes the thread's last
    page (no pointer row, no index page), plus the odd page split and a page of ``ids``
    every block of rows."""
    puts = [
        Checkpoint(
            "t",
            f"{i:08d}",
            f"{i - 1:08d}" if i else None,
            {"m": []} if i == 0 else None,
            [("talk", {"m": [message("t", i)]})],
            {"steps": i},
        )
        for i in range(120)
    ]
    assert wal_frames(tmp_path / "c.sqlite", puts) < 1.6


def test_a_newest_row_that_lost_its_thread_is_named_not_skipped(tmp_path: Path) -> None:
    """The newest checkpoint is the thread's last row that is not a value row: when damage
    moved it out of the thread, reading the thread names the damage rather than going back
    to the checkpoint before it."""
    path = tmp_path / "c.sqlite"
    with SqliteSaver(path) as saver:
        saver.put(Checkpoint("t", "a", None, {"n": 0}, [], {}))
        saver.put(Checkpoint("t", "b", "a", None, [("x", {"n": 1})], {}))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE checkpoints SET thread = 99 WHERE checkpoint_id = 'b'")
    conn.commit()
    conn.close()
    with SqliteSaver(path) as saver, pytest.raises(CheckpointError, match="newest checkpoint"):
        saver.chain("t")


def test_every_checkpoint_of_a_long_thread_is_found_by_id(tmp_path: Path) -> None:
    """Ids are copied into ``ids`` a block of rows at a time and the last block is scanned:
    after every put, a new process finds every checkpoint by id (puts of one value, of
    more values than a block, recorded tasks between, a fork), refuses the newest and the
    first id again, and a stale parent; at the end, every id again."""
    path = tmp_path / "c.sqlite"
    ids: list[str] = []
    with SqliteSaver(path) as saver:
        for i in range(3 * BATCH):
            parent, newest = (ids[-1] if ids else None), (ids[-1] if ids else None)
            if i == 2 * BATCH:  # a fork from an older checkpoint
                parent = ids[BATCH]
            big = {"m": [message("t", k) for k in range(BATCH + 3)]} if i % 9 == 0 else None
            cid = f"c{i}"
            fork = newest if parent != newest else None
            saver.put(
                Checkpoint("t", cid, parent, big, [("talk", {"n": i})], {"i": i}, newest_read=fork)
            )
            ids.append(cid)
            if i % 5 == 0:
                record = {"task": 0, "node": "talk", "update": {"m": [message("w", i)]}}
                saver.put_writes("t", cid, 0, {**record, "goto": None})
            with SqliteSaver(path) as reader:
                for known in ids:
                    assert reader.chain("t", known)[-1].checkpoint_id == known
                for taken in {ids[0], cid}:
                    with pytest.raises(CheckpointError, match=f"'{taken}' already exists"):
                        reader.put(Checkpoint("t", taken, cid, None, [], {}))
                if len(ids) > 1:
                    with pytest.raises(ConcurrentRunError):
                        reader.put(Checkpoint("t", "x", ids[-2], None, [], {}))
    with SqliteSaver(path) as reader:
        for taken in ids:
            with pytest.raises(CheckpointError, match=f"'{taken}' already exists"):
                reader.put(Checkpoint("t", taken, ids[-1], None, [], {}))
        assert [c.checkpoint_id for c in reader.checkpoints("t")] == ids
    conn = sqlite3.connect(path)
    (copied,) = conn.execute("SELECT count(*) FROM ids").fetchone()
    conn.close()
    assert 0 < copied < len(ids)  # both ways are taken: copied ids, and the scanned block


@pytest.mark.parametrize("version", [4, 5, 6])
def test_a_read_only_old_file_is_read_by_id(tmp_path: Path, version: int) -> None:
    """A layout-4, 5 or 6 file this process may not write is read as it is (not upgraded):
    by id through its unique index (layout 4) or ``ids`` (layouts 5 and 6), its values from
    their rows (no ``runs`` in layout 5) or runs."""
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURES / f"layout{version}.sqlite", path)
    ref = reference()
    with read_only(path, tmp_path), SqliteSaver(path) as saver:
        for cid in ("a0", "a7", "f8"):
            same(saver.chain("a", cid), ref.chain("a", cid))
        same(saver.checkpoints("a"), ref.checkpoints("a"))
        assert saver.pending_writes("a", "f8") == ref.pending_writes("a", "f8")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM corral_schema").fetchone() == (version,)
    conn.close()


def test_two_savers_taking_turns_on_one_thread_find_each_others_ids(tmp_path: Path) -> None:
    """Two savers (two connections, as two processes) put the checkpoints of one thread in
    turn, each after the other's: each finds the other's parent by id (copied into ``ids``
    or in the scanned block), and refuses the other's ids and a stale parent."""
    path = tmp_path / "c.sqlite"
    savers = [SqliteSaver(path), SqliteSaver(path)]
    try:
        parent: str | None = None
        for i in range(3 * BATCH):
            saver, other = savers[i % 2], savers[1 - i % 2]
            state = {"m": [message("t", 0)]} if i == 0 else None
            saver.put(Checkpoint("t", f"c{i}", parent, state, [("talk", {"n": i})], {"i": i}))
            with pytest.raises(CheckpointError, match=f"'c{i}' already exists"):
                other.put(Checkpoint("t", f"c{i}", f"c{i}", None, [], {}))
            if parent is not None:
                with pytest.raises(ConcurrentRunError):
                    other.put(Checkpoint("t", "x", parent, None, [], {}))
            parent = f"c{i}"
        for saver in savers:
            assert [c.checkpoint_id for c in saver.checkpoints("t")] == [
                f"c{i}" for i in range(3 * BATCH)
            ]
    finally:
        for saver in savers:
            saver.close()


def test_an_old_thread_folds_from_its_next_snapshot(old_file: Path) -> None:
    """After the upgrade an old thread's values are folded into runs by its next snapshot
    with the new ones (those below the ranges of a file from layout 3 stay rows), and it
    reads back equal."""
    ref = reference()
    parent, ids = "f8", []
    with SqliteSaver(old_file) as saver:
        for i in range(MIN_FOLD + 1):
            cid = f"g{i}"
            snapshot = {"m": [message("a", n) for n in range(i)], "n": i} if i == MIN_FOLD else None
            talk = [("talk", {"m": [message("a", 100 + i)]})]
            for s in (saver, ref):
                s.put(Checkpoint("a", cid, parent, snapshot, talk, {"i": i}))
            parent = cid
            ids.append(cid)
    conn = sqlite3.connect(old_file)
    (below_ranges,) = conn.execute("SELECT first_range FROM corral_schema").fetchone()
    (folded,) = conn.execute("SELECT coalesce(sum(n), 0) FROM runs").fetchone()
    conn.close()
    assert folded == MIN_FOLD if below_ranges else folded > MIN_FOLD
    with SqliteSaver(old_file) as saver:
        for thread in ("a", "b", "c"):
            same(saver.checkpoints(thread), ref.checkpoints(thread))
        for cid in ("a3", "a10", "f8", *ids[::7], ids[-1]):
            same(saver.chain("a", cid), ref.chain("a", cid))
        assert saver.pending_writes("a", "f8") == {}
