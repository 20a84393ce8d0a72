"""The examples run offline, print their results, pass ``corral lint``; the broken ones fail it.

Each example is imported from its file (as ``python examples/x.py`` would run it) and driven
through its own functions with fake tools, so these tests also show how to test an agent.
The broken examples record their exact ``corral lint`` output in a comment at the top; the
test runs the recorded command and compares.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BROKEN = sorted((EXAMPLES / "broken").glob("*.py"))


@cache
def load(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` once, under a private module name."""
    path = EXAMPLES / f"{name}.py"
    module_name = f"corral_example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def corral(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m corral ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "corral", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- draft_loop ---------------------------------------------------------------------------


def test_draft_loop_follows_the_counting_convention() -> None:
    """40 points plus 20 per revision: six node runs, the guarded route taken twice."""
    draft_loop = load("draft_loop")
    run = draft_loop.write("Guards")
    assert run.status == "done"
    assert run.steps == 6
    assert run.state["score"] == 80
    assert run.state["drafts"] == ["Guards (v1)", "Guards (v2)", "Guards (v3)"]
    assert run.guards == {("critique", "revise"): 2}
    assert [r.node for r in run.trace] == [
        "draft",
        "critique",
        "revise",
        "critique",
        "revise",
        "critique",
    ]


def test_draft_loop_guard_stops_a_critic_that_is_never_satisfied() -> None:
    """A draft that never improves gets three revisions, then the guard ends the run."""
    draft_loop = load("draft_loop")
    run = draft_loop.write("Stuck", draft_loop.FakeWriter(start=10, step=0))
    assert run.status == "done"
    assert run.guards == {("critique", "revise"): 3}
    assert run.steps == 8  # draft + 4 critiques + 3 revisions
    assert len(run.state["drafts"]) == 4 and run.state["score"] == 10


def test_draft_loop_main_prints_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    """``main()`` prints the final draft, the score, the step count and the guard usage."""
    load("draft_loop").main()
    assert capsys.readouterr().out.splitlines() == [
        "final draft: Why every loop needs a guard (v3)",
        "score: 80 after 6 steps (3 drafts)",
        "guard critique → revise used 2 of 3",
    ]


def test_draft_loop_runs_as_a_script() -> None:
    """``python examples/draft_loop.py`` (the README's main job) exits 0 and prints the result."""
    proc = subprocess.run(
        [sys.executable, "examples/draft_loop.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "score: 80 after 6 steps" in proc.stdout


# --- incident_response ----------------------------------------------------------------------


@pytest.fixture
def incident_app(tmp_path: Path) -> Iterator[Any]:
    from corral import SqliteSaver

    with SqliteSaver(str(tmp_path / "incidents.sqlite")) as saver:
        yield load("incident_response").build(saver)


def test_incident_investigations_merge_through_the_reducer(incident_app: Any) -> None:
    """The three investigations run in one superstep; every finding is kept, in order."""
    incident = load("incident_response")
    run = incident_app.invoke({"incident": "checkout API returns 500s"}, deps=incident.FakeTools())
    assert run.status == "interrupted"
    assert run.state["severity"] == "sev1"
    assert [f.split(":")[0] for f in run.state["findings"]] == ["logs", "metrics", "deploys"]
    [request] = run.interrupts
    assert request.node == "approve"
    assert request.value["proposal"] == "roll back api to v2.30"


def test_incident_denial_loops_back_then_approval_applies(incident_app: Any) -> None:
    """A denial revises the proposal with the reason; a later yes applies it."""
    incident = load("incident_response")
    tools = incident.FakeTools()
    run, asked = incident.respond(incident_app, "db down", ["no: keep the tax rules", "yes"], tools)
    assert run.status == "done"
    assert [a["proposal"] for a in asked] == [
        "roll back api to v2.30",
        "cap api workers at 8 and raise the db pool to 64",
    ]
    assert run.state["feedback"] == ["keep the tax rules"]
    assert tools.applied == ["cap api workers at 8 and raise the db pool to 64"]
    assert tools.paged == []
    assert run.guards == {("approve", "propose"): 1}
    assert run.steps == 9  # triage, 3 investigations, propose, approve, propose, approve, apply


def test_incident_escalates_when_the_approval_guard_is_used_up(incident_app: Any) -> None:
    """Three denials: two revisions, then the guard sends the run to escalate."""
    incident = load("incident_response")
    tools = incident.FakeTools()
    run, asked = incident.respond(incident_app, "checkout down", ["no"] * 5, tools)
    assert run.status == "done"
    assert len(asked) == 3
    assert run.guards == {("approve", "propose"): 2}
    assert tools.paged == ["checkout down"] and tools.applied == []
    assert run.state["outcome"] == "paged the on-call engineer about 'checkout down'"


def test_incident_resumes_from_sqlite_in_a_fresh_app(tmp_path: Path) -> None:
    """A pending approval survives the app: a new app on the same file answers it."""
    from corral import Resume, SqliteSaver

    incident = load("incident_response")
    path = str(tmp_path / "resume.sqlite")
    with SqliteSaver(path) as saver:
        first = incident.build(saver)
        run = first.invoke(
            {"incident": "checkout down"}, thread_id="inc-1", deps=incident.FakeTools()
        )
        assert run.status == "interrupted"

    tools = incident.FakeTools()
    with SqliteSaver(path) as saver:
        later = incident.build(saver)
        run = later.invoke(Resume("yes"), thread_id="inc-1", deps=tools)
    assert run.status == "done"
    assert tools.applied == ["roll back api to v2.30"]
    assert len(run.state["findings"]) == 3


def test_incident_main_prints_both_outcomes(capsys: pytest.CaptureFixture[str]) -> None:
    """``main()`` shows the findings, each approval asked, and both endings."""
    load("incident_response").main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[sev1] checkout API returns 500s"
    assert out[1:4] == [
        "  logs: spike of 'connection pool exhausted' since 09:12",
        "  metrics: p99 latency 4.1s (normally 180ms), db connections at limit",
        "  deploys: api v2.31 deployed 09:10 (raised workers 8 -> 32)",
    ]
    assert out[4:] == [
        "  asked to approve 'roll back api to v2.30': no",
        "  asked to approve 'cap api workers at 8 and raise the db pool to 64': yes",
        "  -> applied: cap api workers at 8 and raise the db pool to 64 (9 steps)",
        "denied 3 times (revisions used: 2 of 2)",
        "  -> paged the on-call engineer about 'checkout API returns 500s' (11 steps)",
    ]


# --- map_reduce ----------------------------------------------------------------------------


def test_map_reduce_sends_one_run_per_document() -> None:
    """Each non-empty document gets its own summarise run; combine runs once, after all."""
    map_reduce = load("map_reduce")
    run = map_reduce.summarise_all(map_reduce.DOCUMENTS)
    assert run.status == "done"
    nodes = [r.node for r in run.trace]
    assert nodes.count("summarise") == 3 and nodes.count("combine") == 1
    assert nodes[0] == "split" and nodes[-1] == "combine"
    assert run.steps == 5 and run.supersteps == 3
    assert sorted(s.split(":")[0] for s in run.state["summaries"]) == [
        "faq.md",
        "postmortem.md",
        "roadmap.md",
    ]
    assert run.state["report"].startswith("3 documents\n- faq.md: Guards bound every loop.")


def test_map_reduce_with_no_documents_ends_after_split() -> None:
    """No document means no ``Send``: an empty fan-out ends the run after ``split``."""
    map_reduce = load("map_reduce")
    run = map_reduce.summarise_all([])
    assert run.status == "done"
    assert [r.node for r in run.trace] == ["split"]


def test_map_reduce_main_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    load("map_reduce").main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 documents"
    assert out[-1] == "(5 steps in 3 supersteps)"


# --- support_router ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ticket", "path", "answer"),
    [
        (
            "Where is the refund for invoice inv 42?",
            ["classify", "billing", "repair", "billing", "reply"],
            "Hello! INV-0042 was refunded on 3 March; allow 5 working days.",
        ),
        (
            "The app shows error E42 after the update",
            ["classify", "technical", "reply"],
            "Hello! Error E42 means the sync token expired: sign out and in again.",
        ),
        (
            "When are you open?",
            ["classify", "general", "reply"],
            "Hello! We are open 9-17 CET, Monday to Friday.",
        ),
        (
            "Refund for invoice INV#7 please",
            ["classify", "billing", "repair", "billing", "repair", "handoff"],
            "A person will follow up (tool failed: billing: no invoice 'INV-0007').",
        ),
    ],
)
def test_support_router_routes_repairs_and_hands_off(
    ticket: str, path: list[str], answer: str
) -> None:
    """Each ticket takes the route its category and tool results call for."""
    support = load("support_router")
    tools = support.fake_tools()
    run = support.handle(ticket, tools)
    assert run.status == "done"
    assert [r.node for r in run.trace] == path
    assert run.state["answer"] == answer


def test_support_router_calls_the_billing_client_from_deps() -> None:
    """The billing node calls the client passed in ``deps``: first raw, then repaired."""
    support = load("support_router")
    tools = support.fake_tools()
    support.handle("Where is the refund for invoice inv 42?", tools)
    assert tools.billing.calls == ["inv 42", "INV-0042"]


def test_support_router_main_prints_every_ticket(capsys: pytest.CaptureFixture[str]) -> None:
    load("support_router").main()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 * len(load("support_router").TICKETS)
    assert out[1] == "  classify → billing → repair → billing → reply"


# --- lint -------------------------------------------------------------------------------------


def test_examples_pass_lint() -> None:
    """``corral lint examples --exclude examples/broken`` finds nothing and exits 0."""
    proc = corral("lint", "examples", "--exclude", "examples/broken")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CR" not in proc.stdout


def read_recorded(path: Path) -> tuple[list[str], list[str], int]:
    """Return the command, the output lines and the exit code recorded at the top of ``path``.

    The header is a run of comment lines: ``# $ corral lint ...``, the output, ``# exit N``.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# $ "), f"{path} must start with '# $ corral lint ...'"
    command = shlex.split(lines[0].removeprefix("# $ "))
    output: list[str] = []
    for line in lines[1:]:
        assert line.startswith("#"), f"{path}: the recorded output must end with '# exit N'"
        text = line.removeprefix("#").removeprefix(" ")
        if text.startswith("exit ") and text.removeprefix("exit ").isdigit():
            return command, output, int(text.removeprefix("exit "))
        output.append(text)
    raise AssertionError(f"{path}: no '# exit N' line after the recorded output")


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_example_lint_output_is_as_recorded(path: Path) -> None:
    """The lint output of each broken example equals the output recorded in its header."""
    command, expected, code = read_recorded(path)
    assert command[:2] == ["corral", "lint"]
    proc = corral(*command[1:])
    assert proc.stdout.splitlines() == expected, proc.stderr
    assert proc.returncode == code


def test_every_kind_of_broken_example_is_there() -> None:
    """The four bugs users ship are each shown, with the code the linter gives them."""
    codes = {}
    for path in BROKEN:
        _, expected, _ = read_recorded(path)
        codes[path.stem] = {word for line in expected for word in line.split() if word[:2] == "CR"}
    assert "CR201" in codes["unbounded_approval"]
    assert "CR103" in codes["dead_node"]
    assert "CR301" in codes["missing_reducer"]
    assert "CR101" in codes["typo_route"]


def test_the_first_example_of_corral_help_exits_0() -> None:
    """The first command ``corral --help`` shows, run from the repository, exits 0."""
    helped = corral("--help")
    lines = helped.stdout.split("examples:\n", 1)[1].splitlines()
    first = shlex.split(lines[0].strip())
    assert first[0] == "corral"
    proc = corral(*first[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
