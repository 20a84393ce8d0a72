"""A graph with a loop and a fan-out that can kill its own process at a chosen node run.

Run as a script: ``python crash_graph.py DB EFFECTS THREAD start|resume``. It runs (or
continues) thread ``THREAD`` with a ``SqliteSaver`` on ``DB`` and prints the final state as
JSON. Every node run appends one line, ``"<superstep tag> <node>"``, to the ``EFFECTS`` file:
the side effect the crash tests count. The tag is the length of ``state["log"]`` the node
sees, which every node of one superstep shares and which grows from superstep to superstep.

With ``CRASH_AT="<line>"`` in the environment, the process dies with ``os._exit(17)`` in the
node run whose line that is: before its side effect (``CRASH_WHEN=before``, the default) or
just after it (``CRASH_WHEN=after``), and in either case before the node returns.

``GRAPH_VARIANT=audit`` builds a changed graph (one more node) to resume with;
``GRAPH_VARIANT=subgraph`` makes ``left_more`` a subgraph of two nodes (``more_a``, ``more_b``),
so a crash can cut a run inside a child that sits in a fan-out and a guarded loop.

Each round: ``plan`` fans out to ``left`` and ``right``; ``left`` goes on to ``left_more``;
``merge`` waits for ``left_more`` and ``right``; a guarded route loops back to ``plan``.
"""

from __future__ import annotations

import json
import operator
import os
import sys
from typing import Annotated, Literal, TypedDict

from corral import END, End, Graph, Guard, SqliteSaver

ROUNDS = 3
CRASH_EXIT = 17
VARIANT = os.environ.get("GRAPH_VARIANT", "")


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    round: int
    bonus: int
    total: int


g = Graph(State, name="crash", max_steps=100)


def effect(state: State, node: str) -> str:
    """Record this node run in the effects file; die here when told to."""
    line = f"{len(state['log'])} {node}"
    crash = os.environ.get("CRASH_AT") == line
    after = os.environ.get("CRASH_WHEN", "before") == "after"
    if crash and not after:
        os._exit(CRASH_EXIT)
    with open(os.environ["EFFECTS"], "a", encoding="utf-8") as f:
        f.write(line + "\n")
    if crash and after:
        os._exit(CRASH_EXIT)
    return line


@g.node(start=True, then=("left", "right"))
def plan(state: State) -> dict[str, object]:
    return {"log": [effect(state, "plan")], "round": state["round"] + 1}


@g.node(then="left_more")
def left(state: State) -> dict[str, object]:
    return {"log": [effect(state, "left")]}


if VARIANT == "subgraph":  # left_more is a graph of two nodes, run as one subgraph node
    inner = Graph(State, name="inner")

    @inner.node(start=True, then="more_b")
    def more_a(state: State) -> dict[str, object]:
        return {"log": [effect(state, "left_more/more_a")]}

    @inner.node(then=END)
    def more_b(state: State) -> dict[str, object]:
        return {"log": [effect(state, "left_more/more_b")], "bonus": state["bonus"] + 10}

    g.subgraph("left_more", inner, then="merge")
else:

    @g.node(then="merge")
    def left_more(state: State) -> dict[str, object]:
        return {"log": [effect(state, "left_more")], "bonus": state["bonus"] + 10}


@g.node(then="audit" if VARIANT == "audit" else "merge")
def right(state: State) -> dict[str, object]:
    return {"log": [effect(state, "right")]}


if VARIANT == "audit":  # a later version of the graph, with one more node

    @g.node(then="merge")
    def audit(state: State) -> dict[str, object]:
        return {}


@g.node(wait_for=("left_more", "audit" if VARIANT == "audit" else "right"))  # CR304
def merge(state: State) -> dict[str, object]:
    return {"log": [effect(state, "merge")], "total": state["total"] * 2 + state["bonus"]}


@g.router("merge", guards=[Guard("plan", max=ROUNDS - 1, otherwise=END)])
def again(state: State) -> Literal["plan"] | End:
    return "plan" if state["round"] < ROUNDS else END


def main(argv: list[str]) -> int:
    db, effects, thread, mode = argv
    os.environ["EFFECTS"] = effects
    with SqliteSaver(db) as saver:
        app = g.compile(checkpointer=saver)
        if mode == "start":
            run = app.invoke({"log": [], "round": 0, "bonus": 0, "total": 0}, thread_id=thread)
        else:
            run = app.invoke(None, thread_id=thread)
    print(json.dumps({"status": run.status, "state": run.state}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
