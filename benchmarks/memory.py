"""Memory: a long run keeps only its recent node runs alive.

A 400-step run whose node returns a new 1 MB string each step, with no checkpointer, under
``invoke``, ``ainvoke`` and ``stream(mode="updates")``, each in a fresh process so that one
case's peak does not hide another's. Measured: how much the process's peak resident memory
grew during the run (the worst of the three); keeping every step's value would take 400 MB.
"""

from __future__ import annotations

import subprocess
import sys

from _shared import Report, Row, command

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
    "stream": "for _ in app.stream({'n': 0, 'blob': ''}, mode='updates'): pass",
}


def grown_mb(mode: str) -> float:
    """Return how many MB the peak RSS of a fresh process grew during the run."""
    script = CASE.replace("MODE", MODES[mode])
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    return float(out.stdout.decode().strip())


def measure(quick: bool) -> Report:
    grown = {mode: grown_mb(mode) for mode in MODES}
    return Report(
        rows=[Row("peak memory of a 400 x 1 MB run", max(grown.values()), 150, "MB")],
        notes=[", ".join(f"{mode} {mb:.0f} MB" for mode, mb in grown.items())],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
