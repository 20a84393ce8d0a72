"""A tool-calling travel assistant: a ReAct loop whose tool rounds are bounded by a guard.

    python examples/react_agent.py                  # a scripted model: offline, deterministic
    OPENAI_API_KEY=... python examples/react_agent.py      # gpt-4o-mini (OPENAI_MODEL=...)
    ANTHROPIC_API_KEY=... python examples/react_agent.py   # Claude (ANTHROPIC_MODEL=...)
    corral lint examples/react_agent.py             # the guarded loop passes every rule
    corral draw examples/react_agent.py             # model -> tools (at most 4 rounds) -> model

The tools are plain typed functions; the toolbox turns their signatures into the JSON
schemas the model sees and validates each call before it runs. A failing call comes back to
the model as an error message it can repair from, so the scripted model below first asks
for a currency the tool does not know, reads the error, and asks again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from corral import Graph, Run
from corral.agents import (
    AgentState,
    AssistantMessage,
    Message,
    ToolCall,
    ToolSchema,
    assistant,
    react_agent,
    user,
)

WEATHER = {"Oslo": "4°C and cloudy", "Lisbon": "19°C and sunny", "Rome": "17°C, light rain"}
RATES = {"EUR": 1.0, "USD": 1.08, "NOK": 11.6}


def get_weather(city: str) -> str:
    """Return today's weather in a city.

    Args:
        city: the city's name in English, e.g. "Oslo".
    """
    if city not in WEATHER:
        known = ", ".join(sorted(WEATHER))
        raise LookupError(f"no forecast for {city!r}; known cities: {known}")
    return WEATHER[city]


def convert(amount: float, to: Literal["EUR", "USD", "NOK"]) -> str:
    """Convert an amount in euros to another currency.

    Args:
        amount: the amount in euros.
        to: the currency to convert to.
    """
    return f"{amount * RATES[to]:.2f} {to}"


TOOLS = [get_weather, convert]
SYSTEM = "You are a travel assistant. Use the tools; answer in one or two sentences."


class ScriptedModel:
    """A deterministic stand-in for an LLM: reads the conversation, asks for tools, answers.

    It makes the mistakes real models make: its first ``convert`` call names a currency the
    tool does not accept, and it repairs the call from the error it gets back.
    """

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AssistantMessage:
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return assistant(
                "Let me check the weather and the exchange rate.",
                [
                    _call("c1", "get_weather", city="Oslo"),
                    _call("c2", "convert", amount=200, to="Kroner"),
                ],
                id="a1",
            )
        if results[-1]["is_error"]:
            return assistant("", [_call("c3", "convert", amount=200, to="NOK")], id="a2")
        weather = results[0]["content"]
        money = results[-1]["content"]
        return assistant(
            f"Oslo is {weather} today, so pack a warm coat; 200 EUR is {money}.", id="a3"
        )


def _call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return {"id": call_id, "name": name, "arguments": arguments}


def provider_model() -> Callable[..., Any] | None:
    """Return a real model when an API key is set (OpenAI first), else ``None``."""
    if os.environ.get("OPENAI_API_KEY"):
        from openai import OpenAI

        from corral.agents.openai import openai_model

        return openai_model(OpenAI(), os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    if os.environ.get("ANTHROPIC_API_KEY"):
        from anthropic import Anthropic

        from corral.agents.anthropic import anthropic_model

        name = os.environ.get("ANTHROPIC_MODEL", "claude-haiku-4-5")
        return anthropic_model(Anthropic(), name)
    return None


def build(model: Callable[..., Any] | None = None, *, max_turns: int = 4) -> Graph[AgentState]:
    """Return the travel agent's graph around ``model`` (the scripted one by default)."""
    return react_agent(
        model if model is not None else ScriptedModel(),
        TOOLS,
        max_turns=max_turns,
        system=SYSTEM,
        name="travel_agent",
    )


graph = build()
"""The graph ``corral lint`` and ``corral draw`` read (with the scripted model)."""


def ask(question: str, model: Callable[..., Any] | None = None) -> Run:
    """Run the agent on one question and return the run."""
    return build(model).compile().invoke({"messages": [user(question)]})


def show(message: Message) -> str:
    """Return one line describing a message."""
    if message["role"] == "assistant":
        calls = ", ".join(f"{c['name']}({c['arguments']})" for c in message["tool_calls"])
        text = message["content"]
        return f"assistant: {text}" + (f" -> {calls}" if calls else "")
    if message["role"] == "tool":
        mark = " (error)" if message["is_error"] else ""
        return f"tool{mark}: {message['content']}"
    return f"{message['role']}: {message['content']}"


def main() -> None:
    """Ask one question and print the conversation, the steps and the tool rounds."""
    question = "I'm in Oslo with 200 euros. What should I wear, and how many kroner is that?"
    run = ask(question, provider_model())
    for message in run.state["messages"]:
        print(show(message))
    rounds = run.guards.get(("model", "tools"), 0)
    print(f"({run.steps} steps, {rounds} of 4 tool rounds)")


if __name__ == "__main__":
    main()
