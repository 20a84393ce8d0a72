"""``corral lint``: load the graphs, run the analyser, filter, print, choose the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterable, Sequence

from corral.analysis import analyse
from corral.analysis.diagnostic import Diagnostic
from corral.cli._report import Summary, format_github, format_json, format_sarif, format_text
from corral.cli._rules import all_rules, find_rule, long_docs
from corral.errors import GraphError
from corral.loader import LoadError, UsageError, display_path, load

__all__ = ["command", "is_selected", "parse_codes"]

_PREFIX = re.compile(r"CR\d{0,3}")


def command(args: argparse.Namespace) -> int:
    """Run ``corral lint`` and return 0 (clean), 1 (an error found) or 2 (load error)."""
    if args.explain:
        return explain(args.explain)
    if not args.paths:
        msg = "give at least one PATH to lint (a .py file, a folder or a module), or --explain"
        raise UsageError(msg)
    select = parse_codes(args.select, "--select")
    ignore = parse_codes(args.ignore, "--ignore")
    if getattr(args, "static", False):
        from corral.static import load_static

        loaded = load_static(args.paths, exclude=args.exclude)
    else:
        loaded = load(args.paths, exclude=args.exclude, only_marked=True)
    failures: list[LoadError] = list(loaded.errors)
    found: list[Diagnostic] = []
    for _, err in loaded.graph_errors:
        found.extend(err.diagnostics)
    graphs = len(loaded.graph_errors)
    for target in loaded.targets:
        if target.failed:
            continue  # its module failed to import; that failure is what gets reported
        graphs += 1
        try:
            found.extend(analyse(target.spec()))
        except GraphError as exc:
            if exc.diagnostics:
                found.extend(exc.diagnostics)
            else:
                failures.append(_target_error(target.label, exc))
        except Exception as exc:
            failures.append(_target_error(target.label, exc))
    kept = [d for d in _unique(found) if is_selected(d.code, select, ignore)]
    shown = sorted((_displayed(d) for d in kept), key=lambda d: d.sort_key)
    for failure in failures:
        if args.verbose:
            print(failure.formatted, file=sys.stderr, end="")
        print(f"error: {failure.message}", file=sys.stderr)
    errors = [(f.source, f.message) for f in failures]
    if args.format == "json":
        output = format_json(shown)
    elif args.format == "sarif":
        output = format_sarif(shown, all_rules(), errors)
    elif args.format == "github":
        output = format_github(shown, errors)
    else:
        summary = Summary(graphs=graphs, files=loaded.modules, failed=len(failures))
        output = format_text(shown, summary)
    if output:
        print(output)
    if failures:
        return 2
    return 1 if any(d.severity == "error" for d in shown) else 0


def explain(code: str) -> int:
    """Print the docs of the rule ``code``; return 2 when there is no such rule."""
    rule = find_rule(code)
    if rule is None:
        codes = ", ".join(r.code for r in all_rules())
        print(f"error: {code!r} is not a rule code; the codes are {codes}", file=sys.stderr)
        return 2
    print(f"{rule.code} {rule.slug} ({rule.severity})\n")
    print(rule.summary + "\n")
    print(long_docs(rule) + "\n")
    print(f"More: {rule.help_uri}")
    return 0


def parse_codes(values: Sequence[str], option: str) -> list[str]:
    """Split comma-separated code prefixes and check each one names at least one rule.

    >>> parse_codes(["CR2,cr103", " CR3 "], "--select")
    ['CR2', 'CR103', 'CR3']

    Raises:
        UsageError: a value that is not ``CR`` plus up to three digits, or matches no rule.
    """
    codes = [c.strip().upper() for value in values for c in value.split(",") if c.strip()]
    known = [rule.code for rule in all_rules()]
    for code in codes:
        if not _PREFIX.fullmatch(code):
            msg = f"{option} {code!r} is not a rule code or prefix; write e.g. CR201 or CR2"
            raise UsageError(msg)
        if not any(k.startswith(code) for k in known):
            msg = f"{option} {code!r} matches no rule; the codes are {', '.join(known)}"
            raise UsageError(msg)
    return codes


def is_selected(code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
    """Return whether a finding with ``code`` is reported: the longest matching prefix wins.

    >>> is_selected("CR201", [], ["CR2"])
    False
    >>> is_selected("CR201", ["CR201"], ["CR2"])
    True
    >>> is_selected("CR103", ["CR2"], [])
    False
    """
    chosen = max((len(p) for p in select if code.startswith(p)), default=-1) if select else 0
    dropped = max((len(p) for p in ignore if code.startswith(p)), default=-1)
    return chosen > dropped


def _unique(found: Iterable[Diagnostic]) -> list[Diagnostic]:
    return list(dict.fromkeys(found))


def _displayed(diagnostic: Diagnostic) -> Diagnostic:
    return dataclasses.replace(diagnostic, file=display_path(diagnostic.file))


def _target_error(label: str, exc: BaseException) -> LoadError:
    import traceback

    formatted = "".join(traceback.format_exception(exc))
    return _GraphLoadError(label, exc, formatted)


@dataclasses.dataclass(frozen=True)
class _GraphLoadError(LoadError):
    """A graph found but not checkable (its spec cannot be built)."""

    @property
    def message(self) -> str:
        """Return one line naming the graph and the exception."""
        text = str(self.exc).strip().splitlines()
        detail = f": {text[0]}" if text else ""
        return f"cannot check {self.source}: {type(self.exc).__name__}{detail}"
