"""A counting graph shared by the checkpoint tests that run a long thread through a saver.

``counter(target)`` counts ``n`` up to ``target``, one superstep a count, and appends a
~200-byte log line each step (long enough that the savers store each line once as a value
and later snapshots refer to it).
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import END, End, Graph, Guard

__all__ = ["Count", "counter"]


class Count(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def counter(target: int) -> Graph[Count]:
    """Return a graph that counts ``n`` up to ``target``, logging one line a step."""
    g = Graph(Count, max_steps=1000)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1, "log": [f"c{state['n'] + 1:04d}" * 40]}

    @g.router("count", guards=[Guard("count", max=10_000)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= target else "count"

    return g
