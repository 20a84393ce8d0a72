"""Compare what the engine shows of a thread with what the model says it should show."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from corral import Resume
from corral.errors import CorralError
from corral.runtime.app import CompiledGraph
from refmodel.thread import FAILURES_WITH_CHECKPOINT, ModelThread, Outcome, is_failure_record


@dataclass
class Seen:
    """One side's answer to one operation, reduced to what the contract fixes."""

    error: str | None
    run_steps: int | None
    values: dict[str, Any]
    next: tuple[str, ...]
    steps: int | None
    guards: dict[tuple[str, str], int]
    interrupts: list[tuple[str, Any]]
    history: list[tuple[dict[str, Any], tuple[str, ...]]]
    """Every checkpoint but the failure records, oldest first: values and next nodes."""
    status: str | None
    items: list[dict[str, Any]] | None = None
    """What ``stream``/``astream`` (values mode) yielded, when one drove the operation."""

    def differences(self, other: Seen) -> list[str]:
        """The fields that differ, each as ``name: engine ... model ...``."""
        out = []
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                out.append(f"{name}:\n    engine {mine!r}\n    model  {theirs!r}")
        return out


def _unsure(model: ModelThread) -> bool:
    """After a failure that writes no checkpoint, the contract fixes the status ("error")
    but not the snapshot's step count or which pauses it still lists (the engine may show
    a pause the failed run had answered). The next operation compares them again."""
    return model.status == "error" and model.error not in FAILURES_WITH_CHECKPOINT


def model_seen(
    model: ModelThread, outcome: Outcome | None, items: list[dict[str, Any]] | None = None
) -> Seen:
    """What the model says the engine must show after an operation; ``items``, what the
    model says a values stream yields (None when no stream drove it, or it failed)."""
    view = model.view
    unsure = _unsure(model)
    gave_run = outcome is not None and outcome.error is None and items is None
    return Seen(
        error=outcome.error if outcome else None,
        run_steps=outcome.steps if gave_run and outcome else None,
        values=view.values,
        next=view.next,
        steps=None if unsure else view.steps,
        guards=view.guards,
        interrupts=[] if unsure else sorted(view.interrupts),
        history=[(model.history[i].values, model.history[i].next) for i in model.kept],
        status=view.status,
        items=items,
    )


def engine_seen(app: CompiledGraph[Any], thread: str, result: Any, model: ModelThread) -> Seen:
    """What the engine shows; ``result`` is the ``Run`` or the exception of the operation."""
    snap = app.get_state(thread)
    unsure = _unsure(model)
    error = type(result).__name__ if isinstance(result, BaseException) else None
    run_steps = getattr(result, "steps", None) if error is None else None
    pauses = sorted((i.node, i.value) for i in snap.interrupts)
    return Seen(
        error=error,
        run_steps=run_steps,
        values=dict(snap.values),
        next=tuple(snap.next),
        steps=None if unsure else snap.steps,
        guards=dict(snap.guards),
        interrupts=[] if unsure else pauses,
        history=[(dict(h.values), tuple(h.next)) for h in kept_history(app, thread)],
        status=snap.status,
        items=result.items if isinstance(result, Streamed) else None,
    )


def kept_history(app: CompiledGraph[Any], thread: str) -> list[Any]:
    """The thread's checkpoints oldest first, leaving out the loop's failure records."""
    return [h for h in reversed(app.history(thread)) if not is_failure_record(h)]


def engine_call(app: CompiledGraph[Any], thread: str, call: Any) -> Any:
    """Run ``call(app)``; return its result, or the ``CorralError`` it raised."""
    try:
        return call(app)
    except CorralError as err:
        return err


Driver = Literal["invoke", "ainvoke", "stream", "astream"]
DRIVERS: tuple[Driver, ...] = ("invoke", "ainvoke", "stream", "astream")
"""The calls that run a thread; each operation that runs one is made through one of them."""


@dataclass
class Streamed:
    """What a ``stream``/``astream`` call in values mode yielded, iterated to its end."""

    items: list[dict[str, Any]]


def drive(app: CompiledGraph[Any], driver: Driver, given: Any, **options: Any) -> Any:
    """Run ``given`` on ``app`` through ``driver``: the ``Run``, or the values
    :class:`Streamed` (``ainvoke``/``astream`` each in an event loop of their own)."""
    if driver == "invoke":
        return app.invoke(given, **options)
    if driver == "ainvoke":
        return asyncio.run(app.ainvoke(given, **options))
    if driver == "stream":
        return Streamed([dict(item) for item in app.stream(given, mode="values", **options)])

    async def drained() -> list[dict[str, Any]]:
        return [dict(item) async for item in app.astream(given, mode="values", **options)]

    return Streamed(asyncio.run(drained()))


def resume_for(app: CompiledGraph[Any], thread: str, answer: str) -> Resume[Any]:
    """``Resume`` answering every pending ``interrupt()`` of the thread with ``answer``."""
    ids = [i.id for i in app.get_state(thread).interrupts if i.value is not None]
    return Resume(answer) if len(ids) == 1 else Resume(dict.fromkeys(ids, answer))
