# $ corral lint examples/broken/missing_reducer.py
# examples/broken/missing_reducer.py:37:1: CR301 nodes 'logs', 'metrics' and 'deploys' can run in the same superstep and all write 'findings', which has no reducer; give the key a reducer (Annotated[list[str], operator.add]) or let one node write it
# Found 1 error in 1 graph (1 file).
# exit 1
"""BROKEN: three parallel branches write one list with no reducer (CR301).

``logs``, ``metrics`` and ``deploys`` run in the same superstep and each returns
``{"findings": [...]}``. With no reducer on ``findings``, a framework that takes the last
write silently keeps one branch's findings and drops the other two. corral raises
``InvalidUpdateError`` at run time, and ``corral lint`` reports it before anything runs.

Fix: ``findings: Annotated[list[str], operator.add]``.
"""

# ruff: noqa: E501  (the recorded lint output above is kept verbatim)

from typing import TypedDict

from corral import END, Graph


class State(TypedDict):
    incident: str
    findings: list[str]
    summary: str


g = Graph(State)


@g.node(start=True, then=("logs", "metrics", "deploys"))
def triage(state: State) -> dict[str, object]:
    return {}


@g.node(then="summarise")
def logs(state: State) -> dict[str, object]:
    return {"findings": ["logs: connection pool exhausted"]}


@g.node(then="summarise")
def metrics(state: State) -> dict[str, object]:
    return {"findings": ["metrics: p99 latency 4.1s"]}


@g.node(then="summarise")
def deploys(state: State) -> dict[str, object]:
    return {"findings": ["deploys: api v2.31 at 09:10"]}


@g.node(then=END)
def summarise(state: State) -> dict[str, object]:
    return {"summary": "; ".join(state["findings"])}
