"""Find loop counters in a graph's source: a key a node bumps and a router compares with a bound.

The idea: a loop bounded by hand keeps a number in the state (``retries``), a node on the
loop returns it incremented (``{"retries": state["retries"] + 1}``) and the router that
chooses the way out compares it with a bound (``if state["retries"] >= 3: return END``).
Functions are read with :mod:`ast`, never run; what cannot be read is simply not a counter.

The reading is syntactic and deliberately narrow. A state key is read as ``state["k"]``,
``state.get("k", ...)`` or ``state.k`` on the function's first parameter, or through a local
assigned from one of those. An increment is ``<read of k> + <number>`` (either order), a
local holding one, or ``state["k"] += n`` / ``state["k"] = <increment>`` in the body before a
return that hands the key (or the whole state) back. A comparison is any ``<``, ``<=``,
``>``, ``>=``, ``==`` or ``!=`` with a read of ``k`` on one side.

:func:`read_counters` returns the facts as a :class:`~corral.spec.CounterFacts`, which a
reader stores on the spec (``NodeSpec.counters``, ``RouterSpec.counters``); the analyser
puts them together per cycle (CR204) without parsing anything itself.

>>> def bump(state):
...     return {"tries": state.get("tries", 0) + 1}
>>> def route(state):
...     return "__end__" if state["tries"] >= 3 else "bump"
>>> sorted(incremented_keys(bump)), sorted(compared_keys(route))
(['tries'], ['tries'])
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from corral.spec import CounterFacts

__all__ = ["bumped_keys", "compared_keys", "incremented_keys", "read_counters"]

_cache: weakref.WeakKeyDictionary[types.CodeType, CounterFacts] = weakref.WeakKeyDictionary()
"""read_counters's results, per code object."""

_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


@dataclass
class _Function:
    """One parsed function: its state parameter and its own statements."""

    param: str
    body: list[ast.stmt]
    reads: dict[str, str] = field(default_factory=dict)
    """Locals assigned from a read of a state key: local name -> key."""
    increments: dict[str, str] = field(default_factory=dict)
    """Locals assigned an increment of a state key: local name -> key."""


def _parse(func: Callable[..., Any]) -> _Function | None:
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    name = getattr(func, "__name__", "")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            args = node.args.posonlyargs + node.args.args
            if not args:
                return None
            parsed = _Function(args[0].arg, node.body)
            _collect_locals(parsed)
            return parsed
    return None


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Yield the AST nodes of ``body`` without entering nested functions or classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _collect_locals(fn: _Function) -> None:
    for node in _own_nodes(fn.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if (key := _read_key(fn, value)) is not None:
            fn.reads[target.id] = key
        elif (key := _increment_of(fn, value)) is not None:
            fn.increments[target.id] = key


def _read_key(fn: _Function, expr: ast.expr) -> str | None:
    """Return the state key ``expr`` reads, or ``None``."""
    if isinstance(expr, ast.Name):
        return fn.reads.get(expr.id)
    if isinstance(expr, ast.Subscript) and _is_param(fn, expr.value):
        index = expr.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            return index.value
    if isinstance(expr, ast.Attribute) and _is_param(fn, expr.value):
        return expr.attr
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and _is_param(fn, expr.func.value)
        and expr.args
        and isinstance(expr.args[0], ast.Constant)
        and isinstance(expr.args[0].value, str)
    ):
        return expr.args[0].value
    if isinstance(expr, ast.BoolOp):  # state.get("n") or 0
        keys = {_read_key(fn, value) for value in expr.values} - {None}
        return keys.pop() if len(keys) == 1 else None
    return None


def _is_param(fn: _Function, expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == fn.param


def _is_number(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    return isinstance(expr, ast.Name)  # a named step, e.g. STEP


def _increment_of(fn: _Function, expr: ast.expr) -> str | None:
    """Return the key ``expr`` is an increment of (``state["k"] + 1``), or ``None``."""
    if isinstance(expr, ast.Name):
        return fn.increments.get(expr.id)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        for read, step in ((expr.left, expr.right), (expr.right, expr.left)):
            key = _read_key(fn, read)
            if key is not None and _is_number(step):
                return key
    return None


def _bumps(fn: _Function) -> set[str]:
    """Return the keys the body increments in place (``state["k"] += 1``)."""
    keys: set[str] = set()
    for node in _own_nodes(fn.body):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            key = _read_key(fn, node.target) if not isinstance(node.target, ast.Name) else None
            if key is not None and _is_number(node.value):
                keys.add(key)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                continue
            key = _read_key(fn, target)
            if key is not None and _increment_of(fn, node.value) == key:
                keys.add(key)
    return keys


def _returned_updates(fn: _Function) -> Iterator[ast.expr]:
    """Yield each returned update: a dict, ``Command(update=...)``'s update, or the state."""
    for node in _own_nodes(fn.body):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = [node.value]
        while values:
            value = values.pop()
            if isinstance(value, ast.IfExp):
                values += [value.body, value.orelse]
            elif isinstance(value, ast.Call):
                values += [k.value for k in value.keywords if k.arg == "update"]
                if isinstance(value.func, ast.Name) and value.func.id == "dict":
                    keys: list[ast.expr | None] = [ast.Constant(k.arg) for k in value.keywords]
                    yield ast.Dict(keys, [k.value for k in value.keywords])
            else:
                yield value


def incremented_keys(func: Callable[..., Any]) -> frozenset[str]:
    """Return the state keys ``func`` returns incremented (empty when its source is unreadable)."""
    fn = _parse(func)
    return frozenset() if fn is None else _incremented(fn)


def _incremented(fn: _Function) -> frozenset[str]:
    bumped = _bumps(fn)
    keys: set[str] = set()
    for update in _returned_updates(fn):
        if _is_param(fn, update):
            keys |= bumped  # the whole state handed back, bumps included
            continue
        if not isinstance(update, ast.Dict):
            continue
        for key_node, value in zip(update.keys, update.values, strict=True):
            if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
                continue
            key = key_node.value
            if _increment_of(fn, value) == key or (key in bumped and _read_key(fn, value) == key):
                keys.add(key)
    return frozenset(keys)


def compared_keys(func: Callable[..., Any]) -> frozenset[str]:
    """Return the state keys ``func`` compares with something (a bound)."""
    fn = _parse(func)
    return frozenset() if fn is None else _compared(fn)


def _compared(fn: _Function) -> frozenset[str]:
    keys: set[str] = set()
    for node in _own_nodes(fn.body):
        if isinstance(node, ast.Compare) and all(isinstance(op, _COMPARISONS) for op in node.ops):
            for side in (node.left, *node.comparators):
                key = _read_key(fn, side)
                if key is not None:
                    keys.add(key)
    return frozenset(keys)


def bumped_keys(func: Callable[..., Any]) -> frozenset[str]:
    """Return the state keys ``func`` increments in place (``state["k"] += 1``)."""
    fn = _parse(func)
    return frozenset(_bumps(fn)) if fn is not None else frozenset()


def read_counters(func: Callable[..., Any]) -> CounterFacts:
    """Return what ``func``'s source says about loop counters (empty when it is unreadable).

    The source is parsed once per code object, so a function registered as many nodes (or
    the closures of one factory) is read once.
    """
    code = getattr(func, "__code__", None)
    if isinstance(code, types.CodeType) and code in _cache:
        return _cache[code]
    fn = _parse(func)
    if fn is None:
        facts = CounterFacts()
    else:
        facts = CounterFacts(_incremented(fn), _compared(fn), frozenset(_bumps(fn)))
    if isinstance(code, types.CodeType):
        _cache[code] = facts
    return facts
