"""oreilly-langgraph's agentic RAG: an agent, a retriever tool, a grader, a rewriter.

Source: hli8nova/oreilly-langgraph @ 86938f417a737ddcc9a3226e2526259e17b98ce1,
notebooks/agentic_rag_pattern.py (no licence file found: re-expressed). The agent's
conditional edge (``tools_condition``) is commented out in the project, so nothing leaves
the agent; ``grade_documents`` is the tutorial's grader, annotated with its two targets.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


class AgentState(TypedDict):
    messages: list[Any]


def agent(state: AgentState) -> dict[str, Any]:
    return UPDATE


def retrieve(state: AgentState) -> dict[str, Any]:
    return UPDATE


def rewrite(state: AgentState) -> dict[str, Any]:
    return UPDATE


def generate(state: AgentState) -> dict[str, Any]:
    return UPDATE


def grade_documents(state: AgentState) -> Literal["generate", "rewrite"]:
    score = state["messages"][-1].content
    if score == "yes":
        return "generate"
    else:
        return "rewrite"


def build() -> StateGraph[AgentState]:
    workflow = StateGraph(AgentState)
    workflow.add_node("agent", agent)
    workflow.add_node("retrieve", retrieve)
    workflow.add_node("rewrite", rewrite)
    workflow.add_node("generate", generate)
    workflow.add_edge(START, "agent")
    workflow.add_conditional_edges("retrieve", grade_documents)
    workflow.add_edge("generate", END)
    workflow.add_edge("rewrite", "agent")
    return workflow


PROJECT = Project(
    repo="hli8nova/oreilly-langgraph",
    commit="86938f417a737ddcc9a3226e2526259e17b98ce1",
    files=("notebooks/agentic_rag_pattern.py",),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"rag": build()},
    defects=tuple(
        Defect(
            "rag",
            (name,),
            ("CR103",),
            "the agent has no edge out (its tools_condition edge is commented out): the run "
            f"ends after the agent, and {name} never runs",
        )
        for name in ("retrieve", "rewrite", "generate")
    ),
)
