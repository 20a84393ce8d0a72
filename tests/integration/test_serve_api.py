"""``corral serve`` driven by the real LangGraph SDK: assistants, threads, runs, errors.

One real server process (SQLite) serves the module; each test makes its own threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
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
    return langgraph_sdk.get_sync_client(url=server.url, api_key=None)


def test_each_served_graph_is_an_assistant_named_after_it(client: Any) -> None:
    """assistants.search lists one assistant per graph; get() finds it by its name."""
    found = client.assistants.search()
    assert sorted(a["assistant_id"] for a in found) == ["review", "slow"]
    review = client.assistants.get("review")
    assert review["graph_id"] == "review" and review["name"] == "review"
    with pytest.raises(sdk_errors.NotFoundError):
        client.assistants.get("nope")


def test_a_thread_is_created_found_searched_and_deleted(client: Any) -> None:
    """threads.create keeps the metadata; get/search find it; delete makes it 404."""
    thread = client.threads.create(metadata={"ticket": "T-1"})
    assert thread["status"] == "idle" and thread["metadata"] == {"ticket": "T-1"}
    assert thread["values"] is None
    got = client.threads.get(thread["thread_id"])
    assert got["thread_id"] == thread["thread_id"]
    found = client.threads.search(metadata={"ticket": "T-1"})
    assert [t["thread_id"] for t in found] == [thread["thread_id"]]
    client.threads.delete(thread["thread_id"])
    with pytest.raises(sdk_errors.NotFoundError):
        client.threads.get(thread["thread_id"])


def test_deleting_a_thread_deletes_its_checkpoints(server: Server, client: Any) -> None:
    """threads.delete removes the thread's checkpoints from the database: a thread made
    again under its id starts empty, and the other threads keep theirs."""
    from corral import SqliteSaver

    kept = client.threads.create()["thread_id"]
    client.runs.wait(kept, "review", input={"topic": "kept"})
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": "gone"})
    client.threads.delete(tid)
    db = server.process.args[server.process.args.index("--db") + 1]  # type: ignore[union-attr]
    with SqliteSaver(db) as saver:
        assert saver.checkpoints(tid) == [] and tid not in saver.threads()
        assert saver.checkpoints(kept) != []
    client.threads.create(thread_id=tid)
    assert client.threads.get_state(tid)["values"] == {}
    assert client.threads.get_history(tid) == []


def test_a_run_pauses_for_a_person_and_a_resume_command_finishes_it(client: Any) -> None:
    """runs.wait returns the values with __interrupt__; command={"resume": ...} answers it."""
    thread = client.threads.create()
    tid = thread["thread_id"]
    paused = client.runs.wait(tid, "review", input={"topic": "guards"})
    assert paused["__interrupt__"][0]["value"] == {"question": "publish 'guards'?"}
    assert set(paused["__interrupt__"][0]) == {"value", "id"}
    shown = client.threads.get(tid)
    assert shown["status"] == "interrupted"
    assert shown["metadata"]["graph_id"] == "review"
    [pending] = shown["interrupts"].values()
    assert pending[0]["value"] == {"question": "publish 'guards'?"}
    state = client.threads.get_state(tid)
    assert state["next"] == ["ask"]
    assert state["tasks"][0]["name"] == "ask"
    assert state["tasks"][0]["interrupts"] == state["interrupts"] == pending
    assert state["checkpoint"]["thread_id"] == tid and state["checkpoint"]["checkpoint_ns"] == ""
    done = client.runs.wait(tid, "review", command={"resume": "yes"})
    assert done["answer"] == "yes" and "__interrupt__" not in done
    assert done["log"] == ["drafted guards", "drafted guards", "asked"]
    assert client.threads.get(tid)["status"] == "idle"
    runs = client.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"]  # as LangGraph's server
    assert client.runs.get(tid, runs[0]["run_id"])["status"] == "success"


def test_history_and_update_state_as_a_node(client: Any) -> None:
    """get_history lists states newest first; update_state(as_node) writes a checkpoint."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": "h"})
    history = client.threads.get_history(tid)
    assert len(history) >= 3
    assert history[0]["checkpoint_id"] == client.threads.get_state(tid)["checkpoint_id"]
    assert history[1]["checkpoint_id"] == history[0]["parent_checkpoint_id"]
    assert len(client.threads.get_history(tid, limit=2)) == 2
    for before in (history[0]["checkpoint_id"], history[0]["checkpoint"]):
        older = client.threads.get_history(tid, before=before)
        assert older[0]["checkpoint_id"] == history[1]["checkpoint_id"]
    written = client.threads.update_state(tid, {"answer": "edited"}, as_node="ask")
    assert set(written["checkpoint"]) == {"checkpoint_id", "thread_id", "checkpoint_ns"}
    state = client.threads.get_state(tid)
    assert state["checkpoint_id"] == written["checkpoint"]["checkpoint_id"]
    assert state["values"]["answer"] == "edited" and state["next"] == []
    assert client.threads.get(tid)["status"] == "idle"


def test_a_stateless_run_deletes_its_thread_unless_asked_to_keep_it(client: Any) -> None:
    """runs.wait(None, ...) runs on a new thread, deleted at the end (on_completion)."""
    before = {t["thread_id"] for t in client.threads.search(limit=1000)}
    out = client.runs.wait(None, "review", input={"topic": "s"})
    assert out["__interrupt__"][0]["value"] == {"question": "publish 's'?"}
    assert {t["thread_id"] for t in client.threads.search(limit=1000)} == before
    client.runs.wait(None, "review", input={"topic": "k"}, on_completion="keep")
    kept = {t["thread_id"] for t in client.threads.search(limit=1000)} - before
    assert len(kept) == 1


def test_a_run_that_fails_is_an_error_run_and_an_error_thread(client: Any, tmp_path: Path) -> None:
    """A node that raises: wait raises with the error, status "error" on run and thread."""
    tid = client.threads.create()["thread_id"]
    with pytest.raises(Exception, match="the finish node broke"):
        client.runs.wait(tid, "slow", input={"text": "boom"})
    assert client.runs.list(tid)[0]["status"] == "error"
    assert client.threads.get(tid)["status"] == "error"
    parts = list(client.runs.stream(tid, "slow", input={"text": "boom"}))
    assert parts[-1].event == "error"
    assert "the finish node broke" in parts[-1].data["message"]


def test_errors_are_json_details_with_the_right_codes(server: Server, client: Any) -> None:
    """404 unknown thread/run/assistant, 422 bad input naming the key, 413 over --max-body."""
    with pytest.raises(sdk_errors.NotFoundError):
        client.threads.get_state("no-such-thread")
    tid = client.threads.create()["thread_id"]
    with pytest.raises(sdk_errors.NotFoundError):
        client.runs.get(tid, "no-such-run")
    with pytest.raises(sdk_errors.NotFoundError):
        client.runs.create(tid, "nope", input={})
    with pytest.raises(sdk_errors.UnprocessableEntityError, match="'colour'"):
        client.runs.create(tid, "review", input={"colour": "red"})
    answer = httpx.post(f"{server.url}/threads/{tid}/runs", json={"assistant_id": "review"})
    assert answer.status_code == 422 and "no state yet" in answer.json()["detail"]
    answer = httpx.post(
        f"{server.url}/threads/{tid}/runs",
        json={"assistant_id": "review", "input": {}, "stream_mode": "messages"},
    )
    assert answer.status_code == 422 and "'messages'" in answer.json()["detail"]
    answer = httpx.post(
        f"{server.url}/threads/{tid}/runs",
        json={"assistant_id": "review", "input": {}, "multitask_strategy": "rollback"},
    )
    assert answer.status_code == 422 and "'rollback'" in answer.json()["detail"]
    big = {"assistant_id": "review", "input": {"topic": "x" * (1 << 20)}}
    answer = httpx.post(f"{server.url}/threads/{tid}/runs", json=big)
    assert answer.status_code == 413 and "--max-body" in answer.json()["detail"]
    answer = httpx.post(f"{server.url}/threads", content=b"{not json")
    assert answer.status_code == 422 and set(answer.json()) == {"detail"}
    assert client.runs.list(tid) == []


BAD_REQUESTS = [
    ("POST", "/assistants/search", {"limit": "abc"}, "limit"),
    ("POST", "/assistants/search", {"offset": 1.5}, "offset"),
    ("POST", "/threads/search", {"limit": [1]}, "limit"),
    ("POST", "/threads/search", {"offset": -1}, "offset"),
    ("POST", "/threads/search", {"ids": 7}, "ids"),
    ("POST", "/threads/search", {"metadata": ["a"]}, "metadata"),
    ("POST", "/threads/search", {"values": "x"}, "values"),
    ("POST", "/threads/{tid}/history", {"limit": {"n": 1}}, "limit"),
    ("POST", "/threads/{tid}/history", {"before": 3}, "before"),
    ("GET", "/threads/{tid}/history?limit=abc", None, "limit"),
    ("GET", "/threads/{tid}/runs?offset=1.5", None, "offset"),
    ("GET", "/threads/{tid}/runs?limit=-2", None, "limit"),
    ("POST", "/threads/{tid}/runs", {"assistant_id": ["review"]}, "assistant_id"),
    ("POST", "/runs/wait", {"assistant_id": {"a": 1}}, "assistant_id"),
    ("POST", "/threads/{tid}/runs", {"assistant_id": "review", "stream_mode": 5}, "stream_mode"),
    ("POST", "/threads/{tid}/state", {"values": {}, "as_node": ["ask"]}, "as_node"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BAD_REQUESTS)
def test_a_field_of_the_wrong_type_is_a_422_naming_it(
    server: Server, client: Any, method: str, path: str, body: Any, field: str
) -> None:
    """A field sent with a value of the wrong kind (limit "abc", assistant_id a list...) is
    a 422 whose detail names the field and the value, never a 500."""
    tid = client.threads.create()["thread_id"]
    answer = httpx.request(method, server.url + path.format(tid=tid), json=body)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    sent = body[field] if body is not None else path.rpartition("=")[2]
    assert field in detail and repr(sent) in detail, detail


def test_fields_corral_does_not_use_are_accepted(client: Any) -> None:
    """config, context, webhook, durability... are accepted and ignored."""
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(
        tid,
        "review",
        input={"topic": "f"},
        config={"configurable": {"x": 1}},
        context={"model": "m"},
        webhook="http://127.0.0.1:9/hook",
        durability="sync",
        metadata={"who": "test"},
    )
    assert out["topic"] == "f"
    assert client.runs.list(tid)[0]["metadata"] == {"who": "test"}


def test_a_run_from_an_older_checkpoint_forks_the_thread(client: Any) -> None:
    """checkpoint_id= runs from that checkpoint (time travel), as invoke(checkpoint_id=)."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": "first"})
    start = client.threads.get_history(tid)[-1]  # the input checkpoint
    assert start["values"]["topic"] == "first" and not start["values"].get("log")
    out = client.runs.wait(
        tid, "review", input={"topic": "fork"}, checkpoint_id=start["checkpoint_id"]
    )
    assert out["log"] == ["drafted fork", "drafted fork"]
    assert client.threads.get_state(tid)["values"]["log"] == ["drafted fork", "drafted fork"]


def test_the_run_field_budget_sets_the_runs_budget(server: Server, client: Any) -> None:
    """budget (calls, tokens, usd) is the run's budget, as invoke(..., budget=): under one
    call the run stops before review's second draft; a malformed one is a 422 naming it.
    The SDK's runs methods take no budget, so its http client sends the body."""
    tid = client.threads.create()["thread_id"]
    body = {"assistant_id": "review", "input": {"topic": "b"}, "budget": {"calls": 1}}
    out = client.http.post(f"/threads/{tid}/runs/wait", json=body)
    assert "stopped before 'draft'" in str(out)
    assert client.runs.list(tid)[0]["status"] == "error"
    assert client.threads.get_state(tid)["values"]["log"] == ["drafted b"]
    body = {"assistant_id": "review", "budget": {"usd": "0.5", "calls": 5}}
    out = client.http.post(f"/threads/{tid}/runs/wait", json=body)
    assert out["log"] == ["drafted b", "drafted b"]
    for bad in ({"usd": "lots"}, {"dollars": 1}, 3, {"calls": -1}):
        with pytest.raises(sdk_errors.UnprocessableEntityError, match="budget"):
            client.http.post(f"/threads/{tid}/runs", json={"assistant_id": "review", "budget": bad})
