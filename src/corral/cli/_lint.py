"""``corral lint``: load the graphs, run the analyser, filter, print, choose the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterable, Iterator, Sequence

from corral.analysis.diagnostic import Diagnostic
from corral.cli._forks import check_target
from corral.cli._lint_formats import format_github, format_json, format_sarif, format_text
from corral.cli._lint_worker import Request, Worker
from corral.cli._reports import Failure, ModuleReport, TargetReport
from corral.cli._rules import DOCS_PAGE, all_rules, find_rule, long_docs, plain
from corral.loader import (
    UsageError,
    display_path,
    exclude_patterns,
    is_module_name,
    python_files,
    split_selector,
)

__all__ = ["Collected", "collect", "collect_static", "command", "is_selected", "parse_codes"]

_PREFIX = re.compile(r"CR\d{0,3}")


@dataclasses.dataclass
class Collected:
    """Everything lint found over all its paths, before filtering and printing."""

    findings: list[Diagnostic] = dataclasses.field(default_factory=list)
    failures: list[Failure] = dataclasses.field(default_factory=list)
    graphs: int = 0
    modules: int = 0

    def add(self, report: ModuleReport, wanted: str | None) -> None:
        """Add one module's report, keeping only the graph ``wanted`` when it is given."""
        self.modules += 1
        if report.failure is not None:
            self.failures.append(report.failure)
        if report.graph_error:
            self.graphs += 1
            self.findings.extend(report.graph_error)
        for target in report.targets:
            if not target.failed and (wanted is None or wanted in target.aliases):
                self.add_target(target)

    def add_target(self, target: TargetReport) -> None:
        """Add one graph's findings (or why it could not be checked)."""
        self.graphs += 1
        self.findings.extend(target.diagnostics)
        if target.failure is not None:
            self.failures.append(target.failure)


def command(args: argparse.Namespace) -> int:
    """Run ``corral lint`` and return 0 (clean), 1 (an error found) or 2 (load error)."""
    if args.explain:
        return explain(args.explain)
    if not args.paths:
        msg = "give at least one PATH to lint (a .py file, a folder or a module), or --explain"
        raise UsageError(msg)
    select = parse_codes(args.select, "--select")
    ignore = parse_codes(args.ignore, "--ignore")
    if args.static:
        collected = collect_static(args.paths, args.exclude)
    else:
        collected = collect(args.paths, args.exclude, timeout_s=args.import_timeout)
    kept = [d for d in _unique(collected.findings) if is_selected(d.code, select, ignore)]
    shown = [dataclasses.replace(d, file=display_path(d.file)) for d in kept]
    shown.sort(key=lambda d: d.sort_key)
    failures = collected.failures
    for failure in failures:
        if args.verbose and failure.formatted:
            print(failure.formatted, file=sys.stderr, end="")
        print(f"error: {failure.message}", file=sys.stderr)
    errors = [(f.source, f.message) for f in failures]
    if args.format == "json":
        output = format_json(shown)
    elif args.format == "sarif":
        output = format_sarif(shown, all_rules(), errors, docs_url=args.docs_url)
    elif args.format == "github":
        output = format_github(shown, errors)
    else:
        failed = len(failures)
        output = format_text(shown, graphs=collected.graphs, files=collected.modules, failed=failed)
    if output:
        print(output)
    if failures:
        return 2
    return 1 if any(d.severity == "error" for d in shown) else 0


def collect(paths: Sequence[str], exclude: Sequence[str], *, timeout_s: float) -> Collected:
    """Import and check every module under ``paths``, each in the worker process.

    Raises:
        UsageError: a path that does not exist, or a ``:name`` that no module defines.
    """
    collected = Collected()
    patterns = exclude_patterns(exclude)
    with Worker(timeout_s=timeout_s) as worker:
        for argument in paths:
            path, wanted = split_selector(argument)
            requests = _requests(path, patterns, collected)
            reports = [r for reply in worker.run(requests) for r in reply]
            if wanted is not None:
                _check_wanted(path, wanted, reports)
            for report in reports:
                collected.add(report, wanted)
    return collected


def _check_wanted(path: str, wanted: str, reports: Sequence[ModuleReport]) -> None:
    if any(r.failure is not None or r.graph_error for r in reports):
        return
    names = sorted({a for r in reports for t in r.targets for a in t.aliases})
    if wanted not in names:
        have = ", ".join(names) if names else "no graphs"
        msg = f"{path} defines no graph called {wanted!r} (it has: {have})"
        raise UsageError(msg)


def _requests(path: str, patterns: Sequence[str], collected: Collected) -> Iterator[Request]:
    if is_module_name(path):
        yield Request(path, dotted=True)
        return
    for file in python_files(path, patterns, only_marked=True):
        if file.problem is None:
            yield Request(file.path)
        else:
            source = display_path(file.path)
            failure = Failure(source, f"cannot read {source}: it {file.problem.problem}")
            collected.add(ModuleReport(source, failure=failure), None)


def collect_static(paths: Sequence[str], exclude: Sequence[str]) -> Collected:
    """Read every graph under ``paths`` with mypy (no module code runs) and check it."""
    from corral.static import load_static

    loaded = load_static(paths, exclude=exclude)
    if loaded.langgraph_modules:
        files = "".join(f"\n  {source}" for source in loaded.langgraph_modules)
        note = "note: lint --static reads LangGraph wiring from source, but these files need an"
        print(f"{note} import (lint them without --static):{files}", file=sys.stderr)
    collected = Collected(modules=loaded.modules)
    collected.failures.extend(Failure(e.source, e.message, e.formatted) for e in loaded.errors)
    for _, err in loaded.graph_errors:
        collected.graphs += 1
        collected.findings.extend(err.diagnostics)
    for target in loaded.targets:
        collected.add_target(check_target(target))
    return collected


def explain(code: str) -> int:
    """Print the docs of the rule ``code``; return 2 when there is no such rule."""
    rule = find_rule(code)
    if rule is None:
        codes = ", ".join(r.code for r in all_rules())
        print(f"error: {code!r} is not a rule code; the codes are {codes}", file=sys.stderr)
        return 2
    print(f"{rule.code} {rule.slug} ({rule.severity})\n")
    print(plain(rule.summary) + "\n")
    print(long_docs(rule) + "\n")
    print(f"More: {DOCS_PAGE}#{rule.code.lower()}")
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
    """Return one finding per claim (a graph found on its own and as a subgraph says it
    twice; the plain wording is kept)."""
    from corral.langgraph import claim

    kept: dict[tuple[object, ...], Diagnostic] = {}
    for diagnostic in sorted(found, key=lambda d: claim(d)[-1] != d.message):
        kept.setdefault(claim(diagnostic), diagnostic)
    return list(kept.values())
