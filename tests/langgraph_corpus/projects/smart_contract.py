"""tokenize-backend: generate a smart contract, check it, regenerate until it passes.

Source: bilal-mustafa10/tokenize-backend, app/gen_smart_contract/workflow.py @
8b5d25bea6d5466c193ae41116fb5b0b5a59e0b3 and edges/decide_to_finish.py @
cec7d48fc2ae2bc711f7cc985dc0fc874883a4c1 (no licence file found: re-expressed).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


class GraphState(TypedDict, total=False):
    error: str
    generation: str


def classify(state: GraphState) -> dict[str, Any]:
    return UPDATE


def generate(state: GraphState) -> dict[str, Any]:
    return UPDATE


def code_check(state: GraphState) -> dict[str, Any]:
    return UPDATE


def document(state: GraphState) -> dict[str, Any]:
    return UPDATE


def decide_to_finish(state: GraphState):  # type: ignore[no-untyped-def]
    if state["error"] == "no":
        return "document"
    else:
        return "generate"


def build() -> StateGraph[GraphState]:
    workflow = StateGraph(GraphState)
    workflow.add_node("classify", classify)
    workflow.add_node("generate", generate)
    workflow.add_node("check_code", code_check)
    workflow.add_node("document", document)
    workflow.add_edge(START, "classify")
    workflow.add_edge("classify", "generate")
    workflow.add_edge("generate", "check_code")
    workflow.add_conditional_edges(
        "check_code", decide_to_finish, {"document": "document", "generate": "generate"}
    )
    workflow.add_edge("document", END)
    return workflow


PROJECT = Project(
    repo="bilal-mustafa10/tokenize-backend",
    commit="8b5d25bea6d5466c193ae41116fb5b0b5a59e0b3",
    files=(
        "app/gen_smart_contract/workflow.py",
        "app/gen_smart_contract/edges/decide_to_finish.py",
    ),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"contract": build()},
    defects=(
        Defect(
            "contract",
            ("generate", "check_code"),
            ("CR201",),
            "a contract that never compiles is regenerated forever: decide_to_finish has no "
            "iteration limit (the LangGraph tutorial it follows compares iterations)",
        ),
    ),
)
