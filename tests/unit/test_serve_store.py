"""The server's run records (``corral.serve._store``) on a real SQLite file and queue."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from serving.served_graph import review

from corral import SqliteSaver
from corral.errors import BusyThreadError
from corral.serve._store import RunRecord, ServeStore, open_store
from corral.workers import queue_for


def _run(thread_id: str, *, age_s: float = 0.0, strategy: str = "enqueue") -> RunRecord:
    return RunRecord(
        run_id=f"run-{time.monotonic_ns()}",
        thread_id=thread_id,
        assistant_id="review",
        queue_id=None,
        metadata={},
        kwargs={"input": {"topic": "t"}},
        multitask_strategy=strategy,
        temporary=False,
        started=0,
        cancel=None,
        created_at=time.time() - age_s,
        status="pending",
        error=None,
    )


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    app = review.compile(checkpointer=SqliteSaver(str(tmp_path / "runs.sqlite")))
    queue_for(app)
    store = open_store(app.checkpointer)
    store.create_thread("t", {})
    yield app, store
    store.close()
    assert app.checkpointer is not None
    app.checkpointer.close()  # type: ignore[attr-defined]


def test_a_run_recorded_but_never_queued_is_queued_once(setup: Any) -> None:
    """recover() hands an old unqueued run to one caller only; a fresh one it leaves."""
    _, store = setup
    old, fresh = _run("t", age_s=120), _run("t")
    store.add_run(old)
    store.add_run(fresh)
    assert [r.run_id for r in store.recover(older_than_s=30)] == [old.run_id]
    assert store.recover(older_than_s=30) == []


def test_a_run_queued_whose_id_was_never_noted_is_adopted_not_queued_again(setup: Any) -> None:
    app, store = setup
    lost = _run("t", age_s=120)
    store.add_run(lost)
    queue_id = app.submit({"topic": "t"}, thread_id="t")  # its server died right after
    assert store.recover(older_than_s=30) == []
    found = store.get_run(lost.run_id)
    assert found is not None and found.queue_id == queue_id and found.status == "pending"


def test_reject_refuses_a_run_on_a_thread_with_one_in_flight(setup: Any) -> None:
    _, store = setup
    store.add_run(_run("t"))
    with pytest.raises(BusyThreadError) as refused:
        store.add_run(_run("t", strategy="reject"))
    assert refused.value.thread_id == "t"
    assert len(store.runs("t")) == 1


def test_store_needs_a_database_file(tmp_path: Path) -> None:
    from corral import MemorySaver
    from corral.errors import CorralError

    with pytest.raises(CorralError, match="checkpointer's database"):
        open_store(MemorySaver())
    assert isinstance(open_store(SqliteSaver(str(tmp_path / "x.sqlite"))), ServeStore)
