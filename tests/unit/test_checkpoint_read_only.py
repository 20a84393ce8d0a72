"""A checkpoint file this process may not write is refused when opened, with the way out.

Root ignores file modes, so as root the files are made immutable (``chattr +i``, which
binds root too) instead of ``chmod``-ed; where neither works the tests are skipped.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TypedDict

import pytest
from read_only import read_only

from corral import END, CheckpointError, CompiledGraph, Graph, SqliteSaver
from corral.cli import main


class State(TypedDict):
    n: int


def counter(saver: SqliteSaver) -> CompiledGraph[State]:
    g = Graph(State, name="counter")

    @g.node(start=True, then=END)
    def add(state: State) -> State:
        return {"n": state["n"] + 1}

    return g.compile(checkpointer=saver)


def written(folder: Path) -> Path:
    """Return a closed checkpoint file in ``folder`` holding thread 't' (n: 0 -> 1)."""
    path = folder / "threads.db"
    with SqliteSaver(str(path)) as saver:
        assert counter(saver).invoke({"n": 0}, thread_id="t").state == {"n": 1}
    assert sorted(p.name for p in folder.iterdir()) == ["threads.db"]  # -wal/-shm removed
    return path


def assert_refused(
    path: Path, capsys: pytest.CaptureFixture[str], cli_says: str = "read-only for this process"
) -> None:
    """Opening ``path`` through the engine is refused with a message naming it, saying it is
    read-only and giving the way out; ``corral threads/history/show`` print ``cli_says``."""
    with pytest.raises(CheckpointError) as caught:
        counter(SqliteSaver(str(path))).get_state("t")
    assert caught.value.path == str(path)
    message = str(caught.value)
    assert repr(str(path)) in message
    assert "read-only for this process" in message
    assert "write permission" in message and "copy the file" in message
    assert "damaged" not in message
    capsys.readouterr()
    for command in (["threads"], ["history", "t"], ["show", "t"]):
        assert main([command[0], "--db", str(path), *command[1:]]) != 0
        printed = capsys.readouterr()
        assert cli_says in printed.err + printed.out
        assert "Traceback" not in printed.err + printed.out


@pytest.mark.parametrize("which", ["file", "folder", "file-and-folder"])
def test_a_file_or_folder_this_process_may_not_write_is_refused_at_open(
    tmp_path: Path, which: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything is read or written: the folder gains no -wal or -shm file."""
    path = written(tmp_path)
    before = path.read_bytes()
    made_read_only = {"file": [path], "folder": [tmp_path]}.get(which, [path, tmp_path])
    with read_only(*made_read_only):
        assert_refused(path, capsys)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["threads.db"]
    with SqliteSaver(str(path)) as saver:  # writable again: the thread is all there
        assert counter(saver).get_state("t").values == {"n": 1}


def test_uncommitted_wal_in_a_read_only_folder_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A -wal file holding commits not yet in the file is left as it is, and read once the
    folder is writable again."""
    source = tmp_path / "live"
    source.mkdir()
    copy = tmp_path / "copy"
    copy.mkdir()
    with SqliteSaver(str(source / "threads.db")) as saver:
        counter(saver).invoke({"n": 0}, thread_id="t")
        shutil.copy(source / "threads.db", copy / "threads.db")
        shutil.copy(source / "threads.db-wal", copy / "threads.db-wal")
    wal = (copy / "threads.db-wal").read_bytes()
    assert wal
    with read_only(copy / "threads.db", copy):
        assert_refused(copy / "threads.db", capsys)
    assert (copy / "threads.db-wal").read_bytes() == wal
    with SqliteSaver(str(copy / "threads.db")) as saver:
        assert counter(saver).get_state("t").values == {"n": 1}


@pytest.mark.parametrize("folder_too", [False, True], ids=["file", "file-and-folder"])
def test_a_read_only_empty_file_is_refused_not_called_damaged(
    tmp_path: Path, folder_too: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty file (what ``touch`` makes) that may not be written stays empty (the CLI,
    which only reads existing checkpoints, says first that the file is empty)."""
    path = tmp_path / "empty.db"
    path.touch()
    with read_only(path, *([tmp_path] if folder_too else [])):
        assert_refused(path, capsys, cli_says="an empty file")
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
