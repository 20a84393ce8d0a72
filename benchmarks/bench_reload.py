"""Reloading a long thread, and a thread whose large value changes every step.

Run: ``python benchmarks/bench_reload.py [--steps 2000] [--rounds 9] [--big-mb 50]``

Part 1, reload. A graph whose one node appends a ~500-byte message to a list (through a
reducer) runs ``--steps`` supersteps into a SQLite file (``synchronous=FULL``, the default).
Then, each round on a fresh copy of that file, interleaved:

* ``floor``: a hand-written loop's read: one SELECT of the whole list stored as one JSON
  text, and one ``json.loads`` of it (on a connection opened before the clock starts);
* ``get_state``: ``app.get_state(thread)`` with a NEW ``SqliteSaver`` (opened before the
  clock starts: nothing of the thread is cached);
* ``floor+step``: the floor, plus one durable step as ``bench_checkpoint.py``'s floor writes
  it (INSERT the new message, COMMIT);
* ``continue``: ``app.invoke(None, thread_id=...)`` with a new saver, which rebuilds the
  state, runs one more superstep and commits its checkpoint;
* ``new run``: ``app.invoke({"messages": [m]}, thread_id=...)`` with a new saver (a chat
  turn): it rebuilds the state, commits the run's input checkpoint, runs one superstep and
  commits its checkpoint;
* ``history`` (three rounds, after the others): ``app.history(thread)`` with a new saver,
  a snapshot with its own copy of the state for each of the ``steps + 1`` checkpoints.

Goals (issue 15): ``get_state`` within 3x of ``floor``, ``continue`` within 2x of
``floor+step``.

Part 2, a large value. A graph whose node replaces a ``--big-mb`` MB string every step runs
``--big-steps`` supersteps (the default, 8 of 50 MB, writes 450 MB: about 30 s on a slow
disk); printed: the stored bytes against the payload of one string per step, and
``get_state`` of every checkpoint with a new saver (the slowest and the median), against
one SELECT + ``json.loads`` of one such string. Goal: ``get_state`` well under a
second at any checkpoint; storage within 2x of the payload and linear.

The figures are medians over rounds; the machine may be shared, so the ratios (measured in
one process, rounds interleaved) are what to compare. Part 1 prints them twice: by wall time
(what a caller waits, the commit's sync included) and by the process's CPU time (steadier on a
busy machine; a sync's wait for the disk is not in it).

``--instructions`` counts instead, with valgrind's callgrind, the instructions this process
runs in each measured call of part 1 (a fresh copy each, after one uncounted call of the
kind): the same on a busy machine as on a quiet one, so a change of a few percent shows.
It leaves out what the kernel does (page reads, the sync) and the cost of cache misses.
"""

from __future__ import annotations

import argparse
import json
import operator
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict, TypeVar

from corral import END, End, Graph, Guard, SqliteSaver, StepLimitError


def message(i: int) -> dict[str, str]:
    """Return the i-th ~500-byte chat message (distinct text, so nothing compresses away)."""
    words = " ".join(f"w{(i * 7919 + k * 104729) % 100000:05d}" for k in range(80))
    return {"role": "assistant", "content": f"step {i}: {words}"[:470]}


class Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]
    last: int


def chat_graph() -> Graph[Chat, Mapping[str, Any]]:
    """Return the graph: ``chat`` appends a message until ``last`` messages exist."""
    g = Graph(Chat, name="reload")

    @g.node(start=True)
    def chat(state: Chat) -> dict[str, object]:
        return {"messages": [message(len(state["messages"]))]}

    @g.router("chat", guards=[Guard("chat", max=100_000, otherwise=END)])
    def again(state: Chat) -> Literal["chat"] | End:
        return "chat" if len(state["messages"]) < state["last"] else END

    return g


def build_thread(path: Path, steps: int) -> None:
    """Run ``steps`` supersteps of the chat graph; the thread stops at its step cap, one
    message short of its end, so ``invoke(None)`` continues it by exactly one step."""
    g = chat_graph()
    with SqliteSaver(path, synchronous="NORMAL") as saver:
        app = g.compile(checkpointer=saver)
        try:
            app.invoke({"messages": [], "last": steps + 1}, thread_id="t", max_steps=steps)
        except StepLimitError:
            pass
        else:  # pragma: no cover - the graph above always hits the cap
            raise AssertionError("the thread should have stopped at its cap")


def build_floor(path: Path, steps: int) -> None:
    """Store the same messages as one JSON text in one row (what the floor reads)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE state (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    text = json.dumps([message(i) for i in range(steps)], separators=(",", ":"))
    conn.execute("INSERT INTO state (data) VALUES (?)", (text,))
    conn.close()


Timing = tuple[float, float]
"""Seconds of wall time and of this process's CPU time."""
T = TypeVar("T")


def timed(work: Callable[[], T]) -> tuple[T, Timing]:
    """Return what ``work()`` returns, and the wall and CPU time it took. It is called
    through ``operator.call``: what ``--instructions`` counts is what runs inside that."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = operator.call(work)
    return out, (time.perf_counter() - wall, time.process_time() - cpu)


def time_floor(path: Path, steps: int, *, step: bool) -> Timing:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = FULL")

    def read_and_step() -> list[Any]:
        (text,) = conn.execute("SELECT data FROM state WHERE id = 1").fetchone()
        messages: list[Any] = json.loads(text)
        if step:
            new = message(len(messages))
            messages = operator.add(messages, [new])
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO items (data) VALUES (?)", (json.dumps(new),))
            conn.execute("COMMIT")
        return messages

    messages, elapsed = timed(read_and_step)
    conn.close()
    assert len(messages) == steps + step
    return elapsed


def time_get_state(path: Path, steps: int) -> Timing:
    app = chat_graph().compile(checkpointer=(saver := SqliteSaver(path)))
    snapshot, elapsed = timed(lambda: app.get_state("t"))
    saver.close()
    assert len(snapshot.values["messages"]) == steps
    return elapsed


def time_continue(path: Path, steps: int) -> Timing:
    app = chat_graph().compile(checkpointer=(saver := SqliteSaver(path)))
    run, elapsed = timed(lambda: app.invoke(None, thread_id="t", max_steps=steps + 10))
    saver.close()
    assert run.status == "done" and len(run.state["messages"]) == steps + 1
    return elapsed


def time_new_run(path: Path, steps: int) -> Timing:
    """A chat turn: ``invoke({"messages": [m]}, thread_id=...)`` with a new saver, a new run
    on the thread (its input checkpoint, then one superstep and its checkpoint)."""
    app = chat_graph().compile(checkpointer=(saver := SqliteSaver(path)))
    run, elapsed = timed(lambda: app.invoke({"messages": [message(steps)]}, thread_id="t"))
    saver.close()
    assert run.status == "done" and len(run.state["messages"]) == steps + 2
    return elapsed


def time_history(path: Path, steps: int) -> Timing:
    """``app.history(thread)`` with a new saver: a snapshot (its own copy of the state) per
    checkpoint, ``steps + 1`` of them."""
    app = chat_graph().compile(checkpointer=(saver := SqliteSaver(path)))
    history, elapsed = timed(lambda: app.history("t"))
    saver.close()
    assert len(history) >= steps + 1  # and the cap's checkpoint
    return elapsed


_TIMERS: dict[str, Callable[[Path, int], Timing]] = {
    "floor": lambda p, steps: time_floor(p, steps, step=False),
    "get_state": time_get_state,
    "floor+step": lambda p, steps: time_floor(p, steps, step=True),
    "continue": time_continue,
    "new run": time_new_run,
}
"""Part 1's measured calls, by name."""


def reload(steps: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base, floor_base = Path(tmp) / "thread.sqlite", Path(tmp) / "floor.sqlite"
        build_thread(base, steps)
        build_floor(floor_base, steps)
        size = sum(p.stat().st_size for p in Path(tmp).glob("thread.sqlite*"))
        times: dict[str, list[Timing]] = {name: [] for name in _TIMERS}
        for r in range(rounds):
            for name, timer in _TIMERS.items():
                source = floor_base if name.startswith("floor") else base
                copy = Path(tmp) / f"{name}-{r}.sqlite"
                shutil.copy(source, copy)
                for wal in Path(tmp).glob(source.name + "-wal"):
                    shutil.copy(wal, copy.with_name(copy.name + "-wal"))
                times[name].append(timer(copy, steps))
                for leftover in Path(tmp).glob(copy.name + "*"):
                    leftover.unlink()
        histories = []
        for r in range(3):  # a second or more each: three rounds, after the others
            copy = Path(tmp) / f"history-{r}.sqlite"
            shutil.copy(base, copy)
            histories.append(time_history(copy, steps))
    print(
        f"reload: a thread of {steps} supersteps, one ~500-byte message each "
        f"({size} bytes on disk); medians of {rounds} rounds "
        f"(python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})"
    )
    wall = {name: statistics.median(t[0] for t in taken) for name, taken in times.items()}
    cpu = {name: statistics.median(t[1] for t in taken) for name, taken in times.items()}
    print(f"  {'':>10}  {'wall':>8}  {'cpu':>8}")
    for name in times:
        print(f"  {name:>10}: {wall[name] * 1e3:5.2f} ms  {cpu[name] * 1e3:5.2f} ms")
    history = statistics.median(t[1] for t in histories)
    each = history / (steps + 1) / cpu["floor"]
    print(f"  history: {history * 1e3:.0f} ms CPU (median of 3) = {each:.2f}x floor a snapshot")
    for label, med in (("wall", wall), ("cpu", cpu)):
        print(
            f"  {label:>4}: get_state / floor = {med['get_state'] / med['floor']:4.2f}x "
            f"(goal 3x), continue / (floor+step) = "
            f"{med['continue'] / med['floor+step']:4.2f}x (goal 2x), new run / "
            f"(floor+step) = {med['new run'] / med['floor+step']:4.2f}x"
        )


def count_instructions(steps: int, calls: int) -> None:
    """Print the instructions of one measured call of each kind of part 1 (callgrind)."""
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed")
        return
    with tempfile.TemporaryDirectory() as tmp:
        build_thread(Path(tmp) / "thread.sqlite", steps)
        build_floor(Path(tmp) / "floor.sqlite", steps)
        counts = {name: _callgrind(Path(tmp), name, steps, calls) for name in _TIMERS}
    print(
        f"instructions: a thread of {steps} supersteps; millions per call, the mean of "
        f"{calls} calls (callgrind; python {sys.version.split()[0]}, SQLite "
        f"{sqlite3.sqlite_version})"
    )
    for name, count in counts.items():
        print(f"  {name:>10}: {count / 1e6:6.2f} M")
    print(
        f"  get_state / floor = {counts['get_state'] / counts['floor']:4.2f}x, continue / "
        f"(floor+step) = {counts['continue'] / counts['floor+step']:4.2f}x, new run / "
        f"(floor+step) = {counts['new run'] / counts['floor+step']:4.2f}x"
    )


def _callgrind(folder: Path, name: str, steps: int, calls: int) -> float:
    """Return the mean instructions of ``calls`` measured calls of timer ``name`` (what runs
    inside :func:`timed`'s ``operator.call``) under callgrind, after one not counted."""
    script = [sys.executable, __file__, "--steps", str(steps), "--counted", name, str(folder)]
    measured = callgrind(script, folder, calls)
    if len(measured) != calls:
        msg = f"callgrind counted {len(measured)} calls for {name!r}, not {calls}: {measured}"
        raise RuntimeError(msg)
    return sum(measured) / calls


def callgrind_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--instructions [CALLS]`` (described by ``what``) and the hidden ``--counted``
    that a run under callgrind is started with (see :func:`callgrind`)."""
    parser.add_argument("--instructions", type=int, nargs="?", const=3, metavar="CALLS", help=what)
    parser.add_argument("--counted", nargs=3, help=argparse.SUPPRESS)


def callgrind(script: list[str], folder: Path, calls: int) -> list[int]:
    """Run ``script`` (a command that makes ``calls`` + 1 calls through ``operator.call``)
    under callgrind, its output in ``folder``; return the instructions of each call that
    ran inside ``operator.call`` but the first (which warms caches up)."""
    out = folder / "callgrind.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=_operator_call",
            "--dump-after=_operator_call",
            f"--callgrind-out-file={out}",
            *script,
            str(calls + 1),
        ],
        check=True,
        capture_output=True,
    )
    counts = []
    parts = {int(p.name[len(out.name) + 1 :] or 0): p for p in folder.glob(out.name + "*")}
    for _, part in sorted(parts.items()):  # callgrind.out.1, .2, ... then the rest
        for line in part.read_text().splitlines():
            if line.startswith(("totals:", "summary:")):
                counts.append(int(line.split()[1]))
                break
        part.unlink()
    return [n for n in counts if n][1:]


def counted_calls(steps: int, name: str, folder: Path, calls: int) -> None:
    """Run timer ``name`` ``calls`` times, each on a fresh copy of the files in ``folder``
    (for ``--instructions``, which counts what runs inside ``operator.call``)."""
    source = folder / ("floor.sqlite" if name.startswith("floor") else "thread.sqlite")
    for i in range(calls):
        copy = folder / f"counted-{i}.sqlite"
        shutil.copy(source, copy)
        _TIMERS[name](copy, steps)
        for leftover in folder.glob(copy.name + "*"):
            leftover.unlink()


class Big(TypedDict):
    text: str
    n: int


def big_graph(size: int, steps: int) -> Graph[Big, Mapping[str, Any]]:
    g = Graph(Big, name="big", max_steps=steps + 1)

    @g.node(start=True)
    def grow(state: Big) -> dict[str, object]:
        n = state["n"] + 1
        return {"text": f"{n:08d}" + "x" * (size - 8), "n": n}

    @g.router("grow", guards=[Guard("grow", max=100_000, otherwise=END)])
    def more(state: Big) -> Literal["grow"] | End:
        return "grow" if state["n"] < steps else END

    return g


def large_value(size_mb: int, steps: int) -> None:
    size = size_mb * 1_000_000
    g = big_graph(size, steps)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.sqlite"
        with SqliteSaver(path, synchronous="NORMAL") as saver:
            app = g.compile(checkpointer=saver)
            start = time.perf_counter()
            app.invoke({"text": "", "n": 0}, thread_id="big")
            write = time.perf_counter() - start
            ids = [s.checkpoint_id for s in app.history("big")]
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        stored = path.stat().st_size
        floor_path = Path(tmp) / "floor.sqlite"
        conn = sqlite3.connect(floor_path, isolation_level=None)
        conn.execute("CREATE TABLE state (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        conn.execute("INSERT INTO state (data) VALUES (?)", (json.dumps("x" * size),))
        floor_times = []
        for _ in range(3):
            start = time.perf_counter()
            (text,) = conn.execute("SELECT data FROM state WHERE id = 1").fetchone()
            json.loads(text)
            floor_times.append(time.perf_counter() - start)
        conn.close()
        reads: list[float] = []
        with SqliteSaver(path) as saver:
            app = g.compile(checkpointer=saver)
            for checkpoint_id in ids:
                with SqliteSaver(path) as fresh:
                    start = time.perf_counter()
                    snap = g.compile(checkpointer=fresh).get_state("big", checkpoint_id)
                    reads.append(time.perf_counter() - start)
                    assert len(snap.values["text"]) in (0, size)
    payload = (steps + 1) * (size + 2)
    floor = statistics.median(floor_times)
    print(
        f"large value: a {size_mb} MB string replaced every step, {steps} supersteps "
        f"({len(ids)} checkpoints; writing took {write:.2f} s)"
    )
    print(f"  stored {stored} bytes = {stored / payload:4.2f}x the payload ({payload} bytes)")
    print(
        f"  get_state of each checkpoint, new saver: median {statistics.median(reads) * 1e3:.0f}"
        f" ms, slowest {max(reads) * 1e3:.0f} ms; floor (SELECT + json.loads of one string)"
        f" {floor * 1e3:.0f} ms: slowest = {max(reads) / floor:.1f}x floor"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--big-mb", type=int, default=50)
    parser.add_argument("--big-steps", type=int, default=8)
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--skip-reload", action="store_true")
    callgrind_flags(
        parser, "count part 1's instructions per call with callgrind (mean of CALLS calls)"
    )
    args = parser.parse_args(argv)
    if args.counted:  # inside callgrind (see count_instructions)
        name, folder, calls = args.counted
        counted_calls(args.steps, name, Path(folder), int(calls))
        return 0
    if args.instructions:
        count_instructions(args.steps, args.instructions)
        return 0
    if not args.skip_reload:
        reload(args.steps, args.rounds)
    if not args.skip_big:
        large_value(args.big_mb, args.big_steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
