"""The runs part of the API: create, wait, stream (server-sent events), join, cancel.

A stream follows the run's channel in the :class:`~corral.serve._hub.Hub` when this
process's workers run it (every event, custom tokens live); a run taken by a ``corral
worker`` elsewhere streams its ``values`` as its checkpoints land. Either way the stream
ends once the queue says the run ended, so a client that reads the run or the thread
right after sees it finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from corral.errors import BusyThreadError
from corral.serve._requests import (
    JSONText,
    count_of,
    dumps,
    fail,
    field_of,
    read_json,
    run_fields,
)
from corral.serve._runs import Served
from corral.serve._shapes import interrupts_json, run_json, run_status
from corral.serve._threads_api import check_id, served_of, snapshot_of, thread_or_404
from corral.workers.queue import QueuedRun

__all__ = ["routes"]

_POLL_S = 0.05
"""How often a waiting request asks the database whether its run ended."""


def _paths(run: QueuedRun) -> dict[str, str]:
    """Return the ``Location`` (the run's stream) and ``Content-Location`` (the run) headers."""
    base = f"/threads/{quote(run.thread_id, safe='')}/runs/{run.uuid}"
    return {"Location": f"{base}/stream", "Content-Location": base}


async def _create(request: Request) -> QueuedRun:
    """Record and queue the run the request asks for (on a new thread with no thread in
    its path: stateless); return its record."""
    served = served_of(request)
    stateless = "thread_id" not in request.path_params
    payload = await read_json(request)
    name = field_of(payload, "assistant_id", str)
    if name not in served.graphs:
        raise fail(404, f"assistant {name!r} not found; served graphs: {sorted(served.graphs)}")
    app = served.graphs[name]
    fields = run_fields(payload, app)
    thread_id = str(uuid.uuid4()) if stateless else check_id(request.path_params["thread_id"])

    def record() -> QueuedRun:
        if stateless or payload.get("if_not_exists") == "create":
            served.saver.add_thread_info(thread_id, {})
        thread = thread_or_404(served, thread_id)
        if thread.graph not in (None, name):
            msg = f"thread {thread_id!r} belongs to graph {thread.graph!r}, not {name!r}"
            raise fail(422, msg)
        if fields["input"] is None and fields["command"] is None:
            if snapshot_of(served, thread) is None:
                raise fail(422, f"thread {thread_id!r} has no state yet: send an input")
        temporary = stateless and fields["on_completion"] == "delete"
        try:
            return served.start(thread_id, name, fields, temporary=temporary)
        except BusyThreadError as exc:
            raise fail(409, str(exc)) from None

    return await run_in_threadpool(record)


async def _ended(served: Served, run_id: str) -> QueuedRun | None:
    """Wait until the run ended; return its record (``None`` once it was deleted)."""
    while True:
        found = await run_in_threadpool(served.runs.get, run_id)
        if found is None or not found.open:
            return found
        channel = served.hub.channel(run_id)
        if channel is not None and not channel.ended:
            channel.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(channel.changed.wait(), 1.0)
        else:
            await asyncio.sleep(_POLL_S)


def _outcome(served: Served, run_id: str, run: QueuedRun | None, thread_id: str) -> dict[str, Any]:
    """Return what ``runs.wait``/``join`` answer: the final values (with ``__interrupt__``),
    or ``{"__error__": ...}`` for a run that failed."""
    if run is None:  # a stateless run's thread went with it (or is going): its events say
        channel = served.hub.channel(run_id)
        for event, data in reversed(channel.events if channel is not None else []):
            if event == "error":
                return {"__error__": data}
            if event == "values":
                return dict(data)
        return {}
    if run_status(run) == "error":
        return {"__error__": _error_json(run)}
    if served.saver.newest_id(thread_id) is None:
        return {}
    snap = served.graphs.get(run.graph, served.any_app).get_state(thread_id)
    if snap.interrupts:
        return {**snap.values, "__interrupt__": interrupts_json(snap.interrupts)}
    return snap.values


async def create_run(request: Request) -> Response:
    run = await _create(request)
    return JSONText(run_json(run), headers={"Content-Location": _paths(run)["Content-Location"]})


async def wait_run(request: Request) -> Response:
    served = served_of(request)
    run = await _create(request)
    ended = await _ended(served, run.uuid)
    body = await run_in_threadpool(_outcome, served, run.uuid, ended, run.thread_id)
    return JSONText(body, headers=_paths(run))


async def stream_run(request: Request) -> Response:
    served = served_of(request)
    run = await _create(request)
    modes = run.fields["kwargs"]["stream_mode"]
    return _event_stream(served, run, modes, 0, first={"run_id": run.uuid, "attempt": 1})


def _event_stream(
    served: Served, run: QueuedRun, modes: list[str], cursor: int, first: Any = None
) -> StreamingResponse:
    body = _follow(served, run, modes, cursor, first)
    headers = {**_paths(run), "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


def _error_json(run: QueuedRun) -> dict[str, str]:
    """Return a failed run's error as the stream's ``error`` event carries it."""
    kind, _, message = (run.error or "Error: unknown").partition(": ")
    return {"error": kind, "message": message}


def _sse(event: str, data: Any, event_id: int | None = None) -> bytes:
    tail = f"id: {event_id}\n" if event_id is not None else ""
    return f"event: {event}\ndata: {dumps(data)}\n{tail}\n".encode()


def _shown_as(event: str, modes: list[str]) -> list[str]:
    if event == "error":
        return ["error"]
    if event == "events":
        return [m for m in ("events", "debug") if m in modes]
    return [event] if event in modes else []


async def _follow(
    served: Served, run: QueuedRun, modes: list[str], cursor: int, first: Any
) -> AsyncIterator[bytes]:
    """Yield the run's events from ``cursor`` on, until the run ended."""
    if first is not None:
        yield _sse("metadata", first)
    seen = None
    while True:
        channel = served.hub.channel(run.uuid)
        if channel is not None:
            channel.changed.clear()
            while cursor < len(channel.events):
                event, data = channel.events[cursor]
                cursor += 1
                for name in _shown_as(event, modes):
                    yield _sse(name, data, cursor)
            if channel.ended:
                await _ended(served, run.uuid)
                return
            try:
                await asyncio.wait_for(channel.changed.wait(), 1.0)
            except TimeoutError:  # a worker that lost the run leaves its channel open
                found = await run_in_threadpool(served.runs.get, run.uuid)
                if found is None or not found.open:
                    served.hub.end(run.uuid)  # drained on the next pass
            continue
        found = await run_in_threadpool(served.runs.get, run.uuid)
        if found is not None and found.open and found.owner in ("", served.worker_name):
            await asyncio.sleep(_POLL_S)  # not taken yet, or this process's worker opens
            continue  # its channel in a moment
        if found is None:  # deleted: a stateless run's thread goes with it
            return
        # run by a worker elsewhere: values as its checkpoints land
        values, seen = await run_in_threadpool(_new_values, served, run, seen)
        if values is not None and "values" in modes:
            yield _sse("values", values)
        if not found.open:
            if run_status(found) == "error":
                yield _sse("error", _error_json(found))
            return
        await asyncio.sleep(_POLL_S * 2)


def _new_values(
    served: Served, run: QueuedRun, seen: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    app = served.graphs[run.graph]
    newest_id = served.saver.newest_id(run.thread_id)
    if newest_id is None or newest_id == seen:
        return None, seen
    return app.get_state(run.thread_id).values, newest_id


async def join_stream(request: Request) -> Response:
    served = served_of(request)
    run = await _run_or_404(request)
    asked = [m for m in request.query_params.getlist("stream_mode") if m]
    modes = asked or run.fields["kwargs"].get("stream_mode") or ["values"]
    last = request.headers.get("last-event-id") or "0"
    cursor = int(last) if last.isdigit() else 0
    return _event_stream(served, run, modes, cursor)


async def _run_or_404(request: Request) -> QueuedRun:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    run_id = request.path_params["run_id"]
    found = await run_in_threadpool(served.runs.get, run_id)
    if found is None or found.thread_id != thread_id:
        raise fail(404, f"run {run_id!r} of thread {thread_id!r} not found")
    return found


async def get_run(request: Request) -> Response:
    return JSONText(run_json(await _run_or_404(request)))


def list_runs(request: Request) -> Response:
    served = served_of(request)
    thread_id = request.path_params["thread_id"]
    limit = count_of(request.query_params, "limit", 10)
    offset = count_of(request.query_params, "offset", 0)
    status = request.query_params.get("status")
    thread_or_404(served, thread_id)
    runs = [r for r in served.runs.of_thread(thread_id) if status in (None, run_status(r))]
    return JSONText([run_json(r) for r in runs[offset : offset + limit]])


async def join_run(request: Request) -> Response:
    served = served_of(request)
    run = await _run_or_404(request)
    ended = await _ended(served, run.uuid)
    return JSONText(await run_in_threadpool(_outcome, served, run.uuid, ended, run.thread_id))


async def cancel_run(request: Request) -> Response:
    served = served_of(request)
    run = await _run_or_404(request)
    action = request.query_params.get("action") or "interrupt"
    if action != "interrupt":
        raise fail(422, f"cancel action {action!r} is not supported; use 'interrupt'")
    if run.open:
        await run_in_threadpool(served.runs.cancel, run.uuid, action)
    if request.query_params.get("wait") in ("1", "true"):
        await _ended(served, run.uuid)
    return Response(status_code=202)


async def delete_run(request: Request) -> Response:
    served = served_of(request)
    run = await _run_or_404(request)
    if run.open:
        raise fail(409, f"run {run.uuid!r} is {run_status(run)}; cancel it first")
    await run_in_threadpool(served.runs.delete, run.uuid)
    return Response(status_code=204)


routes = [
    Route("/runs", create_run, methods=["POST"]),
    Route("/runs/wait", wait_run, methods=["POST"]),
    Route("/runs/stream", stream_run, methods=["POST"]),
    Route("/threads/{thread_id}/runs", create_run, methods=["POST"]),
    Route("/threads/{thread_id}/runs", list_runs, methods=["GET"]),
    Route("/threads/{thread_id}/runs/wait", wait_run, methods=["POST"]),
    Route("/threads/{thread_id}/runs/stream", stream_run, methods=["POST"]),
    Route("/threads/{thread_id}/runs/{run_id}", get_run, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}", delete_run, methods=["DELETE"]),
    Route("/threads/{thread_id}/runs/{run_id}/join", join_run, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/stream", join_stream, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
]
