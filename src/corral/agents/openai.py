"""A model from the OpenAI chat-completions API (extra ``corral[openai]``).

>>> from openai import OpenAI                               # doctest: +SKIP
>>> model = openai_model(OpenAI(), "gpt-4o-mini")           # doctest: +SKIP
>>> graph = react_agent(model, [add])                       # doctest: +SKIP

Messages go out in the chat-completions shape (a tool call's arguments as a JSON string, a
tool result as a ``"tool"`` message; a result marked ``is_error`` already says so in its
text, since the API has no error flag) and the reply comes back as an
:class:`~corral.agents.AssistantMessage` whose id is the completion's id. Arguments that are
not valid JSON reach the toolbox as ``{INVALID_JSON_KEY: text}``, which answers with an
error the model can repair from. An ``AsyncOpenAI`` client gives an async model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

import openai
from openai import AsyncOpenAI, OpenAI

from corral.agents._unavailable import provider_errors
from corral.agents.messages import AssistantMessage, Message, ToolCall, assistant, new_id
from corral.agents.model import ClientModel, Emit, Spend
from corral.agents.toolbox import INVALID_JSON_KEY, ToolSchema
from corral.cost import Money

__all__ = [
    "AsyncOpenAIModel",
    "OpenAIModel",
    "from_openai",
    "openai_model",
    "parse_arguments",
    "to_openai_messages",
    "to_openai_tools",
]


@overload
def openai_model(
    client: OpenAI,
    model: str,
    *,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> OpenAIModel: ...
@overload
def openai_model(
    client: AsyncOpenAI,
    model: str,
    *,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> AsyncOpenAIModel: ...
def openai_model(
    client: OpenAI | AsyncOpenAI,
    model: str,
    *,
    stream: bool = False,
    prices: tuple[Money, Money] | None = None,
    **params: Any,
) -> OpenAIModel | AsyncOpenAIModel:
    """Return a model that calls ``client.chat.completions.create(model=model, ...)``.

    Args:
        client: an ``OpenAI`` client (a sync model) or ``AsyncOpenAI`` (an async one).
        model: the model's name, e.g. ``"gpt-4o-mini"``.
        stream: ask for a streamed reply and emit its text as token events (its usage is
            reported when ``stream_options={"include_usage": True}`` is among ``params``).
        prices: USD per million input and output tokens, e.g. ``(0.15, 0.60)``: each call
            then reports its dollars to ``spend`` (``ctx.spend``) besides its tokens.
        params: more arguments for every request (``temperature=0``, ``max_tokens=...``).
    """
    if isinstance(client, AsyncOpenAI):
        return AsyncOpenAIModel(client, model, stream=stream, params=params, prices=prices)
    return OpenAIModel(client, model, stream=stream, params=params, prices=prices)


class OpenAIModel(ClientModel[OpenAI]):
    """A sync model around an ``OpenAI`` client (see :func:`openai_model`)."""

    factory = "openai_model"

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
        with provider_errors(openai):
            if not self.stream:
                completion = self.client.chat.completions.create(**request)
                self.report(spend, *_tokens(completion.usage))
                return from_openai(completion)
            reply = _Streamed()
            for chunk in self.client.chat.completions.create(**request, stream=True):
                reply.add(chunk, emit)
        self.report(spend, *_tokens(reply.usage))
        return reply.message()


class AsyncOpenAIModel(ClientModel[AsyncOpenAI]):
    """An async model around an ``AsyncOpenAI`` client (see :func:`openai_model`)."""

    factory = "openai_model"

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
        with provider_errors(openai):
            if not self.stream:
                completion = await self.client.chat.completions.create(**request)
                self.report(spend, *_tokens(completion.usage))
                return from_openai(completion)
            reply = _Streamed()
            async for chunk in await self.client.chat.completions.create(**request, stream=True):
                reply.add(chunk, emit)
        self.report(spend, *_tokens(reply.usage))
        return reply.message()


def _tokens(usage: Any) -> tuple[int, int]:
    """Return the input and output tokens of a completion's ``usage`` (none: 0 and 0)."""
    if usage is None:
        return 0, 0
    return usage.prompt_tokens or 0, usage.completion_tokens or 0


def _request(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSchema], params: dict[str, Any]
) -> dict[str, Any]:
    request: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages)}
    if tools:
        request["tools"] = to_openai_tools(tools)
    request.update(params)
    return request


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Return the conversation as chat-completions messages.

    >>> to_openai_messages([{"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c1", "name": "add", "arguments": {"a": 1}}]}])
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function',
      'function': {'name': 'add', 'arguments': '{"a": 1}'}}]}]
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "assistant":
            calls = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _dump(call["arguments"])},
                }
                for call in message["tool_calls"]
            ]
            item: dict[str, Any] = {"role": "assistant", "content": message["content"] or None}
            if calls:
                item["tool_calls"] = calls
            out.append(item)
        elif message["role"] == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message["tool_call_id"],
                    "content": message["content"],
                }
            )
        else:
            out.append({"role": message["role"], "content": message["content"]})
    return out


def to_openai_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Return the tool schemas as chat-completions ``function`` tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["parameters"],
            },
        }
        for tool in tools
    ]


def from_openai(completion: Any) -> AssistantMessage:
    """Return the first choice of a ``ChatCompletion`` as an assistant message."""
    message = completion.choices[0].message
    calls: list[ToolCall] = [
        {
            "id": call.id,
            "name": call.function.name,
            "arguments": parse_arguments(call.function.arguments),
        }
        for call in (message.tool_calls or [])
        if getattr(call, "type", "function") == "function"
    ]
    text = message.content or getattr(message, "refusal", None) or ""
    return assistant(text, calls, id=completion.id or new_id())


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Return a call's JSON arguments as a dict; text that is not a JSON object is kept.

    >>> parse_arguments('{"a": 1}'), parse_arguments(""), parse_arguments('{"a": ')
    ({'a': 1}, {}, {'__invalid_json__': '{"a": '})
    """
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def _dump(arguments: dict[str, Any]) -> str:
    if set(arguments) == {INVALID_JSON_KEY}:
        return str(arguments[INVALID_JSON_KEY])
    return json.dumps(arguments)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class _Streamed:
    """A reply put together from ``ChatCompletionChunk``s; its text is emitted as it comes."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.usage: Any = None
        """The last chunk's usage (sent with ``stream_options={"include_usage": True}``)."""

    def add(self, chunk: Any, emit: Emit | None) -> None:
        self.id = self.id or chunk.id
        self.usage = getattr(chunk, "usage", None) or self.usage
        if not chunk.choices:
            return
        delta = chunk.choices[0].delta
        if delta.content:
            self.text.append(delta.content)
            if emit is not None:
                emit({"type": "token", "text": delta.content})
        for piece in delta.tool_calls or []:
            call = self.calls.setdefault(piece.index, _PartialCall())
            call.id = piece.id or call.id
            if piece.function is not None:
                call.name += piece.function.name or ""
                call.arguments += piece.function.arguments or ""

    def message(self) -> AssistantMessage:
        calls: list[ToolCall] = [
            {"id": c.id, "name": c.name, "arguments": parse_arguments(c.arguments)}
            for _, c in sorted(self.calls.items())
        ]
        return assistant("".join(self.text), calls, id=self.id or new_id())
