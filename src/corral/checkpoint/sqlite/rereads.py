"""What a read leaves for the next snapshot of its thread: the lists it decoded from stored
values, and the checks that an item of a list to be stored still is the value read.

A saver that did not write a thread (a new process, a server worker) reads its chain; the
snapshot of that chain refers to the items of its long lists by runs of ids, and the read
parses their stored texts. :func:`read_lists` notes, per key, those runs and texts (held,
not copied); :meth:`~corral.checkpoint.sqlite.packing.Packer.reread` stores the items of
the next snapshot that still have exactly those texts by the same ids, without encoding,
dumping and hashing them again.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from corral.checkpoint._flat import SCALARS
from corral.checkpoint._stored import Fetched, Run

__all__ = [
    "ReadList",
    "dicts_only",
    "dumps_equal",
    "joined",
    "parsed",
    "read_lists",
    "same_flat",
    "same_objects",
]


class ReadList(NamedTuple):
    """A list of a snapshot a read decoded from stored values: the runs of their ids and
    their stored texts (held, not copied), for the next snapshot of the thread."""

    runs: list[Run]
    texts: Sequence[str]
    copies: list[dict[str, Any]] | None = None
    """When every item is a dict: a shallow copy of each, taken as it was parsed (the next
    snapshot compares flat dicts with them instead of parsing the texts again)."""


def read_lists(
    snapshot: Any, fetched: list[Fetched], *, copies: bool = True
) -> dict[str, ReadList]:
    """Return, by key, the lists of a decoded ``snapshot`` that a fetch read whole as runs
    of stored values (``fetched``: what the fetch noted, with the very list objects);
    ``copies``: with the shallow copies of their dicts (``False``: none, ``copies`` is
    ``None``: no snapshot will compare with them)."""
    if type(snapshot) is not dict or not fetched:
        return {}
    out: dict[str, ReadList] = {}
    for key, value in snapshot.items():
        if type(value) is list and type(key) is str:
            for runs, texts, trees in fetched:
                if trees is value:
                    out[key] = ReadList(runs, texts, _copies(value) if copies else None)
                    break
    return out


def dicts_only(items: list[Any]) -> bool:
    """Return whether every one of ``items`` is a dict (by one C loop)."""
    return _DICT.issuperset(map(type, items))


def _copies(items: list[Any]) -> list[dict[str, Any]] | None:
    """Return a shallow copy of each of ``items`` when all are dicts, else ``None``.

    The items are fresh from JSON (no dict subclass): ``dict.copy`` refuses any other item
    (``TypeError``), so no loop over their types runs first (2,000 messages: 0.22 M
    instructions less a read)."""
    try:
        return list(map(dict.copy, items))
    except TypeError:
        return None


def same_flat(items: list[Any], trees: list[Any]) -> bool:
    """Return whether flat dicts ``items`` have the JSON of ``trees`` (flat dicts as parsed):
    equal, the same keys in the same order, values of the same types, floats of the same
    text (``-0.0 == 0.0``), by C loops but for the floats."""
    if items != trees:
        return False
    flatten = itertools.chain.from_iterable
    if list(flatten(items)) != list(flatten(trees)):
        return False
    values = list(flatten(map(dict.values, items)))
    kinds = list(map(type, values))
    if kinds != list(map(type, flatten(map(dict.values, trees)))):
        return False
    if float not in kinds:
        return True
    floats = [float.__repr__(v) for v in values if type(v) is float]
    theirs = flatten(map(dict.values, trees))
    return floats == [float.__repr__(v) for v in theirs if type(v) is float]


def same_objects(items: list[Any], trees: list[Any]) -> bool:
    """Return whether ``items`` are dicts with the keys of ``trees`` in the same order and,
    for values, the very scalar objects ``trees`` hold (so their JSON is the trees'), by C
    loops: the usual case for the messages a snapshot stored, each tree a shallow copy
    taken when it was stored. False leaves the question open (a value replaced by an equal
    one, trees parsed from a read): :func:`same_flat` answers it."""
    if len(items) != len(trees) or not _DICT.issuperset(map(type, items)):
        return False
    flatten = itertools.chain.from_iterable
    if list(flatten(items)) != list(flatten(trees)):
        return False
    values = list(flatten(map(dict.values, items)))
    return all(map(operator.is_, values, flatten(map(dict.values, trees)))) and (
        SCALARS.issuperset(map(type, values))
    )


def parsed(texts: Sequence[str]) -> list[Any] | None:
    """Return the values of JSON texts by one ``json.loads`` (``None`` if they do not parse)."""
    try:
        trees = json.loads(joined(texts))
    except ValueError:
        return None
    return trees if type(trees) is list and len(trees) == len(texts) else None


def joined(texts: Sequence[str]) -> str:
    """Return the JSON list of stored JSON texts (what the compact encoder writes)."""
    return "[" + ",".join(texts) + "]"


def dumps_equal(dumps: Callable[[Any], str], value: Any, text: str) -> bool:
    """Return whether ``dumps(value)`` is ``text`` (False if it cannot be encoded)."""
    try:
        return bool(dumps(value) == text)
    except Exception:
        return False


_DICT: Final = frozenset({dict})
