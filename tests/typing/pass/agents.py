# pyright: strict
"""corral.agents keeps its types: a graph of AgentState, typed adapters, typed toolboxes.

Checked by ``mypy --strict`` (``mypy.ini``) and by ``tests/unit/test_typing.py``; never run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, assert_type

from anthropic import Anthropic, AsyncAnthropic
from openai import AsyncOpenAI, OpenAI

from corral import End, Graph
from corral.agents import (
    AgentState,
    AssistantMessage,
    Message,
    Toolbox,
    ToolMessage,
    ToolSchema,
    assistant,
    needs_tools,
    react_agent,
    tool_result,
)
from corral.agents.anthropic import AnthropicModel, AsyncAnthropicModel, anthropic_model
from corral.agents.openai import AsyncOpenAIModel, OpenAIModel, openai_model


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def search(query: str, limit: int = 3) -> list[str]:
    """Search."""
    return [query] * limit


def model(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
    return assistant("done")


class Notes(AgentState):
    notes: list[str]


# a list of functions with different signatures is a list of tools
tools = [add, search]
assert_type(Toolbox(tools), Toolbox)
assert_type(react_agent(model, tools), Graph[AgentState])
assert_type(react_agent(model, Toolbox([add]), state_schema=Notes), Graph[Notes])
assert_type(needs_tools({"messages": []}), Literal["tools"] | End)
assert_type(tool_result("c1", "5"), ToolMessage)

assert_type(openai_model(OpenAI(api_key="k"), "gpt-4o-mini"), OpenAIModel)
assert_type(openai_model(AsyncOpenAI(api_key="k"), "gpt-4o-mini"), AsyncOpenAIModel)
assert_type(anthropic_model(Anthropic(api_key="k"), "claude"), AnthropicModel)
assert_type(anthropic_model(AsyncAnthropic(api_key="k"), "claude"), AsyncAnthropicModel)

# an adapter is a model
react_agent(openai_model(OpenAI(api_key="k"), "gpt-4o-mini"), [add])
react_agent(anthropic_model(AsyncAnthropic(api_key="k"), "claude"), [add])
