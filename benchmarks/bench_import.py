"""Time ``import corral`` against a bare interpreter start, and ``corral lint examples`` (issue 15).

Run: ``python benchmarks/bench_import.py [--runs N]``. Each figure is the median wall time
of ``N`` (default 11) fresh interpreters started with ``subprocess``, so it includes what a
user waits for at a shell: interpreter start, ``site``, and the imports.

It prints:

- ``python -c pass``: the bare interpreter start (the floor);
- ``import corral``: the package alone, the goal being within 5x of the floor;
- ``from corral import Graph``: ``from corral import END, Graph, Guard``, what a module that
  defines a graph imports (the DSL; public names are imported on first use);
- ``a graph module``: ``from corral import END, Graph, Guard`` plus building and compiling a
  two-node graph, what a script that defines and runs a graph pays before its first node runs;
- ``corral lint examples``: the command line on the repository's examples (analyser,
  networkx and a worker process included).

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed, the caches
in a temporary ``PYTHONPYCACHEPREFIX`` folder, one untimed run first), as after ``pip
install``, which compiles the package; without caches every start compiles corral's source
again, which costs more than all of corral's imports together.

To compare two versions, run it with each one's source first on ``PYTHONPATH``
(``PYTHONPATH=/path/to/other/src python benchmarks/bench_import.py``); the children inherit
the environment. ``python -X importtime -c "import corral"`` shows where the time goes.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_NAMES = "from corral import END, Graph, Guard"
_GRAPH = """\
from typing import TypedDict
from corral import END, Graph, Guard

class State(TypedDict):
    n: int

g = Graph(State, name="bench")

@g.node(start=True, then=END)
def count(state: State) -> State:
    return {"n": state["n"] + 1}

g.compile().invoke({"n": 0})
"""


def median_s(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Return the median wall and CPU time of ``runs`` fresh processes running ``argv``.

    One untimed run first writes the bytecode caches.
    """
    subprocess.run(argv, cwd=_ROOT, stdout=subprocess.DEVNULL, check=False, env=env)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=_ROOT, stdout=subprocess.DEVNULL, check=False, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    runs = parser.parse_args().runs
    py = sys.executable
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        bare = median_s([py, "-c", "pass"], runs, env)
        rows = [
            ("python -c pass", bare),
            ("import corral", median_s([py, "-c", "import corral"], runs, env)),
            ("from corral import Graph", median_s([py, "-c", _NAMES], runs, env)),
            ("a graph module", median_s([py, "-c", _GRAPH], runs, env)),
            ("corral lint examples", median_s([py, "-m", "corral", "lint", "examples"], runs, env)),
        ]
    print(f"median of {runs} fresh interpreters each (wall, then CPU: steadier on a busy machine):")
    for name, (wall, cpu) in rows:
        print(
            f"  {name:25} {wall * 1e3:7.1f} ms {wall / bare[0]:5.1f}x bare"
            f"   cpu {cpu * 1e3:7.1f} ms {cpu / bare[1]:5.1f}x bare"
        )


if __name__ == "__main__":
    main()
