"""Find loop bounds in a graph's source: a key a node advances and a router tests.

The idea: a loop bounded by hand keeps something in the state that each pass changes one
way (a number ``retries`` a node returns incremented; a list it appends to or consumes; a
plan whose steps it fills) and the router that chooses the way out tests it
(``if state["retries"] >= 3: return END``, ``if len(state["notes"]) > 5``, ``if not
state["queue"]``). Functions are read with :mod:`ast`, never run; what cannot be read is
simply not a bound.

The reading is syntactic and deliberately narrow. A *read* of state key ``k`` is
``state["k"]``, ``state.get("k", ...)`` or ``state.k`` on the function's state parameter
(the first one, after ``self`` for a method), a string-keyed lookup into one of those
(``state["debate"]["count"]``: a count kept inside a dict-valued key is a read of
``debate``), or a local assigned one of those. An *increment* of ``k`` is ``<read of k> +
<number>`` (either order), a local holding one, or ``<read of k> += n`` / ``<read of k> =
<increment>`` before a return that hands ``k`` (or the whole state) back. A returned update
is a dict display, ``dict(...)``, ``Command(update=...)``, or a local holding a dict built
before the return (``update = {...}; update["k"] = ...; return update``); the value under
``k`` counts wherever the increment sits inside it, through locals too. A value under ``k``
built from a read of ``k`` that is not the read itself (``state["plan"][1:]``,
``state["notes"] + [note]``, a list a node appended to or filled) *advances* ``k``.

A comparison is any ``<``, ``<=``, ``>``, ``>=``, ``==`` or ``!=`` with a read of ``k``
(or ``len`` of one) on one side; a router *inspects* ``k`` when it tests a read of ``k``
for truth (``if not state["queue"]``) or iterates over one (``any(...)`` over the plan's
steps).

:func:`read_counters` returns the facts as a :class:`~corral.spec.CounterFacts`, which a
reader stores on the spec (``NodeSpec.counters``, ``RouterSpec.counters``); the analyser
puts them together per cycle (CR204) without parsing anything itself.

>>> def bump(state):
...     return {"tries": state.get("tries", 0) + 1}
>>> def route(state):
...     return "__end__" if state["tries"] >= 3 else "bump"
>>> sorted(read_counters(bump).increments), sorted(read_counters(route).compares)
(['tries'], ['tries'])
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from corral.spec import CounterFacts
from corral.writes import function_node, own_nodes, per_code, state_param

__all__ = ["read_counters"]

_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "popleft", "remove", "update"})
_ITERATING = frozenset({"any", "all", "next", "filter", "sum"})
_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp)
_DEPTH = 6
"""How many locals deep a returned value is followed (a local built from a local...)."""


@dataclass
class _Function:
    """One parsed function: its state parameter and its own statements."""

    param: str
    body: list[ast.stmt]
    reads: dict[str, str] = field(default_factory=dict)
    """Locals assigned from a read of a state key: local name -> key."""
    values: dict[str, list[ast.expr]] = field(default_factory=dict)
    """Every expression assigned to a local (``d["k"] = v`` adds ``{"k": v}`` to ``d``)."""


def _parse(func: Callable[..., Any]) -> _Function | None:
    found = function_node(func)
    if found is None or (param := state_param(found)) is None:
        return None
    body: list[ast.stmt] = [ast.Return(found.body)] if isinstance(found, ast.Lambda) else found.body
    parsed = _Function(param, body)
    _collect_locals(parsed)
    return parsed


def _collect_locals(fn: _Function) -> None:
    for node in own_nodes(fn.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name = node.target.id  # n += 1 on a local: n now holds n + 1
            fn.values.setdefault(name, []).append(ast.BinOp(ast.Name(name), node.op, node.value))
            continue
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            if (key := _read_key(fn, node.iter)) is not None:
                fn.reads[node.target.id] = key  # a step of the plan is a read of the plan
            continue
        else:
            continue
        if isinstance(target, ast.Name):
            fn.values.setdefault(target.id, []).append(value)
            if (key := _read_key(fn, value)) is not None:
                fn.reads[target.id] = key
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            entry = ast.Dict([ast.Constant(target.slice.value)], [value])
            fn.values.setdefault(target.value.id, []).append(entry)


def _read_key(fn: _Function, expr: ast.expr) -> str | None:
    """Return the state key ``expr`` reads (at any string-keyed depth), or ``None``."""
    if isinstance(expr, ast.Name):
        return fn.reads.get(expr.id)
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            return index.value if _is_param(fn, expr.value) else _read_key(fn, expr.value)
        return None
    if isinstance(expr, ast.Attribute):
        return expr.attr if _is_param(fn, expr.value) else _read_key(fn, expr.value)
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and expr.args
        and isinstance(expr.args[0], ast.Constant)
        and isinstance(expr.args[0].value, str)
    ):
        key = expr.args[0].value
        return key if _is_param(fn, expr.func.value) else _read_key(fn, expr.func.value)
    if isinstance(expr, (ast.BoolOp, ast.IfExp)):  # state.get("n") or 0, x if x else 0
        values = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
        keys = {_read_key(fn, value) for value in values} - {None}
        return keys.pop() if len(keys) == 1 else None
    return None


def _is_param(fn: _Function, expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == fn.param


def _is_number(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    return isinstance(expr, (ast.Name, ast.Attribute))  # a named step, e.g. STEP


def _increment_of(fn: _Function, expr: ast.expr) -> str | None:
    """Return the key ``expr`` is an increment of (``state["k"] + 1``), or ``None``."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        for read, step in ((expr.left, expr.right), (expr.right, expr.left)):
            key = _read_key(fn, read)
            if key is not None and _is_number(step):
                return key
    return None


def _inner(fn: _Function, expr: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
    """Yield every expression inside ``expr``, following locals to what was assigned them."""
    for node in ast.walk(expr):
        if not isinstance(node, ast.expr):
            continue
        yield node
        if isinstance(node, ast.Name) and depth < _DEPTH and node.id != fn.param:
            for value in fn.values.get(node.id, ()):
                yield from _inner(fn, value, depth + 1)


def _changed(fn: _Function) -> tuple[set[str], set[str]]:
    """Return the keys the body increments in place, and the keys it mutates otherwise."""
    bumped: set[str] = set()
    mutated: set[str] = set()
    for node in own_nodes(fn.body):
        if isinstance(node, ast.AugAssign):
            key = _read_key(fn, node.target) if not isinstance(node.target, ast.Name) else None
            if key is not None:
                bumped_now = isinstance(node.op, ast.Add) and _is_number(node.value)
                (bumped if bumped_now else mutated).add(key)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                continue
            key = _read_key(fn, target)
            if key is None and isinstance(target, ast.Subscript):
                key = _read_key(fn, target.value)  # plan[i] = ..., a step filled
            if key is not None:
                incremented = _increment_of(fn, node.value) == key
                (bumped if incremented else mutated).add(key)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            key = _read_key(fn, node.func.value)
            if key is not None:
                mutated.add(key)
    return bumped, mutated


def _returned_updates(fn: _Function) -> Iterator[ast.expr]:
    """Yield each returned update: a dict, ``Command(update=...)``'s update, or the state."""
    for node in own_nodes(fn.body):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        yield from _updates(fn, node.value, 0)


def _updates(fn: _Function, value: ast.expr, depth: int) -> Iterator[ast.expr]:
    if isinstance(value, ast.IfExp):
        yield from _updates(fn, value.body, depth)
        yield from _updates(fn, value.orelse, depth)
    elif isinstance(value, ast.Call):
        for keyword in value.keywords:
            if keyword.arg == "update":
                yield from _updates(fn, keyword.value, depth)
        constructor = isinstance(value.func, ast.Name) and value.func.id[:1].isupper()
        if isinstance(value.func, ast.Name) and (value.func.id == "dict" or constructor):
            # dict(n=...), or the state's own class: GraphState(n=state.n + 1)
            keys: list[ast.expr | None] = [ast.Constant(k.arg) for k in value.keywords]
            yield ast.Dict(keys, [k.value for k in value.keywords])
    elif isinstance(value, ast.Name) and value.id != fn.param and depth < _DEPTH:
        for assigned in fn.values.get(value.id, ()):
            yield from _updates(fn, assigned, depth + 1)
    else:
        yield value


def _progress(fn: _Function) -> tuple[frozenset[str], frozenset[str]]:
    """Return the keys the function returns incremented, and those it returns advanced."""
    bumped, mutated = _changed(fn)
    increments: set[str] = set()
    advances: set[str] = set()
    for update in _returned_updates(fn):
        if _is_param(fn, update):
            increments |= bumped  # the whole state handed back, bumps included
            advances |= mutated
            continue
        if not isinstance(update, ast.Dict):
            continue
        for key_node, value in zip(update.keys, update.values, strict=True):
            if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
                continue
            key = key_node.value
            inner = list(_inner(fn, value))
            reads = any(_read_key(fn, e) == key for e in inner)
            if any(_increment_of(fn, e) == key for e in inner) or (key in bumped and reads):
                increments.add(key)
            elif reads and (key in mutated or _read_key(fn, value) != key):
                advances.add(key)  # built from its old value, not {"k": state["k"]} as it was
    return frozenset(increments), frozenset(advances - increments)


def _measured(fn: _Function, side: ast.expr) -> str | None:
    """Return the key ``side`` reads, or measures with ``len(...)``."""
    if (
        isinstance(side, ast.Call)
        and isinstance(side.func, ast.Name)
        and side.func.id == "len"
        and len(side.args) == 1
    ):
        return _read_key(fn, side.args[0])
    return _read_key(fn, side)


def _tests(fn: _Function) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Return the keys the function compares, those it tests for truth, and those whose
    items it walks (a plan's steps)."""
    compares: set[str] = set()
    inspects: set[str] = set()
    iterates: set[str] = set()
    for node in own_nodes(fn.body):
        if isinstance(node, ast.Compare) and all(isinstance(op, _COMPARISONS) for op in node.ops):
            for side in (node.left, *node.comparators):
                key = _measured(fn, side)
                if key is not None:
                    compares.add(key)
        tested: list[ast.expr] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tested.append(node.test)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tested.append(node.operand)
        elif isinstance(node, ast.BoolOp):
            tested += node.values
        elif isinstance(node, ast.For) and _searches(node.body):
            iterates.update(k for k in [_read_key(fn, node.iter)] if k is not None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _ITERATING:
                tested += node.args
                walked = [
                    g.iter
                    for a in node.args
                    if isinstance(a, _COMPREHENSIONS)
                    for g in a.generators
                ]
                iterates.update(k for e in walked if (k := _read_key(fn, e)) is not None)
        inspects.update(k for e in tested if (k := _measured(fn, e)) is not None)
    return frozenset(compares), frozenset(inspects - compares), frozenset(iterates)


def _searches(body: list[ast.stmt]) -> bool:
    """Return whether a ``for`` body stops early (``break`` or ``return``): a search."""
    return any(isinstance(n, (ast.Break, ast.Return)) for n in own_nodes(body))


@per_code
def read_counters(func: Callable[..., Any]) -> CounterFacts:
    """Return what ``func``'s source says about loop bounds (empty when it is unreadable)."""
    fn = _parse(func)
    if fn is None:
        return CounterFacts()
    increments, advances = _progress(fn)
    compares, inspects, iterates = _tests(fn)
    bumps = frozenset(_changed(fn)[0])
    return CounterFacts(increments, compares, bumps, advances, inspects | iterates, iterates)
