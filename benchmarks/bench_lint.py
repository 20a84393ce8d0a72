"""Time ``corral lint`` on a generated tree of 10,000 files (issue 18, point 3).

Run: ``python benchmarks/bench_lint.py [--files N] [--keep DIR] [--runs K]``. It writes a tree
of ``N`` modules (default 10,000) into a temporary folder: 100 folders (no ``__init__.py``,
so they are plain scripts, some with the same file names as in other folders) of 100
modules each. Every tenth module is plain Python that never mentions corral (lint skips
it unread beyond a marker search); the others each define a small graph: a start node, a
guarded review loop and a router, so every file is imported and analysed. One file in a
hundred has an unguarded cycle (a CR201), so the run exits 1 and prints findings.

It then runs ``corral lint TREE`` in a fresh interpreter ``--runs`` times (default 3) and
prints the best wall time and the finding count. To compare two versions, run it with each
one's source first on ``PYTHONPATH`` (``PYTHONPATH=/path/to/other/src python
benchmarks/bench_lint.py``); the child interpreter inherits the environment. The goal
(issue 18): lint with each module imported in a child process stays within ~2x of the
in-process time measured before that change.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

_GRAPH = """\
from typing import Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    text: str
    score: int


g = Graph(State, name="m{index}", max_steps=50)


@g.node(start=True, then="review")
def draft(state: State) -> dict[str, object]:
    return {{"text": state["text"] + "."}}


@g.node()
def review(state: State) -> dict[str, object]:
    return {{"score": state["score"] + 1}}


@g.router("review", guards=[Guard("draft", max={bound}, otherwise=END)])
def after_review(state: State) -> Literal["draft"] | End:
    return "draft" if state["score"] < 3 else END
"""

_UNGUARDED = """\
from typing import Literal, TypedDict

from corral import END, End, Graph


class State(TypedDict):
    n: int


g = Graph(State, name="loop{index}")


@g.node(start=True)
def spin(state: State) -> dict[str, object]:
    return {{"n": state["n"] + 1}}


@g.router("spin")
def again(state: State) -> Literal["spin"] | End:
    return "spin" if state["n"] < 3 else END
"""

_PLAIN = '''\
"""A module with no graph."""


def helper_{index}(x: int) -> int:
    return x * {index}
'''


def write_tree(root: str, files: int) -> None:
    """Write ``files`` modules under ``root`` in folders of 100."""
    for index in range(files):
        folder = os.path.join(root, f"pkg{index // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        # Names repeat across folders (agent_00 ... agent_99), as in a real monorepo.
        name = f"agent_{index % 100:02d}.py"
        if index % 10 == 9:
            text = _PLAIN.format(index=index)
        elif index % 100 == 0:
            text = _UNGUARDED.format(index=index)
        else:
            text = _GRAPH.format(index=index, bound=2 + index % 5)
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def time_lint(root: str, runs: int, extra: list[str]) -> tuple[float, int, int]:
    """Return the best wall time of ``corral lint root``, its exit code and line count."""
    best = float("inf")
    code, lines = -1, 0
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "corral", "lint", root, *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        best = min(best, time.perf_counter() - began)
        code, lines = done.returncode, len(done.stdout.splitlines())
    return best, code, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="write the tree here and keep it")
    parser.add_argument("lint_args", nargs="*", help="extra arguments for corral lint")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or os.path.join(scratch, "tree")
        if not os.path.isdir(root):
            write_tree(root, args.files)
        best, code, lines = time_lint(root, args.runs, args.lint_args)
    print(f"corral lint on {args.files} files: best of {args.runs}: {best:.2f} s")
    print(f"exit code {code}, {lines} output lines")


if __name__ == "__main__":
    main()
