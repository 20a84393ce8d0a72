"""Every ```python block of README.md and docs/*.md runs, in order, one namespace per file.

The convention (shared by everyone who writes docs):

- the ```python blocks of one file run in order in one fresh module namespace, like a
  notebook, so a later block can use what an earlier one defined;
- a block whose previous non-blank line is ``<!-- no-test -->`` is skipped;
- other fences (``console``, ``text``, ``bash``, ``toml``...) are never run.

Each block is compiled with the Markdown file as its file name and its real line numbers,
so a failure (and any ``Diagnostic`` a block produces) points at the line in the docs.
Blocks run in a temporary working directory, so a ``SqliteSaver("agent.sqlite")`` in the
docs leaves nothing behind.
"""

from __future__ import annotations

import re
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP_MARK = "<!-- no-test -->"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    language: str
    """The first word of the fence's info string (``python``, ``console``...), lower case."""
    code: str
    line: int
    """1-based line of the first line of code (the line after the opening fence)."""
    skipped: bool
    """True when ``<!-- no-test -->`` is the previous non-blank line before the fence."""


def read_blocks(text: str) -> list[Block]:
    """Return the fenced code blocks of a Markdown text, in order.

    >>> text = "x\\n```python\\na = 1\\n```\\n<!-- no-test -->\\n```python\\nboom\\n```\\n"
    >>> [(b.language, b.code, b.line, b.skipped) for b in read_blocks(text)]
    [('python', 'a = 1\\n', 3, False), ('python', 'boom\\n', 7, True)]
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    previous = ""
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence = match["fence"]
        info = match["info"].strip()
        language = info.split()[0].lower() if info else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                break
            body.append(lines[j])
            j += 1
        code = textwrap.dedent("\n".join(body) + "\n") if body else ""
        blocks.append(Block(language, code, i + 2, previous == SKIP_MARK))
        previous = ""
        i = j + 1
    return blocks


def python_blocks(text: str) -> Iterator[Block]:
    """Yield the blocks the harness runs: ``python`` (or ``py``) blocks not marked no-test."""
    for block in read_blocks(text):
        if block.language in ("python", "py", "python3") and not block.skipped:
            yield block


def run_markdown(path: Path) -> types.ModuleType:
    """Run the python blocks of ``path`` in one fresh module; return the module.

    Raises:
        AssertionError: a block failed; the message names the file, the line and the error.
    """
    text = path.read_text(encoding="utf-8")
    name = "corral_docs_" + re.sub(r"\W", "_", path.stem)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        for block in python_blocks(text):
            # Pad with blank lines so tracebacks and Diagnostic lines match the Markdown file.
            source = "\n" * (block.line - 1) + block.code
            try:
                code = compile(source, str(path), "exec")
                exec(code, module.__dict__)
            except BaseException as exc:
                where = f"{_show(path)}:{block.line}"
                line = _failing_line(exc, str(path))
                at = f" (line {line}: {_line_text(text, line)!r})" if line else ""
                msg = f"the python block at {where} failed{at}: {type(exc).__name__}: {exc}"
                raise AssertionError(msg) from exc
    finally:
        sys.modules.pop(name, None)
    return module


def _failing_line(exc: BaseException, filename: str) -> int | None:
    """Return the innermost line of ``filename`` in the traceback of ``exc``, if any."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _line_text(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def markdown_files() -> list[Path]:
    """Return README.md and every docs/*.md file, sorted."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    readme = ROOT / "README.md"
    return ([readme] if readme.exists() else []) + docs


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: _show(p))
def test_markdown_python_blocks_run(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every python block of the file runs without raising, in order, in one namespace."""
    monkeypatch.chdir(tmp_path)
    run_markdown(path)


def test_readme_has_runnable_python() -> None:
    """The README shows at least one block the harness runs, so its example is tested."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert list(python_blocks(text)), "README.md has no tested ```python block"


def test_blocks_of_one_file_share_a_namespace(tmp_path: Path) -> None:
    """A later block sees what an earlier block defined; other fences are not run."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# t\n\n```python\nx = 2\n```\n\n```console\n$ not python\n```\n\n"
        "```python\ny = x * 21\n```\n",
        encoding="utf-8",
    )
    module = run_markdown(doc)
    assert module.y == 42


def test_no_test_blocks_are_skipped(tmp_path: Path) -> None:
    """A block marked <!-- no-test --> is not run; the next unmarked block is."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- no-test -->\n```python\nraise SystemExit('must not run')\n```\n\n"
        "```python\nran = True\n```\n",
        encoding="utf-8",
    )
    module = run_markdown(doc)
    assert module.ran is True


def test_a_failing_block_names_the_file_and_line(tmp_path: Path) -> None:
    """A block that raises fails the file's test, naming the Markdown line of the block."""
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n\n```python\nok = 1\n```\n\n```python\nassert ok == 2\n```\n")
    with pytest.raises(AssertionError, match=r"doc\.md:8 failed \(line 8: 'assert ok == 2'\)"):
        run_markdown(doc)


def test_tracebacks_point_at_markdown_lines(tmp_path: Path) -> None:
    """Code objects carry the Markdown file name and line, so errors point into the docs."""
    doc = tmp_path / "doc.md"
    doc.write_text("a\nb\n```python\nimport sys\nline = sys._getframe().f_lineno\n```\n")
    module = run_markdown(doc)
    assert module.line == 5


def test_readme_quickstart_is_a_venv_then_the_commands_ci_runs() -> None:
    """The Quickstart makes a virtual environment with python3, installs and lints, runs the
    test command .ci/run runs, and says how to install PostgreSQL for the tests it needs."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = [b.code.strip() for b in read_blocks(quickstart)]
    assert len(commands) == 4, commands
    venv, main_job, tests, postgres = commands
    assert venv.startswith("python3 -m venv .venv")
    assert "apt-get install postgresql" in postgres
    assert "minutes" in quickstart and "skipped" in quickstart
    assert main_job.startswith("python -m pip install -e '.[agents]' && corral lint examples")
    assert tests == "python -m pip install -q -e '.[dev]' && python -m pytest"
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


# What an example may import that needs an extra, and the extra that brings it.
_EXTRA_OF = {
    "corral.agents": "agents",
    "corral.langgraph": "langgraph",
    "PostgresSaver": "postgres",
}


def test_the_quickstart_installs_every_extra_the_examples_import() -> None:
    """``corral lint examples`` imports every example: a fresh install must hold their extras
    (or the lint of the first command fails with a load error on a fresh machine)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = read_blocks(text.split("## Quickstart", 1)[1])[1].code
    installed = set(re.search(r"-e '?\.\[?([\w,]*)", main_job)[1].split(","))  # type: ignore[index]
    needed = {
        (extra, str(path.relative_to(ROOT)))
        for path in (ROOT / "examples").rglob("*.py")
        if "broken" not in path.parts
        for marker, extra in _EXTRA_OF.items()
        if marker in path.read_text(encoding="utf-8")
    }
    assert {need for need in needed if need[0] not in installed} == set()


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.M | re.S)


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: _show(p))
def test_relative_links_point_at_files_that_exist(path: Path) -> None:
    """Every relative link of the file (outside code blocks) names a file or folder we ship."""
    text = path.read_text(encoding="utf-8")
    prose = _FENCED.sub("", text)
    missing = []
    for match in _LINK.finditer(prose):
        target = match["target"].split("#", 1)[0]
        if not target or "://" in target or target.startswith("mailto:"):
            continue
        if not (path.parent / target).exists():
            missing.append(match["target"])
    assert not missing, f"{_show(path)} links to missing files: {missing}"


def test_python_blocks_are_formatted(tmp_path: Path) -> None:
    """Every python block (no-test ones too) is as ``ruff format`` with the project's settings
    writes it, so a reader copies code in the house style."""
    import subprocess

    written: dict[str, str] = {}
    for path in markdown_files():
        for block in read_blocks(path.read_text(encoding="utf-8")):
            if block.language in ("python", "py", "python3"):
                stem = re.sub(r"\W", "_", _show(path))
                name = f"{stem}_{block.line}.py"
                (tmp_path / name).write_text(block.code, encoding="utf-8")
                written[name] = f"{_show(path)}:{block.line}"
    assert written
    config = str(ROOT / "pyproject.toml")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--config", config, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    unformatted = sorted(
        where for name, where in written.items() if name in result.stdout + result.stderr
    )
    assert result.returncode == 0, f"ruff format would change the blocks at {unformatted}"
