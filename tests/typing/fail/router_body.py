"""A router's body returns a target its own annotation does not allow."""

from __future__ import annotations

from typing import Literal

from _graph import State, g

from corral import END, End, Send


@g.router("critique")
def after_critique(state: State) -> Literal["revise"] | End:
    if state["score"] > 80:
        return "__ned__"  # E: return-value "__ned__"
    return "revsie"  # E: return-value "revsie"


@g.router("draft")
def fan_out(state: State) -> list[Send[Literal["work"]]]:
    return [Send("wrok", d) for d in state["drafts"]]  # E: arg-type "wrok"
