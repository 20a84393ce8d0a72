"""data-enrichment: an agent with a search tool, a reflection step, and a loop budget.

Source: langchain-ai/data-enrichment @ 0152c6251031e5f802d4873326be9f68eb50ff2b,
src/enrichment_agent/graph.py and state.py (MIT). Routers quoted; the agent node keeps its
write of ``loop_step`` (1, summed by an ``operator.add`` reducer).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph

from langgraph_corpus.corpus import Clean, Defect, Project

MAX_LOOPS = 6


@dataclass(kw_only=True)
class State:
    topic: str = ""
    messages: list[Any] = field(default_factory=list)
    info: dict[str, Any] | None = None
    loop_step: Annotated[int, operator.add] = field(default=0)


class Configuration:
    max_loops = MAX_LOOPS

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> Configuration:
        return cls()


def call_agent_model(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("...")], "info": None, "loop_step": 1}


def reflect(state: State) -> dict[str, Any]:
    return {"messages": [ToolMessage("...", tool_call_id="1")]}


def tools(state: State) -> dict[str, Any]:
    return {"messages": [ToolMessage("...", tool_call_id="1")]}


def route_after_agent(
    state: State,
) -> Literal["reflect", "tools", "call_agent_model", "__end__"]:
    last_message = state.messages[-1]
    if not isinstance(last_message, AIMessage):
        return "call_agent_model"
    if last_message.tool_calls and last_message.tool_calls[0]["name"] == "Info":
        return "reflect"
    else:
        return "tools"


def route_after_checker(
    state: State, config: RunnableConfig
) -> Literal["__end__", "call_agent_model"]:
    configurable = Configuration.from_runnable_config(config)
    last_message = state.messages[-1]
    if state.loop_step < configurable.max_loops:
        if not state.info:
            return "call_agent_model"
        if not isinstance(last_message, ToolMessage):
            raise ValueError("expected a tool message")
        if last_message.status == "error":
            return "call_agent_model"
        return "__end__"
    else:
        return "__end__"


def build() -> StateGraph[State]:
    workflow = StateGraph(State)
    workflow.add_node(call_agent_model)
    workflow.add_node(reflect)
    workflow.add_node("tools", tools)
    workflow.add_edge("__start__", "call_agent_model")
    workflow.add_conditional_edges("call_agent_model", route_after_agent)
    workflow.add_edge("tools", "call_agent_model")
    workflow.add_conditional_edges("reflect", route_after_checker)
    return workflow


PROJECT = Project(
    repo="langchain-ai/data-enrichment",
    commit="0152c6251031e5f802d4873326be9f68eb50ff2b",
    files=("src/enrichment_agent/graph.py", "src/enrichment_agent/state.py"),
    licence="MIT",
    verbatim=True,
    graphs=lambda: {"enrichment": build()},
    defects=(
        Defect(
            "enrichment",
            ("call_agent_model", "tools"),
            ("CR201",),
            "agent <-> tools ends only when the model calls Info; route_after_agent never "
            "looks at loop_step, so a model that keeps searching runs to recursion_limit",
        ),
        Defect(
            "enrichment",
            ("call_agent_model",),
            ("CR201",),
            "a non-AI last message sends call_agent_model back to itself with no bound",
        ),
    ),
    clean=(
        Clean(
            "enrichment",
            ("call_agent_model", "reflect"),
            "CR201",
            "route_after_checker ends once loop_step reaches max_loops; call_agent_model "
            "adds 1 to it through its operator.add reducer",
        ),
    ),
)
