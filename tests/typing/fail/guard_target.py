"""Guard targets are checked against the graph's `Nodes` (when it has them)."""

from __future__ import annotations

from typing import Literal

from _graph import State, StateUpdate, g

from corral import END, End, Guard


@g.node(start=True, then="critique", guards=[Guard("critque", max=3)])  # E: arg-type "critque"
def draft(state: State) -> StateUpdate:
    return {}


@g.router("critique", guards=[Guard("revise", max=3, otherwise="drfat")])  # E: arg-type "drfat"
def after_critique(state: State) -> Literal["revise"] | End:
    return END


apart = Guard("revise", max=2)


@g.node(then="critique", guards=[apart])  # E: list-item "Guard[str]"
def revise(state: State) -> StateUpdate:
    return {}
