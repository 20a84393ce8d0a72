"""Reading requests: the JSON body, the run fields corral uses, errors as ``{"detail"}``.

A field the LangGraph SDK sends and corral does not use (``config``, ``context``,
``webhook``, ``durability``...) is accepted and ignored (``docs/serve.md`` lists them);
a field corral uses with a value it cannot honour is a 422 naming the field and value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from corral.cost import FIELDS, Budget
from corral.errors import CorralError
from corral.runtime.app import CompiledGraph

__all__ = [
    "STREAM_MODES",
    "JSONText",
    "checkpoint_of",
    "count_of",
    "fail",
    "field_of",
    "metadata_of",
    "read_json",
    "run_fields",
]

STREAM_MODES = ("values", "updates", "custom", "events", "debug")
"""The stream modes corral serves (LangChain's ``messages`` modes are not served)."""

STRATEGIES = ("enqueue", "reject")

T = TypeVar("T")
_KINDS: dict[type, str] = {str: "a string", dict: "a JSON object", list: "a list"}


class JSONText(Response):
    """A JSON response that writes any value JSON cannot hold as its ``str()``."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content).encode()


def dumps(value: Any) -> str:
    """Return compact JSON (non-ASCII kept; a value JSON cannot hold becomes its text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def fail(status: int, message: str) -> HTTPException:
    """Return the error to raise for a ``{"detail": message}`` answer."""
    return HTTPException(status_code=status, detail=message)


def field_of(payload: Mapping[str, Any], field: str, kind: type[T]) -> T | None:
    """Return the request field ``field``: ``None`` when not sent, else a ``kind`` (422
    naming the field and its value when it is something else)."""
    value = payload.get(field)
    if value is None or isinstance(value, kind):
        return value
    raise fail(422, f"{field} must be {_KINDS[kind]}, not {value!r}")


def count_of(payload: Mapping[str, Any], field: str, default: int) -> int:
    """Return the request field ``field`` (a ``limit`` or ``offset``) as a whole number of
    0 or more: a JSON integer in a body, digits in a query string; ``default`` when not
    sent (422 naming the field and its value when it is anything else)."""
    value = payload.get(field)
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise fail(422, f"{field} must be a whole number of 0 or more, not {value!r}")


async def read_json(request: Request) -> dict[str, Any]:
    """Return the request's JSON object (``{}`` for an empty body).

    Raises:
        HTTPException: 422 when the body is not a JSON object.
    """
    body = await request.body()
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise fail(422, f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise fail(422, f"the request body must be a JSON object, not {type(value).__name__}")
    return value


def _nodes(payload: dict[str, Any], field: str, app: CompiledGraph[Any]) -> list[str] | str | None:
    """Return the run field ``interrupt_before`` or ``interrupt_after``: nodes of the graph,
    ``"*"`` (every node) or ``None``."""
    value = payload.get(field)
    if value is None or value == "*":
        return value
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
        raise fail(422, f"{field} must be a list of node names or '*', not {value!r}")
    for name in names:
        if app.spec.node(name) is None:
            raise fail(422, f"{field} names {name!r}, which is not a node of the graph")
    return names


def _input(value: Any, app: CompiledGraph[Any]) -> dict[str, Any] | None:
    """Return the run's input: ``None`` or an object whose keys are the state's."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(422, f"input must be a JSON object of state keys, not {value!r}")
    keys = [key.name for key in app.spec.keys]
    unknown = sorted(set(value) - set(keys))
    if unknown:
        msg = f"input key {unknown[0]!r} is not a key of the state; the keys are {keys}"
        raise fail(422, msg)
    return value


def checkpoint_of(payload: dict[str, Any]) -> str | None:
    """Return the checkpoint a run or an update starts from (``checkpoint_id`` or
    ``checkpoint``)."""
    checkpoint = payload.get("checkpoint") or {}
    found = payload.get("checkpoint_id") or (
        checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None
    )
    if found is not None and not isinstance(found, str):
        raise fail(422, f"checkpoint_id must be a string, not {found!r}")
    return found


def run_fields(payload: dict[str, Any], app: CompiledGraph[Any]) -> dict[str, Any]:
    """Return the run fields corral uses, checked against the graph (422 when one is wrong)."""
    value = _input(payload.get("input"), app)
    command = payload.get("command")
    if command is not None:
        if not isinstance(command, dict) or not set(command) <= {"resume", "update", "goto"}:
            msg = f"command must be an object with resume, update and/or goto, not {command!r}"
            raise fail(422, msg)
        if value is not None:
            raise fail(422, "send input or command, not both")
    modes = payload.get("stream_mode") or ["values"]
    modes = [modes] if isinstance(modes, str) else modes
    if not isinstance(modes, list):
        raise fail(422, f"stream_mode must be a mode or a list of modes, not {modes!r}")
    for mode in modes:
        if mode not in STREAM_MODES:
            msg = f"stream_mode {mode!r} is not served; use any of {list(STREAM_MODES)}"
            raise fail(422, msg)
    strategy = payload.get("multitask_strategy") or "enqueue"
    if strategy not in STRATEGIES:
        msg = f"multitask_strategy {strategy!r} is not supported; use 'enqueue' or 'reject'"
        raise fail(422, msg)
    on_completion = payload.get("on_completion") or "delete"
    if on_completion not in ("delete", "keep"):
        raise fail(422, f"on_completion must be 'delete' or 'keep', not {on_completion!r}")
    return {
        "input": value,
        "command": command,
        "checkpoint_id": checkpoint_of(payload),
        "stream_mode": list(modes),
        "interrupt_before": _nodes(payload, "interrupt_before", app),
        "interrupt_after": _nodes(payload, "interrupt_after", app),
        "metadata": metadata_of(payload),
        "multitask_strategy": strategy,
        "on_completion": on_completion,
        "budget": _budget(payload.get("budget")),
    }


def metadata_of(payload: dict[str, Any]) -> dict[str, Any]:
    """Return the request's ``metadata`` (``{}`` when it has none; 422 when not an object)."""
    return field_of(payload, "metadata", dict) or {}


def _budget(value: Any) -> dict[str, Any] | None:
    """Return the run field ``budget`` as the queue keeps it (422 when malformed)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not set(value) <= set(FIELDS):
        msg = f'budget must be an object of calls, tokens and usd ({{"usd": "0.5"}}), not {value!r}'
        raise fail(422, msg)
    try:
        return Budget(**value).to_json()
    except CorralError as exc:
        raise fail(422, f"budget {value!r}: {exc}") from None
