"""Reading checkpoint rows back, and naming the damage when they cannot be read.

Every failure to read a row (text that is not UTF-8 or not JSON, a meta that is not an
object, writes that are not pairs, a stored value that is missing, a chain that does not
start at a snapshot) becomes a ``CheckpointError`` naming the file, the thread and the
checkpoint: never a bare error, and never a state rebuilt from part of the history.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final, NamedTuple, NoReturn

from corral.checkpoint._meta import meta_problem
from corral.checkpoint._stored import (
    Damaged,
    Fetch,
    Fetched,
    Run,
    StoredValues,
    run_ids,
    scalar_dicts,
)
from corral.checkpoint.base import Checkpoint
from corral.checkpoint.serde import TAG, Serializer, decode_checkpoint
from corral.checkpoint.sqlite._folded import FoldedTexts
from corral.checkpoint.sqlite._schema import busy
from corral.checkpoint.sqlite.rereads import ReadList, dicts_only, read_lists
from corral.errors import CheckpointError

__all__ = [
    "Read",
    "check_chain",
    "damaged",
    "decode_row",
    "decode_rows",
    "find_damaged_row",
    "never_kept",
    "texts_of",
    "thread_of",
]

_RANGE: Final = 8
"""Runs of at least this many ids are read by one range query; shorter ones by ``IN``."""
_IN_CHUNK: Final = 256
"""Ids per ``IN (...)`` query (SQLite allows 999 parameters in old versions)."""


def thread_of(conn: sqlite3.Connection, path: str, name: str) -> int | None:
    """Return the id of thread ``name``, or ``None`` when the file has no such thread.

    An id that is not an integer is damage: a ``CheckpointError``, not a ``TypeError``.
    (A damaged index of thread names that misses the thread is not detected here: finding
    it needs a scan of every thread per new thread; ``PRAGMA integrity_check`` finds it.)
    """
    row = conn.execute("SELECT id FROM threads WHERE name = ?", (name,)).fetchone()
    if row is None or type(row[0]) is int:
        return None if row is None else int(row[0])
    msg = (
        f"thread {name!r} in {path!r} is damaged (its id is {row[0]!r}, not an integer); "
        "move the file away (sqlite3's .recover may rescue a copy) or pass a new path"
    )
    raise CheckpointError(msg, path=path)


def texts_of(conn: sqlite3.Connection, folded: bool) -> Callable[[list[Run]], list[Any]]:
    """Return the reader of stored texts that :class:`StoredValues` needs, over ``conn``
    (``folded``: the file has ``runs``, layout 6), for one fetch."""
    if folded:
        return FoldedTexts(conn, _texts)
    return lambda runs: _texts(conn, runs)


def _texts(conn: sqlite3.Connection, runs: list[Run]) -> list[Any]:
    """Return the ``data`` of the value rows of ``runs``, in order (``None`` where one is
    missing): long runs by one range query each, the short ones together by ``IN``."""
    lone = run_ids([run for run in runs if run[1] < _RANGE])
    found: dict[int, Any] = {}
    for i in range(0, len(lone), _IN_CHUNK):
        chunk = lone[i : i + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT seq, data FROM checkpoints WHERE seq IN ({marks}) AND thread IS NULL"
        found.update(conn.execute(query, chunk))
    out: list[Any] = []
    for first, count, step in runs:
        if count >= _RANGE:
            params = (first, first + (count - 1) * step, first, step)
            rows = conn.execute(_RUN.format("data"), params).fetchall()
            if len(rows) == count:  # every id of the run is there, in order
                out.extend([data for (data,) in rows])
                continue
            found.update(conn.execute(_RUN.format("seq, data"), params))
        out.extend([found.get(n) for n in range(first, first + count * step, step)])
    return out


_RUN: Final = (
    "SELECT {} FROM checkpoints WHERE seq BETWEEN ? AND ? AND thread IS NULL "
    "AND (seq - ?) % ? = 0 ORDER BY seq"
)
"""The value rows of one run of evenly spaced ids."""


def decode_row(
    path: str,
    serializer: Serializer | None,
    fetch: Fetch,
    thread_id: str,
    row: tuple[Any, ...],
    metas: dict[str, Any],
) -> Checkpoint:
    """Decode one checkpoint row; ``metas`` holds the metas of the rows decoded before it.

    Raises:
        CheckpointError: the row is damaged (naming the file, thread and checkpoint), or a
            value needs a serializer this saver was not given.
    """
    _seq, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta = row
    try:
        trees = [None if snapshot is None else json.loads(snapshot), json.loads(writes)]
        meta_tree = json.loads(meta)
        if meta_is_delta:
            delta = meta_tree if meta_tree.get(TAG) == "delta" else {"v": meta_tree}
            meta_tree = {**metas[parent_id], **delta["v"]}
            for key in delta.get("del", ()):
                meta_tree.pop(key, None)
        if type(meta_tree) is not dict or type(trees[1]) is not list:
            raise Damaged("its meta is not an object or its writes are not a list")
        metas[checkpoint_id] = meta_tree
        trees.append(meta_tree)
        checkpoint = decode_checkpoint(
            (thread_id, checkpoint_id, parent_id), *trees, serializer=serializer, fetch=fetch
        )
        if not all(type(n) is str and type(u) is dict for n, u in checkpoint.writes):
            raise Damaged("its writes are not (node, update) pairs")
        problem = meta_problem(checkpoint.meta)  # decoded: large values were stored apart
        if problem is not None:
            raise Damaged(problem)
    except CheckpointError as exc:
        if exc.path is not None:
            raise
        msg = f"{exc} (in {path!r})"
        raise CheckpointError(msg, path=path) from exc
    except Exception as exc:  # any damage at all: JSON, shapes, missing values, depth
        damaged(path, thread_id, checkpoint_id, exc)
    return checkpoint


def never_kept(_read_id: str) -> bool:
    """The ``keeps`` of :func:`decode_rows` for a read no snapshot compares with (history)."""
    return False


class Read(NamedTuple):
    """Checkpoints decoded from rows, and the bytes their reading took."""

    checkpoints: list[Checkpoint]
    snapshot_bytes: int
    """Bytes read for the first checkpoint (a chain's snapshot)."""
    since_bytes: int
    """Bytes read for the others (the writes a chain replays)."""
    lists: dict[str, ReadList]
    """The lists of the first checkpoint's snapshot read as runs of stored values, by key:
    the next snapshot of the thread re-uses their stored items (see :class:`ReadList`)."""


def decode_rows(
    path: str,
    serializer: Serializer | None,
    values: StoredValues,
    fetch: Fetch,
    thread_id: str,
    rows: list[tuple[Any, ...]],
    fetched: list[Fetched] | None = None,
    keeps: Callable[[str], bool] | None = None,
) -> Read:
    """Decode checkpoint rows (see :func:`decode_row`), measuring the bytes each took;
    ``fetched`` is where ``fetch`` notes the lists it read (see ``StoredValues.fetcher``).

    ``keeps(last_id)`` tells whether the saver will keep the read lists for the next
    snapshot (``None``: it will); when not, ``Read.lists`` is empty and the 2,000 copies
    of a chat's messages (0.14-0.25 ms) are not taken."""
    out: list[Checkpoint] = []
    metas: dict[str, Any] = {}
    sizes = [0, 0]
    for row in rows:
        before = values.bytes_read
        out.append(decode_row(path, serializer, fetch, thread_id, row, metas))
        size = values.bytes_read - before + len(row[3] or "") + len(row[4])
        sizes[len(out) > 1] += size
    kept = keeps is None or (bool(out) and keeps(out[-1].checkpoint_id))
    lists = read_lists(out[0].snapshot, fetched, copies=kept) if out and fetched else {}
    if lists:  # lists of dicts fresh from JSON: the runtime copies them without a check
        snapshot = out[0].snapshot
        assert snapshot is not None
        flat = tuple(
            snapshot[key]
            for key, read in lists.items()
            if (read.copies is not None if kept else dicts_only(snapshot[key]))
            and scalar_dicts(snapshot[key])
        )
        if flat:
            out[0] = replace(out[0], flat_lists=flat)
    return Read(out, sizes[0], sizes[1], lists if kept else {})


def damaged(path: str, thread_id: str, checkpoint_id: object, exc: BaseException) -> NoReturn:
    """Raise the ``CheckpointError`` for a checkpoint that cannot be read back."""
    if isinstance(exc, ValueError | Damaged) and "integer string conversion" in str(exc):
        msg = (
            f"checkpoint {checkpoint_id!r} of thread {thread_id!r} in {path!r} holds an int "
            "longer than this Python reads (sys.get_int_max_str_digits()); raise the limit "
            "with sys.set_int_max_str_digits(0) in this process to read it"
        )
        raise CheckpointError(msg, path=path) from exc
    shown = str(exc) if isinstance(exc, Damaged) else f"{type(exc).__name__}: {exc}"
    msg = (
        f"checkpoint {checkpoint_id!r} of thread {thread_id!r} in {path!r} is damaged "
        f"({shown[:200]}); resume from an earlier checkpoint (app.history) or start a new "
        "thread; if this keeps happening, move the file (or database) away"
    )
    raise CheckpointError(msg, path=path) from exc


def check_chain(path: str, thread_id: str, chain: list[Checkpoint], wanted: str | None) -> None:
    """Raise ``CheckpointError`` unless ``chain`` is not empty (its thread points at a row),
    starts at a snapshot (or the thread's first checkpoint) and each checkpoint's parent is
    the one before it. ``wanted`` is the checkpoint asked for (``None``: the newest)."""
    if not chain:
        shown = "newest" if wanted is None else repr(wanted)
        msg = (
            f"thread {thread_id!r} in {path!r} is damaged (the row of its {shown} checkpoint "
            "cannot be read); resume from an earlier checkpoint (app.history) or start a new "
            "thread; if this keeps happening, move the file (or database) away"
        )
        raise CheckpointError(msg, path=path)
    first = chain[0]
    if first.snapshot is None and first.parent_id is not None:
        exc = Damaged(f"its parent {first.parent_id!r} cannot be found")
        damaged(path, thread_id, first.checkpoint_id, exc)
    for before, after in itertools.pairwise(chain):
        if after.parent_id != before.checkpoint_id:
            damaged(path, thread_id, after.checkpoint_id, Damaged("its parent link is broken"))


def find_damaged_row(
    conn: sqlite3.Connection, path: str, thread: int, thread_id: str, exc: BaseException
) -> NoReturn:
    """Raise the ``CheckpointError`` for a read of the thread that failed while fetching
    rows (text that is not UTF-8, a damaged page): find the first row that cannot be
    fetched and name it."""
    try:
        seqs = [
            s for (s,) in conn.execute("SELECT seq FROM checkpoints WHERE thread = ?", (thread,))
        ]
    except sqlite3.Error:
        seqs = []
    for seq in seqs:
        try:
            conn.execute(
                "SELECT checkpoint_id, snapshot, writes, meta FROM checkpoints WHERE seq = ?",
                (seq,),
            ).fetchone()
        except (sqlite3.Error, ValueError) as err:
            try:
                (name,) = conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE seq = ?", (seq,)
                ).fetchone()
            except (sqlite3.Error, ValueError, TypeError):
                name = f"<row {seq}>"
            damaged(path, thread_id, name, err)
    damaged(path, thread_id, "<unknown>", exc)


def read_rows(
    conn: sqlite3.Connection,
    path: str,
    serializer: Serializer | None,
    values: StoredValues,
    thread: tuple[int, str],
    query: str,
    params: Any,
    folded: bool,
    keeps: Callable[[str], bool] | None = None,
) -> Read:
    """Fetch and decode the checkpoint rows ``query`` selects from ``thread`` (its row id and
    name); damage is named by file, thread and checkpoint (``folded``: see :func:`texts_of`;
    ``keeps``: see :func:`decode_rows`)."""
    try:
        rows = conn.execute(query, params).fetchall()
    except sqlite3.OperationalError as exc:
        if busy(exc):
            raise
        find_damaged_row(conn, path, thread[0], thread[1], exc)
    except (sqlite3.DatabaseError, ValueError) as exc:
        find_damaged_row(conn, path, thread[0], thread[1], exc)
    fetched: list[Fetched] = []
    fetch = values.fetcher(texts_of(conn, folded), fetched)
    return decode_rows(path, serializer, values, fetch, thread[1], rows, fetched, keeps)
