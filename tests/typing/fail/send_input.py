"""A node run by `Send` (`input=`) whose first parameter does not take the `input=` type."""

from __future__ import annotations

from _graph import Document, State, StateUpdate, g

from corral import Context


@g.node(input=Document)  # E: arg-type "Callable[[int], StateUpdate]"
def wrong_type(doc: int) -> StateUpdate:
    return {}


@g.node(then="work", input=Document)  # E: arg-type "Callable[[State, Context[Any]], StateUpdate]"
def takes_the_state(state: State, ctx: Context) -> StateUpdate:
    """With `input=`, the node is handed the `Send`'s argument, not the state."""
    return {}


@g.node(input=str)  # E: arg-type "NodeFunction[str,"
def wrong_return(text: str) -> int:
    return len(text)
