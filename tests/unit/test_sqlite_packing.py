"""The packing and JSON text the SQLite and PostgreSQL savers share."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

import corral.checkpoint.sqlite as sqlite_package
from corral.checkpoint.serde import MAX_DEPTH, encode
from corral.checkpoint.sqlite.jsontext import DUMPS, DUMPS_ASCII
from corral.checkpoint.sqlite.packing import MIN_BLOB, Packer, plain

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


_KEYS = st.text(max_size=8) | st.just("$corral")
_ATOMS = st.integers() | st.text(max_size=20) | st.booleans() | st.none()
_META = st.dictionaries(
    _KEYS,
    st.floats()
    | st.integers()
    | st.text(max_size=200)
    | st.lists(st.integers() | st.text(max_size=60) | st.floats(), max_size=6)
    | st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=60), max_size=4)
    | st.lists(st.tuples(st.text(max_size=4)), max_size=2)
    | st.lists(st.dictionaries(_KEYS, _ATOMS, max_size=3), max_size=3)
    | st.lists(st.lists(_ATOMS, max_size=3) | _ATOMS, max_size=3),
    max_size=6,
)
"""A meta: the runtime's shapes (ints, strings, lists of tasks, run and guard counts) and
others; bools, None and the encoder's tag among them go the general way."""


@settings(max_examples=100, deadline=None)
@given(_META)
@example({"next": [{"node": "a", "n": True}], "guards": [["a", "b", None]], "runs": {"a": 1.0}})
@example({"next": [{"$corral": 1}], "runs": {"$corral": 1}, "held": [[True], ["a"]]})
def test_meta_texts_hold_what_the_general_path_holds(meta: dict[str, Any]) -> None:
    """The meta's fast paths (ints, short strings, finite floats, small plain lists and
    dicts) write JSON of the same value as the general path (the encoder, then a stored
    value's reference when it is long); a finite float as ``json.dumps`` writes it."""
    fast, general = Stored(), Stored()
    texts, items = Packer(fast.store, {}, {}, ensure_ascii=False, serializer=None).meta_texts(meta)
    packer = Packer(general.store, {}, {}, ensure_ascii=False, serializer=None)
    if "$corral" in meta:  # the encoder's tag as a key: the whole meta goes the general way
        assert isinstance(texts, str)
        assert fast.resolve(texts) == general.resolve(packer.text(encode(meta, where="meta")))
        return
    assert isinstance(texts, dict)
    assert list(texts) == list(meta)
    assert items == [f"{json.dumps(key)}:{text}" for key, text in texts.items()]
    for key, value in meta.items():
        expected = packer.text(encode(value, where="meta", depth=1))
        assert fast.resolve(texts[key]) == general.resolve(expected), (key, value)
        if type(value) is float:
            assert texts[key] == json.dumps(value)


class Stored:
    """A store of value texts for a Packer, and the JSON of a text with its reference
    resolved (NaN written as JSON writes it, so equal values compare equal)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def store(self, text: str) -> int:
        self.texts.append(text)
        return len(self.texts)

    def resolve(self, text: str) -> str:
        tree = json.loads(text)
        if isinstance(tree, dict) and list(tree) == ["$corral"] and type(tree["$corral"]) is int:
            tree = json.loads(self.texts[tree["$corral"] - 1])
        return json.dumps(tree)


class _Str(str):
    """A str subclass: not a plain JSON type (the encoder would store its class)."""


_ANY = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
    | st.builds(_Str, st.text(max_size=4))
    | st.just((1, 2))
    | st.just({1}),
    lambda inner: (
        st.lists(inner, max_size=12)
        | st.dictionaries(
            st.text(max_size=4) | st.just("$corral") | st.integers(), inner, max_size=12
        )
    ),
    max_leaves=40,
)


def _plain_by_definition(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return True
    if depth >= MAX_DEPTH:
        return False
    if kind is list:
        return all(_plain_by_definition(x, depth + 1) for x in value)
    if kind is dict:
        return all(type(k) is str and k != "$corral" for k in value) and all(
            _plain_by_definition(x, depth + 1) for x in value.values()
        )
    return False


@settings(max_examples=200, deadline=None)
@given(_ANY)
@example({"messages": [{"role": "a", "content": "b"}]})
@example([[_Str("a")]])
@example({"a": {1: 2}})
def test_plain_says_what_the_definition_says(value: Any) -> None:
    """plain() (a loop for short containers, C loops for long ones) answers as its
    definition: JSON types only, str keys, no "$corral" key, nested within MAX_DEPTH."""
    assert plain(value) == _plain_by_definition(value)
    assert plain(value, MAX_DEPTH - 1) == _plain_by_definition(value, MAX_DEPTH - 1)
