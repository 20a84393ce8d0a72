"""A node whose return type does not fit the graph's update type or node names."""

from __future__ import annotations

from typing import Literal

from _graph import State, g, loose

from corral import Command


@g.node()  # E: arg-type "dict[str, object]"
def untyped_update(state: State) -> dict[str, object]:
    return {}


@loose.node()  # E: arg-type "int"
def not_an_update(state: State) -> int:
    return 1


@g.node()  # E: arg-type "list[str]"
async def async_not_an_update(state: State) -> list[str]:
    return []


@g.node()  # E: arg-type "revsie"
def command_typo(state: State) -> Command[Literal["revsie"]]:
    return Command(goto="revsie")
