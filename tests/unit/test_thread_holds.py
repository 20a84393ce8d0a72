"""A thread is held by the live run that writes it (API.md section 14, docs/guarantees.md).

A run started on a thread another live run holds is refused with ``ConcurrentRunError``
before it stores anything; so is ``update_state``. The hold ends with the run: done,
paused, failed, interrupted by Ctrl-C, or its process killed (on its machine at once; a
holder on another machine after its lease).
"""

from __future__ import annotations

import asyncio
import gc
import operator
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from corral import END, ConcurrentRunError, Graph, SqliteSaver, interrupt
from corral.checkpoint import Checkpointer
from corral.runtime.app import CompiledGraph


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def make_app(saver: Checkpointer, inside: Any = None) -> CompiledGraph[Log]:
    """``work`` (calling ``inside(app)`` on the run whose input is ``first``) then ``ask``,
    which pauses when the input was ``pause``."""
    g = Graph(Log)

    def work(state: Log) -> dict[str, Any]:
        if inside is not None and "first" in state["log"] and "work" not in state["log"]:
            inside(app)
        return {"log": ["work"]}

    def ask(state: Log) -> dict[str, Any]:
        if "pause" in state["log"]:
            return {"log": [f"answer {interrupt('go on?')}"]}
        return {}

    g.node("work", start=True, then="ask")(work)
    g.node("ask", then=END)(ask)
    app = g.compile(checkpointer=saver)
    return app


def test_a_run_started_inside_a_running_one_is_refused_and_leaves_nothing(
    saver: Checkpointer,
) -> None:
    refused: list[str] = []

    def second_runs(app: CompiledGraph[Log]) -> None:
        for start in ({"log": ["second"]}, None):
            with pytest.raises(ConcurrentRunError, match="held by another run"):
                app.invoke(start, thread_id="t")
        with pytest.raises(ConcurrentRunError):
            app.update_state("t", {"log": ["by hand"]})
        refused.append("all three")

    app = make_app(saver, second_runs)
    kept = len(saver.checkpoints("t"))
    assert app.invoke({"log": ["first"]}, thread_id="t").state["log"] == ["first", "work"]
    assert refused == ["all three"]
    assert len(saver.checkpoints("t")) == kept + 3  # input, work, ask: nothing of theirs
    assert app.invoke({"log": ["third"]}, thread_id="t").state["log"][-1] == "work"


def test_a_paused_or_failed_run_frees_its_thread(saver: Checkpointer) -> None:
    app = make_app(saver)
    assert app.invoke({"log": ["pause"]}, thread_id="t").status == "interrupted"
    app.update_state("t", {"log": ["by hand"]})  # not held while it waits for an answer

    def fail(app: CompiledGraph[Log]) -> None:
        raise RuntimeError("boom")

    failing = make_app(saver, fail)
    with pytest.raises(Exception, match="boom"):
        failing.invoke({"log": ["first"]}, thread_id="u")
    assert app.invoke(None, thread_id="u").state["log"] == ["first", "work"]


@pytest.mark.parametrize("how", ["stream", "astream", "stream of an async graph"])
@pytest.mark.parametrize("read", [0, 1])
def test_a_stream_dropped_unread_or_part_way_frees_its_thread(
    saver: Checkpointer, how: str, read: int
) -> None:
    """A stream holds its thread from the call (which checks and stores its input); one
    dropped before its first item, or after one, ends its hold then: the next run of the
    thread is not refused."""
    g = Graph(Log)

    def work(state: Log) -> dict[str, Any]:
        return {"log": ["work"]}

    async def work_async(state: Log) -> dict[str, Any]:
        return {"log": ["work"]}

    g.node("work", start=True, then=END)(work_async if how.endswith("async graph") else work)
    app = g.compile(checkpointer=saver)

    async def drop_astream() -> None:
        stream = app.astream({"log": ["dropped"]}, thread_id="t")
        for _ in range(read):
            await anext(stream)
        del stream  # its loop closes it as the loop ends, if it began

    if how == "astream":
        asyncio.run(drop_astream())
    else:
        stream = iter(app.stream({"log": ["dropped"]}, thread_id="t"))
        for _ in range(read):
            next(stream)
        del stream
    gc.collect()
    assert app.invoke({"log": ["next"]}, thread_id="t").status == "done"


def test_ctrl_c_frees_the_thread_for_this_process_and_others(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"

    def ctrl_c(app: CompiledGraph[Log]) -> None:
        raise KeyboardInterrupt

    with SqliteSaver(path) as saver:
        with pytest.raises(KeyboardInterrupt):
            make_app(saver, ctrl_c).invoke({"log": ["first"]}, thread_id="t")
        holder = _holder(path)
    assert holder == (None, None)  # released on the way out, not left to lapse
    with SqliteSaver(path) as saver:
        assert make_app(saver).invoke(None, thread_id="t").state["log"] == ["first", "work"]


_KILLED = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from test_thread_holds import make_app
from corral import SqliteSaver

def die(app):
    os.kill(os.getpid(), signal.SIGKILL)

make_app(SqliteSaver(sys.argv[1]), die).invoke({"log": ["first"]}, thread_id="t")
"""


def test_a_killed_run_frees_its_thread_on_its_machine_at_once(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    here = str(Path(__file__).parent)
    child = subprocess.run([sys.executable, "-c", _KILLED, str(path), here], check=False)
    assert child.returncode == -signal.SIGKILL
    assert _holder(path)[0] is not None  # its input was committed: it held the thread
    with SqliteSaver(path) as saver:
        assert make_app(saver).invoke(None, thread_id="t").state["log"] == ["first", "work"]


def test_a_run_on_another_machine_holds_the_thread_until_its_lease_ends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.sqlite"
    with SqliteSaver(path) as saver:
        app = make_app(saver)
        app.invoke({"log": ["pause"]}, thread_id="t")
        _set_holder(path, "elsewhere", "other-host/boot 4242", time.time() + 60)
        with pytest.raises(ConcurrentRunError, match="process 4242 on 'other-host'"):
            app.invoke({"log": ["second"]}, thread_id="t")
        with pytest.raises(ConcurrentRunError):
            app.update_state("t", {"log": ["by hand"]})
        _set_holder(path, "elsewhere", "other-host/boot 4242", time.time() - 1)
        app.update_state("t", {"log": ["by hand"]})
        assert _holder(path) == (None, None)


def test_a_holder_whose_process_ended_on_this_machine_no_longer_holds(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    with SqliteSaver(path) as saver:
        app = make_app(saver)
        app.invoke({"log": ["pause"]}, thread_id="t")
        here = _holder_host()
        _set_holder(path, "alive", f"{here} {os.getppid()}", time.time() - 1)
        with pytest.raises(ConcurrentRunError):  # our parent lives: its lease does not matter
            app.invoke({"log": ["second"]}, thread_id="t")
        _set_holder(path, "dead", f"{here} {gone.stdout.strip()}", time.time() + 60)
        assert app.invoke({"log": ["second"]}, thread_id="t").state["log"][-2:] == [
            "second",
            "work",
        ]


def _holder_host() -> str:
    from corral.checkpoint.base import holder_id

    return holder_id().rpartition(" ")[0]


def _holder(path: Path) -> tuple[Any, Any]:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT holder, held_by FROM corral_threads WHERE name = 't'").fetchone()
    return row[0], row[1]


def _set_holder(path: Path, holder: str, held_by: str, until: float) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE corral_threads SET holder = ?, held_by = ?, held_until = ?",
            (holder, held_by, until),
        )
    conn.close()
