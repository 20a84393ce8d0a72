"""Finding a checkpoint by id in a long thread: ``get_state(thread, checkpoint_id)``.

Run: ``python benchmarks/bench_by_id.py [--steps 2000] [--rounds 9]``

``bench_reload.py``'s chat graph runs ``--steps`` supersteps into a SQLite file. Then, each
round with a NEW ``SqliteSaver`` for every read (nothing of the thread is cached):

* ``newest``: ``get_state("t")``, the thread's newest checkpoint;
* ``by id, newest``: ``get_state("t", id)`` of that same checkpoint, by its id;
* ``by id, old``: ``get_state("t", id)`` of the checkpoints at steps 10, 1,000 and
  ``steps - 10``, one each round in turn (ids copied into ``ids`` long ago);
* ``find``: the look-up alone (``SqliteSaver.chain``'s first query), for the old ids and the
  newest.

Printed: medians of wall and CPU time, and each ``by id`` against ``newest`` (a read by id
differs from the newest's read only by how the row is found). Layout 5 finds an id in
``ids`` or by a scan of the thread's last block of rows; layout 4 had a unique index.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_reload import build_thread, chat_graph

from corral import SqliteSaver

Timing = tuple[float, float]


def timed(call: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    steps: int = args.steps
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "thread.sqlite"
        build_thread(path, steps)
        g = chat_graph()
        with SqliteSaver(path) as saver:
            ids = [s.checkpoint_id for s in g.compile(checkpointer=saver).history("t")]
        ids.reverse()  # history is newest first
        newest, old = ids[-1], [ids[10], ids[len(ids) // 2], ids[-11]]
        found: dict[str, list[Timing]] = {
            "newest": [],
            "by id, newest": [],
            "by id, old": [],
            "find, old": [],
            "find, newest": [],
        }

        def read(checkpoint_id: str | None) -> Timing:
            with SqliteSaver(path) as fresh:
                app = g.compile(checkpointer=fresh)
                if checkpoint_id is None:
                    return timed(lambda: app.get_state("t"))
                return timed(lambda: app.get_state("t", checkpoint_id))

        def find(checkpoint_id: str) -> Timing:
            with SqliteSaver(path) as fresh:
                conn = fresh._connection()
                thread = fresh._thread(conn, "t", create=False)
                assert thread is not None
                return timed(lambda: fresh._seq(conn, thread, checkpoint_id))

        for r in range(args.rounds):
            found["newest"].append(read(None))
            found["by id, newest"].append(read(newest))
            found["by id, old"].append(read(old[r % len(old)]))
            found["find, old"].append(find(old[r % len(old)]))
            found["find, newest"].append(find(newest))
    base = statistics.median(w for w, _ in found["newest"])
    base_cpu = statistics.median(c for _, c in found["newest"])
    print(f"{steps}-step thread, {args.rounds} rounds, a new saver per read (medians)")
    for name, times in found.items():
        wall = statistics.median(w for w, _ in times)
        cpu = statistics.median(c for _, c in times)
        print(
            f"{name:>14}: wall {wall * 1e3:7.3f} ms = {wall / base:5.2f}x newest | "
            f"cpu {cpu * 1e3:7.3f} ms = {cpu / base_cpu:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
