"""Infer the state keys a node writes from the dict literals it returns.

The function's source is parsed with :mod:`ast` (it is never run). Every ``return`` of the
function itself (not of functions nested in it) must be one of:

- ``return`` / ``return None``: writes nothing;
- a dict display with string-constant keys, ``{"score": 1}``;
- a ``dict(score=1)`` call with keyword arguments only;
- ``Command(update=...)`` where ``update`` is one of the above (or absent / ``None``);
- ``a if cond else b`` where both sides are one of the above.

Anything else (a variable, ``{**other}``, a computed key, a generator function, a function
whose source cannot be read) makes the write set unknown (``None``), and the state rules
(CR301, CR302) stay quiet about that node rather than guess. ``writes=`` on ``@g.node``
declares the keys when inference cannot see them.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import textwrap
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = [
    "called_names",
    "function_body",
    "function_node",
    "infer_command_fanout",
    "infer_writes",
    "own_nodes",
    "per_code",
    "state_param",
]

_T = TypeVar("_T")


class _Unknown(Exception):
    """A return value whose keys cannot be read from the source."""


def per_code(read: Callable[[Callable[..., Any]], _T]) -> Callable[[Callable[..., Any]], _T]:
    """Return ``read`` answering once per code object: a function registered as many nodes
    (or the closures of one factory) is parsed once. A callable without code is read each
    time."""
    cache: weakref.WeakKeyDictionary[types.CodeType, _T] = weakref.WeakKeyDictionary()

    @functools.wraps(read)
    def cached(func: Callable[..., Any]) -> _T:
        code = getattr(func, "__code__", None)
        if not isinstance(code, types.CodeType):
            return read(func)
        if code not in cache:
            cache[code] = read(func)
        return cache[code]

    return cached


@per_code
def infer_writes(func: Callable[..., Any]) -> frozenset[str] | None:
    """Return the keys ``func`` may write, or ``None`` when they cannot be known.

    >>> def bump(state):
    ...     if state["n"] > 3:
    ...         return None
    ...     return {"n": state["n"] + 1, "log": ["bumped"]}
    >>> sorted(infer_writes(bump))
    ['log', 'n']
    >>> def opaque(state):
    ...     update = {"n": 1}
    ...     return update
    >>> infer_writes(opaque) is None
    True
    """
    body = function_body(func)
    if body is None:
        return None
    keys: set[str] = set()
    try:
        for node in own_nodes(body):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return None
            if isinstance(node, ast.Return) and node.value is not None:
                keys.update(_returned_keys(node.value))
    except _Unknown:
        return None
    return frozenset(keys)


@per_code
def infer_command_fanout(func: Callable[..., Any]) -> bool:
    """Return whether ``func`` may return a ``Command`` whose ``goto`` names several nodes.

    A ``goto=`` that is a list, tuple, comprehension or ``Send``, or any ``goto=`` that is
    not a plain string / name / attribute, counts as a possible fan-out; so does a function
    whose source cannot be read. The parallel-write rule (CR301) uses it to decide whether
    a ``Command`` node's targets can run together.

    >>> def pick(state):
    ...     return Command(update={"n": 1}, goto="review")
    >>> infer_command_fanout(pick)
    False
    >>> def spread(state):
    ...     return Command(goto=["a", "b"])
    >>> infer_command_fanout(spread)
    True
    """
    body = function_body(func)
    if body is None:
        return True
    for node in own_nodes(body):
        if isinstance(node, ast.Call) and _call_name(node) == "Command":
            for keyword in node.keywords:
                if keyword.arg is None:
                    return True
                if keyword.arg == "goto" and not isinstance(
                    keyword.value, (ast.Constant, ast.Name, ast.Attribute)
                ):
                    return True
    return False


@per_code
def called_names(func: Callable[..., Any]) -> frozenset[str]:
    """Return the names ``func``'s own body calls (``ctx.spend(...)`` is ``spend``).

    >>> def plan(state, ctx):
    ...     ctx.spend(tokens=10)
    >>> sorted(called_names(plan))
    ['spend']
    """
    found = (_call_name(n) for n in own_nodes(function_body(func) or []) if isinstance(n, ast.Call))
    return frozenset(name for name in found if name is not None)


def function_body(func: Callable[..., Any]) -> list[ast.stmt] | None:
    """Return the statements of ``func``'s body (a lambda's expression as a return)."""
    found = function_node(func)
    if found is None:
        return None
    if isinstance(found, ast.Lambda):
        return [ast.copy_location(ast.Return(found.body), found.body)]  # placed: callers sort
    return found.body


_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def function_node(func: Callable[..., Any]) -> _Function | None:
    """Return the ``def`` (or ``lambda``) node of ``func``'s source, or ``None``.

    A lambda's source is read from its whole file (``inspect.getsource`` gives only its
    first lines, which may not parse on their own, e.g. inside a call spread over lines)
    and picked among the lambdas of its line by where its code starts.
    """
    name = getattr(func, "__name__", "")
    if name == "<lambda>":
        return _lambda_node(func)
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def state_param(node: _Function) -> str | None:
    """Return the name of a function's state parameter: its first, after ``self`` or ``cls``
    in a method (``None``: it takes none)."""
    args = [a.arg for a in node.args.posonlyargs + node.args.args]
    if args and args[0] in ("self", "cls") and len(args) > 1:
        args = args[1:]
    return args[0] if args else None


def _lambda_node(func: Callable[..., Any]) -> ast.Lambda | None:
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    lines = linecache.getlines(code.co_filename)
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    line = code.co_firstlineno
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == line]
    if len(found) <= 1:
        return found[0] if found else None
    starts = [
        (start, col)
        for start, _, col, _ in code.co_positions()
        if start is not None and col is not None and (start, col) > (line, 0)
    ]
    if not starts:
        return None
    first = min(starts)
    inside = [
        n
        for n in found
        if (n.lineno, n.col_offset) <= first <= (n.end_lineno or n.lineno, n.end_col_offset or 0)
    ]
    return min(inside, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0), default=None)


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Yield every AST node of ``body`` without entering nested functions or classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _returned_keys(value: ast.expr) -> set[str]:
    """Return the keys a returned expression writes; raise ``_Unknown`` if it cannot tell."""
    if isinstance(value, ast.Constant) and value.value is None:
        return set()
    if isinstance(value, ast.IfExp):
        return _returned_keys(value.body) | _returned_keys(value.orelse)
    if isinstance(value, ast.Call) and _call_name(value) == "Command":
        if value.args or any(k.arg is None for k in value.keywords):
            raise _Unknown
        return set().union(*(_returned_keys(k.value) for k in value.keywords if k.arg == "update"))
    if isinstance(value, ast.Dict):
        keys = [
            k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
        if len(keys) == len(value.keys):  # every key a string constant
            return set(keys)
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        if value.func.id == "dict" and not value.args:
            keywords = [k.arg for k in value.keywords if k.arg is not None]
            if len(keywords) == len(value.keywords):  # no dict(**other)
                return set(keywords)
    raise _Unknown
