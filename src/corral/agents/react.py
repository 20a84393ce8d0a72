"""The nodes and the router of a tool-calling agent, and ``react_agent``, which wires them.

A ReAct agent is a loop: the model answers or asks for tools, the tools run, their results
go back to the model. The loop is bounded by construction: the route from the model to the
tools carries ``Guard("tools", max=max_turns, otherwise="give_up")``, so at most
``max_turns`` tool rounds run, and when the guard is used up the run goes to ``give_up``,
which ends it with an assistant message saying so, never with a cap error. Worst case a run
is ``2 * max_turns + 2`` node runs (each round is a model and a tools run, then one more
model run and ``give_up``), and the graph's ``max_steps`` is never below that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict

from typing_extensions import TypeVar

from corral.agents.messages import (
    AgentState,
    Message,
    SystemMessage,
    ToolMessage,
    answers,
    assistant,
    last_assistant,
    new_id,
    tool_result,
)
from corral.agents.model import Model, is_async_model, takes, validate_reply
from corral.agents.toolbox import Toolbox, ToolFunction
from corral.cost import Cost
from corral.dsl import Graph
from corral.errors import GraphError
from corral.retry import Retry
from corral.runtime.context import Context
from corral.spec import END, End, Guard

__all__ = ["AgentUpdate", "needs_tools", "react_agent", "tool_node"]

StateT = TypeVar("StateT", default=AgentState)


class AgentUpdate(TypedDict, total=False):
    """What the agent nodes return: messages to merge into the conversation."""

    messages: list[Message]


def needs_tools(state: AgentState) -> Literal["tools"] | End:
    """Route to ``"tools"`` when the last message is the assistant's and asks for tools.

    >>> needs_tools({"messages": [{"role": "user", "content": "hi"}]})
    '__end__'
    """
    last = last_assistant(state["messages"])
    return "tools" if last is not None and last["tool_calls"] else END


def tool_node(toolbox: Toolbox | Sequence[ToolFunction]) -> Callable[..., Any]:
    """Return a node that runs every tool call of the last assistant message.

    The node returns ``{"messages": [tool messages, in call order]}``; it is ``async`` (and
    runs the calls of one message concurrently) when any tool is. It takes ``(state, ctx)``
    and hands ``ctx`` to tools that have a ``Context`` parameter. Register it with
    ``g.node("tools", then="model")(tool_node(toolbox))``.
    """
    box = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox, _depth=2)

    if box.is_async:

        async def atools(state: AgentState, ctx: Context[Any]) -> AgentUpdate | None:
            last = last_assistant(state["messages"])
            if last is None or not last["tool_calls"]:
                return None
            results: list[ToolMessage] = await box.arun(last["tool_calls"], ctx)
            return {"messages": list[Message](answers(state["messages"], results))}

        return atools

    def tools(state: AgentState, ctx: Context[Any]) -> AgentUpdate | None:
        last = last_assistant(state["messages"])
        if last is None or not last["tool_calls"]:
            return None
        results = box.run(last["tool_calls"], ctx)
        return {"messages": list[Message](answers(state["messages"], results))}

    return tools


def model_node(
    model: Callable[..., Any], toolbox: Toolbox, *, system: str | None = None
) -> Callable[..., Any]:
    """Return a node that calls ``model`` with the conversation and the tool schemas.

    The reply is merged as an assistant message (given an id when it has none). A model
    that takes ``emit`` gets one that sends its tokens as custom events (``ctx.emit``); a
    model that takes ``spend`` gets ``ctx.spend``, to report what each call spends.
    """
    schemas = toolbox.schemas()
    prompt: list[Message] = []
    if system is not None:
        prompt_message: SystemMessage = {"role": "system", "content": system, "id": "system"}
        prompt.append(prompt_message)
    streams = takes(model, "emit")
    spends = takes(model, "spend")

    def arguments(state: AgentState, ctx: Context[Any]) -> tuple[list[Any], dict[str, Any]]:
        messages = [*prompt, *state["messages"]]
        kwargs: dict[str, Any] = {"emit": ctx.emit} if streams else {}
        if spends:
            kwargs["spend"] = ctx.spend
        return [messages, schemas], kwargs

    if is_async_model(model):

        async def amodel(state: AgentState, ctx: Context[Any]) -> AgentUpdate:
            args, kwargs = arguments(state, ctx)
            reply = await model(*args, **kwargs)
            return {"messages": [validate_reply(reply, model)]}

        return amodel

    def model_(state: AgentState, ctx: Context[Any]) -> AgentUpdate:
        args, kwargs = arguments(state, ctx)
        return {"messages": [validate_reply(model(*args, **kwargs), model)]}

    return model_


def give_up_node(max_turns: int) -> Callable[..., Any]:
    """Return the node the guard sends the run to when ``max_turns`` rounds are used up.

    It answers the calls the model asked for last with error tool messages (providers
    refuse a conversation with unanswered calls, so the thread can go on) and ends with an
    assistant message that says the agent gave up.
    """
    reason = f"the agent gave up after {max_turns} tool rounds (max_turns={max_turns})"

    def give_up(state: AgentState) -> AgentUpdate:
        last = last_assistant(state["messages"])
        unanswered = answers(
            state["messages"],
            [
                tool_result(call["id"], f"error: not run: {reason}", is_error=True)
                for call in (last["tool_calls"] if last is not None else [])
            ],
        )
        text = (
            f"I gave up after {max_turns} tool rounds without reaching a final answer "
            f"(max_turns={max_turns})."
        )
        return {"messages": [*list[Message](unanswered), assistant(text, id=new_id())]}

    return give_up


def react_agent(
    model: Model,
    toolbox: Toolbox | Sequence[ToolFunction],
    *,
    max_turns: int = 8,
    system: str | None = None,
    then: str = END,
    name: str = "react_agent",
    max_steps: int | None = None,
    retry: Retry | None = None,
    timeout: float | None = None,
    cost: Cost | None = None,
    state_schema: type[StateT] = AgentState,  # type: ignore[assignment]  # StateT's default
) -> Graph[StateT]:
    """Return a ReAct agent graph: ``model`` → ``needs_tools`` → ``tools`` → ``model``.

    >>> from corral.agents import assistant, user
    >>> def add(a: int, b: int) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> def model(messages, tools):
    ...     if messages[-1]["role"] == "user":
    ...         return assistant("", [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}])
    ...     return assistant(f"2 + 3 = {messages[-1]['content']}")
    >>> g = react_agent(model, [add])
    >>> g.check()
    []
    >>> g.compile().invoke({"messages": [user("2 + 3?")]}).state["messages"][-1]["content"]
    '2 + 3 = 5'

    Args:
        model: any callable, sync or async, ``(messages, tool_schemas) -> AssistantMessage``
            (see :class:`~corral.agents.model.Model`).
        toolbox: a :class:`Toolbox`, or the tool functions to make one from.
        max_turns: the most tool rounds one run may take; the next request for tools ends
            the run with a "gave up" message instead.
        system: a system prompt put before the conversation on every model call (not
            stored in the state).
        then: where the run goes when the agent is done (answered or gave up): ``END``, or
            a node you add to the returned graph.
        name: the graph's name (shown by ``corral draw`` and in findings).
        max_steps: the graph's step cap; at least ``2 * max_turns + 2`` (the worst case).
        retry: the model node's :class:`~corral.Retry`: the adapters raise an unreachable,
            timed-out, rate-limited (429) or failing (5xx) provider as
            :class:`~corral.errors.ModelUnavailableError`, which ``Retry()`` retries,
            waiting at least the provider's ``Retry-After``.
        timeout: seconds the model node may run (an async model) before it is cancelled.
        cost: the most one model call spends; the graph's cost ceiling is then
            ``max_turns + 1`` times it (``g.bound().cost``).
        state_schema: a ``TypedDict`` with the ``messages`` key of :class:`AgentState`
            (subclass it to add keys); ``AgentState`` by default.
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        msg = f"max_turns={max_turns!r} must be a whole number of tool rounds, 1 or more"
        raise GraphError(msg)
    box = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox, _depth=2)
    worst = 2 * max_turns + 2
    if max_steps is not None and max_steps < worst:
        msg = (
            f"max_steps={max_steps} is below the worst case of {worst} node runs for "
            f"max_turns={max_turns} (2 per tool round, then the model and give_up); "
            f"raise max_steps to {worst} or more, or lower max_turns"
        )
        raise GraphError(msg)
    g: Graph[Any] = Graph(state_schema, name=name, max_steps=max_steps or max(50, worst))
    model_fn = model_node(model, box, system=system)
    g.node("model", start=True, writes=("messages",), retry=retry, timeout=timeout, cost=cost)(
        model_fn
    )
    guard = Guard("tools", max=max_turns, otherwise="give_up")
    g.router("model", guards=[guard])(needs_tools if then == END else _needs_tools_or(then))
    g.node("tools", then="model", writes=("messages",))(tool_node(box))
    g.node("give_up", then=then, writes=("messages",))(give_up_node(max_turns))
    return g


def _needs_tools_or(then: str) -> Callable[..., Any]:
    """Return ``needs_tools`` with ``then`` in place of ``END`` (its annotation says so)."""

    def needs_tools(state: AgentState) -> Any:
        last = last_assistant(state["messages"])
        return "tools" if last is not None and last["tool_calls"] else then

    needs_tools.__annotations__["return"] = Literal["tools", then]
    return needs_tools
