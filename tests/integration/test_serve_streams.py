"""``corral serve`` streams and concurrency, driven by the real LangGraph SDK.

The ``slow`` graph's ``write`` node emits ``"first"``, then waits until the test creates its
gate file (the path is the run's input ``text``), then emits ``"second"``: so a test holds a
node running for as long as it needs, and sees what arrives meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk import errors as sdk_errors  # noqa: E402
from serving.server import Server, serving  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    with serving(str(tmp / "runs.sqlite"), tmp) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Any:
    return langgraph_sdk.get_sync_client(url=server.url)


def _until(client: Any, tid: str, run_id: str, status: str) -> None:
    deadline = time.monotonic() + 30
    while client.runs.get(tid, run_id)["status"] != status:
        assert time.monotonic() < deadline, f"run {run_id} never became {status}"
        time.sleep(0.02)


def test_stream_modes_values_updates_custom_in_order(client: Any) -> None:
    """A list of modes streams each under its own event name; metadata comes first, the
    first values event is the input state, a pause shows as __interrupt__."""
    tid = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            tid, "review", input={"topic": "t"}, stream_mode=["values", "updates", "custom"]
        )
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata" and set(parts[0].data) == {"run_id", "attempt"}
    assert set(events[1:]) == {"values", "updates", "custom"}
    assert parts[1].event == "values" and parts[1].data == {"topic": "t", "log": []}
    custom = [p.data for p in parts if p.event == "custom"]
    assert custom == [{"token": "drafting"}, {"token": "drafting"}]
    updates = [p.data for p in parts if p.event == "updates"]
    assert updates[0] == {"draft": {"log": ["drafted t"]}}
    assert updates[-1]["__interrupt__"][0]["value"] == {"question": "publish 't'?"}
    assert parts[-1].event == "values"
    assert parts[-1].data["__interrupt__"] == updates[-1]["__interrupt__"]
    # the custom token comes before the update of the node that sent it
    assert events.index("custom") < events.index("updates")


def test_a_single_mode_streams_only_that_mode(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "review", input={"topic": "u"}, stream_mode="updates"))
    assert {p.event for p in parts} == {"metadata", "updates"}
    events = list(client.runs.stream(None, "review", input={"topic": "e"}, stream_mode="events"))
    kinds = [p.data["type"] for p in events if p.event == "events"]
    assert kinds[:2] == ["CheckpointWritten", "NodeStart"] and "Paused" in kinds


def test_a_custom_token_reaches_the_client_while_its_node_runs(client: Any, tmp_path: Path) -> None:
    """The node waits for the gate after emitting "first": the client has "first" before
    the gate exists, so the node cannot have returned yet."""
    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    seen: list[str] = []
    for part in client.runs.stream(tid, "slow", input={"text": str(gate)}, stream_mode="custom"):
        if part.event != "custom":
            continue
        seen.append(part.data)
        if part.data == "first":
            assert not gate.exists()
            assert client.threads.get(tid)["status"] == "busy"
            gate.touch()
    assert seen == ["first", "second"]
    assert client.threads.get_state(tid)["values"]["tokens"] == ["written", "done"]


def test_a_dropped_stream_joined_again_gets_the_rest_once(client: Any, tmp_path: Path) -> None:
    """A client that drops after "first" and joins with Last-Event-ID misses nothing."""
    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    stream = client.runs.stream(
        tid, "slow", input={"text": str(gate)}, stream_mode=["custom", "values"]
    )
    run_id = last_id = None
    for part in stream:
        if part.event == "metadata":
            run_id = part.data["run_id"]
        last_id = part.id or last_id
        if part.event == "custom" and part.data == "first":
            break
    stream.close()  # the connection drops here
    gate.touch()
    rest = list(client.runs.join_stream(tid, run_id, last_event_id=last_id))
    assert [p.data for p in rest if p.event == "custom"] == ["second"]
    assert [p for p in rest if p.event == "values"][-1].data["tokens"] == ["written", "done"]
    assert client.runs.get(tid, run_id)["status"] == "success"


def test_enqueue_runs_one_after_another_and_reject_is_409(client: Any, tmp_path: Path) -> None:
    """A second run on a busy thread waits its turn (enqueue) or is refused (reject)."""
    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "slow", input={"text": str(gate)})
    _until(client, tid, first["run_id"], "running")
    second = client.runs.create(tid, "slow", input={"text": "no gate"})
    assert second["multitask_strategy"] == "enqueue"
    with pytest.raises(sdk_errors.ConflictError):
        client.runs.create(tid, "slow", input={"text": "x"}, multitask_strategy="reject")
    assert len(client.runs.list(tid)) == 2
    assert client.runs.get(tid, second["run_id"])["status"] == "pending"
    gate.touch()
    client.runs.join(tid, second["run_id"])
    assert [r["status"] for r in client.runs.list(tid)] == ["success", "success"]
    tokens = client.threads.get_state(tid)["values"]["tokens"]
    assert tokens == ["written", "done", "written", "done"]


def test_cancel_stops_the_run_before_its_next_node(client: Any, tmp_path: Path) -> None:
    """The running node finishes; the next does not run; the thread keeps that checkpoint."""
    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    run_id = None
    for part in client.runs.stream(tid, "slow", input={"text": str(gate)}, stream_mode="custom"):
        if part.event == "metadata":
            run_id = part.data["run_id"]
        if part.event == "custom" and part.data == "first":  # the node runs now
            client.runs.cancel(tid, run_id)
            gate.touch()
    assert client.runs.get(tid, run_id)["status"] == "interrupted"
    state = client.threads.get_state(tid)
    assert state["values"]["tokens"] == ["written"] and state["next"] == ["finish"]


def test_a_pending_run_cancelled_never_runs(client: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "slow", input={"text": str(gate)})
    _until(client, tid, first["run_id"], "running")
    second = client.runs.create(tid, "slow", input={"text": "no gate"})
    client.runs.cancel(tid, second["run_id"])
    gate.touch()
    client.runs.join(tid, second["run_id"])
    assert [r["status"] for r in client.runs.list(tid)] == ["interrupted", "success"]
    assert client.threads.get_state(tid)["values"]["tokens"] == ["written", "done"]


def test_interrupt_before_a_node_per_run(client: Any) -> None:
    """interrupt_before=[node] pauses that run before the node; None continues it."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "slow", input={"text": "x"}, interrupt_before=["finish"])
    assert client.threads.get(tid)["status"] == "interrupted"
    assert client.threads.get_state(tid)["next"] == ["finish"]
    out = client.runs.wait(tid, "slow")
    assert out["tokens"] == ["written", "done"]


def test_deleting_a_busy_thread_stops_its_runs(server: Server, client: Any, tmp_path: Path) -> None:
    """The running run stops before its next node, the queued one never runs, and the
    thread's checkpoints are deleted: the node that was running writes nothing after it."""
    from serving.served_graph import slow

    from corral import SqliteSaver
    from corral.errors import RunFailedError

    gate = tmp_path / "gate"
    tid = client.threads.create()["thread_id"]
    run_id = None
    for part in client.runs.stream(tid, "slow", input={"text": str(gate)}, stream_mode="custom"):
        if part.event == "metadata":
            run_id = part.data["run_id"]
            client.runs.create(tid, "slow", input={"text": "queued"})
        if part.event == "custom" and part.data == "first":
            client.threads.delete(tid)
            gate.touch()
    with pytest.raises(sdk_errors.NotFoundError):
        client.threads.get(tid)
    db = server.process.args[server.process.args.index("--db") + 1]  # type: ignore[union-attr]
    app = slow.compile(checkpointer=SqliteSaver(db))
    with pytest.raises(RunFailedError, match="cancelled"):
        app.wait(tid, timeout=60)  # the running run, stopped; the queued one is gone
    assert app.checkpointer is not None
    assert tid not in app.checkpointer.threads()  # type: ignore[attr-defined]
    assert run_id is not None


def test_the_async_client_works_the_same(server: Server) -> None:
    import asyncio

    async def session() -> tuple[list[str], dict[str, Any]]:
        client = langgraph_sdk.get_client(url=server.url)
        tid = (await client.threads.create())["thread_id"]
        parts = [
            p.event
            async for p in client.runs.stream(
                tid, "review", input={"topic": "a"}, stream_mode="updates"
            )
        ]
        done = await client.runs.wait(tid, "review", command={"resume": "fine"})
        return parts, done

    events, done = asyncio.run(session())
    assert events[0] == "metadata" and set(events[1:]) == {"updates"}
    assert done["answer"] == "fine"
