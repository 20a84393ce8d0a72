"""Memory of a long run: a 400-step run whose node returns a new 1 MB string each step.

Issue 10, point 4: with no checkpointer, the run must not grow the process's peak RSS by
more than ~150 MB (before the trace was bounded it grew by over 1 GB). Each case runs in a
fresh process, so one case's peak does not hide another's.

    python benchmarks/bench_memory.py
"""

from __future__ import annotations

import subprocess
import sys

GOAL_MB = 150

CASE = """
import os, resource
from typing import Literal, TypedDict
from corral import END, End, Graph, Guard

class S(TypedDict):
    n: int
    blob: str

g = Graph(S, max_steps=1000)

@g.node(start=True)
def grow(state: S) -> dict[str, object]:
    return {"n": state["n"] + 1, "blob": os.urandom(512 * 1024).hex()}  # a new 1 MB str

@g.router("grow", guards=[Guard("grow", max=500)])
def again(state: S) -> Literal["grow"] | End:
    return END if state["n"] >= 400 else "grow"

app = g.compile()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
MODE
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) / 1024)
"""

MODES = {
    "invoke": "run = app.invoke({'n': 0, 'blob': ''}); assert run.steps == 400",
    "ainvoke": (
        "import asyncio; run = asyncio.run(app.ainvoke({'n': 0, 'blob': ''}));"
        " assert run.steps == 400"
    ),
    "stream updates": "for _ in app.stream({'n': 0, 'blob': ''}, mode='updates'): pass",
}


def grown_mb(mode: str) -> float:
    """Return how many MB the peak RSS of a fresh process grew during the run."""
    script = CASE.replace("MODE", MODES[mode])
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    return float(out.stdout.decode().strip())


def main() -> None:
    print(f"400 steps, a new 1 MB string each, no checkpointer (goal: < {GOAL_MB} MB)")
    for mode in MODES:
        grown = grown_mb(mode)
        verdict = "ok" if grown < GOAL_MB else "OVER"
        ratio = grown / GOAL_MB
        print(f"  {mode:15} peak RSS grew {grown:6.0f} MB  ratio to goal {ratio:.2f}  {verdict}")


if __name__ == "__main__":
    main()
