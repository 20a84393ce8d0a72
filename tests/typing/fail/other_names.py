"""Every other place that takes a node name checks it against `Nodes`."""

from __future__ import annotations

from _graph import State, StateUpdate, g


@g.node(name="drfat")  # E: arg-type "drfat"
def draft(state: State) -> StateUpdate:
    return {}


@g.node(wait_for=["draft", "revsie"])  # E: list-item "revsie"
def join(state: State) -> StateUpdate:
    return {}


g.compile(interrupt_before=["critque"])  # E: list-item "critque"
