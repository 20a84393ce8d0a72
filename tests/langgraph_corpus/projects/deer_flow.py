"""DeerFlow: coordinator, planner with human review, and a research team working a plan.

Source: bytedance/deer-flow, src/graph/builder.py @ 0b2f3339082e6e427e91031f73e4cda199774184
and src/graph/nodes.py @ cbc4315b70da865e1f9731eec1acffc193ccd142 (MIT). Re-expressed: the
nodes keep their ``Command`` destinations and their counters (``plan_iterations``,
``clarification_rounds``); the researcher and coder fill the current step of the plan in
place (``current_step.execution_res = ...`` in a helper) and go back to the team.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from langgraph_corpus.corpus import Clean, Project

MAX_PLAN_ITERATIONS = 1


class State(TypedDict, total=False):
    messages: list[Any]
    current_plan: Any
    plan_iterations: int
    clarification_rounds: int
    observations: list[str]
    final_report: str


def coordinator_node(
    state: State,
) -> Command[Literal["planner", "background_investigator", "coordinator", "__end__"]]:
    clarification_rounds = state.get("clarification_rounds", 0)
    goto = "__end__"
    if state.get("messages") and clarification_rounds < 3:
        clarification_rounds += 1
        return Command(update={"clarification_rounds": clarification_rounds}, goto=goto)
    if state.get("messages"):
        goto = "planner"
    if goto == "planner" and state.get("background"):
        goto = "background_investigator"
    return Command(update={"clarification_rounds": clarification_rounds}, goto=goto)


def background_investigation_node(state: State) -> dict[str, Any]:
    return {"observations": []}


def planner_node(state: State) -> Command[Literal["human_feedback", "reporter"]]:
    plan_iterations = state["plan_iterations"] if state.get("plan_iterations", 0) else 0
    if plan_iterations >= MAX_PLAN_ITERATIONS:
        return Command(goto="reporter")
    if state.get("current_plan") == "enough":
        return Command(update={"current_plan": "..."}, goto="reporter")
    return Command(update={"current_plan": "..."}, goto="human_feedback")


def human_feedback_node(
    state: State,
) -> Command[Literal["planner", "research_team", "reporter", "__end__"]]:
    feedback = state.get("messages")
    if feedback == "[EDIT_PLAN]":
        return Command(update={"messages": []}, goto="planner")
    plan_iterations = state["plan_iterations"] if state.get("plan_iterations", 0) else 0
    goto = "research_team"
    plan_iterations += 1
    if not state.get("current_plan"):
        if plan_iterations > 1:
            return Command(goto="reporter")
        return Command(goto="__end__")
    return Command(update={"plan_iterations": plan_iterations}, goto=goto)


def reporter_node(state: State) -> dict[str, Any]:
    return {"final_report": "..."}


def research_team_node(state: State) -> None:
    pass


def researcher_node(state: State) -> Command[Literal["research_team"]]:
    return Command(update={"observations": ["..."]}, goto="research_team")


def coder_node(state: State) -> Command[Literal["research_team"]]:
    return Command(update={"observations": ["..."]}, goto="research_team")


def continue_to_running_research_team(state: State):  # type: ignore[no-untyped-def]
    current_plan = state.get("current_plan")
    if not current_plan or not current_plan.steps:
        return "planner"
    if all(step.execution_res for step in current_plan.steps):
        return "planner"
    incomplete_step = None
    for step in current_plan.steps:
        if not step.execution_res:
            incomplete_step = step
            break
    if not incomplete_step:
        return "planner"
    if incomplete_step.step_type == "research":
        return "researcher"
    if incomplete_step.step_type == "processing":
        return "coder"
    return "planner"


def build() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_edge(START, "coordinator")
    builder.add_node("coordinator", coordinator_node)
    builder.add_node("background_investigator", background_investigation_node)
    builder.add_node("planner", planner_node)
    builder.add_node("reporter", reporter_node)
    builder.add_node("research_team", research_team_node)
    builder.add_node("researcher", researcher_node)
    builder.add_node("coder", coder_node)
    builder.add_node("human_feedback", human_feedback_node)
    builder.add_edge("background_investigator", "planner")
    builder.add_conditional_edges(
        "research_team", continue_to_running_research_team, ["planner", "researcher", "coder"]
    )
    builder.add_edge("reporter", END)
    return builder


PROJECT = Project(
    repo="bytedance/deer-flow",
    commit="0b2f3339082e6e427e91031f73e4cda199774184",
    files=("src/graph/builder.py", "src/graph/nodes.py@cbc4315b70da865e1f9731eec1acffc193ccd142"),
    licence="MIT",
    verbatim=False,
    graphs=lambda: {"deer": build()},
    clean=(
        Clean(
            "deer",
            ("research_team", "researcher"),
            "CR201",
            "the team routes to a worker while a step of the plan has no execution_res; each "
            "worker fills one step, so the loop ends with the plan",
        ),
        Clean(
            "deer",
            ("planner", "human_feedback"),
            "CR201",
            "planner leaves for the reporter once plan_iterations reaches max_plan_iterations; "
            "human_feedback returns it incremented",
        ),
        Clean(
            "deer",
            ("coordinator",),
            "CR201",
            "coordinator -> coordinator is only declared: no Command the node builds goes there",
        ),
    ),
)
