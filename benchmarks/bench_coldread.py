"""A new saver's read of a long thread (``get_state``), phase by phase, against the floor.

Run: ``python benchmarks/bench_coldread.py [--steps 2000] [--rounds 30] [--same-saver]``

The thread and the floor are ``bench_reload.py``'s (a ~500-byte message a step; the floor
is one SELECT of the whole list stored as one JSON text plus one ``json.loads``). Each
round, on fresh copies of the files, interleaved: the floor with its two parts timed, then
``app.get_state`` with a new ``SqliteSaver``, with the CPU time spent inside some of the
functions of the read noted (wrapped for the run: they nest, so each line is inclusive;
the derived lines subtract) and the garbage collector's collections timed through
``gc.callbacks``. Printed: medians of the process's CPU time over the rounds (a shared
machine moves the totals between runs; the parts move less).

The phases: ``head`` is what ``chain()`` runs before and after the rows (the read
transaction, the thread's id, its newest checkpoint, the seq a next put takes, each a
statement a new connection prepares and runs once); ``chain rows`` the recursive query
of the chain and the decoding of its rows, less what follows; ``list's queries`` the reads
of ``runs`` and the value rows since the last fold, the texts fetched (``FoldedTexts``);
``list's parse`` the JSON scanner over the runs' arrays and rows (``_parse``); ``copies
kept`` the shallow copy of each message the next snapshot compares with (``read_lists``);
``flat check`` the ``gc.is_tracked`` pass (``scalar_dicts``); ``runtime`` what
``get_state`` does around ``chain()``. GC is the collections that ran inside the call,
wherever they fell (it is inside the other lines too).

``--same-saver`` reads instead with one saver, kept open, that continued the thread by a
step first (it put the newest checkpoint: a long-lived saver re-reading a thread it
writes, as a server's). The files are copied all the same (the floor's reads are fresh).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_reload

import corral.checkpoint._stored as stored
import corral.checkpoint.sqlite._folded as folded
import corral.checkpoint.sqlite._reading as reading
import corral.checkpoint.sqlite.saver as saver
from corral import SqliteSaver

cpu = time.process_time
spent: dict[str, float] = defaultdict(float)


def noted(owner: Any, name: str, label: str) -> None:
    """Wrap ``owner.name`` so that its CPU time is added to ``spent[label]``."""
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = cpu()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += cpu() - start

    setattr(owner, name, timed)


def collections_timer() -> Callable[[str, dict[str, Any]], None]:
    started = [0.0]

    def callback(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = cpu()
        else:
            spent["gc"] += cpu() - started[0]

    return callback


def floor_round(path: Path) -> dict[str, float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = FULL")  # as bench_reload's floor
    start = cpu()
    (text,) = conn.execute("SELECT data FROM state WHERE id = 1").fetchone()
    fetched = cpu()
    json.loads(text)
    end = cpu()
    conn.close()
    return {"floor": end - start, "floor fetch": fetched - start, "floor parse": end - fetched}


def read_round(path: Path, steps: int, store: SqliteSaver | None = None) -> dict[str, float]:
    """Time ``get_state`` with a new saver on ``path`` (or with ``store``, kept open)."""
    kept = store
    if store is None:
        store = SqliteSaver(path)
    app = bench_reload.chat_graph().compile(checkpointer=store)
    spent.clear()
    callback = collections_timer()
    gc.callbacks.append(callback)
    start = cpu()
    snapshot = app.get_state("t")
    total = cpu() - start
    gc.callbacks.remove(callback)
    if kept is None:
        store.close()
    assert len(snapshot.values["messages"]) == steps + (kept is not None)
    s = dict(spent)
    return {
        "get_state": total,
        "head": s["chain"] - s["rows"],
        "chain rows": s["rows"] - s["queries"] - s["parse"] - s["copies"] - s["flat"],
        "list's queries": s["queries"],
        "list's parse": s["parse"],
        "copies kept": s["copies"],
        "flat check": s["flat"],
        "runtime": total - s["chain"],
        "gc": s.get("gc", 0.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--same-saver",
        action="store_true",
        help="read with one saver that continued the thread by a step (it put the newest)",
    )
    args = parser.parse_args(argv)
    noted(saver.SqliteSaver, "chain", "chain")
    noted(saver, "read_rows", "rows")
    noted(folded.FoldedTexts, "__call__", "queries")
    noted(stored, "_parse", "parse")
    noted(reading, "read_lists", "copies")
    noted(reading, "scalar_dicts", "flat")
    rounds: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        thread, floor = Path(tmp) / "thread.sqlite", Path(tmp) / "floor.sqlite"
        bench_reload.build_thread(thread, args.steps)
        bench_reload.build_floor(floor, args.steps)
        same = None
        if args.same_saver:  # a long-lived saver that wrote the thread's newest checkpoint
            shutil.copy(thread, Path(tmp) / "same.sqlite")
            same = SqliteSaver(Path(tmp) / "same.sqlite")
            app = bench_reload.chat_graph().compile(checkpointer=same)
            app.invoke(None, thread_id="t", max_steps=args.steps + 10)
        for r in range(args.rounds + 2):  # the first two warm up
            copies = Path(tmp) / f"floor-{r}.sqlite", Path(tmp) / f"thread-{r}.sqlite"
            shutil.copy(floor, copies[0])  # each copied just before its read, as bench_reload
            parts = floor_round(copies[0])
            shutil.copy(thread, copies[1])
            parts.update(read_round(copies[1], args.steps, same))
            for leftover in Path(tmp).glob("*-*.sqlite*"):
                leftover.unlink()
            if r >= 2:
                for name, seconds in parts.items():
                    rounds[name].append(seconds)
        if same is not None:
            same.close()
    median = {name: statistics.median(values) for name, values in rounds.items()}
    who = "the saver that put its newest" if args.same_saver else "a new saver"
    print(
        f"cold read: a thread of {args.steps} steps, {who}; CPU medians of "
        f"{args.rounds} rounds (python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})"
    )
    for name, seconds in median.items():
        print(f"  {name:>15}: {seconds * 1e6:7.0f} us")
    print(f"  get_state / floor = {median['get_state'] / median['floor']:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
