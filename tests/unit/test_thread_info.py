"""What the database savers keep about a thread beside its checkpoints, deleting a thread,
and the served runs of the queue (``corral serve``'s storage), on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import PostgresSaver, SqliteSaver
from corral.checkpoint import Checkpoint, Checkpointer
from corral.errors import BusyThreadError
from corral.workers.queue import QueuedRun, dump_input


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        with SqliteSaver(tmp_path / "t.sqlite") as sqlite:
            yield sqlite
    else:
        with PostgresSaver(request.getfixturevalue("postgres_url")) as postgres:
            yield postgres


def _two_threads(saver: Checkpointer) -> None:
    for thread in ("t", "u"):
        saver.put(Checkpoint(thread, "1", None, {"n": [thread] * 50}))
        saver.put(Checkpoint(thread, "2", "1", None, [("inc", {"n": [thread]})]))
        saver.put_writes(thread, "2", 0, {"node": "inc", "update": {"n": [1]}})  # type: ignore[attr-defined]


def test_delete_thread_removes_its_checkpoints_and_only_its(saver: Checkpointer) -> None:
    _two_threads(saver)
    saver.delete_thread("t")  # type: ignore[attr-defined]
    assert saver.chain("t") == [] and saver.checkpoints("t") == []
    assert saver.pending_writes("t", "2") == {}  # type: ignore[attr-defined]
    assert saver.newest_id("t") is None  # type: ignore[attr-defined]
    assert saver.threads() == ["u"]  # type: ignore[attr-defined]
    assert [c.checkpoint_id for c in saver.chain("u")] == ["1", "2"]
    assert saver.pending_writes("u", "2") != {}  # type: ignore[attr-defined]
    saver.delete_thread("never")  # type: ignore[attr-defined]
    saver.put(Checkpoint("t", "1", None, {"n": []}))  # the id starts afresh
    assert saver.chain("t")[0].snapshot == {"n": []}


def test_a_thread_made_after_a_delete_reads_back_its_large_values(
    saver: Checkpointer, tmp_path: Path
) -> None:
    """A deleted thread's stored values are gone: a new thread (which SQLite could give the
    deleted one's row) holding an equal large value stores it again, in this process and
    as another process sees it."""
    big = {"role": "system", "content": "x" * 300}
    saver.put(Checkpoint("a", "1", None, {"messages": [big]}))
    saver.delete_thread("a")  # type: ignore[attr-defined]
    saver.put(Checkpoint("b", "1", None, {"messages": [big, big]}))
    assert saver.chain("b")[0].snapshot == {"messages": [big, big]}
    if isinstance(saver, SqliteSaver) and saver.path != ":memory:":
        saver.put(Checkpoint("c", "1", None, {"messages": [big]}))
        with SqliteSaver(saver.path) as other:
            other.delete_thread("c")
        saver.put(Checkpoint("c", "1", None, {"messages": [big]}))
        assert saver.chain("c")[0].snapshot == {"messages": [big]}


def test_a_thread_recorded_before_its_first_checkpoint(database: Any) -> None:
    info, new = database.add_thread_info("t", {"ticket": 1})
    assert new and info.metadata == {"ticket": 1} and info.graph is None
    assert database.add_thread_info("t", {"ticket": 2}) == (info, False)
    assert database.threads() == [] and database.newest_id("t") is None
    assert database.chain("t") == [] and database.checkpoints("t") == []
    database.put(Checkpoint("t", "1", None, {"n": 1}))  # takes the recorded row over
    assert database.threads() == ["t"] and database.newest_id("t") == "1"
    updated = database.update_thread_info("t", {"owner": "ann"}, graph="review")
    assert updated.metadata == {"ticket": 1, "owner": "ann"} and updated.graph == "review"
    again = database.update_thread_info("t", graph="other")
    assert again.graph == "review" and again.updated_at >= updated.updated_at
    assert database.update_thread_info("unknown", {"a": 1}) is None
    database.put(Checkpoint("plain", "1", None, {"n": 1}))  # nobody recorded it
    assert database.thread_info("plain") is None
    database.add_thread_info("newer", {})
    assert [t.thread_id for t in database.thread_infos()] == ["newer", "t"]
    database.delete_thread("t")
    assert database.thread_info("t") is None and database.threads() == ["plain"]


@settings(max_examples=40, deadline=None)
@given(
    first=st.dictionaries(st.text(), st.recursive(st.none() | st.integers() | st.text(), st.lists)),
    second=st.dictionaries(st.text(), st.integers()),
)
def test_metadata_is_kept_as_given_and_merged_key_by_key(
    tmp_path_factory: pytest.TempPathFactory, first: dict[str, Any], second: dict[str, Any]
) -> None:
    with SqliteSaver(tmp_path_factory.mktemp("m") / "t.sqlite") as saver:
        saver.add_thread_info("t", first)
        saver.update_thread_info("t", second)
        info = saver.thread_info("t")
        assert info is not None and info.metadata == {**first, **second}


def _run(thread: str, uuid: str, input: Any = None) -> QueuedRun:
    json, resume = dump_input(input)
    return QueuedRun(
        0, thread, json, resume, None, 0, "review", request='{"metadata":{"m":1}}', uuid=uuid
    )


def test_served_runs_reject_a_busy_thread_and_carry_a_cancel(database: Any) -> None:
    from corral.workers._postgres import PostgresQueue
    from corral.workers._sqlite import SqliteQueue

    queue: Any = (
        PostgresQueue(database.pool, database.where)
        if isinstance(database, PostgresSaver)
        else SqliteQueue(database.path)
    )
    first = queue.add(_run("t", "a", {"topic": "x"}))
    with pytest.raises(BusyThreadError, match="busy with run 'a'"):
        queue.add(_run("t", "b"), reject=True)
    queue.add(_run("u", "c"), reject=True)  # another thread is free
    found = queue.get("a")
    assert found is not None and found.id == first and found.fields == {"metadata": {"m": 1}}
    assert [r.uuid for r in queue.of_thread("t")] == ["a"] and found.status == "queued"
    assert queue.cancel_asked(first) is None
    queue.cancel("a")
    assert queue.cancel_asked(first) == "interrupt"
    queue.delete_thread("t", database)  # never started: it goes
    assert queue.get("a") is None and queue.of_thread("t") == []
    queue.add(_run("t", "d"), reject=True)  # the thread is free again


def test_serve_refuses_a_database_with_a_pre_release_serves_tables(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from serving.served_graph import review

    from corral.errors import CorralError
    from corral.serve import create_app

    path = tmp_path / "old.sqlite"
    with SqliteSaver(path) as saver:
        app = review.compile(checkpointer=saver)
        create_app({"review": app})  # a database of this corral is served
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE corral_serve_runs (run_id TEXT)")
        with pytest.raises(
            CorralError, match="DROP TABLE corral_serve_threads; DROP TABLE corral_serve_runs"
        ):
            create_app({"review": app})
