"""examples/react_agent.py: the scripted run, the guard, lint and draw, and use as a subgraph."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from corral import END, Graph
from corral.agents import AgentState, AssistantMessage, Message, ToolSchema, assistant, user

from .test_examples import corral, load

ROOT = Path(__file__).resolve().parents[2]


def test_scripted_run_repairs_its_call_and_answers() -> None:
    """Two tool rounds (the second repairs a rejected currency), then the answer."""
    example = load("react_agent")
    run = example.ask("Oslo with 200 euros?")
    assert run.status == "done"
    assert [r.node for r in run.trace] == ["model", "tools", "model", "tools", "model"]
    assert run.guards == {("model", "tools"): 2}
    errors = [m for m in run.state["messages"] if m["role"] == "tool" and m["is_error"]]
    assert len(errors) == 1 and "Input should be 'EUR', 'USD' or 'NOK'" in errors[0]["content"]
    assert run.state["messages"][-1]["content"] == (
        "Oslo is 4°C and cloudy today, so pack a warm coat; 200 EUR is 2320.00 NOK."
    )


def test_a_model_that_never_answers_gives_up_after_four_rounds() -> None:
    """The guard ends the run with a message after max_turns=4 rounds, not with an error."""
    example = load("react_agent")

    def stuck(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
        n = len(messages)
        return assistant("", [{"id": f"c{n}", "name": "get_weather", "arguments": {"city": "X"}}])

    run = example.ask("?", stuck)
    assert run.status == "done"
    assert run.guards == {("model", "tools"): 4}
    assert run.state["messages"][-1]["content"] == (
        "I gave up after 4 tool rounds without reaching a final answer (max_turns=4)."
    )


def test_main_prints_the_conversation(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    load("react_agent").main()
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "assistant: Let me check the weather and the exchange rate. -> "
        "get_weather({'city': 'Oslo'}), convert({'amount': 200, 'to': 'Kroner'})"
    )
    assert out[-1] == "(5 steps, 2 of 4 tool rounds)"


def test_runs_as_a_script_without_keys() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "examples/react_agent.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "(5 steps, 2 of 4 tool rounds)"


def test_lint_finds_nothing_and_draw_shows_the_guarded_loop() -> None:
    """``corral lint`` exits 0; ``corral draw`` labels model → tools with ≤4 and the give-up."""
    lint = corral("lint", "examples/react_agent.py")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    draw = corral("draw", "examples/react_agent.py")
    assert draw.returncode == 0, draw.stderr
    lines = [line.strip() for line in draw.stdout.splitlines()]
    assert 'model -.->|"≤4"| tools' in lines
    assert 'model -.->|"tools used up"| give_up' in lines
    assert "tools --> model" in lines and "give_up --> __end__" in lines


class Parent(AgentState):
    question: str
    answer: str


def parent_graph() -> Graph[Parent]:
    """A graph that asks the example's agent as its subgraph node, then reports."""
    example = load("react_agent")
    g = Graph(Parent, name="trip")

    @g.node(start=True, then="agent")
    def ask(state: Parent) -> dict[str, Any]:
        return {"messages": [user(state["question"])]}

    g.subgraph("agent", example.build(), then="report")

    @g.node(then=END)
    def report(state: Parent) -> dict[str, Any]:
        return {"answer": state["messages"][-1]["content"]}

    return g


def test_the_agent_checks_as_a_subgraph() -> None:
    """The agent as a subgraph node: no finding in the parent or the child."""
    assert parent_graph().check() == []


def test_the_agent_runs_as_a_subgraph() -> None:
    """Its messages flow into the parent once (not duplicated) and the parent goes on."""
    run = parent_graph().compile().invoke({"question": "Oslo with 200 euros?"})
    assert run.state["answer"].startswith("Oslo is 4°C")
    roles = [m["role"] for m in run.state["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
