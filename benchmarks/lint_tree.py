"""Lint a large tree: ``corral lint`` against importing and checking its modules in one process.

A generated tree of 500 modules in folders of 100 (no ``__init__.py``, file names repeated
across folders, as in a monorepo): nine in ten define a small graph (a start node, a
guarded review loop, a router), one in a hundred of those has an unguarded cycle (a CR201),
and one in ten is plain Python that never mentions corral. ``corral lint TREE`` imports each
module in a child process of its own, so that a module that hangs, exits or crashes spoils
only its own result; the floor is one fresh interpreter that imports every module in
itself and checks every graph it defines, what lint did before it kept user code apart.

Each function's docstring names its module, as real modules' functions differ: the analyser
keeps what it read from a function's source per code object, and code objects from two
files compare equal when their text and line numbers do, so with identical functions the
floor would read three sources for the whole tree while each lint child reads its own three.

The limit is 4x: a module's own process costs a fork, the first touch of about a thousand
pages and an exit (about 6 ms of CPU) against about 2.5 ms of work for a small module, so
2x cannot be kept while each module is kept apart (see docs/guarantees.md, lint's Cost).

Each figure is the least wall time of a few runs, the two in turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from _shared import Report, Row, command

GRAPH = """\
from typing import Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    text: str
    score: int


g = Graph(State, name="m{index}", max_steps=50)


@g.node(start=True, then="review")
def draft(state: State) -> dict[str, object]:
    "Draft of agent {index}."
    return {{"text": state["text"] + "."}}


@g.node()
def review(state: State) -> dict[str, object]:
    "Review of agent {index}."
    return {{"score": state["score"] + 1}}


@g.router("review", guards=[Guard("draft", max={bound}, otherwise=END)])
def after_review(state: State) -> Literal["draft"] | End:
    "Route of agent {index}."
    return "draft" if state["score"] < 3 else END
"""

UNGUARDED = GRAPH.replace(', guards=[Guard("draft", max={bound}, otherwise=END)]', "")

PLAIN = '''\
"""A module with no graph."""


def helper_{index}(x: int) -> int:
    return x * {index}
'''

IN_PROCESS = """\
import runpy, sys
from corral import Graph
found = 0
for path in sys.argv[1:]:
    for value in list(runpy.run_path(path).values()):
        if isinstance(value, Graph):
            found += len(value.check())
print(found)
"""


def write_tree(root: str, files: int) -> list[str]:
    """Write ``files`` modules under ``root`` in folders of 100; return their paths."""
    paths = []
    for index in range(files):
        folder = os.path.join(root, f"pkg{index // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        if index % 10 == 9:
            text = PLAIN.format(index=index)
        elif index % 100 == 0:
            text = UNGUARDED.format(index=index)
        else:
            text = GRAPH.format(index=index, bound=2 + index % 5)
        path = os.path.join(folder, f"agent_{index % 100:02d}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    return paths


def wall(argv: list[str], expected: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    assert done.returncode == expected, (argv[:4], done.returncode, done.stderr[-500:])
    return took


def measure(quick: bool) -> Report:
    files, runs = (200, 1) if quick else (500, 2)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_tree(tmp, files)
        lint = [sys.executable, "-m", "corral", "lint", tmp]
        floor = [sys.executable, "-c", IN_PROCESS, *paths]
        times: dict[str, float] = {"lint": float("inf"), "floor": float("inf")}
        for _ in range(runs):
            times["lint"] = min(times["lint"], wall(lint, 1))  # 1: the CR201 findings
            times["floor"] = min(times["floor"], wall(floor, 0))
    return Report(
        rows=[
            Row(
                f"corral lint of {files} modules / in one process",
                times["lint"] / times["floor"],
                4,
                "x",
            )
        ],
        notes=[
            f"{files} modules: corral lint {times['lint']:.1f} s, imported and checked in "
            f"one process {times['floor']:.1f} s (least of {runs})"
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
