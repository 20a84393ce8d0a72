"""``corral threads``, ``history``, ``show`` and ``draw --thread`` (issue 14, points 2-3).

A thread is made with ``corral run`` on a graph with a guarded loop and an approval; the
commands read its checkpoint file and must say what happened, within 80 columns.
"""

from __future__ import annotations

import datetime
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from corral.cli import main

AGENT = """\
from typing import Literal, TypedDict

from corral import END, Graph, Guard, interrupt


class State(TypedDict):
    text: str
    score: int
    approved: bool


g = Graph(State, name="agent")


@g.node(start=True, then="review")
def draft(state: State) -> dict[str, object]:
    return {"text": state["text"] + "!"}


@g.node()
def review(state: State) -> dict[str, object]:
    return {"score": state["score"] + 1}


@g.router("review", guards=[Guard("draft", max=2, otherwise="approve")])
def after_review(state: State) -> Literal["draft", "approve"]:
    return "draft"


@g.node(then=END)
def approve(state: State) -> dict[str, object]:
    return {"approved": interrupt({"text": state["text"]}) == "yes"}
"""


@pytest.fixture(params=["sqlite", "postgres"])
def db(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    """A database (a SQLite file, or a PostgreSQL URL) with thread t1 paused at approve after
    the guard was used up: every command that takes ``--db`` reads both."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(AGENT)
    url = "c.sqlite" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    code = main(
        ["run", "agent.py", "--db", url, "--thread", "t1", "--input",
         '{"text": "hi", "score": 0}']
    )  # fmt: skip
    assert code == 3
    capsys.readouterr()
    return url


def out_of(capsys: pytest.CaptureFixture[str], *argv: str, narrow: bool = True) -> str:
    """Return stdout of a command that succeeds; tables and text fit 80 columns."""
    assert main(list(argv)) == 0
    out, _ = capsys.readouterr()
    assert not narrow or all(len(line) <= 80 for line in out.splitlines()), out
    return out


def command_after(heading: str, out: str) -> list[str]:
    """Return the lines of the command printed under ``heading``: up to the first line that
    does not end in a backslash."""
    lines = out.splitlines()
    command = []
    for line in lines[lines.index(heading) + 1 :]:
        command.append(line)
        if not line.endswith("\\"):
            return command
    raise AssertionError(out)


def shell_words(lines: list[str]) -> list[str]:
    """Return the words ``sh`` reads from ``lines`` (a command that starts with ``corral``)."""
    show = 'corral() { printf "%s\\0" corral "$@"; }\n'
    done = subprocess.run(
        ["sh", "-c", show + "\n".join(lines)], capture_output=True, text=True, check=True
    )
    return done.stdout.split("\0")[:-1]


def test_threads_lists_each_thread(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """One row per thread: id, status, steps, last update time (UTC), next nodes."""
    out = out_of(capsys, "threads", "--db", db)
    header, row = out.splitlines()
    assert header.split() == ["THREAD", "STATUS", "STEPS", "UPDATED", "(UTC)", "NEXT"]
    thread, status, steps, day, clock, following = row.split()
    assert (thread, status, steps, following) == ("t1", "interrupted", "6", "approve")
    rows = json.loads(out_of(capsys, "threads", "--db", db, "--format", "json"))
    updated = rows[0].pop("updated")
    assert rows == [
        {
            "thread": "t1",
            "status": "interrupted",
            "steps": 6,
            "checkpoints": 8,
            "next": ["approve"],
            "parent": None,
            "error": None,
            "spent": {"calls": 0, "tokens": 0, "usd": "0"},
        }
    ]
    when = datetime.datetime.fromisoformat(updated)
    assert when.utcoffset() == datetime.timedelta(0)
    assert f"{day} {clock}" == when.strftime("%Y-%m-%d %H:%M:%S")
    age = datetime.datetime.now(datetime.UTC) - when
    assert datetime.timedelta(seconds=-1) < age < datetime.timedelta(minutes=10)


TEAM = """\
import operator
from typing import Annotated, TypedDict

from corral import END, Graph, interrupt


class Team(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


child = Graph(Team, name="researcher")


@child.node(start=True, then=END)
def search(state: Team) -> dict[str, object]:
    return {"notes": [str(interrupt("which source?"))]}


g = Graph(Team, name="team")
g.subgraph("research", child, start=True, then=END)
"""


def test_subgraph_child_threads_are_listed_only_with_all(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A subgraph's child thread is hidden (and counted); --all lists it under its parent."""
    Path("team.py").write_text(TEAM)
    argv = ["run", "team.py:g", "--db", db, "--thread", "t2", "--input", '{"topic": "tides"}']
    assert main(argv) == 3
    capsys.readouterr()
    out = out_of(capsys, "threads", "--db", db)
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["t1", "t2"]
    assert out.splitlines()[3:] == ["(1 subgraph child thread not shown; --all lists them)"]
    out = out_of(capsys, "threads", "--db", db, "--all")
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [
        ["t1", "interrupted"],
        ["t2", "interrupted"],
        ["research@1.1.0", "interrupted"],
    ]
    assert out.splitlines()[3].startswith("  research@1.1.0 ")
    rows = json.loads(out_of(capsys, "threads", "--db", db, "--format", "json", "--all"))
    assert [(r["thread"], r["parent"], r["next"]) for r in rows] == [
        ("t1", None, ["approve"]),
        ("t2", None, ["research"]),
        ("t2/research@1.1.0", "t2", ["search"]),
    ]


def test_history_has_one_row_per_checkpoint(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Nodes that ran and keys written, oldest first; the same as JSON."""
    rows = json.loads(out_of(capsys, "history", "t1", "--db", db, "--format", "json"))
    times = [r.pop("time") for r in rows]
    assert times == sorted(times) and all(times)
    assert [(r["step"], r["nodes"], r["keys"], r["status"]) for r in rows] == [
        (0, ["input"], ["text", "score"], "running"),
        (1, ["draft"], ["text"], "running"),
        (2, ["review"], ["score"], "running"),
        (3, ["draft"], ["text"], "running"),
        (4, ["review"], ["score"], "running"),
        (5, ["draft"], ["text"], "running"),
        (6, ["review"], ["score"], "running"),
        (6, [], [], "interrupted"),
    ]
    text = out_of(capsys, "history", "t1", "--db", db)
    assert text.splitlines()[0].split() == [
        "CHECKPOINT",
        "STEP",
        "NODES",
        "STATUS",
        "KEYS",
        "WRITTEN",
    ]
    assert text.splitlines()[3].split()[1:] == ["2", "review", "running", "score"]
    assert len(text.splitlines()) == len(rows) + 1


def test_show_gives_guards_interrupt_ids_and_the_resume_command(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against their max (with --graph), the interrupt id, the exact command; all
    within 80 columns, the command wrapped (PostgreSQL URL) so that a shell still reads it."""
    out = out_of(capsys, "show", "t1", "--db", db, "--graph", "agent.py")
    assert out.splitlines()[0].startswith("thread t1: interrupted after 6 steps")
    assert "next: approve" in out
    assert "  review → draft: 2/2 (used up)" in out
    # JSON is for scripts: its one-line command holds the whole URL
    report = json.loads(out_of(capsys, "show", "t1", "--db", db, "--graph", "agent.py",
                               "--format", "json", narrow=False))  # fmt: skip
    [asked] = report["interrupts"]
    assert f"  approve asks (id {asked['id']}): " in out
    assert (
        report["resume"] == f"corral run agent.py --thread t1 --db {shlex.quote(db)} --resume VALUE"
    )
    printed = command_after("resume with (VALUE is parsed as JSON when it is JSON):", out)
    assert shell_words(printed) == shlex.split(report["resume"])
    assert (len(printed) == 1) == (db == "c.sqlite")  # the PostgreSQL URL is wrapped
    assert report["state"] == {"text": "hi!!!", "score": 3}
    # The printed command does resume the thread.
    assert main(["run", "agent.py", "--thread", "t1", "--db", db, "--resume", "yes"]) == 0


def test_show_without_the_graph_says_what_it_needs(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --graph: counts without max, PATH in the command, a note for the state."""
    out = out_of(capsys, "show", "t1", "--db", db)
    assert "  review → draft: 2\n" in out
    printed = command_after("resume with (VALUE is parsed as JSON when it is JSON):", out)
    words = ["corral", "run", "PATH", "--thread", "t1", "--db", db, "--resume", "VALUE"]
    assert shell_words(printed) == words


def test_draw_thread_marks_the_routes_taken_with_counts(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taken routes are thick and red with ×N; the guard shows 2/2 used; DOT too."""
    out = out_of(capsys, "draw", "agent.py", "--thread", "t1", "--db", db)
    assert '    review -.->|"2/2 used ×2"| draft' in out
    assert '    draft -->|"×3"| review' in out
    assert '    review -.->|"draft used up ×1"| approve' in out
    assert "linkStyle" in out
    dot = out_of(
        capsys, "draw", "agent.py", "--thread", "t1", "--db", db, "--format", "dot", narrow=False
    )
    assert (
        '"review" -> "draft" [style=dashed, color="#d62728", penwidth=3, label="2/2 used ×2"];'
        in dot
    )


def test_a_missing_database_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SQLite path that does not exist is not created: exit 2, named."""
    monkeypatch.chdir(tmp_path)
    assert main(["threads", "--db", "nope.sqlite"]) == 2
    assert "no checkpoint database at 'nope.sqlite'" in capsys.readouterr().err
    assert not (tmp_path / "nope.sqlite").exists()


def unspaced(text: str) -> str:
    return re.sub(r"\s", "", text)


@pytest.mark.parametrize("command", [["threads"], ["history", "t1"], ["show", "t1"]])
def test_a_missing_database_at_a_deep_path_is_said_within_80_columns(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``error:`` line naming a missing SQLite file is wrapped to 80 columns, as run's
    lines are: the path is cut where a line ends and goes on, indented, on the next, so
    the lines joined again hold the whole message."""
    folder = tmp_path / ("checkpoints of the support agent " * 3).strip()
    db = str(folder / "runs.sqlite")
    assert main([*command, "--db", db]) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("error: no checkpoint database at")
    message = f"error: no checkpoint database at {db!r}; give the file `corral run --db` wrote to"
    assert unspaced(err) == unspaced(message)


def test_a_postgres_url_without_a_server_is_said_within_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral threads --db URL`` with no server behind a long URL: one ``error:`` naming
    the URL (password hidden), wrapped to 80 columns, no traceback."""
    url = f"postgresql://u:pw@/agents?host={tmp_path / ('support-agent-sockets-' * 4)}&port=1"
    assert main(["threads", "--db", url]) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("error: cannot connect to 'postgresql:///agents?host=")
    assert "Traceback" not in err and "pw" not in err
    assert unspaced(str(tmp_path / ("support-agent-sockets-" * 4))) in unspaced(err)


DESK = """\
import operator
from typing import Annotated, Literal, TypedDict

from corral import END, Graph, Guard, Send


class Team(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


child = Graph(Team, name="researcher")


@child.node(start=True, then="search")
def plan(state: Team) -> dict[str, object]:
    return {"notes": ["plan " + state["topic"]]}


@child.node()
def search(state: Team) -> None:
    return None


@child.router("search", guards=[Guard("search", max=2, otherwise=END)])
def again(state: Team) -> Literal["search"]:
    return "search"


g = Graph(Team, name="desk")


@g.node(start=True)
def brief(state: Team) -> None:
    return None


@g.router("brief", max_sends=2)
def send(state: Team) -> list[Send[Literal["research"]]]:
    return [Send("research", {"topic": t, "notes": []}) for t in ("tides", "reefs")]


g.subgraph("research", child, then=END)
"""


def test_draw_thread_counts_the_routes_inside_each_subgraph_entry(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two Send entries of research: the routes into, inside and out of it, added up; the
    progress lines of the run show the child's node runs and routes by path."""
    Path("desk.py").write_text(DESK)
    argv = ["run", "desk.py:g", "--db", db, "--thread", "t3", "--input", '{"topic": ""}']
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    progress = err[err.index("[1/50] brief") : -1]  # after the heading (wrapped)
    one_entry = [
        "        enter subgraph research (Send)",
        "[{}/50] research/plan",
        "[{}/50] research/search",
        "        research/search → research/search (guard 1/2)",
        "[{}/50] research/search",
        "        research/search → research/search (guard 2/2)",
        "[{}/50] research/search",
        "        research/search → research/END (guard used up)",
    ]
    steps = iter(range(2, 10))
    expected = [line.format(next(steps)) if "{}" in line else line for line in one_entry * 2]
    assert progress == ["[1/50] brief", *expected]  # entering a subgraph is no step
    out = out_of(capsys, "draw", "desk.py:g", "--thread", "t3", "--db", db)
    arrows = [line.strip() for line in out.splitlines() if "->" in line]
    assert arrows == [
        '__start__ -->|"×1"| brief',
        'n6 -->|"×1"| __end__',  # one superstep ran both entries
        'brief -.->|"Send ×2"| n3',  # two Sends enter research at its START
        'n3 -->|"×2"| n4',
        'n4 -->|"×2"| n5',
        'n5 -.->|"2/2 used ×4"| n5',
        'n5 -.->|"search used up ×2"| n6',
    ]
    assert out.count("linkStyle") == len(arrows)
    dot = out_of(capsys, "draw", "desk.py:g", "--thread", "t3", "--db", db, "--format", "dot",
                 narrow=False)  # fmt: skip
    assert (
        '"research/search" -> "research/search" [style=dashed, color="#d62728", penwidth=3, '
        'label="2/2 used ×4"];'
    ) in dot
    collapsed = out_of(capsys, "draw", "desk.py:g", "--thread", "t3", "--db", db, "--collapse")
    assert [line.strip() for line in collapsed.splitlines() if "->" in line] == [
        '__start__ -->|"×1"| brief',
        'research -->|"×1"| __end__',
        'brief -.->|"Send ×2"| research',
    ]
    history = json.loads(out_of(capsys, "history", "t3", "--db", db, "--format", "json"))
    assert [r["nodes"] for r in history] == [
        ["input"],
        ["brief"],  # returned no update: found by its count of runs
        ["research/plan", "research", "research/search"],  # search wrote child keys only
    ]


def test_show_without_the_graph_prints_the_state_in_text_and_json(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Last-write keys only: the state is replayed from the checkpoints alone (issue 31 pt 5)."""
    report = json.loads(out_of(capsys, "show", "t1", "--db", db, "--format", "json", narrow=False))
    assert report["state"] == {"text": "hi!!!", "score": 3}
    assert report["state_needs_graph"] == {}
    assert '  "text": "hi!!!",' in out_of(capsys, "show", "t1", "--db", db)


REDUCERS = """\
import operator
from typing import Annotated, TypedDict

from corral import END, Graph, interrupt
from corral.reducers import add_messages, union


def keep_longest(current: str, update: str) -> str:
    return max(current, update, key=len)


class State(TypedDict):
    notes: Annotated[list[str], operator.add]
    tags: Annotated[set[str], union]
    messages: Annotated[list[dict[str, str]], add_messages]
    LONGEST
    question: str


first = Graph(State, name="first")


@first.node(start=True, then="ask")
def note(state: State) -> dict[str, object]:
    return {"notes": ["n"], "tags": {"t"}, "messages": [{"id": "m1", "content": "hello"}]}


@first.node(then=END)
def ask(state: State) -> dict[str, object]:
    return {"question": interrupt("please read " + "a long paragraph " * 12 + "and answer")}


second = Graph(State, name="second")


@second.node(start=True, then=END)
def other(state: State) -> None:
    return None
"""


@pytest.mark.parametrize("custom", [False, True])
def test_show_replays_builtin_reducers_and_names_a_custom_one(
    custom: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """operator.add, union and add_messages are replayed without --graph; a custom reducer is
    named as the key that needs it; --graph picks one of two graphs by name; the payload
    waiting for an answer wraps instead of being cut."""
    monkeypatch.chdir(tmp_path)
    longest = "longest: Annotated[str, keep_longest]" if custom else "longest: str"
    (tmp_path / "two.py").write_text(REDUCERS.replace("LONGEST", longest))
    init = '{"notes": ["a"], "tags": ["s"], "longest": "xy", "question": ""}'
    assert main(["run", "two.py:first", "--db", "r.sqlite", "--thread", "t", "--input", init]) == 3
    capsys.readouterr()
    report = json.loads(out_of(capsys, "show", "t", "--db", "r.sqlite", "--format", "json",
                               narrow=False))  # fmt: skip
    text = out_of(capsys, "show", "t", "--db", "r.sqlite")
    assert "a long paragraph and answer" in " ".join(line.strip() for line in text.splitlines())
    if custom:
        assert report["state"] is None
        assert report["state_needs_graph"] == {"longest": "keep_longest"}
        assert "custom reducers, not replayed without it: 'longest' (keep_longest)" in text
    else:
        assert report["state"]["notes"] == ["a", "n"]
        assert report["state"]["messages"] == [{"id": "m1", "content": "hello"}]
    assert main(["show", "t", "--db", "r.sqlite", "--graph", "two.py"]) == 2
    assert "defines 2 graphs (first, second); pick one with two.py:first" in capsys.readouterr().err
    picked = json.loads(out_of(capsys, "show", "t", "--db", "r.sqlite", "--graph", "two.py:first",
                               "--format", "json", narrow=False))  # fmt: skip
    assert picked["state"]["notes"] == ["a", "n"]
