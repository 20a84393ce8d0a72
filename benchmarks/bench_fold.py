"""An experiment for a layout 6: a thread's stored messages folded into few "run" rows.

Run: ``python benchmarks/bench_fold.py [--steps 2000] [--rounds 15] [--instructions 5]``

Layout 6 (built since: ``corral.checkpoint.sqlite._runs``) folds values itself; this script,
the experiment before it, builds the 2,000-step thread of ``bench_reload.py`` and puts the
folded values back into value rows (:func:`unfold`: layout 5's file, one ~500-byte message a
superstep, each its own value row; the file keeps the freed pages of ``runs``, so "the
saver's file" storage line counts them), then, on
copies of the file, folds the value rows by hand into rows of ``--run`` messages each (one
JSON array text each, in a side table ``folds``; the folded value rows are deleted) and
measures, in one process with interleaved rounds (medians; CPU time and wall time):

* reads: the newest snapshot's list of messages fetched the way the saver fetches it today
  (``rows``: ``StoredValues.fetcher`` over ``_reading.texts_of``, one range query of 2,000
  rows, one join, one ``json.loads``), against the same list read from run rows (``runs``:
  one range query of ``steps / run`` rows, their texts joined without their brackets, one
  ``json.loads``; ``runs_each``: one ``json.loads`` a run row), against the floor's one row
  (one SELECT, one ``json.loads``); the ``_sql`` lines are the queries alone;
* ``get_state`` and ``continue`` of ``bench_reload.py`` (a new saver each) on the thread's
  file, and on the folded file with a prototype reader installed for the call (the lines
  ending in "runs": :func:`folded_texts` and :func:`folded_parse` in place of the saver's
  ``_reading._texts`` and ``_stored._parse``; checked first to rebuild the same states), and
  ``floor+step``, to place the saving against the issue 15 goal;
* writes: a durable step as ``bench_reload``'s floor writes it (INSERT one message, COMMIT,
  ``synchronous=FULL``), against the same step that also folds the last ``--run`` value
  rows of the thread into one run row (what a snapshot put would do): time and WAL pages;
* storage: every ``--run`` supersteps folded as a thread grows (a copy of the thread's rows
  in order, folding at each snapshot): pages in use against the payload, and the same copy
  unfolded.

``--instructions N`` counts instead, with callgrind, the instructions of each measured call
(mean of N calls after one; a fresh copy of the file for each call that writes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_reload as br

from corral import SqliteSaver
from corral.checkpoint import _stored
from corral.checkpoint._stored import TAG, Run, Stored, StoredValues, run_ids
from corral.checkpoint.sqlite import _reading
from corral.checkpoint.sqlite._reading import texts_of
from corral.checkpoint.sqlite._schema import _MMAP_BYTES

FOLDS = """CREATE TABLE IF NOT EXISTS folds (
    first INTEGER PRIMARY KEY, last INTEGER NOT NULL, data TEXT NOT NULL)"""
"""The hack's run rows: the value rows ``first``..``last`` (every other seq: a thread's
value and checkpoint rows alternate), as one JSON array text."""


def unfold(path: Path) -> None:
    """Put the values layout 6 folded into runs back into value rows, as layout 5 kept them
    (the experiment compares with those)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO checkpoints (seq, data) SELECT id, data FROM blobs "
        "WHERE id NOT IN (SELECT seq FROM checkpoints)"
    )
    conn.execute("DELETE FROM runs")
    conn.execute("COMMIT")
    conn.close()


def value_seqs(conn: sqlite3.Connection) -> list[int]:
    return [s for (s,) in conn.execute("SELECT seq FROM checkpoints WHERE thread IS NULL")]


def fold(conn: sqlite3.Connection, seqs: list[int]) -> None:
    """Fold the value rows ``seqs`` into one run row (inside the caller's transaction)."""
    texts = [
        t
        for (t,) in conn.execute(
            "SELECT data FROM checkpoints WHERE seq BETWEEN ? AND ? AND thread IS NULL "
            "ORDER BY seq",
            (seqs[0], seqs[-1]),
        )
    ]
    assert len(texts) == len(seqs)
    conn.execute(
        "INSERT INTO folds (first, last, data) VALUES (?, ?, ?)",
        (seqs[0], seqs[-1], "[" + ",".join(texts) + "]"),
    )
    conn.execute(
        "DELETE FROM checkpoints WHERE seq BETWEEN ? AND ? AND thread IS NULL",
        (seqs[0], seqs[-1]),
    )


def fold_sql(conn: sqlite3.Connection, seqs: list[int]) -> None:
    """:func:`fold` by two statements, as a trigger on the snapshot's row would run it."""
    conn.execute(
        "INSERT INTO folds (first, last, data) SELECT min(seq), max(seq), "
        "'[' || group_concat(data, ',') || ']' FROM (SELECT seq, data FROM checkpoints "
        "WHERE seq BETWEEN ? AND ? AND thread IS NULL ORDER BY seq)",
        (seqs[0], seqs[-1]),
    )
    conn.execute(
        "DELETE FROM checkpoints WHERE seq BETWEEN ? AND ? AND thread IS NULL",
        (seqs[0], seqs[-1]),
    )


def fold_all(path: Path, run: int) -> None:
    """Fold every value row of the file at ``path`` into run rows of ``run`` messages."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(FOLDS)
    seqs = value_seqs(conn)
    conn.execute("BEGIN IMMEDIATE")
    for i in range(0, len(seqs), run):
        fold(conn, seqs[i : i + run])
    conn.execute("COMMIT")
    conn.close()


def read_rows(conn: sqlite3.Connection, steps: int) -> list[Any]:
    """The saver's fetch of the snapshot's list ``[[2, steps, 2]]`` (value rows)."""
    fetch = StoredValues({}).fetcher(texts_of(conn, False), [])
    return fetch([(2, steps, 2)]).trees


def read_runs(conn: sqlite3.Connection, steps: int) -> list[Any]:
    """The same list read from run rows: one range query, one join, one ``json.loads``."""
    texts = [
        t
        for (t,) in conn.execute(
            "SELECT data FROM folds WHERE first BETWEEN ? AND ? ORDER BY first", (2, 2 * steps)
        )
    ]
    return list(json.loads("[" + ",".join([t[1:-1] for t in texts]) + "]"))


def read_runs_each(conn: sqlite3.Connection, steps: int) -> list[Any]:
    """The same list read from run rows, each run's text parsed by a ``json.loads`` of its own."""
    out: list[Any] = []
    for (t,) in conn.execute(
        "SELECT data FROM folds WHERE first BETWEEN ? AND ? ORDER BY first", (2, 2 * steps)
    ):
        out += json.loads(t)
    return out


def sql_rows(conn: sqlite3.Connection, steps: int) -> list[Any]:
    return texts_of(conn, False)([(2, steps, 2)])


def sql_runs(conn: sqlite3.Connection, steps: int) -> list[Any]:
    query = "SELECT data FROM folds WHERE first BETWEEN ? AND ? ORDER BY first"
    return [t for (t,) in conn.execute(query, (2, 2 * steps))]


def sql_floor(conn: sqlite3.Connection, steps: int) -> list[Any]:
    return list(conn.execute("SELECT data FROM state WHERE id = 1").fetchone())


def read_floor(conn: sqlite3.Connection, steps: int) -> list[Any]:
    (text,) = conn.execute("SELECT data FROM state WHERE id = 1").fetchone()
    return list(json.loads(text))


_FILES = {"floor": "floor.sqlite", "rows": "rows.db", "runs": "runs.db"}
_FILES.update({"runs_each": "runs.db"}, **{f"{n}_sql": f for n, f in _FILES.items()})


class Chunks(list[str]):
    """Texts a prototype reader returns: each a run row's JSON array, or a value row's."""

    arrays: list[bool]


def folded_texts(conn: sqlite3.Connection, runs: list[Run]) -> list[Any]:
    """A prototype of a run-aware ``_reading._texts``: a long run of ids is read from the
    run rows that tile it (then the value rows after the last one); other ids as today,
    and an id missing from the value rows from the run row that holds it."""
    if len(runs) == 1 and runs[0][1] >= 8:
        first, count, step = runs[0]
        last = first + (count - 1) * step
        rows = conn.execute(_FOLDS_IN, (first, last)).fetchall()
        out, done = Chunks(), first - step
        for start, end, data in rows:
            if start != done + step:
                break
            if end > last:  # a run reaching past the ids asked: its first items (re-encoded)
                data = json.dumps(json.loads(data)[: (last - start) // step + 1])
                end = last
            out.append(data)
            done = end
        else:
            out.arrays = [True] * len(out)
            if done < last:
                rest = _TEXTS(conn, [(done + step, (last - done) // step, step)])
                out.extend(rest)
                out.arrays += [False] * len(rest)
            return out
    texts = _TEXTS(conn, runs)
    ids = run_ids(runs)
    for i, text in enumerate(texts):
        if text is None:  # folded: take it from its run row (re-encoded: a prototype)
            row = conn.execute(_FOLD_OF, (ids[i],)).fetchone()
            if row is not None and ids[i] <= row[1]:
                texts[i] = json.dumps(json.loads(row[2])[(ids[i] - row[0]) // 2])
    return texts


_FOLDS_IN = "SELECT first, last, data FROM folds WHERE first BETWEEN ? AND ? ORDER BY first"
_FOLD_OF = "SELECT first, last, data FROM folds WHERE first <= ? ORDER BY first DESC LIMIT 1"
_TEXTS = _reading._texts
_PARSE = _stored._parse


def folded_parse(runs: list[Run], texts: list[Any], arrays: Any = None) -> tuple[Stored, int]:
    """A prototype of a chunk-aware ``_stored._parse``: one ``json.loads`` a run row."""
    if not isinstance(texts, Chunks):
        return _PARSE(runs, texts)
    trees: list[Any] = []
    final, size = True, 0
    for text, array in zip(texts, texts.arrays, strict=True):
        final = final and ("$" not in text or TAG not in text)
        final = final and ("\\" not in text or "\\u" not in text)
        size += len(text)
        if array:
            trees += json.loads(text)
        else:
            trees.append(json.loads(text))
    return Stored(trees, final), size


class folded_reader:
    """Install the prototype reader (``_reading._texts`` and ``_stored._parse``)."""

    def __enter__(self) -> None:
        _reading._texts = folded_texts
        _stored._parse = folded_parse

    def __exit__(self, *exc: object) -> None:
        _reading._texts = _TEXTS
        _stored._parse = _PARSE


def saver_call(name: str, path: Path, steps: int) -> tuple[float, float]:
    """``get_state`` or ``continue`` of ``bench_reload`` on a copy of ``path``; the names
    ending in "runs" with the prototype reader installed."""
    copy = path.with_name(f"call-{name.replace(' ', '_')}.db")
    shutil.copy(path, copy)
    timer = br.time_get_state if name.startswith("get_state") else br.time_continue
    try:
        if name.endswith("runs"):
            with folded_reader():
                return timer(copy, steps)
        return timer(copy, steps)
    finally:
        for leftover in path.parent.glob(copy.name + "*"):
            leftover.unlink()


def check_prototype(base: Path, folded: Path) -> None:
    """Fail unless the prototype reader rebuilds, from the folded file, the state and the
    history the saver reads from the thread's own file."""
    app = br.chat_graph().compile(checkpointer=(saver := SqliteSaver(base)))
    expected = app.get_state("t").values, [s.values for s in app.history("t")[:50]]
    saver.close()
    with folded_reader():
        app = br.chat_graph().compile(checkpointer=(saver := SqliteSaver(folded)))
        got = app.get_state("t").values, [s.values for s in app.history("t")[:50]]
        saver.close()
    assert got == expected, "the prototype reader read another state"


_SAVER_CALLS = {"get_state": "rows", "get_state runs": "runs", "continue": "rows"}
_SAVER_CALLS["continue runs"] = "runs"
"""Whole calls through the saver, and the file each reads."""
_WRITES = {"step": "", "+fold py": "python", "+fold sql": "sql"}
"""The measured writes: a step alone, or with a fold (see :func:`step_and_fold`)."""
READERS: dict[str, Callable[[sqlite3.Connection, int], list[Any]]] = {
    "floor": read_floor,
    "rows": read_rows,
    "runs": read_runs,
    "runs_each": read_runs_each,
}
SQL_ONLY: dict[str, Callable[[sqlite3.Connection, int], list[Any]]] = {
    "floor_sql": sql_floor,
    "rows_sql": sql_rows,
    "runs_sql": sql_runs,
}
"""The queries alone (their texts, not parsed)."""
READERS.update(SQL_ONLY)


def time_read(name: str, path: Path, steps: int) -> tuple[float, float]:
    conn = sqlite3.connect(path, isolation_level=None)  # as the saver's (open_file)
    conn.execute("PRAGMA journal_mode = WAL")
    if not name.startswith("floor"):  # the floor's connection is bench_reload's (no mmap)
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
    out, elapsed = br.timed(lambda: READERS[name](conn, steps))
    conn.close()
    assert name in SQL_ONLY or (len(out) == steps and out[-1] == br.message(steps - 1)), name
    return elapsed


def step_and_fold(path: Path, steps: int, run: int, *, folds: str) -> tuple[float, float, int]:
    """A durable step (INSERT one message, COMMIT), folding the last ``run`` value rows in
    the same transaction if ``folds`` ("python": :func:`fold`, "sql": :func:`fold_sql`):
    wall, CPU and the WAL pages it wrote."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(FOLDS)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    last = value_seqs(conn)[-run:]
    text = json.dumps(br.message(steps))
    wal = path.with_name(path.name + "-wal")

    def work() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO checkpoints (data) VALUES (?)", (text,))
        if folds:
            (fold_sql if folds == "sql" else fold)(conn, last)
        conn.execute("COMMIT")

    before = wal.stat().st_size
    _, (wall, cpu) = br.timed(work)
    pages = (wal.stat().st_size - before) // (4096 + 24)
    conn.close()
    return wall, cpu, pages


def grow_folded(source: Path, target: Path, run: int) -> tuple[int, int]:
    """Copy the thread's rows in order into a table without triggers, folding the value rows
    of every ``run`` supersteps as the copy grows; return (pages in use, bytes of data)."""
    src = sqlite3.connect(source)
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE checkpoints (seq INTEGER PRIMARY KEY, thread INTEGER, checkpoint_id "
        "TEXT, parent INTEGER, snapshot TEXT, writes TEXT, meta TEXT, meta_is_delta INTEGER, "
        "data TEXT)"
    )
    conn.execute(FOLDS)
    pending: list[int] = []
    for row in src.execute("SELECT * FROM checkpoints ORDER BY seq"):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        if row[1] is None:
            pending.append(row[0])
        if len(pending) == run:
            fold(conn, pending)
            pending = []
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    conn.close()
    src.close()
    return pages - free, pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--run", type=int, default=20, help="messages a run row holds")
    parser.add_argument("--instructions", type=int, default=0, metavar="CALLS")
    parser.add_argument("--counted", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps, run = args.steps, args.run
    if args.counted:  # inside callgrind, on the files the caller built
        name, folder, calls = args.counted
        for i in range(int(calls)):
            if name in _SAVER_CALLS:
                saver_call(name, Path(folder) / _FILES[_SAVER_CALLS[name]], steps)
            elif name in _WRITES:  # a fresh copy of the thread each
                copy = Path(folder) / f"counted-{i}.db"
                shutil.copy(Path(folder) / _FILES["rows"], copy)
                step_and_fold(copy, steps, run, folds=_WRITES[name])
            else:
                time_read(name, Path(folder) / _FILES[name], steps)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base, folded, floor = (Path(tmp) / _FILES[n] for n in ("rows", "runs", "floor"))
        br.build_thread(base, steps)
        unfold(base)  # the thread as layout 5 stored it: a value row per message
        br.build_floor(floor, steps)
        shutil.copy(base, folded)
        fold_all(folded, run)
        files = {n: Path(tmp) / f for n, f in _FILES.items()}
        check_prototype(base, folded)
        if args.instructions:
            print(f"instructions of one read, millions (mean of {args.instructions} calls):")
            for name in (*READERS, *_WRITES, *_SAVER_CALLS):
                counted = count(name, Path(tmp), steps, args.instructions, run)
                print(f"  {name:>10}: {counted / 1e6:6.3f}")
            return 0
        reads: dict[str, list[tuple[float, float]]] = {
            n: [] for n in (*READERS, *_SAVER_CALLS, "floor+step")
        }
        writes: dict[str, list[tuple[float, float, int]]] = {name: [] for name in _WRITES}
        for r in range(args.rounds):
            for name in READERS:
                reads[name].append(time_read(name, files[name], steps))
            for name, source in _SAVER_CALLS.items():
                reads[name].append(saver_call(name, files[source], steps))
            copy = Path(tmp) / f"floor-{r}.sqlite"
            shutil.copy(floor, copy)
            reads["floor+step"].append(br.time_floor(copy, steps, step=True))
            for name in writes:
                copy = Path(tmp) / f"w-{name}-{r}.sqlite"
                shutil.copy(base, copy)
                writes[name].append(step_and_fold(copy, steps, run, folds=_WRITES[name]))
        in_use, pages = grow_folded(base, Path(tmp) / "grown.db", run)
        unfolded, _ = grow_folded(base, Path(tmp) / "unfolded.db", steps + 1)  # no fold
        plain = sqlite3.connect(base).execute("PRAGMA page_count").fetchone()[0]
    payload = sum(len(json.dumps(br.message(i), separators=(",", ":"))) for i in range(steps))
    print(
        f"fold: a thread of {steps} supersteps, runs of {run} messages; medians of "
        f"{args.rounds} rounds (python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})"
    )
    cpu = {k: statistics.median(t[1] for t in v) for k, v in reads.items()}
    wall = {k: statistics.median(t[0] for t in v) for k, v in reads.items()}
    for k in reads:
        print(f"  {k:>10}: {wall[k] * 1e3:6.3f} ms wall {cpu[k] * 1e3:6.3f} ms CPU")
    print(
        f"  CPU: rows/floor {cpu['rows'] / cpu['floor']:.2f}x, runs/floor "
        f"{cpu['runs'] / cpu['floor']:.2f}x, runs_each/floor "
        f"{cpu['runs_each'] / cpu['floor']:.2f}x; get_state/floor "
        f"{cpu['get_state'] / cpu['floor']:.2f}x"
        f" -> {cpu['get_state runs'] / cpu['floor']:.2f}x from runs; continue/(floor+step) "
        f"{cpu['continue'] / cpu['floor+step']:.2f}x -> "
        f"{cpu['continue runs'] / cpu['floor+step']:.2f}x from runs"
    )
    for k, v in writes.items():
        w = statistics.median(t[0] for t in v)
        c = statistics.median(t[1] for t in v)
        p = statistics.median(t[2] for t in v)
        print(f"  {k:>10}: {w * 1e3:6.3f} ms wall {c * 1e3:6.3f} ms CPU, {p} WAL pages")
    print(
        f"  storage: folded as it grows {in_use} pages in use ({pages} in the file) = "
        f"{in_use * 4096 / payload:.2f}x the payload; the same copy unfolded {unfolded} pages "
        f"= {unfolded * 4096 / payload:.2f}x; the saver's file {plain} pages = "
        f"{plain * 4096 / payload:.2f}x"
    )
    return 0


def count(name: str, folder: Path, steps: int, calls: int, run: int) -> float:
    """Mean instructions of ``calls`` reads ``name`` (inside ``operator.call``), after one."""
    with tempfile.TemporaryDirectory() as tmp:
        script = [
            sys.executable,
            __file__,
            "--steps",
            str(steps),
            "--run",
            str(run),
            "--counted",
            name,
            str(folder),
        ]
        measured = br.callgrind(script, Path(tmp), calls)
        return sum(measured) / len(measured)


if __name__ == "__main__":
    sys.exit(main())
