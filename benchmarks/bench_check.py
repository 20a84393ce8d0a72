"""Time the analyser on graphs whose elementary cycles are far too many to list.

Run: ``python benchmarks/bench_check.py [--repeat 7]``. It builds

- a chain ``n0 → n1 → ... → END`` of 1,000 and of 10,000 nodes where every node's router
  can also skip one node ahead, and every tenth node can jump 100 nodes back through a
  guarded route (more than 10^20 elementary cycles), and
- a dense 16-node complete graph: every node's router can go to every node (itself
  included) or END, and every route is guarded (over 10^12 elementary cycles),

then prints the best of several CPU timings of ``g.check()`` (which reads every annotation
and runs every rule) and of ``analyse(spec)`` alone, next to the goals from issues 2 and
15, and the ratio measured / goal (below 1 means the goal is met). Last, the ratio of the
10,000-node chain's ``check()`` to the 1,000-node one's: linear is 10x, the goal 12x
(issue 15, point 4). CPU time (``time.process_time``) is what the process itself spent, so
other programs on a busy machine disturb the figures less than wall time; the collector is
left as ``check()`` finds it. The sizes are timed in turn, round after round, so a spell of
load touches both. ``--parts`` also prints each part of ``check()`` (reading the spec,
indexing the routes, each rule) on both chains and how much it grew, to find the one that
grows faster than the graph. ``--callgrind`` (needs valgrind) counts, instead of timing, what
one ``check()`` of each chain executes: instructions, and the reads and writes that miss a
1 MiB last-level cache (the size of one core's L2 here). Unlike times these counts do not
move with the load on the machine; the instructions grow 10x (the work is linear) and the
misses far more, which is what makes the time grow more than 10x.

The other generators (:func:`guarded_graph`, :func:`loops_graph`, ...) are shapes the
scaling test (``tests/unit/test_check_scaling.py``) times at two sizes.
"""

from __future__ import annotations

import argparse
import operator
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypedDict

from corral import END, Graph, Guard
from corral.analysis import analyse, list_cycles
from corral.spec import GraphSpec


class State(TypedDict):
    step: int


def _node(state: State) -> dict[str, Any]:
    return {"step": state["step"] + 1}


def _router_returning(*targets: str) -> Callable[[State], str]:
    def route(state: State) -> str:
        return targets[0]

    route.__annotations__ = {"state": State, "return": Literal[targets]}
    return route


def chain_graph(size: int = 1000, span: int = 100) -> Graph[State]:
    """Return a chain of ``size`` nodes with guarded back routes.

    Every node routes one and two nodes ahead (unguarded), so there are Fibonacci-many paths
    forward; every tenth node from ``span`` on also routes ``span`` nodes back through a
    guarded route, closing more than 10^20 elementary cycles.
    """
    g = Graph(State, name=f"chain{size}")
    for i in range(size):
        name = f"n{i}"
        g.node(name, start=i == 0)(_node)
        ahead = [f"n{j}" if j < size else END for j in (i + 1, i + 2)]
        forward = list(dict.fromkeys(ahead))
        if i >= span and i % 10 == 9:
            back = f"n{i - span}"
            route = _router_returning(*forward, back)
            g.router(name, guards=[Guard(back, max=2, otherwise=forward[0])])(route)
        else:
            g.router(name)(_router_returning(*forward))
    return g


def ladder_graph(size: int) -> Graph[State]:
    """Return a chain of ``size`` nodes where every node also routes one back, guarded.

    Every node has a router and a guard, so a rule that scans all nodes once per guard (or
    per router) grows with the square of ``size``.
    """
    g = Graph(State, name=f"ladder{size}")
    _add_ladder(g, size, start=True, leave=END)
    return g


def loops_graph(size: int, *, guarded: bool = True) -> Graph[State]:
    """Return ``size // 3`` loops ``a → b → c → a`` in a row, each left for the next one.

    Each loop's way back is guarded (``guarded=True``: many small groups, each walked
    exactly by ``g.bound()``) or not (CR201 reports every loop).
    """
    g = Graph(State, name=f"loops{size}")
    _add_loops(g, size, guarded=guarded, start=True)
    return g


def guarded_graph(size: int) -> Graph[State]:
    """Return a ladder of ``size // 2`` nodes that leads into ``size // 2`` guarded loops.

    A guard on every node of the ladder, one group of cycles there and one per loop after
    it: the shapes that made rules, and ``g.bound()``, quadratic, in one graph.
    """
    g = Graph(State, name=f"guarded{size}")
    _add_ladder(g, size // 2, start=True, leave="a0")
    _add_loops(g, size - size // 2, guarded=True, start=False)
    return g


def _add_ladder(g: Graph[State], size: int, *, start: bool, leave: str) -> None:
    for i in range(size):
        name = f"n{i}"
        g.node(name, start=start and i == 0)(_node)
        ahead = f"n{i + 1}" if i + 1 < size else leave
        if i == 0:
            g.router(name)(_router_returning(ahead))
            continue
        back = f"n{i - 1}"
        g.router(name, guards=[Guard(back, max=2, otherwise=ahead)])(_router_returning(ahead, back))


def _add_loops(g: Graph[State], size: int, *, guarded: bool, start: bool) -> None:
    loops = max(1, size // 3)
    for i in range(loops):
        a, b, c = f"a{i}", f"b{i}", f"c{i}"
        g.node(a, start=start and i == 0, then=b)(_node)
        g.node(b, then=c)(_node)
        g.node(c)(_node)
        onward = f"a{i + 1}" if i + 1 < loops else END
        guards = [Guard(a, max=2, otherwise=onward)] if guarded else []
        g.router(c, guards=guards)(_router_returning(onward, a))


def complete_graph(size: int = 16) -> Graph[State]:
    """Return ``size`` nodes where every node routes to every node and END, all guarded."""
    g = Graph(State, name=f"complete{size}")
    names = [f"n{i}" for i in range(size)]
    for i, name in enumerate(names):
        g.node(name, start=i == 0)(_node)
        guards = [Guard(t, max=2, otherwise=END) for t in names]
        g.router(name, guards=guards)(_router_returning(*names, END))
    return g


def cpu_time(func: Callable[[], object]) -> float:
    """Return the CPU time of one call of ``func()`` in seconds."""
    started = time.process_time()
    func()
    return time.process_time() - started


def best_of(func: Callable[[], object], repeat: int = 7) -> float:
    """Return the least CPU time of ``repeat`` calls of ``func()`` in seconds."""
    return min(cpu_time(func) for _ in range(repeat))


def part_times(g: Graph[State], spec: GraphSpec | None = None) -> dict[str, float]:
    """Return the CPU time of each part of one ``check()`` of ``g``, by name (the scaling
    test times them too). Reading the spec is timed too unless ``spec`` is given."""
    from corral.analysis._graph import SpecGraph
    from corral.analysis.rules import RULES

    times: dict[str, float] = {}
    if spec is None:
        started = time.process_time()
        spec = g.spec()
        times["spec"] = time.process_time() - started
    started = time.process_time()
    graph = SpecGraph(spec)
    times["SpecGraph"] = time.process_time() - started
    for code, rule in RULES.items():
        started = time.process_time()
        list(rule.check(graph))
        times[code] = time.process_time() - started
    return times


def print_parts(small: Graph[State], large: Graph[State], repeat: int) -> None:
    """Print the least time of each part of ``check()`` on both graphs, and its growth."""
    from corral.analysis import collector_paused

    best: list[dict[str, float]] = [{}, {}]
    for _ in range(repeat):
        for i, g in enumerate((small, large)):
            with collector_paused():
                times = part_times(g)
            for part, spent in times.items():
                best[i][part] = min(best[i].get(part, spent), spent)
    print(f"parts of check(), {small.name} -> {large.name}:")
    for part, spent in best[1].items():
        before = best[0][part]
        grown = f"{spent / before:5.1f}x" if before >= 0.0001 else "    -"
        print(f"  {part:10} {before * 1000:8.2f} ms {spent * 1000:9.2f} ms  {grown}")


def counted(size: int, calls: int) -> None:
    """Call ``check()`` of a chain of ``size`` nodes ``calls`` times through ``operator.call``
    (what ``--callgrind`` counts)."""
    g = chain_graph(size)
    for _ in range(calls):
        operator.call(g.check)


def callgrind_counts(size: int) -> dict[str, int]:
    """Return what one ``check()`` of a chain of ``size`` nodes executes, under callgrind:
    ``Ir`` (instructions), ``LLmiss`` (data reads and writes missing a 1 MiB last level).

    The second of two calls is counted (the first fills the caches of the analyser).
    """
    with tempfile.TemporaryDirectory() as folder:
        out = f"{folder}/callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--cache-sim=yes",
                "--LL=1048576,16,64",
                "--collect-atstart=no",
                "--toggle-collect=_operator_call",
                "--dump-after=_operator_call",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--counted",
                str(size),
            ],
            check=True,
            capture_output=True,
        )
        with open(f"{out}.2") as dump:
            for line in dump:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith("summary:"):
                    values = dict(zip(events, map(int, line.split()[1:]), strict=True))
                    return {"Ir": values["Ir"], "LLmiss": values["DLmr"] + values["DLmw"]}
    msg = "callgrind wrote no summary"
    raise RuntimeError(msg)


def print_callgrind() -> None:
    """Print the callgrind counts of ``check()`` on both chains, and their growth."""
    small, large = callgrind_counts(1000), callgrind_counts(10_000)
    print("check() under callgrind (1 MiB last level), chain1000 -> chain10000:")
    for event in ("Ir", "LLmiss"):
        grown = large[event] / small[event]
        print(f"  {event:7} {small[event] / 1e6:9.2f} M {large[event] / 1e6:9.2f} M  {grown:5.1f}x")


def main(argv: list[str] | None = None) -> int:
    """Print the timings and return 1 if a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timings per case (best kept)")
    parser.add_argument("--parts", action="store_true", help="time each part of check() too")
    parser.add_argument(
        "--callgrind", action="store_true", help="count instructions and misses, no timing"
    )
    parser.add_argument("--counted", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.counted is not None:
        counted(args.counted, 2)
        return 0
    if args.callgrind:
        print_callgrind()
        return 0
    print(f"python {sys.version.split()[0]}, best of {args.repeat} CPU timings")
    cases = (
        ("1,000-node chain, guarded back routes", chain_graph(1000), 0.1),
        ("10,000-node chain, guarded back routes", chain_graph(10_000), None),
        ("dense 16-node complete graph, all routes guarded", complete_graph(), 0.05),
    )
    best: dict[str, float] = {}
    for label, g, _goal in cases:
        found = g.check()
        # every cycle is guarded and END is reachable (CR203 may warn: max_steps=50 is far
        # below what these guards allow)
        assert [d for d in found if d.code != "CR203"] == [], found
        best[label] = float("inf")
    for _ in range(args.repeat):  # sizes in turn, so a spell of load touches all of them
        for label, g, _goal in cases:
            best[label] = min(best[label], cpu_time(g.check))
    missed = False
    for label, g, goal in cases:
        spec = g.spec()
        check_s = best[label]
        analyse_s = best_of(partial(analyse, spec), args.repeat)
        sample = list_cycles(spec, limit=1000)
        against = (
            f"  goal {goal * 1000:.0f} ms  ratio {check_s / goal:.3f}" if goal is not None else ""
        )
        print(
            f"{label}: {len(spec.nodes)} nodes, {sum(1 for _ in spec.edges())} routes\n"
            f"  check()        {check_s * 1000:8.2f} ms{against}\n"
            f"  analyse(spec)  {analyse_s * 1000:8.2f} ms\n"
            f"  cycles(limit=1000): {len(sample)} listed, truncated={sample.truncated}"
        )
        missed = missed or (goal is not None and check_s > goal)
    small, large = best[cases[0][0]], best[cases[1][0]]
    growth = large / small
    print(f"check() 10,000 nodes / 1,000 nodes: {growth:.1f}x  (linear 10x, goal 12x)")
    if args.parts:
        print_parts(cases[0][1], cases[1][1], args.repeat)
    return 1 if missed or growth > 12 else 0


if __name__ == "__main__":
    raise SystemExit(main())
