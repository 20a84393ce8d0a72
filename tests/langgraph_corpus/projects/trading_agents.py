"""TradingAgents: analysts in sequence, a bull/bear debate, a trader and a risk fan-out.

Source: TauricResearch/TradingAgents @ 039e2c393a584696c25f25d2a0b962b3e5682e28,
tradingagents/graph/setup.py and tradingagents/graph/conditional_logic.py (Apache-2.0).
Re-expressed: two analysts stand for four; the researcher nodes are stubs that keep what
matters, the debate count incremented inside ``investment_debate_state`` (the project's
bull and bear researchers return a new debate dict with ``count + 1``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from langgraph_corpus.corpus import Clean, Project

ABORT = "Critical Abort Terminal"
UPDATE: dict[str, Any] = {}


class AgentState(TypedDict, total=False):
    company_of_interest: str
    market_report: str
    news_report: str
    analysis_status: str
    investment_debate_state: dict[str, Any]
    risk_debate_state: dict[str, Any]


def node(state: AgentState) -> dict[str, Any]:
    return UPDATE


def bull_researcher(state: AgentState) -> dict[str, Any]:
    debate = state["investment_debate_state"]
    argument = "Bull Analyst: ..."
    new_debate = {
        "history": debate.get("history", "") + "\n" + argument,
        "current_response": argument,
        "count": debate["count"] + 1,
    }
    return {"investment_debate_state": new_debate}


def bear_researcher(state: AgentState) -> dict[str, Any]:
    debate = state["investment_debate_state"]
    argument = "Bear Analyst: ..."
    new_debate = {
        "history": debate.get("history", "") + "\n" + argument,
        "current_response": argument,
        "count": debate["count"] + 1,
    }
    return {"investment_debate_state": new_debate}


class ConditionalLogic:
    def __init__(self, max_debate_rounds: int = 1) -> None:
        self.max_debate_rounds = max_debate_rounds

    def should_continue_debate(self, state: AgentState) -> str:
        if state.get("market_report", "").startswith("[CRITICAL ABORT]"):
            return ABORT
        debate_state = state.get("investment_debate_state")
        if not debate_state:
            return "Research Manager"
        count = debate_state.get("count")
        if count is None or count >= 2 * self.max_debate_rounds:
            return "Research Manager"
        current_response = debate_state.get("current_response", "")
        if not current_response:
            return "Bull Researcher"
        if current_response.startswith("Bull"):
            return "Bear Researcher"
        return "Bull Researcher"


def route_after_preflight(state: AgentState, next_node: str) -> str:
    if str(state.get("analysis_status") or "").lower() == "aborted":
        return "END"
    return next_node


def next_analyst(state: AgentState, analysts: list[str], start: int) -> str:
    for analyst in analysts[start:]:
        if not state.get(f"{analyst}_report"):
            return f"{analyst.capitalize()} Analyst"
    return "Bull Researcher"


def build() -> StateGraph[AgentState]:
    analysts = ["market", "news"]
    logic = ConditionalLogic()
    workflow = StateGraph(AgentState)
    for analyst in analysts:
        workflow.add_node(f"{analyst.capitalize()} Analyst", node)
        workflow.add_node(f"Msg Clear {analyst.capitalize()}", node)
    for name in ("Instrument Preflight", "Research Manager", "Trader", "Portfolio Manager"):
        workflow.add_node(name, node)
    for name in ("Aggressive R1", "Conservative R1", "Neutral R1", "Risk Synthesis", ABORT):
        workflow.add_node(name, node)
    workflow.add_node("Bull Researcher", bull_researcher)
    workflow.add_node("Bear Researcher", bear_researcher)
    workflow.add_edge(START, "Instrument Preflight")
    targets = {f"{a.capitalize()} Analyst": f"{a.capitalize()} Analyst" for a in analysts}
    workflow.add_conditional_edges(
        "Instrument Preflight",
        lambda state: route_after_preflight(state, next_analyst(state, analysts, 0)),
        {**targets, "Bull Researcher": "Bull Researcher", "END": END},
    )
    for i, analyst in enumerate(analysts):
        clear = f"Msg Clear {analyst.capitalize()}"
        workflow.add_edge(f"{analyst.capitalize()} Analyst", clear)
        later = {
            f"{a.capitalize()} Analyst": f"{a.capitalize()} Analyst" for a in analysts[i + 1 :]
        }

        def after_clear(state: AgentState, start: int = i + 1) -> str:
            if state.get("market_report", "").startswith("[CRITICAL ABORT]"):
                return ABORT
            return next_analyst(state, analysts, start)

        workflow.add_conditional_edges(
            clear, after_clear, {ABORT: ABORT, **later, "Bull Researcher": "Bull Researcher"}
        )
    full_map = {
        "Bull Researcher": "Bull Researcher",
        "Bear Researcher": "Bear Researcher",
        "Research Manager": "Research Manager",
        ABORT: ABORT,
        "Portfolio Manager": "Portfolio Manager",
    }
    workflow.add_conditional_edges("Bull Researcher", logic.should_continue_debate, full_map)
    workflow.add_conditional_edges("Bear Researcher", logic.should_continue_debate, full_map)
    workflow.add_edge("Research Manager", "Trader")
    for risk in ("Aggressive R1", "Conservative R1", "Neutral R1"):
        workflow.add_edge("Trader", risk)
        workflow.add_edge(risk, "Risk Synthesis")
    workflow.add_edge("Risk Synthesis", "Portfolio Manager")
    workflow.add_edge(ABORT, END)
    workflow.add_edge("Portfolio Manager", END)
    return workflow


PROJECT = Project(
    repo="TauricResearch/TradingAgents",
    commit="039e2c393a584696c25f25d2a0b962b3e5682e28",
    files=("tradingagents/graph/setup.py", "tradingagents/graph/conditional_logic.py"),
    licence="Apache-2.0",
    verbatim=False,
    graphs=lambda: {"trading": build()},
    clean=(
        Clean(
            "trading",
            ("Bull Researcher", "Bear Researcher"),
            "CR201",
            "the debate ends when investment_debate_state['count'] reaches 2 * max_debate_rounds; "
            "each speaker returns the count incremented inside a new debate dict",
        ),
        Clean(
            "trading",
            ("Bull Researcher",),
            "CR201",
            "Bull -> Bull is in the path_map but never taken: after the bull speaks, "
            "current_response starts with 'Bull', so the router says 'Bear Researcher'",
        ),
        Clean(
            "trading",
            ("Bull Researcher",),
            "CR109",
            "the shared debate router's values are all in each speaker's path_map",
        ),
    ),
)
