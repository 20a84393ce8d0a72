"""What a subgraph entry is to its parent's run: counted, merged and paused like a node run.

A subgraph node is a node whose run is delegated: the drivers run its child
(:mod:`corral.runtime.child_graph`) to its end or next pause and hand the core a
:class:`ChildWrites`. The core accepts it with :func:`accept_child` (the child's node runs
are the parent's steps; the entry is one run of the subgraph node) and merges its writes
in the task's place. A finished entry of a superstep cut short stays
counted; it is saved with its count, not its writes, which a resumed run reads back from
its child's thread (:func:`read_back`). A child's pending pauses, all of them, surface as
pauses of the subgraph task (:class:`ChildPause`), named by path; the answer to each goes
back to the child as ``{child interrupt id: value}`` (:func:`answer_for`).

This module decides, like :mod:`corral.runtime.superstep`: it runs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from corral.runtime.child_steps import StepPool
from corral.runtime.events import Interrupt
from corral.runtime.interrupts import UnansweredInterrupt
from corral.runtime.run_state import Call, Pause, RunState
from corral.runtime.tables import Node

__all__ = [
    "ChildPause",
    "ChildWrites",
    "Trace",
    "accept_child",
    "answer_for",
    "number_entries",
    "read_back",
]

Trace = Sequence[tuple[Any, ...]]
"""The records of ``run.trace``: step, node, update, seconds, attempt, error."""


class ChildWrites(dict[str, Any]):
    """What one entry into a subgraph gave its parent, as the subgraph task's update at the
    barrier: no update of its own, the child's writes."""

    __slots__ = ("pairs", "steps", "trace")

    def __init__(self, pairs: list[tuple[str, dict[str, Any]]], steps: int, trace: Trace) -> None:
        self.pairs = pairs
        """The child's writes, ``(path, update)``, to merge in order."""
        self.steps = steps
        """Node runs the child took in this call (toward the top-level ``max_steps``)."""
        self.trace = trace
        """The child's node runs of this call (named by path, numbered run-wide)."""


class ChildPause(UnansweredInterrupt):
    """The pauses inside a subgraph's child, surfaced as pauses of the subgraph task."""

    def __init__(self, interrupts: tuple[Interrupt, ...], index: int, steps: int, trace: Trace):
        """``interrupts``: the child's pending pauses, named by path; ``steps`` and
        ``trace``: its node runs of this call (see :class:`ChildWrites`)."""
        super().__init__(interrupts[0].value, index)
        self.interrupts = interrupts
        self.steps = steps
        self.trace = trace

    def count(self, rs: RunState) -> None:
        """Count the child's node runs of this call in the parent's steps and trace: a
        paused run's ``run.steps`` includes every node run so far, the child's too (on
        resume the child counts only its new runs)."""
        rs.steps += self.steps
        rs.trace.extend(self.trace)

    def pauses(self, task: int) -> list[Pause]:
        """Return one pause of task ``task`` per pending interrupt of the child, by path."""
        return [Pause(task, i.node, i.value, i.when, self.index, i.id) for i in self.interrupts]


def answer_for(node: Node, pause_id: str, value: Any) -> Any:
    """Return what task ``node`` keeps as the answer to its pause ``pause_id``.

    A subgraph task keeps ``{child interrupt id: value}`` (its pause ids are the child's,
    prefixed with the node's name), so each answer reaches the pause it answers.
    """
    if node.child is None:
        return value
    return {pause_id.removeprefix(f"{node.name}/"): value}


def number_entries(rs: RunState, calls: list[Call], last: int) -> None:
    """Give the subgraph entries among a superstep's ``calls`` their numbers and the step
    pool they share (:mod:`corral.runtime.child_steps`).

    The plain tasks of a superstep take the first step numbers, in task order (the plan
    gave them those, up to ``last``); the node runs inside its subgraph entries take the
    next ones, as they are planned. An entry's own number (its ``NodeStart``, which opens
    the entry) is nominal: ``last`` plus its place among the entries. The entries of a
    child run share the pool the child was given.
    """
    place = 0
    for index, (position, task, _) in enumerate(calls):
        if task.node.child is not None:
            place += 1
            calls[index] = (position, task, last + place)
    if place and not rs.entry:
        rs.step_pool = StepPool(rs.max_steps, last)


def accept_child(rs: RunState, node: Node, out: ChildWrites) -> None:
    """Count a subgraph entry: its child's node runs are steps; the entry is one run of it."""
    rs.steps += out.steps
    rs.runs[node.name] = rs.runs.get(node.name, 0) + 1
    rs.trace.extend(out.trace)


def read_back(rs: RunState, entries: list[tuple[int, Node, int]]) -> None:
    """Take a checkpoint's finished subgraph ``entries`` (``(task, node, count)``) as finished
    tasks of ``rs``'s pending superstep, their writes read back from their children's
    threads; they stay counted and do not run again."""
    for task, node, steps in entries:
        assert node.child is not None  # restore.load returns subgraph entries only
        writes = node.child.finished_writes(rs, task)
        rs.done[task] = (task, node, ChildWrites(writes, steps, []), None, 0)
