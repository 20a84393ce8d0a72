"""What a model is to corral: a callable from messages and tool schemas to an assistant message.

Any callable fits, sync or async: a scripted fake in a test, a provider adapter
(``corral.agents.openai``, ``corral.agents.anthropic``), or a function of your own around
another client. A model that streams takes a keyword parameter ``emit`` and calls it with a
:class:`TokenEvent` for each piece of text as it arrives; the model node passes it
``ctx.emit``, so the tokens reach ``stream(mode="custom")`` while the model is still running.
A model that reports what it spends takes a keyword parameter ``spend`` and calls it with
``calls=``, ``tokens=`` and ``usd=``; the model node passes it ``ctx.spend`` (the adapters
do, from the provider's usage, priced by ``prices=``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeAlias, TypedDict, TypeVar

from corral.agents.messages import AssistantMessage, Message, assistant, new_id
from corral.agents.toolbox import ToolSchema
from corral.cost import Cost, Money

__all__ = [
    "ClientModel",
    "Emit",
    "Model",
    "Spend",
    "TokenEvent",
    "is_async_model",
    "takes",
    "validate_reply",
]


class TokenEvent(TypedDict):
    """A piece of the model's text, emitted while it streams: ``{"type": "token", "text"}``."""

    type: Literal["token"]
    text: str


Emit: TypeAlias = Callable[[TokenEvent], None]
"""Where a streaming model sends its tokens (``ctx.emit`` inside the model node)."""

Spend: TypeAlias = Callable[..., None]
"""Where a model reports what one call spent (``ctx.spend`` inside the model node)."""


class Model(Protocol):
    """A model: ``(messages, tool_schemas) -> AssistantMessage``, or an awaitable of one.

    A streaming model also takes ``emit`` (a keyword); see :data:`Emit`.
    """

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], /
    ) -> AssistantMessage | Awaitable[AssistantMessage]: ...


ClientT = TypeVar("ClientT")


class ClientModel(Generic[ClientT]):
    """What a provider adapter holds: its SDK client, the model's name, whether it streams
    and the extra arguments of every request. Subclasses add ``__call__``."""

    factory: ClassVar[str] = "model"
    """The name of the function that builds it, shown by ``repr``."""

    def __init__(
        self,
        client: ClientT,
        model: str,
        *,
        stream: bool = False,
        params: dict[str, Any],
        prices: tuple[Money, Money] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.stream = stream
        self.params = params
        self.prices = None if prices is None else (Cost(usd=prices[0]), Cost(usd=prices[1]))
        """USD per million input and output tokens; ``None``: money is not reported."""

    def report(self, spend: Spend | None, tokens_in: int, tokens_out: int) -> None:
        """Report one call to ``spend``: its tokens and, with ``prices``, its dollars."""
        if spend is None:
            return
        usd = (
            0
            if self.prices is None
            else ((tokens_in * self.prices[0].usd + tokens_out * self.prices[1].usd).scaleb(-6))
        )
        spend(calls=1, tokens=tokens_in + tokens_out, usd=usd)

    def __repr__(self) -> str:
        return f"{self.factory}({self.model!r})"


def is_async_model(model: Callable[..., Any]) -> bool:
    """Return whether calling ``model`` gives a coroutine (an ``async def`` or ``__call__``)."""
    if inspect.iscoroutinefunction(model):
        return True
    call = getattr(type(model), "__call__", None)  # noqa: B004 - the method, not callable()
    return call is not None and inspect.iscoroutinefunction(call)


def takes(model: Callable[..., Any], name: str) -> bool:
    """Return whether ``model`` takes the keyword ``name`` (``emit``: it streams tokens;
    ``spend``: it reports what it spends)."""
    try:
        params = inspect.signature(model).parameters
    except (TypeError, ValueError):
        return False
    param = params.get(name)
    return param is not None and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)


def validate_reply(reply: object, model: object) -> AssistantMessage:
    """Return the model's reply as a complete assistant message (with an id).

    Raises:
        TypeError: the reply is not an assistant message; the model node's ``NodeError``
            carries it.
    """
    if not isinstance(reply, Mapping) or reply.get("role") != "assistant":
        msg = (
            f"model {model!r} returned {reply!r}, not an assistant message; return "
            "{'role': 'assistant', 'content': ..., 'tool_calls': [...]} (see agents.assistant)"
        )
        raise TypeError(msg)
    calls = list(reply.get("tool_calls") or [])
    for call in calls:
        if not isinstance(call, Mapping) or not {"id", "name", "arguments"} <= set(call):
            msg = (
                f"model {model!r} returned the tool call {call!r}; a tool call is "
                "{'id': str, 'name': str, 'arguments': dict}"
            )
            raise TypeError(msg)
    return assistant(
        str(reply.get("content") or ""),
        [
            {"id": str(c["id"]), "name": str(c["name"]), "arguments": dict(c["arguments"])}
            for c in calls
        ],
        id=str(reply.get("id") or new_id()),
    )
