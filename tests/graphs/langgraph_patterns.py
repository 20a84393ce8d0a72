"""LangGraph graphs in the shapes real projects write them (tests/unit/test_langgraph_reading.py).

Each builder function returns a fresh ``StateGraph``; the node and router functions are
module-level so that their source can be read.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph

CODER = "CoderAgent"
DOCS = "DocAgent"


class State(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    next: str
    debate: dict[str, Any]
    notes: Annotated[list[str], operator.add]
    queue: list[str]
    plan: list[dict[str, Any]]
    n: int


def stub(state: State) -> dict[str, Any]:
    return {"messages": ["..."]}


# -- a router with neither path_map nor annotation: its returns are its targets ---------------


def pick_agent(state: State):  # type: ignore[no-untyped-def]  # as the project wrote it
    last = state["messages"][-1]
    if "code" in last:
        return CODER
    if "docs" in last:
        return "DocAgent"
    return END


def supervise(state: State) -> dict[str, Any]:
    return {"next": "..."}


def write_code(state: State) -> dict[str, Any]:
    return {"messages": ["more code"]}  # a model that always wants more


def unannotated_router() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("supervisor", supervise)
    builder.add_node(CODER, write_code)
    builder.add_node(DOCS, stub)
    builder.add_edge(START, "supervisor")
    builder.add_conditional_edges("supervisor", pick_agent)
    builder.add_edge(CODER, "supervisor")
    builder.add_edge(DOCS, "supervisor")
    return builder


def typed_local(state: State):  # type: ignore[no-untyped-def]
    choice: Literal["write", "__end__"] = state["next"]  # type: ignore[assignment]
    return choice


def typed_local_router() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("write", stub)
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", typed_local)
    return builder


# -- a path_map entry no return produces --------------------------------------------------------


def grade(state: State) -> str:
    return "relevant" if state["messages"] else "rewrite"


def unused_entry() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("retrieve", stub)
    builder.add_node("generate", stub)
    builder.add_node("rewrite", stub)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges(
        "retrieve", grade, {"relevant": "generate", "rewrite": "rewrite", "loop": "retrieve"}
    )
    builder.add_edge("rewrite", "generate")
    builder.add_edge("generate", END)
    return builder


# -- counters kept where real projects keep them ----------------------------------------------


def bull(state: State) -> dict[str, Any]:
    debate = state["debate"]
    new_debate = {
        "history": debate["history"] + "\nBull: ...",
        "current": "Bull: ...",
        "count": debate["count"] + 1,
    }
    return {"debate": new_debate}


def bear(state: State) -> dict[str, Any]:
    debate = state["debate"]
    return {"debate": {"current": "Bear: ...", "count": debate["count"] + 1}}


def continue_debate(state: State) -> str:
    if state["debate"]["count"] >= 4:
        return "Judge"
    if state["debate"]["current"].startswith("Bull"):
        return "Bear"
    return "Bull"


def debate() -> StateGraph[State]:
    """Two speakers share one router; each path_map lists only what that speaker produces."""
    builder = StateGraph(State)
    builder.add_node("Bull", bull)
    builder.add_node("Bear", bear)
    builder.add_node("Judge", stub)
    builder.add_edge(START, "Bull")
    builder.add_conditional_edges("Bull", continue_debate, {"Bear": "Bear", "Judge": "Judge"})
    builder.add_conditional_edges("Bear", continue_debate, {"Bull": "Bull", "Judge": "Judge"})
    builder.add_edge("Judge", END)
    return builder


def take_note(state: State) -> dict[str, Any]:
    return {"notes": ["a note"]}


def enough_notes(state: State) -> Literal["take_note", "__end__"]:
    return END if len(state["notes"]) >= 5 else "take_note"


def consume(state: State) -> dict[str, Any]:
    return {"queue": state["queue"][1:]}


def more_left(state: State) -> Literal["consume", "__end__"]:
    return "consume" if state["queue"] else END


def fill_step(state: State) -> dict[str, Any]:
    plan = state["plan"]
    for step in plan:
        if not step["done"]:
            step["done"] = True
            break
    return {"plan": plan}


def steps_left(state: State) -> Literal["fill_step", "__end__"]:
    if any(not step["done"] for step in state["plan"]):
        return "fill_step"
    return END


def loop_of(node: Callable[..., Any], router: Callable[..., Any]) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node(node.__name__, node)
    builder.add_edge(START, node.__name__)
    builder.add_conditional_edges(node.__name__, router)
    return builder


def count(state: State) -> dict[str, Any]:
    return {"n": state.get("n", 0) + 1}


def lambda_counted() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_conditional_edges(
        "count",
        lambda state: END if state["n"] >= 3 else "count",
    )
    return builder


# -- routers that can return None, or a value outside their annotation -------------------------


def verdict(state: State):  # type: ignore[no-untyped-def]
    if state["next"] == "yes":
        return "publish"
    elif state["next"] == "no":
        return "write"


def open_ended() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("write", stub)
    builder.add_node("publish", stub)
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", verdict, {"publish": "publish", "write": "write"})
    builder.add_edge("publish", END)
    return builder


def annotated_wrong(state: State) -> Literal["publish", "__end__"]:
    if state["n"]:
        return "publish"
    return "review"  # type: ignore[return-value]  # not in the annotation: KeyError


def outside_annotation() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("write", stub)
    builder.add_node("publish", stub)
    builder.add_node("review", stub)
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", annotated_wrong)
    builder.add_edge("publish", END)
    builder.add_edge("review", END)
    return builder


# -- a node behind a decorator ----------------------------------------------------------------


def logged(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


@logged
def looping(state: State) -> dict[str, Any]:
    return {"messages": ["again"]}


def decorated_loop() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("looping", looping)
    builder.add_edge(START, "looping")
    builder.add_edge("looping", "looping")
    return builder
