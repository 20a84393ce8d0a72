"""corral.agents.anthropic against the Anthropic SDK's own client, with recorded responses."""

from __future__ import annotations

import asyncio
from typing import Any

from anthropic import Anthropic, AsyncAnthropic
from recorded_http import Recorded

from corral import Cost
from corral.agents import TokenEvent, Toolbox, assistant, react_agent, tool_result, user
from corral.agents.anthropic import anthropic_model, to_anthropic_messages


def get_weather(city: str, unit: str = "celsius") -> str:
    """Return the weather in a city.

    Args:
        city: the city's name.
        unit: celsius or fahrenheit.
    """
    if unit not in ("celsius", "fahrenheit"):
        raise ValueError(f"unknown unit {unit!r}")
    return {"Oslo": "4°C, cloudy", "Rome": "18°C, sunny"}[city]


def sync_client(recorded: Recorded) -> Anthropic:
    return Anthropic(
        api_key="sk-ant-test",
        base_url="https://api.anthropic.test",
        http_client=recorded.client(),
        max_retries=0,
    )


def async_client(recorded: Recorded) -> AsyncAnthropic:
    return AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="https://api.anthropic.test",
        http_client=recorded.async_client(),
        max_retries=0,
    )


def check_second_request(request: dict[str, Any]) -> None:
    """The tool round goes back as tool_use blocks and one user turn of tool_result blocks."""
    assert request["model"] == "claude-fixture-1"
    assert request["max_tokens"] == 1024
    assert request["system"] == "Be brief."
    assert request["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Weather in Oslo and Rome?"}],
    }
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I'll look up both cities."},
            {
                "type": "tool_use",
                "id": "toolu_01Wx1",
                "name": "get_weather",
                "input": {"city": "Oslo"},
            },
            {
                "type": "tool_use",
                "id": "toolu_01Wx2",
                "name": "get_weather",
                "input": {"city": "Rome", "unit": "kelvin"},
            },
        ],
    }
    assert request["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01Wx1",
                "content": "4°C, cloudy",
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01Wx2",
                "content": "error: tool 'get_weather' raised ValueError: unknown unit 'kelvin'",
                "is_error": True,
            },
        ],
    }
    assert len(request["messages"]) == 3


def test_a_tool_round_through_the_sync_sdk() -> None:
    """Schemas out as input_schema tools, tool_use back as ToolCalls, results as tool_result."""
    recorded = Recorded("anthropic_tool_use.json", "anthropic_text.json")
    model = anthropic_model(sync_client(recorded), "claude-fixture-1", metadata={"user_id": "u-1"})
    app = react_agent(model, [get_weather], system="Be brief.").compile()
    run = app.invoke({"messages": [user("Weather in Oslo and Rome?")]})

    first = recorded.requests[0]
    assert recorded.paths == ["/v1/messages"] * 2
    assert first["metadata"] == {"user_id": "u-1"}
    assert first["tools"] == [
        {
            "name": "get_weather",
            "description": "Return the weather in a city.",
            "input_schema": Toolbox([get_weather]).schemas()[0]["parameters"],
        }
    ]
    check_second_request(recorded.requests[1])
    calls = run.state["messages"][1]
    assert calls["id"] == "msg_01AgentFixture01"
    assert calls["content"] == "I'll look up both cities."
    assert calls["tool_calls"][0] == {
        "id": "toolu_01Wx1",
        "name": "get_weather",
        "arguments": {"city": "Oslo"},
    }
    final = run.state["messages"][-1]
    assert final["content"] == "Oslo is 4°C and cloudy; Rome is 18°C and sunny."
    assert final["id"] == "msg_01AgentFixture02"


def test_a_tool_round_through_the_async_sdk() -> None:
    recorded = Recorded("anthropic_tool_use.json", "anthropic_text.json")
    model = anthropic_model(async_client(recorded), "claude-fixture-1")
    app = react_agent(model, [get_weather], system="Be brief.").compile()
    run = asyncio.run(app.ainvoke({"messages": [user("Weather in Oslo and Rome?")]}))
    check_second_request(recorded.requests[1])
    assert run.state["messages"][-1]["content"].startswith("Oslo is 4°C")


def test_a_streamed_reply_emits_its_tokens_and_assembles_the_call() -> None:
    """text_delta events are emitted as tokens; input_json_delta pieces become arguments."""
    events: list[TokenEvent] = []
    recorded = Recorded("anthropic_stream.sse")
    model = anthropic_model(sync_client(recorded), "claude-fixture-1", stream=True)
    reply = model([user("Oslo?")], Toolbox([get_weather]).schemas(), emit=events.append)
    assert recorded.requests[0]["stream"] is True
    assert [e["text"] for e in events] == ["Let", " me", " check", "."]
    assert reply == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [{"id": "toolu_01S1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
        "id": "msg_01AgentStream01",
    }


def test_a_streamed_reply_through_the_async_sdk() -> None:
    events: list[TokenEvent] = []
    recorded = Recorded("anthropic_stream.sse")
    model = anthropic_model(async_client(recorded), "claude-fixture-1", stream=True)
    reply = asyncio.run(model([user("Oslo?")], [], emit=events.append))
    assert "tools" not in recorded.requests[0]
    assert "".join(e["text"] for e in events) == reply["content"] == "Let me check."


def test_a_gave_up_conversation_stays_valid_for_the_api() -> None:
    """Calls left unanswered by give_up get error results, so the roles still alternate."""
    messages = [
        user("?"),
        assistant("", [{"id": "t1", "name": "get_weather", "arguments": {}}]),
        tool_result("t1", "error: not run", is_error=True),
        assistant("I gave up."),
        user("try again"),
    ]
    system, turns = to_anthropic_messages(messages)
    assert system == ""
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]


def test_a_call_id_reused_in_a_later_turn_is_sent_unique_and_answered() -> None:
    """The messages API refuses repeated tool_use ids: a reused one is sent with a suffix."""
    recorded = Recorded(
        "anthropic_tool_use.json", "anthropic_tool_use_again.json", "anthropic_text.json"
    )
    model = anthropic_model(sync_client(recorded), "claude-fixture-1")
    run = react_agent(model, [get_weather]).compile().invoke({"messages": [user("Weather?")]})
    assert [m["role"] for m in run.state["messages"]] == [
        "user",
        *("assistant", "tool", "tool"),
        *("assistant", "tool"),
        "assistant",
    ]
    turns = recorded.requests[2]["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    uses = [[b["id"] for b in t["content"] if b["type"] == "tool_use"] for t in turns[1::2]]
    results = [[b["tool_use_id"] for b in t["content"]] for t in turns[2::2]]
    assert uses == results == [["toolu_01Wx1", "toolu_01Wx2"], ["toolu_01Wx1-2"]]


def test_usage_is_reported_from_the_response_and_priced() -> None:
    """Each call reports its calls, tokens (input + output) and, with prices=, dollars."""
    recorded = Recorded("anthropic_tool_use.json", "anthropic_text.json")
    model = anthropic_model(sync_client(recorded), "claude-fixture-1", prices=(3, 15))
    agent = react_agent(model, [get_weather], cost=Cost(calls=1, tokens=1_000, usd="0.01"))
    run = agent.compile().invoke({"messages": [user("Weather in Oslo and Rome?")]})
    # 412 + 96 and 588 + 21 tokens; (412 + 588) x $3 + (96 + 21) x $15 per million
    assert run.spent == Cost(calls=2, tokens=1_117, usd="0.004755")
    assert agent.bound().cost == Cost(calls=9, tokens=9_000, usd="0.09")


def test_a_streamed_reply_reports_the_final_messages_usage() -> None:
    spent: list[dict[str, object]] = []
    recorded = Recorded("anthropic_stream.sse")
    model = anthropic_model(async_client(recorded), "claude-fixture-1", stream=True)
    asyncio.run(model([user("Oslo?")], [], spend=lambda **kw: spent.append(kw)))
    assert spent == [{"calls": 1, "tokens": 380 + 58, "usd": 0}]
