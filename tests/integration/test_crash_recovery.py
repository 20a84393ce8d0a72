"""Kill a real process mid-run, continue the thread in a new one, compare with a clean run.

The graph (``crash_graph.py``, beside this file) has a fan-out, a join of branches of
different lengths and a guarded loop. Its nodes append one line per run to an effects
file. A run that dies at node run ``i`` and is continued with ``invoke(None, thread_id=T)``
must end in the same state as a run that never died, and no node run that finished may run
again: the effects hold every node run of the clean run exactly once, except the one run the
crash cut short (its effect may be there twice when it died after writing it). That holds in
a fan-out too: each sibling is recorded as it finishes, not only when its superstep does.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCRIPT = Path(__file__).with_name("crash_graph.py")
CRASH_EXIT = 17


def run_graph(
    db: Path,
    effects: Path,
    mode: str,
    *,
    crash_at: str | None = None,
    when: str = "before",
    variant: str = "",
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRASH_", "GRAPH_"))}
    env["GRAPH_VARIANT"] = variant
    if crash_at is not None:
        env |= {"CRASH_AT": crash_at, "CRASH_WHEN": when}
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(db), str(effects), "T", mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@functools.cache
def clean_run(tmp: str, variant: str = "") -> tuple[list[str], dict[str, Any]]:
    """Return the effects and final state of a run that is never interrupted."""
    folder = Path(tmp)
    done = run_graph(folder / "clean.sqlite", folder / "clean.txt", "start", variant=variant)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "done"
    return lines(folder / "clean.txt"), result["state"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    return clean_run(str(tmp_path_factory.mktemp("clean")))


def crash_and_resume(
    folder: Path,
    clean: tuple[list[str], dict[str, Any]],
    index: int,
    when: str,
    variant: str = "",
) -> None:
    expected_effects, expected_state = clean
    db, effects = folder / "run.sqlite", folder / "effects.txt"
    for stale in (db, effects):
        stale.unlink(missing_ok=True)
    crashed = run_graph(
        db, effects, "start", crash_at=expected_effects[index], when=when, variant=variant
    )
    assert crashed.returncode == CRASH_EXIT, crashed.stderr
    died_at = index + (1 if when == "after" else 0)
    assert lines(effects) == expected_effects[:died_at]

    resumed = run_graph(db, effects, "resume", variant=variant)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "done"
    assert result["state"] == expected_state
    seen = lines(effects)
    # The criterion: every node run of the clean run exactly once, but the cut one.
    cut = expected_effects[index]
    extra = Counter(seen) - Counter(expected_effects)
    assert Counter(seen) - extra == Counter(expected_effects)
    assert extra == (Counter([cut]) if when == "after" else Counter()), extra
    # And in order: the crashed run's effects, then the cut node run and what followed it.
    assert seen == expected_effects[:died_at] + expected_effects[index:]


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_killed_run_resumes_to_the_same_end(
    clean: tuple[list[str], dict[str, Any]], tmp_path: Path, data: st.DataObject
) -> None:
    """Wherever the process dies, the resumed run ends like a clean one, and only the node
    run that was cut short runs again (not its finished siblings)."""
    index = data.draw(st.integers(min_value=0, max_value=len(clean[0]) - 1), label="node run")
    when = data.draw(st.sampled_from(["before", "after"]), label="dies")
    crash_and_resume(tmp_path, clean, index, when)


@pytest.mark.parametrize(
    ("line", "when"),
    [
        ("0 plan", "before"),  # dies in the very first node: only the input was saved
        ("6 right", "after"),  # the fan-out's second branch, its sibling already done
        ("1 right", "before"),  # the first fan-out: left finished, right never started
        ("13 left_more", "before"),  # the join is half-way: right has arrived
        ("14 merge", "after"),  # the last node of the run, its effect done
    ],
)
def test_chosen_crash_points(
    clean: tuple[list[str], dict[str, Any]], tmp_path: Path, line: str, when: str
) -> None:
    """The edge cases by name: first node, a fan-out sibling, a half-joined join, the end."""
    crash_and_resume(tmp_path, clean, clean[0].index(line), when)


def test_clean_run_shape(clean: tuple[list[str], dict[str, Any]]) -> None:
    """The reference run has the loop and fan-out the property relies on."""
    effects, state = clean
    assert effects[:5] == ["0 plan", "1 left", "1 right", "3 left_more", "4 merge"]
    assert len(effects) == 15
    assert state["round"] == 3 and state["bonus"] == 30


def test_resuming_from_a_damaged_file_is_a_clear_error(
    clean: tuple[list[str], dict[str, Any]], tmp_path: Path
) -> None:
    """A database damaged after the crash is reported by path; nothing restarts silently."""
    db, effects = tmp_path / "run.sqlite", tmp_path / "effects.txt"
    crashed = run_graph(db, effects, "start", crash_at="9 merge")
    assert crashed.returncode == CRASH_EXIT
    conn = sqlite3.connect(db)  # fold the WAL in, then damage the data pages
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with db.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * (db.stat().st_size - 4096))
    resumed = run_graph(db, effects, "resume")
    assert resumed.returncode != 0
    assert "CheckpointError" in resumed.stderr
    assert str(db) in resumed.stderr
    assert lines(effects) == clean[0][: clean[0].index("9 merge")]  # no node ran


def test_resuming_from_a_foreign_database_is_refused(tmp_path: Path) -> None:
    """Another program's SQLite file is refused by name, never reset."""
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE orders (id INTEGER)")
    conn.commit()
    conn.close()
    resumed = run_graph(db, tmp_path / "effects.txt", "resume")
    assert resumed.returncode != 0
    assert "corral did not create" in resumed.stderr
    assert "'orders'" in resumed.stderr


def test_a_changed_graph_is_detected_on_resume(tmp_path: Path) -> None:
    """Continuing a crashed thread with a graph whose nodes changed is refused clearly."""
    db, effects = tmp_path / "run.sqlite", tmp_path / "effects.txt"
    crashed = run_graph(db, effects, "start", crash_at="6 left")
    assert crashed.returncode == CRASH_EXIT
    resumed = run_graph(db, effects, "resume", variant="audit")
    assert resumed.returncode != 0
    assert "CheckpointError" in resumed.stderr
    assert "different nodes or routes" in resumed.stderr
    assert lines(effects) == ["0 plan", "1 left", "1 right", "3 left_more", "4 merge", "5 plan"]


def test_two_processes_run_two_threads_on_one_file(
    clean: tuple[list[str], dict[str, Any]], tmp_path: Path
) -> None:
    """Processes share one database file, each running its own thread, and both finish."""
    db = tmp_path / "shared.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRASH_", "GRAPH_"))}
    runs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), str(db), str(tmp_path / f"{name}.txt"), name, "start"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("A", "B")
    ]
    for name, proc in zip(("A", "B"), runs, strict=True):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert json.loads(out)["state"] == clean[1]
        assert lines(tmp_path / f"{name}.txt") == clean[0]


@pytest.fixture(scope="module")
def clean_sub(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    return clean_run(str(tmp_path_factory.mktemp("clean_sub")), "subgraph")


def test_the_subgraph_variant_matches_the_plain_graph(
    clean: tuple[list[str], dict[str, Any]], clean_sub: tuple[list[str], dict[str, Any]]
) -> None:
    """With left_more as a subgraph of two nodes, each round runs one more node run."""
    effects, state = clean_sub
    assert effects[:6] == [
        "0 plan",
        "1 left",
        "1 right",
        "3 left_more/more_a",
        "4 left_more/more_b",
        "5 merge",
    ]
    assert len(effects) == 18
    assert state["bonus"] == clean[1]["bonus"] and state["total"] == clean[1]["total"]


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_run_killed_inside_a_subgraph_resumes_inside_it(
    clean_sub: tuple[list[str], dict[str, Any]], tmp_path: Path, data: st.DataObject
) -> None:
    """A crash anywhere, also between or inside the child's nodes, resumes where it was: a
    finished child node never runs again, and the run ends like a clean one."""
    index = data.draw(st.integers(min_value=0, max_value=len(clean_sub[0]) - 1), label="run")
    when = data.draw(st.sampled_from(["before", "after"]), label="dies")
    crash_and_resume(tmp_path, clean_sub, index, when, "subgraph")


@pytest.mark.parametrize(
    ("line", "when"),
    [
        ("3 left_more/more_a", "after"),  # the child's first node finished, the second not
        ("4 left_more/more_b", "before"),  # dies in the child's last node
        ("4 left_more/more_b", "after"),  # the child finished, the parent's superstep not
        ("9 left_more/more_a", "before"),  # the second round's entry into the child
    ],
)
def test_chosen_crash_points_in_a_subgraph(
    clean_sub: tuple[list[str], dict[str, Any]], tmp_path: Path, line: str, when: str
) -> None:
    """Inside the child, between its nodes, and after it finished before the parent saved."""
    crash_and_resume(tmp_path, clean_sub, clean_sub[0].index(line), when, "subgraph")
