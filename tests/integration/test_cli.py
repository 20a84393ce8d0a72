"""The real ``corral`` command in a subprocess: every exit code and output format.

Each test runs ``python -m corral`` once from this folder, on the modules in
``cli_fixtures/`` (a guarded loop, a broken graph, a module compiled at import on a broken
graph, a warning-only graph, one that fails to import and one that never mentions corral).
Everything else is tested in-process through ``main([...])`` in test_cli_main.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .test_cli_threads import command_after, shell_words

HERE = Path(__file__).resolve().parent
FIXTURES = "cli_fixtures"

LINT_FINDINGS = """\
cli_fixtures/broken.py:21:1: CR201 cycle ask → ask has no guarded route, so only max_steps stops it; add a guard to one of its routes, e.g. Guard('ask', max=3, otherwise=END) on router 'again' (ask → ask); the loop is bounded by hand by the counter 'n' (node 'ask' increments it, router 'again' compares it with a bound), which corral cannot check: replace the counter with the Guard
cli_fixtures/broken.py:26:1: CR103 node 'orphan' is not reachable from the start; route to it or remove it
cli_fixtures/compiled_broken.py:21:1: CR101 router 'route' routes to 'replyy', which is not a node; fix the name (did you mean 'reply'?) or register a node named 'replyy'
cli_fixtures/warned.py:24:1: CR202 Guard('fallback') on router 'after_check' guards the route check → fallback, which is on no cycle; remove it (only cycles need guards; max_runs= caps a node)
"""  # noqa: E501


def corral(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    """Run ``python -m corral ARGS`` and capture its output."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "corral", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def test_lint_folder_with_a_module_that_fails_to_import_exits_2() -> None:
    """The other modules are still linted; the failure is one stderr line naming the file."""
    proc = corral("lint", FIXTURES)
    assert proc.stdout == LINT_FINDINGS + (
        "Found 3 errors and 1 warning in 7 graphs (7 files; 1 could not be loaded).\n"
    )
    assert proc.stderr == (
        "error: cannot import cli_fixtures/fails_import.py: ModuleNotFoundError: "
        "No module named 'corral_tools_that_are_not_installed'\n"
    )
    assert proc.returncode == 2


def test_lint_errors_exit_1_once_the_broken_import_is_excluded() -> None:
    """``--exclude`` skips a file by its path; the errors left give exit code 1."""
    proc = corral("lint", FIXTURES, "--exclude", "cli_fixtures/fails_import.py")
    assert proc.stdout == LINT_FINDINGS + ("Found 3 errors and 1 warning in 7 graphs (6 files).\n")
    assert proc.stderr == ""
    assert proc.returncode == 1


def test_lint_warnings_alone_exit_0() -> None:
    """A warning is printed but does not fail the run; a clean module adds nothing."""
    proc = corral("lint", f"{FIXTURES}/good.py", f"{FIXTURES}/warned.py")
    assert proc.stdout.splitlines() == [
        LINT_FINDINGS.splitlines()[-1],
        "Found 1 warning in 2 graphs (2 files).",
    ]
    assert proc.returncode == 0


def test_lint_json_is_a_list_of_diagnostic_fields() -> None:
    """``--format json`` prints a list of objects with the Diagnostic fields, in order."""
    proc = corral("lint", FIXTURES, "--format", "json", "--select", "CR2")
    assert proc.returncode == 2  # the module that fails to import still counts
    found = json.loads(proc.stdout)
    assert [list(d) for d in found] == [
        ["code", "slug", "severity", "message", "nodes", "file", "line", "col"]
    ] * 2
    assert [(d["code"], d["slug"], d["severity"], d["nodes"]) for d in found] == [
        ("CR201", "unguarded-cycle", "error", ["ask"]),
        ("CR202", "useless-guard", "warning", ["check", "fallback"]),
    ]
    assert (found[0]["file"], found[0]["line"], found[0]["col"]) == (
        "cli_fixtures/broken.py",
        21,
        1,
    )


def test_lint_sarif_has_rule_metadata_and_results_on_lines() -> None:
    """``--format sarif`` is SARIF 2.1.0: every rule described, each result located."""
    proc = corral("lint", FIXTURES, "--format", "sarif", "--exclude", "fails_import.py")
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "corral"
    rules = driver["rules"]
    from corral.analysis import RULES

    assert [r["id"] for r in rules] == sorted(RULES)  # every registered rule, in code order
    for rule in rules:
        assert set(rule) >= {"id", "name", "shortDescription", "help", "defaultConfiguration"}
        assert rule["help"]["text"]
        # helpUri must be an absolute URI in SARIF; corral has no published docs site yet.
        assert "helpUri" not in rule
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning")
    by_id = {r["id"]: r for r in rules}
    assert by_id["CR201"]["name"] == "unguarded-cycle"
    assert by_id["CR202"]["defaultConfiguration"]["level"] == "warning"
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("CR201", "error"),
        ("CR103", "error"),
        ("CR101", "error"),
        ("CR202", "warning"),
    ]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {
        "uri": "cli_fixtures/broken.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert location["region"] == {"startLine": 21, "startColumn": 1}
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_lint_github_prints_workflow_annotations() -> None:
    """``--format github`` prints ``::error``/``::warning`` commands GitHub shows on lines."""
    proc = corral(
        "lint", FIXTURES, "--format", "github", "--ignore", "CR1", "--exclude", "fails_import.py"
    )
    assert proc.stdout.splitlines() == [
        "::error file=cli_fixtures/broken.py,line=21,col=1,title=CR201::cycle ask → ask has no "
        "guarded route, so only max_steps stops it; add a guard to one of its routes, e.g. "
        "Guard('ask', max=3, otherwise=END) on router 'again' (ask → ask); the loop is bounded "
        "by hand by the counter 'n' (node 'ask' increments it, router 'again' compares it with "
        "a bound), which corral cannot check: replace the counter with the Guard",
        "::warning file=cli_fixtures/warned.py,line=24,col=1,title=CR202::Guard('fallback') on "
        "router 'after_check' guards the route check → fallback, which is on no cycle; remove "
        "it (only cycles need guards; max_runs= caps a node)",
    ]
    assert proc.returncode == 1


def test_a_missing_path_is_a_usage_error() -> None:
    """A path that is neither a file, a folder nor a module exits 2 with one error,
    wrapped to 80 columns."""
    proc = corral("lint", "no_such_dir/agent.py")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "error: 'no_such_dir/agent.py' does not exist; give a .py file, a folder or a\n"
        "  dotted module name\n"
    )


def test_version() -> None:
    """``python -m corral --version`` names the program and its version."""
    proc = corral("--version")
    assert (proc.returncode, proc.stdout) == (0, "corral 0.1.0\n")


def test_draw_prints_a_mermaid_flowchart_with_guard_bounds() -> None:
    """``draw`` shows the guarded route with its bound and where the guard sends the run."""
    proc = corral("draw", f"{FIXTURES}/good.py")
    assert proc.returncode == 0
    assert proc.stdout == (
        "---\n"
        'title: "good — at most 8 node runs"\n'
        "---\n"
        "flowchart TD\n"
        '    __start__(["START"])\n'
        '    draft["draft"]\n'
        '    critique["critique"]\n'
        '    revise["revise"]\n'
        '    __end__(["END"])\n'
        "    __start__ --> draft\n"
        "    draft --> critique\n"
        "    revise --> critique\n"
        '    critique -.->|"≤3"| revise\n'
        "    critique -.-> __end__\n"
        '    critique -.->|"revise used up"| __end__\n'
    )


def test_cycles_marks_an_unguarded_cycle() -> None:
    """``cycles`` lists each elementary cycle; one with no guard says so and names CR201."""
    proc = corral("cycles", f"{FIXTURES}/broken.py")
    assert proc.returncode == 0
    assert proc.stdout == (
        f"{FIXTURES}/broken.py:g: 1 cycle\n"
        "  ask → ask    UNGUARDED (CR201): add a Guard to one of its routes\n"
        "bound: unbounded: a cycle has no guarded route (CR201)\n"
    )


def test_run_finishes_prints_the_state_and_exits_0(tmp_path: Path) -> None:
    """``run`` prints the final state as JSON on stdout and one progress line per step."""
    db = tmp_path / "c.sqlite"
    proc = corral(
        "run", f"{FIXTURES}/good.py", "--input", '{"score": 40}', "--db", str(db), "--thread", "t"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"score": 80}
    lines = proc.stderr.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    start = lines.index("[1/20] draft")  # the heading, wrapped at word breaks, comes first
    assert " ".join(line.strip() for line in lines[:start]) == (
        f"running cli_fixtures/good.py:g on thread t (checkpoints: {db}, max_steps=20)"
    )
    assert lines[start:] == [
        "[1/20] draft",
        "[2/20] critique",
        "        critique → revise (guard 1/3)",
        "[3/20] revise",
        "[4/20] critique",
        "        critique → revise (guard 2/3)",
        "[5/20] revise",
        "[6/20] critique",
        "done: 6 steps on thread t",
    ]
    assert db.exists()


def test_run_waits_for_a_person_exits_3_and_the_printed_command_resumes(tmp_path: Path) -> None:
    """An interrupt exits 3 with the payload and the exact resume command; running it ends."""
    db = tmp_path / "c.sqlite"
    proc = corral(
        "run", f"{FIXTURES}/approval.py", "--input", '{"request": "refund"}', "--db", str(db)
    )
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout) == {"request": "refund", "draft": "reply to refund"}
    lines = proc.stderr.splitlines()
    thread = lines[0].split(" on thread ")[1].split()[0]
    heading = "resume with (VALUE is parsed as JSON when it is JSON):"
    asking = lines[lines.index(heading) - 1]
    assert asking.startswith("  review asks (id ") and asking.endswith(
        '): {"draft": "reply to refund"}'
    )
    assert lines[lines.index(heading) - 2] == f"waiting for a person on thread {thread}:"
    # The command ends stderr; a long --db path continues it on more lines, each in 80 columns
    printed = command_after(heading, proc.stderr)
    assert printed == lines[-len(printed) :]
    assert all(len(line) <= 80 for line in printed), printed
    command = shell_words(printed)
    assert command == ["corral", "run", "cli_fixtures/approval.py", "--thread", thread,
                       "--db", str(db), "--resume", "VALUE"]  # fmt: skip
    resumed = corral(*command[1:-1], "yes")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["approved"] is True


def test_run_stopped_by_the_step_cap_exits_1_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    """A cap ends with exit 1 and a command that continues the thread with a bigger cap."""
    db = tmp_path / "c.sqlite"
    proc = corral(
        "run",
        f"{FIXTURES}/good.py",
        "--input",
        '{"score": 40}',
        "--db",
        str(db),
        "--thread",
        "capped",
        "--max-steps",
        "3",
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    heading = "the state reached is saved; continue with:"
    printed = command_after(heading, proc.stderr)
    assert proc.stderr.splitlines()[-len(printed) - 3 :] == [
        "error: stopped after 3 steps (max_steps=3) before running 'critique'; raise",
        "  max_steps or add a guard",
        heading,
        *printed,
    ]
    assert all(len(line) <= 80 for line in printed), printed
    assert shell_words(printed) == ["corral", "run", "cli_fixtures/good.py", "--thread",
                                    "capped", "--db", str(db), "--max-steps", "6"]  # fmt: skip
