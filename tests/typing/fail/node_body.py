"""A node's body returns an update key or a `Command` target its annotation does not allow."""

from __future__ import annotations

from typing import Literal

from _graph import State, StateUpdate, g

from corral import Command


@g.node()
def draft(state: State) -> StateUpdate:
    return {"drfat": ["v1"]}  # E: typeddict-unknown-key "drfat"


@g.node()
def critique(state: State) -> Command[Literal["draft", "revise"]]:
    return Command(goto="revsie", update={"score": 1})  # E: arg-type "revsie"
