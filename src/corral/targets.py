"""Read route targets from return annotations.

Only the return annotation is resolved, and only when the graph is checked, so aliases
defined later in the module and graphs built inside functions both work. A string
annotation (``from __future__ import annotations``) is evaluated against the function's
module globals and the locals captured when the decorator ran.

The reader flattens ``Union``/``X | Y``/``Optional``, ``Annotated``, nested ``Literal``,
``TypeAliasType`` aliases and ``End``, and understands ``list[...]`` (fan-out),
``Send[...]`` (map-reduce) and ``Command[...]`` (node-chosen routes). Anything else yields a
:class:`~corral.spec.TargetSet` with ``names=None`` and a ``problem`` for CR401: an annotation
is never read as "could go anywhere".
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import typing_extensions

from corral._names import NameTable
from corral.control import Command, Send
from corral.spec import TargetSet

__all__ = [
    "command_targets",
    "read_command_targets",
    "read_literal_form",
    "read_return_annotation",
    "read_router_targets",
    "route_targets",
]

_MISSING = object()


class _Unreadable(Exception):
    """An annotation part that names no route; the message says which part."""


def read_return_annotation(
    func: Callable[..., Any], localns: Mapping[str, Any] | None, name: str = "return"
) -> Any:
    """Return the evaluated annotation ``name`` of ``func`` (``_MISSING`` when it has none).

    Raises:
        _Unreadable: the annotation is a string that does not evaluate.
    """
    raw = getattr(func, "__annotations__", {}).get(name, _MISSING)
    if raw is _MISSING:
        return _MISSING
    return _evaluate(raw, func, localns)


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> types.CodeType:
    """Return an annotation's text compiled once (a module's annotations repeat)."""
    return compile(source, "<annotation>", "eval")


def _evaluate(raw: Any, func: Callable[..., Any] | None, localns: Mapping[str, Any] | None) -> Any:
    if isinstance(raw, typing.ForwardRef):
        raw = raw.__forward_arg__
    if not isinstance(raw, str):
        return raw
    globalns = getattr(func, "__globals__", None)
    if type(globalns) is not dict or "__builtins__" not in globalns:
        globalns = {**(globalns or {}), "__builtins__": __builtins__}
    try:
        return eval(_compiled(raw), globalns, localns)
    except Exception as exc:
        msg = f"its return annotation {raw!r} cannot be resolved ({type(exc).__name__}: {exc})"
        raise _Unreadable(msg) from exc


def read_router_targets(
    func: Callable[..., Any],
    localns: Mapping[str, Any] | None = None,
    *,
    table: NameTable | None = None,
) -> TargetSet:
    """Read the targets of a router from its return annotation.

    With ``table`` (the graph's node names), each name read is the table's object for it.

    >>> from typing import Literal
    >>> def route(state: dict) -> Literal["a", "b"] | Literal["__end__"]: ...
    >>> read_router_targets(route).names
    ('a', 'b', '__end__')
    """
    try:
        annotation = read_return_annotation(func, localns)
    except _Unreadable as exc:
        return TargetSet(None, problem=str(exc))
    if annotation is _MISSING:
        return TargetSet(None, problem="it has no return annotation")
    return route_targets(annotation, func, localns, table=table)


def route_targets(
    annotation: Any,
    func: Callable[..., Any] | None = None,
    localns: Mapping[str, Any] | None = None,
    *,
    table: NameTable | None = None,
) -> TargetSet:
    """Read the targets of a router's return annotation, evaluated (``func``'s globals and
    ``localns`` resolve the strings left in it; :mod:`corral.static` gives mypy's types)."""
    try:
        return _read_top(annotation, func, localns, table)
    except _Unreadable as exc:
        return TargetSet(None, problem=str(exc))


def read_command_targets(
    func: Callable[..., Any],
    localns: Mapping[str, Any] | None = None,
    *,
    table: NameTable | None = None,
) -> TargetSet | None:
    """Read `Command[Literal[...]]` targets from a node annotation; `None` if not a command node.

    A node annotated with a union that includes ``Command[...]`` is a command node too (it
    may also return a plain update). A bare ``Command`` is a command node with no targets.
    With ``table`` (the graph's node names), each name read is the table's object for it.
    """
    try:
        annotation = read_return_annotation(func, localns)
    except _Unreadable as exc:
        # An annotation that does not resolve is only a routing problem when it is meant to
        # be a Command; an unresolved plain update type (e.g. under TYPE_CHECKING) is not.
        raw = getattr(func, "__annotations__", {}).get("return")
        if "Command" in str(raw):
            return TargetSet(None, problem=str(exc))
        return None
    if annotation is _MISSING:
        return None
    return command_targets(annotation, func, localns, table=table)


def command_targets(
    annotation: Any,
    func: Callable[..., Any] | None = None,
    localns: Mapping[str, Any] | None = None,
    *,
    table: NameTable | None = None,
) -> TargetSet | None:
    """Read the targets of a node's return annotation, evaluated (see :func:`route_targets`);
    ``None`` if it names no ``Command``."""
    commands = [m for m in _members(annotation) if m is Command or typing.get_origin(m) is Command]
    if not commands:
        return None
    names: list[str] = []
    sends: list[str] = []
    try:
        for command in commands:
            args = typing.get_args(command)
            if not args:
                msg = "its return annotation is a bare Command; write Command[Literal[...]]"
                raise _Unreadable(msg)
            _read_routes(args[0], func, localns, names, sends)
    except _Unreadable as exc:
        return TargetSet(None, problem=str(exc))
    return TargetSet(_named(names, table), many=False, sends=_named(sends, table))


def _read_top(
    annotation: Any,
    func: Callable[..., Any] | None,
    localns: Mapping[str, Any] | None,
    table: NameTable | None,
) -> TargetSet:
    names: list[str] = []
    sends: list[str] = []
    many = False
    for member in _members(annotation):
        if typing.get_origin(member) in (list, tuple, Sequence):
            many = True
            args = typing.get_args(member)
            if not args:
                msg = f"its return annotation {_show(member)} names no Literal targets"
                raise _Unreadable(msg)
            _read_routes(args[0], func, localns, names, sends)
        else:
            _read_routes(member, func, localns, names, sends)
    if not names:
        msg = f"its return annotation {_show(annotation)} names no Literal targets"
        raise _Unreadable(msg)
    return TargetSet(_named(names, table), many=many, sends=_named(sends, table))


def _named(names: list[str], table: NameTable | None) -> tuple[str, ...]:
    return tuple(names) if table is None else table.names(names)


def _read_routes(
    tp: Any,
    func: Callable[..., Any] | None,
    localns: Mapping[str, Any] | None,
    names: list[str],
    sends: list[str],
) -> None:
    """Add the targets of ``tp`` (a union of ``Literal`` and ``Send[...]`` members) to
    ``names``, and those reached through ``Send`` to ``sends`` too."""
    for member in _members(tp):
        via_send = typing.get_origin(member) is Send
        routes = _send_names if via_send else _literal_names
        for name in routes(member, func, localns):
            _add(names, name)
            if via_send:
                _add(sends, name)


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def _unalias(tp: Any) -> Any:
    """Strip ``Annotated`` and ``TypeAliasType`` layers."""
    while True:
        origin = typing.get_origin(tp)
        if type(tp).__name__ == "TypeAliasType":  # typing's or typing_extensions' class
            tp = tp.__value__
        elif origin is typing.Annotated or origin is typing_extensions.Annotated:
            tp = typing.get_args(tp)[0]
        elif type(origin).__name__ == "TypeAliasType":  # a generic alias, subscripted
            tp = origin.__value__
        else:
            return tp


def _members(tp: Any) -> list[Any]:
    """Flatten unions (and aliases of unions) into their members."""
    tp = _unalias(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        out: list[Any] = []
        for arg in typing.get_args(tp):
            out.extend(_members(arg))
        return out
    return [tp]


def _literal_names(
    tp: Any, func: Callable[..., Any] | None, localns: Mapping[str, Any] | None
) -> list[str]:
    tp = _unalias(tp)
    if isinstance(tp, (str, typing.ForwardRef)):
        return [
            n
            for m in _members(_evaluate(tp, func, localns))
            for n in _literal_names(m, func, localns)
        ]
    origin = typing.get_origin(tp)
    if origin is Literal or origin is typing_extensions.Literal:
        names: list[str] = []
        for value in typing.get_args(tp):
            if isinstance(value, str):
                names.append(value)
            else:
                msg = f"Literal value {value!r} in its return annotation is not a node name"
                raise _Unreadable(msg)
        return names
    if tp is type(None) or tp is None:
        msg = "its return annotation allows None, which is not a route; return END to finish"
        raise _Unreadable(msg)
    msg = f"its return annotation has {_show(tp)}, which names no Literal targets"
    raise _Unreadable(msg)


def _send_names(
    tp: Any, func: Callable[..., Any] | None, localns: Mapping[str, Any] | None
) -> list[str]:
    args = typing.get_args(tp)
    if not args:
        msg = "its return annotation has a bare Send; write Send[Literal[...]]"
        raise _Unreadable(msg)
    return [n for m in _members(args[0]) for n in _literal_names(m, func, localns)]


def _show(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def read_literal_form(form: Any) -> tuple[str, ...] | None:
    """Return the names of a ``Literal`` (or union/alias of them); ``None`` if it is not one.

    >>> from typing import Literal
    >>> read_literal_form(Literal["a", "b"] | Literal["c"])
    ('a', 'b', 'c')
    """
    names: list[str] = []
    for member in _members(form):
        if typing.get_origin(member) not in (Literal, typing_extensions.Literal):
            return None
        for value in typing.get_args(member):
            if not isinstance(value, str):
                return None
            _add(names, value)
    return tuple(names) if names else None
