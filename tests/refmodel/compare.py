"""Compare what the engine shows of a thread with what the model says it should show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def model_seen(model: ModelThread, outcome: Outcome | None) -> Seen:
    """What the model says the engine must show after an operation."""
    view = model.view
    unsure = _unsure(model)
    return Seen(
        error=outcome.error if outcome else None,
        run_steps=outcome.steps if outcome and outcome.error is None else None,
        values=view.values,
        next=view.next,
        steps=None if unsure else view.steps,
        guards=view.guards,
        interrupts=[] if unsure else sorted(view.interrupts),
        history=[(model.history[i].values, model.history[i].next) for i in model.kept],
        status=view.status,
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


def resume_for(app: CompiledGraph[Any], thread: str, answer: str) -> Resume[Any]:
    """``Resume`` answering every pending ``interrupt()`` of the thread with ``answer``."""
    ids = [i.id for i in app.get_state(thread).interrupts if i.value is not None]
    return Resume(answer) if len(ids) == 1 else Resume(dict.fromkeys(ids, answer))
