"""The tutorial's step 7 is true: its file assembles, type-checks, and its commands print that.

``docs/tutorial.md`` tells the reader to assemble ``reply_agent.py`` from steps 1, 3 and 5 and
then shows terminal sessions. This test follows the recipe as written, runs ``mypy
--strict`` on the file (step 8 promises mypy checks it), and runs every ``$ corral ...``
command of step 7 in a shell, comparing what it prints with the page (interrupt ids, which
are random, are compared as ``(id …)``). The ``$ corral draw`` output is the ``mermaid``
block that follows it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
GUARDED = '@g.router("approve", guards=[Guard("revise", max=2, otherwise=END)])'


def _sections() -> dict[str, str]:
    parts = re.split(r"^## ", TUTORIAL.read_text(encoding="utf-8"), flags=re.M)
    return {p.split(".")[0]: p for p in parts[1:] if p[:1].isdigit()}


def _fences(section: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def _python(section: str) -> str:
    return next(body for kind, body in _fences(section) if kind == "python")


def assemble() -> str:
    """Return ``reply_agent.py`` built the way step 7 says."""
    sections = _sections()
    first = _python(sections["1"])
    third = _python(sections["3"])
    fifth = _python(sections["5"])
    imports = first[: first.index("class State")]
    model = third[: third.index("\ng = Graph")]
    graph = fifth[: fifth.index("assert ")]
    return f"{imports.rstrip()}\n\n\n{model.strip()}\n\n\n{graph.rstrip()}\n"


def sessions() -> list[tuple[str, str]]:
    """Return ``(command, expected output)`` for every ``$`` line of step 7, in order."""
    fences = _fences(_sections()["7"])
    found: list[tuple[str, str]] = []
    for index, (kind, body) in enumerate(fences):
        if kind != "console":
            continue
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            command = lines[i].removeprefix("$ ")
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            i += 1
            output: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            expected = "\n".join(output)
            if not output and index + 1 < len(fences) and fences[index + 1][0] == "mermaid":
                expected = fences[index + 1][1].rstrip("\n")
            found.append((command, expected))
    return found


def _masked(text: str) -> str:
    return re.sub(r"\(id [0-9a-f]+\)", "(id …)", text).rstrip("\n")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("tutorial")
    (here / "reply_agent.py").write_text(assemble(), encoding="utf-8")
    return here


def test_the_assembled_file_passes_mypy_strict(folder: Path) -> None:
    """The recipe gives one State (with ``approved``) and a file mypy --strict accepts."""
    text = (folder / "reply_agent.py").read_text()
    assert text.count("class State(TypedDict)") == 1
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "reply_agent.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_command_of_step_7_prints_what_the_tutorial_shows(folder: Path) -> None:
    """lint (clean, then with the guard deleted), cycles, draw and run, in order."""
    steps = sessions()
    assert [c.split()[1] for c, _ in steps] == ["lint", "lint", "cycles", "draw", "run", "run"]
    original = (folder / "reply_agent.py").read_text()
    assert GUARDED in original
    for number, (command, expected) in enumerate(steps):
        # The second session is after "Delete the guard on `after_approval`".
        edited = original.replace(GUARDED, '@g.router("approve")') if number == 1 else original
        (folder / "reply_agent.py").write_text(edited)
        argv = shlex.split(command)
        redirect = None
        if ">" in argv:
            at = argv.index(">")
            argv, redirect = argv[:at], argv[at + 1]
        done = subprocess.run(
            [sys.executable, "-m", "corral", *argv[1:]],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        shown = done.stderr if redirect else done.stdout + done.stderr
        if redirect:
            (folder / redirect).write_text(done.stdout)
        assert _masked(shown) == _masked(expected), command
