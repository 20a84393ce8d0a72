"""``corral draw`` on a graph with a subgraph: the child inside its parent, or collapsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.cli import main

FIXTURE = str(Path(__file__).parents[1] / "graphs" / "team_draw.py")


def test_mermaid_draws_the_child_as_a_subgraph_block(capsys: pytest.CaptureFixture[str]) -> None:
    """The child's nodes sit in a block; routes into the node enter at its START."""
    assert main(["draw", FIXTURE]) == 0
    assert capsys.readouterr().out == (
        "---\n"
        'title: "team — at most 8 node runs"\n'
        "---\n"
        "flowchart TD\n"
        '    __start__(["START"])\n'
        '    begin["begin"]\n'
        '    subgraph research["research (max 2 runs)"]\n'
        '        n3(["START"])\n'
        '        n4["plan"]\n'
        '        n5["search"]\n'
        '        n6(["END"])\n'
        "    end\n"
        '    write["write"]\n'
        '    __end__(["END"])\n'
        "    __start__ --> begin\n"
        "    begin --> n3\n"
        "    n6 --> write\n"
        "    write --> __end__\n"
        "    n3 --> n4\n"
        "    n4 --> n5\n"
        '    n5 -.->|"≤2"| n4\n'
        "    n5 -.-> n6\n"
        '    n5 -.->|"plan used up"| n6\n'
    )


def test_dot_draws_the_child_as_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """DOT names the child's nodes by path inside a cluster."""
    assert main(["draw", FIXTURE, "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert (
        '    subgraph "cluster_research" {\n'
        '        label="research (max 2 runs)";\n'
        '        "research/__start__" [label="START", shape=oval];\n'
        '        "research/plan" [label="plan"];\n'
        '        "research/search" [label="search"];\n'
        '        "research/__end__" [label="END", shape=oval];\n'
        "    }\n"
    ) in out
    assert '    "begin" -> "research/__start__";\n' in out
    assert '    "research/__end__" -> "write";\n' in out


@pytest.mark.parametrize(
    ("fmt", "box"),
    [("mermaid", '    research[["research (max 2 runs)"]]'), ("dot", "peripheries=2")],
)
def test_collapse_draws_the_child_as_one_node(
    capsys: pytest.CaptureFixture[str], fmt: str, box: str
) -> None:
    """--collapse: one node for the subgraph, no child nodes."""
    assert main(["draw", FIXTURE, "--format", fmt, "--collapse"]) == 0
    out = capsys.readouterr().out
    assert box in out
    assert "plan" not in out and "cluster" not in out and "subgraph " not in out
