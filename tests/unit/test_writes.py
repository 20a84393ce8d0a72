"""Write-set inference: keys read from the dict literals a node returns."""

from __future__ import annotations

from typing import Any

from corral import Command
from corral.writes import infer_command_fanout, infer_writes


def test_dict_literals_of_every_return() -> None:
    """Every return's dict literal contributes its keys; bare returns add nothing."""

    def node(state: dict[str, Any]) -> dict[str, Any] | None:
        if state["a"]:
            return {"a": 1}
        if state["b"]:
            return None
        if state["c"]:
            return
        return {"b": 2, "c": 3}

    assert infer_writes(node) == {"a", "b", "c"}


def test_dict_call_and_conditional_expression() -> None:
    """dict(k=...) calls and both arms of `x if c else y` are read."""

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return dict(a=1) if state else {"b": 2}

    assert infer_writes(node) == {"a", "b"}


def test_command_update() -> None:
    """Command(update={...}) contributes its update's keys; a Command without update none."""

    def node(state: dict[str, Any]) -> Command[Any]:
        if state:
            return Command(goto="x")
        return Command(update={"score": 1}, goto="y")

    assert infer_writes(node) == {"score"}


def test_no_return_writes_nothing() -> None:
    """A node with no return statement writes nothing."""

    def node(state: dict[str, Any]) -> None:
        print(state)

    assert infer_writes(node) == frozenset()


def test_nested_functions_are_not_read() -> None:
    """Returns of a nested helper are not the node's returns."""

    def node(state: dict[str, Any]) -> dict[str, Any]:
        def helper() -> dict[str, Any]:
            return {"inner": 1}

        helper()
        return {"outer": 1}

    assert infer_writes(node) == {"outer"}


def test_non_literal_return_is_unknown() -> None:
    """A variable, a spread or a computed key makes the write set unknown."""

    def variable(state: dict[str, Any]) -> dict[str, Any]:
        update = {"a": 1}
        return update

    def spread(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "a": 1}

    def computed(state: dict[str, Any]) -> dict[str, Any]:
        return {state["key"]: 1}

    def generator(state: dict[str, Any]) -> Any:
        yield {"a": 1}

    def command_update(state: dict[str, Any]) -> Command[Any]:
        return Command(update=state, goto="x")

    for func in (variable, spread, computed, generator, command_update):
        assert infer_writes(func) is None, func.__name__


def test_source_unavailable_is_unknown() -> None:
    """A function whose source cannot be read has unknown writes."""
    namespace: dict[str, Any] = {}
    exec("def node(state):\n    return {'a': 1}\n", namespace)
    assert infer_writes(namespace["node"]) is None
    assert infer_writes(len) is None


def test_lambda() -> None:
    """A lone lambda returning a dict literal is read."""
    node = lambda state: {"a": 1}  # noqa: E731
    assert infer_writes(node) == {"a"}


def test_command_fanout() -> None:
    """A goto that may be a list, or is computed, may fan out; a string does not."""

    def single(state: dict[str, Any]) -> Command[Any]:
        return Command(goto="a") if state else Command(goto=NEXT)

    def listed(state: dict[str, Any]) -> Command[Any]:
        return Command(goto=("a", "b"))

    def computed(state: dict[str, Any]) -> Command[Any]:
        return Command(goto=state["next"])

    assert infer_command_fanout(single) is False
    assert infer_command_fanout(listed) is True
    assert infer_command_fanout(computed) is True


NEXT = "b"
