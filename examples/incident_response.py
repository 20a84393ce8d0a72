"""Incident response: parallel investigation, a proposal, and a person who approves it.

``triage`` fans out to three investigations (logs, metrics, deploys) that run in the same
superstep; each returns its findings, and the ``findings`` reducer merges them. ``propose``
drafts a fix and ``approve`` asks a person through ``interrupt()``: the run pauses, its
state is checkpointed, and ``invoke(Resume(answer), thread_id=...)`` continues it, in this
process or another one. A denial loops back to ``propose`` with the reason; that route is
guarded (at most two revisions), and when the guard is used up the run escalates to a
human on call instead of asking forever.

Tools (log search, metrics, deploy history, the planner, the runbook and the pager) come in
through ``deps``; :class:`FakeTools` answers offline.

Run it::

    python examples/incident_response.py

Or be the person yourself: ``corral run`` checkpoints to ``.corral/checkpoints.sqlite``,
exits 3 at the approval and prints the command that answers it::

    corral run examples/incident_response.py --deps examples/incident_response.py:FakeTools \
        --input '{"incident": "checkout API returns 500s"}' --thread inc-1
    corral run examples/incident_response.py --deps examples/incident_response.py:FakeTools \
        --thread inc-1 --resume "no: a rollback loses the new tax rules"
"""

from __future__ import annotations

import operator
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypedDict

from corral import (
    END,
    Checkpointer,
    CompiledGraph,
    Context,
    Graph,
    Guard,
    Resume,
    Run,
    SqliteSaver,
    interrupt,
)


class State(TypedDict):
    """The incident and everything learned about it."""

    incident: str
    severity: str
    findings: Annotated[list[str], operator.add]
    """Written by three investigations in one superstep: the reducer appends each."""
    proposal: str
    feedback: Annotated[list[str], operator.add]
    """Why the person denied earlier proposals."""
    approved: bool
    outcome: str


class StateUpdate(TypedDict, total=False):
    """Any subset of the state's keys."""

    incident: str
    severity: str
    findings: list[str]
    proposal: str
    feedback: list[str]
    approved: bool
    outcome: str


class Tools(Protocol):
    """The clients the agent calls; pass real ones or :class:`FakeTools` as ``deps``."""

    def search_logs(self, incident: str) -> str: ...
    def query_metrics(self, incident: str) -> str: ...
    def recent_deploys(self, incident: str) -> str: ...
    def propose_fix(self, findings: list[str], feedback: list[str]) -> str: ...
    def apply_fix(self, proposal: str) -> str: ...
    def page(self, incident: str, proposal: str) -> str: ...


Nodes = Literal["triage", "logs", "metrics", "deploys", "propose", "approve", "apply", "escalate"]

g = Graph(State, StateUpdate, Nodes, name="incident_response", max_steps=40)


@g.node(start=True, then=("logs", "metrics", "deploys"))
def triage(state: State) -> StateUpdate:
    text = state["incident"].lower()
    return {"severity": "sev1" if "down" in text or "500" in text else "sev3"}


@g.node(then="propose")
def logs(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"findings": [f"logs: {tools.search_logs(state['incident'])}"]}


@g.node(then="propose")
def metrics(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"findings": [f"metrics: {tools.query_metrics(state['incident'])}"]}


@g.node(then="propose")
def deploys(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"findings": [f"deploys: {tools.recent_deploys(state['incident'])}"]}


@g.node(then="approve")
def propose(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"proposal": tools.propose_fix(state["findings"], state["feedback"])}


@g.node()
def approve(state: State) -> StateUpdate:
    # On resume this node runs again from the top and interrupt() returns the answer, so
    # nothing before it may have side effects.
    answer = interrupt(
        {
            "severity": state["severity"],
            "proposal": state["proposal"],
            "ask": "reply 'yes' to apply, or 'no: <reason>'",
        }
    )
    verdict, _, reason = str(answer).partition(":")
    if verdict.strip().lower() in ("yes", "y", "approve"):
        return {"approved": True}
    return {"approved": False, "feedback": [reason.strip() or "denied"]}


@g.router("approve", guards=[Guard("propose", max=2, otherwise="escalate")])
def after_approval(state: State) -> Literal["apply", "propose"]:
    return "apply" if state["approved"] else "propose"


@g.node(then=END)
def apply(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"outcome": tools.apply_fix(state["proposal"])}


@g.node(then=END)
def escalate(state: State, ctx: Context) -> StateUpdate:
    tools: Tools = ctx.deps
    return {"outcome": tools.page(state["incident"], state["proposal"])}


def build(checkpointer: Checkpointer) -> CompiledGraph[State]:
    """Compile the agent; approvals need a checkpointer to pause and resume."""
    return g.compile(checkpointer=checkpointer)


class FakeTools:
    """Offline tools with canned answers; records what was applied and who was paged."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.paged: list[str] = []

    def search_logs(self, incident: str) -> str:
        return "spike of 'connection pool exhausted' since 09:12"

    def query_metrics(self, incident: str) -> str:
        return "p99 latency 4.1s (normally 180ms), db connections at limit"

    def recent_deploys(self, incident: str) -> str:
        return "api v2.31 deployed 09:10 (raised workers 8 -> 32)"

    def propose_fix(self, findings: list[str], feedback: list[str]) -> str:
        fixes = [
            "roll back api to v2.30",
            "cap api workers at 8 and raise the db pool to 64",
            "fail over to the read replica",
        ]
        return fixes[min(len(feedback), len(fixes) - 1)]

    def apply_fix(self, proposal: str) -> str:
        self.applied.append(proposal)
        return f"applied: {proposal}"

    def page(self, incident: str, proposal: str) -> str:
        self.paged.append(incident)
        return f"paged the on-call engineer about {incident!r}"


def respond(
    app: CompiledGraph[State], incident: str, answers: list[str], tools: Tools
) -> tuple[Run, list[Any]]:
    """Run ``incident`` to the end, answering each approval with the next of ``answers``.

    Returns the final run and the approval requests that were asked, in order.
    """
    asked: list[Any] = []
    run = app.invoke({"incident": incident}, deps=tools)
    for answer in answers:
        if run.status != "interrupted":
            break
        asked.append(run.interrupts[0].value)
        run = app.invoke(Resume(answer), thread_id=run.thread_id, deps=tools)
    return run, asked


def main() -> None:
    incident = "checkout API returns 500s"
    with (
        tempfile.TemporaryDirectory() as tmp,
        SqliteSaver(str(Path(tmp) / "incidents.sqlite")) as saver,
    ):
        app = build(saver)

        tools = FakeTools()
        run, asked = respond(
            app, incident, ["no: a rollback loses the new tax rules", "yes"], tools
        )
        print(f"[{run.state['severity']}] {incident}")
        for finding in run.state["findings"]:
            print(f"  {finding}")
        for request, answer in zip(asked, ["no", "yes"], strict=True):
            print(f"  asked to approve {request['proposal']!r}: {answer}")
        print(f"  -> {run.state['outcome']} ({run.steps} steps)")

        tools = FakeTools()
        run, asked = respond(app, incident, ["no: too risky"] * 3, tools)
        used = run.guards.get(("approve", "propose"), 0)
        print(f"denied {len(asked)} times (revisions used: {used} of 2)")
        print(f"  -> {run.state['outcome']} ({run.steps} steps)")


if __name__ == "__main__":
    main()
