"""A guard on a route that is on no cycle: a warning only (CR202), so lint exits 0.

The same mistake on ``fallback``'s router is suppressed with ``ignore=("CR202",)``.
"""

from typing import Literal, TypedDict

from corral import END, End, Graph, Guard


class State(TypedDict):
    ok: bool


g = Graph(State)


@g.node(start=True)
def check(state: State) -> dict[str, object]:
    return {}


@g.router("check", guards=[Guard("fallback", max=2, otherwise=END)])
def after_check(state: State) -> Literal["fallback"] | End:
    return END if state["ok"] else "fallback"


@g.node()
def fallback(state: State) -> dict[str, object]:
    return {}


@g.router("fallback", guards=[Guard("finish", max=1, otherwise=END)], ignore=("CR202",))
def after_fallback(state: State) -> Literal["finish"]:
    return "finish"


@g.node(then=END)
def finish(state: State) -> dict[str, object]:
    return {}
