"""Read what a LangGraph router (or a ``Command`` node) can return, from its source.

LangGraph records a router's targets only when it has a ``path_map`` or a ``Literal``
return annotation; otherwise the returned string *is* the node name. So the body is read
with :mod:`ast`, never run. A returned value is known when it is a string constant, a name
the function's globals bind to a string (``END``, a module-level constant, a ``str``
enum member), an attribute chain that does (``Nodes.RESEARCH``), a local every assignment
of which is one of those, a local or state key typed with a ``Literal``, a list or tuple of
those, or ``a if cond else b`` over them. Any other returned value makes the whole set
unknown (``None``): the rules then say so (CR401) rather than guess.

A router whose body can end without returning a value hands LangGraph ``None`` (``KeyError:
None`` with a ``path_map``, ``ValueError`` without); :func:`falls_off` finds such a path
syntactically (an ``if`` without ``else`` at the end, a ``for`` loop at the end, a bare
``return``). ``while True`` without ``break``, ``raise`` and ``assert False`` close a path.
"""

from __future__ import annotations

import ast
import enum
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from corral.targets import read_literal_form
from corral.writes import function_node, own_nodes, state_param

__all__ = ["Returns", "command_gotos", "falls_off", "name_of", "read_returns"]

_EXITS = frozenset({"exit", "_exit", "quit", "abort"})


@dataclass(frozen=True)
class Returns:
    """What a router's returns produce."""

    values: tuple[str, ...] | None
    """The strings it can return, in source order; ``None`` when some return is unreadable."""
    none: bool = False
    """True when some path returns ``None`` (a bare ``return``, or falling off the end)."""


class _Unreadable(Exception):
    """A returned expression whose value cannot be read."""


@dataclass
class _Scope:
    """Where names in a body are looked up."""

    func: Callable[..., Any]
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    param: str | None
    assigned: dict[str, list[ast.expr]]
    typed: dict[str, Any]

    def globals(self) -> dict[str, Any]:
        target = getattr(self.func, "__func__", self.func)
        return dict(getattr(target, "__globals__", {}))


def _scope(func: Callable[..., Any]) -> _Scope | None:
    node = function_node(func)
    if node is None:
        return None
    assigned: dict[str, list[ast.expr]] = {}
    typed: dict[str, Any] = {}
    scope = _Scope(func, node, state_param(node), assigned, typed)
    body = node.body if isinstance(node.body, list) else []
    for stmt in own_nodes(body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            typed[stmt.target.id] = stmt.annotation
            if stmt.value is not None:
                assigned.setdefault(stmt.target.id, []).append(stmt.value)
        elif isinstance(stmt, (ast.AugAssign, ast.For, ast.With, ast.NamedExpr)):
            for name in _bound_names(stmt):
                assigned.setdefault(name, []).append(ast.Name("<unreadable>"))
    return scope


def _bound_names(stmt: ast.AST) -> Iterator[str]:
    targets: list[ast.AST] = []
    if isinstance(stmt, (ast.AugAssign, ast.For, ast.NamedExpr)):
        targets.append(stmt.target)
    elif isinstance(stmt, ast.With):
        targets += [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    for target in targets:
        yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _literal_of(annotation: Any, scope: _Scope) -> tuple[str, ...] | None:
    """Return the strings of a ``Literal`` annotation (an AST node or a type), else ``None``."""
    if isinstance(annotation, ast.Subscript) and name_of(annotation.value) == "Literal":
        elements = annotation.slice
        items = elements.elts if isinstance(elements, ast.Tuple) else [elements]
        try:
            values = [v for e in items for v in _resolve(scope, e)]
        except _Unreadable:
            return None
        return tuple(v for v in values if v is not None)
    if isinstance(annotation, ast.Name):
        annotation = scope.globals().get(annotation.id)
    if isinstance(annotation, ast.AST):
        return None
    try:
        names = read_literal_form(annotation)
    except Exception:
        return None
    return names if names is not None and all(isinstance(n, str) for n in names) else None


def _state_key(scope: _Scope, expr: ast.expr) -> str | None:
    param = scope.param
    if param is None:
        return None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
        if expr.value.id == param and isinstance(expr.slice, ast.Constant):
            return expr.slice.value if isinstance(expr.slice.value, str) else None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return expr.attr if expr.value.id == param else None
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and isinstance(expr.func.value, ast.Name)
        and expr.func.value.id == param
        and expr.args
        and isinstance(expr.args[0], ast.Constant)
    ):
        return expr.args[0].value if isinstance(expr.args[0].value, str) else None
    return None


def _state_literal(scope: _Scope, key: str) -> tuple[str, ...] | None:
    """Return the ``Literal`` strings the router's state schema types ``key`` with."""
    try:
        hints = typing.get_type_hints(getattr(scope.func, "__func__", scope.func))
        schema = hints.get(scope.param or "")
        fields = typing.get_type_hints(schema) if schema is not None else {}
    except Exception:
        return None
    return _literal_of(fields[key], scope) if key in fields else None


def _text(value: object) -> str | None:
    if isinstance(value, enum.Enum):
        value = value.value
    return str(value) if isinstance(value, str) else None


def _resolve(scope: _Scope, expr: ast.expr, depth: int = 0) -> list[str | None]:
    """Return the values ``expr`` can have (``None`` for ``None``); raise if unreadable."""
    if depth > 8:
        raise _Unreadable
    if isinstance(expr, ast.Constant):
        if expr.value is None:
            return [None]
        if isinstance(expr.value, str):
            return [expr.value]
        raise _Unreadable
    if isinstance(expr, ast.IfExp):
        return _resolve(scope, expr.body, depth + 1) + _resolve(scope, expr.orelse, depth + 1)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [v for e in expr.elts for v in _resolve(scope, e, depth + 1)]
    if isinstance(expr, ast.Name):
        return _resolve_name(scope, expr.id, depth)
    if isinstance(expr, ast.Attribute):
        found = _attribute(scope, expr)
        if found is not None:
            return [found]
    key = _state_key(scope, expr)
    if key is not None:
        names = _state_literal(scope, key)
        if names is not None:
            return list(names)
    raise _Unreadable


def _resolve_name(scope: _Scope, name: str, depth: int) -> list[str | None]:
    if name in scope.typed:
        names = _literal_of(scope.typed[name], scope)
        if names is not None:
            return list(names)
    if name in scope.assigned:
        return [v for e in scope.assigned[name] for v in _resolve(scope, e, depth + 1)]
    if name == scope.param:
        raise _Unreadable
    found = _text(scope.globals().get(name, ...))
    if found is None:
        raise _Unreadable
    return [found]


def _attribute(scope: _Scope, expr: ast.Attribute) -> str | None:
    chain: list[str] = []
    node: ast.expr = expr
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id in (scope.param, "self", "cls"):
        return None
    value: object = scope.globals().get(node.id, ...)
    for attr in chain:
        value = getattr(value, attr, ...)
    return _text(value)


def _returns(scope: _Scope) -> Iterator[ast.expr | None]:
    node = scope.node
    if isinstance(node, ast.Lambda):
        yield node.body
        return
    for stmt in own_nodes(node.body):
        if isinstance(stmt, ast.Return):
            yield stmt.value


def read_returns(func: Callable[..., Any]) -> Returns:
    """Return the strings ``func`` can return and whether it can return ``None``.

    >>> END = "__end__"
    >>> def route(state):
    ...     if state["done"]:
    ...         return END
    ...     elif state["calls"]:
    ...         return "tools"
    >>> read_returns(route)
    Returns(values=('__end__', 'tools'), none=True)
    """
    scope = _scope(func)
    if scope is None:
        return Returns(None)
    found: list[str] = []
    none = not isinstance(scope.node, ast.Lambda) and falls_off(scope.node.body)
    try:
        for value in _returns(scope):
            for text in [None] if value is None else _resolve(scope, value):
                if text is None:
                    none = True
                elif text not in found:
                    found.append(text)
    except _Unreadable:
        return Returns(None, none)
    return Returns(tuple(found) if found else None, none)


def command_gotos(func: Callable[..., Any]) -> tuple[str, ...] | None:
    """Return every ``goto`` of the ``Command(...)`` calls in ``func``, or ``None`` when some
    ``goto`` is unreadable or no call names one."""
    scope = _scope(func)
    if scope is None or isinstance(scope.node, ast.Lambda):
        return None
    found: list[str] = []
    for node in own_nodes(scope.node.body):
        if not (isinstance(node, ast.Call) and name_of(node.func) == "Command"):
            continue
        for keyword in node.keywords:
            if keyword.arg is None:
                return None
            if keyword.arg != "goto":
                continue
            try:
                values = _resolve(scope, keyword.value)
            except _Unreadable:
                return None
            found += [v for v in values if v is not None and v not in found]
    return tuple(found) or None


def name_of(node: ast.expr) -> str | None:
    """Return the name an expression ends in: ``f`` for ``f``, ``Send`` for ``types.Send``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def falls_off(body: list[ast.stmt]) -> bool:
    """Return whether control can reach the end of ``body`` (then the function returns None).

    >>> import ast
    >>> tree = ast.parse("if a:\\n    return 'x'\\nelif b:\\n    return 'y'\\n")
    >>> falls_off(tree.body)
    True
    """
    return all(_passes(stmt) for stmt in body)


def _passes(stmt: ast.stmt) -> bool:
    """Return whether control can pass beyond ``stmt``."""
    if isinstance(stmt, (ast.Return, ast.Raise)):
        return False
    if isinstance(stmt, ast.If):
        return falls_off(stmt.body) or falls_off(stmt.orelse)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return falls_off(stmt.body)
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        if not falls_off(stmt.finalbody):
            return False
        handled = any(falls_off(h.body) for h in stmt.handlers)
        return falls_off(stmt.body + stmt.orelse) or handled
    if isinstance(stmt, ast.While):
        forever = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
        return not forever or _breaks(stmt.body)
    if isinstance(stmt, ast.Match):
        total = any(
            isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None and c.guard is None
            for c in stmt.cases
        )
        return not total or any(falls_off(c.body) for c in stmt.cases)
    if isinstance(stmt, ast.Assert):
        return not (isinstance(stmt.test, ast.Constant) and not stmt.test.value)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return name_of(stmt.value.func) not in _EXITS
    return True


def _breaks(body: list[ast.stmt]) -> bool:
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            return True
        if not isinstance(
            node, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            stack.extend(ast.iter_child_nodes(node))
    return False
