"""What a LangGraph node's or router's source says that LangGraph itself does not record.

LangGraph keeps no list of a router's ``Send`` targets, of the ``Command`` a node builds,
or of the graphs a node runs by hand; this module reads them from the function's source
with :mod:`ast` (or from its code object), never running it. Anything it cannot read is
reported as unknown, never guessed. (What a router returns is read by
:mod:`corral.langgraph._routes`.)
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from corral import _registry
from corral.langgraph._routes import name_of
from corral.spec import Location
from corral.writes import function_body, function_node

__all__ = [
    "SendTargets",
    "def_location",
    "graphs_read",
    "is_compiled",
    "is_builder",
    "returns_command",
    "send_targets",
]


def _type_names(obj: object) -> set[str]:
    return {cls.__name__ for cls in type(obj).__mro__}


def is_compiled(obj: object) -> bool:
    """Return whether ``obj`` is a compiled LangGraph graph (a ``Pregel`` with a builder)."""
    return "Pregel" in _type_names(obj) and hasattr(obj, "builder")


def is_builder(obj: object) -> bool:
    """Return whether ``obj`` is a LangGraph ``StateGraph`` (read by class and attribute names)."""
    return (
        "StateGraph" in _type_names(obj)
        and hasattr(obj, "branches")
        and hasattr(obj, "nodes")
        and not isinstance(obj, type)
    )


def def_location(func: Callable[..., Any]) -> Location | None:
    """Return where ``func``'s ``def`` line is, or ``None`` when it has no source file."""
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    if code.co_name == "<lambda>":  # its own line, not the next def's
        node = function_node(func)
        return Location(code.co_filename, code.co_firstlineno, node.col_offset + 1 if node else 1)
    return _registry.def_location(func)


@dataclass(frozen=True)
class SendTargets:
    """The node names of the ``Send(...)`` calls in a function."""

    names: tuple[str, ...] = ()
    computed: bool = False
    """True when some ``Send`` names its node with something other than a string literal."""


def send_targets(func: Callable[..., Any]) -> SendTargets:
    """Return the targets of the ``Send("node", ...)`` calls in ``func``'s source.

    >>> def fan(state):
    ...     return [Send("grade", {"doc": d}) for d in state["docs"]]
    >>> send_targets(fan)
    SendTargets(names=('grade',), computed=False)
    """
    body = function_body(func)
    if body is None:
        return SendTargets()
    names: list[str] = []
    computed = False
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if not (isinstance(node, ast.Call) and name_of(node.func) == "Send"):
            continue
        target = node.args[0] if node.args else None
        for keyword in node.keywords:
            if keyword.arg == "node":
                target = keyword.value
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            if target.value not in names:
                names.append(target.value)
        else:
            computed = True
    return SendTargets(tuple(names), computed)


def returns_command(func: Callable[..., Any]) -> bool:
    """Return whether ``func`` builds a ``Command`` (and so may route with ``goto``)."""
    raw = getattr(func, "__annotations__", {}).get("return")
    if raw is not None and "Command" in str(raw):
        return True
    body = function_body(func)
    if body is None:
        return False
    calls = (n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call))
    return any(name_of(n.func) == "Command" for n in calls)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def graphs_read(func: Callable[..., Any]) -> list[tuple[str, Any]]:
    """Return the compiled LangGraph graphs ``func``'s code reads by name (globals or closure).

    This finds graphs run by hand inside a node (``sub.invoke(...)``, ``await
    asyncio.gather(sub.ainvoke(...))``), including from nested functions and comprehensions.
    """
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        return []
    scope: dict[str, Any] = dict(getattr(func, "__globals__", {}))
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()
    names = [*code.co_freevars, *_code_names(code)]
    for name in names:
        value = scope.get(name)
        if value is not None and id(value) not in seen and is_compiled(value):
            seen.add(id(value))
            found.append((name, value))
    return found
