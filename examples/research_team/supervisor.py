"""The supervisor: send the researcher until there are notes, then the writer.

Both agents are graphs of their own modules, composed here with ``g.subgraph``: the
researcher shares ``topic`` and ``notes`` with the team state (its appends to ``notes`` are
applied here through the ``operator.add`` reducer, once each); the writer has its own
names, mapped with ``input=`` and ``output=``. Every node run inside them counts toward this
graph's ``max_steps``, and a pause inside the writer (its approval ``interrupt()``) is a
pause of this run, answered with ``Resume`` on the same thread; ``run.interrupts[0].node``
is ``"write/approve"``.

Run it from ``examples/`` (the report's tokens are printed as they are produced, then you
are asked to approve)::

    python -m research_team.supervisor

or with the CLI, which exits 3 at the approval and prints the command that answers it::

    corral run examples/research_team/supervisor.py --input '{"topic": "tides"}' --thread t1
    corral run examples/research_team/supervisor.py --thread t1 --resume yes
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

from corral import END, Budget, End, Graph, Guard, MemorySaver, Resume
from research_team import researcher, writer


class TeamState(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    report: str
    approved: bool


graph = Graph(TeamState, name="research_team", max_steps=40, budget=Budget(usd=0.50))


@graph.node(start=True)
def supervise(state: TeamState) -> None:
    return None


@graph.router("supervise", guards=[Guard("research", max=2, otherwise="write")])
def delegate(state: TeamState) -> Literal["research", "write"] | End:
    if state.get("report"):  # absent until the writer has written (input: just a topic)
        return END
    return "write" if state["notes"] else "research"


graph.subgraph("research", researcher.graph, then="supervise")
graph.subgraph(
    "write",
    writer.graph,
    then=END,
    input=lambda state: {
        "topic": state["topic"],
        "notes": state["notes"],
        "text": "",
        "feedback": [],
        "approved": False,
    },
    output=lambda final: {"report": final["text"], "approved": final["approved"]},
)

EMPTY: dict[str, Any] = {"notes": [], "report": "", "approved": False}


async def main(topic: str = "tides", answer: str = "yes") -> TeamState:
    """Run the team on ``topic``, printing the report's tokens live; approve with ``answer``."""
    app = graph.compile(checkpointer=MemorySaver())
    thread = "demo"
    async for mode, payload in app.astream(
        {"topic": topic, **EMPTY}, thread_id=thread, mode=["custom", "updates"]
    ):
        if mode == "custom":
            print(payload[1], end="", flush=True)
        elif mode == "updates" and payload[0] == "research/search":
            print(f"[research/search] {payload[1]['notes'][0]}")
    print()
    paused = app.get_state(thread)
    for pending in paused.interrupts:
        print(f"[{pending.node}] {pending.value['ask']} -> {answer}")
    run = await app.ainvoke(Resume(answer), thread_id=thread)
    print(f"report ({'approved' if run.state['approved'] else 'not approved'}):")
    print(run.state["report"])
    return run.state


if __name__ == "__main__":
    asyncio.run(main())
