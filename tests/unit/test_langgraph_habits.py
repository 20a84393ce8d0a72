"""LangGraph's spellings of a run's arguments get one line naming corral's (issue 31 pt 2)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, TypedDict

import pytest

from corral import END, CorralError, Graph, LangGraphArgumentError, MemorySaver


class State(TypedDict):
    n: int


def app() -> Any:
    g = Graph(State)

    @g.node(start=True, then=END)
    def bump(state: State) -> dict[str, int]:
        return {"n": state["n"] + 1}

    return g.compile(checkpointer=MemorySaver())


CONFIG = {"configurable": {"thread_id": "t1", "api_key": "sk-secret"}, "recursion_limit": 9}


@pytest.mark.parametrize(
    ("call", "argument", "says"),
    [
        (lambda a: a.stream({"n": 1}, stream_mode="values"), "stream_mode", "corral's is mode="),
        (lambda a: a.invoke({"n": 1}, stream_mode="values"), "stream_mode", "stream(..., mode="),
        (lambda a: a.astream({"n": 1}, stream_mode="updates"), "stream_mode", "mode="),
        (lambda a: a.invoke({"n": 1}, context={"db": 1}), "context", "corral's is deps="),
        (lambda a: a.invoke({"n": 1}, interrupt_before=["bump"]), "interrupt_before", "compile("),
        (
            lambda a: a.invoke({"n": 1}, CONFIG),
            "config",
            "takes thread_id='t1', max_steps=9 instead",
        ),
        (lambda a: a.invoke({"n": 1}, config=CONFIG), "config", "thread_id='t1'"),
        (lambda a: a.stream({"n": 1}, CONFIG), "config", "thread_id='t1'"),
        (
            lambda a: a.get_state(CONFIG),
            "config",
            "config dict; corral takes get_state('t1') instead",
        ),
        (lambda a: a.update_state(CONFIG, {"n": 2}), "config", "update_state('t1', values)"),
        (lambda a: a.history({"configurable": {}}), "config", "takes history(t) instead"),
        (lambda a: a.invoke({"n": 1}, config=None), "config", "thread_id=, checkpoint_id="),
    ],
)
def test_a_langgraph_spelling_names_corrals(call: Any, argument: str, says: str) -> None:
    """The error is a CorralError and a TypeError, names the argument, never a config secret."""
    with pytest.raises(LangGraphArgumentError) as caught:
        call(app())
    assert isinstance(caught.value, CorralError) and isinstance(caught.value, TypeError)
    assert caught.value.argument == argument
    assert says in str(caught.value)
    assert "sk-secret" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_ainvoke_stays_a_coroutine_function_and_corrals_spelling_runs() -> None:
    """The hint comes before any run; the corral spelling of the same call works."""
    compiled = app()
    assert inspect.iscoroutinefunction(compiled.ainvoke)
    with pytest.raises(LangGraphArgumentError, match="deps="):
        asyncio.run(compiled.ainvoke({"n": 1}, context={}))
    run = asyncio.run(compiled.ainvoke({"n": 1}, thread_id="t1"))
    assert run.state == {"n": 2}
    assert compiled.get_state("t1").values == {"n": 2}
    assert list(compiled.stream({"n": 1}, mode="values", thread_id="t2"))[-1] == {"n": 2}


def test_a_state_key_named_configurable_is_still_an_input() -> None:
    """Only a config dict after the input is a habit; the input itself is never mistaken."""

    class Odd(TypedDict, total=False):
        configurable: int

    g = Graph(Odd)

    @g.node(start=True, then=END)
    def one(state: Odd) -> None:
        return None

    assert g.compile().invoke({"configurable": 1}).state == {"configurable": 1}


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("invoke", lambda a: a.invoke({"n": 1}, bogus=1)),
        ("ainvoke", lambda a: asyncio.run(a.ainvoke({"n": 1}, thread_id="t1", bogus=1))),
        ("stream", lambda a: a.stream({"n": 1}, mode="values", stram_mode="values")),
        ("astream", lambda a: a.astream({"n": 1}, bogus=1)),
    ],
)
def test_an_unknown_argument_is_still_pythons_type_error(method: str, call: Any) -> None:
    """A keyword no way of running takes is refused at the call, naming the method."""
    says = f"{method}\\(\\) got an unexpected keyword argument '(bogus|stram_mode)'$"
    with pytest.raises(TypeError, match=says) as caught:
        call(app())
    assert not isinstance(caught.value, CorralError)
