"""Reading the literal arguments of graph declarations from mypy's expression trees.

A decorator or ``Graph(...)`` argument must be a literal (a string, number, tuple, ``END``,
a ``Final`` constant, ``Guard(...)``); anything computed at run time raises
:class:`StaticError`, which the loader reports as a load error naming the file and line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from corral.spec import END, START, Guard

if TYPE_CHECKING:
    from mypy import nodes as mypy_nodes

GRAPH = "corral.dsl.Graph"
"""The full name of the ``Graph`` class, as mypy names it."""
_GUARD = "corral.spec.Guard"
_CONSTANTS = {"corral.spec.END": END, "corral.spec.START": START}


class StaticError(Exception):
    """A graph declaration the static reader cannot read without running code."""


def callee_name(call: mypy_nodes.CallExpr) -> str | None:
    from mypy import nodes

    return call.callee.fullname if isinstance(call.callee, nodes.RefExpr) else None


def call_arguments(
    call: mypy_nodes.CallExpr, positional: Sequence[str]
) -> dict[str, mypy_nodes.Expression]:
    from mypy import nodes

    out: dict[str, mypy_nodes.Expression] = {}
    index = 0
    for arg, kind, name in zip(call.args, call.arg_kinds, call.arg_names, strict=True):
        if kind == nodes.ARG_POS:
            if index < len(positional):
                out[positional[index]] = arg
            index += 1
        elif kind == nodes.ARG_NAMED and name is not None:
            out[name] = arg
        else:
            msg = f"line {call.line}: *args/**kwargs in a graph declaration cannot be read"
            raise StaticError(msg)
    return out


def output_keys(expr: mypy_nodes.Expression) -> frozenset[str] | None:
    """Return the keys of ``lambda final: {"k": ...}``, as inference reads them at run time."""
    from mypy import nodes

    if not isinstance(expr, nodes.LambdaExpr):
        return None
    body = expr.expr()
    if not isinstance(body, nodes.DictExpr):
        return None
    keys = [k.value for k, _ in body.items if isinstance(k, nodes.StrExpr)]
    return frozenset(keys) if len(keys) == len(body.items) else None


def is_none(expr: mypy_nodes.Expression) -> bool:
    from mypy import nodes

    return isinstance(expr, nodes.NameExpr) and expr.fullname == "builtins.None"


def constant(expr: mypy_nodes.Expression) -> Any:
    """Return the value of a literal expression (or a ``Final`` constant such as ``END``)."""
    from mypy import nodes

    if isinstance(expr, (nodes.StrExpr, nodes.IntExpr)):
        return expr.value
    if isinstance(expr, (nodes.TupleExpr, nodes.ListExpr)):
        return tuple(constant(item) for item in expr.items)
    if isinstance(expr, nodes.UnaryExpr) and expr.op == "-":
        return -constant(expr.expr)
    if isinstance(expr, nodes.RefExpr):
        if expr.fullname in _CONSTANTS:
            return _CONSTANTS[expr.fullname]
        if expr.fullname == "builtins.None":
            return None
        if expr.fullname in ("builtins.True", "builtins.False"):
            return expr.fullname == "builtins.True"
        if isinstance(expr.node, nodes.Var) and expr.node.final_value is not None:
            return expr.node.final_value
    msg = (
        f"line {expr.line}: this argument is computed at run time; corral lint --static "
        "reads literal arguments only (lint without --static to import the module)"
    )
    raise StaticError(msg)


def read_guards(expr: mypy_nodes.Expression | None) -> tuple[Guard, ...]:
    from mypy import nodes

    if expr is None:
        return ()
    if not isinstance(expr, (nodes.ListExpr, nodes.TupleExpr)):
        constant(expr)  # raises: not a literal
        return ()
    guards = []
    for item in expr.items:
        if not (isinstance(item, nodes.CallExpr) and callee_name(item) == _GUARD):
            msg = f"line {item.line}: guards= must list Guard(...) calls"
            raise StaticError(msg)
        args = call_arguments(item, ("target",))
        otherwise = constant(args["otherwise"]) if "otherwise" in args else None
        target, limit = constant(args["target"]), constant(args["max"])
        guards.append(Guard(target, max=limit, otherwise=otherwise))
    return tuple(guards)
