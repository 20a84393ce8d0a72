"""sql-agent (SQLite): list tables, fetch schemas, generate, check and run with self-correction.

Source: maivanvu1304/sql-agent @ c74a5a8d1dad45cbdbeb2c17c1d4d2082a8497a7,
src/db_sqlite/graph.py and src/db_sqlite/node.py (no licence file found: re-expressed).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langgraph.graph import END, MessagesState, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


def list_tables(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def call_get_schema(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def get_schema(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def generate_query(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def check_query(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def run_query(state: MessagesState) -> dict[str, Any]:
    return UPDATE


def should_continue_generating(state: MessagesState) -> Literal[END, "check_query"]:  # type: ignore[valid-type]
    last = state["messages"][-1]
    return "check_query" if last.tool_calls else END


def decide_after_run(state: MessagesState) -> Literal["generate_query", END]:  # type: ignore[valid-type]
    last = state["messages"][-1]
    if isinstance(last, ToolMessage) and "error" in last.content.lower():
        return "generate_query"
    return END


def build() -> StateGraph[MessagesState]:
    builder = StateGraph(MessagesState)
    builder.add_node("list_tables", list_tables)
    builder.add_node("call_get_schema", call_get_schema)
    builder.add_node("get_schema", get_schema)
    builder.add_node("generate_query", generate_query)
    builder.add_node("check_query", check_query)
    builder.add_node("run_query", run_query)
    builder.set_entry_point("list_tables")
    builder.add_edge("list_tables", "call_get_schema")
    builder.add_edge("call_get_schema", "get_schema")
    builder.add_edge("get_schema", "generate_query")
    builder.add_conditional_edges(
        "generate_query", should_continue_generating, {"check_query": "check_query", END: END}
    )
    builder.add_edge("check_query", "run_query")
    builder.add_conditional_edges(
        "run_query", decide_after_run, {"generate_query": "generate_query", END: END}
    )
    return builder


PROJECT = Project(
    repo="maivanvu1304/sql-agent",
    commit="c74a5a8d1dad45cbdbeb2c17c1d4d2082a8497a7",
    files=("src/db_sqlite/graph.py", "src/db_sqlite/node.py"),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"sql": build()},
    defects=(
        Defect(
            "sql",
            ("generate_query", "check_query", "run_query"),
            ("CR201",),
            "every query that errors goes back to generate_query; nothing counts the retries",
        ),
    ),
)
