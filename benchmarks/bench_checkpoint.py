"""Checkpoint storage and speed: 200 supersteps that each append a ~500-byte message.

Run: ``python benchmarks/bench_checkpoint.py [--steps 200] [--rounds 5] [--sync FULL|NORMAL]
[--by-step] [--tmpfs] [--split] [--instructions [CALLS]]``

Four loops write the same 200 messages to a fresh SQLite file each, with the same PRAGMAs
(WAL, the same ``synchronous`` level, the default page size):

* ``floor``: a hand-written loop that appends the message to a list and INSERTs just the new
  message, one COMMIT per step: the least any durable per-step store can do.
* ``floor+``: the least a *resumable, checked* step must write, hand-written: the same hand
  loop, then one transaction per step in ``SqliteSaver``'s tables: the compare-and-set of
  the thread's newest checkpoint, the message's item and a checkpoint row (id, parent, the
  write referring to the message, the meta in full as ``json.dumps`` gives it). No
  snapshots: what the floor leaves out that a durable step cannot (finding a checkpoint by
  id, refusing a stale parent, the meta a resume needs).
* ``saver``: the same hand loop, plus ``SqliteSaver.put`` of the checkpoint the engine
  writes (the step's write, a full snapshot every 20th checkpoint, the engine's meta).
* ``engine``: the real graph (one node looping through a guard, a reducer appending the
  message) compiled with ``SqliteSaver``; skipped when the runtime cannot run it yet. Its
  steps are timed when each ``put`` returns (a subclass of the saver takes the time), not
  through ``on_event``, which would add the cost of building the run's events (about 4.6
  µs a step here) to a figure about checkpoints.

Rounds are interleaved (floor, floor+, saver, engine; then floor+, saver, engine, floor; and
so on: each round starts with the next loop) so disk noise hits all alike; figures are
medians over rounds. "mean" is the mean step (snapshots and WAL checkpoints included);
"median" is the typical step, which ignores the spikes other processes' disk use causes on
a shared machine; "cpu" is the process's CPU time a step
(the rest of a step is waiting for the disk). It prints the stored bytes against the raw
payload (the JSON bytes of the messages), the per-step time around step 10 and around step
200, the per-step time against the floor, the median step against ``floor+``, and the pages
a step writes (WAL frames, counted in one more untimed run of each loop with SQLite's
automatic WAL checkpoints off, so that the WAL holds every page written). ``--by-step``
also prints each step's time (median over rounds) for every loop, the snapshot steps
marked, to see where a loop's time goes along the run. ``--tmpfs`` puts the files on
``/dev/shm`` (memory: no disk, only the CPU is left; with ``--sync NORMAL`` there is no fsync
either). ``--split`` also prints where the engine's CPU a step goes (see :func:`split`).
``--instructions`` counts instead, with valgrind's callgrind, the instructions a step of each
loop runs (``synchronous=NORMAL`` on ``/dev/shm``; the mean of CALLS runs after one not
counted), and of ``puts``, the saver's puts of the engine's checkpoints alone (see
:func:`split`): the same on a busy machine as on a quiet one, so a change of a few
thousand instructions a step shows (it leaves out the kernel's work and cache misses).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import operator
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypedDict

from corral import END, End, Graph, Guard, SqliteSaver
from corral.checkpoint import Checkpoint

SNAPSHOT_EVERY = 20
WINDOW = 20
"""Per-step times are averaged over 20 steps, so each window holds one snapshot."""


def message(i: int) -> dict[str, str]:
    """Return the i-th ~500-byte chat message (distinct text, so nothing compresses away)."""
    words = " ".join(f"w{(i * 7919 + k * 104729) % 100000:05d}" for k in range(80))
    return {"role": "assistant", "content": f"step {i}: {words}"[:470]}


def payload_bytes(steps: int) -> int:
    """Return the raw payload: the JSON bytes of every message."""
    return sum(len(json.dumps(message(i), separators=(",", ":"))) for i in range(steps))


def file_bytes(path: Path) -> int:
    """Return the size of the database after folding the WAL into it."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.stat().st_size + sum(
        p.stat().st_size for p in path.parent.glob(path.name + "-*") if p.exists()
    )


Run = tuple[list[float], float]
"""The per-step times of one run and its CPU seconds a step."""


class Pages:
    """Counts the pages a run writes: the WAL frames, with automatic WAL checkpoints off.

    A runner calls :meth:`start` once its connection is open and :meth:`mark` before its
    first timed step and after its last; with ``counting`` off both do nothing.
    """

    def __init__(self, counting: bool) -> None:
        self.counting = counting
        self.marks: list[int] = []

    def start(self, conn: sqlite3.Connection) -> None:
        if self.counting:
            conn.execute("PRAGMA wal_autocheckpoint = 0")

    def mark(self, path: Path) -> None:
        if self.counting:
            wal = Path(f"{path}-wal")
            size = wal.stat().st_size if wal.exists() else 0
            self.marks.append(max(0, size - _WAL_HEADER) // (_PAGE + _FRAME_HEADER))

    def per_step(self, steps: int) -> float:
        return (self.marks[-1] - self.marks[0]) / steps


_PAGE, _WAL_HEADER, _FRAME_HEADER = 4096, 32, 24
"""SQLite's default page size, and the WAL file's header and each frame's header."""
_QUIET: Final = Pages(counting=False)


def run_floor(path: Path, steps: int, sync: str, pages: Pages = _QUIET) -> Run:
    """Hand loop + one INSERT and COMMIT of just the new message per step."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    pages.start(conn)
    pages.mark(path)
    state: dict[str, Any] = {"messages": []}
    cpu = time.process_time()
    stamps = [time.perf_counter()]
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO items (data) VALUES (?)", (json.dumps(new),))
        conn.execute("COMMIT")
        stamps.append(time.perf_counter())
    cpu = time.process_time() - cpu
    pages.mark(path)
    conn.close()
    assert len(state["messages"]) == steps
    return [b - a for a, b in itertools.pairwise(stamps)], cpu / steps


def step_meta(i: int) -> dict[str, Any]:
    """Return the meta of the checkpoint after step ``i`` (the keys the engine writes)."""
    return {
        "next": ["chat"],
        "steps": i + 1,
        "supersteps": i + 1,
        "runs": {"chat": i + 1},
        "guards": [["chat", "chat", i]],
        "status": "running",
    }


def run_durable_floor(path: Path, steps: int, sync: str, pages: Pages = _QUIET) -> Run:
    """Hand loop + one transaction a step in SqliteSaver's tables: the message's item, the
    checkpoint row (id, parent, write, full meta) and the compare-and-set of the thread's
    newest checkpoint."""
    SqliteSaver(path, synchronous=sync).close()  # type: ignore[arg-type]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous = {sync}")
    conn.execute("INSERT INTO corral_threads (name, newest) VALUES ('bench', '0')")
    pages.start(conn)
    pages.mark(path)
    state: dict[str, Any] = {"messages": []}
    parent = "0"
    cpu = time.process_time()
    stamps = [time.perf_counter()]
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        checkpoint_id = f"{i + 1:08x}"
        conn.execute("BEGIN IMMEDIATE")
        cur = conn.execute(
            "UPDATE corral_threads SET newest = ? WHERE name = 'bench' AND newest = ? RETURNING id",
            (checkpoint_id, parent),
        )
        (thread,) = cur.fetchone()
        (item,) = conn.execute(
            "INSERT INTO corral_items (thread, data) VALUES (?, ?) RETURNING id",
            (thread, json.dumps(new)),
        ).fetchone()
        conn.execute(
            "INSERT INTO corral_checkpoints (thread, checkpoint_id, parent_id, writes, meta) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                thread,
                checkpoint_id,
                parent,
                f'[["chat",{{"messages":{{"$corral":"items","v":[{item}]}}}}]]',
                json.dumps(step_meta(i)),
            ),
        )
        conn.execute("COMMIT")
        parent = checkpoint_id
        stamps.append(time.perf_counter())
    cpu = time.process_time() - cpu
    pages.mark(path)
    conn.close()
    assert len(state["messages"]) == steps
    return [b - a for a, b in itertools.pairwise(stamps)], cpu / steps


def run_saver(path: Path, steps: int, sync: str, pages: Pages = _QUIET) -> Run:
    """Hand loop + ``SqliteSaver.put`` of the checkpoint the engine would write."""
    saver = SqliteSaver(path, synchronous=sync)  # type: ignore[arg-type]
    pages.start(saver.connection)
    pages.mark(path)
    state: dict[str, Any] = {"messages": []}
    parent: str | None = None
    cpu = time.process_time()
    stamps = [time.perf_counter()]
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        checkpoint_id = f"{i + 1:08x}"
        saver.put(
            Checkpoint(
                "bench",
                checkpoint_id,
                parent,
                dict(state) if i % SNAPSHOT_EVERY == 0 else None,
                [("chat", {"messages": [new]})],
                step_meta(i),
            )
        )
        parent = checkpoint_id
        stamps.append(time.perf_counter())
    cpu = time.process_time() - cpu
    pages.mark(path)
    saver.close()
    return [b - a for a, b in itertools.pairwise(stamps)], cpu / steps


Runner = Callable[[Path, str, Pages], Run]


def engine_graph(steps: int) -> Graph[Any]:
    """Return the graph: one node appending the next message, looping through a guard."""

    class State(TypedDict):
        messages: Annotated[list[dict[str, str]], operator.add]

    g = Graph(State, max_steps=steps + 1)

    @g.node(start=True)
    def chat(state: State) -> dict[str, object]:
        return {"messages": [message(len(state["messages"]))]}

    @g.router("chat", guards=[Guard("chat", max=steps - 1, otherwise=END)])
    def again(state: State) -> Literal["chat"] | End:
        return "chat"

    return g


def make_engine(steps: int) -> Runner | None:
    """Return a runner of the real graph, or ``None`` while the runtime cannot run it."""
    g = engine_graph(steps)

    class Stamped(SqliteSaver):
        """Takes the time as each checkpoint is written: the input's, then each superstep's."""

        stamps: list[float]
        pages: Pages

        def put(self, checkpoint: Checkpoint) -> None:
            super().put(checkpoint)
            self.stamps.append(time.perf_counter())
            if len(self.stamps) == 1:  # the run's input: the steps come after it
                self.pages.mark(Path(self.path))

    def run(path: Path, sync: str, pages: Pages = _QUIET) -> Run:
        saver = Stamped(path, synchronous=sync)  # type: ignore[arg-type]
        stamps = saver.stamps = []
        saver.pages = pages
        pages.start(saver.connection)
        app = g.compile(checkpointer=saver)
        cpu = time.process_time()
        run_ = app.invoke({"messages": []}, thread_id="bench")
        cpu = time.process_time() - cpu
        pages.mark(path)
        saver.close()
        assert len(run_.state["messages"]) == steps, run_.steps
        return [b - a for a, b in itertools.pairwise(stamps)], cpu / steps

    try:
        with tempfile.TemporaryDirectory() as tmp:
            times, _ = run(Path(tmp) / "probe.sqlite", "NORMAL")
        if len(times) != steps:
            print(f"engine: skipped (saw {len(times)} checkpoint events, not {steps})")
            return None
    except Exception as exc:  # the runtime is not there yet
        print(f"engine: skipped ({type(exc).__name__}: {exc})"[:200])
        return None
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--by-step", action="store_true", help="print every step's time too")
    parser.add_argument("--tmpfs", action="store_true", help="write the files to /dev/shm")
    parser.add_argument("--split", action="store_true", help="split the engine's CPU a step")
    from bench_reload import callgrind_flags

    callgrind_flags(
        parser, "count each loop's instructions a step with callgrind (mean of CALLS runs)"
    )
    args = parser.parse_args(argv)
    steps: int = args.steps
    if args.counted:  # inside callgrind (see count_instructions)
        name, folder, calls = args.counted
        counted_runs(steps, name, Path(folder), int(calls))
        return 0
    if args.instructions:
        count_instructions(steps, args.instructions)
        return 0
    where = "/dev/shm" if args.tmpfs else None
    runners: dict[str, Runner] = {
        "floor": lambda p, s, c: run_floor(p, steps, s, c),
        "floor+": lambda p, s, c: run_durable_floor(p, steps, s, c),
        "saver": lambda p, s, c: run_saver(p, steps, s, c),
    }
    engine = make_engine(steps)
    if engine is not None:
        runners["engine"] = engine
    per_step: dict[str, list[list[float]]] = {name: [] for name in runners}
    cpus: dict[str, list[float]] = {name: [] for name in runners}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        names = list(runners)
        for r in range(args.rounds):
            # Each round starts with the next loop, so no loop always runs first (right
            # after the previous round's files were written) or always last.
            for name in names[r % len(names) :] + names[: r % len(names)]:
                runner = runners[name]
                path = Path(tmp) / f"{name}-{r}.sqlite"
                run_times, cpu = runner(path, args.sync, _QUIET)
                per_step[name].append(run_times)
                cpus[name].append(cpu)
                sizes[name] = file_bytes(path)
        pages: dict[str, float] = {}
        for name, runner in runners.items():
            counter = Pages(counting=True)
            runner(Path(tmp) / f"{name}-pages.sqlite", args.sync, counter)
            pages[name] = counter.per_step(steps)
    payload = payload_bytes(steps)
    print(
        f"{steps} supersteps, one ~{payload // steps}-byte message each; "
        f"WAL, synchronous={args.sync}; medians of {args.rounds} rounds "
        f"(python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})"
    )
    print(f"raw payload: {payload} bytes")

    def window(times: list[list[float]], end: int) -> float:
        return statistics.median(statistics.fmean(t[end - WINDOW : end]) for t in times)

    def total(times: list[list[float]]) -> float:
        return statistics.median(statistics.fmean(t) for t in times)

    def typical(times: list[list[float]]) -> float:
        return statistics.median(statistics.median(t) for t in times)

    floor, floor_typical = total(per_step["floor"]), typical(per_step["floor"])
    durable = typical(per_step["floor+"])
    for name in runners:
        times = per_step[name]
        early, late = window(times, WINDOW), window(times, steps)
        print(
            f"{name:>6}: {sizes[name]:>8} bytes = {sizes[name] / payload:4.2f}x payload | "
            f"per step: steps 1-{WINDOW} {early * 1e3:6.3f} ms, steps {steps - WINDOW + 1}-{steps} "
            f"{late * 1e3:6.3f} ms (late/early {late / early:4.2f}) | "
            f"mean {total(times) * 1e3:6.3f} ms = {total(times) / floor:4.2f}x floor, "
            f"median {typical(times) * 1e3:6.3f} ms = {typical(times) / floor_typical:4.2f}x "
            f"= {typical(times) / durable:4.2f}x floor+ | "
            f"cpu {statistics.median(cpus[name]) * 1e3:6.3f} ms | "
            f"pages {pages[name]:4.2f}"
        )
    if args.by_step:
        print_by_step(per_step, steps)
    if args.split:
        split(steps, args.sync, args.rounds, where)
    return 0


def split(steps: int, sync: str, rounds: int, where: str | None) -> None:
    """Print where the engine's CPU a step goes (least over ``rounds`` interleaved rounds).

    * ``engine``: the real graph with ``SqliteSaver``, as above;
    * ``own``: the same graph with a checkpointer that keeps the checkpoints it is given
      and writes nothing (no snapshot advice): the superstep and building its checkpoint;
    * ``puts``: those checkpoints put into a ``SqliteSaver`` in a loop: the saver's share;
    * ``bare``: the graph with no checkpointer (the inline path, :mod:`corral.runtime.inline`).

    ``engine`` is more than ``own + puts``: run in turn, the engine's code and the saver's
    evict each other from the CPU's caches (a loop of puts alone keeps them warm).
    """
    graph = engine_graph(steps)

    class Keep(SqliteSaver):
        kept: list[Checkpoint]

        def put(self, checkpoint: Checkpoint) -> None:
            self.kept.append(checkpoint)

        def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
            return False

    def invoke(app: Any, thread: str | None) -> float:
        cpu = time.process_time()
        app.invoke({"messages": []}, thread_id=thread)
        return (time.process_time() - cpu) / steps

    def put_all(saver: SqliteSaver, checkpoints: list[Checkpoint]) -> float:
        cpu = time.process_time()
        for checkpoint in checkpoints:
            saver.put(checkpoint)
        return (time.process_time() - cpu) / steps

    least: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        for r in range(rounds):
            saver = SqliteSaver(Path(tmp) / f"engine-{r}.sqlite", synchronous=sync)  # type: ignore[arg-type]
            figures = {"engine": invoke(graph.compile(checkpointer=saver), "bench")}
            saver.close()
            keep = Keep(Path(tmp) / f"keep-{r}.sqlite", synchronous=sync)  # type: ignore[arg-type]
            keep.kept = []
            figures["own"] = invoke(graph.compile(checkpointer=keep), "bench")
            keep.close()
            saver = SqliteSaver(Path(tmp) / f"puts-{r}.sqlite", synchronous=sync)  # type: ignore[arg-type]
            figures["puts"] = put_all(saver, keep.kept)
            saver.close()
            figures["bare"] = invoke(graph.compile(), None)
            for name, value in figures.items():
                least[name] = min(least.get(name, value), value)
    print(
        f"engine CPU a step (least of {rounds}): engine {least['engine'] * 1e6:5.1f} µs = "
        f"own {least['own'] * 1e6:5.1f} (bare superstep {least['bare'] * 1e6:5.1f}) + "
        f"puts {least['puts'] * 1e6:5.1f} + run in turn "
        f"{(least['engine'] - least['own'] - least['puts']) * 1e6:5.1f}"
    )


_COUNTED = ("floor", "floor+", "saver", "engine", "puts")


def count_instructions(steps: int, calls: int) -> None:
    """Print the instructions a step of each loop runs (callgrind; see ``--instructions``)."""
    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind)")
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_reload import callgrind

    print(
        f"instructions a step ({steps} steps, synchronous=NORMAL on /dev/shm; mean of "
        f"{calls} runs, callgrind; python {sys.version.split()[0]}, SQLite "
        f"{sqlite3.sqlite_version}):"
    )
    counts: dict[str, float] = {}
    for name in _COUNTED:
        with tempfile.TemporaryDirectory() as tmp:
            script = [sys.executable, __file__, "--steps", str(steps), "--counted", name, tmp]
            measured = callgrind(script, Path(tmp), calls)
        counts[name] = sum(measured) / len(measured) / steps
        print(f"  {name:>6}: {counts[name] / 1e3:7.1f} k", flush=True)
    print(
        f"  engine / floor = {counts['engine'] / counts['floor']:4.2f}x, engine / floor+ = "
        f"{counts['engine'] / counts['floor+']:4.2f}x, saver / floor = "
        f"{counts['saver'] / counts['floor']:4.2f}x"
    )


def counted_runs(steps: int, name: str, folder: Path, calls: int) -> None:
    """Run loop ``name`` ``calls`` times through ``operator.call`` (what callgrind counts),
    each on a fresh file in ``/dev/shm`` with ``synchronous=NORMAL``."""
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        graph = engine_graph(steps)
        kept: list[Checkpoint] = []
        if name == "puts":  # the engine's checkpoints, kept by a saver that writes nothing

            class Keep(SqliteSaver):
                def put(self, checkpoint: Checkpoint) -> None:
                    kept.append(checkpoint)

                def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
                    return False

            with Keep(Path(tmp) / "keep.sqlite", synchronous="NORMAL") as keep:
                graph.compile(checkpointer=keep).invoke({"messages": []}, thread_id="bench")
        for i in range(calls):
            path = Path(tmp) / f"{name}-{i}.sqlite"
            work: Callable[[], Any]
            if name in ("floor", "floor+", "saver"):
                loop = {"floor": run_floor, "floor+": run_durable_floor, "saver": run_saver}
                work = functools.partial(loop[name], path, steps, "NORMAL")
            elif name == "engine":
                app = graph.compile(checkpointer=SqliteSaver(path, synchronous="NORMAL"))
                work = functools.partial(app.invoke, {"messages": []}, thread_id="bench")
            else:
                work = functools.partial(_put_all, SqliteSaver(path, synchronous="NORMAL"), kept)
            operator.call(work)


def _put_all(saver: SqliteSaver, checkpoints: list[Checkpoint]) -> None:
    for checkpoint in checkpoints:
        saver.put(checkpoint)


def print_by_step(per_step: dict[str, list[list[float]]], steps: int) -> None:
    """Print each step's time (median over rounds) for every loop, in µs."""
    names = list(per_step)
    heading = " ".join(f"{name:>8}" for name in names)
    print(f"step  {heading}   (µs; * marks the saver's snapshot steps)")
    for i in range(steps):
        row = " ".join(f"{statistics.median(t[i] for t in per_step[n]) * 1e6:8.1f}" for n in names)
        print(f"{i + 1:4d}{'*' if i % SNAPSHOT_EVERY == 0 else ' '} {row}")


if __name__ == "__main__":
    raise SystemExit(main())
