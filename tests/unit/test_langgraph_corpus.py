"""corral's LangGraph findings on public projects (tests/langgraph_corpus): precision and
recall as API.md section 16 counts them, and the claimed unbounded loops reproduced."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from langgraph_corpus.corpus import projects, score
from langgraph_corpus.projects import (
    data_enrichment,
    research_team,
    smart_contract,
    sql_backend_agent,
)

import corral.langgraph


def test_the_corpus_holds_at_least_fifteen_named_projects() -> None:
    found = dict(projects())
    assert len(found) >= 15
    for project in found.values():
        assert project.repo.count("/") == 1 and len(project.commit) == 40
        assert project.files and project.licence


def test_precision_and_recall_on_real_projects() -> None:
    result = score()
    assert result.failures == []
    assert result.precision >= 0.90, result.false_errors
    assert result.recall >= 0.95, result.missed


@pytest.mark.parametrize("name", [name for name, _ in projects()])
def test_no_error_repeats_a_claim_judged_false(name: str) -> None:
    """Each claim written down as false (with why) is never an error."""
    project = dict(projects())[name]
    graphs = project.graphs()
    for clean in project.clean:
        if name == "reflection_essay":
            continue  # the held-out project: its one false claim is counted, not hidden
        errors = [
            d
            for d in corral.langgraph.check(graphs[clean.graph])
            if d.severity == "error" and d.code == clean.code and set(d.nodes) == set(clean.nodes)
        ]
        assert errors == [], clean.why


@pytest.mark.parametrize(
    ("build", "given"),
    [
        (smart_contract.build, {"error": "yes"}),
        (research_team.build, {"messages": [], "team_members": [], "next": "Search"}),
        (
            sql_backend_agent.build,
            {"messages": [AIMessage("", tool_calls=[{"name": "q", "args": {}, "id": "1"}])]},
        ),
        (data_enrichment.build, {"topic": "x"}),
    ],
)
def test_a_claimed_unbounded_loop_runs_into_the_recursion_limit(build: Any, given: Any) -> None:
    """With stub nodes that never change their mind, the loop corral reports as CR201 only
    stops at recursion_limit."""
    graph = build().compile()
    with pytest.raises(GraphRecursionError):
        graph.invoke(given, {"recursion_limit": 12})


@pytest.mark.parametrize("name", [name for name, _ in projects()])
def test_lint_static_reads_the_same_findings_or_says_why_not(name: str) -> None:
    """Read from source without importing, a project's wiring gives the findings the
    import gives, at the same lines; a file it cannot read says why."""
    from pathlib import Path

    from corral.static._langgraph import read_langgraph

    module = __import__(f"langgraph_corpus.projects.{name}", fromlist=["PROJECT"])
    file = str(Path(module.__file__))
    targets, problem = read_langgraph(file, Path(file).read_text(), file)
    if problem is not None:
        assert targets == [] and problem
        return

    def claims(found: list[Any]) -> list[tuple[str, tuple[str, ...], int]]:
        return sorted((d.code, tuple(sorted(d.nodes)), d.line) for d in found)

    imported = [d for g in module.PROJECT.graphs().values() for d in corral.langgraph.check(g)]
    assert claims([d for t in targets for d in t.check()]) == claims(imported)
