"""dungeonmaster_convo's research team: a supervisor choosing Search or Web Scraper.

Source: dysnomian/dungeonmaster_convo @ 8ade8a18751b3ff6002acd08c8340c3f6bc86c2a,
dmc_agents/graph.py (licence in LICENSE.txt, not checked: re-expressed). The supervisor is
an LLM that names the next worker in ``next``; every worker reports back to it.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, StateGraph

from langgraph_corpus.corpus import Defect, Project

UPDATE: dict[str, Any] = {}


class ResearchTeamState(TypedDict):
    messages: list[Any]
    team_members: list[str]
    next: str


def search_node(state: ResearchTeamState) -> dict[str, Any]:
    return UPDATE


def research_node(state: ResearchTeamState) -> dict[str, Any]:
    return UPDATE


def supervisor_agent(state: ResearchTeamState) -> dict[str, Any]:
    return UPDATE


def build() -> StateGraph[ResearchTeamState]:
    research_graph = StateGraph(ResearchTeamState)
    research_graph.add_node("Search", search_node)
    research_graph.add_node("Web Scraper", research_node)
    research_graph.add_node("supervisor", supervisor_agent)
    research_graph.add_edge("Search", "supervisor")
    research_graph.add_edge("Web Scraper", "supervisor")
    research_graph.add_conditional_edges(
        "supervisor",
        lambda x: x["next"],
        {"Search": "Search", "Web Scraper": "Web Scraper", "FINISH": END},
    )
    research_graph.set_entry_point("supervisor")
    return research_graph


PROJECT = Project(
    repo="dysnomian/dungeonmaster_convo",
    commit="8ade8a18751b3ff6002acd08c8340c3f6bc86c2a",
    files=("dmc_agents/graph.py",),
    licence="see LICENSE.txt (not checked)",
    verbatim=False,
    graphs=lambda: {"team": build()},
    defects=(
        Defect(
            "team",
            ("supervisor", "Search"),
            ("CR201",),
            "the supervisor may send work to Search indefinitely; only its model says FINISH",
        ),
        Defect(
            "team",
            ("supervisor", "Web Scraper"),
            ("CR201",),
            "same for Web Scraper: no count of turns in the state",
        ),
    ),
)
