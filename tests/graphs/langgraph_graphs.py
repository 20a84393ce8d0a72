"""Small LangGraph graphs, one per construct ``corral.langgraph`` reads (tests import this)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command, Send


class State(TypedDict):
    n: int
    tries: int
    docs: list[str]
    log: Annotated[list[str], operator.add]
    answer: str
    messages: list[Any]


class Private(TypedDict):
    scratch: str


def plan(state: State) -> dict[str, Any]:
    return {"answer": "draft"}


def write(state: State) -> dict[str, Any]:
    return {"log": ["wrote"]}


def review(state: State) -> dict[str, Any]:
    return {"answer": "reviewed"}


# -- an unbounded loop: plan → review → plan, the way out chosen by an LLM-ish test ---------


def should_revise(state: State) -> Literal["plan", "__end__"]:
    return END if state["answer"] == "good" else "plan"


def unbounded() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("review", review)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review")
    builder.add_conditional_edges("review", should_revise)
    return builder


# -- a counter a node on the loop increments (CR204) -----------------------------------------


def attempt(state: State) -> dict[str, Any]:
    return {"tries": state.get("tries", 0) + 1, "answer": "maybe"}


def retry_or_stop(state: State) -> Literal["attempt", "__end__"]:
    if state["tries"] >= 3:
        return END
    return "attempt"


def counted() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("attempt", attempt)
    builder.add_edge(START, "attempt")
    builder.add_conditional_edges("attempt", retry_or_stop)
    return builder


def attempt_local(state: State) -> dict[str, Any]:
    tries = state["tries"] + 1
    return {"tries": tries}


def attempt_in_place(state: State) -> dict[str, Any]:
    state["tries"] += 1
    return {"tries": state["tries"]}


def attempt_direct(state: State) -> dict[str, Any]:
    return {"tries": state["tries"] + 1}


def attempt_assigned(state: State) -> State:
    state["tries"] = state.get("tries", 0) + 1
    return state


# -- a counter checked by a node returning Command on the loop -------------------------------


def check_or_stop(state: State) -> Command[Literal["work", "__end__"]]:
    if state["tries"] >= 3:
        return Command(goto=END)
    return Command(goto="work")


def work(state: State) -> dict[str, Any]:
    return {"tries": state["tries"] + 1, "answer": "again"}


def command_counted() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("check", check_or_stop)
    builder.add_node("work", work)
    builder.add_edge(START, "check")
    builder.add_edge("work", "check")
    return builder


def counted_with(node: Any) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("attempt", node)
    builder.add_edge(START, "attempt")
    builder.add_conditional_edges("attempt", retry_or_stop)
    return builder


# -- a counter bumped inside the router (discarded by LangGraph) -----------------------------


def bump_in_router(state: State) -> Literal["attempt", "__end__"]:
    state["tries"] += 1
    return END if state["tries"] > 3 else "attempt"


def router_counter() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("attempt", plan)
    builder.add_edge(START, "attempt")
    builder.add_conditional_edges("attempt", bump_in_router)
    return builder


# -- a counter no node writes -----------------------------------------------------------------


def bound_on_unwritten(state: State) -> Literal["plan", "__end__"]:
    return END if state["n"] >= 5 else "plan"


def unwritten_counter() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", bound_on_unwritten)
    return builder


# -- tools_condition with a path_map that has no END entry (CR109) ----------------------------


def agent(state: State) -> dict[str, Any]:
    return {"messages": state["messages"]}


def tools(state: State) -> dict[str, Any]:
    return {"messages": []}


def react(*, with_end: bool) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    path_map: dict[str, str] = {"tools": "tools"}
    if with_end:
        path_map[END] = END
    builder.add_conditional_edges("agent", tools_condition, path_map)
    builder.add_edge("tools", "agent")
    return builder


# -- a path_map list, and a dict whose keys the router's Literal names -------------------------


def grade(state: State) -> Literal["yes", "no", "maybe"]:
    if state["n"] > 1:
        return "yes"
    return "no" if state["n"] else "maybe"


def mapped(*, as_list: bool) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_node("review", review)
    builder.add_edge(START, "plan")
    if as_list:
        builder.add_conditional_edges("plan", should_write, ["write", "review"])
    else:
        builder.add_conditional_edges("plan", grade, {"yes": "write", "no": "review"})
    builder.add_edge("write", END)
    builder.add_edge("review", END)
    return builder


def should_write(state: State) -> str:
    return "write" if state["n"] else "review"


def unannotated_grade(state: State):  # type: ignore[no-untyped-def]  # no annotation, on purpose
    if state["n"] > 1:
        return "yes"
    return "no" if state["n"] else "maybe"


def mapped_unannotated() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_node("review", review)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", unannotated_grade, {"yes": "write", "no": "review"})
    builder.add_edge("write", END)
    builder.add_edge("review", END)
    return builder


# -- a router with no annotation and no path_map (CR401) ---------------------------------------


def opaque(state: State):  # type: ignore[no-untyped-def]  # no annotation, on purpose
    return state["answer"]


def untyped() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", opaque)
    builder.add_edge("write", END)
    return builder


# -- fixed edges with an unknown target (CR101) and a dead node (CR103) ------------------------


def broken_edges() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_node("orphan", review)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "wirte")
    builder.add_edge("write", END)
    return builder


# -- joins (waiting edges) and parallel writes (CR301) -----------------------------------------


def left(state: State) -> dict[str, Any]:
    return {"answer": "left", "log": ["left"]}


def right(state: State) -> dict[str, Any]:
    return {"answer": "right", "log": ["right"]}


def merge(state: State) -> dict[str, Any]:
    return {"log": ["merged"]}


def fan_in() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("left", left)
    builder.add_node("right", right)
    builder.add_node("merge", merge)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "merge")
    builder.add_edge("merge", END)
    return builder


# -- Command destinations ------------------------------------------------------------------------


def decide(state: State) -> Command[Literal["write", "__end__"]]:
    return Command(update={"answer": "x"}, goto="write" if state["n"] else END)


def decide_untyped(state: State) -> Any:
    return Command(goto=state["answer"])  # a destination read at run time


def commands(*, typed: bool, destinations: tuple[str, ...] | None = None) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("decide", decide if typed else decide_untyped, destinations=destinations)
    builder.add_node("write", write)
    builder.add_edge(START, "decide")
    builder.add_edge("write", END)
    return builder


# -- Send literals read from the router's source -------------------------------------------------


def fan_out(state: State) -> list[Send]:
    return [Send("summarise", {"docs": [d]}) for d in state["docs"]]


def fan_out_computed(state: State) -> list[Send]:
    return [Send(state["answer"], {"docs": [d]}) for d in state["docs"]]


def summarise(state: State) -> dict[str, Any]:
    return {"answer": "summary"}


def sends(*, computed: bool) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("summarise", summarise)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out_computed if computed else fan_out)
    builder.add_edge("summarise", END)
    return builder


# -- an unknown key, and a key brought in by a node's input schema -------------------------------


def typo(state: State) -> dict[str, Any]:
    return {"anwser": "x"}


def use_private(state: Private) -> dict[str, Any]:
    return {"scratch": "notes"}


def keys() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("typo", typo)
    builder.add_node("private", use_private, input_schema=Private)
    builder.add_edge(START, "typo")
    builder.add_edge("typo", "private")
    builder.add_edge("private", END)
    return builder


# -- subgraphs: a compiled graph as a node, and one run by hand inside a node ---------------------


def inner_loop(state: State) -> dict[str, Any]:
    return {"answer": "again"}


def _inner() -> Any:
    builder = StateGraph(State)
    builder.add_node("inner_loop", inner_loop)
    builder.add_edge(START, "inner_loop")
    builder.add_edge("inner_loop", "inner_loop")
    return builder.compile()


research = _inner()


def run_research(state: State) -> dict[str, Any]:
    result = research.invoke({"answer": ""})
    return {"answer": result["answer"]}


async def run_many(state: State) -> dict[str, Any]:
    results = await asyncio.gather(*(research.ainvoke({"answer": d}) for d in state["docs"]))
    return {"answer": ",".join(r["answer"] for r in results)}


def nested(*, by_hand: Any = None) -> StateGraph[State]:
    builder = StateGraph(State)
    if by_hand is None:
        builder.add_node("research", research)
    else:
        builder.add_node("research", by_hand)
    builder.add_edge(START, "research")
    builder.add_edge("research", END)
    return builder


# -- a conditional entry point --------------------------------------------------------------------


def entry(state: State) -> Literal["plan", "write"]:
    return "plan" if state["n"] else "write"


def entry_router() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_conditional_edges(START, entry)
    builder.add_edge("plan", END)
    builder.add_edge("write", END)
    return builder
