"""A command the CLI prints for a person to paste into a shell, laid out in 80 columns.

The invariant: whatever the width, a POSIX shell reads the printed lines as exactly the
words given. Words are quoted with :func:`shlex.quote`. A command too wide for one line is
continued with `` \\`` at the end of a line (an option stays on the line of its value); a
single word wider than a line (a PostgreSQL URL with a socket folder) is cut into pieces,
each quoted on its own, joined by a backslash-newline and with no space before the next
piece, so the shell joins them back into one word.

A line of text (a heading, an error) is wrapped by :func:`fit_line` instead; :func:`say`
prints text to stderr that way.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Sequence

from corral._where import command_db
from corral.cli._options import DEFAULT_DB

__all__ = ["WIDTH", "command_lines", "fit_line", "resume_words", "run_words", "say"]

WIDTH = 80
"""The columns of the terminal the CLI's text is laid out for."""

_BREAKS = ("?&", "/=,:")
"""Where a word too long for a line is best cut: after one of the first group (a URL's query
parts), else of the second, when one is in the second half of what fits."""


def command_lines(words: Sequence[str], *, indent: str = "  ", width: int = WIDTH) -> list[str]:
    r"""Return the shell command ``words`` as lines of at most ``width`` columns.

    >>> command_lines(["corral", "run", "a.py", "--thread", "t1"])
    ['  corral run a.py --thread t1']
    >>> for line in command_lines(["corral", "run", "a.py", "--db", "a/" * 16, "-v"], width=30):
    ...     print(line)
      corral run a.py \
        --db a/a/a/a/a/a/a/a/a/a/\
    a/a/a/a/a/a/ \
        -v
    """
    one = indent + shlex.join(words)
    if len(one) <= width:
        return [one]
    layout = _Layout(indent, width)
    for group in _groups(words):
        text = shlex.join(group)
        if len(layout.more) + len(text) + 2 <= width:
            layout.put(text)
            continue
        layout.start()  # the group is wider than a line: it starts one, its words go one by one
        for word in group:
            quoted = shlex.quote(word)
            if len(layout.more) + len(quoted) + 2 <= width:
                layout.put(quoted)
            else:
                layout.cut(word)
    return [*layout.lines, layout.line]


def fit_line(line: str, *, width: int = WIDTH) -> list[str]:
    """Return ``line`` wrapped at word breaks to ``width`` columns, continued 2 columns
    further in; a word too long for a line of its own (a URL, a path) is cut, filling the
    line it starts on.

    >>> fit_line("checkpoints: " + "runs/" * 6, width=24)
    ['checkpoints: runs/runs/r', '  uns/runs/runs/runs/']
    """
    lead = line[: len(line) - len(line.lstrip())]
    if len(line) <= width:
        return [line]
    return textwrap.wrap(
        line, width, subsequent_indent=lead + "  ", break_on_hyphens=False, drop_whitespace=True
    )


def say(text: str) -> None:
    """Print ``text`` on stderr, each line wrapped to 80 columns by :func:`fit_line` (the
    lines of a command made by :func:`command_lines` fit already and print as they are)."""
    for line in text.splitlines():
        print("\n".join(fit_line(line)), file=sys.stderr)


def run_words(path: str, thread: str, db: str, deps: str | None = None) -> list[str]:
    """Return the ``corral run`` that goes on with ``thread`` on ``db`` (its password left
    out: the pasted command finds it as libpq does)."""
    words = ["corral", "run", path, "--thread", thread]
    if db != DEFAULT_DB:
        words += ["--db", command_db(db)]
    return [*words, "--deps", deps] if deps else words


def resume_words(asking: Sequence[str]) -> list[str]:
    """Return the options that answer the interrupts with the ids ``asking``: none (a pause
    before or after a node asks nothing), ``--resume VALUE``, or one value per id."""
    if not asking:
        return []
    return ["--resume", "VALUE" if len(asking) == 1 else json.dumps(dict.fromkeys(asking, "VALUE"))]


class _Layout:
    """Lines being filled: words go on the current line until the next would not fit."""

    def __init__(self, indent: str, width: int) -> None:
        self.width = width
        self.more = indent + "  "
        """How continuation lines start."""
        self.lines: list[str] = []
        self.line = indent
        self.ended_cut = False
        """The line holds the last piece of a cut word: what follows goes on the next line."""

    def _break(self) -> None:
        self.lines.append(self.line + " \\")
        self.line = self.more

    def start(self) -> None:
        """Go on to a new line, unless the current one is still empty."""
        if self.line.strip():
            self._break()

    def put(self, text: str) -> None:
        """Add ``text`` (quoted words) to the line, first breaking it if ``text`` would not fit."""
        if self.line.strip() and (self.ended_cut or len(self.line) + len(text) + 3 > self.width):
            self._break()
        self.ended_cut = False
        self.line += (" " if self.line.strip() else "") + text

    def cut(self, word: str) -> None:
        """Add a word wider than a line, cut into pieces the shell joins back together."""
        if self.line.strip():
            if len(self.line) + _MIN_PIECE > self.width:
                self._break()
            else:
                self.line += " "
        rest = word
        while len(self.line) + len(shlex.quote(rest)) + 2 > self.width:
            size = _piece(rest, self.width - len(self.line) - 1)
            self.lines.append(self.line + shlex.quote(rest[:size]) + "\\")
            self.line = ""  # a space here would end the word
            rest = rest[size:]
        self.line += shlex.quote(rest)
        self.ended_cut = True


_MIN_PIECE = 16
"""A line with fewer free columns than this starts a long word on the next line instead."""


def _groups(words: Sequence[str]) -> list[list[str]]:
    """Return the words in groups kept on one line if they fit: the command and its
    arguments, then each option with its value."""
    groups: list[list[str]] = []
    for word in words:
        joins = groups and not word.startswith("-")
        if joins and (not groups[-1][0].startswith("-") or len(groups[-1]) == 1):
            groups[-1].append(word)
        else:
            groups.append([word])
    return groups


def _piece(word: str, room: int) -> int:
    """Return how many characters of ``word`` to put, quoted, in ``room`` columns (at
    least one); the cut falls after a ``?``, ``&``, ``/``... (see ``_BREAKS``)."""
    size = 1
    while size < len(word) and len(shlex.quote(word[: size + 1])) <= room:
        size += 1
    for group in _BREAKS:
        cut = max(word.rfind(c, 0, size) for c in group) + 1
        if cut > size // 2:
            return cut
    return size
