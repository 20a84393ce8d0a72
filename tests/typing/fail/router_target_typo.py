"""A misspelt name in a router's return annotation: the first error is on its `return`.

The decorator does not check the annotation's names against `Nodes` (an error on the
decorator's line would come before the body's; see `corral.signatures.RouterFunction`). The
router's own returns are checked against its annotation, and `corral lint` and `compile()`
report a name that is not a node (CR101). `test_typing.py` checks that no error of this module
mentions `RouterFunction[`.
"""

from __future__ import annotations

from typing import Literal

from _graph import State, g

from corral import END, End, Send


@g.router("critique")
def after_critique(state: State) -> Literal["revsie"] | End:
    if state["score"] >= 80:
        return END
    return "revise"  # E: return-value = Incompatible return value type (got "Literal['revise']", expected "Literal['revsie', '__end__']")


@g.router("critique")
def fan_out(state: State) -> list[Send[Literal["wrok"]]]:
    return [Send("work", d) for d in state["drafts"]]  # E: arg-type = Argument 1 to "Send" has incompatible type "Literal['work']"; expected "Literal['wrok']"


@g.router("critique")
async def later(state: State) -> list[Literal["revise", "drfat"]]:
    return ["revise", "draft"]  # E: list-item = List item 1 has incompatible type "Literal['draft']"; expected "Literal['revise', 'drfat']"
