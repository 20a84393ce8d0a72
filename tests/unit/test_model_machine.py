"""The engine against the reference model (issue 27): one thread, random operations.

A hypothesis state machine builds a random graph (``refmodel.shapes``) and drives one
thread through random operations on MemorySaver, SqliteSaver and PostgresSaver at once:
a new input, continuing, answering a pause, ``update_state`` with and without
``as_node``, a fork from an earlier checkpoint, a crash inside a node (then continuing),
and a second run started from inside a node while the first is running (it is refused).
Each operation that runs the thread is made through a driver drawn at random: ``invoke``,
``ainvoke``, or ``stream``/``astream`` in values mode iterated to the end. After every
operation each saver's thread must show what the model shows: the operation's error or
its run's steps (a stream: the state after each superstep it merged), the values, the
next nodes, the steps, the guard counts, the pending pauses, every checkpoint of the
history (values and next nodes) and the status.

``CORRAL_MODEL_EXAMPLES=20000`` runs the long mode (docs/guarantees.md); by default a few
examples keep the suite fast.
"""

from __future__ import annotations

import copy
import os
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from postgres_cluster import Cluster
from refmodel.behaviour import Triggers, initial_values
from refmodel.build import build
from refmodel.compare import (
    DRIVERS,
    Driver,
    Streamed,
    drive,
    engine_call,
    engine_seen,
    kept_history,
    model_seen,
    resume_for,
)
from refmodel.interpreter import ModelError
from refmodel.shapes import KNOWN_DEFECTS, GraphShape, describe, graph_shapes
from refmodel.thread import ModelThread, Outcome

from corral import MemorySaver, PostgresSaver, SqliteSaver
from corral.checkpoint.base import Checkpointer
from corral.runtime.app import CompiledGraph

EXAMPLES = int(os.environ.get("CORRAL_MODEL_EXAMPLES", "12"))
STEPS = int(os.environ.get("CORRAL_MODEL_STEPS", "8"))
SHRINK = os.environ.get("CORRAL_MODEL_SHRINK", "1") == "1"
"""``CORRAL_MODEL_SHRINK=0`` reports the first failing example as found (shrinking a
stateful example through three savers can take minutes)."""
SAVERS = os.environ.get("CORRAL_MODEL_SAVERS", "memory,sqlite,postgres").split(",")
"""``CORRAL_MODEL_SAVERS=memory`` drives MemorySaver alone (to shrink a failure faster)."""

crashes = st.one_of(st.none(), st.integers(0, 6))
"""No crash, or a crash after that many node executions of the operation."""

drivers = st.sampled_from(DRIVERS)
"""The call that runs the operation: ``invoke``, ``ainvoke``, ``stream`` or ``astream``."""


class Side:
    """One saver's app and the triggers its nodes consult."""

    def __init__(self, name: str, shape: GraphShape, saver: Checkpointer) -> None:
        self.name = name
        self.triggers = Triggers()
        graph = build(shape, self.triggers)
        self.app: CompiledGraph[Any] = graph.compile(
            checkpointer=saver, interrupt_before=shape.interrupt_before
        )


class ThreadMachine(RuleBasedStateMachine):
    """One thread driven through random operations, on three savers and the model."""

    savers: Callable[[], list[tuple[str, Checkpointer]]]

    def __init__(self) -> None:
        super().__init__()
        self.sides: list[Side] = []
        self.thread = f"t-{uuid.uuid4().hex[:10]}"
        self.ops: list[str] = []
        self.inputs = 0

    @initialize(shape=graph_shapes(), driver=drivers)
    def start(self, shape: GraphShape, driver: Driver) -> None:
        errors = [d for d in build(shape, Triggers()).check() if d.severity == "error"]
        assume(not errors)
        self.shape = shape
        self.model = ModelThread(shape)
        self.triggers = Triggers()
        self.sides = [Side(name, shape, saver) for name, saver in type(self).savers()]
        self.new_input(crash=None, driver=driver)

    # ------------------------------------------------------------------ helpers

    def _apply(
        self,
        label: str,
        model_op: Callable[[], Outcome | None],
        engine_op: Callable[[CompiledGraph[Any], Side], Any],
        crash: int | None = None,
    ) -> None:
        """Run one operation on the model and every side, then compare."""
        self.ops.append(label if crash is None else f"{label} [crash after {crash}]")
        for triggers in [self.triggers, *(s.triggers for s in self.sides)]:
            if crash is not None:
                triggers.arm_crash(crash)
        merged = len(self.model.superstep_values)
        outcome = model_op()
        self.triggers.disarm()
        for side in self.sides:
            result = engine_call(side.app, self.thread, lambda app, side=side: engine_op(app, side))
            side.triggers.disarm()
            self._compare(side, result, outcome, merged)

    def _compare(self, side: Side, result: Any, outcome: Outcome | None, merged: int) -> None:
        """``merged``: the model's merged supersteps before the operation (a stream
        yields the state after each one merged since)."""
        got = engine_seen(side.app, self.thread, result, self.model)
        streamed = isinstance(result, Streamed) and outcome is not None and not outcome.error
        items = self.model.superstep_values[merged:] if streamed else None
        want = model_seen(self.model, outcome, items)
        diffs = got.differences(want)
        if diffs:
            text = "\n".join(diffs)
            raise AssertionError(
                f"{side.name} disagrees with the model\n{describe(self.shape)}\n"
                f"operations: {self.ops}\n{text}"
            )

    def _driven(self, driver: Driver) -> Driver:
        """The driver the engine is given: ``driver``, or its sequential counterpart when
        the model's operation met a superstep whose outcome the contract lets differ under
        concurrency (``ModelThread.counts.order_matters``; noted in the operations)."""
        if driver not in ("ainvoke", "astream") or not self.model.counts.order_matters:
            return driver
        sequential: Driver = "invoke" if driver == "ainvoke" else "stream"
        note = f" [{driver} made {sequential}: concurrent tasks may end otherwise]"
        if not self.ops[-1].endswith(note):
            self.ops[-1] += note
        return sequential

    def _resumable(self) -> bool:
        return any(v is not None for _, v in self.model.view.interrupts)

    # ------------------------------------------------------------------ operations

    @rule(crash=crashes, driver=drivers)
    def new_input(self, crash: int | None, driver: Driver) -> None:
        """``invoke(input, thread_id=T)``: the first input, or a new run on the thread."""
        self.inputs += 1
        value = initial_values() if self.inputs == 1 else {"log": [f"x{self.inputs}"]}
        self._apply(
            f"{driver}({value})",
            lambda: self.model.invoke(value, self.triggers),
            lambda app, side: drive(app, self._driven(driver), value, thread_id=self.thread),
            crash,
        )

    @precondition(lambda self: not self._resumable())
    @rule(crash=crashes, bigger=st.booleans(), driver=drivers)
    def go_on(self, crash: int | None, bigger: bool, driver: Driver) -> None:
        """``invoke(None, thread_id=T)``: continue (after a pause before, a crash, a cap)."""
        cap = self.shape.max_steps + 20 if bigger else None
        self._apply(
            f"{driver}(None, max_steps={cap})",
            lambda: self.model.invoke(None, self.triggers, max_steps=cap),
            lambda app, side: drive(
                app, self._driven(driver), None, thread_id=self.thread, max_steps=cap
            ),
            crash,
        )

    @precondition(lambda self: self._resumable())
    @rule(crash=crashes, bigger=st.booleans(), driver=drivers)
    def answer(self, crash: int | None, bigger: bool, driver: Driver) -> None:
        """``invoke(Resume(...))`` answering every pending ``interrupt()``."""
        self.inputs += 1
        reply = f"a{self.inputs}"
        cap = self.shape.max_steps + 20 if bigger else None
        self._apply(
            f"{driver}(Resume({reply!r}), max_steps={cap})",
            lambda: self.model.invoke(None, self.triggers, answer=reply, max_steps=cap),
            lambda app, side: drive(
                app,
                self._driven(driver),
                resume_for(app, self.thread, reply),
                thread_id=self.thread,
                max_steps=cap,
            ),
            crash,
        )

    @rule(data=st.data(), with_node=st.booleans())
    def update(self, data: st.DataObject, with_node: bool) -> None:
        """``update_state(T, values)``, or ``as_node=`` a node that may take it."""
        self.inputs += 1
        values: dict[str, Any] = {"log": [f"u{self.inputs}"]}
        nodes = [n.name for n in self.shape.nodes if self._may_be_as_node(n.name)]
        as_node = data.draw(st.sampled_from(nodes)) if with_node and nodes else None
        self._apply(
            f"update_state({values}, as_node={as_node!r})",
            lambda: self._model_update(values, as_node),
            lambda app, side: app.update_state(self.thread, values, as_node=as_node),
        )

    def _may_be_as_node(self, name: str) -> bool:
        node = self.shape.node(name)
        return node.kind != "worker"  # a Send worker has no state update to stand in for

    def _model_update(self, values: dict[str, Any], as_node: str | None) -> Outcome | None:
        saved = copy.deepcopy(self.model.__dict__)
        try:
            self.model.update_state(values, as_node)
        except ModelError as err:
            if err.kind not in ("InvalidUpdateError", "GuardExhaustedError"):  # recorded
                self.model.__dict__.update(saved)
            return Outcome(err.kind, self.model.status, {}, [], 0)
        return None

    @rule(data=st.data(), how=st.sampled_from(["update", "continue", "input"]), driver=drivers)
    def fork(self, data: st.DataObject, how: str, driver: Driver) -> None:
        """Time travel: ``update_state(..., checkpoint_id=C)`` or ``invoke(...,
        checkpoint_id=C)`` from an earlier checkpoint."""
        wanted = ("running",) if how == "continue" else ("running", "done")
        kept = self.model.kept
        places = [p for p, i in enumerate(kept) if self.model.history[i].status in wanted]
        assume(places)
        place = data.draw(st.sampled_from(places))
        self.inputs += 1
        value = {"log": [f"f{self.inputs}"]}

        def on_model() -> Outcome | None:
            self.model.fork_from(kept[place])
            if how == "update":
                return self._model_update(value, None)
            return self.model.invoke(value if how == "input" else None, self.triggers)

        def on_engine(app: CompiledGraph[Any], side: Side) -> Any:
            checkpoint = kept_history(app, self.thread)[place].checkpoint_id
            if how == "update":
                return app.update_state(self.thread, value, checkpoint_id=checkpoint)
            given = value if how == "input" else None
            return drive(
                app, self._driven(driver), given, thread_id=self.thread, checkpoint_id=checkpoint
            )

        by = "" if how == "update" else f" by {driver}"
        self._apply(f"fork {how} from checkpoint #{place}{by}", on_model, on_engine)

    @rule(data=st.data(), outer=drivers, inner=drivers)
    def second_run(self, data: st.DataObject, outer: Driver, inner: Driver) -> None:
        """A second run of the thread starts inside a node of a running one: the running
        one holds the thread, so the second is refused (ConcurrentRunError) before it
        stores anything, and the first goes on as if alone (section 14). Each is made
        through a driver of its own; the second from another OS thread when either is
        async (a sync node of an async run runs inside its event loop)."""
        assume(self.model.frame is not None and self.model.status != "done")
        if "refused-run-leaves-input" in KNOWN_DEFECTS:
            # its finished tasks are left too (recorded in a superstep of several tasks)
            assume(len(self.model.frame.tasks) <= 1)
        reply = f"a{self.inputs + 1}" if self._resumable() else None
        alone = copy.deepcopy(self.model)
        counter = Triggers()
        alone.invoke(None, counter, answer=reply)
        assume(counter.executions > 0)
        after = data.draw(st.integers(0, counter.executions - 1))
        self.inputs += 1
        given = "Resume" if reply else None
        self.ops.append(f"second run by {inner} inside execution {after} of {outer}({given})")
        merged = len(self.model.superstep_values)
        outcome = self.model.invoke(None, self.triggers, answer=reply)
        aside = "a" in (outer[0], inner[0])
        for side in self.sides:
            seconds: list[Any] = []

            def second(side: Side = side, seconds: list[Any] = seconds) -> None:
                def call() -> Any:
                    return engine_call(
                        side.app, self.thread, lambda app: self._go_on(app, inner, reply)
                    )

                if not aside:
                    seconds.append(call())
                    return
                with ThreadPoolExecutor(1) as pool:
                    seconds.append(pool.submit(call).result())

            side.triggers.arm_hook(after, second)
            first = engine_call(side.app, self.thread, lambda app: self._go_on(app, outer, reply))
            side.triggers.disarm()
            # first: a first run that ran fewer nodes than the model is the disagreement
            self._compare(side, first, outcome, merged)
            assert seconds, f"{side.name}: the second run never started"
            refused = type(seconds[0]).__name__
            assert refused == "ConcurrentRunError", (
                f"{side.name}: the second run gave {refused}, not ConcurrentRunError\n"
                f"{describe(self.shape)}\noperations: {self.ops}"
            )

    def _go_on(self, app: CompiledGraph[Any], driver: Driver, reply: str | None) -> Any:
        """``invoke(None)``, or ``invoke(Resume(reply))`` when the thread waits for one."""
        given = resume_for(app, self.thread, reply) if reply else None
        return drive(app, self._driven(driver), given, thread_id=self.thread)


def _machine_settings() -> settings:
    return settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=tuple(Phase) if SHRINK else (Phase.explicit, Phase.reuse, Phase.generate),
    )


@pytest.fixture
def savers(tmp_path: Path, postgres_cluster: Cluster) -> Iterator[Callable[[], list[Any]]]:
    sqlite = SqliteSaver(tmp_path / "model.sqlite")
    postgres = PostgresSaver(postgres_cluster.new_database())
    everyone = [("memory", MemorySaver), ("sqlite", lambda: sqlite), ("postgres", lambda: postgres)]
    chosen = [(name, make) for name, make in everyone if name in SAVERS]
    yield lambda: [(name, make()) for name, make in chosen]
    sqlite.close()
    postgres.close()


def test_the_engine_follows_the_model(savers: Callable[[], list[Any]]) -> None:
    """Every operation leaves each saver's thread exactly as the model says."""
    ThreadMachine.savers = staticmethod(savers)  # type: ignore[assignment]
    run_state_machine_as_test(ThreadMachine, settings=_machine_settings())
