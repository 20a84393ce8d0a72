"""docs/observability.md shows real output: each ``$ corral ...`` block is rerun and compared.

The page's first Python block is saved as ``agent.py`` in a fresh folder (one that opens
with ``# NAME.py`` as ``NAME.py``); every console block is one command whose output follows
it (for ``draw``, the ``mermaid`` block after it). A command redirected with ``>`` shows
its stderr. Interrupt and checkpoint ids are random and
times change, so they are compared as patterns.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def _masked(text: str) -> str:
    text = re.sub(r"\(id (?:[\w.-]+/)*[0-9a-f]+\)", "(id …)", text)
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", "TIME", text)
    return re.sub(r"\b\d{8}-[0-9a-f]{8}\b", "CHECKPOINT-ID", text).rstrip("\n")


def test_every_command_on_the_page_prints_what_the_page_shows(tmp_path: Path) -> None:
    """threads, history, show and draw --thread, on a thread run by the page's own command."""
    text = PAGE.read_text(encoding="utf-8")
    fences = re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)
    for kind, body in fences:  # the first module is agent.py; others say their name
        if kind == "python":
            first = body.partition("\n")[0]
            name = first.removeprefix("# ") if first.startswith("# ") else "agent.py"
            if not (tmp_path / name).exists():
                (tmp_path / name).write_text(body, encoding="utf-8")
    checked = []
    for index, (kind, body) in enumerate(fences):
        if kind != "console":
            continue
        first, *shown = body.rstrip("\n").split("\n")
        argv = shlex.split(first.removeprefix("$ "))
        redirected = ">" in argv
        if redirected:
            argv = argv[: argv.index(">")]
        expected = "\n".join(shown)
        if not shown and fences[index + 1][0] == "mermaid":
            expected = fences[index + 1][1]
        done = subprocess.run(
            [sys.executable, "-m", "corral", *argv[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        got = done.stderr if redirected else done.stdout
        assert _masked(got) == _masked(expected), first
        checked.append(argv[1])
    assert checked == ["run", "threads", "run", "threads", "threads", "history", "show", "draw"]
