"""The JSON the API answers with, in the shapes the LangGraph server gives them.

Assistants, threads, thread states and runs as the LangGraph SDK reads them (the keys and
types were compared with LangGraph's own server: ``tests/integration/test_serve_compare.py``).
A state's ``tasks`` are its next nodes, each with the interrupts it waits on.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from corral.checkpoint import ThreadInfo
from corral.runtime.events import Event, Interrupt, StateSnapshot
from corral.workers.queue import QueuedRun

__all__ = [
    "assistant_json",
    "event_json",
    "interrupts_json",
    "iso",
    "run_json",
    "run_status",
    "state_json",
    "thread_json",
    "thread_status",
]

_STARTED = datetime.now(UTC).isoformat()

_STATUS = {"queued": "pending", "running": "running", "done": "success"}
_STATUS.update({"interrupted": "success", "failed": "error"})
"""Queue status -> run status. As on LangGraph's server, a run that paused for a person
ended well (``success``; its thread is ``interrupted``); a cancelled run is ``interrupted``."""


def run_status(run: QueuedRun) -> str:
    """Return the run's status as the LangGraph server names it."""
    status = _STATUS.get(run.status, "pending")
    return "interrupted" if status == "error" and run.cancel else status


def iso(seconds: float) -> str:
    """Return a Unix time as ISO 8601 text with its UTC offset."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def assistant_json(name: str) -> dict[str, Any]:
    """Return the one assistant of a served graph: its id and graph id are the graph's name."""
    return {
        "assistant_id": name,
        "graph_id": name,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "name": name,
        "created_at": _STARTED,
        "updated_at": _STARTED,
        "version": 1,
        "description": None,
    }


def interrupts_json(interrupts: tuple[Interrupt, ...]) -> list[dict[str, Any]]:
    """Return interrupts as ``[{"value", "id"}]``."""
    return [{"value": item.value, "id": item.id} for item in interrupts]


def thread_status(snapshot: StateSnapshot | None, last_run: str | None) -> str:
    """Return ``busy`` while a run is in flight, else ``interrupted``, ``error`` or ``idle``.

    ``last_run`` is the status of the thread's newest run (``None`` before its first).
    """
    if last_run in ("pending", "running"):
        return "busy"
    if last_run == "error":
        return "error"
    if snapshot is not None and snapshot.status in ("interrupted", "error"):
        return snapshot.status
    return "idle"


def thread_json(
    record: ThreadInfo, snapshot: StateSnapshot | None, last_run: str | None
) -> dict[str, Any]:
    """Return a thread with its status, last values and pending interrupts by task."""
    tasks = _tasks(snapshot) if snapshot is not None else []
    pending = {task["id"]: task["interrupts"] for task in tasks if task["interrupts"]}
    error = getattr(snapshot, "error", None)
    shown = {
        "thread_id": record.thread_id,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "state_updated_at": iso(record.updated_at),
        "metadata": record.metadata,
        "status": thread_status(snapshot, last_run),
        "config": {},
        "values": snapshot.values if snapshot is not None else None,
    }
    if snapshot is not None or last_run is not None:  # as LangGraph: a new thread has neither
        shown["error"] = str(error) if error else None
        shown["interrupts"] = pending
    return shown


def _checkpoint(thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {"checkpoint_id": checkpoint_id, "thread_id": thread_id, "checkpoint_ns": ""}


def _tasks(snapshot: StateSnapshot) -> list[dict[str, Any]]:
    names = dict.fromkeys([*snapshot.next, *(item.node for item in snapshot.interrupts)])
    return [
        {
            "id": f"{snapshot.checkpoint_id}:{name}",
            "name": name,
            "path": ["__pregel_pull", name],
            "error": None,
            "interrupts": interrupts_json(tuple(i for i in snapshot.interrupts if i.node == name)),
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for name in names
    ]


def state_json(thread_id: str, snapshot: StateSnapshot) -> dict[str, Any]:
    """Return a thread state (``get_state``, an item of ``get_history``)."""
    return {
        "values": snapshot.values,
        "next": list(snapshot.next),
        "tasks": _tasks(snapshot),
        "metadata": {
            "source": snapshot.source,
            "step": snapshot.supersteps,
            "corral": {
                "steps": snapshot.steps,
                "status": snapshot.status,
                "guards": [[s, t, n] for (s, t), n in sorted(snapshot.guards.items())],
            },
        },
        "created_at": None,
        "checkpoint": _checkpoint(thread_id, snapshot.checkpoint_id),
        "parent_checkpoint": _checkpoint(thread_id, snapshot.parent_id),
        "interrupts": interrupts_json(snapshot.interrupts),
        "checkpoint_id": snapshot.checkpoint_id,
        "parent_checkpoint_id": snapshot.parent_id,
    }


def run_json(run: QueuedRun) -> dict[str, Any]:
    """Return a run."""
    kwargs = run.fields.get("kwargs", {})
    return {
        "run_id": run.uuid,
        "thread_id": run.thread_id,
        "assistant_id": run.graph,
        "metadata": run.fields.get("metadata", {}),
        "status": run_status(run),
        "kwargs": kwargs,
        "multitask_strategy": kwargs.get("multitask_strategy", "enqueue"),
        "created_at": iso(run.created_at),
        "updated_at": iso(run.created_at),
    }


def event_json(event: Event) -> dict[str, Any]:
    """Return one of corral's event records (section 6) as ``{"type": ..., fields...}``."""
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    if "interrupts" in fields:
        fields["interrupts"] = interrupts_json(fields["interrupts"])
    return {"type": type(event).__name__, **fields}
