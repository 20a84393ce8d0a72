"""Read a ``TypedDict`` state schema into :class:`~corral.spec.KeySpec` values.

A key annotated ``Annotated[T, reducer]`` gets the last callable in its metadata as its
reducer; every other key is overwritten by updates.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

import typing_extensions

from corral.errors import GraphError
from corral.spec import KeySpec

__all__ = ["empty_value", "read_schema"]


def read_schema(
    schema: type[Any], *, role: str = "state_schema", localns: Mapping[str, Any] | None = None
) -> tuple[KeySpec, ...]:
    """Return the keys of a ``TypedDict`` class in declaration order.

    Its annotations are resolved against its module's globals and ``localns``, the locals
    of the function that made the ``Graph`` (a ``TypedDict`` defined there under
    ``from __future__ import annotations`` may name ``Annotated`` or a reducer imported
    there, as route annotations may).

    Raises:
        GraphError: ``schema`` is not a ``TypedDict`` or its annotations do not resolve.
    """
    if not typing_extensions.is_typeddict(schema):
        msg = (
            f"{role} {schema!r} is not a TypedDict; declare the state as "
            "`class State(TypedDict): ...`"
        )
        raise GraphError(msg)
    try:
        hints = typing_extensions.get_type_hints(
            schema, localns=dict(localns) if localns else None, include_extras=True
        )
    except Exception as exc:
        msg = f"the annotations of {role} {schema.__qualname__!r} do not resolve: {exc}"
        raise GraphError(msg) from exc
    keys: list[KeySpec] = []
    for name, hint in hints.items():
        value_type, reducer = _split(hint)
        empty = empty_value(value_type) if reducer is not None else None
        keys.append(KeySpec(name, value_type, reducer, empty))
    return tuple(keys)


def _split(hint: Any) -> tuple[Any, Any]:
    """Split ``Required[Annotated[T, f]]`` and friends into ``(T, f)``."""
    reducer = None
    while True:
        origin = typing.get_origin(hint)
        if origin in (
            typing_extensions.Required,
            typing_extensions.NotRequired,
            typing_extensions.ReadOnly,
        ):
            hint = typing.get_args(hint)[0]
            continue
        if origin is typing.Annotated:
            args = typing.get_args(hint)
            for meta in reversed(args[1:]):
                if callable(meta) and reducer is None:
                    reducer = meta
            hint = args[0]
            continue
        return hint, reducer


def empty_value(value_type: Any) -> Any:
    """Return the empty value of a declared type (``list`` → ``[]``), or ``None``.

    >>> empty_value(list[str]), empty_value(dict[str, int]), empty_value(int)
    ([], {}, 0)
    """
    origin = typing.get_origin(value_type) or value_type
    for kind in (list, dict, set, tuple, frozenset, str, int, float):
        if origin is kind:
            return kind()
    return None
