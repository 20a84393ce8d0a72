"""Route extraction: every annotation form, read lazily, with and without postponed annotations."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Literal

import pytest
from graphs import draft_loop, forms_future, forms_plain, in_function

from corral import END, Command, Graph
from corral.targets import read_command_targets, read_literal_form, read_router_targets

MODULES = [forms_future, forms_plain]


def _cases(attr: str) -> list[Any]:
    return [
        pytest.param(func, expected, id=f"{module.__name__.rsplit('.', 1)[-1]}-{func.__name__}")
        for module in MODULES
        for func, expected in getattr(module, attr).items()
    ]


@pytest.mark.parametrize(("func", "expected"), _cases("EXPECTED"))
def test_router_forms(func: Callable[..., Any], expected: tuple[Any, ...]) -> None:
    """Each router annotation form gives its targets, fan-out flag and Send targets."""
    names, many, sends = expected
    found = read_router_targets(func)
    assert (found.names, found.many, found.sends, found.problem) == (names, many, sends, None)


@pytest.mark.parametrize(("func", "expected"), _cases("COMMANDS"))
def test_command_forms(func: Callable[..., Any], expected: tuple[str, ...]) -> None:
    """A Command[Literal[...]] node annotation gives the node's targets."""
    found = read_command_targets(func)
    assert found is not None
    assert found.names == expected


@pytest.mark.parametrize(("func", "expected"), _cases("UNREADABLE"))
def test_unreadable_forms(func: Callable[..., Any], expected: str) -> None:
    """An annotation that names no Literal target is never read as 'could go anywhere'."""
    found = read_router_targets(func)
    assert found.names is None
    assert found.problem is not None and expected in found.problem


def test_plain_node_is_not_a_command_node() -> None:
    """A node annotated with a plain dict is not a Command node."""

    def node(state: dict[str, object]) -> dict[str, object]:
        return {}

    assert read_command_targets(node) is None


def test_command_in_a_union_is_a_command_node() -> None:
    """A node that may return an update or a Command is a Command node."""

    def node(state: dict[str, object]) -> dict[str, object] | Command[Literal["a"]]:
        return {}

    found = read_command_targets(node)
    assert found is not None and found.names == ("a",)


def test_bare_command_is_unreadable() -> None:
    """A bare Command annotation names no targets (CR401), rather than none at all."""

    def node(state: dict[str, object]) -> Command:  # type: ignore[type-arg]
        return Command()

    found = read_command_targets(node)
    assert found is not None and found.names is None
    assert found.problem is not None and "Command[Literal" in found.problem


def test_unresolvable_command_annotation_is_reported() -> None:
    """A Command annotation that does not resolve is CR401, not 'no way out'."""
    namespace: dict[str, Any] = {}
    exec(
        "from __future__ import annotations\n"
        "def node(state) -> Command[Literal['a']]:\n"
        "    return None\n",
        namespace,
    )
    found = read_command_targets(namespace["node"])
    assert found is not None and found.names is None
    assert found.problem is not None and "Command" in found.problem


def test_graph_in_function_resolves_local_alias() -> None:
    """A graph built inside a function reads aliases from the function's locals."""
    g = in_function.build()
    assert g.check() == []
    spec = g.spec()
    assert spec.routers[0].targets.names == ("revise", END)


def test_graph_in_function_resolves_a_local_state() -> None:
    """A TypedDict state (and update schema) defined inside a function under postponed
    annotations resolves against that function's locals, as its routes do: its keys name
    Annotated, a reducer and a TypedDict imported or defined there."""
    g = in_function.build_with_local_state()
    keys = {k.name: k for k in g.spec().keys}
    assert keys["log"].reducer is operator.add and keys["count"].reducer is None
    assert [k.name for k in g.spec().update_keys or ()] == ["log", "count"]
    assert g.check() == []
    run = g.compile().invoke({"log": [{"text": "given"}], "count": 0})
    assert run.state == {"log": [{"text": "given"}, {"text": "noted"}], "count": 1}


def test_alias_defined_after_use_in_module() -> None:
    """A module-level alias defined after the router is found at check() time."""
    assert draft_loop.g.check() == []
    assert draft_loop.g.spec().routers[0].targets.names == ("revise", END)


def test_local_alias_in_function_without_future_import() -> None:
    """String annotations naming a function-local alias resolve too."""
    from typing import TypedDict

    class State(TypedDict):
        n: int

    Pick = Literal["b"]
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, object]:
        return {}

    @g.router("a")
    def route(state: State) -> "Pick | Literal['__end__']":  # noqa: UP037
        return "b"

    @g.node(then=END)
    def b(state: State) -> dict[str, object]:
        return {}

    assert g.spec().routers[0].targets.names == ("b", END)
    assert g.check() == []


def test_read_literal_form() -> None:
    """nodes= Literals read as names; anything else is None."""
    assert read_literal_form(Literal["a", "b"]) == ("a", "b")
    assert read_literal_form(str) is None
    assert read_literal_form(Literal[1]) is None
