"""backend-agent's SQL graph: generate a query, check it, run it, and generate again.

Source: seong-hun/backend-agent @ de8e365e93d1194504f20062df063277ab9d512a,
app/sql_graph/graph.py (no licence file found: re-expressed).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


class SqlState(TypedDict):
    messages: list[Any]


def generate_query(state: SqlState) -> dict[str, Any]:
    return UPDATE


def check_query(state: SqlState) -> dict[str, Any]:
    return UPDATE


def run_query_tool_node(state: SqlState) -> dict[str, Any]:
    return UPDATE


def should_continue(state: SqlState):  # type: ignore[no-untyped-def]
    last = state["messages"][-1]
    if last.tool_calls:
        return "check_query"
    return END


def build() -> StateGraph[SqlState]:
    builder = StateGraph(SqlState)
    builder.add_node(generate_query)
    builder.add_node(check_query)
    builder.add_node(run_query_tool_node)
    builder.add_edge(START, "generate_query")
    builder.add_conditional_edges("generate_query", should_continue, ["check_query", END])
    builder.add_edge("check_query", "run_query_tool_node")
    builder.add_edge("run_query_tool_node", "generate_query")
    return builder


PROJECT = Project(
    repo="seong-hun/backend-agent",
    commit="de8e365e93d1194504f20062df063277ab9d512a",
    files=("app/sql_graph/graph.py",),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"sql": build()},
    defects=(
        Defect(
            "sql",
            ("generate_query", "check_query", "run_query_tool_node"),
            ("CR201",),
            "the query loop ends only when the model stops calling the query tool; nothing "
            "counts the attempts, so a failing query repeats until recursion_limit",
        ),
    ),
)
