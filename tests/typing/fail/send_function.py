"""`Send(node_function, arg)`: the argument is checked against what the node takes."""

from __future__ import annotations

from typing import Literal

from _graph import Document, State, StateUpdate, g

from corral import Send


@g.node(input=Document)
def work(doc: Document) -> StateUpdate:
    return {}


@g.router("draft")
def fan_out(state: State) -> list[Send[Literal["work"]]]:
    return [Send(work, {"nmae": d, "text": ""}) for d in state["drafts"]]  # E: arg-type = Argument 2 to "Send" has incompatible type "dict[str, str]"; expected "Document | Callable[[Never], Document]"


@g.router("critique")
def one(state: State) -> Send[Literal["work"]]:
    return Send(work, state)  # E: arg-type = Argument 2 to "Send" has incompatible type "State"; expected "Document | Callable[[Never], Document]"
