"""Print lint findings as text, JSON, SARIF 2.1.0 or GitHub workflow annotations.

Every formatter takes the findings already filtered, sorted and with display paths, and
returns the whole output as one string; none of them prints or decides the exit code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral import __version__
from corral.analysis.diagnostic import Diagnostic
from corral.cli._rules import plain, short_docs

if TYPE_CHECKING:
    from corral.analysis.rules import Rule

__all__ = ["FORMATS", "format_github", "format_json", "format_sarif", "format_text"]

FORMATS = ("text", "json", "sarif", "github")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def format_text(found: Sequence[Diagnostic], *, graphs: int, files: int, failed: int) -> str:
    """Return one ``path:line:col: CODE message`` line per finding, then a summary line of
    what lint looked at (``failed``: the modules or graphs that could not be loaded).

    >>> d = Diagnostic("CR103", "dead-node", "error", "node 'x' is dead", ("x",), "a.py", 3, 1)
    >>> print(format_text([d], graphs=1, files=1, failed=0))
    a.py:3:1: CR103 node 'x' is dead
    Found 1 error in 1 graph (1 file).
    """
    lines = [f"{d.file}:{d.line}:{d.col}: {d.code} {d.message}" for d in found]
    errors = sum(1 for d in found if d.severity == "error")
    warnings = len(found) - errors
    where = _plural(files, "file")
    if failed:
        where += f"; {failed} could not be loaded"
    scope = f"in {_plural(graphs, 'graph')} ({where})"
    if not graphs and not failed:
        lines.append(f"No graphs found ({where}).")
    elif not found:
        lines.append(f"No problems found {scope}.")
    else:
        counts = [_plural(errors, "error")] if errors else []
        if warnings:
            counts.append(_plural(warnings, "warning"))
        lines.append(f"Found {' and '.join(counts)} {scope}.")
    return "\n".join(lines)


def format_json(found: Sequence[Diagnostic]) -> str:
    """Return a JSON list of objects with the ``Diagnostic`` fields.

    >>> d = Diagnostic("CR102", "no-start", "error", "no start node", (), "a.py", 5, 1)
    >>> json.loads(format_json([d]))[0]["code"]
    'CR102'
    """
    # the Diagnostic fields in their order; facts only on a finding that has some (CR205)
    shown = [{k: v for k, v in asdict(d).items() if k != "facts" or v is not None} for d in found]
    return json.dumps(shown, indent=2, ensure_ascii=False)


def format_github(found: Sequence[Diagnostic], load_errors: Sequence[tuple[str, str]]) -> str:
    """Return one GitHub Actions workflow command per finding (and per load error).

    >>> d = Diagnostic("CR202", "useless-guard", "warning", "guard, unused", ("r",), "a.py", 7, 1)
    >>> print(format_github([d], []))
    ::warning file=a.py,line=7,col=1,title=CR202::guard, unused
    """
    lines = []
    for d in found:
        level = "error" if d.severity == "error" else "warning"
        props = f"file={_gh_prop(d.file)},line={d.line},col={d.col},title={_gh_prop(d.code)}"
        lines.append(f"::{level} {props}::{_gh_data(d.message)}")
    for file, message in load_errors:
        lines.append(f"::error file={_gh_prop(file)},title=load error::{_gh_data(message)}")
    return "\n".join(lines)


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def format_sarif(
    found: Sequence[Diagnostic],
    rules: Sequence[Rule],
    load_errors: Sequence[tuple[str, str]] = (),
    docs_url: str | None = None,
) -> str:
    """Return a SARIF 2.1.0 log with metadata for every rule and one result per finding.

    With ``docs_url`` (the address of the published rules page), each rule gets a
    ``helpUri``: that address with the rule's anchor (``...#cr201``).

    >>> from corral.cli._rules import all_rules
    >>> d = Diagnostic("CR201", "unguarded-cycle", "error", "cycle a → a", ("a",), "a.py", 9, 1)
    >>> log = json.loads(format_sarif([d], all_rules()))
    >>> log["version"], log["runs"][0]["results"][0]["ruleId"]
    ('2.1.0', 'CR201')
    """
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    for d in found:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": "error" if d.severity == "error" else "warning",
            "message": {"text": d.message},
            "locations": [_sarif_location(d.file, d.line, d.col)],
            "properties": {"nodes": list(d.nodes)},
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        results.append(result)
    invocation: dict[str, Any] = {"executionSuccessful": not load_errors}
    if load_errors:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": message},
                "locations": [_sarif_location(file, 0, 0)],
            }
            for file, message in load_errors
        ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "corral",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_sarif_rule(rule, docs_url) for rule in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "invocations": [invocation],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


def _sarif_rule(rule: Rule, docs_url: str | None) -> dict[str, Any]:
    described: dict[str, Any] = {
        "id": rule.code,
        "name": rule.slug,
        "shortDescription": {"text": plain(rule.summary)},
        "fullDescription": {"text": short_docs(rule)},
        "help": {"text": short_docs(rule)},
        "defaultConfiguration": {"level": "error" if rule.severity == "error" else "warning"},
        "properties": {"tags": [rule.slug]},
    }
    if docs_url:
        described["helpUri"] = f"{docs_url.partition('#')[0]}#{rule.code.lower()}"
    return described


def _sarif_location(file: str, line: int, col: int) -> dict[str, Any]:
    if os.path.isabs(file):
        artifact = {"uri": Path(file).as_uri()}
    else:
        artifact = {"uri": Path(file).as_posix(), "uriBaseId": "%SRCROOT%"}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line >= 1:
        physical["region"] = {"startLine": line, "startColumn": max(col, 1)}
    return {"physicalLocation": physical}
