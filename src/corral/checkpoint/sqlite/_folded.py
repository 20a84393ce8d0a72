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
from bisect import bisect_right
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from corral.checkpoint._pieces import Folded, Pieces, Rows
from corral.checkpoint._stored import Damaged, Run, runs_of

__all__ = ["FoldedTexts"]

_LONG: Final = 8
"""Asked runs of at least this many ids look up ``runs`` first, by their range."""


class _RunRow(NamedTuple):
    seq: int
    last: int
    seqs: list[int]
    items: str
    data: str
    step: int
    """The step of ``seqs`` when they are evenly spaced (the usual run), else 0."""

    def position(self, n: int) -> int:
        """Return the position of id ``n`` in the run (-1: not folded here)."""
        seqs = self.seqs
        if self.step:
            p, off = divmod(n - seqs[0], self.step)
            return p if not off and 0 <= p < len(seqs) else -1
        try:
            return seqs.index(n)
        except ValueError:
            return -1


class FoldedTexts:
    """The stored texts of ids, from ``runs`` and value rows (``rows``: the reader of value
    rows of layout 5, ``None`` where one is missing)."""

    def __init__(
        self, conn: sqlite3.Connection, rows: Callable[[sqlite3.Connection, list[Run]], list[Any]]
    ) -> None:
        self._conn = conn
        self._rows = rows
        self._runs: dict[int, _RunRow] = {}
        """The runs read so far, by their first seq."""
        self._starts: list[int] = []
        """Their first seqs, in order."""
        self._ranges: list[tuple[int, int]] = []
        """The ranges of ids whose runs were all read."""

    def __call__(self, asked: list[Run]) -> list[Any]:
        if not all(count > 0 and step > 0 for _first, count, step in asked):
            return self._rows(self._conn, asked)  # damage: named as layout 5 names it
        if len(asked) == 1 and asked[0][1] >= _LONG:
            whole = self._whole(*asked[0])
            if whole is not None:
                return whole
        for first, count, step in asked:
            if count >= _LONG:
                self._load_range(first, first + (count - 1) * step)
        if not self._runs:  # nothing folded here: the value rows, as layout 5 reads them
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

    def _whole(self, first: int, count: int, step: int) -> Pieces | None:
        """Return the pieces of the ids ``first``, ``first + step``, ... (``count``) when they
        are the ids of whole runs of evenly spaced values, in order, and then value rows (a
        snapshot's list, the usual long read), else ``None`` (:meth:`__call__` reads them
        the general way): no run's items are parsed."""
        last = first + (count - 1) * step
        try:
            rows = self._conn.execute(_WHOLE, (first, last)).fetchall()
        except (sqlite3.DatabaseError, ValueError) as exc:
            _name_damaged_run(self._conn, first, last, exc)
        expect = first
        for _seq, end, start, n, spacing, _items, _data in rows:
            if start != expect or (spacing != step and n > 1) or end > last:
                return None
            expect = start + n * step
        if not rows or type(expect) is not int:
            return None
        pieces = Pieces(
            [
                Folded(seq, end, data, n, items, range(n))
                for seq, end, _start, n, _step, items, data in rows
            ]
        )
        folded = (expect - first) // step
        if folded < count:
            rest = [(expect, count - folded, step)]
            texts = self._rows(self._conn, rest)
            if None in texts:
                return None
            pieces.append(Rows(list(range(expect, last + 1, step)), texts))
        return pieces

    def _pieces(self, asked: list[Run]) -> Pieces:
        """Return the pieces of ``asked`` from the runs read so far (texts of rows unread)."""
        starts, runs = self._starts, self._runs
        pieces = Pieces()
        for first, count, step in asked:
            i = 0
            while i < count:
                n = first + i * step
                at = bisect_right(starts, n) - 1
                run = runs[starts[at]] if at >= 0 else None
                p = -1 if run is None else run.position(n)
                if run is None or p < 0:  # a row: and so are the ids before the next run
                    if run is not None and n < run.seqs[-1]:
                        j = 1  # inside the run's span, not folded (large, or left)
                    else:
                        stop = starts[at + 1] if at + 1 < len(starts) else n + count * step
                        j = min(count - i, max(1, -((n - stop) // step)))
                    ids = list(range(n, n + j * step, step))
                    last = pieces[-1] if pieces else None
                    if isinstance(last, Rows):
                        last.ids.extend(ids)
                    else:
                        pieces.append(Rows(ids, []))
                    i += j
                    continue
                seqs = run.seqs
                j = min(count - i, len(seqs) - p)
                if seqs[p : p + j] != list(range(n, n + j * step, step)):
                    k = 1
                    while k < j and seqs[p + k] == n + k * step:
                        k += 1
                    j = k
                where = range(p, p + j)
                pieces.append(Folded(run.seq, run.last, run.data, len(seqs), run.items, where))
                i += j
        return pieces

    def _fill(self, pieces: Pieces) -> list[int]:
        """Read the texts of the pieces' rows; return the ids with no row."""
        groups = [p for p in pieces if isinstance(p, Rows)]
        if not groups:
            return []
        ids = [n for group in groups for n in group.ids]
        texts = self._rows(self._conn, runs_of(ids))
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
        rows = [row for row in rows if row[0] not in self._runs and row[2] != _NO_ITEMS]
        if not rows:
            return
        cuts = [_cut(row[2]) for row in rows]
        pairs = list(zip(rows, cuts, strict=True))
        try:  # the seqs of every run by one json.loads (their sizes only if needed)
            seqs = json.loads("[" + ",".join([row[2][1:cut] for row, cut in pairs]) + "]")
        except (ValueError, TypeError):
            seqs = None
        if type(seqs) is not list or len(seqs) != len(rows):  # damage: each alone, to name it
            seqs = [_seqs(row[2][1:cut]) for row, cut in pairs]
        for (seq, last, items, data), cut, folded in zip(rows, cuts, seqs, strict=True):
            run = _run(seq, last, items, data, folded, cut)
            self._runs[run.seq] = run
        self._starts = sorted(self._runs)


_NO_ITEMS: Final = "[[],[]]"


def _seqs(text: Any) -> Any:
    """Return the parsed ``text``, or ``None`` if it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _cut(items: Any) -> int:
    """Return where the seqs of a run's ``items`` (``[[seq, ...],[length, ...]]``) end."""
    return items.find("],[") + 1 if type(items) is str else 0


def _run(seq: Any, last: Any, items: Any, data: Any, seqs: Any, cut: int) -> _RunRow:
    """Return a run row checked: its ``items`` start with its ``seqs`` (parsed), ints in
    order, as many as its ``data`` holds (checked when parsed) (else ``Damaged`` naming it)."""
    try:
        if seqs is None:
            json.loads(items)  # names what is wrong
        if (
            type(seq) is not int
            or type(last) is not int
            or type(data) is not str
            or type(seqs) is not list
            or not seqs
            or not _INTS.issuperset(map(type, seqs))
            or not seq <= seqs[0] <= seqs[-1] <= last
            or not items.endswith("]]")
        ):
            raise ValueError("its items do not describe its data")
    except (ValueError, TypeError) as exc:
        msg = f"stored values {seq}..{last} (folded into one row) are damaged ({exc})"
        raise Damaged(msg) from None
    count = len(seqs)
    step = seqs[1] - seqs[0] if count > 1 else 1
    if step <= 0 or seqs != list(range(seqs[0], seqs[0] + count * step, step)):
        step = 0  # not evenly spaced (or not in order): found by index
    return _RunRow(seq, last, seqs, items, data, step)


_INTS: Final = frozenset({int})


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


_COLUMNS: Final = "SELECT seq, last, items, data FROM runs"
_RANGE_FROM_START: Final = f"{_COLUMNS} WHERE seq BETWEEN ? AND ? ORDER BY seq"
_RANGE: Final = (
    f"SELECT * FROM ({_COLUMNS} WHERE seq < ? ORDER BY seq DESC LIMIT 1) "
    f"UNION ALL SELECT * FROM ({_RANGE_FROM_START})"
)
"""The runs that may hold ids from ``?`` to ``?``: the one starting before, and those within."""
_AT: Final = f"{_COLUMNS} WHERE seq <= ? ORDER BY seq DESC LIMIT 1"
_WHOLE: Final = (
    "SELECT seq, last, first, n, step, items, data FROM runs "
    "WHERE seq BETWEEN ? AND ? AND n > 0 ORDER BY seq"
)
"""The runs that fold values within a range of ids, with their spacing."""
