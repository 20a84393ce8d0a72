"""PostgresSaver against a real server: the compare-and-set, graphs, errors, the schema.

The promises it shares with the other savers are in test_checkpoint_savers.py and
test_task_writes.py (parametrized over all three); these are the ones only a shared server
has: many writers at once, a server that is not there, a database from another version.
"""

from __future__ import annotations

import operator
import subprocess
import sys
import threading
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from counting import counter
from postgres_cluster import Cluster
from psycopg_pool import ConnectionPool

from corral import (
    END,
    CheckpointError,
    ConcurrentRunError,
    Graph,
    MemorySaver,
    PostgresSaver,
    Resume,
    interrupt,
)
from corral.checkpoint import Checkpoint


def race(saver: PostgresSaver, thread: str, writers: int, each: int) -> tuple[int, int]:
    """Let ``writers`` Python threads each try ``each`` puts on the thread's newest."""
    kept = refused = 0
    lock = threading.Lock()
    start = threading.Barrier(writers)

    def write(w: int) -> None:
        nonlocal kept, refused
        start.wait()
        for i in range(each):
            newest = saver.chain(thread)[-1].checkpoint_id
            try:
                saver.put(Checkpoint(thread, f"w{w}-{i}", newest, None, [("w", {"n": i})]))
            except ConcurrentRunError:
                with lock:
                    refused += 1
            else:
                with lock:
                    kept += 1

    pool = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return kept, refused


def test_concurrent_writers_never_lose_a_checkpoint(postgres_url: str) -> None:
    """Of many puts against one parent, one wins; the rest are refused, none lost."""
    with PostgresSaver(postgres_url) as saver:
        saver.put(Checkpoint("t", "root", None, {"n": 0}))
        kept, refused = race(saver, "t", writers=6, each=5)
        assert kept + refused == 30 and kept >= 1
        history = saver.checkpoints("t")
        assert len(history) == kept + 1
        # a single line of history: each checkpoint's parent is the one before it
        assert [c.parent_id for c in history[1:]] == [c.checkpoint_id for c in history[:-1]]


_PROCESS = """
import sys
from corral import PostgresSaver, ConcurrentRunError
from corral.checkpoint import Checkpoint
kept = refused = 0
with PostgresSaver(sys.argv[1]) as saver:
    for i in range(5):
        newest = saver.chain("t")[-1].checkpoint_id
        try:
            saver.put(Checkpoint("t", f"{sys.argv[2]}-{i}", newest, None, [("w", {"i": i})]))
            kept += 1
        except ConcurrentRunError:
            refused += 1
print(kept, refused)
"""


def test_concurrent_processes_never_lose_a_checkpoint(postgres_url: str) -> None:
    """Four processes on one thread: kept + refused == started, and history holds the kept."""
    with PostgresSaver(postgres_url) as saver:
        saver.put(Checkpoint("t", "root", None, {"n": 0}))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS, postgres_url, f"p{k}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    totals = [0, 0]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        kept, refused = map(int, out.split())
        totals[0] += kept
        totals[1] += refused
    assert sum(totals) == 20
    with PostgresSaver(postgres_url) as saver:
        assert len(saver.checkpoints("t")) == totals[0] + 1


def test_two_runs_of_one_thread_at_once_one_is_refused(postgres_url: str) -> None:
    """A run that wrote against a checkpoint another run moved past gets ConcurrentRunError."""
    with PostgresSaver(postgres_url) as saver:
        app = counter(3).compile(checkpointer=saver)
        app.invoke({"n": 0, "log": []}, thread_id="t")
        stale = saver.chain("t")[-1].checkpoint_id
        app.invoke({"n": 0}, thread_id="t")  # another run moves the thread on
        with pytest.raises(ConcurrentRunError) as info:
            saver.put(Checkpoint("t", "late", stale, None, [("count", {"n": 99})]))
        assert info.value.expected == stale
        assert info.value.newest == saver.chain("t")[-1].checkpoint_id
        assert "another run of the thread committed first" in str(info.value)
        assert len(app.get_state("t").values["log"]) == 6  # both runs' steps, none lost


def test_a_graph_runs_and_resumes_like_with_memory(postgres_url: str) -> None:
    """Interrupt, resume, history: the same results as MemorySaver."""

    class Ask(TypedDict):
        answer: str
        log: Annotated[list[str], operator.add]

    g = Graph(Ask)

    @g.node(start=True, then="finish")
    def ask(state: Ask) -> dict[str, object]:
        return {"answer": str(interrupt("name?")), "log": ["asked"]}

    @g.node(then=END)
    def finish(state: Ask) -> dict[str, object]:
        return {"log": [f"hello {state['answer']}"]}

    results: list[Any] = []
    with PostgresSaver(postgres_url) as saver:
        for store in (MemorySaver(), saver):
            app = g.compile(checkpointer=store)
            first = app.invoke({"answer": "", "log": []}, thread_id="t")
            assert first.status == "interrupted"
            done = app.invoke(Resume("ada"), thread_id="t")
            results.append((done.status, done.state, len(app.history("t"))))
    assert results[0] == results[1]
    assert results[1][1]["log"] == ["asked", "hello ada"]


def test_a_long_thread_stores_values_once(postgres_url: str) -> None:
    """Snapshots refer to the list items earlier steps stored: bytes grow linearly."""
    with PostgresSaver(postgres_url) as saver:
        app = counter(120).compile(checkpointer=saver)
        run = app.invoke({"n": 0, "log": []}, thread_id="t")
        assert run.state["n"] == 120
        with saver.pool.connection() as conn:
            row = conn.execute(
                "SELECT sum(octet_length(coalesce(snapshot, '')) + octet_length(writes) "
                "+ octet_length(meta)) FROM corral_checkpoints"
            ).fetchone()
            blobs = conn.execute("SELECT sum(octet_length(data)) FROM corral_items").fetchone()
        assert row is not None and blobs is not None
        payload = sum(len(x) + 2 for x in run.state["log"])
        assert blobs[0] < 1.5 * payload  # each log item stored once, not in every snapshot


def test_a_pool_of_your_own_is_used_and_left_open(postgres_url: str) -> None:
    """PostgresSaver(pool) uses the pool (switching it to autocommit) and does not close it."""
    pool: ConnectionPool[Any] = ConnectionPool(postgres_url, min_size=1, max_size=2, open=True)
    try:
        saver = PostgresSaver(pool)
        app = counter(3).compile(checkpointer=saver)
        assert app.invoke({"n": 0, "log": []}, thread_id="t").state["n"] == 3
        saver.close()
        with pool.connection() as conn:
            assert conn.execute("SELECT count(*) FROM corral_threads").fetchone() == (1,)
    finally:
        pool.close()


def test_a_server_that_is_not_there_is_a_clear_error(postgres_cluster: Cluster) -> None:
    """No server on the socket: CheckpointError naming the database, no password shown."""
    url = f"postgresql://app:secret@/nowhere?host={postgres_cluster.root}/none&port=1"
    with pytest.raises(CheckpointError, match=r"cannot connect to .*check that the server runs"):
        PostgresSaver(url)
    with pytest.raises(CheckpointError) as info:
        PostgresSaver(url)
    assert "secret" not in str(info.value)


def test_a_missing_database_is_named(postgres_cluster: Cluster) -> None:
    """A database that does not exist: the message says so and how to fix it."""
    with pytest.raises(CheckpointError, match=r"does not exist.*createdb"):
        PostgresSaver(postgres_cluster.url("no_such_db"))


def test_a_newer_layout_is_refused_and_left_alone(postgres_url: str) -> None:
    """A database written by a newer corral raises CheckpointError; nothing is rewritten."""
    PostgresSaver(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE corral_schema SET version = 99, written_by = 'corral 9.0'")
    with pytest.raises(CheckpointError, match=r"layout version 99 \(written by corral 9.0\)"):
        PostgresSaver(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM corral_schema").fetchone() == (99,)


def test_many_processes_opening_a_fresh_database_create_it_once(postgres_url: str) -> None:
    """Savers opened at once on an empty database all work (the schema is made once)."""
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            PostgresSaver(postgres_url).close()
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=open_one) for _ in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
