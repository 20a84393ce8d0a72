"""``corral lint``, ``draw``, ``cycles``, ``run`` and ``port`` on modules with LangGraph graphs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from corral.cli import main

LANGGRAPH_MODULE = """
from typing import Literal, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    draft: str
    verdict: str


def write(state: State) -> dict[str, object]:
    return {"draft": "..."}


def critique(state: State) -> dict[str, object]:
    return {"verdict": "revise"}


def after_critique(state: State) -> Literal["write", "__end__"]:
    return END if state["verdict"] == "ok" else "write"


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_node("critique", critique)
builder.add_edge(START, "write")
builder.add_edge("write", "critique")
builder.add_conditional_edges("critique", after_critique)
graph = builder.compile()
"""

BOTH_KINDS = """
from typing import TypedDict

from langgraph.graph import START, StateGraph

from corral import END, Graph


class State(TypedDict):
    n: int


def step(state: State) -> dict[str, object]:
    return {"n": 1}


g = Graph(State)
g.node("step", start=True, then="ghost")(step)

lg = StateGraph(State)
lg.add_node("step", step)
lg.add_edge(START, "step")
lg.add_edge("step", "step")
"""

CR201 = (
    "CR201 cycle write → critique → write has no bound, so only recursion_limit stops it "
    "(GraphRecursionError); add a counter to the state that a node on the loop increments and "
    "a route out in router 'after_critique' when it reaches a limit, or port the loop to "
    "corral with a Guard"
)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent.py").write_text(textwrap.dedent(LANGGRAPH_MODULE))
    (tmp_path / "both.py").write_text(textwrap.dedent(BOTH_KINDS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_lint_finds_langgraph_graphs_and_points_at_the_router(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder walk reads a module that mentions only langgraph; the builder and its compiled
    graph are one target."""
    code, out, _ = run(capsys, "lint", "agent.py")
    assert code == 1
    assert out.splitlines() == [
        f"agent.py:20:1: {CR201}",
        "Found 1 error in 1 graph (1 file).",
    ]
    code, out, _ = run(capsys, "lint", "agent.py:graph", "--format", "json")
    assert code == 1 and '"CR201"' in out


def test_a_module_with_both_kinds_lists_both(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A corral Graph and a LangGraph builder in one module are both linted."""
    code, out, _ = run(capsys, "lint", ".")
    assert code == 1
    found = [line.split(" ")[1] for line in out.splitlines() if line.startswith(("both", "agent"))]
    assert sorted(found) == ["CR101", "CR105", "CR201", "CR201"]
    code, _, err = run(capsys, "draw", "both.py")
    assert code == 2
    assert "both.py defines 2 graphs (g, lg); pick one with both.py:g" in err


def test_draw_and_cycles(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """draw shows the LangGraph routes; cycles marks the loop as bounded by nothing."""
    code, out, _ = run(capsys, "draw", "agent.py:graph")
    assert code == 0
    assert "critique -.-> write" in out and "write --> critique" in out
    code, out, _ = run(capsys, "cycles", "agent.py")
    assert code == 0
    assert out.splitlines() == [
        "agent.py:builder: 1 cycle",
        "  write → critique → write    UNBOUNDED: only a counter or recursion_limit stops it "
        "(lint: CR201, CR204)",
    ]


def test_lint_static_reads_langgraph_wiring_without_importing(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--static reads the builder calls from source: the same finding, at the same line, as
    lint with the import; nothing of the module runs."""
    (tree / "agent.py").write_text(
        LANGGRAPH_MODULE + "\nraise SystemExit('this module must not run')\n"
    )
    code, out, err = run(capsys, "lint", "--static", "agent.py")
    assert code == 1 and err == ""
    assert out.startswith("agent.py:20:1: CR201 cycle write → critique → write has no bound")


def test_lint_static_says_which_file_needs_an_import_and_why(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "looped.py").write_text(
        LANGGRAPH_MODULE.replace(
            'builder.add_node("write", write)',
            'for name, func in [("write", write)]:\n    builder.add_node(name, func)',
        )
    )
    code, _, err = run(capsys, "lint", "--static", "looped.py")
    assert code == 0
    assert err == (
        "note: lint --static reads LangGraph wiring from source, but these files need an "
        "import (lint them without --static):\n  looped.py: line 25 wires the graph in a loop\n"
    )


def test_run_refuses_a_langgraph_graph(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """corral does not run LangGraph graphs: a usage error that says what to do instead."""
    code, _, err = run(capsys, "run", "agent.py:graph")
    assert code == 2
    assert err == (
        "error: agent.py:graph is a LangGraph graph: corral lints, draws and ports it but\n"
        "  does not run it; run it with LangGraph, or `corral port agent.py:graph` to\n"
        "  move it to corral\n"
    )


def test_port_prints_a_module_that_checks_clean(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The port imports the nodes and guards the loop; linting it finds nothing."""
    code, out, _ = run(capsys, "port", "agent.py:graph")
    assert code == 0
    assert "from agent import State, write, critique, after_critique as _lg_after_critique" in out
    assert "@g.router('critique', guards=[Guard('write', max=3, otherwise=END)])" in out
    (tree / "ported").mkdir()
    (tree / "ported" / "agent_corral.py").write_text(out)
    code, out, _ = run(capsys, "lint", "ported")
    assert (code, out.splitlines()[-1]) == (0, "No problems found in 1 graph (1 file).")
    code, _, err = run(capsys, "port", "both.py:g")
    assert code == 2
    assert err == "error: both.py:g is a corral graph already; corral port reads LangGraph graphs\n"


LAMBDAS = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    n: int


def count(state: State) -> dict[str, int]:
    return {"n": state["n"] + 1}


builder = StateGraph(State)
builder.add_node("count", count)
builder.add_node("double", lambda state: {"n": state["n"] * 2})
builder.add_edge(START, "count")
builder.add_conditional_edges("count", lambda state: END if state["n"] >= 3 else "double")
builder.add_edge("double", "count")
graph = builder.compile()
"""


def test_port_of_lambda_nodes_and_routers_compiles_lints_clean_and_runs(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lambda is no subgraph: the port runs it from the original builder, names it, and
    the module it writes imports, lints clean (the original is not a graph of it) and runs."""
    (tree / "lambdas.py").write_text(LAMBDAS)
    code, out, _ = run(capsys, "port", "lambdas.py:graph")
    assert code == 0 and "subgraph" not in out and "<lambda>" not in out
    (tree / "ported").mkdir()
    (tree / "ported" / "lambdas_corral.py").write_text(out)
    code, lint, _ = run(capsys, "lint", "ported")
    assert (code, lint.splitlines()[-1]) == (0, "No problems found in 1 graph (1 file).")
    import importlib

    ported = importlib.import_module("ported.lambdas_corral")
    assert ported.g.compile().invoke({"n": 0}).state == {"n": 3}


def test_port_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    """``corral port --help`` shows examples."""
    code, out, _ = run(capsys, "port", "--help")
    assert code == 0 and "corral port agent.py:graph" in out.split("examples:")[1]


DOC = Path(__file__).parents[2] / "docs" / "langgraph.md"


def test_the_command_line_outputs_in_docs_langgraph_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The doc's first Python block saved as agent.py prints the doc's lint, cycles and port
    outputs (the port's lines after its ``...``)."""
    text = DOC.read_text(encoding="utf-8")
    module = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "agent.py").write_text(module)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    shown = [block.split("```", 1)[0] for block in text.split("```text\n")[1:]]
    for block in shown:
        commands = block.split("$ corral ")[1:]
        for command in commands:
            line, expected = command.split("\n", 1)
            code, out, err = run(capsys, *line.split())
            assert code in (0, 1), err
            if expected.startswith("...\n"):
                assert expected[4:] in out
            else:
                assert out == expected


def _project(tmp_path: Path) -> Path:
    """A project whose graph module imports its nodes by the project's own package name."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "nodes.py").write_text("def write(state):\n    return {'draft': '...'}\n")
    module = LANGGRAPH_MODULE.replace(
        'def write(state: State) -> dict[str, object]:\n    return {"draft": "..."}\n',
        "from app.nodes import write\n",
    )
    (app / "graph.py").write_text(module)
    return app / "graph.py"


@pytest.mark.parametrize("command", ["lint", "cycles", "draw"])
def test_cycles_and_draw_import_what_lint_imports(tmp_path: Path, command: str) -> None:
    """Run from the project's root, every command finds ``app.nodes`` (the current folder
    is on the path for all of them, as it is in lint's worker)."""
    import os
    import shutil
    import subprocess

    script = shutil.which("corral")
    assert script is not None
    _project(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [script, command, "app/graph.py:graph"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "cannot import" not in proc.stderr
    assert proc.returncode in (0, 1), proc.stderr


def test_a_file_named_on_the_command_line_is_always_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that never says 'langgraph' (it imports a module that builds the graph) is
    read when named; a folder walk still skips it."""
    (tmp_path / "built.py").write_text(LANGGRAPH_MODULE)
    (tmp_path / "entry.py").write_text("from built import graph\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["lint", "entry.py"]) == 1
    assert "CR201" in capsys.readouterr().out


def test_a_graph_imported_and_run_as_a_subgraph_is_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inner.py").write_text(LANGGRAPH_MODULE)
    (tmp_path / "outer.py").write_text(
        "from typing import TypedDict\n"
        "from langgraph.graph import END, START, StateGraph\n"
        "from inner import graph\n\n\n"
        "class Outer(TypedDict):\n    draft: str\n    verdict: str\n\n\n"
        "top = StateGraph(Outer)\n"
        "top.add_node('review', graph)\n"
        "top.add_edge(START, 'review')\n"
        "top.add_edge('review', END)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["lint", "outer.py"]) == 1
    out = capsys.readouterr().out
    assert out.count("CR201") == 1, out
