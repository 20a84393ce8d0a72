"""``corral serve``'s command line: names of the served graphs, and mistakes as error lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
from serving.server import GRAPHS, serving  # noqa: E402


def test_a_graph_is_served_under_the_name_given_after_the_equals_sign(tmp_path: Path) -> None:
    paths = [f"{GRAPHS}:review=editor", f"{GRAPHS}:review"]
    with serving(str(tmp_path / "runs.sqlite"), tmp_path, paths=paths) as server:
        client = langgraph_sdk.get_sync_client(url=server.url)
        assert sorted(a["assistant_id"] for a in client.assistants.search()) == ["editor", "review"]
        out = client.runs.wait(None, "editor", input={"topic": "alias"})
        assert out["topic"] == "alias"


def test_two_graphs_with_one_name_are_refused_at_start(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.sqlite")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "corral",
            "serve",
            f"{GRAPHS}:review",
            f"{GRAPHS}:review",
            "--db",
            db,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: two graphs are named 'review'")
    assert "PATH:graph=NAME" in done.stderr
