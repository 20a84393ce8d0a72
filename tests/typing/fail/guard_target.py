"""Guard targets are checked against the graph's `Nodes` (when it has them)."""

from __future__ import annotations

from typing import Literal

from _graph import State, StateUpdate, g

from corral import END, End, Guard


@g.node(start=True, then="critique", guards=[Guard("critque", max=3)])  # E: arg-type = Argument 1 to "Guard" has incompatible type "Literal['critque']"; expected "Literal['draft', 'critique', 'revise', 'work']"
def draft(state: State) -> StateUpdate:
    return {}


@g.router("critique", guards=[Guard("revise", max=3, otherwise="drfat")])  # E: arg-type = Argument "otherwise" to "Guard" has incompatible type "Literal['drfat']"; expected "Literal['draft', 'critique', 'revise', 'work', '__end__'] | None"
def after_critique(state: State) -> Literal["revise"] | End:
    return END


apart = Guard("revise", max=2)


@g.node(then="critique", guards=[apart])  # E: list-item = List item 0 has incompatible type "Guard[str]"; expected "Guard[Literal['draft', 'critique', 'revise', 'work']]"
def revise(state: State) -> StateUpdate:
    return {}
