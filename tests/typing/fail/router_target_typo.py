"""A router's return annotation names a node that is not in the graph's `Nodes`."""

from __future__ import annotations

from typing import Literal

from _graph import State, g

from corral import END, End, Send


@g.router("critique")  # E: arg-type "revsie"
def after_critique(state: State) -> Literal["revsie"] | End:
    return END


@g.router("critique")  # E: arg-type "wrok"
def fan_out(state: State) -> list[Send[Literal["wrok"]]]:
    return []


@g.router("critique")  # E: arg-type "drfat"
async def later(state: State) -> list[Literal["revise", "drfat"]]:
    return []
