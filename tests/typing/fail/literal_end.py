"""`Literal[END]` is not a type: a variable cannot stand inside `Literal`; write `End`."""

from __future__ import annotations

from typing import Literal

from _graph import State, g

from corral import END


@g.router("critique")
def after_critique(state: State) -> Literal["revise", END]:  # E: valid-type "Parameter 2 of Literal[...] is invalid"
    return END
