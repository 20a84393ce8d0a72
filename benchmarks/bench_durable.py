"""Where a durable step's time goes: ``bench_checkpoint.py``'s loops by phase, and prototypes.

Run: ``python benchmarks/bench_durable.py [--steps 200] [--rounds 5] [--sync FULL|NORMAL]
[--tmpfs] [--sleep-us N] [--only floor,engine] [--variants]``

Runs ``bench_checkpoint``'s ``floor``, ``floor+``, ``saver`` and ``engine`` loops in turn
(interleaved rounds, one process, fresh files) and splits each step into phases, stamped
with the wall clock, the thread's CPU clock and ``getrusage(RUSAGE_THREAD)`` (user and
system time, voluntary and involuntary context switches):

* floor: ``py`` (the message, the list, ``json.dumps``), ``begin``, ``insert``, ``commit``;
* floor+: ``py`` (the same and the row's texts), ``sql`` (its one ``INSERT``);
* saver: ``py`` (the message, the list, the checkpoint), ``put-py``, ``sql``, ``put-after``
  (as the engine's);
* engine: ``own`` (from one ``put``'s return to the next ``put``: the superstep, the node,
  the router, building the checkpoint), ``put-py`` (the saver's Python before its
  statement), ``sql`` (the one ``INSERT``, which commits), ``put-after`` (the saver's
  bookkeeping after it).

The stamps cost about 2 µs of CPU a phase (each loop pays them per phase it has); the
figures are per step, summed over a run, medians over rounds; rusage's user and system
times are sampled at the scheduler's ticks (only their sums over a run mean much).
``--sleep-us`` sleeps after each commit: on tmpfs, a stand-in for the fsync's wait.

``--variants`` runs the prototypes of two levers instead, against the floor and the engine
(mean step, wall, and CPU a step): ``overlap``, the saver's ``INSERT`` on a writer thread
while the engine goes on, the node waiting for it (:class:`Overlapped`), and ``minimal``,
the engine with a put as cheap as ``floor+``'s hand-written one (:class:`Minimal`).
"""

from __future__ import annotations

import argparse
import json
import operator
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

sys.path.insert(0, str(Path(__file__).parent))

from bench_checkpoint import _DURABLE_INSERT, engine_graph, message, step_meta

from corral import END, End, Graph, Guard, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite._layout import range_start
from corral.checkpoint.sqlite._writing import _INSERT_ONE

SLEEP = 0.0
"""Seconds each commit is followed by a sleep (``--sleep-us``: a stand-in for the fsync's wait)."""
_FIELDS = ("wall", "cpu", "user", "sys", "vcsw", "ivcsw")


def _stamp() -> tuple[float, float, float, float, int, int]:
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    return (
        time.perf_counter(),
        time.thread_time(),
        ru.ru_utime,
        ru.ru_stime,
        ru.ru_nvcsw,
        ru.ru_nivcsw,
    )


class Phases:
    """Sums of each phase's stamps' differences."""

    def __init__(self, names: list[str]) -> None:
        self.sums = {name: [0.0] * len(_FIELDS) for name in names}
        self.last = _stamp()

    def mark(self, name: str) -> None:
        now = _stamp()
        acc = self.sums[name]
        for i, (a, b) in enumerate(zip(self.last, now, strict=True)):
            acc[i] += b - a
        self.last = now


def run_floor(path: Path, steps: int, sync: str) -> Phases:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")

    state: dict[str, Any] = {"messages": []}
    ph = Phases(["py", "begin", "insert", "commit"])
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        text = json.dumps(new)
        ph.mark("py")
        conn.execute("BEGIN IMMEDIATE")
        ph.mark("begin")
        conn.execute("INSERT INTO items (data) VALUES (?)", (text,))
        ph.mark("insert")
        conn.execute("COMMIT")
        if SLEEP:
            time.sleep(SLEEP)
        ph.mark("commit")
    conn.close()
    return ph


class _Conn:
    """A connection whose ``execute`` marks the phases around it."""

    def __init__(self, conn: sqlite3.Connection, ph: Phases) -> None:
        self.conn = conn
        self.ph = ph

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self.ph.mark("put-py")
        try:
            return self.conn.execute(sql, params)
        finally:
            if SLEEP:
                time.sleep(SLEEP)
            self.ph.mark("sql")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def run_engine(path: Path, steps: int, sync: str) -> Phases:
    g = engine_graph(steps)
    ph = Phases(["own", "put-py", "sql", "put-after"])

    class Stamped(SqliteSaver):
        def put(self, checkpoint: Checkpoint) -> None:
            ph.mark("own")
            super().put(checkpoint)
            ph.mark("put-after")

    saver = Stamped(path, synchronous=sync)  # type: ignore[arg-type]
    assert saver._conn is not None
    real = saver._conn
    saver._conn = _Conn(real, ph)  # type: ignore[assignment]
    app = g.compile(checkpointer=saver)
    ph.last = _stamp()
    app.invoke({"messages": []}, thread_id="bench")
    saver._conn = real
    saver.close()
    return ph


def run_floor_plus(path: Path, steps: int, sync: str) -> Phases:

    SqliteSaver(path, synchronous=sync).close()  # type: ignore[arg-type]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous = {sync}")
    thread = conn.execute("INSERT INTO threads (name) VALUES ('bench')").lastrowid
    assert thread is not None
    seq = range_start(thread, 0) + 1
    state: dict[str, Any] = {"messages": []}
    parent: int | None = None
    ph = Phases(["py", "sql"])
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        write = f'[["chat",{{"messages":[{{"$corral":{seq}}}]}}]]'
        row = (seq, json.dumps(new), seq + 1, thread, f"{i + 1:08x}", parent, write)
        params = (*row, json.dumps(step_meta(i)))
        ph.mark("py")
        conn.execute(_DURABLE_INSERT, params)
        if SLEEP:
            time.sleep(SLEEP)
        ph.mark("sql")
        parent, seq = seq + 1, seq + 2
    conn.close()
    return ph


def run_saver(path: Path, steps: int, sync: str) -> Phases:
    ph = Phases(["py", "put-py", "sql", "put-after"])
    saver = SqliteSaver(path, synchronous=sync)  # type: ignore[arg-type]
    assert saver._conn is not None
    real = saver._conn
    saver._conn = _Conn(real, ph)  # type: ignore[assignment]
    state: dict[str, Any] = {"messages": []}
    parent: str | None = None
    ph.last = _stamp()
    for i in range(steps):
        new = message(i)
        state = {"messages": operator.add(state["messages"], [new])}
        checkpoint_id = f"{i + 1:08x}"
        checkpoint = Checkpoint(
            "bench",
            checkpoint_id,
            parent,
            dict(state) if i % 20 == 0 else None,
            [("chat", {"messages": [new]})],
            step_meta(i),
        )
        ph.mark("py")
        saver.put(checkpoint)
        ph.mark("put-after")
        parent = checkpoint_id
    saver._conn = real
    saver.close()
    return ph


class Minimal(SqliteSaver):
    """A prototype of the cheapest put: a checkpoint with no snapshot, of one write of one
    message, that this saver can number, is written as ``floor+`` writes it (the message's
    ``json.dumps``, the write's reference by hand, the meta in full by ``json.dumps``) in
    the saver's one ``INSERT``; the rest go through ``SqliteSaver.put``. What a put without
    packing, checks, meta deltas or snapshot bookkeeping would cost (its snapshots re-encode
    the messages the minimal puts did not note: those steps cost more)."""

    def put(self, checkpoint: Checkpoint) -> None:
        thread = self._threads.get(checkpoint.thread_id)
        start = None if thread is None else self._next_seq.get(thread)
        writes = checkpoint.writes
        if checkpoint.snapshot is not None or start is None or len(writes) != 1:
            super().put(checkpoint)
            return
        assert thread is not None and self._conn is not None
        ((node, update),) = writes
        parent = self._seqs[thread, checkpoint.parent_id]  # type: ignore[index]
        data = json.dumps(update["messages"][0])
        text = f'[[{json.dumps(node)},{{"messages":[{{"$corral":{start}}}]}}]]'
        row = (thread, checkpoint.checkpoint_id, parent, None, text, json.dumps(checkpoint.meta), 0)
        self._conn.execute(_INSERT_ONE, (start, data, start + 1, *row))
        self._seqs[thread, checkpoint.checkpoint_id] = start + 1
        self._next_seq[thread] = start + 2


class Overlapped(SqliteSaver):
    """A prototype of the overlap lever: the saver's one-statement ``INSERT`` (which
    commits) runs on a writer thread while the engine goes on; the node waits for it first
    (no user code before the commit). An upper bound: the saver's bookkeeping after the
    commit runs at once, not after it, and errors are not handled. ``spin``: the wait spins
    instead of blocking (the process keeps its core)."""

    spin = False

    def start_writer(self) -> None:
        self.pool = ThreadPoolExecutor(1)
        self.pending: Future[Any] | None = None
        assert self._conn is not None
        conn: sqlite3.Connection = self._conn
        saver = self

        class Handed:
            def execute(self, sql: str, params: Any = ()) -> Any:
                if sql.startswith("INSERT INTO checkpoints") and not conn.in_transaction:
                    saver.wait()
                    saver.pending = saver.pool.submit(conn.execute, sql, params)
                    return None
                return conn.execute(sql, params)

            def __getattr__(self, name: str) -> Any:
                return getattr(conn, name)

        self._conn = Handed()  # type: ignore[assignment]
        self.real = conn

    def wait(self) -> None:
        pending = self.pending
        if pending is not None:
            pending.result()
            self.pending = None

    def stop_writer(self) -> None:
        self.wait()
        self.pool.shutdown()
        self._conn = self.real


def overlap_graph(steps: int, saver: list[Overlapped]) -> Any:
    """``bench_checkpoint``'s graph whose node waits for the saver's last commit first."""

    class State(TypedDict):
        messages: Annotated[list[dict[str, str]], operator.add]

    g = Graph(State, max_steps=steps + 1)

    @g.node(start=True)
    def chat(state: State) -> dict[str, object]:
        saver[0].wait()
        return {"messages": [message(len(state["messages"]))]}

    @g.router("chat", guards=[Guard("chat", max=steps - 1, otherwise=END)])
    def again(state: State) -> Literal["chat"] | End:
        return "chat"

    return g


def variants(
    steps: int, rounds: int, sync: str, where: str | None, only: list[str] | None = None
) -> None:
    """Print the mean step (wall) and CPU a step of the floor, the engine, the engine with
    its commit overlapped (:class:`Overlapped`) and with the cheapest put
    (:class:`Minimal`), in interleaved rounds, each loop first in turn (``only``: those
    of them; the first is the base of the ratios, the engine always runs)."""
    holder: list[Overlapped] = []
    graphs = {"engine": engine_graph(steps), "overlap": overlap_graph(steps, holder)}

    def engine(path: Path, kind: str) -> tuple[float, float]:
        saver: SqliteSaver
        if kind == "overlap":
            saver = Overlapped(path, synchronous=sync)  # type: ignore[arg-type]
            saver.start_writer()
            holder[:] = [saver]
            app = graphs["overlap"].compile(checkpointer=saver)
        else:
            kept = Minimal if kind == "minimal" else SqliteSaver
            saver = kept(path, synchronous=sync)  # type: ignore[arg-type]
            app = graphs["engine"].compile(checkpointer=saver)
        wall, cpu = time.perf_counter(), time.process_time()
        app.invoke({"messages": []}, thread_id="bench")
        if isinstance(saver, Overlapped):
            saver.stop_writer()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        saver.close()
        return wall / steps, cpu / steps

    def floor(path: Path) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        run_floor(path, steps, sync)
        return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps

    kinds = only or ["floor", "engine", "overlap", "minimal"]
    if "engine" not in kinds:
        kinds.append("engine")
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        for r in range(rounds):
            turn = r % len(kinds)
            for kind in kinds[turn:] + kinds[:turn]:  # each goes first in turn
                path = Path(tmp) / f"{kind}{r}.sqlite"
                got[kind].append(floor(path) if kind == "floor" else engine(path, kind))
    first = got[kinds[0]]
    base = statistics.median(w for w, _ in first)
    print(f"prototypes, {steps} steps, synchronous={sync}, medians of {rounds} rounds")
    for kind, values in got.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        ratios = [w / f for (w, _), (f, _) in zip(values, first, strict=True)]
        vs = [w / e for (w, _), (e, _) in zip(values, got["engine"], strict=True)]
        print(
            f"{kind:>8}: {wall * 1e6:7.1f} µs a step = {wall / base:4.2f}x {kinds[0]} "
            f"(per round {min(ratios):4.2f}-{max(ratios):4.2f}x, median "
            f"{statistics.median(ratios):4.2f}x; against the engine: median "
            f"{statistics.median(vs):4.2f}x, faster in {sum(v < 1 for v in vs)} of {rounds}), "
            f"cpu {cpu * 1e6:6.1f} µs"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--tmpfs", action="store_true")
    parser.add_argument("--sleep-us", type=float, default=0.0, help="sleep after each commit")
    parser.add_argument("--only", default="", help="comma-separated loops to run")
    parser.add_argument("--variants", action="store_true", help="the prototypes instead")
    args = parser.parse_args(argv)
    if args.variants:
        only = args.only.split(",") if args.only else None
        variants(args.steps, args.rounds, args.sync, "/dev/shm" if args.tmpfs else None, only)
        return 0
    global SLEEP
    SLEEP = args.sleep_us / 1e6
    steps = args.steps
    loops = {"floor": run_floor, "floor+": run_floor_plus, "saver": run_saver, "engine": run_engine}
    if args.only:
        loops = {name: loops[name] for name in args.only.split(",")}
    runs: dict[str, list[Phases]] = {name: [] for name in loops}
    with tempfile.TemporaryDirectory(dir="/dev/shm" if args.tmpfs else None) as tmp:
        for r in range(args.rounds):
            for name, loop in loops.items():
                runs[name].append(loop(Path(tmp) / f"{name}{r}.sqlite", steps, args.sync))
    print(
        f"{steps} steps, synchronous={args.sync}, {'tmpfs' if args.tmpfs else 'disk'}, "
        f"sleep {args.sleep_us:.0f} µs a commit; "
        f"per step, medians of {args.rounds} rounds (µs; switches a step)"
    )
    print(f"{'':>16} " + " ".join(f"{f:>8}" for f in _FIELDS))
    for name, phases in runs.items():
        total = [0.0] * len(_FIELDS)
        for phase in phases[0].sums:
            row = [statistics.median(p.sums[phase][i] for p in phases) for i in range(6)]
            total = [a + b for a, b in zip(total, row, strict=True)]
            print(f"{name + ' ' + phase:>16} " + _row(row, steps))
        print(f"{name + ' total':>16} " + _row(total, steps))
    return 0


def _row(row: list[float], steps: int) -> str:
    cells = [f"{v / steps * 1e6:8.1f}" for v in row[:4]]
    cells += [f"{v / steps:8.2f}" for v in row[4:]]
    return " ".join(cells)


if __name__ == "__main__":
    raise SystemExit(main())
