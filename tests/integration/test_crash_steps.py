"""The steps a thread shows after its process was killed mid-superstep (issue 27).

``get_state(T).steps`` counts every node run of the run that is committed: besides the
newest checkpoint's count, a sibling recorded as finished in the superstep the kill cut
short, and the node runs a subgraph's child committed on its own thread. Continuing the
thread runs neither again and counts them, so the snapshot after the kill already shows
them (API.md section 5: each node run counted once; section 11: a child's node runs count
in the parent's steps). Found by the reference model (``test_model_processes.py``).
"""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from corral import END, Context, Graph, SqliteSaver

KILL = False
"""Set in the child process only: the node marked to die kills its own process."""


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    steps: Annotated[list[int], operator.add]


def _node(name: str, *, dies: bool = False) -> Any:
    def run(state: State) -> dict[str, Any]:
        if dies and KILL:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"log": [name]}

    return run


def fan_out() -> Graph[Any]:
    """``a`` fans out to ``b`` and ``c``; ``c`` dies after ``b`` has finished."""
    g = Graph(State)
    g.node("a", start=True, then=("b", "c"))(_node("a"))
    g.node("b", then=END)(_node("b"))
    g.node("c", then=END)(_node("c", dies=True))
    return g


def subgraph() -> Graph[Any]:
    """A subgraph whose child runs ``plan`` and dies in ``write``."""
    child = Graph(State, name="child")
    child.node("plan", start=True, then="write")(_node("plan"))
    child.node("write", then=END)(_node("write", dies=True))
    g = Graph(State)
    g.subgraph("research", child, start=True, then=END)
    return g


def subgraph_after_a() -> Graph[Any]:
    """``a``, then a subgraph whose child runs ``plan`` and dies in ``write``; each node
    records its ``ctx.step``."""

    def node(name: str, *, dies: bool = False) -> Any:
        def run(state: State, ctx: Context) -> dict[str, Any]:
            if dies and KILL:
                os.kill(os.getpid(), signal.SIGKILL)
            return {"log": [name], "steps": [ctx.step]}

        return run

    child = Graph(State, name="child")
    child.node("plan", start=True, then="write")(node("plan"))
    child.node("write", then=END)(node("write", dies=True))
    g = Graph(State)
    g.node("a", start=True, then="research")(node("a"))
    g.subgraph("research", child, then=END)
    return g


def child_main(db: str, which: str) -> None:
    """The killed process: runs thread ``t`` of graph ``which`` until its node dies."""
    global KILL
    KILL = True
    with SqliteSaver(db) as saver:
        globals()[which]().compile(checkpointer=saver).invoke({"log": []}, thread_id="t")


def _killed_run(tmp_path: Path, which: str) -> Path:
    db = tmp_path / "run.sqlite"
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
    code += f"import test_crash_steps as t; t.child_main({str(db)!r}, {which!r})"
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    return db


def test_a_sibling_that_finished_before_the_kill_counts(tmp_path: Path) -> None:
    db = _killed_run(tmp_path, "fan_out")
    with SqliteSaver(db) as saver:
        app = fan_out().compile(checkpointer=saver)
        state = app.get_state("t")
        assert (state.status, state.next) == ("running", ("b", "c"))
        assert state.steps == 2  # a, and b recorded as finished (before the fix: 1)
        run = app.invoke(None, thread_id="t")
        assert run.steps == 3 and run.state["log"] == ["a", "b", "c"]
        assert app.get_state("t").steps == 3


def test_a_childs_node_run_before_the_kill_counts_in_the_parent(tmp_path: Path) -> None:
    db = _killed_run(tmp_path, "subgraph")
    with SqliteSaver(db) as saver:
        app = subgraph().compile(checkpointer=saver)
        state = app.get_state("t")
        assert (state.status, state.next) == ("running", ("research",))
        assert state.steps == 1  # the child's plan, on its own thread (before the fix: 0)
        run = app.invoke(None, thread_id="t")
        assert run.steps == 2 and run.state["log"] == ["plan", "write"]
        assert app.get_state("t").steps == 2


def test_a_child_continued_after_the_kill_runs_its_node_at_the_runs_step(tmp_path: Path) -> None:
    """a=1, research/plan=2 before the kill: continued, research/write is step 3 in the
    trace and in its ctx.step (before the fix: 2, the child's own count)."""
    db = _killed_run(tmp_path, "subgraph_after_a")
    with SqliteSaver(db) as saver:
        app = subgraph_after_a().compile(checkpointer=saver)
        assert app.get_state("t").steps == 2
        run = app.invoke(None, thread_id="t")
        assert run.state["log"] == ["a", "plan", "write"]
        assert run.state["steps"] == [1, 2, 3]
        assert [(r.node, r.step) for r in run.trace] == [("research/write", 3)]
