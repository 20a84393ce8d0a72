"""corral.agents: messages, the toolbox, the tool node, needs_tools and react_agent."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from corral import END, Context, GraphError, NodeError, SqliteSaver, ToolError, reducers
from corral.agents import (
    AgentState,
    AssistantMessage,
    Emit,
    Message,
    Toolbox,
    ToolCall,
    ToolSchema,
    assistant,
    needs_tools,
    react_agent,
    system,
    tool_node,
    tool_result,
    user,
)
from corral.agents.toolbox import INVALID_JSON_KEY


def call(tool: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return {"id": call_id, "name": tool, "arguments": arguments}


class Script:
    """A scripted model: returns its replies in order and records what it was sent."""

    def __init__(self, *replies: AssistantMessage) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []
        self.tools: list[Sequence[ToolSchema]] = []

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AssistantMessage:
        self.seen.append(list(messages))
        self.tools.append(tools)
        return self.replies.pop(0)


def answer(call_id: str, content: str, turn: Message) -> Message:
    """The tool message answering ``call_id`` of the assistant message ``turn``."""
    return tool_result(call_id, content, id=f"{turn['id']}:{call_id}:result")


def assert_every_call_answered_right_after_its_turn(messages: Sequence[Message]) -> None:
    """The order OpenAI and Anthropic both require: each assistant message with tool calls
    is followed at once by one tool message per call, in call order, and by no other."""
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            assert index > 0 and messages[index - 1]["role"] in ("assistant", "tool")
        if message["role"] != "assistant" or not message["tool_calls"]:
            continue
        calls = [c["id"] for c in message["tool_calls"]]
        following = messages[index + 1 : index + 1 + len(calls)]
        assert [m["role"] for m in following] == ["tool"] * len(calls), messages
        assert [m["tool_call_id"] for m in following] == calls, messages
        after = messages[index + 1 + len(calls) : index + 2 + len(calls)]
        assert all(m["role"] != "tool" for m in after), messages


def add(a: int, b: int = 0) -> int:
    """Add two whole numbers.

    Longer text that the model does not need.

    Args:
        a: the first number.
        b: the second number,
            zero when left out.
    """
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


# --- messages ---------------------------------------------------------------------------------


def test_add_messages_replaces_by_id_and_appends_the_rest() -> None:
    """A message whose id is known replaces it in place; one without an id is appended."""
    old: list[Message] = [user("hi", id="u1"), assistant("draft", id="a1")]
    new: list[Message] = [assistant("final", id="a1"), user("thanks"), user("again")]
    merged = reducers.add_messages(old, new)
    assert merged == [
        user("hi", id="u1"),
        assistant("final", id="a1"),
        user("thanks"),
        user("again"),
    ]
    assert old[1]["content"] == "draft"


def test_agent_state_round_trips_through_sqlite(tmp_path: Path) -> None:
    """A conversation with tool calls is saved as JSON and a second run continues it."""
    model = Script(
        assistant("", [call("add", a=2, b=3)], id="a1"),
        assistant("5", id="a2"),
        assistant("still 5", id="a3"),
    )
    g = react_agent(model, [add])
    with SqliteSaver(str(tmp_path / "agent.sqlite")) as saver:
        app = g.compile(checkpointer=saver)
        app.invoke({"messages": [user("2 + 3?", id="u1")]}, thread_id="t")
    with SqliteSaver(str(tmp_path / "agent.sqlite")) as saver:
        app = g.compile(checkpointer=saver)
        assert app.get_state("t").values["messages"][1] == assistant(
            "", [call("add", a=2, b=3)], id="a1"
        )
        run = app.invoke({"messages": [user("and now?", id="u2")]}, thread_id="t")
    ids = ["u1", "a1", "a1:c1:result", "a2", "u2", "a3"]
    assert [m["id"] for m in run.state["messages"]] == ids
    assert run.state["messages"][2] == tool_result("c1", "5", id="a1:c1:result")


# --- toolbox: schemas -------------------------------------------------------------------------


def test_schema_comes_from_the_signature_and_docstring() -> None:
    """Name, first docstring paragraph, typed properties, Args descriptions, required keys."""
    [schema] = Toolbox([add]).schemas()
    assert schema == {
        "name": "add",
        "description": "Add two whole numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "the first number."},
                "b": {
                    "type": "integer",
                    "default": 0,
                    "description": "the second number, zero when left out.",
                },
            },
            "required": ["a"],
            "additionalProperties": False,
        },
    }


def test_context_parameter_is_injected_and_hidden_from_the_schema() -> None:
    """A tool's ``Context`` parameter gets the node's ctx; the model never sees it."""

    class Directory:
        def lookup(self, name: str) -> str:
            return f"{name}@example.com"

    def email(name: str, ctx: Context[Directory]) -> str:
        """Look up a person's email address."""
        return ctx.deps.lookup(name)

    box = Toolbox([email])
    assert list(box.schemas()[0]["parameters"]["properties"]) == ["name"]
    model = Script(assistant("", [call("email", name="ada")]), assistant("done"))
    run = react_agent(model, box).compile().invoke({"messages": [user("mail?")]}, deps=Directory())
    assert run.state["messages"][2]["content"] == "ada@example.com"


def test_bad_tool_definitions_raise_tool_error_naming_the_tool() -> None:
    """A missing annotation or a duplicate name is found when the toolbox is built."""

    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        return str(x)

    with pytest.raises(ToolError, match="parameter 'x' of tool 'untyped' has no type annotation"):
        Toolbox([untyped])
    with pytest.raises(ToolError, match="two tools are named 'add'") as info:
        Toolbox([add, add])
    assert info.value.tool == "add"
    with pytest.raises(ToolError, match="timeout_s=0"):
        Toolbox([add], timeout_s=0)


# --- toolbox: running calls -------------------------------------------------------------------


def test_arguments_are_validated_and_coerced_before_the_call() -> None:
    """JSON-ish arguments are checked against the signature; "3" becomes 3."""
    box = Toolbox([add])
    assert box.call(call("add", a="2", b=3)) == tool_result("c1", "5")


@pytest.mark.parametrize(
    ("the_call", "content"),
    [
        (
            call("sub", a=1),
            "error: unknown tool 'sub'; the tools are: 'add', 'divide'",
        ),
        (
            call("add", a="two", c=1),
            "error: invalid arguments for tool 'add': a: Input should be a valid integer, "
            "unable to parse string as an integer (got 'two'); c: Extra inputs are not "
            "permitted; fix them and call it again",
        ),
        (
            call("divide", a=1, b=0),
            "error: tool 'divide' raised ZeroDivisionError: float division by zero",
        ),
        (
            {"id": "c1", "name": "add", "arguments": {INVALID_JSON_KEY: '{"a": 1,'}},
            "error: the arguments for tool 'add' are not valid JSON: '{\"a\": 1,'; "
            "send a JSON object",
        ),
    ],
    ids=["unknown", "invalid", "raises", "not-json"],
)
def test_every_failure_is_an_error_message_not_an_exception(
    the_call: ToolCall, content: str
) -> None:
    """Unknown tool, bad arguments, an exception, bad JSON: a tool message with is_error."""
    box = Toolbox([add, divide])
    assert box.call(the_call) == tool_result("c1", content, is_error=True)


def test_an_async_tool_that_runs_too_long_is_cancelled() -> None:
    """``timeout_s`` cancels an async tool; the model gets an error message, the tool stops."""
    cancelled = []

    async def wait_forever() -> str:
        """Wait for something that never happens."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    box = Toolbox([wait_forever], timeout_s=0.01)
    message = asyncio.run(box.acall(call("wait_forever")))
    assert message["is_error"]
    assert message["content"] == (
        "error: tool 'wait_forever' timed out after 0.01s and was cancelled; "
        "try a smaller request, or another tool"
    )
    assert cancelled == [True]


def test_async_calls_of_one_message_run_concurrently() -> None:
    """Two async tools each wait until both have started: only concurrent runs finish."""
    started: list[str] = []
    both = asyncio.Event()

    async def meet(name: str) -> str:
        """Wait for the other tool."""
        started.append(name)
        if len(started) == 2:
            both.set()
        await both.wait()
        return f"{name} met"

    node = tool_node(Toolbox([meet], timeout_s=5))
    state: AgentState = {
        "messages": [
            assistant("", [call("meet", "c1", name="x"), call("meet", "c2", name="y")], id="a1"),
        ]
    }
    update = asyncio.run(node(state, None))
    turn = state["messages"][0]
    assert update == {"messages": [answer("c1", "x met", turn), answer("c2", "y met", turn)]}


def test_results_that_are_not_text_are_sent_as_json() -> None:
    def point(x: int) -> dict[str, int]:
        """A point on the diagonal."""
        return {"x": x, "y": x}

    assert Toolbox([point]).call(call("point", x=2))["content"] == '{"x":2,"y":2}'


# --- tool_node and needs_tools ----------------------------------------------------------------


def test_tool_node_answers_every_call_in_order() -> None:
    """Results come back in call order, errors included; no calls means no update."""
    node = tool_node([add, divide])
    assert not Toolbox([add]).is_async
    last = assistant("", [call("divide", "c1", a=1, b=0), call("add", "c2", a=1, b=1)])
    update = node({"messages": [user("x"), last]}, None)
    assert [m["tool_call_id"] for m in update["messages"]] == ["c1", "c2"]
    assert [m["is_error"] for m in update["messages"]] == [True, False]
    assert node({"messages": [user("x"), assistant("plain")]}, None) is None


def test_needs_tools_routes_on_the_last_assistant_message() -> None:
    asks = assistant("", [call("add", a=1)])
    assert needs_tools({"messages": [user("q"), asks]}) == "tools"
    assert needs_tools({"messages": [user("q"), assistant("answer")]}) == END
    assert needs_tools({"messages": [asks, tool_result("c1", "1")]}) == END
    assert needs_tools({"messages": []}) == END


# --- react_agent ------------------------------------------------------------------------------


def test_react_agent_passes_check_with_no_finding() -> None:
    """The guarded loop is visible to the analyser, which finds nothing to report."""
    g = react_agent(Script(), [add], max_turns=30)
    assert g.check() == []
    spec = g.spec()
    assert spec.names == ("model", "tools", "give_up")
    [router] = spec.routers
    assert router.source == "model" and router.targets.names == ("tools", END)
    assert [(gd.target, gd.max, gd.otherwise) for gd in router.guards] == [("tools", 30, "give_up")]


def test_react_agent_calls_tools_then_answers() -> None:
    """model → tools → model → END; the model sees the results and the tool schemas."""
    model = Script(assistant("", [call("add", a=2, b=3)]), assistant("2 + 3 = 5"))
    run = (
        react_agent(model, [add], system="Be exact.")
        .compile()
        .invoke({"messages": [user("2 + 3?")]})
    )
    assert [r.node for r in run.trace] == ["model", "tools", "model"]
    assert run.state["messages"][-1]["content"] == "2 + 3 = 5"
    assert model.seen[1][0] == system("Be exact.", id="system")
    assert model.seen[1][-1] == answer("c1", "5", model.seen[1][-2])
    assert model.tools[0] == Toolbox([add]).schemas()
    assert all(m.get("id") for m in run.state["messages"][1:])
    assert run.state["messages"][0] == user("2 + 3?")


def test_model_repairs_a_bad_call_from_the_error_message() -> None:
    """The first call's arguments fail validation; the run goes on and the model fixes it."""
    model = Script(
        assistant("", [call("add", "c1", a="two")]),
        assistant("", [call("add", "c2", a=2)]),
        assistant("2"),
    )
    run = react_agent(model, [add]).compile().invoke({"messages": [user("2?")]})
    assert run.status == "done"
    assert model.seen[1][-1]["is_error"] is True
    assert model.seen[2][-1] == answer("c2", "2", model.seen[2][-2])
    assert run.guards == {("model", "tools"): 2}


def test_react_agent_gives_up_after_max_turns_with_a_message() -> None:
    """A model that never stops asking: max_turns rounds, then a 'gave up' message, no error."""

    def insistent(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
        return assistant("", [call("add", f"c{len(messages)}", a=1)])

    run = react_agent(insistent, [add], max_turns=3).compile().invoke({"messages": [user("?")]})
    assert run.status == "done"
    assert run.guards == {("model", "tools"): 3}
    assert run.steps == 2 * 3 + 2
    assert [r.node for r in run.trace][-2:] == ["model", "give_up"]
    *_, unanswered, final = run.state["messages"]
    assert final["role"] == "assistant" and final["tool_calls"] == []
    assert final["content"] == (
        "I gave up after 3 tool rounds without reaching a final answer (max_turns=3)."
    )
    assert unanswered["role"] == "tool" and unanswered["is_error"]
    assert "gave up after 3 tool rounds" in unanswered["content"]


def test_a_call_id_reused_in_a_later_turn_gets_its_own_answer() -> None:
    """Models reuse ids (``call_0`` every turn); each turn's call is answered after it."""
    model = Script(
        assistant("", [call("add", "call_0", a=1, b=1)]),
        assistant("", [call("add", "call_0", a=2, b=2), call("add", "call_1", a=3)]),
        assistant("done"),
    )
    run = react_agent(model, [add]).compile().invoke({"messages": [user("sums?")]})
    messages = run.state["messages"]
    roles = ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
    assert [m["role"] for m in messages] == roles
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["2", "4", "3"]
    assert_every_call_answered_right_after_its_turn(messages)
    assert_every_call_answered_right_after_its_turn(model.seen[2])
    ids = [m["id"] for m in messages[1:]]  # the input has no id
    assert len(set(ids)) == len(ids)


def test_give_up_answers_a_reused_call_id_after_its_own_turn() -> None:
    def same_id(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
        return assistant("", [call("add", "call_0", a=len(messages))])

    run = react_agent(same_id, [add], max_turns=2).compile().invoke({"messages": [user("?")]})
    messages = run.state["messages"]
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert_every_call_answered_right_after_its_turn(messages)
    assert [m["is_error"] for m in messages if m["role"] == "tool"] == [False, False, True]


def test_answering_the_same_turn_again_replaces_its_answers() -> None:
    """Ids still make a rerun of one turn's calls replace, not duplicate, its answers."""
    node = tool_node([add])
    turn = assistant("", [call("add", "call_0", a=1)], id="a1")
    state: AgentState = {"messages": [user("x"), turn]}
    first = node(state, None)["messages"]
    again = reducers.add_messages([*state["messages"], *first], node(state, None)["messages"])
    assert again == [user("x"), turn, answer("call_0", "1", turn)]
    unnamed = assistant("", [call("add", "call_0", a=1)])
    [result] = node({"messages": [turn, first[0], unnamed]}, None)["messages"]
    assert result["id"] not in {m.get("id") for m in (turn, first[0])}


def test_async_model_and_tools_run_under_invoke_and_ainvoke() -> None:
    """An async model and async tools: the nodes are async, both entry points work."""

    async def lookup(city: str) -> str:
        """Look up the weather."""
        return f"sunny in {city}"

    async def model(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AssistantMessage:
        if messages[-1]["role"] == "user":
            return assistant(
                "", [call("lookup", "c1", city="Oslo"), call("lookup", "c2", city="Rome")]
            )
        return assistant("; ".join(m["content"] for m in messages if m["role"] == "tool"))

    app = react_agent(model, [lookup]).compile()
    run = app.invoke({"messages": [user("weather?")]})
    assert run.state["messages"][-1]["content"] == "sunny in Oslo; sunny in Rome"
    arun = asyncio.run(app.ainvoke({"messages": [user("weather?")]}))
    assert arun.state["messages"][-1]["content"] == "sunny in Oslo; sunny in Rome"


def test_users_extend_the_graph_with_their_own_nodes_and_state() -> None:
    """``then=`` sends the finished agent to a node the user adds, on a wider state."""

    class State(AgentState):
        summary: str

    model = Script(assistant("", [call("add", a=1, b=1)]), assistant("two"))
    g = react_agent(model, [add], then="summarise", state_schema=State)

    @g.node(then=END)
    def summarise(state: State) -> dict[str, object]:
        return {"summary": f"answer: {state['messages'][-1]['content']}"}

    assert g.check() == []
    run = g.compile().invoke({"messages": [user("1 + 1?")]})
    assert run.state["summary"] == "answer: two"
    assert [r.node for r in run.trace] == ["model", "tools", "model", "summarise"]


def test_bad_settings_and_bad_replies_are_named() -> None:
    """max_turns and max_steps are checked when the graph is built; a bad reply is a NodeError."""
    with pytest.raises(GraphError, match="max_turns=0 must be"):
        react_agent(Script(), [add], max_turns=0)
    with pytest.raises(GraphError, match="max_steps=5 is below the worst case of 8"):
        react_agent(Script(), [add], max_turns=3, max_steps=5)

    def rude(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> Any:
        return "just text"

    with pytest.raises(NodeError) as info:
        react_agent(rude, [add]).compile().invoke({"messages": [user("?")]})
    assert "not an assistant message" in str(info.value.__cause__)


def test_a_streaming_model_gets_an_emit_and_its_tokens_become_custom_events() -> None:
    """A model with an ``emit`` keyword is handed one; with ``ctx.emit`` the tokens stream."""
    handed: list[bool] = []

    def streaming(
        messages: Sequence[Message], tools: Sequence[ToolSchema], *, emit: Emit
    ) -> AssistantMessage:
        handed.append(callable(emit))
        for piece in ("Hel", "lo"):
            emit({"type": "token", "text": piece})
        return assistant("Hello")

    app = react_agent(streaming, [add]).compile()
    run = app.invoke({"messages": [user("hi")]})
    assert handed == [True]
    assert run.state["messages"][-1]["content"] == "Hello"
    events = list(app.stream({"messages": [user("hi")]}, mode="custom"))
    assert events == [
        ("model", {"type": "token", "text": "Hel"}),
        ("model", {"type": "token", "text": "lo"}),
    ]
