"""``fenced(fence)``: every write of the SQL savers in the context passes ``fence`` first,
inside its own transaction; a fence that raises refuses the write whole (workers fence each
run's writes with its lease: tests/integration/test_worker_takeover.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral import PostgresSaver, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.base import fenced
from corral.errors import CorralError


class Refused(CorralError):
    """What the test's fence raises."""


@pytest.fixture(params=["sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteSaver | PostgresSaver]:
    store: SqliteSaver | PostgresSaver = (
        SqliteSaver(tmp_path / "c.sqlite")
        if request.param == "sqlite"
        else PostgresSaver(request.getfixturevalue("postgres_url"))
    )
    yield store
    store.close()


def test_a_fence_that_refuses_stores_nothing(saver: SqliteSaver | PostgresSaver) -> None:
    """The first put, a later put and a task record are each refused whole; the fence saw
    the store's own connection each time; outside the context writes are not fenced."""
    seen: list[Any] = []

    def refuse(conn: Any) -> None:
        seen.append(conn)
        raise Refused("the lease is gone")

    with fenced(refuse), pytest.raises(Refused):
        saver.put(Checkpoint("t", "1", None, {"n": 1}))
    assert saver.chain("t") == []
    saver.put(Checkpoint("t", "1", None, {"n": 1}))
    with fenced(refuse):
        with pytest.raises(Refused):
            saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
        with pytest.raises(Refused):
            saver.put_writes("t", "1", 0, {"task": 0, "node": "a", "update": {}, "goto": None})
    assert [c.checkpoint_id for c in saver.checkpoints("t")] == ["1"]
    assert saver.pending_writes("t", "1") == {}
    assert len(seen) == 3 and all(hasattr(conn, "execute") for conn in seen)
    saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))  # the fence is gone
    assert saver.chain("t")[-1].checkpoint_id == "2"


def test_a_fence_that_passes_changes_nothing(saver: SqliteSaver | PostgresSaver) -> None:
    """Puts in a row (SQLite's one-statement put is skipped under a fence) and a record."""
    calls: list[int] = []
    with fenced(lambda conn: calls.append(1)):
        saver.put(Checkpoint("t", "1", None, {"n": 1}))
        for i in range(2, 5):
            saver.put(Checkpoint("t", str(i), str(i - 1), None, [("inc", {"n": i})]))
        saver.put_writes("t", "4", 1, {"task": 1, "node": "a", "update": {"n": 5}, "goto": None})
    assert len(calls) == 5
    assert [c.checkpoint_id for c in saver.checkpoints("t")] == ["1", "2", "3", "4"]
    assert saver.pending_writes("t", "4")[1]["update"] == {"n": 5}


def test_a_claim_cannot_slip_in_between_a_workers_check_and_its_commit(
    postgres_url: str,
) -> None:
    """PostgreSQL: while a write that passed its lease's fence is not yet committed, a claim
    of the (expired) run skips it; once committed, the claim takes it, and the old
    claim's next fence refuses."""
    import psycopg
    from graphs.worker_graph import g

    from corral.errors import LeaseLostError
    from corral.workers import queue_for

    with PostgresSaver(postgres_url) as store, psycopg.connect(postgres_url) as conn:
        conn.autocommit = True
        queue = queue_for(g.compile(checkpointer=store))
        queue.submit("t", None, False)
        held = queue.claim("A", lease_s=0.001, graphs=[])
        assert held is not None
        expired = "SELECT lease_until < now() FROM corral_runs WHERE id = %s"
        while conn.execute(expired, (held.id,)).fetchone() != (True,):
            pass
        with conn.transaction():
            queue.fence(held, "A")(conn)  # A's write passed its check, not yet committed
            assert queue.claim("B", lease_s=30, graphs=[]) is None
        taken = queue.claim("B", lease_s=30, graphs=[])
        assert taken is not None and taken.attempts == held.attempts + 1
        with pytest.raises(LeaseLostError, match="no longer holds run"), conn.transaction():
            queue.fence(held, "A")(conn)
