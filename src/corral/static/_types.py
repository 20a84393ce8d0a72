"""Reading graph facts from the types mypy inferred: state keys, node names, route targets.

Route targets come from a function's return type as mypy resolved it, so aliases and
``End`` read the same as at run time; the type is turned into its run-time form and read by
:mod:`corral.targets`, so a route reads (and is refused) in the same words either way.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Literal

from corral.control import Command, Send
from corral.spec import KeySpec, TargetSet
from corral.static._expressions import GRAPH, StaticError
from corral.targets import command_targets, read_literal_form, route_targets

if TYPE_CHECKING:
    from mypy import nodes as mypy_nodes
    from mypy import types as mypy_types

_SEQUENCES = ("builtins.list", "builtins.tuple", "typing.Sequence", "collections.abc.Sequence")
_GENERICS: dict[str, Any] = {"corral.control.Send": Send, "corral.control.Command": Command}
_GENERICS.update(dict.fromkeys(_SEQUENCES, list))
"""The generic types a route type is built of (any sequence reads as a list: a fan-out)."""


def graph_type_args(
    instance: mypy_types.Type | None,
) -> tuple[mypy_types.Type | None, mypy_types.Type | None, mypy_types.Type | None]:
    from mypy.types import Instance, get_proper_type

    proper = get_proper_type(instance) if instance is not None else None
    if isinstance(proper, Instance) and proper.type.fullname == GRAPH and len(proper.args) == 3:
        return proper.args[0], proper.args[1], proper.args[2]
    return None, None, None


def state_keys(expr: mypy_nodes.Expression, typ: mypy_types.Type) -> tuple[KeySpec, ...]:
    """Read a TypedDict's keys; a key declared ``Annotated[T, reducer]`` has a reducer."""
    from mypy import nodes
    from mypy.types import TypedDictType, get_proper_type

    proper = get_proper_type(typ)
    if not isinstance(proper, TypedDictType):
        msg = f"line {expr.line}: the state schema is not a TypedDict mypy can read"
        raise StaticError(msg)
    reducers = set()
    info = expr.node if isinstance(expr, nodes.RefExpr) else None
    if isinstance(info, nodes.TypeInfo):
        for base in info.mro:
            for stmt in base.defn.defs.body:
                if (
                    isinstance(stmt, nodes.AssignmentStmt)
                    and isinstance(stmt.lvalues[0], nodes.NameExpr)
                    and _is_annotated(stmt.unanalyzed_type)
                ):
                    reducers.add(stmt.lvalues[0].name)
    return tuple(
        KeySpec(
            name,
            str(value).replace("builtins.", ""),
            _static_reducer if name in reducers else None,
        )
        for name, value in proper.items.items()
    )


def _static_reducer(current: Any, update: Any) -> Any:
    """Stand in for a reducer the static reader saw declared but cannot call."""
    msg = "a statically read graph cannot run"
    raise TypeError(msg)


def _is_annotated(unanalyzed: mypy_types.Type | None) -> bool:
    from mypy.types import UnboundType

    return (
        isinstance(unanalyzed, UnboundType)
        and unanalyzed.name.rpartition(".")[2] == "Annotated"
        and len(unanalyzed.args) >= 2
    )


def _form(typ: mypy_types.Type) -> Any:
    """Return the run-time form of a route type as mypy inferred it (unions of ``Literal``,
    ``Send[...]``, ``list[...]`` and ``Command[...]``), for :mod:`corral.targets` to read as
    it reads an annotation; any other type becomes a class named as mypy names it."""
    from mypy.types import Instance, LiteralType, NoneType, UnionType, get_proper_type

    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return typing.Union[tuple(_form(item) for item in proper.items)]  # noqa: UP007
    if isinstance(proper, LiteralType):
        return Literal[proper.value]
    if isinstance(proper, NoneType):
        return None
    if isinstance(proper, Instance) and proper.args and proper.type.fullname in _GENERICS:
        return _GENERICS[proper.type.fullname][_form(proper.args[0])]
    return type(str(proper), (), {})


def literal_names(typ: mypy_types.Type) -> tuple[str, ...] | None:
    return read_literal_form(_form(typ))


def return_type(func: mypy_nodes.FuncDef) -> mypy_types.Type | None:
    from mypy.types import CallableType, Instance, get_proper_type

    if func.unanalyzed_type is None or not isinstance(func.type, CallableType):
        return None
    ret = func.type.ret_type
    proper = get_proper_type(ret)
    if func.is_coroutine and isinstance(proper, Instance) and proper.args:
        return proper.args[-1]  # Coroutine[Any, Any, T]
    return ret


def router_targets(func: mypy_nodes.FuncDef) -> TargetSet:
    ret = return_type(func)
    if ret is None:
        return TargetSet(None, problem="it has no return annotation")
    return route_targets(_form(ret))


def node_command_targets(func: mypy_nodes.FuncDef) -> TargetSet | None:
    ret = return_type(func)
    return None if ret is None else command_targets(_form(ret))
