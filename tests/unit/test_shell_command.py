"""``corral.cli._shell.command_lines``: a printed command fits its width and a shell reads
back exactly its words."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.cli._shell import command_lines

URL = "postgresql://postgres@/t_0123456789abcdef?host=/tmp/corral-pg-k2j3h4g5&port=5432"


def read_back(lines: list[str]) -> list[str]:
    """Return the words a POSIX shell reads: a backslash-newline outside quotes is removed."""
    return shlex.split("\n".join(lines).replace("\\\n", ""))


def test_a_short_command_is_one_indented_line() -> None:
    """A command that fits is shell-quoted on one line."""
    words = ["corral", "run", "agent.py", "--thread", "t 1", "--resume", "VALUE"]
    assert command_lines(words) == ["  corral run agent.py --thread 't 1' --resume VALUE"]


def test_a_long_url_is_cut_where_the_shell_joins_it_again() -> None:
    """An option stays with its value; a URL wider than a line is cut after its '?', and
    what follows the cut word starts a line of its own."""
    words = ["corral", "run", "agent.py", "--thread", "t1", "--db", URL, "--resume", "VALUE"]
    assert command_lines(words) == [
        "  corral run agent.py --thread t1 \\",
        "    --db 'postgresql://postgres@/t_0123456789abcdef?'\\",
        "'host=/tmp/corral-pg-k2j3h4g5&port=5432' \\",
        "    --resume VALUE",
    ]
    assert read_back(command_lines(words)) == words


_WORD = st.text(
    st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_categories=("Cs",)),
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_WORD, min_size=1, max_size=8),
    st.integers(30, 100),
    st.sampled_from(["", "  ", "    "]),
)
def test_any_command_fits_and_reads_back(words: list[str], width: int, indent: str) -> None:
    """Whatever the words (quotes, spaces, very long ones), no line is wider than ``width``
    and the shell reads the lines as exactly those words."""
    lines = command_lines(words, indent=indent, width=width)
    assert all(len(line) <= width for line in lines), lines
    assert read_back(lines) == words
