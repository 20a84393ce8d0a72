"""Provider-neutral chat messages: ``TypedDict``s that are JSON as they are.

A conversation is a list of :data:`Message` values kept under an ``add_messages`` key
(:class:`AgentState`): a message whose ``id`` is already in the list replaces it, any other
is appended. Every message the agent nodes write carries an ``id``; an input message may
leave it out (it is then always appended). Because the messages are plain dicts of strings,
lists and dicts, ``SqliteSaver`` stores them as JSON with no serializer.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, TypedDict, cast

from corral.reducers import add_messages

__all__ = [
    "AgentState",
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "answers",
    "assistant",
    "last_assistant",
    "new_id",
    "system",
    "tool_result",
    "user",
]


class SystemMessage(TypedDict):
    """Instructions for the model: ``{"role": "system", "content": ..., "id": ...}``."""

    role: Literal["system"]
    content: str
    id: NotRequired[str]


class UserMessage(TypedDict):
    """What the person said: ``{"role": "user", "content": ..., "id": ...}``."""

    role: Literal["user"]
    content: str
    id: NotRequired[str]


class ToolCall(TypedDict):
    """One call the model asks for: the call's id, the tool's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


class AssistantMessage(TypedDict):
    """The model's turn: text, and the tools it wants called (an empty list when none)."""

    role: Literal["assistant"]
    content: str
    tool_calls: list[ToolCall]
    id: NotRequired[str]


class ToolMessage(TypedDict):
    """The result of one tool call; ``is_error`` marks a failure the model can repair."""

    role: Literal["tool"]
    tool_call_id: str
    content: str
    is_error: bool
    id: NotRequired[str]


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""Any message of a conversation."""


class AgentState(TypedDict):
    """The state of an agent: the conversation, merged by id with ``add_messages``.

    Extend it for your own agents: ``class State(AgentState): plan: list[str]``.
    """

    messages: Annotated[list[Message], add_messages]


def new_id() -> str:
    """Return a fresh message id (random, so ids never collide across runs of a thread)."""
    return f"msg-{uuid.uuid4().hex}"


def system(content: str, *, id: str | None = None) -> SystemMessage:
    """Return a system message.

    >>> system("Be brief.", id="s1")
    {'role': 'system', 'content': 'Be brief.', 'id': 's1'}
    """
    message: SystemMessage = {"role": "system", "content": content}
    if id is not None:
        message["id"] = id
    return message


def user(content: str, *, id: str | None = None) -> UserMessage:
    """Return a user message.

    >>> user("What is 2 + 3?")
    {'role': 'user', 'content': 'What is 2 + 3?'}
    """
    message: UserMessage = {"role": "user", "content": content}
    if id is not None:
        message["id"] = id
    return message


def assistant(
    content: str = "",
    tool_calls: Sequence[ToolCall] = (),
    *,
    id: str | None = None,
) -> AssistantMessage:
    """Return an assistant message, with the tool calls it asks for.

    >>> assistant("", [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}], id="a1")
    ... # doctest: +NORMALIZE_WHITESPACE
    {'role': 'assistant', 'content': '',
     'tool_calls': [{'id': 'c1', 'name': 'add', 'arguments': {'a': 2, 'b': 3}}], 'id': 'a1'}
    """
    message: AssistantMessage = {
        "role": "assistant",
        "content": content,
        "tool_calls": list(tool_calls),
    }
    if id is not None:
        message["id"] = id
    return message


def tool_result(
    tool_call_id: str, content: str, *, is_error: bool = False, id: str | None = None
) -> ToolMessage:
    """Return the result of tool call ``tool_call_id``; its id defaults to one made from it.

    >>> tool_result("c1", "5")
    {'role': 'tool', 'tool_call_id': 'c1', 'content': '5', 'is_error': False, 'id': 'c1:result'}
    """
    return {
        "role": "tool",
        "tool_call_id": tool_call_id,
        "content": content,
        "is_error": is_error,
        "id": id if id is not None else f"{tool_call_id}:result",
    }


def answers(
    messages: Sequence[Mapping[str, Any]], results: Sequence[ToolMessage]
) -> list[ToolMessage]:
    """Return ``results``, the answers to the last message's calls, with ids of that turn.

    A model may reuse a call id in a later turn (``call_0`` twice); an answer's id is made
    from the assistant message's id (its place in the list when it has none) and the call's
    id, so a later answer is appended after its own turn instead of replacing an earlier
    turn's answer, while answering the same turn again still replaces.

    >>> turn = [assistant("", [{"id": "c1", "name": "add", "arguments": {}}], id="a1")]
    >>> answers(turn, [tool_result("c1", "5")])[0]["id"]
    'a1:c1:result'
    """
    turn = messages[-1].get("id") if messages else None
    if turn is None:
        turn = f"#{len(messages) - 1}"
    return [{**result, "id": f"{turn}:{result['tool_call_id']}:result"} for result in results]


def last_assistant(messages: Sequence[Mapping[str, Any]]) -> AssistantMessage | None:
    """Return the last message if it is the assistant's, else ``None``.

    Only the last message counts: once tool results follow an assistant message, its calls
    have been answered.
    """
    if messages and messages[-1].get("role") == "assistant":
        return cast(AssistantMessage, messages[-1])
    return None
