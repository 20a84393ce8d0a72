"""What one lint check sends back, and its JSON form: plain data a parent can read safely.

A module's report crosses a process boundary from the process that imported the module (and
so ran its code) to ``corral lint``'s own process. It travels as JSON, never as a pickle:
reading JSON runs nothing, and :func:`decode_reports` accepts exactly the shape
:func:`encode_reports` writes (every field typed, nothing extra), so bytes a module wrote in
place of its report are at worst a report that cannot be read, never code in the parent.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from types import UnionType
from typing import Any, Literal, get_args, get_origin, get_type_hints

from corral.analysis.diagnostic import Diagnostic

__all__ = [
    "Failure",
    "ModuleReport",
    "TargetReport",
    "UnreadableReport",
    "decode_reports",
    "encode_reports",
]


@dataclass(frozen=True)
class Failure:
    """A module or graph that could not be loaded or checked, as text."""

    source: str
    """The file, module or ``file:graph`` it is about."""
    message: str
    """One line for the user, naming the source."""
    formatted: str = ""
    """The traceback, for ``--verbose``."""


@dataclass(frozen=True)
class TargetReport:
    """One graph a module defined, with its findings."""

    name: str
    aliases: tuple[str, ...]
    failed: bool
    """Its module failed to import after defining it (its findings are not reported)."""
    diagnostics: tuple[Diagnostic, ...] = ()
    failure: Failure | None = None
    """Set when the graph was found but its spec could not be built or checked."""


@dataclass(frozen=True)
class ModuleReport:
    """What the worker learnt from importing one module."""

    source: str
    targets: tuple[TargetReport, ...] = ()
    failure: Failure | None = None
    """The import failed (with a plain exception, or the worker died or timed out)."""
    graph_error: tuple[Diagnostic, ...] = ()
    """The import raised ``GraphError`` with findings: they are reported as findings."""


class UnreadableReport(ValueError):
    """Bytes that are not a report in the shape :func:`encode_reports` writes."""


def encode_reports(reports: list[ModuleReport]) -> bytes:
    """Return ``reports`` as UTF-8 JSON: each dataclass an object of all its fields."""
    return json.dumps([asdict(r) for r in reports], separators=(",", ":")).encode()


def decode_reports(data: bytes) -> list[ModuleReport]:
    """Read what :func:`encode_reports` wrote; anything else is :class:`UnreadableReport`.

    >>> decode_reports(encode_reports([ModuleReport("a.py")]))
    [ModuleReport(source='a.py', targets=(), failure=None, graph_error=())]
    """
    try:
        return list(_read(tuple[ModuleReport, ...], json.loads(data)))
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise UnreadableReport(str(exc)) from None


_hints = functools.cache(get_type_hints)
"""A dataclass's field types, read once per class."""


def _read(kind: Any, raw: object) -> Any:
    """Return ``raw`` (parsed JSON) as a value of the type ``kind``, or raise ``TypeError``.

    The types are those of the report's fields: a dataclass is an object holding exactly
    its fields, a tuple a list, ``X | None`` null or an X, a ``Literal`` one of its values,
    a ``Mapping`` any object (a finding's facts are JSON values).
    """
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(kind, type) and is_dataclass(kind):
        hints = _hints(kind)
        if not isinstance(raw, dict) or set(raw) != set(hints):
            raise TypeError(f"not a {kind.__name__}")
        return kind(**{name: _read(hints[name], value) for name, value in raw.items()})
    if origin is tuple and isinstance(raw, list):
        return tuple(_read(args[0], item) for item in raw)
    if origin is UnionType and raw is None and type(None) in args:
        return None
    if origin is UnionType:
        return _read(next(a for a in args if a is not type(None)), raw)
    if origin is Literal and raw in args:
        return raw
    if origin is Mapping and isinstance(raw, dict):
        return raw
    if kind in (str, bool, int) and type(raw) is kind:
        return raw
    raise TypeError(f"not a {kind}")
