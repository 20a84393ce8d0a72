"""Folding value rows into runs (layout 6): the table, the fold's trigger, the ``blobs`` view.

A new saver reading a long thread back reads its snapshot's list (2,000 chat messages) from
2,000 value rows, and the sqlite3 module's cost per row (step, column, tuple) is most of the
read. So at each snapshot put the thread's small value rows written since the last fold are
folded into one row of ``runs``: their texts as one JSON array (``data``), read back by one
query and one ``json.loads``. A folded value keeps its ``seq``: every reference written
before or after the fold stays valid (the content-hash cache is file-wide, so another
thread may refer to it too) and is resolved through the run that holds it.

The fold is the ``INSTEAD OF INSERT`` trigger of a view, :data:`PUT_FOLD`, that only
a snapshot put inserts into (:func:`fold_trigger`): it inserts each row into ``checkpoints``
(whose triggers check the put as ever), then, at the checkpoint row, folds. So the fold
commits with its snapshot or not at all, a one-statement put stays one statement, and the
other puts' ``INSERT INTO checkpoints`` carries no fold: SQLite compiles every trigger of a
table into each ``INSERT`` it prepares, and runs each one's program for every row, ``WHEN``
clause or not (layout 6 as first built had the fold on ``checkpoints``: a new connection's
first put cost 1.32 M instructions against 0.58 M without it, a later put 144 k against
135 k; ``bench_layout.py --base 6 --first``).

Its window: the thread's value rows after the last run of its range (or the range's start)
and before the thread's checkpoint row before the new one (the snapshot's own new values
stay rows until the next fold), at most :data:`WINDOW` of them.
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

import re
from typing import Final

__all__ = [
    "BLOBS",
    "FEWEST",
    "MIN_FOLD",
    "PUT_FOLD",
    "RUNS",
    "SMALL",
    "WINDOW",
    "compact",
    "fold_trigger",
]


def compact(sql: str) -> str:
    """Return ``sql`` on one line, single-spaced, without its comments and without spaces
    next to operators and brackets, its quoted strings and names kept as written: the
    file's schema stays on one page (one more page is two more pages of every new file:
    ``bench_checkpoint.py``'s 200 steps 2.00x -> 2.08x the payload).

    A space stays where dropping it would join two tokens into another (``- -`` into a
    comment, ``< =`` into ``<=``) or make a blob of a name and a string (``x 'a'``).
    """
    out: list[str] = []
    gap = False
    for quoted, space, other in _TOKENS.findall(sql):
        if space:  # white space or a comment: one space at most, decided by what follows
            gap = bool(out)
            continue
        token = quoted or other
        if gap and not _joinable(out[-1][-1], token[0]):
            out.append(" ")
        out.append(token)
        gap = False
    return "".join(out)


def _joinable(left: str, right: str) -> bool:
    """Return whether the space between characters ``left`` and ``right`` may go."""
    return (left in _OPERATORS or right in _OPERATORS) and left + right not in _PAIRS


_TOKENS: Final = re.compile(
    r"""('(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])"""  # kept as written
    r"|([ \t\n\f\r]+|--[^\n]*|/\*(?:.|\n)*?(?:\*/|$))"  # SQLite's white space and comments
    r"|([^'\"`\[ \t\n\f\r/-]+|.)"  # the rest, up to a quote, space or comment
)
_OPERATORS: Final = frozenset("-(),=<>+*&|%/;")
_PAIRS: Final = frozenset(["--", "/*", "*/", "<>", "<=", ">=", "==", "!=", "||", "<<", ">>", "->"])


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

RUNS: Final = compact("""
CREATE TABLE IF NOT EXISTS runs(seq INTEGER PRIMARY KEY,last INT NOT NULL,first INT,
    n INT NOT NULL,step INT NOT NULL,items TEXT NOT NULL,data TEXT NOT NULL)
""")
"""One fold: ``seq`` the first value row of its window, ``last`` the last; ``n`` values
folded (maybe none), ``first`` the first of them and ``step`` their spacing when they are
evenly spaced (else 0); ``items`` the JSON ``[[seq, ...], [length, ...]]`` of the values
folded, ``data`` their texts as one JSON array, in that order."""


COLUMNS: Final = "seq,thread,checkpoint_id,parent,snapshot,writes,meta,meta_is_delta,data"
"""The columns of ``checkpoints``, in their order, the same in every layout from 2 on (the
fold's ``INSERT`` names none: the schema's page has no room for them)."""
PUT_FOLD: Final = "CREATE VIEW IF NOT EXISTS put_fold AS SELECT*FROM checkpoints WHERE 0"
"""The view a snapshot put inserts its rows into (the fold is its trigger); it shows none."""


def fold_trigger(thread_bits: int) -> str:
    """Return the fold's trigger (its SQL kept short: the file's schema stays on one page)."""
    low = f"NEW.seq>>{thread_bits}<<{thread_bits}"  # the start of the new row's range
    # The thread's last run (or one of an earlier thread: its last is below the range and
    # its rows are gone; no run of a later thread is before NEW.seq).
    last_run = "SELECT {} FROM runs WHERE seq<=NEW.seq ORDER BY seq DESC LIMIT 1"
    # The checkpoint row before the new one (if another thread's, the window is empty).
    before = "SELECT seq FROM checkpoints WHERE seq<NEW.seq AND thread>0 ORDER BY seq DESC LIMIT 1"
    at = "NEW.snapshot NOT NULL"  # the checkpoint row folds; a value row has nothing to do
    window = f"""
        SELECT seq,data,z,z<{SMALL} s FROM(SELECT seq,data,length(data)z FROM checkpoints
        WHERE seq>max(coalesce(({last_run.format("last")}),0),{low}) AND seq<({before})
        AND thread IS NULL AND {at} ORDER BY seq LIMIT {WINDOW})"""
    only = "FILTER(WHERE s)"
    # Small values (s) a..b, k of them, evenly spaced by 1 when b-a=k-1, by 2 when b-a=2k-2
    # and all of one parity (p=q): distinct seqs, so no other set fits (other steps: 0, and a
    # reader looks them up in items). No sort: the window's rows come in order of seq.
    return compact(f"""
CREATE TRIGGER IF NOT EXISTS fold INSTEAD OF INSERT ON put_fold
BEGIN
    INSERT INTO checkpoints VALUES({",".join("NEW." + c for c in COLUMNS.split(","))});
    INSERT INTO runs
    SELECT lo,hi,iif(f,a,NULL),iif(f,k,0),iif(f,iif(b-a=k-1,1,iif(b-a=2*k-2 AND p=q,2,0)),0),
        iif(f,'[['||sq||'],['||sz||']]','[[],[]]'),iif(f,'['||d||']','[]')
    FROM(SELECT min(seq)lo,max(seq)hi,min(seq){only}a,max(seq){only}b,sum(s)k,
        min(seq%2){only}p,max(seq%2){only}q,count(*)>sum(s)big,group_concat(seq){only}sq,
        group_concat(z){only}sz,group_concat(data){only}d,
        sum(s)>={MIN_FOLD} OR(count(*)>sum(s) AND sum(s)>={FEWEST})f FROM({window}))
    WHERE f OR big;
    DELETE FROM checkpoints WHERE {at} AND thread IS NULL
        AND seq IN(SELECT value FROM json_each(({last_run.format("items")}),'$[0]'));
END""")


BLOBS: Final = compact("""
CREATE VIEW blobs(id,data)AS SELECT seq,data FROM checkpoints WHERE thread IS NULL
UNION ALL SELECT s.value,
    substr(r.data,1+sum(z.value+1)OVER(PARTITION BY r.seq ORDER BY z.key)-z.value,z.value)
FROM runs r,json_each(r.items,'$[1]')z JOIN json_each(r.items,'$[0]')s ON s.key=z.key
""")
"""Every stored value, folded or not: ``id`` its seq, ``data`` its JSON text."""
