"""The packing and JSON text the SQLite and PostgreSQL savers share."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import corral.checkpoint.sqlite as sqlite_package
from corral.checkpoint.sqlite.jsontext import DUMPS, DUMPS_ASCII
from corral.checkpoint.sqlite.packing import MIN_BLOB, Packer

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec="utf-8")),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(_JSON)
def test_compact_json_equals_json_dumps(tree: Any) -> None:
    """The compact encoder writes exactly what json.dumps with compact separators writes."""
    assert DUMPS(tree) == json.dumps(tree, separators=(",", ":"), ensure_ascii=False)
    assert DUMPS_ASCII(tree) == json.dumps(tree, separators=(",", ":"), ensure_ascii=True)


def test_packing_needs_no_database() -> None:
    """A Packer stores large values through any function that returns an id."""
    stored: list[str] = []

    def store(text: str) -> int:
        stored.append(text)
        return len(stored)

    packer = Packer(store, {}, {}, ensure_ascii=False, serializer=None)
    big = "x" * MIN_BLOB
    assert packer.text(["small", big, big]) == '["small",{"$corral":1},{"$corral":1}]'
    assert stored == [json.dumps(big)]


def test_the_sqlite_package_does_not_import_the_package_root() -> None:
    """checkpoint/sqlite/ imports corral.checkpoint and corral.errors only, never corral."""
    for path in Path(sqlite_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "corral", path
            elif isinstance(node, ast.Import):
                assert all(alias.name != "corral" for alias in node.names), path
