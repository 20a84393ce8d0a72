"""The reference model against real processes: a run killed with SIGKILL, and workers.

- A child process runs a random graph on a SQLite file through ``invoke`` or ``stream``
  and kills itself (SIGKILL, no cleanup) after a random number of node executions; this
  process then continues the thread to its end, each continuation through a drawn driver
  (``invoke``, ``ainvoke``, ``stream``, ``astream``). After the kill and after every
  continuation the thread must show what the model shows (the model reads a kill as a
  crash inside that node), and a stream must yield the states the model merged. The child
  runs sequentially: under ``ainvoke`` which siblings finished before the kill is timing.
- The same graphs run by ``app.submit`` and a ``Worker``: each queued input, answer or
  continuation leaves the thread as the model says.

``CORRAL_MODEL_EXAMPLES`` scales the example counts (docs/guarantees.md).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from refmodel.behaviour import Triggers, initial_values
from refmodel.build import build
from refmodel.compare import (
    DRIVERS,
    Driver,
    Streamed,
    drive,
    engine_call,
    engine_seen,
    model_seen,
    resume_for,
)
from refmodel.shapes import GraphShape, describe, graph_shapes
from refmodel.thread import ModelThread, Outcome

from corral import SqliteSaver
from corral.errors import RunFailedError
from corral.runtime.app import CompiledGraph
from corral.workers import Worker

SCALE = int(os.environ.get("CORRAL_MODEL_EXAMPLES", "0"))
TESTS = str(Path(__file__).resolve().parents[1])

CHILD = """
import pickle, sys
sys.path.insert(0, sys.argv[4])
from corral import SqliteSaver
from refmodel.behaviour import Triggers, initial_values
from refmodel.build import build
shape = pickle.loads(open(sys.argv[2], "rb").read())
triggers = Triggers()
triggers.arm_crash(int(sys.argv[3]), kill=True)
app = build(shape, triggers).compile(
    checkpointer=SqliteSaver(sys.argv[1]), interrupt_before=shape.interrupt_before
)
try:
    if sys.argv[5] == "stream":
        for _ in app.stream(initial_values(), thread_id="t", mode="values"):
            pass
    else:
        app.invoke(initial_values(), thread_id="t")
except Exception:
    pass
"""


def _compile(shape: GraphShape, saver: Any) -> CompiledGraph[Any]:
    return build(shape, Triggers()).compile(
        checkpointer=saver, interrupt_before=shape.interrupt_before
    )


def _check(
    app: CompiledGraph[Any],
    model: ModelThread,
    result: Any,
    outcome: Any,
    what: str,
    merged: int | None = None,
) -> None:
    """``merged``: the model's merged supersteps before the operation, when it ran."""
    streamed = isinstance(result, Streamed) and outcome is not None and not outcome.error
    items = model.superstep_values[merged:] if streamed and merged is not None else None
    got, want = engine_seen(app, "t", result, model), model_seen(model, outcome, items)
    diffs = got.differences(want)
    assert not diffs, f"{what}\n{describe(model.shape)}\n" + "\n".join(diffs)


def _next_call(model: ModelThread, step: int) -> tuple[Any, str | None]:
    """What continues the thread: an answer to its pauses, or None."""
    if any(value is not None for _, value in model.view.interrupts):
        return "answer", f"a{step}"
    return None, None


def _driven(model: ModelThread, driver: Driver) -> Driver:
    """``driver``, or its sequential counterpart when the model's last operation met a
    superstep whose outcome concurrency may change (as in test_model_machine)."""
    if driver in ("ainvoke", "astream") and model.counts.order_matters:
        return "invoke" if driver == "ainvoke" else "stream"
    return driver


@settings(
    max_examples=max(4, SCALE // 50),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    shape=graph_shapes(max_blocks=4),
    after=st.integers(0, 8),
    first=st.sampled_from(("invoke", "stream")),
    drivers=st.lists(st.sampled_from(DRIVERS), min_size=6, max_size=6),
)
def test_a_run_killed_with_sigkill_continues_as_the_model_says(
    tmp_path_factory: Any, shape: GraphShape, after: int, first: str, drivers: list[Driver]
) -> None:
    assume(not [d for d in build(shape, Triggers()).check() if d.severity == "error"])
    folder = tmp_path_factory.mktemp("kill")
    db, shape_file = folder / "run.sqlite", folder / "shape.pickle"
    shape_file.write_bytes(pickle.dumps(shape))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(shape_file), str(after), TESTS, first],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert child.returncode in (0, -signal.SIGKILL), child.stderr.decode()
    model = ModelThread(shape)
    triggers = Triggers()
    triggers.arm_crash(after)
    outcome = model.invoke(initial_values(), triggers)
    killed = child.returncode == -signal.SIGKILL
    assert killed == (outcome.error == "NodeError" and triggers.crash_after is None)
    if killed:
        # nothing recorded the kill: the thread is mid-run, and a pause met in the killed
        # superstep was never saved (its node asks again when the superstep runs again)
        assert model.frame is not None
        model.status, outcome = "running", None
        model.counts.holds -= len(model.frame.asked)
        model.frame.asked = {}
    with SqliteSaver(db) as saver:
        app = _compile(shape, saver)
        _check(app, model, None, None, f"after the kill (after {after} executions)")
        for step in range(6):
            if model.status == "done":
                break
            kind, reply = _next_call(model, step)
            merged = len(model.superstep_values)
            outcome = model.invoke(None, Triggers(), answer=reply, max_steps=100)
            given = resume_for(app, "t", reply) if reply else None
            driver = _driven(model, drivers[step])
            result = engine_call(
                app,
                "t",
                lambda a, given=given, driver=driver: drive(
                    a, driver, given, thread_id="t", max_steps=100
                ),
            )
            what = f"continuing ({kind}) #{step} by {driver}, the child by {first}"
            _check(app, model, result, outcome, what, merged)


def _failed_kind(err: RunFailedError) -> str:
    """The error class a worker's one-line account names (``NodeError: node ...``)."""
    return str(err.error).split(":", 1)[0]


@settings(
    max_examples=max(4, SCALE // 50),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(shape=graph_shapes(max_blocks=4))
def test_workers_run_queued_inputs_as_the_model_says(tmp_path_factory: Any, shape: GraphShape):
    assume(not [d for d in build(shape, Triggers()).check() if d.severity == "error"])
    db = tmp_path_factory.mktemp("workers") / "queue.sqlite"
    model = ModelThread(shape)
    with SqliteSaver(db) as saver:
        app = _compile(shape, saver)
        calls: list[Any] = [initial_values()]
        for step in range(5):
            given = calls[-1]
            if given == "answer":
                reply = f"a{step}"
                outcome: Outcome = model.invoke(None, Triggers(), answer=reply)
                given = resume_for(app, "t", reply)
            else:
                outcome = model.invoke(given, Triggers())
            app.submit(given, thread_id="t")
            Worker(app, concurrency=1, poll_s=0.01, log=None).run(until_idle=True)
            try:
                result: Any = app.wait("t", timeout=60)
            except RunFailedError as err:
                result = err
                if outcome.error is not None and _failed_kind(err) == outcome.error:
                    result = None  # the same failure, named in the worker's account
                    outcome = Outcome(None, "", {}, [], 0)
            got = engine_seen(app, "t", result, model)
            want = model_seen(model, outcome)
            if result is None:
                got.run_steps = want.run_steps = None
            diffs = got.differences(want)
            assert not diffs, f"worker step {step}\n{describe(shape)}\n" + "\n".join(diffs)
            if model.status == "done":
                calls.append({"log": [f"x{step}"]})
            else:
                calls.append(_next_call(model, step)[0])
