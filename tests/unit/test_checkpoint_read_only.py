"""A checkpoint file this process may not write is opened for reading (issue 18, point 7).

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


@pytest.mark.parametrize("folder_too", [False, True], ids=["file", "file-and-folder"])
def test_a_read_only_file_is_read_and_a_write_says_it_is_read_only(
    tmp_path: Path, folder_too: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """get_state, history and ``corral threads/history`` work; a write names the cause."""
    path = written(tmp_path)
    before = path.read_bytes()
    with read_only(path, *([tmp_path] if folder_too else [])):
        with SqliteSaver(str(path)) as saver:
            app = counter(saver)
            assert app.get_state("t").values == {"n": 1}
            assert len(app.history("t")) == 2
            assert saver.threads() == ["t"]
            with pytest.raises(CheckpointError, match="read-only") as caught:
                app.invoke({"n": 5}, thread_id="new")
            assert caught.value.path == str(path)
        assert main(["threads", "--db", str(path)]) == 0
        assert main(["history", "--db", str(path), "t"]) == 0
    out = capsys.readouterr().out
    assert "t " in out and "done" in out
    assert path.read_bytes() == before


def test_uncommitted_wal_in_a_read_only_folder_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    """Reading would skip the -wal's commits, so the error names it instead of hiding them."""
    source = tmp_path / "live"
    source.mkdir()
    copy = tmp_path / "copy"
    copy.mkdir()
    with SqliteSaver(str(source / "threads.db")) as saver:
        counter(saver).invoke({"n": 0}, thread_id="t")
        shutil.copy(source / "threads.db", copy / "threads.db")
        shutil.copy(source / "threads.db-wal", copy / "threads.db-wal")
    assert (copy / "threads.db-wal").stat().st_size > 0
    with read_only(copy / "threads.db", copy):
        with pytest.raises(CheckpointError, match=r"threads\.db-wal.*folder writable"):
            counter(SqliteSaver(str(copy / "threads.db"))).get_state("t")


def test_a_read_only_empty_file_is_not_called_damaged(tmp_path: Path) -> None:
    """A read-only file with no corral checkpoints says so, not that it is damaged."""
    path = tmp_path / "empty.db"
    path.touch()
    with read_only(path, tmp_path):
        with pytest.raises(CheckpointError, match="read-only") as caught:
            counter(SqliteSaver(str(path))).get_state("t")
    assert "damaged" not in str(caught.value)
