"""Read where checkpoints go: the one place a ``--db`` value or a saver's target is checked.

``--db`` takes exactly three forms: ``FILE`` (a path), ``sqlite:FILE``, and a
``postgresql://``/``postgres://`` URL (the scheme in any case). Everything else is refused by
name rather than becoming a local file by accident (``mysql://...``, ``sqlite:///x``, a libpq
``key=value`` string, ``:memory:``). No message repeats a connection string that could not be
read: it may hold a password.

The savers call :func:`check_conninfo` and :func:`check_sqlite_path` too, so the API refuses
what the command line refuses, with the same words.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from corral.errors import CheckpointError

__all__ = ["Where", "check_conninfo", "check_sqlite_path", "command_db", "parse_db"]

_SCHEME = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES = ("postgresql", "postgres")
_LIBPQ = re.compile(
    r"\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|service|options|"
    r"connect_timeout|application_name|target_session_attrs)\s*=",
    re.IGNORECASE,
)
_FORMS = "give a SQLite file path, sqlite:FILE or a postgresql:// URL"


@dataclass(frozen=True)
class Where:
    """A checked ``--db`` value."""

    kind: Literal["sqlite", "postgres"]
    target: str
    """The SQLite file's path, or the PostgreSQL URL with its scheme in lower case."""


def parse_db(db: str) -> Where:
    """Return where ``db`` (a ``--db`` value) keeps checkpoints, or refuse it.

    >>> parse_db("runs/c.sqlite"), parse_db("sqlite:c.db").target
    (Where(kind='sqlite', target='runs/c.sqlite'), 'c.db')
    >>> parse_db("PostgreSQL://db.example/agents").target
    'postgresql://db.example/agents'

    Raises:
        CheckpointError: a form ``--db`` does not take, a URL libpq cannot read (its text
            is not repeated), ``:memory:``, or a path that is not a regular file or is empty.
    """
    found = _SCHEME.match(db)
    if found is not None:
        scheme = found["scheme"].lower()
        if scheme in _POSTGRES:
            url = scheme + db[len(found["scheme"]) :]
            check_conninfo(url)
            return Where("postgres", url)
        if scheme == "sqlite":
            msg = (
                "--db 'sqlite://...' is ambiguous (relative or absolute?); write "
                "sqlite:PATH, e.g. sqlite:runs/c.sqlite or sqlite:/tmp/c.sqlite, or the path"
            )
        else:
            msg = f"--db {scheme}:// is not a database corral can use; {_FORMS}"
        raise CheckpointError(msg)
    if _LIBPQ.match(db):
        msg = (
            "--db takes a PostgreSQL database as a URL, not as a libpq key=value string: "
            "postgresql://USER@HOST:PORT/DBNAME (the password from PGPASSWORD or ~/.pgpass)"
        )
        raise CheckpointError(msg)
    path = db[len("sqlite:") :] if db[:7].lower() == "sqlite:" else db
    if path in ("", ":memory:") or path.startswith("file:"):
        msg = (
            f"--db {db!r} is not a file: checkpoints kept in memory or in a SQLite URI "
            "would be gone when this command ends, so no run could be resumed or shown; "
            "give a file path such as runs.sqlite"
        )
        raise CheckpointError(msg)
    check_sqlite_path(path)
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        msg = (
            f"{path!r} is an empty file, not a checkpoint database (a copy cut short?); "
            "restore it, or remove it to start a new database there"
        )
        raise CheckpointError(msg)
    return Where("sqlite", path)


def check_sqlite_path(path: str) -> None:
    """Refuse a SQLite target that exists and is not a regular file (a FIFO, ``/dev/null``).

    >>> check_sqlite_path(":memory:")

    Raises:
        CheckpointError: naming the path and what it is.
    """
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing: SQLite creates it; unreadable: SQLite says why
    if stat.S_ISREG(mode):
        return
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"))
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    msg = f"{path!r} is {kind}, not a SQLite file; give the path of a checkpoint file"
    raise CheckpointError(msg)


def check_conninfo(conninfo: str) -> None:
    """Refuse a PostgreSQL connection string libpq cannot read, without repeating it.

    Raises:
        CheckpointError: what is wrong (the driver's words, minus any quoted part of the
            string) and how to write it.
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(conninfo)
    except Exception as exc:
        reason = _without_quotes(str(exc), conninfo)
        msg = (
            f"cannot read the PostgreSQL connection string ({reason}; it is not shown, as it "
            "may hold a password); write % as %25 and a space as %20, and close the "
            "brackets of an IPv6 host ([::1])"
        )
        raise CheckpointError(msg) from None


def _without_quotes(text: str, secret: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "it cannot be parsed"
    first = re.sub(r'\s*"[^"]*"?', "", first).rstrip(" :,")  # libpq quotes what it read
    for part in (secret, *re.split(r"[/@:?&= ]+", secret)):
        if len(part) >= 3 and part.lower() not in {"postgresql", "postgres"}:
            first = first.replace(part, "…")
    return first or "it cannot be parsed"


def command_db(db: str) -> str:
    """Return ``db`` as a command to paste shows it: a URL without its password.

    libpq then takes the password from ``PGPASSWORD`` or ``~/.pgpass``.

    >>> command_db("postgresql://app:secret@db.example:5433/agents?sslmode=require")
    'postgresql://app@db.example:5433/agents?sslmode=require'
    >>> command_db("runs/c.sqlite")
    'runs/c.sqlite'
    """
    found = _SCHEME.match(db)
    if found is None or found["scheme"].lower() not in _POSTGRES:
        return db
    try:
        parts = urlsplit(db)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}@{host}"
        query = [(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"]
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, safe="/")))
    except ValueError:
        return f"{found['scheme']}://…"
