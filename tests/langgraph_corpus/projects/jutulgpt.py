"""JutulGPT: a code generator for JutulDarcy.jl with tools and a checked retry loop.

Source: ellingsvee/JutulGPT @ 06a0bf215ecfd636c89fafed8bada2846d94fe7c, src/jutulgpt/graph.py
and src/jutulgpt/nodes.py (no licence file found: re-expressed). ``generate_code`` returns
the state class with ``iterations=state.iterations + 1``; the router compares it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.graph import END, StateGraph
from langgraph.prebuilt import tools_condition

from langgraph_corpus.corpus import Clean, Project

MAX_ITERATIONS = 3
GENERATE = "generate_code"
CHECK = "check_code"
FINISH = "end"


@dataclass
class GraphState:
    messages: list[Any] = field(default_factory=list)
    error: bool = False
    iterations: int = 0


def generate_code(state: GraphState) -> GraphState:
    return GraphState(messages=state.messages, error=False, iterations=state.iterations + 1)


def check_code(state: GraphState) -> GraphState:
    return GraphState(messages=state.messages, error=True, iterations=state.iterations)


def tools(state: GraphState) -> dict[str, Any]:
    return {"messages": []}


def decide_to_finish(state: GraphState):  # type: ignore[no-untyped-def]
    if not state.error or state.iterations == MAX_ITERATIONS:
        return FINISH
    return GENERATE


def build() -> StateGraph[GraphState]:
    builder = StateGraph(GraphState)
    builder.add_node(GENERATE, generate_code)
    builder.add_node(CHECK, check_code)
    builder.add_node("tools", tools)
    builder.set_entry_point(GENERATE)
    builder.add_conditional_edges(GENERATE, tools_condition, {END: CHECK, "tools": "tools"})
    builder.add_edge("tools", CHECK)
    builder.add_edge(GENERATE, END)
    builder.add_conditional_edges(CHECK, decide_to_finish, {FINISH: END, GENERATE: GENERATE})
    return builder


PROJECT = Project(
    repo="ellingsvee/JutulGPT",
    commit="06a0bf215ecfd636c89fafed8bada2846d94fe7c",
    files=("src/jutulgpt/graph.py", "src/jutulgpt/nodes.py"),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"coder": build()},
    clean=(
        Clean(
            "coder",
            (GENERATE, CHECK),
            "CR201",
            "decide_to_finish ends when iterations reaches MAX_ITERATIONS; generate_code "
            "returns GraphState(iterations=state.iterations + 1)",
        ),
    ),
)
