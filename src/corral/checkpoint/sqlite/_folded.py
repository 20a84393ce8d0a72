"""Reading stored values from value rows and from the runs they were folded into (layout 6).

:class:`FoldedTexts` is a fetch's reader of stored texts (see ``StoredValues.fetcher``): a
long run of ids is looked up first in ``runs`` (one range query, plus the run that starts
before it), then the ids no run holds in the value rows (the values since the last fold,
and the large ones, at most a few dozen rows for a snapshot's list), then ``runs`` once more
for an id still missing (a fold by another connection in between moved it: a fold commits
its run and deletes its rows together, and a run is never removed). What it returns is
:class:`~corral.checkpoint._pieces.Pieces`: each run's array is parsed whole by one
``json.loads``. The runs it read are kept for the fetch (``history()`` asks for each write's
value singly: a run is read once, not once per value).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from corral.checkpoint._pieces import Folded, Pieces, Rows
from corral.checkpoint._stored import Damaged, Run

__all__ = ["FoldedTexts"]

_LONG: Final = 8
"""Asked runs of at least this many ids look up ``runs`` first, by their range."""


class _RunRow(NamedTuple):
    name: str
    seq: int
    seqs: list[int]
    lengths: list[int]
    data: str


class FoldedTexts:
    """The stored texts of ids, from ``runs`` and value rows (``rows``: the reader of value
    rows of layout 5, ``None`` where one is missing)."""

    def __init__(
        self, conn: sqlite3.Connection, rows: Callable[[sqlite3.Connection, list[Run]], list[Any]]
    ) -> None:
        self._conn = conn
        self._rows = rows
        self._where: dict[int, tuple[_RunRow, int]] = {}
        """Every folded id of the runs read so far: its run and its position there."""
        self._ranges: list[tuple[int, int]] = []
        """The ranges of ids whose runs were all read."""

    def __call__(self, asked: list[Run]) -> list[Any]:
        for first, count, step in asked:
            if count >= _LONG:
                self._load_range(first, first + (count - 1) * step)
        if not self._where:  # nothing folded here: the value rows, as layout 5 reads them
            texts = self._rows(self._conn, asked)
            if None not in texts:
                return texts
        pieces = self._pieces(asked)
        missing = self._fill(pieces)
        if missing:  # folded meanwhile (or never stored): look them up in runs, once more
            for n in missing:
                self._load_at(n)
            pieces = self._pieces(asked)
            self._fill(pieces)
        return pieces

    def _pieces(self, asked: list[Run]) -> Pieces:
        """Return the pieces of ``asked`` from the runs read so far (texts of rows unread)."""
        where = self._where
        pieces = Pieces()
        for first, count, step in asked:
            i = 0
            while i < count:
                n = first + i * step
                found = where.get(n)
                if found is None:
                    last = pieces[-1] if pieces else None
                    if type(last) is Rows:
                        last.ids.append(n)
                    else:
                        pieces.append(Rows([n], []))
                    i += 1
                    continue
                run, p = found
                seqs = run.seqs
                j = min(count - i, len(seqs) - p)
                if seqs[p : p + j] != list(range(n, n + j * step, step)):
                    k = 1
                    while k < j and seqs[p + k] == n + k * step:
                        k += 1
                    j = k
                pieces.append(Folded(run.name, run.seq, run.data, run.lengths, range(p, p + j)))
                i += j
        return pieces

    def _fill(self, pieces: Pieces) -> list[int]:
        """Read the texts of the pieces' rows; return the ids with no row."""
        groups = [p for p in pieces if type(p) is Rows]
        if not groups:
            return []
        ids = [n for group in groups for n in group.ids]
        texts = self._rows(self._conn, _runs_of(ids))
        at = 0
        for group in groups:
            group.texts[:] = texts[at : at + len(group.ids)]
            at += len(group.ids)
        return [n for n, text in zip(ids, texts, strict=True) if text is None]

    def _load_range(self, low: int, high: int) -> None:
        """Read the runs holding ids from ``low`` to ``high`` (unless read already)."""
        if any(a <= low and high <= b for a, b in self._ranges):
            return
        query = _RANGE if low > 0 else _RANGE_FROM_START
        self._load(query, (low, low, high) if low > 0 else (low, high))
        self._ranges.append((low, high))

    def _load_at(self, n: int) -> None:
        """Read the run holding id ``n``, if any."""
        self._load(_AT, (n,))

    def _load(self, query: str, params: tuple[int, ...]) -> None:
        try:
            rows = self._conn.execute(query, params).fetchall()
        except (sqlite3.DatabaseError, ValueError) as exc:
            _name_damaged_run(self._conn, params[0], params[-1], exc)
        where = self._where
        for seq, last, items, data in rows:
            run = _run(seq, last, items, data)
            for p, n in enumerate(run.seqs):
                where[n] = (run, p)


def _run(seq: Any, last: Any, items: Any, data: Any) -> _RunRow:
    """Return a run row checked: its items are ``[[seq, ...], [length, ...]]`` that tile
    its text (else ``Damaged`` naming it)."""
    name = f"stored values {seq}..{last}"
    try:
        seqs, lengths = json.loads(items)
        if (
            type(seq) is not int
            or type(data) is not str
            or len(seqs) != len(lengths)
            or not all(type(n) is int for n in (*seqs, *lengths))
            or len(data) != sum(lengths) + max(len(lengths) - 1, 0) + 2
        ):
            raise ValueError("its items do not describe its data")
    except (ValueError, TypeError) as exc:
        msg = f"{name} (folded into one row) are damaged ({exc})"
        raise Damaged(msg) from None
    return _RunRow(name, seq, seqs, lengths, data)


def _name_damaged_run(conn: sqlite3.Connection, low: int, high: int, exc: BaseException) -> None:
    """Raise ``Damaged`` naming the first run from ``low`` to ``high`` that cannot be
    fetched (text that is not UTF-8, a damaged page)."""
    try:
        spans = conn.execute(
            "SELECT seq, last FROM runs WHERE last >= ? AND seq <= ? ORDER BY seq", (low, high)
        ).fetchall()
    except sqlite3.Error:
        spans = []
    for seq, last in spans:
        try:
            conn.execute("SELECT items, data FROM runs WHERE seq = ?", (seq,)).fetchone()
        except (sqlite3.Error, ValueError) as err:
            msg = f"stored values {seq}..{last} (folded into one row) cannot be read ({err})"
            raise Damaged(msg) from None
    msg = f"stored values from {low} to {high} cannot be read ({exc})"
    raise Damaged(msg) from None


def _runs_of(ids: list[int]) -> list[Run]:
    """Return ``ids`` as runs of evenly spaced ids."""
    out: list[Run] = []
    i, count = 0, len(ids)
    while i < count:
        first = ids[i]
        if i + 1 == count:
            out.append((first, 1, 1))
            break
        step = ids[i + 1] - first
        j = i + 1
        while j + 1 < count and ids[j + 1] - ids[j] == step:
            j += 1
        if step <= 0:
            out.append((first, 1, 1))
            i += 1
            continue
        out.append((first, j - i + 1, step))
        i = j + 1
    return out


_COLUMNS: Final = "SELECT seq, last, items, data FROM runs"
_RANGE_FROM_START: Final = f"{_COLUMNS} WHERE seq BETWEEN ? AND ? ORDER BY seq"
_RANGE: Final = (
    f"SELECT * FROM ({_COLUMNS} WHERE seq < ? ORDER BY seq DESC LIMIT 1) "
    f"UNION ALL SELECT * FROM ({_RANGE_FROM_START})"
)
"""The runs that may hold ids from ``?`` to ``?``: the one starting before, and those within."""
_AT: Final = f"{_COLUMNS} WHERE seq <= ? ORDER BY seq DESC LIMIT 1"
