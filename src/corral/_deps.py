"""``compile(deps_type=T)`` held to what each node and router reads as ``ctx: Context[X]``.

A type checker cannot tie the two: ``T`` is given at ``compile()``, after the decorators
have run, and ``Graph`` is not generic in its deps. So ``compile`` checks it instead, from
the annotations, where the answer is certain: ``X`` a class that ``T`` does not subclass,
or a ``Protocol`` one of whose members ``T`` lacks. An annotation that does not resolve, an
``X`` that is ``Any``, a type variable, a union or a generic alias, and a ``T`` that is
not a class are left to the type checker.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import typing_extensions

from corral import targets
from corral.errors import GraphError

__all__ = ["Reader", "check_deps"]


Reader = tuple[str, Callable[..., Any], Mapping[str, Any] | None]
"""A node or router that may read ``ctx``: its label in messages, its function, and the
locals its decorator captured."""


def check_deps(readers: Iterable[Reader], deps_type: object) -> None:
    """Raise ``GraphError`` naming the first of a graph's ``readers`` (its subgraphs'
    included) whose ``Context[X]`` ``deps_type`` cannot be.
    """
    if not isinstance(deps_type, type) or deps_type in (object, Any):
        return
    for label, func, localns in readers:
        wanted = _context_deps(func, localns)
        if not isinstance(wanted, type) or wanted in (object, Any):
            continue
        missing = _missing(deps_type, wanted)
        if missing is None:
            continue
        msg = (
            f"{label} reads ctx: Context[{wanted.__qualname__}], but compile(deps_type="
            f"{deps_type.__qualname__}) {missing}; pass the deps type the nodes read, or "
            f"annotate its ctx as Context[{deps_type.__qualname__}]"
        )
        raise GraphError(msg)


def _context_deps(func: Callable[..., Any], localns: Mapping[str, Any] | None) -> object:
    """Return ``X`` of ``func``'s second parameter annotated ``Context[X]``, else ``None``."""
    from corral.runtime.context import Context  # compile() loads the engine; a Graph does not

    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < 2 or params[1].kind not in positional:
        return None
    try:
        annotation = targets.read_return_annotation(func, localns, params[1].name)
    except Exception:  # an annotation that does not resolve is the type checker's to judge
        return None
    if typing.get_origin(annotation) is not Context:
        return None
    return typing.get_args(annotation)[0]


def _missing(deps_type: type, wanted: type) -> str | None:
    """Say why ``deps_type`` is not a ``wanted``; ``None`` when it is one."""
    if not typing_extensions.is_protocol(wanted):
        if issubclass(deps_type, wanted):
            return None
        return f"is not a subclass of {wanted.__qualname__}"
    has = set(dir(deps_type))
    for klass in deps_type.__mro__:
        has.update(getattr(klass, "__annotations__", {}))
    lacking = sorted(typing_extensions.get_protocol_members(wanted) - has)
    if not lacking:
        return None
    return f"lacks {', '.join(lacking)} of the Protocol {wanted.__qualname__}"
