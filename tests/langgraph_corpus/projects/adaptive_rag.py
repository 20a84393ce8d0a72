"""LangGraph_-training's adaptive RAG (local Llama 3.2): route, retrieve, grade, retry.

Source: teruyo14/LangGraph_-training @ 67664079c31213e78dfa369db14f48f24ea7ab3e,
Adaptive-RAG-LLaMA3.2/control_flow.py and graph.py (no licence file found: re-expressed).
``generate`` returns ``loop_step + 1``; the hallucination grader compares it with
``max_retries``. The entry router has an ``if``/``elif`` and no final return.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, StateGraph

from langgraph_corpus.corpus import Clean, Defect, Project


class GraphState(TypedDict, total=False):
    question: str
    generation: str
    web_search: str
    max_retries: int
    loop_step: int
    documents: list[Any]


def retrieve(state: GraphState) -> dict[str, Any]:
    return {"documents": []}


def generate(state: GraphState) -> dict[str, Any]:
    loop_step = state.get("loop_step", 0)
    return {"generation": "...", "loop_step": loop_step + 1}


def grade_documents(state: GraphState) -> dict[str, Any]:
    return {"documents": [], "web_search": "No"}


def web_search(state: GraphState) -> dict[str, Any]:
    documents = state.get("documents", [])
    documents.append("...")
    return {"documents": documents}


def route_question(state: GraphState):  # type: ignore[no-untyped-def]
    source = state["question"]
    if source == "websearch":
        return "websearch"
    elif source == "vectorstore":
        return "vectorstore"


def decide_to_generate(state: GraphState):  # type: ignore[no-untyped-def]
    if state["web_search"] == "Yes":
        return "websearch"
    else:
        return "generate"


def grade_generation_v_documents_and_question(state: GraphState):  # type: ignore[no-untyped-def]
    max_retries = state.get("max_retries", 3)
    grade = state["generation"]
    if grade == "yes":
        if state["question"] == "yes":
            return "useful"
        elif state["loop_step"] <= max_retries:
            return "not useful"
        else:
            return "max retries"
    elif state["loop_step"] <= max_retries:
        return "not supported"
    else:
        return "max retries"


def build() -> StateGraph[GraphState]:
    workflow = StateGraph(GraphState)
    workflow.add_node("websearch", web_search)
    workflow.add_node("retrieve", retrieve)
    workflow.add_node("grade_documents", grade_documents)
    workflow.add_node("generate", generate)
    workflow.set_conditional_entry_point(
        route_question, {"websearch": "websearch", "vectorstore": "retrieve"}
    )
    workflow.add_edge("websearch", "generate")
    workflow.add_edge("retrieve", "grade_documents")
    workflow.add_conditional_edges(
        "grade_documents", decide_to_generate, {"websearch": "websearch", "generate": "generate"}
    )
    workflow.add_conditional_edges(
        "generate",
        grade_generation_v_documents_and_question,
        {"not supported": "generate", "useful": END, "not useful": "websearch", "max retries": END},
    )
    return workflow


PROJECT = Project(
    repo="teruyo14/LangGraph_-training",
    commit="67664079c31213e78dfa369db14f48f24ea7ab3e",
    files=("Adaptive-RAG-LLaMA3.2/control_flow.py", "Adaptive-RAG-LLaMA3.2/graph.py"),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"rag": build()},
    defects=(
        Defect(
            "rag",
            (),
            ("CR109",),
            "route_question returns None when the model names neither datasource "
            "(KeyError: None in the entry point's path_map)",
        ),
    ),
    clean=(
        Clean(
            "rag",
            ("generate",),
            "CR201",
            "generate -> generate ('not supported') stops once loop_step passes max_retries; "
            "generate returns loop_step + 1",
        ),
        Clean(
            "rag",
            ("websearch", "generate"),
            "CR201",
            "the web-search retry is bounded by the same loop_step",
        ),
    ),
)
