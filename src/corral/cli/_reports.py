"""What one lint check sends back, and its JSON form: plain data a parent can read safely.

A module's report crosses a process boundary from the process that imported the module (and
so ran its code) to ``corral lint``'s own process. It travels as JSON, never as a pickle:
reading JSON runs nothing, and :func:`decode_reports` accepts exactly the shape
:func:`encode_reports` writes (every field typed, nothing extra), so bytes a module wrote in
place of its report are at worst a report that cannot be read, never code in the parent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from corral.analysis.diagnostic import Diagnostic
from corral.cli._report import as_dict

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
    """Return ``reports`` as UTF-8 JSON."""
    return json.dumps([_module(r) for r in reports], separators=(",", ":")).encode()


def decode_reports(data: bytes) -> list[ModuleReport]:
    """Read what :func:`encode_reports` wrote; anything else is :class:`UnreadableReport`.

    >>> decode_reports(encode_reports([ModuleReport("a.py")]))
    [ModuleReport(source='a.py', targets=(), failure=None, graph_error=())]
    """
    try:
        raw = json.loads(data)
        return [_read_module(m) for m in _items(raw)]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise UnreadableReport(str(exc)) from None


def _module(report: ModuleReport) -> dict[str, Any]:
    return {
        "source": report.source,
        "targets": [_target(t) for t in report.targets],
        "failure": _failure(report.failure),
        "graph_error": [as_dict(d) for d in report.graph_error],
    }


def _target(target: TargetReport) -> dict[str, Any]:
    return {
        "name": target.name,
        "aliases": list(target.aliases),
        "failed": target.failed,
        "diagnostics": [as_dict(d) for d in target.diagnostics],
        "failure": _failure(target.failure),
    }


def _failure(failure: Failure | None) -> dict[str, str] | None:
    if failure is None:
        return None
    return {"source": failure.source, "message": failure.message, "formatted": failure.formatted}


def _read_module(raw: object) -> ModuleReport:
    fields = _fields(raw, ("source", "targets", "failure", "graph_error"))
    return ModuleReport(
        _str(fields["source"]),
        tuple(_read_target(t) for t in _items(fields["targets"])),
        _read_failure(fields["failure"]),
        tuple(_read_diagnostic(d) for d in _items(fields["graph_error"])),
    )


def _read_target(raw: object) -> TargetReport:
    fields = _fields(raw, ("name", "aliases", "failed", "diagnostics", "failure"))
    failed = fields["failed"]
    if not isinstance(failed, bool):
        raise TypeError("failed")
    return TargetReport(
        _str(fields["name"]),
        tuple(_str(a) for a in _items(fields["aliases"])),
        failed,
        tuple(_read_diagnostic(d) for d in _items(fields["diagnostics"])),
        _read_failure(fields["failure"]),
    )


def _read_failure(raw: object) -> Failure | None:
    if raw is None:
        return None
    fields = _fields(raw, ("source", "message", "formatted"))
    return Failure(_str(fields["source"]), _str(fields["message"]), _str(fields["formatted"]))


def _read_diagnostic(raw: object) -> Diagnostic:
    names = ("code", "slug", "severity", "message", "nodes", "file", "line", "col")
    facts = raw.get("facts") if isinstance(raw, dict) else None
    fields = _fields(raw, (*names, "facts") if facts is not None else names)
    if facts is not None and not isinstance(facts, dict):
        raise TypeError("facts")
    severity = fields["severity"]
    if severity == "error":
        checked: Any = "error"
    elif severity == "warning":
        checked = "warning"
    else:
        raise TypeError("severity")
    return Diagnostic(
        code=_str(fields["code"]),
        slug=_str(fields["slug"]),
        severity=checked,
        message=_str(fields["message"]),
        nodes=tuple(_str(n) for n in _items(fields["nodes"])),
        file=_str(fields["file"]),
        line=_int(fields["line"]),
        col=_int(fields["col"]),
        facts=facts,
    )


def _fields(raw: object, names: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(raw, dict) or set(raw) != set(names):
        raise TypeError("fields")
    return raw


def _items(raw: object) -> list[object]:
    if not isinstance(raw, list):
        raise TypeError("list")
    return raw


def _str(raw: object) -> str:
    if not isinstance(raw, str):
        raise TypeError("str")
    return raw


def _int(raw: object) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise TypeError("int")
    return raw
