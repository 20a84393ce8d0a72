"""Import: ``import corral`` against a bare interpreter start.

Each figure is the median wall time of fresh interpreters started one after another, so it
holds what a user waits for at a shell: the interpreter's start, ``site`` and the imports.
Bytecode caches are on (in a temporary ``PYTHONPYCACHEPREFIX``, one untimed run first), as
after ``pip install``. Also shown: a module that imports the DSL, builds, compiles and runs
a one-node graph, what a script pays before its first node runs. ``python -X importtime
-c "import corral"`` shows where the time goes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _shared import Report, Row, command, python_version

ROOT = Path(__file__).resolve().parent.parent
GRAPH_MODULE = """\
from typing import TypedDict
from corral import END, Graph

class State(TypedDict):
    n: int

g = Graph(State, name="bench")

@g.node(start=True, then=END)
def count(state: State) -> State:
    return {"n": state["n"] + 1}

g.compile().invoke({"n": 0})
"""


def median_wall(code: str, runs: int, env: dict[str, str]) -> float:
    """Return the median wall time of ``runs`` fresh interpreters running ``code``."""
    argv = [sys.executable, "-c", code]
    subprocess.run(argv, cwd=ROOT, env=env, check=True)
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def measure(quick: bool) -> Report:
    runs = 5 if quick else 15
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        bare = median_wall("pass", runs, env)
        package = median_wall("import corral", runs, env)
        module = median_wall(GRAPH_MODULE, runs, env)
    return Report(
        rows=[Row("import corral / python -c pass", package / bare, 5, "x")],
        notes=[
            f"median of {runs} fresh interpreters (python {python_version()}): bare start "
            f"{bare * 1e3:.1f} ms, import corral {package * 1e3:.1f} ms, a module that "
            f"builds, compiles and runs a graph {module * 1e3:.1f} ms ({module / bare:.1f}x)"
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
