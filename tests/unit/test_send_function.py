"""``Send(node_function, arg)``: the runtime reads the function as the node it was registered as."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

import pytest

from corral import END, Command, Graph, MemorySaver, RouteError, Send

pytestmark = pytest.mark.usefixtures("engine_path")
"""Each test runs three ways: invoke, invoke through the general path, ainvoke."""


class Jobs(TypedDict):
    tasks: list[str]
    done: Annotated[list[str], operator.add]


class Step(TypedDict):
    task: str


def fan_out_graph() -> Graph[Jobs]:
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> None:
        return None

    @g.router("plan")
    def fan(state: Jobs) -> list[Send[Literal["execute"]]]:
        return [Send(run_step, {"task": task}) for task in state["tasks"]]

    @g.node(name="execute", then="collect", input=Step)
    def run_step(step: Step) -> dict[str, object]:
        return {"done": [step["task"].upper()]}

    @g.node(then=END)
    def collect(state: Jobs) -> None:
        return None

    return g


def test_send_to_a_function_runs_the_node_it_is_registered_as() -> None:
    """A Send naming the function runs its node (here named apart from the function)."""
    run = fan_out_graph().compile().invoke({"tasks": ["a", "b"]})
    assert run.state["done"] == ["A", "B"]
    assert [t.node for t in run.trace] == ["plan", "execute", "execute", "collect"]


def test_a_function_send_is_checkpointed_by_name() -> None:
    """Paused before the sent node, the run resumes: the checkpoint holds the name."""
    app = fan_out_graph().compile(checkpointer=MemorySaver(), interrupt_before=["execute"])
    paused = app.invoke({"tasks": ["a"]}, thread_id="t")
    assert paused.status == "interrupted"
    run = app.invoke(None, thread_id="t")
    assert run.status == "done" and run.state["done"] == ["A"]


def test_command_goto_takes_a_function_send() -> None:
    """``Command(goto=[Send(function, arg)])`` works like the name form."""
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> Command[Literal["execute"]]:
        return Command(goto=[Send(execute, {"task": t}) for t in state["tasks"]])

    @g.node(then=END, input=Step)
    def execute(step: Step) -> dict[str, object]:
        return {"done": [step["task"]]}

    assert g.compile().invoke({"tasks": ["x", "y"]}).state["done"] == ["x", "y"]


def stray(step: Step) -> None:
    """A function that no graph registers."""


def test_a_function_that_is_not_a_node_is_a_route_error_naming_it() -> None:
    """Sending to a function the graph does not know names the function and says what to do."""
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> None:
        return None

    @g.router("plan")
    def fan(state: Jobs) -> Send[Literal["execute"]]:
        return Send(stray, {"task": "x"})

    @g.node(then=END, input=Step)
    def execute(step: Step) -> None:
        return None

    with pytest.raises(RouteError) as caught:
        g.compile().invoke({"tasks": []})
    message = str(caught.value)
    assert "router 'fan' returned Send(stray, ...)" in message
    assert "'stray' is not a node of this graph" in message
    assert caught.value.router == "fan"
    assert caught.value.value == Send(stray, {"task": "x"})


def test_a_command_sending_to_an_unknown_function_names_the_node() -> None:
    """The same error from a Command names the node that returned it."""
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> Command[Literal["execute"]]:
        return Command(goto=Send(stray, {"task": "x"}))

    @g.node(then=END, input=Step)
    def execute(step: Step) -> None:
        return None

    with pytest.raises(RouteError, match=r"node 'plan' returned Send\(stray, \.\.\.\)") as caught:
        g.compile().invoke({"tasks": []})
    assert caught.value.router == "plan"


def test_a_function_registered_twice_must_be_sent_by_name() -> None:
    """A function registered as two nodes is ambiguous: the error lists both names."""
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> None:
        return None

    @g.router("plan")
    def fan(state: Jobs) -> Send[Literal["left", "right"]]:
        return Send(work, {"task": "x"})

    def work(step: Step) -> None:
        return None

    g.node(name="left", then=END, input=Step)(work)
    g.node(name="right", then=END, input=Step)(work)

    with pytest.raises(RouteError, match=r"several nodes \['left', 'right'\]"):
        g.compile().invoke({"tasks": []})


def test_a_sent_node_outside_the_routes_is_the_usual_route_error() -> None:
    """A function that is a node, but not one of the router's routes, reads as its name."""
    g = Graph(Jobs)

    @g.node(start=True)
    def plan(state: Jobs) -> None:
        return None

    @g.router("plan")
    def fan(state: Jobs) -> Send[Literal["execute"]]:
        return Send(other, {"tasks": [], "done": []})

    @g.node(then=END, input=Step)
    def execute(step: Step) -> None:
        return None

    @g.node(start=True, then=END)
    def other(state: Jobs) -> None:
        return None

    with pytest.raises(RouteError, match=r"returned Send\(node='other'"):
        g.compile().invoke({"tasks": []})
