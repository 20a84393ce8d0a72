"""corral.agents.openai against the OpenAI SDK's own client, with recorded HTTP responses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI
from recorded_http import Recorded

from corral import Cost, CostExceededError
from corral.agents import TokenEvent, Toolbox, react_agent, user
from corral.agents.openai import openai_model


def get_weather(city: str, unit: str = "celsius") -> str:
    """Return the weather in a city.

    Args:
        city: the city's name.
        unit: celsius or fahrenheit.
    """
    if unit not in ("celsius", "fahrenheit"):
        raise ValueError(f"unknown unit {unit!r}")
    return {"Oslo": "4°C, cloudy", "Rome": "18°C, sunny"}[city]


def sync_client(recorded: Recorded) -> OpenAI:
    return OpenAI(
        api_key="sk-test",
        base_url="https://api.openai.test/v1",
        http_client=recorded.client(),
        max_retries=0,
    )


def async_client(recorded: Recorded) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key="sk-test",
        base_url="https://api.openai.test/v1",
        http_client=recorded.async_client(),
        max_retries=0,
    )


def check_second_request(request: dict[str, Any]) -> None:
    """The tool round goes back in the chat-completions shape."""
    assert request["model"] == "gpt-4o-mini"
    assert request["messages"][0] == {"role": "system", "content": "Be brief."}
    assert request["messages"][1] == {"role": "user", "content": "Weather in Oslo and Rome?"}
    sent = request["messages"][2]
    assert sent["role"] == "assistant" and sent["content"] is None
    assert [c["id"] for c in sent["tool_calls"]] == ["call_Wx1", "call_Wx2"]
    assert sent["tool_calls"][0]["type"] == "function"
    assert json.loads(sent["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    assert request["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_Wx1",
        "content": "4°C, cloudy",
    }
    assert request["messages"][4]["tool_call_id"] == "call_Wx2"
    assert request["messages"][4]["content"] == (
        "error: tool 'get_weather' raised ValueError: unknown unit 'kelvin'"
    )


def test_a_tool_round_through_the_sync_sdk() -> None:
    """Schemas out as function tools, calls back as ToolCalls, results out as tool messages."""
    recorded = Recorded("openai_tool_call.json", "openai_text.json")
    model = openai_model(sync_client(recorded), "gpt-4o-mini", temperature=0)
    app = react_agent(model, [get_weather], system="Be brief.").compile()
    run = app.invoke({"messages": [user("Weather in Oslo and Rome?")]})

    first = recorded.requests[0]
    assert recorded.paths == ["/v1/chat/completions"] * 2
    assert first["temperature"] == 0
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Return the weather in a city.",
                "parameters": Toolbox([get_weather]).schemas()[0]["parameters"],
            },
        }
    ]
    check_second_request(recorded.requests[1])
    calls = run.state["messages"][1]
    assert calls["id"] == "chatcmpl-AgentFixture01"
    assert calls["tool_calls"][1] == {
        "id": "call_Wx2",
        "name": "get_weather",
        "arguments": {"city": "Rome", "unit": "kelvin"},
    }
    final = run.state["messages"][-1]
    assert final["content"] == "Oslo is 4°C and cloudy; Rome is 18°C and sunny."
    assert final["id"] == "chatcmpl-AgentFixture02" and final["tool_calls"] == []


def test_a_tool_round_through_the_async_sdk() -> None:
    """An AsyncOpenAI client gives an async model; the same conversation comes out."""
    recorded = Recorded("openai_tool_call.json", "openai_text.json")
    model = openai_model(async_client(recorded), "gpt-4o-mini")
    app = react_agent(model, [get_weather], system="Be brief.").compile()
    run = asyncio.run(app.ainvoke({"messages": [user("Weather in Oslo and Rome?")]}))
    check_second_request(recorded.requests[1])
    assert run.state["messages"][-1]["content"].startswith("Oslo is 4°C")


def test_arguments_that_are_not_json_come_back_as_a_repairable_error() -> None:
    """Truncated JSON from the model reaches it again as an error tool message."""
    recorded = Recorded("openai_bad_json.json", "openai_text.json")
    model = openai_model(sync_client(recorded), "gpt-4o-mini")
    react_agent(model, [get_weather]).compile().invoke({"messages": [user("Oslo?")]})
    sent = recorded.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"'
    assert sent[2]["content"] == (
        "error: the arguments for tool 'get_weather' are not valid JSON: "
        '\'{"city": "Oslo"\'; send a JSON object'
    )


def test_a_streamed_reply_emits_its_tokens_and_assembles_the_call() -> None:
    """Text deltas are emitted as token events; tool-call deltas join into one call."""
    events: list[TokenEvent] = []
    recorded = Recorded("openai_stream.sse")
    model = openai_model(sync_client(recorded), "gpt-4o-mini", stream=True)
    reply = model([user("Oslo?")], Toolbox([get_weather]).schemas(), emit=events.append)
    assert recorded.requests[0]["stream"] is True
    assert [e["text"] for e in events] == ["Let", " me", " check", "."]
    assert reply == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [{"id": "call_S1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
        "id": "chatcmpl-AgentStream01",
    }


def test_a_streamed_reply_through_the_async_sdk() -> None:
    events: list[TokenEvent] = []
    recorded = Recorded("openai_stream.sse")
    model = openai_model(async_client(recorded), "gpt-4o-mini", stream=True)
    reply = asyncio.run(model([user("Oslo?")], [], emit=events.append))
    assert "tools" not in recorded.requests[0]
    assert "".join(e["text"] for e in events) == reply["content"] == "Let me check."


def test_a_call_id_reused_in_a_later_turn_is_answered_after_its_own_turn() -> None:
    """Each assistant message's calls are answered by the tool messages right after it."""
    recorded = Recorded("openai_tool_call.json", "openai_tool_call_again.json", "openai_text.json")
    model = openai_model(sync_client(recorded), "gpt-4o-mini")
    react_agent(model, [get_weather]).compile().invoke({"messages": [user("Weather?")]})
    sent = recorded.requests[2]["messages"]
    assert [m["role"] for m in sent] == [
        "user",
        *("assistant", "tool", "tool"),
        *("assistant", "tool"),
    ]
    asked = [[c["id"] for c in m["tool_calls"]] for m in sent if m["role"] == "assistant"]
    assert asked == [["call_Wx1", "call_Wx2"], ["call_Wx1"]]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [
        "call_Wx1",
        "call_Wx2",
        "call_Wx1",
    ]
    assert sent[-1]["content"] == "4°C, cloudy"


def test_usage_is_reported_from_the_response_and_priced() -> None:
    """Each call reports its calls, tokens and, with prices=, dollars, exactly."""
    recorded = Recorded("openai_tool_call.json", "openai_text.json")
    model = openai_model(async_client(recorded), "gpt-4o-mini", prices=(0.15, 0.60))
    agent = react_agent(model, [get_weather], cost=Cost(calls=1, tokens=1_000, usd="0.001"))
    run = asyncio.run(agent.compile().ainvoke({"messages": [user("Weather in Oslo and Rome?")]}))
    # 91 + 48 and 190 + 19 tokens; (91 + 190) x $0.15 + (48 + 19) x $0.60 per million
    assert run.spent == Cost(calls=2, tokens=348, usd="0.00008235")


def test_without_prices_only_calls_and_tokens_are_reported_and_checked() -> None:
    """A model spending past react_agent's declared cost stops the run with the error."""
    recorded = Recorded("openai_tool_call.json", "openai_text.json")
    model = openai_model(sync_client(recorded), "gpt-4o-mini")
    agent = react_agent(model, [get_weather], cost=Cost(calls=1, tokens=150))
    with pytest.raises(CostExceededError) as caught:
        agent.compile().invoke({"messages": [user("Weather in Oslo and Rome?")]})
    assert (caught.value.node, caught.value.spent) == ("model", Cost(calls=1, tokens=209))
