"""examples/research_team: lint, draw, run with an interrupt and a resume, streamed tokens.

The example's package is imported the way ``python -m research_team.supervisor`` (run from
``examples/``) imports it; retries wait through ``corral.retry``'s sleep functions, which
these tests replace, so nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from corral import MemorySaver, Resume
from corral import retry as retry_module
from corral.cli import main

ROOT = Path(__file__).resolve().parents[2]
TEAM = ROOT / "examples" / "research_team"
SUPERVISOR = str(TEAM / "supervisor.py")


@pytest.fixture
def team(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Import the example package; replace the retry waits; return its supervisor module."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(retry_module, "sleep", waits.append)
    monkeypatch.setattr(retry_module, "async_sleep", no_wait)
    import research_team.supervisor as supervisor

    supervisor.waits = waits
    return supervisor


def test_the_team_runs_researches_writes_and_waits_for_approval(team: Any) -> None:
    """The flaky search is retried, the writer pauses at write/approve, yes finishes it."""
    from research_team.services import FakeServices

    services = FakeServices()
    app = team.graph.compile(checkpointer=MemorySaver())
    run = app.invoke({"topic": "tides", **team.EMPTY}, thread_id="t", deps=services)
    assert run.status == "interrupted"
    [pending] = run.interrupts
    assert pending.node == "write/approve" and pending.id.startswith("write/")
    assert run.state["notes"] == ["3 sources on tides history", "3 sources on tides open questions"]
    assert services.calls == {"tides history": 2, "tides open questions": 2}  # one retry each
    assert len(team.waits) == 2
    paused = app.get_state("t", subgraphs=True)
    assert paused.subgraphs["write"].next == ("approve",)
    done = app.invoke(Resume("yes"), thread_id="t", deps=services)
    assert done.status == "done" and done.state["approved"] is True
    assert done.state["report"].startswith("Report on tides")
    # every node run anywhere counted once: supervise x2, 2x(plan, search), draft, approve
    assert done.steps == 8


def test_a_no_sends_the_draft_back(team: Any) -> None:
    """A "no: why" answer loops the writer back to draft (guarded), then pauses again."""
    app = team.graph.compile(checkpointer=MemorySaver())
    app.invoke({"topic": "tides", **team.EMPTY}, thread_id="t")
    again = app.invoke(Resume("no: too short"), thread_id="t")
    assert again.status == "interrupted" and again.interrupts[0].node == "write/approve"
    done = app.invoke(Resume("yes"), thread_id="t")
    assert done.state["approved"] is True


def test_main_streams_the_tokens_before_the_approval(
    team: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """main() prints each token as it comes, then the approval and the report."""
    state = asyncio.run(team.main("tides", "yes"))
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        "[research/search] 3 sources on tides history",
        "[research/search] 3 sources on tides open questions",
        "Report on tides: the notes agree; more study is needed. ",
    ]
    assert out[3] == "[write/approve] approve? 'yes' or 'no: why' -> yes"
    assert state["approved"] is True


def test_lint_and_draw(capsys: pytest.CaptureFixture[str]) -> None:
    """corral lint finds nothing in the package; corral draw shows both children."""
    assert main(["lint", str(TEAM)]) == 0
    capsys.readouterr()
    assert main(["draw", SUPERVISOR]) == 0
    out = capsys.readouterr().out
    assert 'subgraph research["research"]' in out and 'subgraph write["write"]' in out


def test_corral_run_pauses_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """corral run exits 3 at write/approve and finishes with --resume yes."""
    monkeypatch.setattr(retry_module, "sleep", lambda seconds: None)

    async def no_wait(seconds: float) -> None:
        return None

    monkeypatch.setattr(retry_module, "async_sleep", no_wait)
    db = str(tmp_path / "team.sqlite")
    first = ["run", SUPERVISOR, "--db", db, "--thread", "t1"]
    code = main([*first, "--input", '{"topic": "tides"}'])  # as the example's docstring says
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert "write/approve" in captured.err
    assert main([*first, "--resume", "yes"]) == 0
    final = json.loads(capsys.readouterr().out)
    assert final["approved"] is True and final["report"].startswith("Report on tides")
    sys.modules.pop("research_team.supervisor", None)
