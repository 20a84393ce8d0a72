"""open_deep_research (legacy): plan with human feedback, then research each section.

Source: langchain-ai/open_deep_research @ 2b0fc7dff02f9235ada41d2d5c509156c3434aa9,
src/legacy/graph.py (MIT). Re-expressed nodes keep their ``Command`` destinations and
``search_iterations`` (incremented by ``search_web``, compared by ``write_section``).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from langgraph_corpus.corpus import Clean, Defect, Project

MAX_SEARCH_DEPTH = 2


class SectionState(TypedDict, total=False):
    topic: str
    section: Any
    search_iterations: int
    search_queries: list[Any]
    source_str: str
    completed_sections: Annotated[list[Any], operator.add]


class ReportState(TypedDict, total=False):
    topic: str
    sections: list[Any]
    feedback_on_report_plan: Annotated[list[str], operator.add]
    completed_sections: Annotated[list[Any], operator.add]
    final_report: str


def generate_queries(state: SectionState) -> dict[str, Any]:
    return {"search_queries": []}


def search_web(state: SectionState) -> dict[str, Any]:
    return {"source_str": "...", "search_iterations": state["search_iterations"] + 1}


def write_section(state: SectionState) -> Command[Literal[END, "search_web"]]:  # type: ignore[valid-type]
    grade = state.get("source_str")
    if grade == "pass" or state["search_iterations"] >= MAX_SEARCH_DEPTH:
        return Command(update={"completed_sections": [state["section"]]}, goto=END)
    else:
        return Command(update={"search_queries": []}, goto="search_web")


def section_builder() -> StateGraph[SectionState]:
    builder = StateGraph(SectionState)
    builder.add_node("generate_queries", generate_queries)
    builder.add_node("search_web", search_web)
    builder.add_node("write_section", write_section)
    builder.add_edge(START, "generate_queries")
    builder.add_edge("generate_queries", "search_web")
    builder.add_edge("search_web", "write_section")
    return builder


def generate_report_plan(state: ReportState) -> dict[str, Any]:
    return {"sections": []}


def human_feedback(
    state: ReportState,
) -> Command[Literal["generate_report_plan", "build_section_with_web_research"]]:
    feedback = state.get("feedback_on_report_plan")
    if isinstance(feedback, bool) and feedback is True:
        return Command(
            goto=[
                Send("build_section_with_web_research", {"section": s, "search_iterations": 0})
                for s in state["sections"]
            ]
        )
    elif isinstance(feedback, str):
        return Command(goto="generate_report_plan", update={"feedback_on_report_plan": [feedback]})
    else:
        raise TypeError("unsupported feedback")


def gather_completed_sections(state: ReportState) -> dict[str, Any]:
    return {"final_report": ""}


def compile_final_report(state: ReportState) -> dict[str, Any]:
    return {"final_report": "..."}


def report_builder() -> StateGraph[ReportState]:
    builder = StateGraph(ReportState)
    builder.add_node("generate_report_plan", generate_report_plan)
    builder.add_node("human_feedback", human_feedback)
    builder.add_node("build_section_with_web_research", section_builder().compile())
    builder.add_node("gather_completed_sections", gather_completed_sections)
    builder.add_node("compile_final_report", compile_final_report)
    builder.add_edge(START, "generate_report_plan")
    builder.add_edge("generate_report_plan", "human_feedback")
    builder.add_edge("build_section_with_web_research", "gather_completed_sections")
    builder.add_edge("gather_completed_sections", "compile_final_report")
    builder.add_edge("compile_final_report", END)
    return builder


PROJECT = Project(
    repo="langchain-ai/open_deep_research",
    commit="2b0fc7dff02f9235ada41d2d5c509156c3434aa9",
    files=("src/legacy/graph.py",),
    licence="MIT",
    verbatim=False,
    graphs=lambda: {"report": report_builder()},
    defects=(
        Defect(
            "report",
            ("generate_report_plan", "human_feedback"),
            ("CR201",),
            "each string of feedback regenerates the plan; nothing counts the rounds, so a "
            "reviewer who never approves runs the graph to recursion_limit",
        ),
    ),
    clean=(
        Clean(
            "report",
            ("search_web", "write_section"),
            "CR201",
            "write_section publishes once search_iterations reaches max_search_depth; "
            "search_web returns it incremented",
        ),
    ),
)
