"""The reference model as the analyser's judge (issue 27, point 2), on random graphs.

- ``g.bound()`` is never below a run the model makes, and its witness is a run;
- a graph ``check()`` passes never raises ``StuckJoinError`` or ``InvalidUpdateError``,
  nor a ``StepLimitError`` without CR203 (a ``NodeCapError`` is ``max_runs`` doing what it
  was set for: no rule predicts it, and ``per_node`` counts the runs it lets through; so
  is a ``StepLimitError`` raised where ``max_runs`` would refuse the next node anyway);
- applying CR201's suggested guard removes that finding.

``CORRAL_MODEL_EXAMPLES`` scales the example counts (docs/guarantees.md).
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from refmodel.behaviour import Triggers
from refmodel.build import build
from refmodel.interpreter import Frame, ModelError, new_frame, take
from refmodel.shapes import GraphShape, describe, graph_shapes, with_guard
from refmodel.thread import ModelThread

from corral import END, Guard
from corral.analysis.diagnostic import Diagnostic

EXAMPLES = int(os.environ.get("CORRAL_MODEL_EXAMPLES", "30"))
JUDGE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
UNCAPPED = 10**6
SUGGESTION = re.compile(r"e\.g\. Guard\('(\w+)', max=(\d+), otherwise=END\) on \w+ '\w+' \((\w+) →")


def model_runs(shape: GraphShape, max_steps: int, inputs: int = 4) -> list[ModelThread]:
    """Finished model runs from inputs of several lengths (the routes depend on the log's
    length), every pause answered; each ends done or with the error it raised."""
    runs = []
    for extra in range(inputs):
        thread = ModelThread(shape)
        outcome = thread.invoke(
            {"log": ["in"] * (extra + 1), "msgs": []}, Triggers(), max_steps=max_steps
        )
        for answer in range(50):
            if outcome.error or not outcome.interrupts:
                break
            if any(value is None for _, value in outcome.interrupts):
                outcome = thread.invoke(None, Triggers(), max_steps=max_steps)
            else:
                outcome = thread.invoke(None, Triggers(), answer=f"a{answer}", max_steps=max_steps)
        runs.append(thread)
    return runs


def errors(found: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in found if d.severity == "error"]


@JUDGE
@given(shape=graph_shapes())
def test_the_bound_is_never_below_a_run(shape: GraphShape) -> None:
    graph = build(shape, Triggers())
    assume(not errors(graph.check()))
    bound = graph.bound()
    for thread in model_runs(shape, UNCAPPED):
        steps = thread.counts.steps + thread.counts.pending
        if bound.steps is not None:
            assert steps <= bound.steps, f"bound {bound} below a run of {steps}\n{describe(shape)}"
        assert thread.frame is not None
        for name, runs in thread.frame.runs.items():
            limit = bound.per_node.get(name)
            assert limit is None or runs <= limit, (
                f"per_node[{name!r}] = {limit} below {runs} runs\n{describe(shape)}"
            )


def _sequential(shape: GraphShape) -> bool:
    """One node runs at a time: no fan-out, Send, join or subgraph."""
    return (
        all(
            n.kind in ("router", "command") or (n.kind == "then" and len(n.targets) == 1)
            for n in shape.nodes
        )
        and sum(n.start for n in shape.nodes) == 1
    )


def witness_is_a_run(shape: GraphShape, witness: tuple[str, ...]) -> bool:
    """Whether some choice of every router and ``Command`` makes exactly ``witness`` and
    then ends, or stops there because the next node's ``max_runs`` is used up (a run
    that raises ``NodeCapError`` has made exactly those node runs): the guards and
    ``max_runs`` as the model applies them."""
    frame: Frame = new_frame(shape, "", {"log": []})
    current = next(n.name for n in shape.nodes if n.start)
    for index, name in enumerate(witness):
        node = shape.node(name)
        if name != current or (node.max_runs is not None and frame.runs[name] >= node.max_runs):
            return False
        frame.runs[name] += 1
        wanted = witness[index + 1] if index + 1 < len(witness) else END
        options = list(node.targets) + ([END] if node.kind == "command" else [])
        for target in options:
            used = dict(frame.guards)
            try:
                reached = take(frame, node, target, used) if target != END else END
            except ModelError:
                continue
            if reached == wanted or (wanted == END and _capped(shape, frame, reached)):
                frame.guards, current = used, wanted
                break
        else:
            return False
    return current == END


def _capped(shape: GraphShape, frame: Frame, name: str) -> bool:
    """Whether a route to ``name`` is refused by its ``max_runs`` (``NodeCapError``)."""
    if name == END:
        return False
    limit = shape.node(name).max_runs
    return limit is not None and frame.runs[name] >= limit


@JUDGE
@given(shape=graph_shapes())
def test_the_witness_is_a_run(shape: GraphShape) -> None:
    assume(_sequential(shape))
    graph = build(shape, Triggers())
    assume(not errors(graph.check()))
    bound = graph.bound()
    assume(bound.witness is not None)
    assert bound.witness is not None
    assert len(bound.witness) == bound.steps
    assert witness_is_a_run(shape, bound.witness), (
        f"witness {bound.witness} is no run\n{describe(shape)}"
    )


@JUDGE
@given(shape=graph_shapes())
def test_a_graph_that_passes_check_fails_only_as_predicted(shape: GraphShape) -> None:
    assume(not shape.conflict)  # its parallel write is CR301 silenced on purpose
    graph = build(shape, Triggers())
    found = graph.check()
    assume(not errors(found))
    bound = graph.bound()
    cap_warned = any(d.code == "CR203" for d in found) or bound.steps is None
    for thread in model_runs(shape, shape.max_steps):
        kind = thread.error if thread.status == "error" else None
        assert kind not in ("StuckJoinError", "InvalidUpdateError"), f"{kind}\n{describe(shape)}"
        if kind == "StepLimitError" and not _stopped_by_max_runs_anyway(shape, thread):
            assert cap_warned, f"StepLimitError without CR203 ({bound})\n{describe(shape)}"


def _stopped_by_max_runs_anyway(shape: GraphShape, thread: ModelThread) -> bool:
    """Whether the superstep the cap stopped has a task whose ``max_runs`` is used up: the
    run stops there whatever the cap (the step count is checked first, so a cap reached
    at that moment names ``StepLimitError`` instead of ``NodeCapError``)."""
    frame = thread.frame
    assert frame is not None
    waiting = [t.node for i, t in enumerate(frame.tasks) if i not in frame.done]
    return any(_capped(shape, frame, name) for name in waiting)


@JUDGE
@given(shape=graph_shapes(guard_backs=False), pick=st.integers(0, 10))
def test_applying_the_suggested_guard_removes_the_finding(shape: GraphShape, pick: int) -> None:
    before = [d for d in build(shape, Triggers()).check() if d.code == "CR201"]
    assume(before)
    finding = before[pick % len(before)]
    match = SUGGESTION.search(finding.message)
    assert match, f"CR201 gives no guard to add: {finding.message}"
    target, most, source = match.group(1), int(match.group(2)), match.group(3)
    fixed = with_guard(shape, source, Guard(target, max=most, otherwise=END))
    after = [d for d in build(fixed, Triggers()).check() if d.code == "CR201"]
    assert all(d.nodes != finding.nodes for d in after), (
        f"{finding.message}\nstill reported after the fix:\n"
        + "\n".join(d.message for d in after)
        + f"\n{describe(shape)}"
    )
