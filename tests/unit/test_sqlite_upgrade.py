"""Files of older layouts: layout 6 (what corral 0.1 wrote) is upgraded once to this
corral's tables and reads back as it was written; pre-release layouts 3 to 5 are refused
by name, and left as they were.

``tests/fixtures/sqlite/layout6.sqlite`` was written by layout 6 as first built (main at
90e97d2); ``layout6-moved.sqlite`` by that corral and the later form of layout 6 in turn,
with many values not yet folded (see ``layout_history``); ``layout3/4/5.sqlite`` by the
pre-release layouts 3, 4 and 5.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from layout_history import message, reference, same

from corral import CheckpointError, ConcurrentRunError, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite import SCHEMA_VERSION

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sqlite"


def dump(path: Path) -> list[str]:
    """Return the file's schema and rows as SQL text."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def tables(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        query = (
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY 1"  # SQLite's own (sqlite_sequence)
        )
        return [name for (name,) in conn.execute(query)]
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["layout6", "layout6-moved"])
def test_a_layout_6_file_is_upgraded_once_and_reads_as_written(name: str, tmp_path: Path) -> None:
    """Every checkpoint, chain and recorded task reads back equal to what was put; the file
    then holds only this corral's tables, at this corral's version, and opens again as is."""
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURES / f"{name}.sqlite", path)
    moved = name == "layout6-moved"
    ref = reference(moved=moved)
    for _ in range(2):  # the second open finds an upgraded file
        with SqliteSaver(path) as saver:
            assert saver.threads() == ref.threads()
            for thread in ref.threads():
                same(saver.checkpoints(thread), ref.checkpoints(thread))
                same(saver.chain(thread), ref.chain(thread))
                assert saver.newest_id(thread) == ref.newest_id(thread)
            for cid in ("a3", "a7", "a11", "f8"):
                same(saver.chain("a", cid), ref.chain("a", cid))
            assert saver.pending_writes("a", "f8") == ref.pending_writes("a", "f8")
        assert tables(path) == [
            "corral_checkpoints",
            "corral_items",
            "corral_pending",
            "corral_schema",
            "corral_threads",
        ]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM corral_schema").fetchone() == (SCHEMA_VERSION,)
    # a value kept by many snapshots of a thread is stored once, as a put stores it
    items, distinct = conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT thread || ':' || data) FROM corral_items"
    ).fetchone()
    assert items == distinct
    conn.close()


def test_an_upgraded_thread_goes_on_and_refuses_a_stale_parent(tmp_path: Path) -> None:
    """The newest checkpoint of an upgraded thread (a fork's) is its parent for the next
    put; a put against an older one is refused as concurrent."""
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURES / "layout6.sqlite", path)
    ref = reference()
    step = [("talk", {"m": [message("a", 99)]})]
    with SqliteSaver(path) as saver:
        with pytest.raises(ConcurrentRunError):
            saver.put(Checkpoint("a", "late", "a11", None, step, {"i": 99}))
        for s in (saver, ref):
            s.put(Checkpoint("a", "g0", "f8", None, step, {"i": 99}))
        same(saver.chain("a"), ref.chain("a"))
        assert saver.pending_writes("a", "f8") == {}  # superseded by g0


@pytest.mark.parametrize("version", [3, 4, 5])
def test_a_pre_release_layout_is_refused_by_name_and_left_alone(
    version: int, tmp_path: Path
) -> None:
    """Opening a file of layout 3, 4 or 5 raises CheckpointError naming the layout and what
    to do; the file's tables and rows are not changed."""
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURES / f"layout{version}.sqlite", path)
    before = dump(path)
    with pytest.raises(CheckpointError) as info:
        SqliteSaver(path)
    message = str(info.value)
    assert f"layout {version}" in message and "pre-release" in message, message
    assert str(path) in message and "corral 0.1" in message, message
    assert dump(path) == before
