"""Flaky providers: the adapters' transient errors are retried by ``Retry()`` (issue 31 pt 3).

Recorded answers (429 with ``retry-after-ms``, 503, Anthropic's 529 with ``retry-after``,
500) and a refused connection or a read timeout go through the SDKs' own client code
(``recorded_http``); only ``corral.retry.sleep`` is replaced, to see the waits without
waiting.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic
from openai import AsyncOpenAI, AuthenticationError, OpenAI
from recorded_http import Recorded

from corral import ModelUnavailableError, NodeError, Retry
from corral import retry as retry_module
from corral.agents import react_agent, user
from corral.agents.anthropic import anthropic_model
from corral.agents.openai import openai_model

OPENAI = "https://api.openai.test/v1/chat/completions"
ANTHROPIC = "https://api.anthropic.test/v1/messages"
QUICK = Retry(attempts=4, backoff=0.25, jitter=False)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    found: list[float] = []
    monkeypatch.setattr(retry_module, "sleep", found.append)

    async def record(seconds: float) -> None:
        found.append(seconds)

    monkeypatch.setattr(retry_module, "async_sleep", record)
    return found


def openai_client(recorded: Recorded, *, sync: bool = True) -> Any:
    kind, http = (OpenAI, recorded.client) if sync else (AsyncOpenAI, recorded.async_client)
    return kind(
        api_key="sk-secret-key",
        base_url="https://api.openai.test/v1",
        default_query={"key": "sk-in-query"},
        http_client=http(),
        max_retries=0,
    )


def anthropic_client(recorded: Recorded, *, sync: bool = True) -> Any:
    kind = Anthropic if sync else AsyncAnthropic
    http = recorded.client if sync else recorded.async_client
    return kind(
        api_key="sk-ant-secret",
        base_url="https://api.anthropic.test",
        http_client=http(),
        max_retries=0,
    )


def test_openai_rate_limit_5xx_and_refused_connection_are_retried(waits: list[float]) -> None:
    """429 waits its retry-after-ms (1.5 s, above the 0.25 s backoff), then 503 and a refused
    connection back off as usual; the fourth attempt answers."""
    recorded = Recorded("openai_rate_limit.http", "openai_503.http", "!connect", "openai_text.json")
    model = openai_model(openai_client(recorded), "gpt-4o-mini")
    run = react_agent(model, [], retry=QUICK).compile().invoke({"messages": [user("hi")]})
    assert run.state["messages"][-1]["role"] == "assistant"
    assert waits == [1.5, 0.5, 1.0]


def test_the_last_failure_names_the_endpoint_and_never_a_key(waits: list[float]) -> None:
    recorded = Recorded("openai_503.http", "openai_rate_limit.http")
    model = openai_model(openai_client(recorded), "gpt-4o-mini")
    app = react_agent(model, [], retry=Retry(attempts=2, backoff=0, jitter=False)).compile()
    with pytest.raises(NodeError) as caught:
        app.invoke({"messages": [user("hi")]})
    error = caught.value.__cause__
    assert isinstance(error, ModelUnavailableError) and isinstance(error, ConnectionError)
    assert (error.endpoint, error.status, error.retry_after_s) == (OPENAI, 429, 1.5)
    assert str(error).startswith(
        f"model endpoint {OPENAI!r} answered 429 (RateLimitError), asking to wait 1.5 s; "
    )
    assert "sk-" not in str(caught.value) and "sk-" not in str(error)


def test_a_refused_key_is_not_retried_and_stays_the_sdks_error(waits: list[float]) -> None:
    recorded = Recorded("openai_401.http", "openai_text.json")
    app = react_agent(openai_model(openai_client(recorded), "m"), [], retry=QUICK).compile()
    with pytest.raises(NodeError) as caught:
        app.invoke({"messages": [user("hi")]})
    assert isinstance(caught.value.__cause__, AuthenticationError)
    assert waits == [] and len(recorded.requests) == 1


def test_anthropic_overloaded_and_500_through_the_async_sdk(waits: list[float]) -> None:
    """529 with retry-after: 2 waits 2 s; a 500 and a read timeout back off; then it answers."""
    recorded = Recorded(
        "anthropic_overloaded.http", "anthropic_500.http", "!timeout", "anthropic_text.json"
    )
    model = anthropic_model(anthropic_client(recorded, sync=False), "claude")
    app = react_agent(model, [], retry=QUICK, timeout=30).compile()
    run = asyncio.run(app.ainvoke({"messages": [user("hi")]}))
    assert run.state["messages"][-1]["role"] == "assistant"
    assert waits == [2.0, 0.5, 1.0]


def test_an_unreachable_anthropic_endpoint_is_named(waits: list[float]) -> None:
    recorded = Recorded("!timeout")
    app = react_agent(anthropic_model(anthropic_client(recorded), "claude"), []).compile()
    with pytest.raises(NodeError) as caught:
        app.invoke({"messages": [user("hi")]})
    assert str(caught.value.__cause__).startswith(
        f"model endpoint {ANTHROPIC!r} timed out (APITimeoutError); the default Retry retries it"
    )
    assert "sk-ant" not in str(caught.value)


def test_a_providers_retry_after_is_capped_by_max_backoff() -> None:
    error = ModelUnavailableError("busy", endpoint=OPENAI, status=429, retry_after_s=3600.0)
    assert Retry(max_backoff=30.0).delay(1, error=error) == 30.0
    assert Retry().retries(error)
