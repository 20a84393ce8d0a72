"""The same protocol calls against LangGraph's own server and ``corral serve``: same shapes.

LangGraph's in-memory server (``langgraph dev``, from ``langgraph-cli[inmem]``) serves a
LangGraph graph equivalent to ``serving/served_graph.py``'s ``review``; ``corral serve``
serves that one. Each server gets the same SDK calls, and the keys, value types and
statuses of what they answer are compared, so the shapes are right by comparison. Known,
documented differences (``docs/serve.md``) are listed in ``_KNOWN``. Optional: skipped
with the reason when LangGraph's server cannot start here (it runs fully offline).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
pytest.importorskip("langgraph_api", reason="langgraph-cli[inmem] is not installed")
from serving.server import GRAPHS, free_port, serving  # noqa: E402

_LANGGRAPH_GRAPH = """
import operator
from typing import Annotated, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class Review(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]
    answer: str
    rounds: int


def draft(state):
    get_stream_writer()({"token": "drafting"})
    return {"log": [f"drafted {state.get('topic', '')}"]}


def critique(state):
    return {"rounds": state.get("rounds", 0) + 1}


def ask(state):
    answer = interrupt({"question": f"publish {state.get('topic', '')!r}?"})
    return {"answer": answer, "log": ["asked"]}


builder = StateGraph(Review)
builder.add_node("draft", draft)
builder.add_node("critique", critique)
builder.add_node("ask", ask)
builder.add_edge(START, "draft")
builder.add_edge("draft", "critique")
builder.add_conditional_edges(
    "critique", lambda s: "draft" if s.get("rounds", 0) < 2 else "ask", ["draft", "ask"]
)
builder.add_edge("ask", END)
graph = builder.compile()
"""

_KNOWN = {
    # LangGraph keeps a timestamp per checkpoint; corral's checkpoints have none
    ("state", "created_at"),
    ("history", "created_at"),
    # LangGraph adds the request's run settings and tracing fields to a run's metadata/kwargs
    ("run", "langsmith_session_name"),
}


@pytest.fixture(scope="module")
def langgraph_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("langgraph")
    (tmp / "graph.py").write_text(_LANGGRAPH_GRAPH)
    (tmp / "langgraph.json").write_text(
        '{"dependencies": ["."], "graphs": {"review": "./graph.py:graph"}}'
    )
    cli = shutil.which("langgraph") or str(Path(sys.executable).with_name("langgraph"))
    port = free_port()
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    env["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
    log = (tmp / "server.log").open("wb")
    command = [cli, "dev", "--no-browser", "--no-reload", "--port", str(port)]
    command += ["--host", "127.0.0.1"]
    try:
        process = subprocess.Popen(command, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, env=env)
    except OSError as exc:
        pytest.skip(f"cannot start LangGraph's server: {exc}")
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                text = (tmp / "server.log").read_text(errors="replace")[-400:]
                pytest.skip(f"LangGraph's server exited {process.returncode}: {text}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.skip("LangGraph's server did not answer within 90 s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log.close()


@pytest.fixture(scope="module")
def corral_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("corral")
    with serving(str(tmp / "runs.sqlite"), tmp, paths=[f"{GRAPHS}:review"]) as server:
        yield server.url


def _shape(value: Any) -> Any:
    """Return the keys and value types of a JSON value, one level into dicts and lists."""
    if isinstance(value, dict):
        return {k: type(v).__name__ for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


def _protocol(url: str) -> dict[str, Any]:
    """Make the same calls on one server; return what the comparison looks at."""
    client = langgraph_sdk.get_sync_client(url=url)
    seen: dict[str, Any] = {}
    assistant = client.assistants.search()[0]
    seen["assistant"] = assistant
    seen["assistant_get"] = client.assistants.get(assistant["assistant_id"])
    thread = client.threads.create(metadata={"who": "me"})
    seen["thread"] = thread
    tid = thread["thread_id"]
    parts = list(
        client.runs.stream(
            tid, "review", input={"topic": "t"}, stream_mode=["values", "updates", "custom"]
        )
    )
    seen["events"] = [p.event for p in parts]
    seen["metadata_event"] = parts[0].data
    seen["first_values"] = parts[1].data
    seen["custom"] = [p.data for p in parts if p.event == "custom"]
    seen["updates"] = [p.data for p in parts if p.event == "updates"]
    seen["interrupt_item"] = parts[-1].data["__interrupt__"][0]
    seen["thread_interrupted"] = client.threads.get(tid)
    state = client.threads.get_state(tid)
    seen["state"] = state
    seen["task"] = state["tasks"][0]
    seen["checkpoint"] = state["checkpoint"]
    seen["history"] = client.threads.get_history(tid)[0]
    seen["wait"] = client.runs.wait(tid, "review", command={"resume": "yes"})
    seen["thread_idle"] = client.threads.get(tid)
    seen["update_state"] = client.threads.update_state(tid, {"answer": "no"}, as_node="ask")
    seen["runs"] = client.runs.list(tid)
    seen["run"] = seen["runs"][0]
    created = client.runs.create(tid, "review", input={"topic": "u"})
    seen["created"] = created
    seen["join"] = client.runs.join(tid, created["run_id"])
    seen["run_after_join"] = client.runs.get(tid, created["run_id"])
    seen["stateless"] = client.runs.wait(None, "review", input={"topic": "s"})
    raw = httpx.post(
        f"{url}/threads/{tid}/runs/stream",
        json={"assistant_id": "review", "input": {"topic": "h"}, "stream_mode": "values"},
        timeout=60,
    )
    run_id = raw.text.split('"run_id":"', 1)[1].split('"', 1)[0]
    seen["stream_headers"] = (
        raw.headers["content-type"].split(";")[0],
        raw.headers["location"] == f"/threads/{tid}/runs/{run_id}/stream",
        raw.headers["content-location"] == f"/threads/{tid}/runs/{run_id}",
    )
    missing = httpx.get(f"{url}/threads/00000000-0000-0000-0000-000000000000")
    seen["missing"] = (missing.status_code, missing.json())
    return seen


def _differences(name: str, ours: Any, theirs: Any) -> list[str]:
    ours_shape, theirs_shape = _shape(ours), _shape(theirs)
    if not isinstance(theirs_shape, dict) or not isinstance(ours_shape, dict):
        return [] if ours_shape == theirs_shape else [f"{name}: {ours_shape} != {theirs_shape}"]
    found = []
    for key in sorted(set(theirs_shape) | set(ours_shape)):
        if (name, key) in _KNOWN:
            continue
        if key not in ours_shape:
            found.append(f"{name}: corral lacks {key!r}")
        elif key not in theirs_shape:
            found.append(f"{name}: corral adds {key!r}")
        elif ours_shape[key] != theirs_shape[key] and "NoneType" not in (
            ours_shape[key],
            theirs_shape[key],
        ):
            found.append(f"{name}.{key}: {ours_shape[key]} != {theirs_shape[key]}")
    return found


def test_corral_answers_in_the_shapes_of_langgraphs_server(
    langgraph_url: str, corral_url: str
) -> None:
    theirs = _protocol(langgraph_url)
    ours = _protocol(corral_url)
    # what the SDK's users read: event order, statuses, values and pauses
    assert ours["events"] == theirs["events"]
    assert ours["first_values"] == theirs["first_values"] == {"topic": "t", "log": []}
    assert ours["custom"] == theirs["custom"]
    assert ours["updates"][:-1] == theirs["updates"][:-1]
    assert set(ours["interrupt_item"]) <= set(theirs["interrupt_item"])
    assert ours["interrupt_item"]["value"] == theirs["interrupt_item"]["value"]
    for name in ("thread_interrupted", "thread_idle"):
        assert ours[name]["status"] == theirs[name]["status"], name
    assert [r["status"] for r in ours["runs"]] == [r["status"] for r in theirs["runs"]]
    assert ours["created"]["status"] == theirs["created"]["status"] == "pending"
    assert ours["run_after_join"]["status"] == theirs["run_after_join"]["status"]
    assert ours["wait"] == theirs["wait"]
    assert set(ours["join"]) == set(theirs["join"])
    assert set(ours["stateless"]) == set(theirs["stateless"])
    assert ours["stream_headers"] == theirs["stream_headers"] == ("text/event-stream", True, True)
    assert ours["missing"][0] == theirs["missing"][0] == 404
    assert set(ours["missing"][1]) == set(theirs["missing"][1]) == {"detail"}
    shapes = ["assistant", "assistant_get", "thread", "metadata_event", "thread_interrupted"]
    shapes += ["state", "task", "checkpoint", "history", "thread_idle", "update_state", "run"]
    found = [d for name in shapes for d in _differences(name, ours[name], theirs[name])]
    assert not found, "\n".join(found)
