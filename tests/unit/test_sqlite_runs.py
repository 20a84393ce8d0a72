"""SQLite layout 6: value rows folded into runs at snapshot puts read back as they were put.

Every test reads through real SQLite files; the reference is a ``MemorySaver`` fed the
same checkpoints (it keeps every value as it was put).
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral import CheckpointError, MemorySaver, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint._stored import parse_stored, runs_of
from corral.checkpoint.sqlite._folded import FoldedTexts
from corral.checkpoint.sqlite._reading import _texts
from corral.checkpoint.sqlite._runs import MIN_FOLD, SMALL


def message(i: int, nested: bool = False) -> dict[str, Any]:
    """A ~250-byte chat message (``nested``: it holds a list, so it is not a flat dict)."""
    out: dict[str, Any] = {"role": "user", "content": f"message {i} " + "y" * 220, "n": i}
    if nested:
        out["tags"] = ["t", i]
    return out


def rebuild(chain: list[Checkpoint]) -> dict[str, Any]:
    """Return the state at the end of ``chain`` (writes append to ``m``, set ``blob``)."""
    assert chain[0].snapshot is not None
    state = dict(chain[0].snapshot)
    for checkpoint in chain[1:]:
        for _node, update in checkpoint.writes:
            if "m" in update:
                state["m"] = [*state["m"], *update["m"]]
            if "blob" in update:
                state["blob"] = update["blob"]
    return state


def rows_of(c: Checkpoint) -> tuple[Any, ...]:
    return (c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta)


def same_everywhere(path: Path, ref: MemorySaver, threads: list[str]) -> None:
    """Assert a new saver reads every checkpoint of ``threads``, one by one and all at
    once, as ``ref`` holds them."""
    with SqliteSaver(path) as saver:
        for thread in threads:
            every = saver.checkpoints(thread)
            assert list(map(rows_of, every)) == list(map(rows_of, ref.checkpoints(thread)))
            for c in every:
                got = saver.chain(thread, c.checkpoint_id)
                assert list(map(rows_of, got)) == list(
                    map(rows_of, ref.chain(thread, c.checkpoint_id))
                )


class Writer:
    """Puts a chat thread into a SqliteSaver and a MemorySaver alike."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saver = SqliteSaver(path)
        self.ref = MemorySaver()
        self.ids: list[str] = []
        self.state: dict[str, Any] = {"m": [], "blob": "", "n": 0}
        self.count = 0

    def put(self, update: dict[str, Any], snapshot: bool, newest_read: str | None = None) -> None:
        parent = self.ids[-1] if self.ids else None
        if parent is not None and newest_read is not None:
            parent = self.fork_parent
        cid = f"c{len(self.ids)}"
        if "m" in update:
            self.state["m"] = [*self.state["m"], *update["m"]]
        if "blob" in update:
            self.state["blob"] = update["blob"]
        self.state["n"] = len(self.ids)
        state = {**self.state, "m": list(self.state["m"])} if snapshot or parent is None else None
        checkpoint = Checkpoint(
            "t",
            cid,
            parent,
            state,
            [("talk", update)],
            {"i": len(self.ids)},
            newest_read=newest_read,
        )
        for saver in (self.saver, self.ref):
            saver.put(checkpoint)
        self.ids.append(cid)

    def messages(self, k: int, nested: bool) -> list[dict[str, Any]]:
        out = [message(self.count + i, nested and i % 2 == 0) for i in range(k)]
        self.count += k
        return out

    def reopen(self) -> None:
        """Go on as a new process: read the newest chain, keep the state it rebuilds."""
        self.saver.close()
        self.saver = SqliteSaver(self.path)
        self.state = rebuild(self.saver.chain("t"))

    def fork(self, back: int) -> None:
        """Fork from an older checkpoint (read by this saver), its first put a snapshot."""
        if len(self.ids) < 2:
            return
        parent = self.ids[max(0, len(self.ids) - 1 - back)]
        self.state = rebuild(self.saver.chain("t", parent))
        self.fork_parent = parent
        self.put({"m": self.messages(1, False)}, True, newest_read=self.ids[-1])


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 8), st.booleans()),
        st.tuples(st.just("append"), st.integers(3, 8), st.booleans()),
        st.tuples(st.just("big"), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("shuffle"), st.integers(0, 2**16), st.booleans()),
        st.tuples(st.just("reopen"), st.integers(0, 0), st.booleans()),
        st.tuples(st.just("fork"), st.integers(1, 30), st.booleans()),
        st.tuples(st.just("other"), st.integers(0, 0), st.booleans()),
    ),
    min_size=15,
    max_size=50,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=ops, every=st.integers(2, 5))
def test_folded_threads_read_back_as_put(tmp_path_factory: Any, script: Any, every: int) -> None:
    """Random threads (appends of flat and nested messages, large values, lists reordered,
    a new saver going on, forks, another thread holding the same messages) read back equal
    at every checkpoint, whether their values were folded or not."""
    path = tmp_path_factory.mktemp("runs") / "t.db"
    writer = Writer(path)
    writer.put({"m": writer.messages(3, False)}, True)
    others = 0
    for op, arg, flag in script:
        if op == "append":
            writer.put({"m": writer.messages(arg, flag)}, len(writer.ids) % every == 0)
        elif op == "big":
            blob = ("z" if arg else "w") * (SMALL + 10) + str(len(writer.ids))
            writer.put({"blob": blob, "m": writer.messages(1, flag)}, flag)
        elif op == "shuffle":
            order = list(writer.state["m"])
            random.Random(arg).shuffle(order)
            writer.state["m"] = order[: max(1, len(order) - arg % 3)]
            writer.put({"m": writer.messages(1, flag)}, True)
        elif op == "reopen":
            writer.reopen()
        elif op == "fork":
            writer.fork(arg)
        else:  # another thread stores the same messages: the writer refers to their ids
            others += 1
            other = Checkpoint(f"u{others}", "u0", None, {"m": list(writer.state["m"])}, [], {})
            writer.saver.put(other)
            writer.ref.put(other)
    writer.saver.close()
    same_everywhere(path, writer.ref, ["t", *(f"u{i}" for i in range(1, others + 1))])


def chat(path: Path, steps: int, every: int = 20) -> MemorySaver:
    """Put a chat thread of ``steps`` one-message steps, a snapshot every ``every``."""
    writer = Writer(path)
    for i in range(steps):
        writer.put({"m": writer.messages(1, False)}, i % every == 0)
    writer.saver.close()
    return writer.ref


def test_a_long_thread_is_folded_and_reads_back(tmp_path: Path) -> None:
    """100 steps, a snapshot every 20: most values are in runs (the view ``blobs`` still
    lists every one), and everything reads back."""
    path = tmp_path / "t.db"
    ref = chat(path, 100)
    conn = sqlite3.connect(path)
    (folded,) = conn.execute("SELECT count(*) FROM runs").fetchone()
    (rows,) = conn.execute("SELECT count(*) FROM checkpoints WHERE thread IS NULL").fetchone()
    ids = [n for (n,) in conn.execute("SELECT id FROM blobs ORDER BY id")]
    conn.close()
    assert folded >= 1 and rows <= 100 - MIN_FOLD and len(ids) == 100 == len(set(ids))
    same_everywhere(path, ref, ["t"])


def test_a_reader_never_misses_a_value_a_fold_moves(tmp_path: Path) -> None:
    """A second connection reading a thread while another saver folds its values: after
    every put it reads the newest state whole; and a fold committed between its look-up of
    runs and of value rows (outside a transaction) is found in runs the second time."""
    path = tmp_path / "t.db"
    writer = Writer(path)
    reader = SqliteSaver(path)
    try:
        for i in range(70):
            writer.put({"m": writer.messages(1, i % 3 == 0)}, i % 7 == 0)
            assert rebuild(reader.chain("t"))["m"] == writer.state["m"]
    finally:
        reader.close()
    conn = sqlite3.connect(path, isolation_level=None)
    ids = [n for (n,) in conn.execute("SELECT seq FROM checkpoints WHERE thread IS NULL")]
    expected = [m for m in parse_stored(runs_of(ids), _texts(conn, runs_of(ids))).trees]
    folds: list[int] = []

    def rows_then_fold(c: sqlite3.Connection, runs: list[Any]) -> list[Any]:
        texts = _texts(c, runs)
        if not folds:  # another process's snapshot put commits a fold right now
            folds.append(1)
            for _ in range(MIN_FOLD):
                writer.put({"m": writer.messages(1, False)}, False)
            writer.put({"m": writer.messages(1, False)}, True)
        return texts

    texts = FoldedTexts(conn, rows_then_fold)(runs_of(ids))
    writer.saver.close()
    (left,) = conn.execute(
        f"SELECT count(*) FROM checkpoints WHERE seq IN ({','.join(map(str, ids))})"
    ).fetchone()
    assert left < len(ids) // 2  # the fold did move most of them
    assert parse_stored(runs_of(ids), texts).trees == expected
    conn.close()


def damage(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


_FIRST_RUN = " WHERE seq = (SELECT min(seq) FROM runs)"


@pytest.mark.parametrize(
    ("change", "reads"),
    [
        ("UPDATE runs SET data = substr(data, 1, 100)", ("chain", "checkpoints")),
        ("UPDATE runs SET data = replace(data, '},{', '}.{')", ("chain", "checkpoints")),
        ("UPDATE runs SET data = '[' || data || ']'", ("chain", "checkpoints")),
        ("UPDATE runs SET data = CAST(x'5b80ff5d' AS TEXT)", ("chain", "checkpoints")),
        # The items say which value is where: a read of single values needs them.
        ("UPDATE runs SET items = '[[1],[2]]'", ("checkpoints",)),
        ("UPDATE runs SET items = 'x'", ("checkpoints",)),
    ],
)
def test_a_damaged_run_is_named(tmp_path: Path, change: str, reads: tuple[str, ...]) -> None:
    """A run row that is not JSON, holds another count of values, whose items do not
    describe it, or that is not UTF-8 gives CheckpointError naming the folded values, the
    file, thread and checkpoint, and the way out."""
    path = tmp_path / "t.db"
    chat(path, 70)
    conn = sqlite3.connect(path)
    first, last = conn.execute("SELECT seq, last FROM runs ORDER BY seq").fetchone()
    conn.close()
    damage(path, change + _FIRST_RUN)
    for read in reads:
        with SqliteSaver(path) as saver, pytest.raises(CheckpointError) as info:
            getattr(saver, read)("t")
        message_ = str(info.value)
        assert f"stored values {first}..{last}" in message_, message_
        assert str(path) in message_ and "'t'" in message_, message_
        assert "resume from an earlier checkpoint" in message_, message_


def test_large_values_stay_rows_and_windows_with_few_values_wait(tmp_path: Path) -> None:
    """A value of SMALL characters or more is never folded (nor read whole with others);
    a window of fewer than eight small values is folded later, with the next ones."""
    path = tmp_path / "t.db"
    writer = Writer(path)
    for i in range(30):
        update: dict[str, Any] = {"m": writer.messages(1, False)} if i % 6 else {}
        if i % 10 == 3:
            update["blob"] = "b" * SMALL + str(i)
        writer.put(update, i % 4 == 0)
    writer.saver.close()
    conn = sqlite3.connect(path)
    big = conn.execute(
        "SELECT count(*) FROM checkpoints WHERE thread IS NULL AND length(data) >= ?", (SMALL,)
    ).fetchone()[0]
    counts = [n for (n,) in conn.execute("SELECT json_array_length(items, '$[0]') FROM runs")]
    conn.close()
    assert big == 3
    assert all(c == 0 or c >= 8 for c in counts) and sum(counts) > 0
    same_everywhere(path, writer.ref, ["t"])
