"""Rule metadata for output formats and ``--explain``: code, slug, severity and docs.

The analyser's own rule table is used when it offers one (``corral.analysis.rules``); the
table below is the fallback, written from the rule list of the contract, so the CLI can
describe every code (SARIF needs metadata for every rule, not only those that fired).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    @property
    def help_uri(self) -> str:
        """Return the link to the rule's section of the rules page."""
        return f"{DOCS_PAGE}#{self.code.lower()}"


def _rule(code: str, slug: str, severity: str, summary: str, docs: str) -> Rule:
    return Rule(code, slug, severity, summary, docs.strip())


_FALLBACK: tuple[Rule, ...] = (
    _rule(
        "CR101", "unknown-node", "error",
        "A route, router source, guard or wait_for names a node that does not exist.",
        """
A route names a node that was never registered, usually a typo in `then=`, a router's
`Literal[...]` annotation, `@g.router("source")`, a `Guard` target or `wait_for=`.
The run would fail the first time it took that route.

Fix: correct the name, or register the missing node. Passing `nodes=Literal[...]` to
`Graph` lets mypy catch the typo too.
""",
    ),
    _rule(
        "CR102", "no-start", "error",
        "The graph has no start node.",
        """
No node was registered with `start=True`, so a run has nowhere to begin. Reported once,
at the line that created the `Graph` (and no node is reported as dead because of it).

Fix: mark the first node `@g.node(start=True, ...)`.
""",
    ),
    _rule(
        "CR103", "dead-node", "error",
        "A node is not reachable from the start.",
        """
No path of routes (fixed, conditional, Command, Send or a guard's `otherwise`) leads
from a start node to this node, so it can never run.

Fix: route to it (add it to a router's `Literal`, a `then=`) or remove it.
""",
    ),
    _rule(
        "CR104", "no-way-out", "error",
        "A node has no way out: no then=, router or Command annotation.",
        """
Every node needs exactly one way out. This one has no `then=`, no router registered for
it and no `Command[Literal[...]]` return annotation, so the run would stop there.

Fix: add `then=END` (or the next node), register a `@g.router("node")`, or return a
`Command` with its targets in the annotation.
""",
    ),
    _rule(
        "CR105", "cannot-finish", "error",
        "END cannot be reached from a node.",
        """
Every path from this node loops among nodes that never route to `END`, so a run that
gets here can only stop at a cap.

Fix: give one of the nodes on those paths a route to `END` (a guard's `otherwise=END`
counts).
""",
    ),
    _rule(
        "CR106", "duplicate-node", "error",
        "Two nodes share a name.",
        """
Two functions were registered under the same node name (the function name, or `name=`).
Routes to that name would be ambiguous.

Fix: rename one of them, or pass a distinct `name=` to its decorator.
""",
    ),
    _rule(
        "CR107", "mixed-routing", "error",
        "A node has more than one way out (for example then= and a router).",
        """
A node has `then=` and a router, two routers, or returns `Command` and also has `then=`
or a router. Which route wins would depend on the order of evaluation.

Fix: keep one way out: fold the choice into a single router, or route only through the
node's `Command`.
""",
    ),
    _rule(
        "CR108", "node-names", "error",
        "The nodes= Literal and the registered nodes disagree.",
        """
`Graph(State, Update, Nodes)` was given a `Literal` of node names for mypy to check
routes against, but the registered nodes are not exactly those names.

Fix: add the missing names to the `Literal`, or remove the ones no node has.
""",
    ),
    _rule(
        "CR201", "unguarded-cycle", "error",
        "A cycle has no guarded route.",
        """
Every cycle must pass through at least one guarded route, or a run could loop until the
global step cap. The message shows the cycle, e.g. `critique → revise → critique`, and the
finding points at a router (or node) of the cycle where a guard would cut it.

Fix: add a guard to a route on the cycle, e.g.
`@g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])`.
""",
    ),
    _rule(
        "CR202", "useless-guard", "warning",
        "A guard is on a route that is on no cycle, or that its router cannot take.",
        """
A guard counts a route that lies on no cycle (it can be taken at most once per visit, so
the bound adds nothing), or that its router or node never takes (its target is not in the
annotation). Usually a leftover from a refactor, or a guard on the wrong router.

Fix: move the guard to a route on the cycle, or remove it. To keep it on purpose,
suppress the warning for that node: `@g.node(ignore=("CR202",))`.
""",
    ),
    _rule(
        "CR301", "parallel-write", "error",
        "Nodes that can run in the same superstep write the same key without a reducer.",
        """
Branches of one fan-out (a `then=` tuple, a list-returning router, several start nodes)
and several `Send` runs of one node run in the same superstep. If two of them write a key
with no reducer, the run raises `InvalidUpdateError`; other frameworks silently keep one.

Fix: give the key a reducer, e.g. `findings: Annotated[list[str], operator.add]`, or
write distinct keys.
""",
    ),
    _rule(
        "CR302", "unknown-key", "error",
        "A node writes a key that is not in the state schema.",
        """
A node returns (or declares with `writes=`) a key the state `TypedDict` does not have;
the run would raise `InvalidUpdateError`.

Fix: add the key to the state schema, or correct its spelling.
""",
    ),
    _rule(
        "CR303", "update-schema", "error",
        "update_schema disagrees with state_schema (keys or value types).",
        """
The `update_schema` passed to `Graph` must have the same keys and value types as the
state schema (all optional).

Fix: make the two `TypedDict`s agree.
""",
    ),
    _rule(
        "CR401", "untyped-route", "error",
        "A router or Command node has a return annotation that names no Literal targets.",
        """
Routes are read from return annotations, so a router annotated `-> str` (or with none)
could go anywhere and the graph cannot be checked.

Fix: annotate the targets: `-> Literal["a", "b"] | End`, `-> list[Literal[...]]` for a
fan-out, `-> list[Send[Literal["work"]]]` for map-reduce, or `-> Command[Literal[...]]`.
""",
    ),
)  # fmt: skip


def all_rules() -> tuple[Rule, ...]:
    """Return every rule, sorted by code: the analyser's table when it has one."""
    return _analyser_rules() or _FALLBACK


def find_rule(code: str) -> Rule | None:
    """Return the rule called ``code`` (case-insensitive), or ``None``."""
    wanted = code.strip().upper()
    for rule in all_rules():
        if rule.code == wanted:
            return rule
    return None


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


def _analyser_rules() -> tuple[Rule, ...]:
    """Merge the analyser's rule table (codes, slugs, severities) with the docs here.

    The analyser is the authority on which rules exist and how severe they are; the user
    facing summary and docs come from this module, or the analyser's summary for a rule
    this table does not describe yet.
    """
    try:
        module = importlib.import_module("corral.analysis.rules")
    except ImportError:
        return ()
    table: Any = getattr(module, "RULES", None)
    if not table:
        return ()
    entries = table.values() if isinstance(table, dict) else table
    written = {r.code: r for r in _FALLBACK}
    rules: list[Rule] = []
    try:
        for entry in entries:
            code = str(entry.code)
            known = written.get(code)
            summary = known.summary if known else str(getattr(entry, "summary", "") or "")
            docs = known.docs if known else summary
            rules.append(Rule(code, str(entry.slug), str(entry.severity), summary, docs))
    except AttributeError:
        return ()
    return tuple(sorted(rules, key=lambda r: r.code))
