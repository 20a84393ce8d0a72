"""``import corral`` loads only what a program uses (issue 15, point 3).

Every public name is imported from its module on first use, so each check runs a fresh
interpreter and looks at ``sys.modules`` after the import under test.
"""

from __future__ import annotations

import functools
import importlib
import subprocess
import sys

import pytest

import corral

HEAVY = ("networkx", "sqlite3", "asyncio", "json", "psycopg")
"""Modules no program should pay for before it uses what needs them."""


def _modules_held_after(code: str) -> set[str]:
    """Return every module a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@functools.cache
def _bare_interpreter() -> frozenset[str]:
    """The modules an interpreter holds before running anything.

    Startup files of the environment may import modules of their own (a ``.pth`` file that
    imports certifi loads ``typing`` on some machines), so each check counts only what the
    code under test adds.
    """
    return frozenset(_modules_held_after("pass"))


def modules_after(code: str) -> set[str]:
    """Return the modules ``code`` loads beyond those a bare interpreter holds."""
    return _modules_held_after(code) - _bare_interpreter()


def test_import_corral_imports_no_part_of_corral() -> None:
    """``import corral`` loads no corral module, nor typing, dataclasses or the heavy ones."""
    loaded = modules_after("import corral")
    assert {name for name in loaded if name.startswith("corral.")} == set()
    assert loaded.isdisjoint({*HEAVY, "typing", "dataclasses", "inspect"})


def test_defining_a_graph_imports_neither_engine_nor_analyser_nor_stores() -> None:
    """The DSL alone: no runtime, checkpointer, analyser, networkx, sqlite3 or asyncio."""
    loaded = modules_after("from corral import END, Command, Graph, Guard, Send, reducers")
    assert "corral.dsl" in loaded
    assert loaded.isdisjoint(HEAVY)
    assert not {name for name in loaded if name.startswith(("corral.runtime", "corral.analysis"))}
    assert not {name for name in loaded if name.startswith("corral.checkpoint")}


def test_the_command_line_starts_without_engine_or_networkx() -> None:
    """``corral`` (the CLI module) imports the engine only when a module holds a compiled graph."""
    loaded = modules_after("import corral.cli")
    assert loaded.isdisjoint({"networkx", "sqlite3", "asyncio", "psycopg"})
    assert not {name for name in loaded if name.startswith("corral.runtime")}


def test_a_run_kept_in_memory_does_not_import_the_postgres_saver() -> None:
    """Compiling and running with ``MemorySaver`` (SQLite in memory) never loads psycopg."""
    code = (
        "from typing import TypedDict\n"
        "from corral import END, Graph, MemorySaver\n"
        "class S(TypedDict):\n"
        "    n: int\n"
        "g = Graph(S)\n"
        "g.node(start=True, then=END)(lambda state: {'n': state['n'] + 1})\n"
        "run = g.compile(checkpointer=MemorySaver()).invoke({'n': 0}, thread_id='t')\n"
        "assert run.state == {'n': 1}\n"
    )
    loaded = modules_after(code)
    assert "corral.runtime.app" in loaded
    assert not {name for name in loaded if name.startswith(("psycopg", "psycopg_pool"))}


@pytest.mark.parametrize("name", corral.__all__)
def test_every_public_name_is_the_object_its_module_defines(name: str) -> None:
    """``corral.X`` and ``from corral import X`` give the defining module's object."""
    value = getattr(corral, name)
    if name == "reducers":
        assert value is importlib.import_module("corral.reducers")
    elif name in ("END", "START", "End"):
        assert value is getattr(importlib.import_module("corral.spec"), name)
    elif name != "__version__":
        assert value is getattr(importlib.import_module(value.__module__), name)
    assert name in dir(corral)


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A misspelt name fails as for any module, naming it."""
    with pytest.raises(AttributeError, match="'Grpah'"):
        corral.Grpah  # noqa: B018
    with pytest.raises(ImportError):
        exec("from corral import Grpah")


def test_reading_and_linting_langgraph_graphs_does_not_import_langgraph() -> None:
    """corral.langgraph reads graphs by attribute name: LangGraph stays an optional extra."""
    loaded = modules_after("import corral.langgraph, corral.analysis, corral.cli, corral.loader")
    assert "corral.langgraph" in loaded
    assert not {name for name in loaded if name.split(".")[0] in ("langgraph", "langchain_core")}


def test_every_public_error_is_importable_from_corral() -> None:
    """``from corral import RunFailedError`` and every other public error class works."""
    import inspect

    import corral.errors

    public = {
        name
        for name, value in vars(corral.errors).items()
        if inspect.isclass(value)
        and issubclass(value, corral.errors.CorralError)
        and not name.startswith("_")
    }
    assert public <= set(corral.__all__)
    from corral import RunFailedError, WaitTimeoutError

    assert RunFailedError is corral.errors.RunFailedError
    assert issubclass(WaitTimeoutError, TimeoutError)


def test_every_name_the_docs_import_from_corral_exists() -> None:
    """Each ``from corral import ...`` in the docs, README and examples names a public name."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "examples").rglob("*.py")]
    names = set()
    for file in files:
        text = file.read_text(encoding="utf-8")
        for found in re.finditer(r"^\s*from corral import (\([^)]*\)|.+)$", text, re.MULTILINE):
            for item in found.group(1).split("#")[0].strip("() ").split(","):
                if item.strip():
                    names.add(item.split()[0])  # "X as y" imports X
    missing = sorted(name for name in names if name not in corral.__all__)
    assert missing == []


def test_the_telemetry_extra_installs_what_otel_does() -> None:
    """``pip install 'corral[telemetry]'`` is an alias of ``corral[otel]``."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extras["telemetry"] == [f"{project['project']['name']}[otel]"]
    assert extras["otel"]
