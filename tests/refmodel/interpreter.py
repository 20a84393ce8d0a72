"""The reference model: a graph run, superstep by superstep, as the contract describes it.

Written to be read against API.md sections 3-7 and 11-12 and docs/concepts.md; each rule
names where it comes from. Nothing here is persisted or fast. A :class:`Frame` is one run
of one graph (the top-level run, or one entry of a subgraph); :class:`Counts` holds what
belongs to the whole top-level run (its steps and its cap). The thread around it (inputs,
checkpoints, forks, ``update_state``) is :mod:`refmodel.thread`.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corral import END
from refmodel import behaviour as act
from refmodel.shapes import GraphShape, NodeShape

REDUCED = ("log", "msgs")
"""Keys with a reducer (``log``: ``operator.add``; ``msgs``: ``add_messages``)."""
SHARED = ("log",)
"""Keys the child graph shares with its parent."""
ATTEMPTS = 3
"""Every generated node has ``Retry(attempts=3)`` (API.md section 12)."""


class ModelError(Exception):
    """An error the contract says the run raises; ``kind`` is the engine's class name."""

    def __init__(self, kind: str, where: str = "") -> None:
        super().__init__(f"{kind} at {where!r}")
        self.kind = kind
        self.where = where


@dataclass
class Task:
    """One node run to do in a superstep; ``arg`` is a ``Send``'s argument."""

    node: str
    arg: int | None = None


@dataclass
class Done:
    """A finished task: its updates (a subgraph entry hands back several) and its goto."""

    updates: list[dict[str, Any]]
    goto: str | None = None
    entry_runs: int = 0
    """For a subgraph entry: the node runs inside it."""


@dataclass
class Counts:
    """What belongs to one top-level run: steps (node runs, API.md section 5) and its cap."""

    steps: int = 0
    """Node runs merged at a barrier (what a snapshot shows)."""
    pending: int = 0
    """Node runs finished in the current superstep, not merged yet (they count toward the
    cap: it is checked before every node run, also inside a superstep)."""
    holds: int = 0
    """Node runs cut short by ``interrupt()``: each holds its step until it completes on
    resume (counted once, section 5), so a sibling after it may be refused by the cap."""
    max_steps: int = 50
    reserved: int = 0
    """While a subgraph entry runs: the plain tasks after it in its superstep that have not
    run and that no ``max_runs`` refuses. concepts.md "Counting": the plain tasks take the
    superstep's first step numbers, the node runs inside its entries the next ones."""
    order_matters: bool = False
    """Set when this run met a superstep whose outcome under ``ainvoke``/``astream`` the
    contract lets differ from the sequential one this model runs (concepts.md: in
    ``invoke`` a failing node stops its superstep, in ``ainvoke`` its siblings already
    running finish; entries run concurrently with the plain tasks after them)."""


@dataclass
class Frame:
    """One run of one graph: its state, its next superstep and its counters."""

    shape: GraphShape
    prefix: str
    values: dict[str, Any]
    tasks: list[Task] = field(default_factory=list)
    done: dict[int, Done] = field(default_factory=dict)
    children: dict[int, Frame] = field(default_factory=dict)
    asked: dict[int, list[tuple[str, Any]]] = field(default_factory=dict)
    answers: dict[int, str] = field(default_factory=dict)
    answered: dict[int, list[tuple[str, Any]]] = field(default_factory=dict)
    """The pauses a ``Resume`` answered, kept until their nodes have used the answer."""
    before: list[str] = field(default_factory=list)
    """Nodes of ``tasks`` the run paused before (``interrupt_before``), until continued."""
    passed_before: bool = False
    runs: Counter[str] = field(default_factory=Counter)
    guards: dict[tuple[str, str], int] = field(default_factory=dict)
    arrivals: dict[str, set[str]] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    reroute: list[Task] = field(default_factory=list)
    """The tasks of a merged superstep whose routes failed: a resume routes them again."""
    gotos: list[str | None] = field(default_factory=list)
    entry_steps: int = 0
    paused_steps: int = 0
    """For a subgraph entry: its node runs when it last paused. The parent's checkpoint at
    that pause counted them (section 11), so they stay counted if the entry is dropped."""
    writes: list[dict[str, Any]] = field(default_factory=list)
    """A child entry's writes to shared keys, in merge order (handed to the parent)."""

    @property
    def interrupts(self) -> list[tuple[str, Any]]:
        """Pending pauses as ``(node path, payload)``; ``None`` for ``interrupt_before``."""
        asked = [item for index in sorted(self.asked) for item in self.asked[index]]
        return asked + [(self.prefix + name, None) for name in self.before]


def new_frame(shape: GraphShape, prefix: str, values: dict[str, Any]) -> Frame:
    """A fresh run of ``shape`` from ``values``: its start nodes next, every guard at 0."""
    frame = Frame(shape, prefix, values)
    frame.guards = {(n.name, g.target): 0 for n in shape.nodes for g in n.guards}
    frame.arrivals = {join: set() for join in shape.joins}
    frame.tasks = [Task(n.name) for n in shape.nodes if n.start]
    return frame


def merge_value(key: str, current: Any, update: Any) -> Any:
    """A key's new value (API.md section 3): reducers merge, other keys are replaced."""
    if key == "log":
        return [*(current or []), *update]
    if key == "msgs":
        merged = list(current or [])
        for message in update:
            same = [i for i, m in enumerate(merged) if m["id"] == message["id"]]
            if same:
                merged[same[0]] = message
            else:
                merged.append(message)
        return merged
    return update


def merge_into(values: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``values`` with one update applied through the reducers (a new dict)."""
    merged = copy.deepcopy(values)
    for key, value in update.items():
        merged[key] = merge_value(key, merged.get(key), copy.deepcopy(value))
    return merged


# ------------------------------------------------------------------ running a superstep


def run_frame(frame: Frame, counts: Counts, triggers: act.Triggers) -> bool:
    """Run supersteps until the frame ends (True) or pauses (False); errors are raised."""
    while True:
        if frame.reroute:
            route(frame, frame.reroute, frame.gotos)
        if not frame.tasks:
            return True
        if pause_before(frame):
            return False
        if not run_superstep(frame, counts, triggers):
            return False


def pause_before(frame: Frame) -> bool:
    """``interrupt_before``: pause before a superstep that runs a listed node (section 7)."""
    if frame.passed_before:
        return False
    listed = [t.node for t in frame.tasks if t.node in frame.shape.interrupt_before]
    frame.before = list(dict.fromkeys(listed))
    return bool(frame.before)


def _order_matters(frame: Frame, index: int, failure: ModelError | None, armed: bool) -> bool:
    """Whether task ``index`` of ``frame``'s superstep (failing with ``failure``, with a
    crash ``armed``) may end otherwise when the superstep's tasks run concurrently."""
    later = [t for i, t in enumerate(frame.tasks) if i > index and i not in frame.done]
    node = frame.shape.node(frame.tasks[index].node)
    entry = node.kind == "sub"
    if armed and entry and any(frame.shape.node(t.node).kind != "sub" for t in later):
        return True  # the plain tasks after an entry run before its child's nodes
    if armed and node.fails and later:
        return True  # the tasks after it run while it waits to retry
    if failure is None:
        return False
    entries = [t for t in frame.tasks if frame.shape.node(t.node).kind == "sub"]
    stops = entry or failure.kind == "NodeError"  # a cap refusal stops nothing
    return bool(stops and later) or len(entries) > 1


def run_superstep(frame: Frame, counts: Counts, triggers: act.Triggers) -> bool:
    """Run every task not finished yet, then merge and route; False when it paused."""
    refused: ModelError | None = None
    armed = triggers.crash_after is not None
    for index, task in enumerate(frame.tasks):
        if index in frame.done:
            continue
        entry = frame.shape.node(task.node).kind == "sub"
        reserved = counts.reserved
        if entry:
            counts.reserved += planned_after(frame, index)
        counts.order_matters |= _order_matters(frame, index, None, armed)
        try:
            run_task(frame, index, task, counts, triggers)
        except ModelError as err:
            counts.order_matters |= _order_matters(frame, index, err, armed)
            # a child's refusal is its entry's failure: the later tasks do not start
            if err.kind not in ("StepLimitError", "NodeCapError") or entry:
                raise
            # concepts.md "Caps inside a superstep": the allowed nodes run, then the error
            # names the first node that was refused.
            refused = refused or err
        finally:
            counts.reserved = reserved
    if refused is not None:
        raise refused
    if frame.asked:
        return False
    merge_superstep(frame, counts)
    return True


def planned_after(frame: Frame, index: int) -> int:
    """The plain tasks after the entry at ``index`` that take a step of its superstep:
    those its ``max_runs`` does not refuse (concepts.md "Caps inside a superstep": a node at
    its cap never starts, so it takes no step; the runs planned before it count)."""
    runs = Counter(frame.runs)
    runs.update(frame.tasks[i].node for i in frame.asked if i < index)  # paused: planned
    count = 0
    for i in range(index + 1, len(frame.tasks)):
        node = frame.shape.node(frame.tasks[i].node)
        if i in frame.done or node.kind == "sub":
            continue
        if node.max_runs is None or runs[node.name] < node.max_runs:
            runs[node.name] += 1
            count += 1
    return count


def run_task(frame: Frame, index: int, task: Task, counts: Counts, tr: act.Triggers) -> None:
    """Run one task: a node (its caps checked first) or a subgraph entry."""
    node = frame.shape.node(task.node)
    if node.kind == "sub":
        run_entry(frame, index, node, counts, tr)
        return
    path = frame.prefix + node.name
    own_hold = 1 if index in frame.answers else 0
    if (
        counts.steps + counts.pending + counts.holds + counts.reserved - own_hold
        >= counts.max_steps
    ):
        raise ModelError("StepLimitError", path)
    if frame.prefix and frame.entry_steps >= frame.shape.max_steps:
        # section 11: the child's own max_steps caps each entry
        raise ModelError("StepLimitError", path)
    if node.max_runs is not None and frame.runs[node.name] >= node.max_runs:
        raise ModelError("NodeCapError", path)
    attempt(path, node, tr)
    answer = frame.answers.pop(index, None)
    if node.asks and answer is None:
        # API.md section 7: interrupt() pauses; the run is counted when it completes.
        frame.asked[index] = [(path, act.payload(path, task.arg))]
        counts.holds += 1
        return
    frame.asked.pop(index, None)
    counts.holds -= own_hold
    log_len = None if task.arg is not None else len(frame.values["log"])
    update = act.node_update(node, path, log_len, task.arg, answer, child=bool(frame.prefix))
    goto = act.command_goto(node, frame.values) if node.kind == "command" else None
    frame.done[index] = Done([update], goto)
    frame.runs[node.name] += 1
    frame.entry_steps += 1
    counts.pending += 1


def attempt(path: str, node: NodeShape, triggers: act.Triggers) -> None:
    """One node run under ``Retry(attempts=3)``: failed attempts are retried at once."""
    for number in range(1, ATTEMPTS + 1):
        try:
            triggers.enter(path, node.fails)
            return
        except ConnectionError:
            if number == ATTEMPTS:
                raise ModelError("NodeError", path) from None
        except act.Crash:
            raise ModelError("NodeError", path) from None


def run_entry(frame: Frame, index: int, node: NodeShape, counts: Counts, tr: act.Triggers) -> None:
    """A subgraph entry (API.md section 11): a fresh child run on the shared keys."""
    child = frame.children.get(index)
    if child is None:
        assert frame.shape.child is not None
        shared = {key: copy.deepcopy(frame.values[key]) for key in SHARED}
        child = new_frame(frame.shape.child, f"{frame.prefix}{node.name}/", shared)
        frame.children[index] = child
    answer = frame.answers.pop(index, None)
    if answer is not None:
        child.answers = {i: answer for i in child.asked}
        child.answered, child.asked = child.asked, {}
    if not run_frame(child, counts, tr):
        child.paused_steps = child.entry_steps
        frame.asked[index] = child.interrupts
        return
    frame.asked.pop(index, None)
    del frame.children[index]
    frame.done[index] = Done(child.writes, entry_runs=child.entry_steps)
    frame.runs[node.name] += 1


def merge_superstep(frame: Frame, counts: Counts) -> None:
    """The barrier (API.md section 6): merge in task order, note joins, route."""
    merged = copy.deepcopy(frame.values)
    writer: dict[str, int] = {}
    tasks = frame.tasks
    for index in range(len(tasks)):
        for update in frame.done[index].updates:
            for key, value in update.items():
                if key not in REDUCED and writer.setdefault(key, index) != index:
                    # section 3: two nodes of one superstep write a key without a reducer
                    raise ModelError("InvalidUpdateError", tasks[index].node)
                merged[key] = merge_value(key, merged.get(key), copy.deepcopy(value))
    if frame.prefix:
        for index in range(len(tasks)):
            for update in frame.done[index].updates:
                shared = {k: v for k, v in update.items() if k in SHARED}
                if shared:
                    frame.writes.append(copy.deepcopy(shared))
    gotos = [frame.done[i].goto for i in range(len(tasks))]
    frame.values = merged
    frame.done = {}
    if not frame.prefix:
        counts.steps += counts.pending
        counts.pending = 0
    note_arrivals(frame, [t.node for t in tasks])
    frame.passed_before = False
    route(frame, tasks, gotos)


def note_arrivals(frame: Frame, ran: list[str]) -> None:
    """concepts.md "Joins": a join counts the listed nodes that ran since its own last run;
    a node that runs in the same superstep as the join counts toward its next run."""
    for join in frame.arrivals:
        if join in ran:
            frame.arrivals[join] = set()
    for join, listed in frame.shape.joins.items():
        frame.arrivals[join] |= {name for name in ran if name in listed}


# ------------------------------------------------------------------ routes


def outs(node: NodeShape, state: dict[str, Any], goto: str | None) -> list[str | Task]:
    """Where a node's run leads (section 4): targets, or ``Send`` tasks."""
    if node.kind == "router":
        return [act.route_choice(node, state)]
    if node.kind == "many":
        return list(act.many_choice(node, state))
    if node.kind == "command":
        return [] if goto is None else [goto]
    if node.kind == "send":
        return [Task(node.targets[0], arg) for arg in act.send_args(node, state)]
    return list(node.targets)


def take(frame: Frame, source: NodeShape, target: str, used: dict[tuple[str, str], int]) -> str:
    """A route taken (section 5): a guarded one counts, or falls back to ``otherwise``."""
    for guard in source.guards:
        if guard.target != target:
            continue
        key = (source.name, target)
        if used[key] < guard.max:
            used[key] += 1
            return target
        if guard.otherwise is None:
            raise ModelError("GuardExhaustedError", frame.prefix + source.name)
        # falling back to otherwise neither checks nor counts any guard
        return guard.otherwise
    return target


def route(
    frame: Frame,
    ran: list[Task],
    gotos: list[str | None],
    deferred: tuple[Task, ...] = (),
    *,
    update: bool = False,
) -> None:
    """Give the next superstep's tasks: de-duplicated targets, every Send its own task,
    in node registration order (Send tasks in the order sent); joins wait (section 6).
    ``deferred`` are tasks of the superstep that did not run (``update_state(as_node=)``):
    they are next as they were, ahead of the new Send tasks to the same node. ``update``:
    the routes of an ``update_state(as_node=)``, which stay taken when they leave a join
    held with nothing to run (persistence.md "Decisions")."""
    used = dict(frame.guards)
    plain: list[str] = []
    sends: list[Task] = []
    try:
        for task, goto in zip(ran, gotos, strict=True):
            source = frame.shape.node(task.node)
            for out in outs(source, frame.values, goto):
                if isinstance(out, Task):
                    sends.append(out)
                elif (target := take(frame, source, out, used)) != END:
                    plain.append(target)
    except ModelError:
        frame.reroute, frame.gotos, frame.tasks = list(ran), list(gotos), []
        raise
    ready: list[str] = []
    held = set(frame.held)
    for name in dict.fromkeys([*plain, *sorted(held)]):
        listed = frame.shape.joins.get(name)
        if listed is None or frame.arrivals[name] >= set(listed):
            ready.append(name)
            held.discard(name)
        else:
            held.add(name)
    ready += [t.node for t in deferred if t.arg is None and t.node not in ready]
    sends = [t for t in deferred if t.arg is not None] + sends
    if not ready and not sends and held:
        # concepts.md: a run that would end while a join is held raises StuckJoinError
        frame.reroute, frame.gotos, frame.tasks = list(ran), list(gotos), []
        if update:
            frame.guards, frame.held, frame.reroute, frame.gotos = used, held, [], []
        raise ModelError("StuckJoinError", frame.prefix + sorted(held)[0])
    frame.guards, frame.held = used, held
    frame.reroute, frame.gotos = [], []
    order = [n.name for n in frame.shape.nodes]
    tasks = [Task(name) for name in ready] + sends
    frame.tasks = sorted(tasks, key=lambda t: order.index(t.node))
