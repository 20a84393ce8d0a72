"""``compact()``: the schema's SQL made short without changing what SQLite makes of it.

The oracle is SQLite itself: a statement and its compacted text must compile to the same
program (``EXPLAIN``), give the same rows and the same column names. Random statements
put white space and comments between their tokens (never none: two tokens may need it)
and quoted strings and identifiers that hold white space, quotes, ``--`` and ``/*``.
"""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from corral import SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.sqlite._layout import SCHEMA
from corral.checkpoint.sqlite._runs import compact

_GAPS = [" ", "  ", "\n", "\t", " \n\t ", "\r\n", " -- a note\n", "/* c */", " /* it's - */ "]
_OPS = ["+", "-", "*", "/", "%", "||", "<", "<=", ">", ">=", "=", "==", "<>", "!=", "<<", ">>"]
_OPS += ["&", "|", "AND", "OR", "IS", "IS NOT"]
_TEXT = st.text(alphabet=" '\"-/*\n\ta;()=x", max_size=12)


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_name(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


atoms = st.one_of(
    st.integers(-50, 50).map(str),
    _TEXT.map(sql_string),
    st.sampled_from(["NULL", "x", "t.x", "?1"]),
)


def _grow(inner: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(_OPS), inner).map(lambda t: [*t[0], t[1], *t[2]]),
        st.tuples(st.sampled_from(["-", "+", "~", "NOT"]), inner).map(lambda t: [t[0], *t[1]]),
        inner.map(lambda e: ["(", *e, ")"]),
        st.tuples(st.sampled_from(["abs", "coalesce", "typeof"]), inner, inner).map(
            lambda t: [t[0], "(", *t[1], *([",", *t[2]] if t[0] == "coalesce" else []), ")"]
        ),
        st.tuples(inner, inner, inner).map(
            lambda t: ["CASE", "WHEN", *t[0], "THEN", *t[1], "ELSE", *t[2], "END"]
        ),
    )


expressions = st.recursive(atoms.map(lambda a: [a]), _grow, max_leaves=8)


def spaced(tokens: list[str], rnd: random.Random) -> str:
    """Return ``tokens`` joined by random white space and comments (one gap at least)."""
    out = rnd.choice(["", *_GAPS])
    for token in tokens:
        out += token + rnd.choice(_GAPS)
    return out


def compiled(conn: sqlite3.Connection, sql: str) -> tuple[Any, ...]:
    """Return what SQLite makes of ``sql``: its program, rows and column names (or its
    error). The program's texts that only echo the source (a trigger statement's trace, a
    CHECK's message) or a pointer (a virtual table's) are left out."""
    # ?1 is a numbered parameter: bound by name, as Python 3.12 deprecates a sequence for it
    params: dict[str, int] = {"1": 3} if "?1" in sql else {}
    try:
        program = [
            (*op[:5], None if op[1] in _ECHOES else op[5], *op[6:])
            for op in conn.execute("EXPLAIN " + sql, params)
        ]
        cursor = conn.execute(sql, params)
        return program, cursor.fetchall(), [d[0] for d in cursor.description or ()]
    except sqlite3.Error as exc:
        return (type(exc).__name__, str(exc))


_ECHOES = {"Trace", "VOpen", "Halt"}


@settings(max_examples=300, deadline=None)
@given(expressions, expressions, _TEXT, st.randoms(use_true_random=False))
def test_a_compacted_statement_compiles_to_the_same_program(
    first: list[str], second: list[str], name: str, rnd: random.Random
) -> None:
    """A random SELECT spaced and commented at random and its compacted text are one
    statement to SQLite (its quoted strings and names kept as written)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (7)")
    tokens = ["SELECT", *first, "AS", sql_name(name or "n"), ",", *second, "AS", "b"]
    sql = spaced([*tokens, "FROM", "t", "WHERE", "x", ">", "-", "1"], rnd)
    outside = _unquoted(compact(sql))
    assert "\n" not in outside and "--" not in outside and "/*" not in outside
    assert compiled(conn, compact(sql)) == compiled(conn, sql)


def _unquoted(sql: str) -> str:
    """Return ``sql`` with each quoted string or name replaced by ``q``."""
    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "q", sql)


def test_quoted_strings_and_names_are_kept_as_written() -> None:
    """White space, operators, quotes and comment marks inside quotes stay as they are; a
    comment outside them is dropped whole, not joined with the tokens after it."""
    assert compact("SELECT 'a  b', 'x\n y' ,'--'") == "SELECT 'a  b','x\n y','--'"
    assert compact('SELECT "my - col" , "it\'s" FROM t') == 'SELECT "my - col","it\'s" FROM t'
    assert compact("SELECT [a  b] , `c = d`") == "SELECT [a  b],`c = d`"
    assert compact("SELECT 1 -- a note\n, 2") == "SELECT 1,2"
    assert compact("SELECT 1 /* it's */ + 2") == "SELECT 1+2"
    assert compact("SELECT a\xa0b") == "SELECT a\xa0b"  # not white space to SQLite
    assert compact("SELECT 1 - -1, 2 / *x") == "SELECT 1- -1,2/ *x"
    assert compact("SELECT x 'a'") == "SELECT x 'a'"  # x'a' would be a blob


def test_the_schema_is_compact_already_and_builds_the_same_file(tmp_path: Path) -> None:
    """Each of the schema's statements is a fixed point of ``compact()``, and the schema
    spread over many lines builds a file SQLite reads and writes with the same programs."""
    rnd = random.Random(6)
    assert [compact(s) for s in SCHEMA] == list(SCHEMA)
    spread = [_spread(s, rnd) for s in SCHEMA]
    assert [compact(s) for s in spread] == list(SCHEMA)
    programs = []
    for name, statements in (("tight", SCHEMA), ("spread", spread)):
        conn = sqlite3.connect(tmp_path / f"{name}.sqlite")
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO corral_schema VALUES (6, 'test', 0)")
        programs.append([compiled(conn, sql) for sql in _USES])
        conn.close()
    assert programs[0] == programs[1]
    assert all(isinstance(p[0], list) for p in programs[0])  # every use compiled


def _spread(sql: str, rnd: random.Random) -> str:
    """Return ``sql`` with white space around its operators and brackets and its single
    spaces made runs of spaces and new lines (outside its quoted strings)."""
    parts = re.split(r"('(?:[^']|'')*')", sql)
    for i in range(0, len(parts), 2):
        parts[i] = _LONE.sub(lambda m: rnd.choice(_AROUND) + m[1] + rnd.choice(_AROUND), parts[i])
        parts[i] = parts[i].replace(" ", rnd.choice(["  ", "\n    "]))
    return "".join(parts)


_LONE = re.compile(r"(?<![-<>=!|*/&])([-(),=<>+*&|%/;])(?![-<>=|*/&])")
"""An operator or bracket that is a token of its own (not half of ``<=``, ``||``, ...)."""
_AROUND = ["", " ", "\n  ", "\t"]

_USES = [
    "INSERT INTO put_fold VALUES (1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '1')",
    "INSERT INTO threads (id, name) VALUES (1, 't')",
    "INSERT INTO put_fold VALUES (2, 1, 'c0', NULL, '{}', '[]', '{}', 0, NULL)",
    "INSERT INTO checkpoints VALUES (3, 1, 'c1', 2, NULL, '[]', '{}', 1, NULL)",
    "SELECT * FROM blobs ORDER BY id",
    "SELECT * FROM checkpoints ORDER BY seq",
    "SELECT * FROM runs",
]


def test_a_new_file_from_the_compacted_schema_reads_back(tmp_path: Path) -> None:
    """The saver's own file (compacted schema) keeps a snapshot put's values as put."""
    path = tmp_path / "c.sqlite"
    with SqliteSaver(path) as saver:
        state = {"m": [{"text": f"it's -- {i} /* x */"} for i in range(3)]}
        saver.put(Checkpoint("t", "c0", None, state, [], {}))
        assert saver.checkpoints("t")[0].snapshot == state
