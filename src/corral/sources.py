"""Which files corral reads: the one folder walk shared by ``lint``, ``lint --static`` and ``draw``.

``corral lint`` and ``corral lint --static`` must see the same files, or they report
different findings for the same tree; so both take their files from :func:`python_files`,
and nothing else in corral walks a folder. The walk skips hidden folders, ``__pycache__``,
``site-packages``, ``node_modules`` and virtual environments (any folder holding
``pyvenv.cfg``), and whatever an ``--exclude`` pattern matches. It reads only regular files
no larger than :data:`MAX_FILE_BYTES`, opened without blocking and checked on the open
descriptor: a FIFO named ``pipe.py`` or a link ``zero.py -> /dev/zero`` is reported, never
read (reading either would hang or fill memory).
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from corral.errors import CorralError

__all__ = [
    "MAX_FILE_BYTES",
    "SKIPPED_DIRS",
    "SourceFile",
    "UnreadableFile",
    "UsageError",
    "check_regular",
    "display_path",
    "exclude_patterns",
    "is_excluded",
    "mentions_corral",
    "python_files",
    "read_source",
]


class UsageError(CorralError):
    """A command line that names something that does not exist; the CLI exits with 2."""


SKIPPED_DIRS = frozenset({"__pycache__", "site-packages", "node_modules"})
"""Folder names never searched (besides hidden folders and virtual environments)."""

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Larger ``.py`` files are not read: a load error (no real graph module is this big)."""

_CORRAL = re.compile(rb"\bcorral\b")
_CORRAL_OR_LANGGRAPH = re.compile(rb"\b(corral|langgraph)\b")


@functools.cache
def _marker() -> re.Pattern[bytes]:
    """Return what a graph module's text mentions: ``corral``, or ``langgraph`` if installed.

    LangGraph modules are read only when LangGraph is importable: without it they could only
    fail to import.
    """
    if importlib.util.find_spec("langgraph") is not None:
        return _CORRAL_OR_LANGGRAPH
    return _CORRAL


class UnreadableFile(Exception):
    """A path that is not a regular file under :data:`MAX_FILE_BYTES` (a FIFO, a device)."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path} {problem}")


@dataclass(frozen=True)
class SourceFile:
    """One ``.py`` file the walk found, or could not read (``problem`` says why)."""

    path: str
    problem: UnreadableFile | None = None


def display_path(path: str | os.PathLike[str]) -> str:
    """Return ``path`` relative to the current directory when it is under it, else absolute.

    >>> display_path(os.path.join(os.getcwd(), "a", "b.py")) == os.path.join("a", "b.py")
    True
    """
    text = os.fspath(path)
    if text.startswith("<"):
        return text
    absolute = os.path.abspath(text)
    try:
        relative = os.path.relpath(absolute, os.getcwd())
    except ValueError:
        return absolute
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return absolute
    return relative


def exclude_patterns(exclude: Sequence[str]) -> list[str]:
    """Return ``--exclude`` values as the patterns :func:`python_files` matches."""
    return [_normalise_pattern(p) for p in exclude]


def _normalise_pattern(pattern: str) -> str:
    pattern = pattern.rstrip("/\\") or pattern
    if any(ch in pattern for ch in "*?["):
        return pattern
    return os.path.normpath(pattern)


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """Return whether ``path``, its name or one of its parent folders matches a pattern."""
    if not patterns:
        return False
    shown = os.path.normpath(display_path(path))
    candidates = {shown, os.path.abspath(path), os.path.basename(shown)}
    parts = Path(shown).parts
    for i in range(1, len(parts)):
        candidates.add(os.path.join(*parts[:i]))
    return any(fnmatch.fnmatch(c, p) for c in candidates for p in patterns)


def python_files(path: str, patterns: Sequence[str], *, only_marked: bool) -> Iterator[SourceFile]:
    """Yield the ``.py`` files ``path`` names: the one walk ``lint``, ``lint --static`` share.

    A folder is searched (hidden folders, ``__pycache__``, ``site-packages``,
    ``node_modules`` and virtual environments, i.e. folders holding ``pyvenv.cfg``, are
    skipped; so is whatever matches an exclude pattern). Only regular files under
    :data:`MAX_FILE_BYTES` are read: anything else (a FIFO, a link to ``/dev/zero``) is
    yielded with its ``problem`` set, unread. With ``only_marked``, a file found in a folder
    whose text never mentions ``corral`` (nor ``langgraph``, when it is installed) is
    skipped (it cannot define a graph); a file named by ``path`` is always read.

    Raises:
        UsageError: ``path`` is neither a folder nor a ``.py`` file.
    """
    if os.path.isdir(path):
        files: Iterable[str] = _walk(path, patterns)
    elif os.path.lexists(path):
        if not path.endswith((".py", ".pyw")):
            msg = f"{path!r} is not a Python file; give a .py file, a folder or a module name"
            raise UsageError(msg)
        if is_excluded(path, patterns):
            return
        files = (path,)
    else:
        msg = f"{path!r} does not exist; give a .py file, a folder or a dotted module name"
        raise UsageError(msg)
    named = not os.path.isdir(path)  # a file named on the command line is always read
    for file in files:
        try:
            if only_marked and not named:
                if _marker().search(read_source(file)) is None:
                    continue
            else:
                check_regular(file)
        except UnreadableFile as exc:
            yield SourceFile(file, exc)
            continue
        yield SourceFile(file)


def read_source(file: str) -> bytes:
    """Return the bytes of ``file``, refusing anything but a regular file of sane size.

    The file is opened without blocking and checked on the open descriptor, so a FIFO named
    ``x.py`` or a link to ``/dev/zero`` is refused instead of hanging or filling memory.

    Raises:
        UnreadableFile: not a regular file, larger than :data:`MAX_FILE_BYTES`, or an OS error.
    """
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            _check_stat(file, os.fstat(fd))
            chunks = []
            size = 0
            while size <= MAX_FILE_BYTES:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            _check_size(file, size)
            return b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        raise UnreadableFile(file, f"cannot be read: {exc.strerror}") from exc


def check_regular(file: str) -> None:
    try:
        info = os.stat(file)
    except OSError as exc:
        raise UnreadableFile(file, f"cannot be read: {exc.strerror}") from exc
    _check_stat(file, info)


def _check_stat(file: str, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        msg = "is not a regular file (a FIFO, a device or a socket); corral reads regular files"
        raise UnreadableFile(file, msg)
    _check_size(file, info.st_size)


def _check_size(file: str, size: int) -> None:
    if size > MAX_FILE_BYTES:
        limit = MAX_FILE_BYTES // (1024 * 1024)
        msg = f"is larger than {limit} MiB; corral does not read files that big (exclude it)"
        raise UnreadableFile(file, msg)


def _walk(folder: str, patterns: Sequence[str]) -> Iterator[str]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIPPED_DIRS
            and not os.path.isfile(os.path.join(root, d, "pyvenv.cfg"))  # a virtual environment
            and not is_excluded(os.path.join(root, d), patterns)
        )
        for name in sorted(files):
            file = os.path.join(root, name)
            if name.endswith(".py") and not is_excluded(file, patterns):
                yield file


def mentions_corral(file: str) -> bool:
    """Return whether ``file`` is readable and mentions ``corral`` (or ``langgraph``, when
    LangGraph is installed); an unreadable file counts (its import reports why)."""
    try:
        return _marker().search(read_source(file)) is not None
    except UnreadableFile:
        return True  # let the import report why the file cannot be read
