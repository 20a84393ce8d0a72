"""A graph whose routes come from ``Command[Literal["y", "x"]]``, for the fingerprint tests.

``ask`` pauses for a choice, ``pick`` routes to it (``x`` or ``y``). With
``$CORRAL_LITERAL_FIRST=xy`` the module first evaluates ``Command[Literal["x", "y"]]``, as
other code of the process might: typing's cache then hands ``pick`` that object, whose
targets read ``("x", "y")``, for its ``Command[Literal["y", "x"]]`` annotation.
"""

from __future__ import annotations

import operator
import os
from typing import Annotated, Literal, TypedDict

from corral import END, Command, Graph, interrupt

if os.environ.get("CORRAL_LITERAL_FIRST") == "xy":
    Command[Literal["x", "y"]]  # only fills typing's cache


class Choice(TypedDict):
    choice: str
    path: Annotated[list[str], operator.add]


g = Graph(Choice, name="route_order")


@g.node(start=True, then="pick")
def ask(state: Choice) -> dict[str, object]:
    return {"choice": str(interrupt("x or y?")), "path": ["ask"]}


@g.node()
def pick(state: Choice) -> Command[Literal["y", "x"]]:
    return Command(goto="x" if state["choice"] == "x" else "y")


@g.node(then=END)
def x(state: Choice) -> dict[str, object]:
    return {"path": ["x"]}


@g.node(then=END)
def y(state: Choice) -> dict[str, object]:
    return {"path": ["y"]}
