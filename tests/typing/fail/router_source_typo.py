"""`@g.router(...)` names a source node that is not in the graph's `Nodes`."""

from __future__ import annotations

from typing import Literal

from _graph import State, g


@g.router("critque")  # E: arg-type "critque"
def after_critique(state: State) -> Literal["revise"]:
    return "revise"
