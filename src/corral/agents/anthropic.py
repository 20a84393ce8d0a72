"""A model from the Anthropic messages API (extra ``corral[anthropic]``).

>>> from anthropic import Anthropic                                   # doctest: +SKIP
>>> model = anthropic_model(Anthropic(), "claude-opus-4-1")           # doctest: +SKIP
>>> graph = react_agent(model, [add])                                 # doctest: +SKIP

The system messages become the request's ``system`` text; an assistant message becomes
``text`` and ``tool_use`` blocks; tool results become ``tool_result`` blocks (with
``is_error``) in a user turn, and consecutive user turns are joined into one, as the API
wants the roles to alternate. The reply's ``text`` blocks are joined into the content and
its ``tool_use`` blocks become tool calls; the message id is kept. An ``AsyncAnthropic``
client gives an async model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import anthropic
from anthropic import Anthropic, AsyncAnthropic

from corral.agents._unavailable import provider_errors
from corral.agents.messages import AssistantMessage, Message, ToolCall, assistant, new_id
from corral.agents.model import ClientModel, Emit, Spend
from corral.agents.toolbox import ToolSchema
from corral.cost import Money

__all__ = [
    "AnthropicModel",
    "AsyncAnthropicModel",
    "anthropic_model",
    "from_anthropic",
    "to_anthropic_messages",
    "to_anthropic_tools",
]


@overload
def anthropic_model(
    client: Anthropic,
    model: str,
    *,
    max_tokens: int = 1024,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> AnthropicModel: ...
@overload
def anthropic_model(
    client: AsyncAnthropic,
    model: str,
    *,
    max_tokens: int = 1024,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> AsyncAnthropicModel: ...
def anthropic_model(
    client: Anthropic | AsyncAnthropic,
    model: str,
    *,
    max_tokens: int = 1024,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> AnthropicModel | AsyncAnthropicModel:
    """Return a model that calls ``client.messages.create(model=model, ...)``.

    Args:
        client: an ``Anthropic`` client (a sync model) or ``AsyncAnthropic`` (an async one).
        model: the model's name, e.g. ``"claude-opus-4-1"``.
        max_tokens: the most tokens of one reply (the API requires it).
        stream: stream the reply (``client.messages.stream``) and emit its text as token
            events.
        prices: USD per million input and output tokens, e.g. ``(3, 15)``: each call then
            reports its dollars to ``spend`` (``ctx.spend``) besides its tokens (cache
            reads and writes count as input tokens).
        params: more arguments for every request (``metadata=...``, ``thinking=...``).
    """
    settings = {"max_tokens": max_tokens, **params}
    if isinstance(client, AsyncAnthropic):
        return AsyncAnthropicModel(client, model, stream=stream, params=settings, prices=prices)
    return AnthropicModel(client, model, stream=stream, params=settings, prices=prices)


class AnthropicModel(ClientModel[Anthropic]):
    """A sync model around an ``Anthropic`` client (see :func:`anthropic_model`)."""

    factory = "anthropic_model"

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        /,
        *,
        emit: Emit | None = None,
        spend: Spend | None = None,
    ) -> AssistantMessage:
        request = _request(self.model, messages, tools, self.params)
        with provider_errors(anthropic):
            if not self.stream:
                reply = self.client.messages.create(**request)
            else:
                with self.client.messages.stream(**request) as stream:
                    for text in stream.text_stream:
                        if emit is not None:
                            emit({"type": "token", "text": text})
                    reply = stream.get_final_message()
        self.report(spend, *_tokens(reply.usage))
        return from_anthropic(reply)


class AsyncAnthropicModel(ClientModel[AsyncAnthropic]):
    """An async model around an ``AsyncAnthropic`` client (see :func:`anthropic_model`)."""

    factory = "anthropic_model"

    async def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        /,
        *,
        emit: Emit | None = None,
        spend: Spend | None = None,
    ) -> AssistantMessage:
        request = _request(self.model, messages, tools, self.params)
        with provider_errors(anthropic):
            if not self.stream:
                reply = await self.client.messages.create(**request)
            else:
                async with self.client.messages.stream(**request) as stream:
                    async for text in stream.text_stream:
                        if emit is not None:
                            emit({"type": "token", "text": text})
                    reply = await stream.get_final_message()
        self.report(spend, *_tokens(reply.usage))
        return from_anthropic(reply)


def _tokens(usage: Any) -> tuple[int, int]:
    """Return the input tokens (cache reads and writes included) and output tokens."""
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return usage.input_tokens + cached, usage.output_tokens


def _request(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSchema], params: dict[str, Any]
) -> dict[str, Any]:
    system, turns = to_anthropic_messages(messages)
    request: dict[str, Any] = {"model": model, "messages": turns}
    if system:
        request["system"] = system
    if tools:
        request["tools"] = to_anthropic_tools(tools)
    request.update(params)
    return request


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Return the system text and the conversation as messages-API turns.

    >>> to_anthropic_messages([
    ...     {"role": "system", "content": "Be brief."},
    ...     {"role": "tool", "tool_call_id": "t1", "content": "5", "is_error": False},
    ...     {"role": "user", "content": "thanks"}])
    ... # doctest: +NORMALIZE_WHITESPACE
    ('Be brief.', [{'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 't1',
      'content': '5', 'is_error': False}, {'type': 'text', 'text': 'thanks'}]}])
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    ids = _ToolUseIds()
    for message in messages:
        if message["role"] == "system":
            system.append(message["content"])
            continue
        if message["role"] == "assistant":
            blocks: list[dict[str, Any]] = []
            if message["content"]:
                blocks.append({"type": "text", "text": message["content"]})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": ids.use(c["id"]),
                    "name": c["name"],
                    "input": c["arguments"],
                }
                for c in message["tool_calls"]
            )
            if not blocks:
                blocks.append({"type": "text", "text": "(no answer)"})
            turns.append({"role": "assistant", "content": blocks})
            continue
        if message["role"] == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": ids.answer(message["tool_call_id"]),
                "content": message["content"],
                "is_error": message["is_error"],
            }
        else:
            block = {"type": "text", "text": message["content"]}
        if turns and turns[-1]["role"] == "user":
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": "user", "content": [block]})
    return "\n\n".join(system), turns


class _ToolUseIds:
    """The ids a request gives its ``tool_use`` blocks, unique as the messages API requires.

    A call id a model reused in a later turn (``call_0`` every turn) is sent as ``call_0-2``,
    ``call_0-3``...; a tool result names the latest call sent with its id.
    """

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self.latest: dict[str, str] = {}

    def use(self, call_id: str) -> str:
        name, count = call_id, 1
        while name in self.sent:
            count += 1
            name = f"{call_id}-{count}"
        self.sent.add(name)
        self.latest[call_id] = name
        return name

    def answer(self, call_id: str) -> str:
        return self.latest.get(call_id, call_id)


def to_anthropic_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Return the tool schemas as messages-API tools (``input_schema``)."""
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in tools
    ]


def from_anthropic(message: Any) -> AssistantMessage:
    """Return a messages-API ``Message`` as an assistant message (text and tool calls)."""
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            calls.append({"id": block.id, "name": block.name, "arguments": dict(arguments)})
    return assistant("".join(text), calls, id=message.id or new_id())
