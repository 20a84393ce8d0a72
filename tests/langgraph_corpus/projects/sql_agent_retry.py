"""sql-agent (PostgreSQL): generate SQL, execute it, retry a bounded number of times.

Source: RavindranathReddy21/sql-agent, app/graph.py @ 2dab9dcd0ebbb0071202d0da93d86b1fb4bb8f84
and app/nodes.py @ 005463d90519d4eaeec1c131903ac69bd93f5902 (no licence file found:
re-expressed). The state is a pydantic model; ``execute_query`` bumps ``state.attempts``
in place and returns the state.
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph
from pydantic import BaseModel

from langgraph_corpus.corpus import Clean, Project

MAX_ATTEMPTS = 3


class AgentState(BaseModel):
    question: str = ""
    db_schema: str = ""
    sql_query: str = ""
    result: str = ""
    error: str | None = None
    attempts: int = 0


def get_schema(state: AgentState) -> AgentState:
    state.db_schema = "{}"
    return state


def sql_generator(state: AgentState) -> AgentState:
    state.sql_query = "SELECT 1"
    state.error = None
    return state


def execute_query(state: AgentState) -> AgentState:
    if not state.sql_query:
        state.error = "not safe"
        state.attempts += 1
        return state
    state.error = "failed"
    state.attempts += 1
    return state


def route_after_execution(state: AgentState) -> str:
    if state.error and state.attempts < MAX_ATTEMPTS:
        return "retry"
    return "finish"


def build() -> StateGraph[AgentState]:
    builder = StateGraph(AgentState)
    builder.add_node("get_schema", get_schema)
    builder.add_node("sql_generator", sql_generator)
    builder.add_node("execute_query", execute_query)
    builder.set_entry_point("get_schema")
    builder.add_edge("get_schema", "sql_generator")
    builder.add_edge("sql_generator", "execute_query")
    builder.add_conditional_edges(
        "execute_query", route_after_execution, {"retry": "sql_generator", "finish": END}
    )
    return builder


PROJECT = Project(
    repo="RavindranathReddy21/sql-agent",
    commit="005463d90519d4eaeec1c131903ac69bd93f5902",
    files=("app/graph.py", "app/nodes.py"),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"sql": build()},
    clean=(
        Clean(
            "sql",
            ("sql_generator", "execute_query"),
            "CR201",
            "route_after_execution retries while attempts < MAX_ATTEMPTS; execute_query "
            "increments state.attempts and returns the state",
        ),
    ),
)
