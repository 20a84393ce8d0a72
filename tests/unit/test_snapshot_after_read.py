"""A snapshot put by a saver that only read the thread (a new process, a server worker)
re-uses the stored items of the lists it read, and still stores exactly the state it is
given: an item changed in place after the read, replaced, moved or given a type JSON cannot
tell apart (a tuple) is stored as it is now, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reopening import Opener, reopening

from corral import SqliteSaver
from corral.checkpoint import Checkpoint, Checkpointer


def message(i: int, tagged: bool = False) -> dict[str, Any]:
    """A chat message long enough to be stored as its own value (``tagged``: with a list)."""
    out: dict[str, Any] = {"role": "assistant", "content": f"message {i}: " + "x" * 150, "n": i}
    out["score"] = 0.0
    if tagged:
        out["tags"] = ["a", str(i)]
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with reopening(request, tmp_path / "chat.db") as opener:
        yield opener


def start_thread(open_saver: Opener, count: int = 12, tagged: bool = False) -> None:
    """Put a thread whose newest checkpoint (a delta) follows a snapshot of ``count``
    messages, with one saver."""
    saver = open_saver()
    messages = [message(i, tagged and i % 2 == 1) for i in range(count)]
    saver.put(Checkpoint("t", "c0", None, {"messages": messages, "turn": 1}, [], {"step": 0}))
    update = {"messages": [message(count)]}
    saver.put(Checkpoint("t", "c1", "c0", None, [("chat", update)], {"step": 1}))


def read_newest(saver: Checkpointer) -> list[dict[str, Any]]:
    """Return the messages of the thread's newest state, as a run rebuilds them."""
    return read_newest_of(saver.chain("t"))


def read_newest_of(chain: list[Checkpoint]) -> list[dict[str, Any]]:
    """Return the messages of the state at the end of ``chain``, as a run rebuilds them."""
    assert chain[0].snapshot is not None
    messages: list[dict[str, Any]] = chain[0].snapshot["messages"]
    for checkpoint in chain[1:]:
        for _node, update in checkpoint.writes:
            messages = messages + update["messages"]
    return messages


def put_snapshot(saver: Checkpointer, messages: list[Any]) -> None:
    saver.put(Checkpoint("t", "c2", "c1", {"messages": messages, "turn": 2}, [], {"step": 2}))


def stored(open_saver: Opener) -> list[Any]:
    """Return the messages of the newest checkpoint as a fresh saver reads them."""
    chain = open_saver().chain("t")
    assert chain[-1].checkpoint_id == "c2" and chain[-1].snapshot is not None
    messages: list[Any] = chain[-1].snapshot["messages"]
    return messages


def test_a_snapshot_after_a_read_stores_the_items_read_and_the_new_ones(store: Opener) -> None:
    start_thread(store)
    saver = store()
    messages = read_newest(saver)
    put_snapshot(saver, [*messages, message(13)])
    assert stored(store) == [message(i) for i in range(14)]


def test_a_snapshot_after_a_read_refers_to_the_values_read(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    start_thread(lambda: SqliteSaver(path))
    with SqliteSaver(path) as saver:
        put_snapshot(saver, [*read_newest(saver), message(13)])
    with SqliteSaver(path) as saver:
        assert saver.chain("t")[-1].snapshot == {
            "messages": [message(i) for i in range(14)],
            "turn": 2,
        }
    conn = sqlite3.connect(path)
    texts = [t for (t,) in conn.execute("SELECT data FROM blobs")]
    conn.close()
    assert len(texts) == len(set(texts)) == 14  # each message stored once


@pytest.mark.parametrize("tagged", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize(
    "change",
    [
        "content changed in place",
        "key added in place",
        "tuple in place",
        "item replaced",
        "items swapped",
        "list shortened",
        "item removed",
        "bool for an equal int in place",
        "float for an equal int in place",
        "negative zero in place",
        "keys reordered in place",
    ],
)
def test_a_snapshot_after_a_read_stores_items_changed_since_the_read(
    store: Opener, change: str, tagged: bool
) -> None:
    start_thread(store, tagged=tagged)
    saver = store()
    messages = read_newest(saver)
    if change == "content changed in place":
        messages[3]["content"] = "edited after the read"
    elif change == "key added in place":
        messages[0]["edited"] = True
    elif change == "tuple in place":  # the same JSON text as the list read, if tagged
        messages[5]["tags"] = ("a", "5")
        messages[6]["tags"] = ["a", "6"]
    elif change == "item replaced":
        messages[7] = {**messages[7], "content": "replaced"}
    elif change == "items swapped":
        messages[1], messages[2] = messages[2], messages[1]
    elif change == "list shortened":
        messages = messages[:4]
    elif change == "bool for an equal int in place":
        messages[1]["n"] = True
    elif change == "float for an equal int in place":
        messages[2]["n"] = 2.0
    elif change == "negative zero in place":
        messages[4]["score"] = -0.0
    elif change == "keys reordered in place":
        messages[8]["role"] = messages[8].pop("role")
    else:
        del messages[0]
    expected = [dict(m) for m in messages]
    put_snapshot(saver, messages)
    back = stored(store)
    assert repr(back) == repr(expected)  # types, key order and the sign of zero included


@pytest.mark.parametrize("first", ["put", "read"])
def test_a_saver_reading_again_what_it_put_or_read_stores_a_change_made_after(
    store: Opener, first: str
) -> None:
    """A second read of the newest by the saver that put it (or read it already) takes no
    copies for the next snapshot (that one compares with what the saver holds from the
    first); a message changed in place after it, and a new one, are stored as they are."""
    if first == "put":
        saver = store()
        messages = [message(i) for i in range(12)]
        saver.put(Checkpoint("t", "c0", None, {"messages": messages, "turn": 1}, [], {"step": 0}))
        update = {"messages": [message(12)]}
        saver.put(Checkpoint("t", "c1", "c0", None, [("chat", update)], {"step": 1}))
    else:
        start_thread(store)
        saver = store()
        read_newest(saver)
    again = [*read_newest(saver), message(13)]
    again[4]["content"] = "edited after the second read"
    expected = [dict(m) for m in again]
    put_snapshot(saver, again)
    assert repr(stored(store)) == repr(expected)


def test_a_read_and_its_snapshot_in_one_saver_twice(store: Opener) -> None:
    """The packing a read left, once used, is the saver's own: the next snapshot (a later
    turn in the same process) re-uses it and still sees an item changed in place."""
    start_thread(store)
    saver = store()
    messages = [*read_newest(saver), message(13)]
    put_snapshot(saver, messages)
    messages[2]["content"] = "edited after the first snapshot"
    more = [*messages, message(14)]
    saver.put(Checkpoint("t", "c3", "c2", {"messages": more, "turn": 3}, [], {"step": 3}))
    chain = store().chain("t")
    assert chain[-1].checkpoint_id == "c3" and chain[-1].snapshot is not None
    assert chain[-1].snapshot["messages"] == more


@pytest.mark.parametrize("tagged", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize(
    "change",
    [
        "bool for an equal float",
        "float for an equal int",
        "negative zero",
        "keys reordered",
        "int for an equal float",
    ],
)
@pytest.mark.parametrize("how", ["snapshot", "write"])
def test_a_value_changed_in_place_to_an_equal_one_of_another_type_after_a_put_is_stored(
    store: Opener, change: str, tagged: bool, how: str
) -> None:
    """The saver's own reuse of what it put (the previous snapshot's items, the flat dicts a
    write stored) takes an item only if its JSON would be the same: ``True == 1``,
    ``1.0 == 1`` and ``-0.0 == 0.0`` in Python, but not in what is stored."""
    saver = store()
    messages = [message(i, tagged and i % 2 == 1) for i in range(6)]
    saver.put(Checkpoint("t", "c0", None, {"messages": messages, "turn": 1}, [], {"step": 0}))
    new = message(6)
    saver.put(Checkpoint("t", "c1", "c0", None, [("chat", {"messages": [new]})], {"step": 1}))
    messages = [*messages, new]
    target = messages[6] if how == "write" else messages[3]
    if change == "bool for an equal float":
        target["score"] = False
    elif change == "float for an equal int":
        target["n"] = float(target["n"])
    elif change == "negative zero":
        target["score"] = -0.0
    elif change == "keys reordered":
        target["role"] = target.pop("role")
    else:
        target["score"] = 0
    expected = [dict(m) for m in messages]
    put_snapshot(saver, messages)
    assert repr(stored(store)) == repr(expected)


def test_a_fork_by_a_new_saver_refers_to_the_values_of_the_chain_it_read(
    store: Opener,
) -> None:
    """A fork from an older checkpoint by a saver that has read only that checkpoint's
    chain: its first checkpoint (a snapshot) re-uses the stored items of the messages read,
    and still stores a message changed in place after the read as it is now."""
    start_thread(store)
    more = store()
    chain = more.chain("t")
    more.put(Checkpoint("t", "c2", "c1", None, [("chat", {"messages": [message(13)]})], {}))
    saver = store()  # a new process forks from c1, an older checkpoint than the newest c2
    forked = saver.chain("t", "c1")
    assert [c.checkpoint_id for c in forked] == ["c0", "c1"] == [c.checkpoint_id for c in chain]
    messages = read_newest_of(forked)
    messages[3]["content"] = "edited in the fork"  # in place, in the dict the read made
    messages[5] = dict(messages[5], n=5.0)  # replaced by an equal value of another type
    fork = Checkpoint("t", "f1", "c1", {"messages": messages, "turn": 2}, [], {}, newest_read="c2")
    saver.put(fork)
    assert store().chain("t")[-1].snapshot == {"messages": messages, "turn": 2}
    if isinstance(saver, SqliteSaver):
        conn = sqlite3.connect(saver.path)
        texts = [t for (t,) in conn.execute("SELECT data FROM blobs")]
        conn.close()
        # messages 0-13 once each, and the two changed in the fork: nothing else again
        assert len(texts) == len(set(texts)) == 16
