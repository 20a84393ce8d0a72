"""What the benchmarks share: a row of the table, interleaved timing, the chat message.

Every benchmark is a script with a ``measure(quick)`` function returning a :class:`Report`
and ``main = command(measure, __doc__)``; run alone it prints its rows and notes
(``--json`` prints them for ``run.py``).
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from corral import END, End, Graph, Guard


@dataclass(frozen=True)
class Row:
    """One promise: what was measured against its limit (lower is better)."""

    promise: str
    measured: float
    limit: float
    unit: str
    """``"x"`` for a ratio, ``"lost"`` for a count, else a unit such as ``"ms"``."""
    peer: str = ""
    """The same measure on a peer (LangGraph), when it is installed."""

    @property
    def ok(self) -> bool:
        return self.measured <= self.limit

    def show(self, value: float) -> str:
        if self.unit == "x":
            return f"{value:.2f}x"
        if self.unit == "lost":
            return f"{value:.0f} {self.unit}"
        return f"{value:.1f} {self.unit}"

    def show_limit(self) -> str:
        return f"{self.limit:g}x" if self.unit == "x" else f"{self.limit:g} {self.unit}"


@dataclass
class Report:
    """A benchmark's rows and the figures behind them (one line each)."""

    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def command(measure: Callable[[bool], Report], doc: str | None) -> Callable[[], int]:
    """Return the ``main`` of a benchmark script: ``[--quick] [--json]``."""

    def main() -> int:
        parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
        parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller sizes")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        args = parser.parse_args()
        report = measure(args.quick)
        if args.json:
            print(json.dumps({"rows": [asdict(r) for r in report.rows], "notes": report.notes}))
            return 0
        for row in report.rows:
            peer = f"  ({row.peer})" if row.peer else ""
            verdict = "pass" if row.ok else "FAIL"
            measured, limit = row.show(row.measured), row.show_limit()
            print(f"{row.promise}: {measured} (limit {limit}) {verdict}{peer}")
        for note in report.notes:
            print(f"  {note}")
        return 0 if all(r.ok for r in report.rows) else 1

    return main


def least_times(
    *funcs: Callable[[], object], repeats: int, clock: Callable[[], float] = time.thread_time
) -> list[float]:
    """Return the least time of each of ``funcs``, called in turn ``repeats`` times.

    The sides of a ratio take turns in every repeat, so a machine loaded by other processes
    slows them alike; thread CPU time leaves out the time spent waiting for a core.
    """
    times = [float("inf")] * len(funcs)
    for _ in range(repeats):
        for index, func in enumerate(funcs):
            start = clock()
            func()
            times[index] = min(times[index], clock() - start)
    return times


def python_version() -> str:
    return sys.version.split()[0]


def message(i: int) -> dict[str, str]:
    """Return the i-th ~500-byte chat message (distinct text, so nothing compresses away)."""
    words = " ".join(f"w{(i * 7919 + k * 104729) % 100000:05d}" for k in range(80))
    return {"role": "assistant", "content": f"step {i}: {words}"[:470]}


def payload_bytes(steps: int) -> int:
    """Return the JSON bytes of the first ``steps`` messages: what a store must keep."""
    return sum(len(json.dumps(message(i), separators=(",", ":"))) for i in range(steps))


class Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def chat_graph(steps: int) -> Graph[Chat]:
    """Return a graph whose one node appends the next message, ``steps`` times in a run."""
    g = Graph(Chat, name="chat", max_steps=steps + 1)

    @g.node(start=True)
    def chat(state: Chat) -> dict[str, object]:
        return {"messages": [message(len(state["messages"]))]}

    @g.router("chat", guards=[Guard("chat", max=steps - 1, otherwise=END)])
    def again(state: Chat) -> Literal["chat"] | End:
        return "chat"

    return g


def run_chat(app: Any, steps: int, thread_id: str = "bench") -> None:
    """Run the chat graph's ``steps`` supersteps on ``thread_id`` and check it did."""
    run = app.invoke({"messages": []}, thread_id=thread_id)
    assert len(run.state["messages"]) == steps, run.steps
