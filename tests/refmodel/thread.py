"""The reference model of one thread: inputs, resumes, checkpoints, forks, ``update_state``.

API.md section 7 and docs/persistence.md: a checkpoint is written for a new input and after
every superstep (and at a pause inside one); ``invoke(None)`` continues, ``Resume`` answers,
a new input starts a new run on the saved state with counters from zero; a fork starts from
an older checkpoint and runs its next superstep afresh (section 7a). What the engine shows
of the thread (:class:`View`) is what the tests compare.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from refmodel import behaviour as act
from refmodel.interpreter import (
    REDUCED,
    Counts,
    Done,
    Frame,
    ModelError,
    Task,
    merge_into,
    new_frame,
    note_arrivals,
    pause_before,
    route,
    run_superstep,
)
from refmodel.shapes import GraphShape

FAILURES_WITH_CHECKPOINT = ("GuardExhaustedError", "StuckJoinError", "InvalidUpdateError")
"""Failures after the nodes ran (at the barrier or in routing): concepts.md says the merged
state (for a routing failure) is saved; the thread records the failure in a checkpoint of
status ``"error"``. Other failures (a node error, a cap) write none."""


def is_failure_record(snapshot: Any) -> bool:
    """A checkpoint the loop wrote to record a failure (left out of compared histories:
    which failures write one is the engine's choice, see FAILURES_WITH_CHECKPOINT)."""
    return bool(snapshot.status == "error" and snapshot.source == "loop")


@dataclass
class View:
    """What ``get_state`` shows: one checkpoint's values and the thread's status."""

    values: dict[str, Any]
    next: tuple[str, ...]
    steps: int
    guards: dict[tuple[str, str], int]
    status: str
    interrupts: list[tuple[str, Any]]
    source: str = "loop"
    frame: Frame | None = field(default=None, repr=False)
    counts: Counts | None = field(default=None, repr=False)


@dataclass
class Outcome:
    """What ``invoke`` gave: an error's kind, or the run's status, state and pauses."""

    error: str | None
    status: str
    values: dict[str, Any]
    interrupts: list[tuple[str, Any]]
    steps: int


class ModelThread:
    """One thread of one graph, run by the model."""

    def __init__(self, shape: GraphShape) -> None:
        self.shape = shape
        self.frame: Frame | None = None
        self.counts = Counts(max_steps=shape.max_steps)
        self.history: list[View] = []
        """Every checkpoint in the order written (forks included)."""
        self.status = "new"
        self.error: str | None = None
        self.superstep_values: list[dict[str, Any]] = []
        """The state after each superstep merged, in order: what ``stream(mode="values")``
        yields (concepts.md: after each superstep only, not the input state)."""

    # -------------------------------------------------------------- what is shown

    @property
    def view(self) -> View:
        """The thread as ``get_state`` shows it: the newest checkpoint, the current status."""
        # the checkpoint the thread is at: the newest written, or the one forked from when
        # the fork's run failed before writing one (its failure record holds those values)
        newest = self.base
        # the pauses are the live ones: a run that failed in a superstep where some nodes
        # had paused leaves those pauses waiting for an answer
        # so are the steps: node runs that finished in a failed superstep are saved and count
        return View(
            newest.values,
            newest.next,
            self.counts.steps + self.counts.pending,
            newest.guards,
            self.status,
            self._frame.interrupts,
            newest.source,
        )

    @property
    def shown_steps(self) -> int:
        """Node runs so far: merged, and finished in the current superstep."""
        # a child a failure cut short counts its node runs when it goes on (section 11)
        return self.counts.steps + self.counts.pending - self._cut_short()

    def _cut_short(self) -> int:
        """Node runs of the children a failure cut short (neither finished nor paused)."""
        # the runs of such a child until it last paused were counted at that pause
        children = self._frame.children.values()
        return sum(c.entry_steps - c.paused_steps for c in children if not c.asked)

    @property
    def kept(self) -> list[int]:
        """Indexes of the checkpoints ``history`` lists that a fork may start from."""
        return [i for i, v in enumerate(self.history) if not is_failure_record(v)]

    def _checkpoint(self, source: str, status: str | None = None) -> None:
        frame, counts = self._frame, self.counts
        if status is None:
            status = "running"
            if frame.before or frame.asked:
                status = "interrupted"
            elif not frame.tasks and not frame.reroute:
                status = "done"
        self.status = status
        self.base = View(
            copy.deepcopy(frame.values),
            tuple(t.node for t in frame.tasks),
            counts.steps + counts.pending,
            dict(frame.guards),
            status,
            frame.interrupts,
            source,
            copy.deepcopy(frame),
            copy.deepcopy(counts),
        )
        self.history.append(self.base)

    @property
    def _frame(self) -> Frame:
        assert self.frame is not None
        return self.frame

    def _outcome(self, error: str | None = None) -> Outcome:
        frame = self._frame
        return Outcome(
            error, self.status, copy.deepcopy(frame.values), frame.interrupts, self.shown_steps
        )

    # -------------------------------------------------------------- operations

    def fork_from(self, index: int) -> None:
        """Make checkpoint ``index`` the base: its next superstep runs afresh (section 7a)."""
        view = self.history[index]
        assert view.frame is not None and view.counts is not None
        self.base = view
        frame = copy.deepcopy(view.frame)
        frame.done, frame.children, frame.answers = {}, {}, {}
        self.frame, self.counts = frame, copy.deepcopy(view.counts)
        self.counts.pending = self.counts.holds = 0
        self.status = view.status

    def invoke(
        self,
        value: dict[str, Any] | None,
        triggers: act.Triggers,
        *,
        answer: str | None = None,
        max_steps: int | None = None,
    ) -> Outcome:
        """``invoke(value)``, ``invoke(None)`` or ``invoke(Resume(answer))``."""
        if value is not None:
            self._new_run(value)
        elif self.frame is None:
            raise AssertionError("invoke(None) on a new thread")
        elif answer is not None:
            frame = self._frame
            frame.answers = {index: answer for index in frame.asked}
            frame.answered, frame.asked = frame.asked, {}
        else:
            frame = self._frame
            if frame.before:
                frame.before, frame.passed_before = [], True
            if self.status == "done":
                return self._outcome()
        self.counts.max_steps = max_steps or self.shape.max_steps
        self.counts.order_matters = False
        try:
            self._drive(triggers)
        except ModelError as err:
            self.status, self.error = "error", err.kind
            if err.kind in FAILURES_WITH_CHECKPOINT:
                self._checkpoint("loop", "error")
            return self._outcome(err.kind)
        return self._outcome()

    def _new_run(self, value: dict[str, Any]) -> None:
        """A new input: merged into the saved state; counters from zero (section 7)."""
        values = self.frame.values if self.frame is not None else {"log": [], "msgs": []}
        self.frame = new_frame(self.shape, "", merge_into(values, value))
        self.counts = Counts(max_steps=self.shape.max_steps)
        pause_before(self.frame)
        self._checkpoint("input")

    def _drive(self, triggers: act.Triggers) -> None:
        frame = self._frame
        while True:
            if frame.reroute:
                # a superstep whose routes failed ends here: a values stream shows it now
                route(frame, frame.reroute, frame.gotos)
                self.superstep_values.append(copy.deepcopy(frame.values))
                pause_before(frame)
                self._checkpoint("loop")
            if not frame.tasks and frame.held:
                # an update's routes left a join held with nothing to run (they stay taken)
                raise ModelError("StuckJoinError", frame.prefix + sorted(frame.held)[0])
            if not frame.tasks or frame.before:
                return
            merged = run_superstep(frame, self.counts, triggers)
            if merged:
                self.superstep_values.append(copy.deepcopy(frame.values))
                pause_before(frame)
            self._checkpoint("loop")
            if not merged:
                return

    def update_state(self, values: dict[str, Any], as_node: str | None = None) -> None:
        """``update_state``: merge ``values``; with ``as_node`` as a run of that node (7a)."""
        if as_node is not None:
            self._run_as(values, as_node)
            return
        frame = self._frame
        frame.values = merge_into(frame.values, values)
        # the nodes that had finished run again on the new state (their runs stay counted);
        # a subgraph entry's child is a thread of its own, which an update of the parent
        # does not fork: paused, finished (its writes read back) or cut short by a failure
        # (it goes on), it is found where it stopped (docs/persistence.md)
        frame.done = {i: d for i, d in frame.done.items() if self._is_entry(frame.tasks[i])}
        # an update is not a run: a thread whose last run failed still shows "error"
        self._checkpoint("update", "error" if self.status == "error" else None)

    def _is_entry(self, task: Task) -> bool:
        return self.shape.node(task.node).kind == "sub"

    def _forget_unfinished(self) -> None:
        self.counts.steps += self.counts.pending - self._cut_short()
        self.counts.pending = 0
        self._frame.children = {}

    def _run_as(self, values: dict[str, Any], as_node: str) -> None:
        """persistence.md "Decisions": ``as_node=X`` closes the pending superstep as if X had
        run in it and returned ``values``: it counts one run of X (never refused by a cap);
        the tasks that had finished are merged with it; X's routes are taken (a Command node
        returning a plain dict ends its branch); the tasks that had not run wait for the
        next superstep, where a pending ``interrupt()`` asks again."""
        frame, counts = self._frame, self.counts
        rerouted, regotos = list(frame.reroute), list(frame.gotos)
        tasks = [] if rerouted else list(frame.tasks)
        # a finished subgraph entry waits too: the next superstep runs its child afresh
        done = {} if rerouted else dict(frame.done)
        done = {i: d for i, d in done.items() if not self._is_entry(tasks[i])}
        mine = [i for i, t in enumerate(tasks) if t.node == as_node]
        at = next((i for i in mine if i not in done), mine[0] if mine else None)
        if at is None:  # X has no task here: one of its own is added
            at = len(tasks)
            tasks.append(Task(as_node))
        # X's finished task (if it had only that) is replaced: the update is what X returned
        waiting = tuple(t for i, t in enumerate(tasks) if i != at and i not in done)
        done[at] = Done([values])
        ran = sorted(done)
        if _conflict([done[i] for i in ran]):
            # the barrier refuses it as it would a run of X (section 3): the failure is
            # recorded with X's task and its update among the superstep's finished ones
            frame.tasks, frame.done = tasks, done
            frame.runs[as_node] += 1
            counts.pending += 1
            # the paused tasks wait all the same: their interrupt() asks again when run
            frame.asked, counts.holds = {}, 0
            self.status, self.error = "error", "InvalidUpdateError"
            self._checkpoint("loop", "error")
            raise ModelError("InvalidUpdateError", as_node)
        merged = frame.values
        for index in ran:
            for update in done[index].updates:
                merged = merge_into(merged, update)
        self._forget_unfinished()
        counts.steps += 1
        counts.holds = 0
        frame.runs[as_node] += 1
        frame.values, frame.done, frame.answers = merged, {}, {}
        frame.asked, frame.before, frame.passed_before = {}, [], False
        ran_tasks = [tasks[i] for i in ran]
        note_arrivals(frame, [t.node for t in ran_tasks])
        gotos = [*regotos, *(done[i].goto for i in ran)]
        try:
            route(frame, [*rerouted, *ran_tasks], gotos, waiting, update=True)
        except ModelError as err:
            if err.kind == "GuardExhaustedError":
                # recorded as a run's routing failure: the merged update is kept, and a
                # continue routes again
                self.status, self.error = "error", err.kind
                self._checkpoint("loop", "error")
                raise
            # an update is not a run and raises nothing, but the thread it leaves is the
            # one a run of X would leave: a join held with nothing else to run (concepts.md);
            # its routes stay taken, and a later update does not decide them again
            self.error = err.kind
            self._checkpoint("update", "error")
            return
        pause_before(frame)
        self._checkpoint("update")


def _conflict(finished: list[Done]) -> bool:
    """Whether two finished tasks write one key that has no reducer (section 3)."""
    writer: dict[str, int] = {}
    for index, done in enumerate(finished):
        for update in done.updates:
            for key in update:
                if key not in REDUCED and writer.setdefault(key, index) != index:
                    return True
    return False
