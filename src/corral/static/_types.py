"""Reading graph facts from the types mypy inferred: state keys, node names, route targets.

Route targets come from a function's return type as mypy resolved it, so aliases and
``End`` read the same as at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.spec import KeySpec, TargetSet
from corral.static._expressions import GRAPH, StaticError

if TYPE_CHECKING:
    from mypy import nodes as mypy_nodes
    from mypy import types as mypy_types

_SEND = "corral.control.Send"
_COMMAND = "corral.control.Command"
_SEQUENCES = {"builtins.list", "builtins.tuple", "typing.Sequence", "collections.abc.Sequence"}


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


def _members(typ: mypy_types.Type) -> list[mypy_types.ProperType]:
    from mypy.types import UnionType, get_proper_type

    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return [m for item in proper.items for m in _members(item)]
    return [proper]


def literal_names(typ: mypy_types.Type) -> tuple[str, ...] | None:
    from mypy.types import LiteralType

    names: list[str] = []
    for member in _members(typ):
        if not (isinstance(member, LiteralType) and isinstance(member.value, str)):
            return None
        if member.value not in names:
            names.append(member.value)
    return tuple(names) if names else None


def return_type(func: mypy_nodes.FuncDef) -> mypy_types.Type | None:
    from mypy.types import CallableType, Instance, get_proper_type

    if func.unanalyzed_type is None or not isinstance(func.type, CallableType):
        return None
    ret = func.type.ret_type
    proper = get_proper_type(ret)
    if func.is_coroutine and isinstance(proper, Instance) and proper.args:
        return proper.args[-1]  # Coroutine[Any, Any, T]
    return ret


def _read_targets(
    typ: mypy_types.Type, names: dict[str, None], sends: dict[str, None], top: bool
) -> bool:
    """Add the targets of ``typ`` to ``names``; return whether it was a sequence (fan-out)."""
    from mypy.types import Instance, LiteralType, NoneType

    many = False
    for member in _members(typ):
        if isinstance(member, LiteralType) and isinstance(member.value, str):
            names[member.value] = None
        elif isinstance(member, Instance) and member.type.fullname == _SEND and member.args:
            inner = literal_names(member.args[0])
            if inner is None:
                msg = "its return annotation has a Send whose target is not a Literal"
                raise StaticError(msg)
            names.update(dict.fromkeys(inner))
            sends.update(dict.fromkeys(inner))
        elif (
            top
            and isinstance(member, Instance)
            and member.type.fullname in _SEQUENCES
            and member.args
        ):
            many = True
            _read_targets(member.args[0], names, sends, top=False)
        elif isinstance(member, NoneType):
            msg = "its return annotation allows None, which is not a route; return END to finish"
            raise StaticError(msg)
        else:
            msg = f"its return annotation has {member}, which names no Literal targets"
            raise StaticError(msg)
    return many


def _targets(types: list[mypy_types.Type], top: bool) -> TargetSet:
    """Return the targets of the route types ``types`` (a router's return type, or the
    ``Command`` type arguments of a node's)."""
    names: dict[str, None] = {}
    sends: dict[str, None] = {}
    try:
        many = any([_read_targets(typ, names, sends, top) for typ in types])
    except StaticError as exc:
        return TargetSet(None, problem=str(exc))
    if top and not names:
        return TargetSet(None, problem=f"its return annotation {types[0]} names no Literal targets")
    return TargetSet(tuple(names), many=many, sends=tuple(sends))


def router_targets(func: mypy_nodes.FuncDef) -> TargetSet:
    ret = return_type(func)
    if ret is None:
        return TargetSet(None, problem="it has no return annotation")
    return _targets([ret], top=True)


def command_targets(func: mypy_nodes.FuncDef) -> TargetSet | None:
    from mypy.types import Instance

    ret = return_type(func)
    if ret is None:
        return None
    commands = [m for m in _members(ret) if isinstance(m, Instance) and m.type.fullname == _COMMAND]
    return _targets([c.args[0] for c in commands], top=False) if commands else None
