"""The command line in-process, through ``main([...])``: options, selection, loading rules.

The subprocess tests (test_cli.py) cover the exit codes and formats end to end; these cover
the rest quickly. Each test runs from this folder, so paths print as ``cli_fixtures/...``.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from corral.cli import main

HERE = Path(__file__).resolve().parent

MODULE = """\
from typing import Literal, TypedDict

from corral import END, End, Graph


class State(TypedDict):
    n: int


g = Graph(State)


@g.node(start=True)
def ask(state: State) -> dict[str, object]:
    return {}


@g.router("ask")
def again(state: State) -> Literal["ask"] | End:
    return END
"""


@pytest.fixture(autouse=True)
def _here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def codes(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("cli_fixtures/")]


@pytest.mark.parametrize("command", ["lint", "draw", "cycles", "run"])
def test_every_command_has_help_with_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral COMMAND --help`` exits 0 and shows examples of the command."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"usage: corral {command}" in out
    assert "examples:" in out
    assert f"corral {command} " in out.split("examples:")[1]


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """``corral`` alone is a usage error: the help goes to stderr, the exit code is 2."""
    assert main([]) == 2
    assert "lint" in capsys.readouterr().err


def test_bad_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors exit 2 through main(), never as SystemExit."""
    assert main(["lint", "--format", "xml", "cli_fixtures"]) == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_ignore_by_prefix_and_exit_code_counts_only_what_is_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--ignore CR2,CR103`` hides every cycle rule and dead nodes; nothing left exits 0."""
    code, out, _ = lint(capsys, "cli_fixtures/broken.py")
    assert (code, codes(out)) == (1, ["CR201", "CR103"])
    code, out, _ = lint(capsys, "cli_fixtures/broken.py", "--ignore", "CR2,cr103")
    assert (code, codes(out)) == (0, [])
    assert out.splitlines()[-1] == "No problems found in 1 graph (1 file)."


def test_select_keeps_only_matching_codes(capsys: pytest.CaptureFixture[str]) -> None:
    """``--select CR1`` keeps structure rules only; repeated options add up."""
    code, out, _ = lint(capsys, "cli_fixtures", "--select", "CR1", "--exclude", "fails_import.py")
    assert (code, codes(out)) == (1, ["CR103", "CR101"])
    code, out, _ = lint(
        capsys,
        "cli_fixtures",
        "--select",
        "CR101",
        "--select",
        "CR202",
        "--exclude",
        "fails_import.py",
    )
    assert codes(out) == ["CR101", "CR202"]


def test_the_longer_prefix_wins_between_select_and_ignore(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--ignore CR2 --select CR201`` still reports CR201 (flake8's rule)."""
    code, out, _ = lint(capsys, "cli_fixtures/broken.py", "--ignore", "CR2", "--select", "CR201")
    assert (code, codes(out)) == (1, ["CR201"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("XX1", "--select 'XX1' is not a rule code or prefix; write e.g. CR201 or CR2"),
        ("CR9", "--select 'CR9' matches no rule; the codes are CR101, CR102,"),
    ],
)
def test_a_bad_code_is_a_usage_error(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value that names no rule exits 2 before anything is imported."""
    code, out, err = lint(capsys, "cli_fixtures/good.py", "--select", value)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {message}")


def test_explain_prints_the_rule_docs(capsys: pytest.CaptureFixture[str]) -> None:
    """``--explain CR201`` prints the code, slug, severity, docs and a link."""
    code, out, _ = lint(capsys, "--explain", "cr201")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "CR201 unguarded-cycle (error)"
    assert "Guard(" in out
    assert lines[-1] == "More: docs/rules.md#cr201"


def test_explain_an_unknown_code_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown code names the codes that exist."""
    code, _, err = lint(capsys, "--explain", "CR999")
    assert code == 2
    assert err.startswith("error: 'CR999' is not a rule code; the codes are CR101")


def test_lint_without_a_path_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Linting nothing is a mistake, not a clean result."""
    code, _, err = lint(capsys)
    assert code == 2
    assert "give at least one PATH" in err


def test_verbose_shows_the_traceback_of_a_failed_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without ``--verbose`` one line; with it, the traceback too."""
    code, _, err = lint(capsys, "cli_fixtures/fails_import.py")
    assert code == 2
    assert "Traceback" not in err
    code, _, err = lint(capsys, "cli_fixtures/fails_import.py", "--verbose")
    assert code == 2
    assert "Traceback (most recent call last)" in err
    assert err.rstrip().splitlines()[-1].startswith("error: cannot import")


def test_a_dotted_module_name_is_linted(capsys: pytest.CaptureFixture[str]) -> None:
    """``corral lint package.module`` imports by name; a package is searched too."""
    code, out, _ = lint(capsys, "cli_fixtures.good")
    assert code == 0
    assert out == "No problems found in 1 graph (1 file).\n"
    code, out, _ = lint(capsys, "cli_fixtures.broken")
    assert codes(out) == ["CR201", "CR103"]


def test_json_of_a_clean_module_is_an_empty_list(capsys: pytest.CaptureFixture[str]) -> None:
    """No findings prints ``[]`` (and no summary line), exit 0."""
    code, out, _ = lint(capsys, "cli_fixtures/good.py", "--format", "json")
    assert (code, json.loads(out)) == (0, [])


def test_sarif_reports_a_failed_import_as_a_tool_notification(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Code scanning sees that the run was incomplete, and which file failed."""
    code, out, _ = lint(capsys, "cli_fixtures/fails_import.py", "--format", "sarif")
    assert code == 2
    [invocation] = json.loads(out)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("cannot import cli_fixtures/fails_import.py")


def test_github_format_reports_load_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A module that fails to import is an annotation on the file too."""
    code, out, _ = lint(capsys, "cli_fixtures/fails_import.py", "--format", "github")
    assert code == 2
    assert out.startswith(
        "::error file=cli_fixtures/fails_import.py,title=load error::cannot import "
        "cli_fixtures/fails_import.py: ModuleNotFoundError: No module named "
    )


def test_folders_skip_hidden_folders_venvs_and_caches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``src/agent.py`` is linted: hidden, venv, site-packages and __pycache__ are not."""
    for folder in ("src", ".hidden", "venv", "lib/site-packages", "src/__pycache__", "build"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "src" / "agent.py").write_text(MODULE)
    for folder in (".hidden", "venv", "lib/site-packages", "src/__pycache__"):
        (tmp_path / folder / "agent_copy.py").write_text(MODULE)
    (tmp_path / "build" / "skipped.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    code, out, _ = lint(capsys, ".", "--exclude", "build")
    assert code == 1
    assert out.splitlines() == [
        out.splitlines()[0],
        "Found 1 error in 1 graph (1 file).",
    ]
    assert out.startswith("src/agent.py:19:1: CR201 ")


def test_paths_are_relative_when_under_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From inside the folder paths are relative; from elsewhere they are absolute."""
    (tmp_path / "pkg").mkdir()
    agent = tmp_path / "pkg" / "loop_agent.py"
    agent.write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    code, out, _ = lint(capsys, "pkg/loop_agent.py")
    assert code == 1
    assert out.startswith("pkg/loop_agent.py:19:1: CR201 ")
    monkeypatch.chdir(HERE)
    code, out, _ = lint(capsys, str(agent))
    assert out.startswith(f"{agent}:19:1: CR201 ")


def test_exclude_matches_globs_names_and_folder_prefixes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A pattern matches a file's path, its name, or one of its parent folders."""
    code, out, _ = lint(capsys, "cli_fixtures", "--exclude", "*_import.py", "--exclude", "b*")
    assert code == 1
    assert "cli_fixtures/broken.py" not in out and "cli_fixtures/compiled_broken.py:" in out
    code, out, _ = lint(capsys, "cli_fixtures", "--exclude", "./cli_fixtures/")
    assert (code, out) == (0, "No graphs found (0 files).\n")


def test_a_name_picks_one_graph(capsys: pytest.CaptureFixture[str]) -> None:
    """``PATH:name`` lints (or draws) only that graph; an unknown name lists the others."""
    code, out, _ = lint(capsys, "cli_fixtures/two_graphs.py:second")
    assert (code, out) == (0, "No problems found in 1 graph (1 file).\n")
    code, _, err = lint(capsys, "cli_fixtures/two_graphs.py:third")
    assert code == 2
    assert err == (
        "error: cli_fixtures/two_graphs.py defines no graph called 'third' (it has:\n"
        "  first, second)\n"
    )


def test_a_compiled_app_and_its_graph_are_one_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``g`` and ``app = g.compile()`` are linted once, and both names pick the graph."""
    code, out, _ = lint(capsys, "cli_fixtures/good.py:app")
    assert (code, out) == (0, "No problems found in 1 graph (1 file).\n")
    assert main(["draw", "cli_fixtures/good.py:app", "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith('digraph "good" {')


def test_draw_needs_a_name_when_a_module_has_two_graphs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Several graphs and no ``:name`` is a usage error that shows how to pick one."""
    assert main(["draw", "cli_fixtures/two_graphs.py"]) == 2
    assert capsys.readouterr().err == (
        "error: cli_fixtures/two_graphs.py defines 2 graphs (first, second); pick one\n"
        "  with cli_fixtures/two_graphs.py:first\n"
    )
    assert main(["draw", "cli_fixtures/two_graphs.py:second"]) == 0
    assert "    fork ==> left\n    fork ==> right\n" in capsys.readouterr().out


def test_draw_shows_a_graph_whose_module_failed_to_compile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``app = g.compile()`` raised at import; the graph defined before it is drawn."""
    assert main(["draw", "cli_fixtures/compiled_broken.py"]) == 0
    out, err = capsys.readouterr()
    assert '    replyy["replyy (unknown)"]' in out
    assert "    classify -.-> replyy" in out
    assert err.startswith("note: cli_fixtures/compiled_broken.py failed to import")


def test_draw_of_a_module_that_cannot_import_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Nothing to draw: the load error is one line."""
    assert main(["draw", "cli_fixtures/fails_import.py"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: cannot import cli_fixtures/fails_import.py: ModuleNotFoundError")


def test_a_file_with_no_graph_is_a_usage_error_for_draw(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``draw`` needs a graph; a module without one says so."""
    assert main(["draw", "cli_fixtures/__init__.py"]) == 2
    assert "defines no corral Graph" in capsys.readouterr().err


def test_a_file_that_is_not_python_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral lint notes.txt`` explains what PATH may be (wrapped to 80 columns)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("corral\n")
    code, _, err = lint(capsys, str(notes))
    assert code == 2
    message = (
        f"error: {str(notes)!r} is not a Python file; give a .py file, a folder or a module name"
    )
    assert all(len(line) <= 80 for line in err.splitlines()), err
    assert re.sub(r"\s", "", err) == re.sub(r"\s", "", message)  # a long path is cut


@pytest.mark.parametrize(
    ("selector", "title"),
    [
        ("cli_fixtures/good.py:app", "cli_fixtures/good.py:app"),
        ("./cli_fixtures/good.py:app", "./cli_fixtures/good.py:app"),
        ("cli_fixtures/good.py", "cli_fixtures/good.py:g"),
        ("cli_fixtures.good:app", "cli_fixtures.good:app"),
    ],
)
def test_cycles_names_the_graph_as_it_was_typed(
    selector: str, title: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral cycles`` titles its listing with the graph as the user named it, as ``corral
    run``'s heading does (the path as typed, the :name picked, else the attribute)."""
    assert main(["cycles", selector]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{title}: 1 cycle"
    assert lines[1].split() == ["critique", "→", "revise", "→", "critique", "guarded:", "revise",
                                "≤3,", "then", "END"]  # fmt: skip


def test_cycles_says_when_the_list_was_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With more cycles than ``--limit``, the listing says it stopped."""
    source = textwrap.dedent(
        """\
        from typing import Any, Literal, TypedDict

        from corral import END, End, Graph, Guard


        class State(TypedDict):
            n: int


        g = Graph(State)
        Hop = Literal["a", "b", "c"]


        @g.node(start=True)
        def a(state: State) -> dict[str, object]:
            return {}


        @g.node()
        def b(state: State) -> dict[str, object]:
            return {}


        @g.node()
        def c(state: State) -> dict[str, object]:
            return {}


        for name in ("a", "b", "c"):

            @g.router(name, guards=[Guard(t, max=1, otherwise=END) for t in "abc"])
            def hop(state: State) -> Hop | End:
                return END
        """
    )
    (tmp_path / "mesh.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert main(["cycles", "mesh.py", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "mesh.py:g: 2 cycles (stopped at --limit 2; there are more)"
    assert len(lines) == 4
    assert all("guarded: " in line for line in lines[1:3])
    assert lines[3].startswith("bound: ")


def test_a_dotted_package_is_searched_module_by_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``corral lint agents_pkg`` imports the package and each of its modules."""
    package = tmp_path / "agents_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "looping.py").write_text(MODULE)
    (package / "helpers.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # importable, but not a path from here
    code, out, _ = lint(capsys, "agents_pkg")
    assert code == 1
    assert out.startswith(f"{package / 'looping.py'}:19:1: CR201 ")
    code, out, _ = lint(capsys, "agents_pkg.looping:g", "--ignore", "CR201")
    assert (code, out) == (0, "No problems found in 1 graph (1 file).\n")


def test_a_graph_whose_schema_is_wrong_is_reported_not_crashed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``GraphError`` outside the analyser is one ``error:`` line, exit 2."""
    (tmp_path / "bad_schema.py").write_text(
        "from corral import Graph\n\nclass NotTyped:\n    n: int\n\ng = Graph(NotTyped)\n"
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = lint(capsys, "bad_schema.py")
    assert code == 2
    assert err.startswith("error: cannot import bad_schema.py: GraphError: state_schema ")


def test_explain_falls_back_to_the_short_docs() -> None:
    """A rule with no section in docs/rules.md (or no docs folder) shows its short docs."""
    from corral.analysis.rules import Rule
    from corral.cli._rules import long_docs

    def made_up(graph: Any) -> list[Any]:
        """A rule for this test.

        Short docs.
        """
        return []

    assert long_docs(Rule("CR999", "made-up", "warning", made_up)) == "Short docs."
