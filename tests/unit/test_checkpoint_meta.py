"""A hand-edited meta the engine cannot read is a damaged checkpoint.

Each edit changes one key of the newest checkpoint's meta in the file (or the PostgreSQL
table); reading the thread back through the engine (``get_state``, ``history``,
continuing it) and ``corral threads``, ``history`` and ``show`` must raise
``CheckpointError`` naming the file, the thread and the checkpoint, never a ``TypeError``
from inside the engine. A value Python's own conversion reads as meant (``"3"`` for an
int, ``true`` for 1) is read.
"""

from __future__ import annotations

import json
import operator
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    CheckpointError,
    CompiledGraph,
    End,
    Graph,
    Guard,
    Resume,
    SqliteSaver,
    interrupt,
)
from corral.checkpoint import Checkpointer
from corral.cli import main


class State(TypedDict):
    n: int


def looping(saver: Checkpointer) -> CompiledGraph[State]:
    g = Graph(State, name="loop")

    @g.node(start=True)
    def add(state: State) -> State:
        return {"n": state["n"] + 1}

    @g.router("add", guards=[Guard("add", max=3, otherwise=END)])
    def again(state: State) -> Literal["add"] | End:
        return "add"

    return g.compile(checkpointer=saver)


EDITS: dict[str, tuple[str, Any]] = {
    "next is a number": ("next", 5),
    "next holds a string": ("next", ["add"]),
    "supersteps is null": ("supersteps", None),
    "runs counts are strings": ("runs", {"add": "two"}),
    "guards are not triples": ("guards", [["add", "add"]]),
    "interrupts hold a number": ("interrupts", [7]),
    "status is a list": ("status", ["done"]),
}
READ_AS_MEANT: dict[str, tuple[str, Any]] = {
    "steps is a string": ("steps", "3"),
    "run is a bool": ("run", True),
}

READS: dict[str, Callable[[CompiledGraph[State]], object]] = {
    "get_state": lambda app: app.get_state("t"),
    "history": lambda app: app.history("t"),
    "continue": lambda app: app.invoke(None, thread_id="t"),
}


def newest_meta_edit_sqlite(path: Path, key: str, value: Any) -> str:
    """Set ``key`` in the newest checkpoint's meta; return that checkpoint's id."""
    with sqlite3.connect(path) as conn:
        seq, checkpoint_id, meta = conn.execute(
            "SELECT seq, checkpoint_id, meta FROM corral_checkpoints ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        tree = json.loads(meta)
        (tree["v"] if "v" in tree else tree)[key] = value
        conn.execute(
            "UPDATE corral_checkpoints SET meta = ? WHERE seq = ?", (json.dumps(tree), seq)
        )
    return str(checkpoint_id)


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_wrong_meta_in_a_sqlite_file_names_file_thread_and_checkpoint(
    tmp_path: Path, edit: str, read: str
) -> None:
    """Every read of the edited thread raises CheckpointError, with the facts in it."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    checkpoint_id = newest_meta_edit_sqlite(path, *EDITS[edit])
    with SqliteSaver(str(path)) as saver, pytest.raises(CheckpointError) as caught:
        READS[read](looping(saver))
    message = str(caught.value)
    assert str(path) in message and "'t'" in message and repr(checkpoint_id) in message
    assert "damaged" in message and "meta" in message
    assert caught.value.path == str(path)


@pytest.mark.parametrize("command", ["threads", "history", "show"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_wrong_meta_is_named_by_the_cli(
    tmp_path: Path, edit: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral threads/history/show`` read the meta as the engine does: the same error."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    checkpoint_id = newest_meta_edit_sqlite(path, *EDITS[edit])
    capsys.readouterr()
    assert main([command, "--db", str(path), *(["t"] if command != "threads" else [])]) != 0
    printed = " ".join(capsys.readouterr().err.split())
    assert repr(checkpoint_id) in printed and "damaged" in printed, printed
    assert "a bug in corral" not in printed


@pytest.mark.parametrize("edit", list(READ_AS_MEANT))
def test_a_meta_value_python_reads_as_meant_is_read(tmp_path: Path, edit: str) -> None:
    """``"3"`` where an int is expected, ``true`` for 1: read, and the thread continues."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    newest_meta_edit_sqlite(path, *READ_AS_MEANT[edit])
    with SqliteSaver(str(path)) as saver:
        app = looping(saver)
        assert app.get_state("t").status == "done"
        assert len(app.history("t")) == len(saver.checkpoints("t"))
        assert app.invoke(None, thread_id="t").state == {"n": 4}


@pytest.mark.parametrize("next_tasks", [[5], ["add"], [{"task": 0}]])
def test_wrong_next_tasks_under_another_graphs_fingerprint_are_named(
    tmp_path: Path, next_tasks: list[Any]
) -> None:
    """Continuing compares the fingerprint and names the missing next nodes: a damaged
    ``next`` is named as damage there too, not an AttributeError from that comparison."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    newest_meta_edit_sqlite(path, "fingerprint", "another graph")
    checkpoint_id = newest_meta_edit_sqlite(path, "next", next_tasks)
    with SqliteSaver(str(path)) as saver, pytest.raises(CheckpointError) as caught:
        looping(saver).invoke(None, thread_id="t")
    assert repr(checkpoint_id) in str(caught.value) and "damaged" in str(caught.value)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def entry_beside_a_pause(saver: Checkpointer) -> CompiledGraph[Log]:
    """A superstep of a subgraph entry and a node that pauses: the entry is saved as a
    finished task with its count of node runs (``done: [{..., "steps": 1}]``)."""
    child = Graph(Log, name="child")

    @child.node(start=True, then=END)
    def inner(state: Log) -> Log:
        return {"log": ["inner"]}

    g = Graph(Log, name="parent")

    @g.node(start=True, then=["sub", "ask"])
    def first(state: Log) -> Log:
        return {"log": ["first"]}

    g.subgraph("sub", child, then=END)

    @g.node(then=END)
    def ask(state: Log) -> Log:
        return {"log": [str(interrupt("go?"))]}

    return g.compile(checkpointer=saver)


@pytest.mark.parametrize(
    "damage", [{"steps": "x"}, {"steps": None}, {"node": "first"}, {"node": "missing"}]
)
def test_a_wrong_finished_subgraph_entry_is_named(tmp_path: Path, damage: dict[str, Any]) -> None:
    """Continuing reads a finished entry's count back (its writes from the child's thread):
    a damaged entry is a damaged checkpoint, not a ValueError from inside the engine."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        entry_beside_a_pause(saver).invoke({"log": []}, thread_id="t")
        done = saver.chain("t")[-1].meta["done"]
    assert [item["node"] for item in done if "steps" in item] == ["sub"]
    checkpoint_id = newest_meta_edit_sqlite(path, "done", [{**item, **damage} for item in done])
    with SqliteSaver(str(path)) as saver, pytest.raises(CheckpointError) as caught:
        entry_beside_a_pause(saver).invoke(Resume("yes"), thread_id="t")
    assert repr(checkpoint_id) in str(caught.value) and "damaged" in str(caught.value)


@pytest.mark.parametrize("read", ["get_state", "continue"])
def test_a_wrong_list_of_finished_tasks_is_named(tmp_path: Path, read: str) -> None:
    """``done`` is read by get_state's count of committed node runs and by continuing."""
    path = tmp_path / "threads.db"
    with SqliteSaver(str(path)) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    checkpoint_id = newest_meta_edit_sqlite(path, "done", [3])
    with SqliteSaver(str(path)) as saver, pytest.raises(CheckpointError) as caught:
        READS[read](looping(saver))
    assert repr(checkpoint_id) in str(caught.value) and "damaged" in str(caught.value)


@pytest.mark.parametrize("edit", ["next is a number", "supersteps is null", "writes"])
def test_a_wrong_row_in_postgres_names_thread_and_checkpoint(postgres_url: str, edit: str) -> None:
    """The PostgreSQL saver runs the same checks on what it reads back."""
    import psycopg

    from corral import PostgresSaver

    with PostgresSaver(postgres_url) as saver:
        looping(saver).invoke({"n": 0}, thread_id="t")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        checkpoint_id, meta = conn.execute(
            "SELECT checkpoint_id, meta FROM corral_checkpoints ORDER BY seq DESC LIMIT 1"
        ).fetchone()  # type: ignore[misc]
        if edit == "writes":
            column, text = "writes", '[["add", 5]]'
        else:
            tree = json.loads(meta)
            key, value = EDITS[edit]
            (tree["v"] if "v" in tree else tree)[key] = value
            column, text = "meta", json.dumps(tree)
        conn.execute(
            f"UPDATE corral_checkpoints SET {column} = %s WHERE checkpoint_id = %s",
            (text, checkpoint_id),
        )
    with PostgresSaver(postgres_url) as saver, pytest.raises(CheckpointError) as caught:
        looping(saver).get_state("t")
    message = str(caught.value)
    assert "'t'" in message and repr(checkpoint_id) in message and "damaged" in message
