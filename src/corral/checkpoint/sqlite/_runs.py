"""Folding value rows into runs (layout 6): the table, the fold's trigger, the ``blobs`` view.

A new saver reading a long thread back reads its snapshot's list (2,000 chat messages) from
2,000 value rows, and the sqlite3 module's cost per row (step, column, tuple) is most of the
read. So at each snapshot put the thread's small value rows written since the last fold are
folded into one row of ``runs``: their texts as one JSON array (``data``), read back by one
query and one ``json.loads``. A folded value keeps its ``seq``: every reference written
before or after the fold stays valid (the content-hash cache is file-wide, so another
thread may refer to it too) and is resolved through the run that holds it.

The fold is the ``AFTER INSERT`` trigger of a snapshot's checkpoint row (:func:`fold_trigger`),
so it commits with the put or not at all, whichever process writes it, and a one-statement
put stays one statement. Its window: the thread's value rows after the last run of its
range (or the range's start) and before the thread's checkpoint row before the new one (the
snapshot's own new values stay rows until the next fold), at most :data:`WINDOW` of them.
Values of :data:`SMALL` characters or more are left as rows (a run is read whole to get one
value). When the window holds at least :data:`MIN_FOLD` small values (about every second
snapshot of a chat, a message a step) they are folded: ``first``, ``n`` and ``step`` say
which seqs when they are evenly spaced (the usual run: a reader needs nothing else), and
``items`` lists their seqs and their texts' lengths in the order of ``data``, so a reader
can find any one and split the text; the folded rows are deleted (exactly the seqs in
``items``). A window that also holds a large value is folded from :data:`FEWEST` small
values on, and with fewer a run with no items is written all the same: it marks the window
as done, so a large value's length is computed once, not at every snapshot. A run is never
updated or deleted; a value row is deleted only by the fold that put it in a run, in the
same transaction.

Measured on ``bench_reload.py``'s thread of 2,000 messages (callgrind, a new saver's
``chain()``): folds of 40 values take 22.6 M instructions and the file 405 pages, folds of
60 22.2 M and 418 pages, of 20 23.8 M and 452 pages (a run's last overflow page is half
empty on average); layout 5's rows 30.2 M and 395 pages.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BLOBS", "FEWEST", "MIN_FOLD", "RUNS", "SMALL", "WINDOW", "fold_trigger"]

SMALL: Final = 16384
"""Values of this many characters or more stay rows of their own."""
MIN_FOLD: Final = 40
"""Fewer small values than this in a window are left as rows (a later window takes them
with the next ones)."""
FEWEST: Final = 8
"""A window that also holds a large value is folded from this many small ones on (and
marked as done with fewer: its small values stay rows)."""
WINDOW: Final = 256
"""Value rows one fold looks at, at most (an old thread's first folds catch up in steps)."""

RUNS: Final = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY,
    last INTEGER NOT NULL,
    first INTEGER,
    n INTEGER NOT NULL,
    step INTEGER NOT NULL,
    items TEXT NOT NULL,
    data TEXT NOT NULL
)
"""
"""One fold: ``seq`` the first value row of its window, ``last`` the last; ``n`` values
folded (maybe none), ``first`` the first of them and ``step`` their spacing when they are
evenly spaced (else 0); ``items`` the JSON ``[[seq, ...], [length, ...]]`` of the values
folded, ``data`` their texts as one JSON array, in that order."""


def fold_trigger(first: int, thread_bits: int) -> str:
    """Return the fold's trigger in a file whose first thread's range is ``first``."""
    low = f"((NEW.thread - {1 - first}) << {thread_bits})"
    last_run = (
        f"SELECT {{}} FROM runs WHERE seq BETWEEN {low} AND NEW.seq ORDER BY seq DESC LIMIT 1"
    )
    before = (
        f"SELECT seq FROM checkpoints WHERE seq BETWEEN {low} AND NEW.seq - 1 "
        "AND thread IS NOT NULL ORDER BY seq DESC LIMIT 1"
    )
    small = f"FILTER (WHERE size < {SMALL})"
    large = f"count(*) > count(*) {small}"
    fold = f"(count(*) {small} >= {MIN_FOLD} OR ({large} AND count(*) {small} >= {FEWEST}))"
    # The small values in order of seq (the window function sorts each kind by seq): each
    # one's gap from the one before tells whether they are evenly spaced.
    return f"""
CREATE TRIGGER IF NOT EXISTS fold AFTER INSERT ON checkpoints
WHEN NEW.snapshot IS NOT NULL
BEGIN
    INSERT INTO runs (seq, last, first, n, step, items, data)
    SELECT min(seq), max(seq),
        CASE WHEN {fold} THEN min(seq) {small} END,
        CASE WHEN {fold} THEN count(*) {small} ELSE 0 END,
        CASE WHEN {fold} AND min(gap) {small} = max(gap) {small} THEN min(gap) {small}
            ELSE 0 END,
        CASE WHEN {fold}
            THEN '[[' || group_concat(seq) {small} || '],[' || group_concat(size) {small} || ']]'
            ELSE '[[],[]]' END,
        CASE WHEN {fold} THEN '[' || group_concat(data, ',') {small} || ']' ELSE '[]' END
    FROM (
        SELECT seq, data, size,
            seq - lag(seq) OVER (PARTITION BY size < {SMALL} ORDER BY seq) AS gap
        FROM (
            SELECT seq, data, length(data) AS size FROM checkpoints
            WHERE seq > coalesce(({last_run.format("last")}), {low}) AND seq < ({before})
                AND thread IS NULL
            ORDER BY seq LIMIT {WINDOW}))
    HAVING {fold} OR {large};
    DELETE FROM checkpoints WHERE thread IS NULL AND seq IN (
        SELECT value FROM json_each(({last_run.format("items")}), '$[0]'));
END
"""


BLOBS: Final = """
CREATE VIEW blobs (id, data) AS
SELECT seq, data FROM checkpoints WHERE thread IS NULL
UNION ALL
SELECT id, substr(data, 2 + ends + k - size, size) FROM (
    SELECT s.value AS id, r.data AS data, z.key AS k, z.value AS size,
        sum(z.value) OVER (PARTITION BY r.seq ORDER BY z.key) AS ends
    FROM runs AS r, json_each(r.items, '$[1]') AS z
    JOIN json_each(r.items, '$[0]') AS s ON s.key = z.key)
"""
"""Every stored value, folded or not: ``id`` its seq, ``data`` its JSON text."""
