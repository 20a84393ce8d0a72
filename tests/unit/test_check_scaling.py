"""check() stays linear: ten times the nodes costs about ten times the time, not a hundred.

A rule that goes quadratic again (a membership test against a tuple of every node, a
second pass per node) makes the 10x graph cost ~100x. The ratio is taken between the best
of three interleaved timings at each size, and the bar (40x) is far above linear (~10x)
and far below quadratic, so a loaded machine does not make it flaky.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_check import chain_graph


def test_check_time_grows_linearly_with_the_graph() -> None:
    """check() on a 2,000-node chain costs well under 40x the 200-node one."""
    small, large = chain_graph(200, span=20), chain_graph(2000, span=20)
    small.check()
    large.check()
    best = {"small": float("inf"), "large": float("inf")}
    for _ in range(3):
        for label, g in (("small", small), ("large", large)):
            started = time.perf_counter()
            g.check()
            best[label] = min(best[label], time.perf_counter() - started)
    assert best["large"] / best["small"] < 40, best
