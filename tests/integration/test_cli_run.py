"""``corral run`` in-process: inputs, deps, resuming, failures and where checkpoints go.

The subprocess tests in test_cli.py cover exit codes 0, 3 and 1 end to end.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from corral.cli import main

from .test_cli_threads import shell_words

HERE = Path(__file__).resolve().parent
GOOD = str(HERE / "cli_fixtures" / "good.py")

TOOLS = '''\
"""Deps for a corral run: a fake client."""


class Client:
    def __init__(self) -> None:
        self.bonus = 40


def make() -> Client:
    return Client()


def broken() -> Client:
    raise RuntimeError("no API key")
'''

BONUS = """\
from typing import TypedDict

from corral import END, Context, Graph, MemorySaver


class State(TypedDict):
    score: int


g = Graph(State)


@g.node(start=True, then="publish")
def bump(state: State, ctx: Context) -> dict[str, object]:
    return {"score": state["score"] + ctx.deps.bonus}


@g.node(then=END)
def publish(state: State) -> dict[str, object]:
    return {}


app = g.compile(checkpointer=MemorySaver(), interrupt_before=["publish"])
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    """Return ``text`` with its white space (the line breaks of wrapped lines) as one space."""
    return " ".join(text.split())


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "runs.sqlite")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"score": ', "error: --input is not valid JSON (Expecting value at line 1 column 11)"),
        ("[40]", "error: --input must be a JSON object of state keys, not list"),
    ],
)
def test_bad_input_exits_1_before_anything_runs(
    text: str, message: str, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input that is not a JSON object is reported in one line; nothing is imported or run."""
    code, out, err = run(capsys, GOOD, "--input", text, "--db", db)
    assert (code, out) == (1, "")
    assert err.startswith(message)
    assert not Path(db).exists()


def test_input_from_a_file(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--input @file.json`` reads the input; a missing file is bad input (exit 1)."""
    (tmp_path / "in.json").write_text('{"score": 80}')
    code, out, _ = run(capsys, GOOD, "--input", f"@{tmp_path / 'in.json'}", "--db", db)
    assert (code, json.loads(out)) == (0, {"score": 80})
    code, _, err = run(capsys, GOOD, "--input", "@missing.json", "--db", db)
    assert code == 1
    assert err.startswith("error: cannot read the input file 'missing.json': ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resume", "yes"], "error: --resume answers the interrupt of a thread; give its"),
        (
            ["--thread", "t", "--resume", "yes", "--input", "{}"],
            "error: give --input (start a run) or --resume (answer an interrupt), not both",
        ),
        (["--deps", "nocolon"], "error: --deps 'nocolon' must be MODULE:FACTORY"),
        (["--max-steps", "0"], "usage: corral run"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Options that contradict each other are usage errors."""
    code, _, err = run(capsys, GOOD, "--db", db, *args)
    assert code == 2
    assert err.startswith(message)


def test_a_node_error_exits_1_and_names_the_node(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An exception in a node is one message naming the node; the checkpoint is kept."""
    code, out, err = run(capsys, GOOD, "--input", '{"score": -40}', "--db", db, "--thread", "n")
    assert (code, out) == (1, "")
    assert "error: node 'revise' raised ValueError: score -40 is negative" in err
    assert flat(err).endswith(f"the last checkpoint of thread n is kept ({db})")
    assert all(len(line) <= 80 for line in err.splitlines()), err
    assert "Traceback" not in err
    code, _, err = run(capsys, GOOD, "--input", '{"score": -40}', "--db", db, "--verbose")
    assert code == 1
    assert "Traceback (most recent call last)" in err


def test_a_capped_run_continues_on_its_thread(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """After a step cap, ``--thread ID --max-steps N`` goes on from the checkpoint."""
    args = ["--db", db, "--thread", "cap"]
    code, _, _ = run(capsys, GOOD, "--input", '{"score": 40}', *args, "--max-steps", "4")
    assert code == 1
    code, out, err = run(capsys, GOOD, *args, "--max-steps", "10")
    assert (code, json.loads(out)) == (0, {"score": 80})
    assert err.startswith("continuing ") and "good.py:g on thread cap " in flat(err)
    assert "[5/10] revise" in err


def test_a_graph_that_does_not_compile_is_a_load_error(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` compiles the graph; its findings are listed and nothing runs (exit 2)."""
    code, out, err = run(capsys, str(HERE / "cli_fixtures" / "broken.py"), "--db", db)
    assert (code, out) == (2, "")
    broken = HERE / "cli_fixtures" / "broken.py"
    assert flat(err).startswith(f"error: {broken}:g does not compile (2 errors): ")
    found = [line.split()[1] for line in err.splitlines() if re.match(r"  \S+:\d+:\d+: ", line)]
    assert found == ["CR201", "CR103"]


def test_a_module_that_raised_graph_error_at_import_is_not_run(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partial module is good enough to draw, not to run."""
    code, _, err = run(capsys, str(HERE / "cli_fixtures" / "compiled_broken.py"), "--db", db)
    assert code == 2
    assert "GraphError: the graph has errors (CR101)" in err


def test_deps_and_a_compiled_apps_interrupt_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--deps tools:make`` reaches ``ctx.deps``; the app's interrupt_before is kept, and
    ``corral show`` says what the thread waits for in the words ``corral run`` used."""
    (tmp_path / "bonus_tools.py").write_text(TOOLS)
    (tmp_path / "bonus_agent.py").write_text(BONUS)
    monkeypatch.chdir(tmp_path)
    args = ["bonus_agent.py:app", "--deps", "bonus_tools:make", "--thread", "b"]
    code, out, err = run(capsys, *args, "--input", '{"score": 2}')
    assert (code, json.loads(out)) == (3, {"score": 42})
    waiting = [
        "waiting for a person on thread b:",
        "  paused before 'publish' (interrupt_before)",
        "go on with:",
    ]
    assert err.splitlines()[-4:] == [
        *waiting,
        "  corral run bonus_agent.py:app --thread b --deps bonus_tools:make",
    ]
    assert Path(".corral/checkpoints.sqlite").exists()  # the default --db
    # corral show says the same of the thread (its command names no --deps: add it)
    assert main(["show", "b", "--graph", "bonus_agent.py:app"]) == 0
    shown = capsys.readouterr().out.splitlines()
    at = shown.index(waiting[0])
    assert shown[at : at + 4] == [*waiting, "  corral run bonus_agent.py:app --thread b"]
    code, out, err = run(capsys, *args)
    assert (code, json.loads(out)) == (0, {"score": 42})


def test_deps_that_fail_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A factory that raises, or a missing one, stops before the run (exit 2)."""
    (tmp_path / "failing_tools.py").write_text(TOOLS)
    (tmp_path / "bonus_agent2.py").write_text(BONUS)
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "bonus_agent2.py", "--deps", "failing_tools.py:broken")
    assert code == 2
    assert err == "error: --deps: broken() raised RuntimeError: no API key\n"
    code, _, err = run(capsys, "bonus_agent2.py", "--deps", "failing_tools:nothing")
    assert (code, err) == (2, "error: --deps: failing_tools has no attribute 'nothing'\n")


def test_resume_value_is_json_when_it_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--resume 3`` hands the node the number 3; ``--resume yes`` the text."""
    source = textwrap.dedent(
        """\
        from typing import TypedDict

        from corral import END, Graph, interrupt


        class State(TypedDict):
            answer: object


        g = Graph(State)


        @g.node(start=True, then=END)
        def ask(state: State) -> dict[str, object]:
            return {"answer": interrupt("how many?")}
        """
    )
    (tmp_path / "asker.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    for value, expected in (("3", 3), ("yes", "yes"), ('{"n": 1}', {"n": 1})):
        code, _, err = run(capsys, "asker.py", "--thread", value, "--input", "{}")
        assert code == 3
        assert re.search(r'  ask asks \(id [0-9a-f]+\): "how many\?"', err)
        code, out, _ = run(capsys, "asker.py", "--thread", value, "--resume", value)
        assert (code, json.loads(out)) == (0, {"answer": expected})


def test_a_postgres_url_keeps_the_thread(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--db postgresql://...`` keeps checkpoints in PostgreSQL; a capped run goes on."""
    args = ["--db", postgres_url, "--thread", "cap"]
    code, _, _ = run(capsys, GOOD, "--input", '{"score": 40}', *args, "--max-steps", "4")
    assert code == 1
    code, out, err = run(capsys, GOOD, *args, "--max-steps", "10")
    assert (code, json.loads(out)) == (0, {"score": 80})
    assert "[5/10] revise" in err


def test_a_password_in_the_postgres_url_is_not_shown_in_the_heading(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Neither the heading nor the printed command shows the password (the server trusts the
    socket, so the password is ignored); the command, pasted, gets it from PGPASSWORD or
    ~/.pgpass, as libpq does for a URL without one (issue 31, point 7)."""
    sep = "&" if "?" in postgres_url else "?"
    url = f"{postgres_url}{sep}password=hunter2secret"
    args = ["--db", url, "--thread", "pw"]
    code, _, err = run(capsys, GOOD, "--input", '{"score": 40}', *args, "--max-steps", "4")
    assert code == 1
    heading = err[: err.index("max_steps=")]
    assert "running" in heading and "postgresql://" in heading, err
    assert "hunter2secret" not in err
    assert "--db 'postgresql://postgres@/" in err


def test_a_postgres_url_without_a_server_is_an_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable server is an ``error:`` naming the database (wrapped to 80 columns),
    no traceback."""
    url = f"postgresql://u:pw@/agents?host={tmp_path / ('support-agent-sockets-' * 4)}&port=1"
    code, _, err = run(capsys, GOOD, "--input", '{"score": 40}', "--db", url)
    assert code == 2
    assert err.startswith("error: cannot connect to 'postgresql:///agents?host=")
    assert "Traceback" not in err and "pw" not in err
    assert all(len(line) <= 80 for line in err.splitlines()), err


ASKS = """\
import operator
from typing import Annotated, Literal, TypedDict

from corral import END, Graph, MemorySaver, Send, interrupt


class State(TypedDict):
    topics: list[str]
    answers: Annotated[list[str], operator.add]


g = Graph(State, name="asks")


@g.node(start=True)
def plan(state: State) -> dict[str, object]:
    return {}


@g.router("plan")
def spread(state: State) -> list[Send[Literal["ask"]]]:
    return [Send("ask", {"topics": [t]}) for t in state["topics"]]


@g.node(then="publish")
def ask(state: State) -> dict[str, object]:
    return {"answers": [interrupt({"topic": state["topics"][0]})]}


@g.node(then=END)
def publish(state: State) -> dict[str, object]:
    return {}


app = g.compile(checkpointer=MemorySaver(), interrupt_before=["publish"])
"""


def printed_commands(err: str) -> list[list[str]]:
    """Return each command printed in ``err``, as its lines: from a line that starts with
    ``  corral run`` up to the first line that does not end in a backslash."""
    commands: list[list[str]] = []
    lines = iter(err.splitlines())
    for line in lines:
        if line.startswith("  corral run "):
            command = [line]
            while command[-1].endswith("\\"):
                command.append(next(lines))
            commands.append(command)
    return commands


def the_command(err: str, *, db: str, thread: str, extra: int) -> list[str]:
    """Return the words of the one command in ``err``, checked: each of its lines fits 80
    columns, and ``sh`` reads them as ``corral run asks.py:app --thread T --db DB`` and
    ``extra`` more words."""
    [lines] = printed_commands(err)
    assert all(len(line) <= 80 for line in lines), lines
    words = shell_words(lines)
    assert words[:7] == ["corral", "run", "asks.py:app", "--thread", thread, "--db", db], lines
    assert len(words) == 7 + extra, words
    return words


@pytest.fixture(params=["long path", "postgres", "long thread id"])
def where(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """A database and a thread id that make ``corral run ... --thread T --db DB`` wider
    than 80 columns: a deep SQLite path, a PostgreSQL URL, or a long thread id."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "asks.py").write_text(ASKS)
    if request.param == "long path":
        folder = tmp_path / ("checkpoints of the support agent " * 3).strip()
        folder.mkdir()
        return str(folder / "runs.sqlite"), "t1"
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url"), "t1"
    return "runs.sqlite", "support-ticket-" + "0123456789abcdef" * 5


def unspaced(text: str) -> str:
    return re.sub(r"\s", "", text)


def said(err: str, *, until: str) -> str:
    """Return the lines of ``err`` before the first that starts with ``until`` (a wrapped
    heading or ``error:``), with no white space: a word wider than a line is cut where the
    line ends. Every line of ``err`` is checked to fit 80 columns."""
    lines = err.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    end = next(i for i, line in enumerate(lines) if line.startswith(until))
    return unspaced("".join(lines[:end]))


def test_every_command_run_prints_fits_80_columns_and_works(
    where: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Resume, go on, answer by id, continue after a cap, and the refusals' commands: each
    is printed within 80 columns (continued with ' \\', a long URL cut into pieces the
    shell joins again), and what ``sh`` reads from the printed lines is the command that
    does go on with the thread. The heading and the ``error:`` lines, which name the
    database, are wrapped to 80 columns too."""
    db, thread = where
    on = ["--db", db, "--thread", thread]
    code, _, err = run(capsys, "asks.py:app", *on, "--input", '{"topics": ["a"]}')
    assert code == 3
    heading = f"running asks.py:app on thread {thread} (checkpoints: {db}, max_steps=50)"
    assert said(err, until="[1/50] plan") == unspaced(heading)
    words = the_command(err, db=db, thread=thread, extra=2)
    assert words[-2:] == ["--resume", "VALUE"]
    code, _, err = run(capsys, *words[2:-1], "yes")  # paused before publish
    assert code == 3
    assert "go on with:" in err
    words = the_command(err, db=db, thread=thread, extra=0)
    code, out, err = run(capsys, *words[2:])
    assert (code, json.loads(out)["answers"]) == (0, ["yes"])
    # A finished thread has nothing to answer: the refusal gives the command to start anew.
    code, _, err = run(capsys, "asks.py:app", *on, "--resume", "yes")
    assert code == 1
    assert "start a new run with:" in err
    assert the_command(err, db=db, thread=thread, extra=2)[-2:] == ["--input", "JSON"]
    # A thread with no checkpoint: the same, after "start it with:".
    code, _, err = run(capsys, "asks.py:app", "--db", db, "--thread", thread + "2")
    assert code == 1
    refusal = f"error: thread '{thread}2' has no checkpoint in {db}; start it with:"
    assert said(err, until="  corral run ") == unspaced(refusal)
    [lines] = printed_commands(err)
    assert all(len(line) <= 80 for line in lines), lines
    assert shell_words(lines)[4] == thread + "2"
    # Two questions: the command that answers each by id, printed and in the refusal.
    code, _, err = run(capsys, "asks.py:app", *on, "--input", '{"topics": ["a", "b"]}')
    assert code == 3
    words = the_command(err, db=db, thread=thread, extra=2)
    ids = set(json.loads(words[-1]))
    assert len(ids) == 2
    code, _, err = run(capsys, "asks.py:app", *on, "--resume", "yes")
    assert (code, "answer each by id:" in err) == (1, True)
    assert the_command(err, db=db, thread=thread, extra=2) == words
    code, _, err = run(capsys, *words[2:-1], json.dumps(dict.fromkeys(ids, "ok")))
    assert code == 3  # before publish
    # A step cap: the command that continues with twice the cap.
    on = ["--db", db, "--thread", thread + "3"]
    capped = ["--input", '{"topics": ["a"]}', "--max-steps", "1"]
    code, _, err = run(capsys, "asks.py:app", *on, *capped)
    assert code == 1
    assert "the state reached is saved; continue with:" in err
    words = the_command(err, db=db, thread=thread + "3", extra=2)
    assert words[-2:] == ["--max-steps", "2"]


TWO = ASKS + '\nh = Graph(State, name="other")\n'

BROKEN_ALIAS = (HERE / "cli_fixtures" / "broken.py").read_text() + "\ndraft = g\n"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("asks.py:app", "asks.py:app"),  # the compiled app, not the graph it was compiled from
        ("asks.py:g", "asks.py:g"),
        ("asks.py", "asks.py:g"),  # the one graph: by the name it was found under first
        ("./asks.py:app", "./asks.py:app"),  # the path as written
        (".", "asks.py:g"),  # a folder: the file the graph is in
    ],
)
def test_the_heading_names_the_graph_as_the_user_picked_it(
    given: str,
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``g = Graph(...)`` and ``app = g.compile(...)`` are one graph to the loader; the
    heading names the one the user picked, as the user wrote the path."""
    monkeypatch.chdir(tmp_path)
    Path("asks.py").write_text(ASKS)
    code, _, err = run(capsys, given, "--db", "runs.sqlite", "--input", '{"topics": ["a"]}')
    assert code == 3
    assert err.startswith(f"running {named} on thread "), err


def test_refusals_name_the_graph_as_the_user_picked_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A graph that does not compile, picked by a second name, is named by that name; two
    graphs and no ``:name``: the advice names the path as written."""
    monkeypatch.chdir(tmp_path)
    Path("loop.py").write_text(BROKEN_ALIAS)
    code, _, err = run(capsys, "loop.py:draft", "--db", "runs.sqlite")
    assert code == 2
    assert err.startswith("error: loop.py:draft does not compile (2 errors):\n"), err
    Path("two.py").write_text(TWO)
    code, _, err = run(capsys, "./two.py", "--db", "runs.sqlite")
    assert code == 2
    assert err == "error: ./two.py defines 2 graphs (g, h); pick one with ./two.py:g\n"


FLAKY = """\
from typing import TypedDict

from corral import END, Graph, Retry


class State(TypedDict):
    tries: int


calls = []


g = Graph(State)


@g.node(start=True, then=END, retry=Retry(attempts=3, backoff=0, jitter=False))
def fetch(state: State) -> dict[str, int]:
    calls.append(1)
    if len(calls) < 3:
        raise ConnectionError("reset by peer")
    return {"tries": len(calls)}
"""


def test_progress_shows_each_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 pt 5: a failed attempt that will be retried is a progress line, not silence."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flaky.py").write_text(FLAKY)
    assert main(["run", "flaky.py", "--input", '{"tries": 0}', "--db", "f.sqlite"]) == 0
    err = capsys.readouterr().err
    assert "fetch attempt 1 failed (ConnectionError: reset by peer); retrying in 0 s" in err
    assert "fetch attempt 2 failed" in err
    assert "attempt 3" not in err
