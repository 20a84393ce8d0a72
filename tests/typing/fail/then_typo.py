"""`then=` names a node that is not in the graph's `Nodes`."""

from __future__ import annotations

from _graph import State, StateUpdate, g


@g.node(start=True, then="critque")  # E: arg-type "critque"
def draft(state: State) -> StateUpdate:
    return {}


@g.node(then=("revise", "critque"))  # E: arg-type "critque"
def fan(state: State) -> StateUpdate:
    return {}
