"""A graph whose node needs ``ctx.deps`` (a tool client), for the worker ``--deps`` tests.

``make_tools`` is the factory ``corral worker --deps`` calls; each call is counted, so a
run can tell how many clients its process made.
"""

from __future__ import annotations

import os
from typing import TypedDict

from corral import END, Context, Graph


class Ask(TypedDict):
    name: str
    answer: str


class Tools:
    """A fake client: what a real one (an HTTP API, a model) would be."""

    made = 0

    def __init__(self) -> None:
        Tools.made += 1
        self.number = Tools.made

    def greet(self, name: str) -> str:
        return f"hello {name} from client {self.number} of process {os.getpid()}"


def make_tools() -> Tools:
    return Tools()


g = Graph(Ask, name="deps")


@g.node(start=True, then=END)
def greet(state: Ask, ctx: Context[Tools]) -> dict[str, object]:
    return {"answer": ctx.deps.greet(state["name"])}
