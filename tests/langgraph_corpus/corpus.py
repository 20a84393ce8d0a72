"""The corpus's data model and its scoring (counted as API.md section 16 says).

Each module in ``projects/`` holds one public project: where its wiring comes from
(repository, commit, files, licence), a minimal extract of that wiring (state schema,
nodes as stubs, edges, routers' bodies; re-expressed, never copied, unless the licence
allows it) and the verdicts, judged by reading the project's code: each real defect, and
each claim a linter could make that would be false, with why.

Precision is counted over distinct error findings (code and node set, per graph): an
error is true when it names a real defect. Recall is counted over real defects: one is
found when a finding of any severity with one of its codes names its nodes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import corral.langgraph

__all__ = ["Clean", "Defect", "Project", "Score", "projects", "score"]


@dataclass(frozen=True)
class Defect:
    """A real defect of one graph, as a finding would name it."""

    graph: str
    nodes: tuple[str, ...]
    codes: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Clean:
    """A claim a linter could make on this code that would be false, and why."""

    graph: str
    nodes: tuple[str, ...]
    code: str
    why: str


@dataclass(frozen=True)
class Project:
    """One public project of the corpus."""

    repo: str
    commit: str
    files: tuple[str, ...]
    licence: str
    verbatim: bool
    """True when router bodies are quoted (MIT/Apache/BSD); else they are re-expressed."""
    graphs: Callable[[], dict[str, Any]]
    defects: tuple[Defect, ...] = ()
    clean: tuple[Clean, ...] = ()


@dataclass
class Score:
    """What the analyser claimed on the corpus, judged against the verdicts."""

    true_errors: list[tuple[str, str, str, tuple[str, ...]]] = field(default_factory=list)
    false_errors: list[tuple[str, str, str, tuple[str, ...]]] = field(default_factory=list)
    found: list[tuple[str, Defect]] = field(default_factory=list)
    missed: list[tuple[str, Defect]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        claims = len(self.true_errors) + len(self.false_errors)
        return len(self.true_errors) / claims if claims else 1.0

    @property
    def recall(self) -> float:
        defects = len(self.found) + len(self.missed)
        return len(self.found) / defects if defects else 1.0


def projects() -> Iterator[tuple[str, Project]]:
    """Yield every project of ``projects/`` by module name."""
    from langgraph_corpus import projects as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        yield info.name, module.PROJECT


def _names(defect: Defect, finding: Any) -> bool:
    return finding.code in defect.codes and set(finding.nodes) == set(defect.nodes)


def score() -> Score:
    """Run ``corral.langgraph.check`` on every graph of the corpus and judge its findings."""
    result = Score()
    for name, project in projects():
        for graph_name, graph in project.graphs().items():
            where = f"{name}:{graph_name}"
            try:
                found = corral.langgraph.check(graph)
            except Exception as exc:  # a crash is a finding of its own: report it
                result.failures.append((where, f"{type(exc).__name__}: {exc}"))
                continue
            defects = [d for d in project.defects if d.graph == graph_name]
            errors = {(d.code, tuple(sorted(d.nodes))): d for d in found if d.severity == "error"}
            for (code, nodes), finding in errors.items():
                claim = (where, code, finding.message, nodes)
                true = any(_names(defect, finding) for defect in defects)
                (result.true_errors if true else result.false_errors).append(claim)
            for defect in defects:
                named = any(_names(defect, f) for f in found)
                (result.found if named else result.missed).append((where, defect))
    return result
