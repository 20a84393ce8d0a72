"""``corral lint --static``: graphs read by mypy, with no module code run."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from corral.analysis import analyse
from corral.cli import main
from corral.loader import load
from corral.spec import GraphSpec, NodeSpec
from corral.static import load_static

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("folder", ["examples", "examples/broken"])
def test_static_lint_prints_what_import_lint_prints(
    folder: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the examples, --static gives the same findings, output and exit code."""
    monkeypatch.chdir(ROOT)
    # react_agent.py's graph is built by a function (corral.agents.react_agent), which
    # --static cannot see without running code (see corral.static); compare the rest.
    skip = ("--exclude", "examples/react_agent.py")
    imported = lint(capsys, folder, *skip)
    static = lint(capsys, "--static", folder, *skip)
    assert static == imported
    if folder.endswith("broken"):
        assert imported[0] == 1 and "CR201" in imported[1]


def _shape(spec: GraphSpec) -> object:
    """The parts of a spec both readers must agree on (functions and types aside)."""
    return (
        spec.name,
        os.path.abspath(spec.location.file),
        spec.location.line,
        spec.max_steps,
        spec.node_names,
        [(k.name, k.reducer is not None) for k in spec.keys],
        [k.name for k in spec.update_keys] if spec.update_keys is not None else None,
        [_node_shape(n) for n in spec.nodes],
        [
            (r.source, r.name, r.location, r.targets, r.guards, r.takes_ctx, r.is_async)
            for r in spec.routers
        ],
    )


def _node_shape(n: NodeSpec) -> object:
    return (
        n.name,
        n.location,
        n.start,
        n.then,
        n.command,
        n.max_runs,
        n.guards,
        n.wait_for,
        n.writes,
        n.takes_ctx,
        n.is_async,
    )


def test_static_specs_equal_imported_specs_on_the_examples() -> None:
    """Every example graph is read into the same spec, node for node and route for route."""
    imported = {
        (os.path.abspath(t.source), t.name): t.spec()
        for t in load([str(EXAMPLES)], only_marked=True).targets
        if os.path.basename(t.source) != "react_agent.py"  # built by a function: not static
    }
    static = load_static([str(EXAMPLES)])
    assert static.errors == []
    assert len(static.targets) == len(imported) >= 8
    for target in static.targets:
        spec = imported[(os.path.abspath(target.source), target.name)]
        assert _shape(target.spec()) == _shape(spec), target.label
        assert analyse(target.spec()) == analyse(spec), target.label


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_no_module_code_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A module whose import would fail (or have effects) is still linted, and nothing runs."""
    marker = tmp_path / "ran"
    module = _write(
        tmp_path,
        "agent.py",
        f"""
        from typing import Literal, TypedDict
        from corral import END, Graph

        open({str(marker)!r}, "w").close()

        class State(TypedDict):
            n: int

        g = Graph(State)

        @g.node(start=True, then=END)
        def first(state: State) -> None:
            return None

        @g.node(then=END)
        def orphan(state: State) -> None:
            return None

        raise SystemExit("importing this module is an error")
        """,
    )
    code, out, err = lint(capsys, "--static", str(module))
    assert not marker.exists()
    assert code == 1, err
    assert "CR103 node 'orphan' is not reachable from the start" in out


def test_graph_spread_over_modules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nodes registered from another module join the graph they name; findings point there."""
    _write(tmp_path, "pkg/__init__.py", "")
    _write(
        tmp_path,
        "pkg/graph.py",
        """
        from typing import Literal, TypedDict
        from corral import Graph

        class State(TypedDict):
            n: int

        g = Graph(State, nodes=Literal["first", "second", "third"])
        """,
    )
    nodes = _write(
        tmp_path,
        "pkg/nodes.py",
        """
        from typing import Literal
        from corral import END
        from pkg.graph import State, g

        @g.node(start=True)
        def first(state: State) -> None:
            return None

        @g.router("first")
        def route(state: State) -> Literal["second"]:
            return "second"

        @g.node(then="first")
        def second(state: State) -> None:
            return None

        @g.node(then=END)
        def third(state: State) -> None:
            return None
        """,
    )
    loaded = load_static([str(tmp_path / "pkg")])
    assert loaded.errors == []
    (target,) = loaded.targets
    spec = target.spec()
    assert [n.name for n in spec.nodes] == ["first", "second", "third"]
    assert spec.routers[0].targets.names == ("second",)
    found = {(d.code, d.nodes) for d in analyse(spec)}
    assert ("CR103", ("third",)) in found
    assert any(code == "CR201" for code, _ in found)
    code, out, _ = lint(capsys, "--static", str(tmp_path / "pkg"))
    assert code == 1
    line = nodes.read_text().splitlines().index("def third(state: State) -> None:") + 1
    assert f"{nodes.name}:{line}:1: CR103 node 'third'" in out


def test_computed_argument_is_a_load_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A decorator argument that only running the module could compute is reported, exit 2."""
    module = _write(
        tmp_path,
        "agent.py",
        """
        from typing import TypedDict
        from corral import Graph

        class State(TypedDict):
            n: int

        def pick() -> str:
            return "first"

        g = Graph(State)

        @g.node(start=True, then=pick())
        def first(state: State) -> None:
            return None
        """,
    )
    code, _, err = lint(capsys, "--static", str(module))
    assert code == 2
    assert "agent.py:13" in err and "computed at run time" in err


def test_subgraphs_are_read_with_their_children(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """g.subgraph(...) is a node holding its child; the child's findings are named by path."""
    _write(tmp_path, "team/__init__.py", "")
    _write(
        tmp_path,
        "team/child.py",
        """
        import operator
        from typing import Annotated, TypedDict
        from corral import END, Graph

        class State(TypedDict):
            notes: Annotated[list[str], operator.add]

        child = Graph(State)

        @child.node(start=True, then="loop")
        def loop(state: State) -> dict[str, list[str]]:
            return {"notes": ["x"]}
        """,
    )
    parent = _write(
        tmp_path,
        "team/parent.py",
        """
        import operator
        from typing import Annotated, TypedDict
        from corral import END, Graph
        from team.child import child

        class State(TypedDict):
            notes: Annotated[list[str], operator.add]
            report: str

        g = Graph(State)
        g.subgraph("research", child, start=True, then="write")
        g.subgraph("summary", child, then=END, output=lambda s: {"report": s["notes"][0]})

        @g.node(then="summary")
        def write(state: State) -> None:
            return None
        """,
    )
    static = load_static([str(parent)])
    [target] = [t for t in static.targets if t.name == "g"]
    spec = target.spec()
    research, summary = spec.node("research"), spec.node("summary")
    assert research is not None and research.subgraph is not None
    assert research.writes == frozenset({"notes"}) and research.location.line == 12
    assert summary is not None and summary.writes == frozenset({"report"})
    code, out, _ = lint(capsys, "--static", str(parent))
    assert code == 1
    assert "CR201 in subgraph 'research': cycle loop → loop" in out
