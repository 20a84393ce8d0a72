"""The history the SQLite layout fixtures hold (``tests/fixtures/sqlite/layout*.sqlite``),
written by each layout's corral with :func:`write_history` (``layout6-moved.sqlite``: and
then :func:`write_moved`), and how the tests compare what they read with a ``MemorySaver``
fed the same history."""

from __future__ import annotations

from typing import Any

from corral import MemorySaver
from corral.checkpoint import Checkpoint


def message(who: str, i: int) -> dict[str, str]:
    """Return a ~300-byte message (stored as a value row of its own)."""
    return {"role": who, "content": f"{who} says {i} " + "lorem ipsum " * 24}


def write_history(saver: Any) -> None:
    """Put the history the fixture holds: thread 'a' (12 checkpoints, snapshots at 0, 5
    and 10, a fork after 'a7' and a recorded task after the newest), thread 'b' (3
    checkpoints, written between a's) and thread 'c' (one checkpoint, its first)."""
    msgs: list[dict[str, str]] = []
    parent: str | None = None
    for i in range(12):
        new = message("a", i)
        msgs.append(new)
        state = {"m": list(msgs), "n": i} if i % 5 == 0 else None
        saver.put(
            Checkpoint("a", f"a{i}", parent, state, [("talk", {"m": [new], "n": i})], {"i": i})
        )
        parent = f"a{i}"
        if i < 3:
            saver.put(
                Checkpoint(
                    "b",
                    f"b{i}",
                    f"b{i - 1}" if i else None,
                    {"m": [message("b", i)]} if i == 0 else None,
                    [("talk", {"m": [message("b", i)]})],
                    {"i": i},
                )
            )
    fork = Checkpoint(
        "a", "f8", "a7", None, [("edit", {"n": 100})], {"i": 8, "fork": True}, newest_read="a11"
    )
    saver.put(fork)
    saver.put_writes(
        "a", "f8", 0, {"task": 0, "node": "talk", "update": {"m": [message("t", 0)]}, "goto": None}
    )
    saver.put(Checkpoint("c", "c0", None, {"m": [], "n": 0}, [], {"i": 0}))


OLD_STEPS = 120
"""Checkpoints ``layout6-moved.sqlite``'s ``"old"`` part put in thread 'a'."""


def write_moved(saver: Any, part: str) -> None:
    """Put the fixture's history after ``layout6.sqlite``'s: ``"new"`` (this corral, just
    after moving the file) a snapshot after 'a''s newest 'f8'; ``"old"`` (the first-form
    corral) :data:`OLD_STEPS` more checkpoints of 'a', a snapshot every 20, and a new thread
    'd' of 50."""
    if part == "new":
        state = {"m": [message("a", i) for i in range(8)], "n": 100}
        saver.put(Checkpoint("a", "n0", "f8", state, [("edit", {"n": 100})], {"i": 9}))
        return
    msgs = [message("a", i) for i in range(8)]
    for i in range(1, OLD_STEPS + 1):
        msgs.append(message("o", i))
        state = {"m": list(msgs), "n": i} if i % 20 == 0 else None
        writes = [("talk", {"m": [msgs[-1]], "n": i})]
        saver.put(Checkpoint("a", f"o{i}", f"o{i - 1}" if i > 1 else "n0", state, writes, {}))
    for i in range(50):
        state = {"m": [message("d", n) for n in range(i + 1)]} if i % 25 == 0 else None
        writes = [("talk", {"m": [message("d", i)]})]
        saver.put(Checkpoint("d", f"d{i}", f"d{i - 1}" if i else None, state, writes, {}))


def reference(moved: bool = False) -> MemorySaver:
    """Return a ``MemorySaver`` fed the history of ``layout6.sqlite`` (``moved``: of
    ``layout6-moved.sqlite``)."""
    saver = MemorySaver()
    write_history(saver)
    if moved:
        write_moved(saver, "new")
        write_moved(saver, "old")
    return saver


def same(a: list[Checkpoint], b: list[Checkpoint]) -> None:
    assert [(c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta) for c in a] == [
        (c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta) for c in b
    ]
