"""Rule metadata for output formats and ``--explain``: code, slug, severity and docs.

The analyser's rule table (:data:`corral.analysis.rules.RULES`) is the one place rule text
lives: a rule's docstring gives its summary and short docs. ``--explain`` prefers the rule's
section of ``docs/rules.md`` when corral runs from a checkout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DOCS_PAGE", "Rule", "all_rules", "find_rule", "long_docs"]

DOCS_PAGE = "docs/rules.md"
"""Where every rule has a section (anchor ``#cr201``)."""


@dataclass(frozen=True)
class Rule:
    """What the CLI shows about one rule code."""

    code: str
    slug: str
    severity: str
    """``"error"`` or ``"warning"``."""
    summary: str
    """One sentence: what the rule finds."""
    docs: str
    """A few paragraphs: why it matters and how to fix it."""


def all_rules() -> tuple[Rule, ...]:
    """Return every rule of the analyser, sorted by code."""
    from corral.analysis.rules import RULES

    return tuple(
        Rule(r.code, r.slug, r.severity, _plain(r.summary), _plain(r.docs or r.summary))
        for r in sorted(RULES.values(), key=lambda r: r.code)
    )


def find_rule(code: str) -> Rule | None:
    """Return the rule called ``code`` (case-insensitive), or ``None``."""
    return next((rule for rule in all_rules() if rule.code == code.strip().upper()), None)


def long_docs(rule: Rule) -> str:
    """Return the rule's section of ``docs/rules.md`` when corral runs from a checkout.

    An installed package has no docs folder; the short docs of :class:`Rule` stand in.
    """
    page = Path(__file__).resolve().parents[3] / DOCS_PAGE
    try:
        lines = page.read_text(encoding="utf-8").splitlines()
    except OSError:
        return rule.docs
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {rule.code} ")), None)
    if start is None:
        return rule.docs
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = [line for line in lines[start + 1 : end] if not line.startswith("<a id=")]
    section = "\n".join(body).strip()
    return section or rule.docs


def _plain(text: str) -> str:
    """Return docstring text with reST ````code```` marks as Markdown ```code```."""
    return text.replace("``", "`")
