"""Rule text for the output formats and ``--explain``.

The analyser's rule table (:data:`corral.analysis.rules.RULES`) is the one place rule text
lives: a rule's docstring gives its summary and short docs, shown here with Markdown code
marks (:func:`plain`). ``--explain`` prefers the rule's section of ``docs/rules.md`` when
corral runs from a checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.analysis.rules import Rule

__all__ = ["DOCS_PAGE", "all_rules", "find_rule", "long_docs", "plain", "short_docs"]

DOCS_PAGE = "docs/rules.md"
"""Where every rule has a section (anchor ``#cr201``)."""


def all_rules() -> tuple[Rule, ...]:
    """Return every rule of the analyser, sorted by code."""
    from corral.analysis.rules import RULES

    return tuple(sorted(RULES.values(), key=lambda r: r.code))


def find_rule(code: str) -> Rule | None:
    """Return the rule called ``code`` (case-insensitive), or ``None``."""
    return next((rule for rule in all_rules() if rule.code == code.strip().upper()), None)


def short_docs(rule: Rule) -> str:
    """Return a few paragraphs: why the rule matters and how to fix it (its summary when
    its docstring says no more)."""
    return plain(rule.docs or rule.summary)


def long_docs(rule: Rule) -> str:
    """Return the rule's section of ``docs/rules.md`` when corral runs from a checkout.

    An installed package has no docs folder; :func:`short_docs` stand in.
    """
    page = Path(__file__).resolve().parents[3] / DOCS_PAGE
    try:
        lines = page.read_text(encoding="utf-8").splitlines()
    except OSError:
        return short_docs(rule)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {rule.code} ")), None)
    if start is None:
        return short_docs(rule)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = [line for line in lines[start + 1 : end] if not line.startswith("<a id=")]
    section = "\n".join(body).strip()
    return section or short_docs(rule)


def plain(text: str) -> str:
    """Return docstring text with reST ````code```` marks as Markdown ```code```."""
    return text.replace("``", "`")
