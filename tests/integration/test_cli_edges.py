"""Edges of the command line (issue 18, points 8 and 9): each one a clear message and exit code.

Closed stdout, bad ``--input @file`` bytes, an empty ``--thread``, CLI advice instead of
Python advice, interrupt ids, distinct progress counters, SARIF help links, and ``draw`` /
``cycles`` on a module with ``from __future__ import annotations`` whose import failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from corral.cli import main

FUTURE = """\
from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from corral import End, Graph


class Item(TypedDict):
    name: str


class State(TypedDict):
    items: Annotated[list[Item], operator.add]
    n: int


class Update(TypedDict, total=False):
    items: list[Item]
    n: int


g = Graph(State, Update)


@g.node(start=True)
def work(state: State) -> Update:
    return {"items": [{"name": "x"}], "n": state["n"] + 1}


@g.router("work")
def again(state: State) -> Literal["work"] | End:
    return "work"


app = g.compile()  # raises GraphError (CR201): draw and cycles must still show the graph
"""

FANOUT = """\
from typing import Annotated, Literal, TypedDict
import operator

from corral import END, Graph, Send, interrupt


class State(TypedDict):
    topics: list[str]
    answers: Annotated[list[str], operator.add]


g = Graph(State, name="fanout")


@g.node(start=True)
def plan(state: State) -> dict[str, object]:
    return {}


@g.router("plan")
def spread(state: State) -> list[Send[Literal["ask"]]]:
    return [Send("ask", {"topics": [t]}) for t in state["topics"]]


@g.node(then=END)
def ask(state: State) -> dict[str, object]:
    return {"answers": [interrupt({"topic": state["topics"][0]})]}
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", ["draw", "cycles"])
def test_draw_and_cycles_read_future_annotations_of_a_failed_module(
    command: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Update`` naming another TypedDict of a module whose compile() failed still resolves."""
    (here / "future_mod.py").write_text(FUTURE)
    assert main([command, "future_mod.py"]) == 0
    out, err = capsys.readouterr()
    assert "work" in out
    assert "do not resolve" not in err


@pytest.mark.parametrize("command", ["draw x.py", "lint x.py", "run x.py"])
def test_a_closed_stdout_is_not_a_traceback(command: str, here: Path) -> None:
    """``corral ... >&-`` keeps its exit code and prints no AttributeError."""
    (here / "x.py").write_text(
        "from corral import END, Graph\nfrom typing import TypedDict\n"
        "class S(TypedDict):\n    n: int\n"
        "g = Graph(S)\n"
        "@g.node(start=True, then=END)\ndef one(state: S) -> dict[str, object]:\n    return {}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "corral", *command.split()],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "AttributeError" not in done.stderr


def _graph_file(here: Path) -> str:
    (here / "one.py").write_text(
        textwrap.dedent(
            """\
            from typing import TypedDict
            from corral import END, Graph

            class S(TypedDict):
                n: int

            g = Graph(S)

            @g.node(start=True, then=END)
            def one(state: S) -> dict[str, object]:
                return {"n": state["n"] + 1}
            """
        )
    )
    return "one.py"


def test_an_input_file_that_is_not_utf8_is_bad_input(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Non-UTF-8 bytes in ``--input @file``: exit 1, the file and the byte named."""
    (here / "in.json").write_bytes(b'{"n": "\xff"}')
    assert main(["run", _graph_file(here), "--input", "@in.json"]) == 1
    err = capsys.readouterr().err
    assert "error: the input file 'in.json' is not UTF-8 text (byte 0xff at offset 7)" in err
    assert "bug in corral" not in err


def test_a_deeply_nested_input_file_is_bad_input(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """100,000 nested arrays: exit 1 with a message, not a RecursionError."""
    (here / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["run", _graph_file(here), "--input", "@deep.json"]) == 1
    err = capsys.readouterr().err
    assert "error: deep.json is nested too deeply to read" in err


def test_an_empty_thread_id_is_refused(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--thread ''`` is a usage error instead of a silent random id."""
    assert main(["run", _graph_file(here), "--thread", ""]) == 2
    assert "a thread id cannot be empty" in capsys.readouterr().err


def test_messages_name_the_options_not_python(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Continuing an unknown thread or resuming a finished one names --input / --resume."""
    path = _graph_file(here)
    assert main(["run", path, "--thread", "nope"]) == 1
    err = capsys.readouterr().err
    assert "thread 'nope' has no checkpoint" in err
    assert "corral run one.py --thread nope --input JSON" in err
    assert "invoke(" not in err
    assert main(["run", path, "--thread", "t1", "--input", '{"n": 1}']) == 0
    capsys.readouterr()
    assert main(["run", path, "--thread", "t1", "--resume", "yes"]) == 1
    err = capsys.readouterr().err
    assert "thread 't1' is not waiting for an answer (status 'done')" in err
    assert "leave out --resume" in err and "invoke(" not in err and "Resume(" not in err


def test_two_interrupted_send_runs_show_ids_and_distinct_counters(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each asks: line shows its interrupt id; the two Send runs get [2/50] and [3/50]."""
    (here / "fan.py").write_text(FANOUT)
    code = main(["run", "fan.py", "--thread", "f", "--input", '{"topics": ["a", "b"]}'])
    assert code == 3
    err = capsys.readouterr().err
    counters = [line.split()[0] for line in err.splitlines() if line.startswith("[")]
    assert len(counters) == len(set(counters)) == 3
    asks = [line for line in err.splitlines() if " asks (id " in line]
    assert len(asks) == 2
    ids = [line.split("(id ")[1].split(")")[0] for line in asks]
    assert f'"{ids[0]}": "VALUE"' in err
    # A plain answer to two questions is refused with the by-id form, naming --resume.
    assert main(["run", "fan.py", "--thread", "f", "--resume", "yes"]) == 1
    err = capsys.readouterr().err
    assert "has 2 pending interrupts; answer each by id:\n  corral run fan.py" in err
    assert "Resume(" not in err
    answers = json.dumps({ids[0]: "x", ids[1]: "y"})
    assert main(["run", "fan.py", "--thread", "f", "--resume", answers]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["answers"]) == ["x", "y"]


def test_sarif_rules_link_to_the_docs_url(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --docs-url, every SARIF rule has helpUri URL#code; without it, none."""
    path = _graph_file(here)
    url = "https://docs.example.com/corral/rules.html"
    assert main(["lint", path, "--format", "sarif", "--docs-url", url]) == 0
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert {r["id"]: r["helpUri"] for r in rules}["CR201"] == url + "#cr201"
    assert main(["lint", path, "--format", "sarif"]) == 0
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert not any("helpUri" in r for r in rules)


def test_cr202_help_names_the_router_ignore() -> None:
    """CR202's help tells a router's guard to be ignored on the router, not with @g.node."""
    from corral.cli._rules import find_rule

    rule = find_rule("CR202")
    assert rule is not None
    assert '@g.router("review", guards=[...], ignore=("CR202",))' in rule.docs
