"""The CLI stops quietly when the reader of its output goes away (``corral draw x | head``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BIG_GRAPH = """
from typing import TypedDict

from corral import END, Graph


class State(TypedDict):
    n: int


g = Graph(State)
for i in range(3000):
    def step(state: State) -> None:
        return None

    g.node(f"node_{i:04d}", start=i == 0, then=f"node_{i + 1:04d}" if i < 2999 else END)(step)
"""


def test_a_closed_pipe_ends_draw_without_an_error(tmp_path: Path) -> None:
    """Output larger than the pipe buffer, read one line, close: no error, SIGPIPE's code."""
    module = tmp_path / "big.py"
    module.write_text(BIG_GRAPH, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "corral", "draw", str(module)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == b"---"  # the title, with the bound
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141
    assert stderr == ""
