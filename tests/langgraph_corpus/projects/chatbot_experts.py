"""Chatbot_Design_with_LangGraph: a supervisor dispatching to experts, then a refiner.

Source: lalashiwoya/Chatbot_Design_with_LangGraph, api/create_workflow.py @
5a5e123e1e651007fdca497e576076f2db8c7f70 and api/nodes/supervisor.py @
a3131521c63f3b3717b4fe3ab49ce28a2571ff0c (no licence file found: re-expressed). The
supervisor removes the expert it last used from ``workers`` before asking its model again,
but the router only reads the model's last answer.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


class GraphState(TypedDict):
    question: str
    generation: str
    workers: dict[str, str]
    worker_trace: list[str]


def initial_answer(state: GraphState) -> dict[str, Any]:
    return UPDATE


def supervisor(state: GraphState) -> dict[str, Any]:
    if len(state["worker_trace"]) > 0:
        state["workers"].pop(state["worker_trace"][-1])
    response = "FINISH"
    state["worker_trace"] += [response]
    return {"worker_trace": state["worker_trace"], "workers": state["workers"]}


def expert(state: GraphState) -> dict[str, Any]:
    return UPDATE


def build() -> StateGraph[GraphState]:
    workflow = StateGraph(GraphState)
    workflow.add_node("initial_answer", initial_answer)
    workflow.add_node("supervisor", supervisor)
    workflow.add_node("off_topic_answer", expert)
    workflow.add_node("retrieve", expert)
    workflow.add_node("docter", expert)
    workflow.add_node("refine", expert)
    workflow.set_entry_point("initial_answer")
    workflow.add_edge("initial_answer", "supervisor")
    workflow.add_conditional_edges(
        "supervisor",
        lambda x: x["worker_trace"][-1],
        {
            "FINISH": "refine",
            "Off-Topic Expert": "off_topic_answer",
            "Heart Disease Expert": "docter",
            "LLM-XAI Knowledge Expert": "retrieve",
        },
    )
    workflow.add_edge("off_topic_answer", "refine")
    workflow.add_edge("refine", END)
    workflow.add_edge("retrieve", "supervisor")
    workflow.add_edge("docter", "supervisor")
    return workflow


PROJECT = Project(
    repo="lalashiwoya/Chatbot_Design_with_LangGraph",
    commit="5a5e123e1e651007fdca497e576076f2db8c7f70",
    files=("api/create_workflow.py", "api/nodes/supervisor.py"),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"experts": build()},
    defects=(
        Defect(
            "experts",
            ("supervisor", "retrieve"),
            ("CR201", "CR204"),
            "the loop ends when the model answers FINISH; the shrinking workers dict only "
            "bounds it if the model obeys the list it is shown (the router never tests it)",
        ),
        Defect(
            "experts",
            ("supervisor", "docter"),
            ("CR201", "CR204"),
            "same for the heart disease expert",
        ),
    ),
)
