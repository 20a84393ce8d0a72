"""local-deep-researcher: search, summarise, reflect, and loop a configured number of times.

Source: langchain-ai/local-deep-researcher @ 0e1e57ee770888e9ebce9f65dbd9f310005ae381,
src/ollama_deep_researcher/graph.py (MIT). The router is quoted; nodes are stubs keeping
their writes (``web_research`` returns ``research_loop_count + 1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from langgraph_corpus.corpus import Clean, Project


@dataclass(kw_only=True)
class SummaryState:
    research_topic: str = ""
    search_query: str = ""
    web_research_results: list[str] = field(default_factory=list)
    sources_gathered: list[str] = field(default_factory=list)
    research_loop_count: int = 0
    running_summary: str = ""


class Configuration:
    max_web_research_loops = 3

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> Configuration:
        return cls()


def generate_query(state: SummaryState, config: RunnableConfig) -> dict[str, Any]:
    return {"search_query": "..."}


def web_research(state: SummaryState, config: RunnableConfig) -> dict[str, Any]:
    return {
        "sources_gathered": ["..."],
        "research_loop_count": state.research_loop_count + 1,
        "web_research_results": ["..."],
    }


def summarize_sources(state: SummaryState, config: RunnableConfig) -> dict[str, Any]:
    return {"running_summary": "..."}


def reflect_on_summary(state: SummaryState, config: RunnableConfig) -> dict[str, Any]:
    return {"search_query": "..."}


def finalize_summary(state: SummaryState) -> dict[str, Any]:
    return {"running_summary": "..."}


def route_research(
    state: SummaryState, config: RunnableConfig
) -> Literal["finalize_summary", "web_research"]:
    configurable = Configuration.from_runnable_config(config)
    if state.research_loop_count < configurable.max_web_research_loops:
        return "web_research"
    else:
        return "finalize_summary"


def build() -> StateGraph[SummaryState]:
    builder = StateGraph(SummaryState)
    builder.add_node("generate_query", generate_query)
    builder.add_node("web_research", web_research)
    builder.add_node("summarize_sources", summarize_sources)
    builder.add_node("reflect_on_summary", reflect_on_summary)
    builder.add_node("finalize_summary", finalize_summary)
    builder.add_edge(START, "generate_query")
    builder.add_edge("generate_query", "web_research")
    builder.add_edge("web_research", "summarize_sources")
    builder.add_edge("summarize_sources", "reflect_on_summary")
    builder.add_conditional_edges("reflect_on_summary", route_research)
    builder.add_edge("finalize_summary", END)
    return builder


PROJECT = Project(
    repo="langchain-ai/local-deep-researcher",
    commit="0e1e57ee770888e9ebce9f65dbd9f310005ae381",
    files=("src/ollama_deep_researcher/graph.py",),
    licence="MIT",
    verbatim=True,
    graphs=lambda: {"research": build()},
    clean=(
        Clean(
            "research",
            ("web_research", "summarize_sources", "reflect_on_summary"),
            "CR201",
            "route_research leaves when research_loop_count reaches max_web_research_loops; "
            "web_research returns the count incremented",
        ),
    ),
)
