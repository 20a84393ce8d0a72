"""Secrets and inputs at the command line (issue 31, point 7).

No password in any error or JSON; ``--db`` takes exactly ``FILE``, ``sqlite:FILE`` and a
``postgresql://``/``postgres://`` URL in any case and refuses the rest by name; every input
is bounded; each message says what is wrong and what to do, never "a bug in corral?".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corral.checkpoint import PostgresSaver, SqliteSaver
from corral.cli import main
from corral.errors import CheckpointError

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = ROOT / "tests" / "integration" / "cli_fixtures" / "approval.py"
SECRET = "s3cret-PW"
GRAPH = """\
from typing import TypedDict

from corral import END, Graph


class State(TypedDict):
    n: int


g = Graph(State)


@g.node(start=True, then=END)
def step(state: State) -> dict[str, object]:
    return {"n": state.get("n", 0) + 1}
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.py").write_text(GRAPH)
    return tmp_path


def corral(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    err = " ".join(err.split())  # messages are wrapped at 80 columns
    assert "a bug in corral" not in err
    return code, out, err


MALFORMED = [
    f"postgresql://app:{SECRET}@ho%zzst/db",  # a bad % escape
    f"postgresql://app:{SECRET}@ho st/db",  # a space
    f"postgresql://app:{SECRET}@[::1/db",  # an unclosed [
    f"postgresql://app:{SECRET}%zz@host/db",  # a bad escape in the password itself
]


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("command", [["run", "g.py"], ["threads"], ["show", "t"]])
def test_a_malformed_url_never_shows_its_password(
    here: Path, url: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each malformed URL is refused (exit 2) with how to write it, and no password."""
    code, out, err = corral(capsys, *command, "--db", url)
    assert code == 2
    assert SECRET not in out + err
    assert "cannot read the PostgreSQL connection string" in err and "%25" in err
    assert sorted(os.listdir(here)) == ["g.py"]


@pytest.mark.parametrize("url", MALFORMED)
def test_the_api_never_shows_a_malformed_urls_password(url: str) -> None:
    """``PostgresSaver(url)`` raises CheckpointError without the password (nor the URL)."""
    with pytest.raises(CheckpointError) as caught:
        PostgresSaver(url)
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value.args)


@pytest.mark.parametrize(
    ("db", "said"),
    [
        (f"host=db password={SECRET} dbname=agents", "not as a libpq key=value string"),
        ("sqlite:///runs.sqlite", "write sqlite:PATH"),
        (f"mysql://app:{SECRET}@db/agents", "--db mysql:// is not a database corral can use"),
        ("Redis://db", "--db redis:// is not a database"),
        (":memory:", "no run could be resumed or shown"),
        ("sqlite::memory:", "no run could be resumed or shown"),
        ("", "no run could be resumed or shown"),
    ],
)
def test_a_db_corral_does_not_take_is_refused_by_name(
    here: Path, db: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No form but FILE, sqlite:FILE and postgresql:// becomes a database, nor a local file."""
    code, out, err = corral(capsys, "run", "g.py", "--db", db)
    assert code == 2
    assert said in err
    assert SECRET not in out + err
    assert sorted(os.listdir(here)) == ["g.py"]


def test_sqlite_colon_file_and_a_postgres_scheme_in_any_case_are_taken(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sqlite:FILE`` is the file FILE; ``PostgreSQL://`` is PostgreSQL, not a folder."""
    code, _, err = corral(capsys, "run", "g.py", "--db", "sqlite:runs/c.sqlite")
    assert code == 0, err
    assert (here / "runs" / "c.sqlite").stat().st_size > 0
    code, _, err = corral(capsys, "run", "g.py", "--db", f"PostgreSQL://app:{SECRET}@127.0.0.1:1/x")
    assert code == 2
    assert "cannot connect to 'postgresql://127.0.0.1:1/x'" in err and SECRET not in err
    assert sorted(os.listdir(here)) == ["g.py", "runs"]


@pytest.mark.parametrize("kind", ["/dev/null", "fifo", "folder"])
@pytest.mark.parametrize("command", [["run", "g.py"], ["threads"]])
def test_a_db_that_is_not_a_regular_file_is_named(
    here: Path, kind: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/null, a FIFO or a folder as --db says what it is, not "the disk may be full"."""
    if kind == "fifo":
        os.mkfifo(here / "pipe.sqlite")
        db, said = "pipe.sqlite", "'pipe.sqlite' is a FIFO, not a SQLite file"
    elif kind == "folder":
        (here / "dir.sqlite").mkdir()
        db, said = "dir.sqlite", "'dir.sqlite' is a folder, not a SQLite file"
    else:
        db, said = "/dev/null", "'/dev/null' is a device, not a SQLite file"
    code, _, err = corral(capsys, *command, "--db", db)
    assert code == 2
    assert said in err
    assert "disk" not in err
    with pytest.raises(CheckpointError, match="not a SQLite file"):
        SqliteSaver(db)


@pytest.mark.parametrize("command", [["run", "g.py"], ["threads"], ["show", "t"]])
def test_an_empty_checkpoint_file_is_not_silently_made_new(
    here: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing zero-byte --db file is refused with what to do, and left as it was."""
    (here / "runs.sqlite").touch()
    code, _, err = corral(capsys, *command, "--db", "runs.sqlite")
    assert code == 2
    assert "'runs.sqlite' is an empty file, not a checkpoint database" in err
    assert (here / "runs.sqlite").stat().st_size == 0


def test_input_from_dev_zero_is_bounded(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--input @/dev/zero`` stops at the cap with a message, instead of growing forever."""
    code, _, err = corral(capsys, "run", "g.py", "--input", "@/dev/zero")
    assert code == 1
    assert "the input file '/dev/zero' is larger than 64 MiB" in err


@pytest.mark.parametrize("option", ["--input", "--resume"])
def test_an_integer_too_long_to_read_is_named(
    here: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5,000-digit integer in --input (or --resume) says so and what to send instead."""
    value = '{"n": ' + "9" * 5000 + "}"
    extra = ["--thread", "t"] if option == "--resume" else []
    code, _, err = corral(capsys, "run", "g.py", *extra, option, value)
    assert code == 1
    assert f"{option} holds an integer too long to read (5000 digits)" in err


@pytest.mark.parametrize("command", [["run", "g.py", "--thread"], ["show"], ["history"]])
def test_a_thread_id_that_is_not_utf8_is_refused(
    here: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes the locale could not decode (lone surrogates) are a usage error naming them."""
    code = main([*command, "t\udcff"])
    err = capsys.readouterr().err
    assert code == 2
    assert "the thread id 't\\\\xff' is not valid UTF-8 text" in err


def test_stdout_on_a_full_device_is_named(here: Path) -> None:
    """``corral run ... > /dev/full`` says the output could not be written (exit 1)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "corral", "run", "g.py"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert "error: cannot write the output to stdout: No space left on device" in said
    assert "bug in corral" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("option", ["--lease", "--poll", "--grace"])
def test_a_duration_too_long_for_a_clock_is_refused(
    here: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``corral worker --lease 1e308`` is a usage error, not a thread traceback."""
    code = main(["worker", "g.py", option, "1e308"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"argument {option}: '1e308' is not a number of seconds above 0 and at most" in err


def test_resume_commands_never_hold_the_password(
    here: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resume command of ``run`` and of ``show`` (text and JSON) leaves the password out."""
    shutil.copy(APPROVAL, here / "approval.py")
    url = postgres_url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")
    assert SECRET in url
    code = main(
        ["run", "approval.py", "--thread", "t1", "--db", url, "--input", '{"request": "x"}']
    )
    out, err = capsys.readouterr()
    assert code == 3, err
    assert SECRET not in out + err
    assert "--db 'postgresql://postgres@/" in err
    for form in ("text", "json"):
        code = main(["show", "t1", "--db", url, "--format", form])
        out, err = capsys.readouterr()
        assert code in (0, 3), err
        assert SECRET not in out + err
    report = json.loads(out)
    assert report["resume"].startswith("corral run PATH --thread t1 --db 'postgresql://postgres@/")
