"""The analyser reads the spec only: it imports no DSL, runtime or source parser, and
``import corral`` does not pay for networkx."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[2] / "src" / "corral" / "analysis"
FORBIDDEN = ("corral.writes", "corral.dsl", "corral._registry", "corral.runtime", "ast", "inspect")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
    return found


def test_the_analyser_imports_no_dsl_runtime_or_source_parser() -> None:
    """Write sets and fan-out flags come from the spec; no analysis module parses user code."""
    for path in sorted(ANALYSIS.rglob("*.py")):
        for module in imported_modules(path):
            assert not module.startswith(FORBIDDEN), (path.name, module)


def test_import_corral_does_not_import_networkx() -> None:
    """networkx is imported only to list cycles: not by ``import corral``, nor by a check."""
    code = (
        "import sys, corral\n"
        "assert 'networkx' not in sys.modules\n"
        "from typing import TypedDict\n"
        "class S(TypedDict):\n"
        "    n: int\n"
        "g = corral.Graph(S)\n"
        "g.node(start=True, then=corral.END)(lambda state: None)\n"
        "assert g.check() == []\n"
        "assert g.bound().steps == 1\n"
        "assert 'networkx' not in sys.modules\n"
        "assert g.cycles() == []\n"
        "assert 'networkx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
