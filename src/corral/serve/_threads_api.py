"""The assistants and threads part of the API (the LangGraph server's paths and shapes).

A handler that reads no body is a plain function, which Starlette runs on its thread pool
(the store's calls block); one that reads the body awaits it, then runs the rest there.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.checkpoint import ThreadInfo
from corral.errors import CorralError
from corral.runtime.app import CompiledGraph
from corral.runtime.events import StateSnapshot
from corral.serve._requests import (
    JSONText,
    checkpoint_of,
    count_of,
    fail,
    field_of,
    metadata_of,
    read_json,
)
from corral.serve._runs import Served
from corral.serve._shapes import assistant_json, state_json, thread_json

__all__ = ["routes", "snapshot_of", "thread_app", "thread_or_404"]

_MAX_ID = 200
"""The longest thread id accepted (ids are values in SQL, never text in it or in a path)."""


def served_of(request: Request) -> Served:
    served: Served = request.app.state.served
    return served


def thread_or_404(served: Served, thread_id: str) -> ThreadInfo:
    found = served.saver.thread_info(thread_id)
    if found is None:
        raise fail(404, f"thread {thread_id!r} not found; create it with POST /threads")
    return found


def thread_app(served: Served, thread: ThreadInfo) -> CompiledGraph[Any]:
    """Return the graph the thread belongs to (any served one before its first run)."""
    return served.graphs.get(thread.graph or "", served.any_app)


def snapshot_of(served: Served, thread: ThreadInfo) -> StateSnapshot | None:
    """Return the thread's last state, or ``None`` before its first checkpoint."""
    app = thread_app(served, thread)
    if served.saver.newest_id(thread.thread_id) is None:
        return None
    return app.get_state(thread.thread_id)


def last_run(served: Served, thread_id: str) -> str | None:
    """Return the status of the thread's newest run: any run in flight counts first."""
    runs = served.runs.of_thread(thread_id)
    if any(run.open for run in runs):
        return "running"
    return runs[0].status if runs else None


def _thread_json(served: Served, thread: ThreadInfo) -> dict[str, Any]:
    return thread_json(thread, snapshot_of(served, thread), last_run(served, thread.thread_id))


# -- assistants --------------------------------------------------------------------------


async def search_assistants(request: Request) -> Response:
    served = served_of(request)
    payload = await read_json(request)
    graph_id = payload.get("graph_id")
    found = [assistant_json(name) for name in served.graphs if graph_id in (None, name)]
    offset = count_of(payload, "offset", 0)
    return JSONText(found[offset : offset + count_of(payload, "limit", 10)])


async def get_assistant(request: Request) -> Response:
    served = served_of(request)
    name = request.path_params["assistant_id"]
    if name not in served.graphs:
        raise fail(404, f"assistant {name!r} not found; served graphs: {sorted(served.graphs)}")
    return JSONText(assistant_json(name))


# -- threads -----------------------------------------------------------------------------


def check_id(thread_id: Any) -> str:
    """Return the thread id, or refuse it (422): a string of 1 to 200 characters that can
    be one URL path segment (no ``/``, as a server decodes ``%2F``; not ``.`` or ``..``,
    which clients resolve away)."""
    if not isinstance(thread_id, str) or not 0 < len(thread_id) <= _MAX_ID:
        raise fail(422, f"thread_id must be a string of 1 to {_MAX_ID} characters")
    if "/" in thread_id or thread_id in (".", ".."):
        msg = f"thread_id {thread_id!r} cannot be a URL path segment (no '/', not '.' or '..')"
        raise fail(422, msg)
    return thread_id


async def create_thread(request: Request) -> Response:
    served = served_of(request)
    payload = await read_json(request)
    thread_id = check_id(payload.get("thread_id") or str(uuid.uuid4()))
    metadata = metadata_of(payload)
    record, new = await run_in_threadpool(served.saver.add_thread_info, thread_id, metadata)
    if not new and payload.get("if_exists", "raise") != "do_nothing":
        raise fail(409, f"thread {thread_id!r} already exists; send if_exists='do_nothing'")
    return JSONText(await run_in_threadpool(_thread_json, served, record))


def get_thread(request: Request) -> Response:
    served = served_of(request)
    return JSONText(_thread_json(served, thread_or_404(served, request.path_params["thread_id"])))


async def patch_thread(request: Request) -> Response:
    served = served_of(request)
    payload = await read_json(request)
    thread_id = request.path_params["thread_id"]
    metadata = metadata_of(payload)

    def answer() -> dict[str, Any]:
        thread_or_404(served, thread_id)
        served.saver.update_thread_info(thread_id, metadata)
        return _thread_json(served, thread_or_404(served, thread_id))

    return JSONText(await run_in_threadpool(answer))


def delete_thread(request: Request) -> Response:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    thread_or_404(served, thread_id)
    served.runs.delete_thread(thread_id, served.saver)  # a running run is asked to stop
    return Response(status_code=204)


def _matches(value: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(value, dict) and all(value.get(k) == v for k, v in wanted.items())


async def search_threads(request: Request) -> Response:
    served = served_of(request)
    payload = await read_json(request)
    limit = count_of(payload, "limit", 10)
    offset = count_of(payload, "offset", 0)
    ids = field_of(payload, "ids", list)
    metadata = metadata_of(payload)
    values = field_of(payload, "values", dict) or {}

    def answer() -> list[dict[str, Any]]:
        found = []
        for thread in served.saver.thread_infos():
            if ids is not None and thread.thread_id not in ids:
                continue
            if not _matches(thread.metadata, metadata):
                continue
            shown = _thread_json(served, thread)
            if payload.get("status") not in (None, shown["status"]):
                continue
            if not _matches(shown["values"] or {}, values):
                continue
            found.append(shown)
            if len(found) >= offset + limit:
                break
        return found[offset:]

    return JSONText(await run_in_threadpool(answer))


def get_state(request: Request) -> Response:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    checkpoint_id = request.path_params.get("checkpoint_id")
    thread = thread_or_404(served, thread_id)
    app = thread_app(served, thread)
    if checkpoint_id is not None:
        try:
            return JSONText(state_json(thread_id, app.get_state(thread_id, checkpoint_id)))
        except CorralError as exc:
            raise fail(404, f"checkpoint {checkpoint_id!r} not found: {exc}") from None
    snapshot = snapshot_of(served, thread)
    if snapshot is None:
        return JSONText({"values": {}, "next": [], "tasks": [], "metadata": {},
                         "created_at": None, "checkpoint": None, "parent_checkpoint": None,
                         "interrupts": [], "checkpoint_id": None,
                         "parent_checkpoint_id": None})  # fmt: skip
    return JSONText(state_json(thread_id, snapshot))


async def update_state(request: Request) -> Response:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    payload = await read_json(request)
    values = payload.get("values")
    as_node = field_of(payload, "as_node", str)
    if not isinstance(values, dict):
        raise fail(422, f"values must be a JSON object of state keys, not {values!r}")
    checkpoint_id = checkpoint_of(payload)

    def answer() -> dict[str, Any]:
        thread = thread_or_404(served, thread_id)
        if last_run(served, thread_id) == "running":
            raise fail(409, f"thread {thread_id!r} has a run in flight; update it once it ends")
        app = thread_app(served, thread)
        try:
            new_id = app.update_state(thread_id, values, as_node, checkpoint_id=checkpoint_id)
        except CorralError as exc:
            raise fail(422, str(exc)) from None
        name = thread.graph or next(k for k, v in served.graphs.items() if v is app)
        served.saver.update_thread_info(
            thread_id, {"graph_id": name, "assistant_id": name}, graph=name
        )
        point = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": new_id}
        return {"checkpoint": point, "configurable": point, "checkpoint_id": new_id}

    return JSONText(await run_in_threadpool(answer))


async def get_history(request: Request) -> Response:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    payload = await read_json(request) if request.method == "POST" else {}
    limit = count_of({**request.query_params, **payload}, "limit", 10)
    before = payload.get("before")  # a checkpoint id, or the checkpoint as an object
    before = checkpoint_of(before) if isinstance(before, dict) else before
    if before is not None and not isinstance(before, str):
        raise fail(422, f"before must be a checkpoint id or a checkpoint, not {before!r}")

    def answer() -> list[dict[str, Any]]:
        thread = thread_or_404(served, thread_id)
        states = thread_app(served, thread).history(thread_id)
        if before is not None:
            ids = [s.checkpoint_id for s in states]
            states = states[ids.index(before) + 1 :] if before in ids else []
        return [state_json(thread_id, s) for s in states[:limit]]

    return JSONText(await run_in_threadpool(answer))


routes = [
    Route("/assistants/search", search_assistants, methods=["POST"]),
    Route("/assistants/{assistant_id}", get_assistant, methods=["GET"]),
    Route("/threads", create_thread, methods=["POST"]),
    Route("/threads/search", search_threads, methods=["POST"]),
    Route("/threads/{thread_id}", get_thread, methods=["GET"]),
    Route("/threads/{thread_id}", patch_thread, methods=["PATCH"]),
    Route("/threads/{thread_id}", delete_thread, methods=["DELETE"]),
    Route("/threads/{thread_id}/state", get_state, methods=["GET"]),
    Route("/threads/{thread_id}/state", update_state, methods=["POST"]),
    Route("/threads/{thread_id}/state/{checkpoint_id}", get_state, methods=["GET"]),
    Route("/threads/{thread_id}/history", get_history, methods=["GET", "POST"]),
]
