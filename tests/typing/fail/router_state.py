"""A router whose first parameter does not take the graph's state."""

from __future__ import annotations

from typing import Literal

from _graph import OtherState, g


@g.router("critique")  # E: arg-type "OtherState"
def after_critique(state: OtherState) -> Literal["revise"]:
    return "revise"
