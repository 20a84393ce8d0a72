"""A node whose first parameter does not take the graph's state (and has no `input=`)."""

from __future__ import annotations

from _graph import Document, OtherState, State, StateUpdate, g, loose

from corral import Context


@g.node()  # E: arg-type "Callable[[OtherState], StateUpdate]"
def other_state(state: OtherState) -> StateUpdate:
    return {}


@loose.node()  # E: arg-type "Callable[[OtherState, Context[Any]], dict[str, object]]"
def other_state_loose(state: OtherState, ctx: Context) -> dict[str, object]:
    return {}


@g.node()  # E: arg-type "Callable[[Document], StateUpdate]"
def send_target_without_input(doc: Document) -> StateUpdate:
    """A node that a `Send` runs says so with `input=`; without it, it must take the state."""
    return {}


@g.node()  # E: arg-type "def no_state(*, state: State)"
def no_state(*, state: State) -> StateUpdate:
    return {}
