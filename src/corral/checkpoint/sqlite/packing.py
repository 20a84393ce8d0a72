"""Packing encoded trees into JSON texts that store each large value once.

Shared by :class:`~corral.checkpoint.SqliteSaver` and :class:`~corral.checkpoint.
PostgresSaver`; nothing here knows a database. A :class:`Packer` is given a ``store``
function that saves one value's JSON text and returns its id (an ``INSERT`` for SQLite, a
row collected for the next statement for PostgreSQL) and the content hashes of the values
already stored.

Storing values once. A value whose JSON is at least ``MIN_BLOB`` bytes is stored through
``store`` and the texts refer to it as ``{"$corral": <id>}``; the saver remembers the
content hash of every value it wrote or read, so the same value is not stored twice. A
list is split into its items (a list of stored items is written as runs of ids,
``{"$corral": "refs", "v": [[first, count], [first, count, step], ...]}``); a dict only
from ``_SPLIT_DICT`` bytes on, so a small record (a chat message) is stored, and shared,
whole. A snapshot therefore refers to the items the earlier writes stored instead of
copying them. Three more savings keep the per-step cost flat: a snapshot re-uses the
previous snapshot's packing of list items that are the same objects and still equal
(:class:`~corral.checkpoint.sqlite.puts.Last`) or, after a read, the stored items of the
lists the read decoded, for items whose JSON is still the text read (:meth:`Packer.reread`),
and the packing of the flat dicts (chat messages) the writes since then stored, for the same
objects still equal (:data:`Stored`);
and a meta is stored as the keys that changed since its parent when this process wrote the
parent (:func:`~corral.checkpoint.sqlite.puts.meta_text`).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii as _encode_str
from typing import Any, Final

from corral.checkpoint._flat import flat_dicts
from corral.checkpoint._stored import digest, extend_runs, run_ids
from corral.checkpoint.serde import TAG, Serializer, encode
from corral.checkpoint.sqlite.jsontext import DUMPS, DUMPS_ASCII, PLAIN_SCALARS, STR, plain
from corral.checkpoint.sqlite.rereads import (
    ReadList,
    dumps_equal,
    joined,
    parsed,
    read_lists,
    same_flat,
    same_objects,
)

__all__ = [
    "MIN_BLOB",
    "SEEN_LIMIT",
    "ListPacking",
    "Packer",
    "ReadList",
    "Stored",
    "digest",
    "plain",
    "read_lists",
    "ref",
]

MIN_BLOB: Final = 128
"""JSON texts shorter than this stay inline: a reference would save little."""
_SPLIT_DICT: Final = 4096
"""Dicts shorter than this are stored whole; longer ones are split into their values."""
_FEW: Final = 4
"""Lists and dicts this short are split into their items without first encoding them whole."""
_SMALL_ITEMS: Final = 32
"""Lists whose items average fewer bytes than this are stored whole (numbers, short tags)."""


class Packer:
    """Turns encoded trees into JSON text, storing large values once in a value row."""

    __slots__ = (
        "dumps",
        "fresh",
        "known",
        "new",
        "referred",
        "seen",
        "serializer",
        "store",
        "strings",
        "written",
    )

    def __init__(
        self,
        store: Callable[[str], int],
        known: dict[bytes, int],
        new: dict[bytes, int],
        ensure_ascii: bool,
        serializer: Serializer | None,
    ) -> None:
        self.store = store
        self.known = known
        self.new = new
        self.serializer = serializer
        self.dumps = DUMPS_ASCII if ensure_ascii else DUMPS
        self.written = 0
        """Bytes of the value texts this packer stored (new rows)."""
        self.referred = 0
        """Bytes of the value texts the packed texts refer to, stored now or before: what
        reading them back reads (items re-used from an earlier snapshot not counted)."""
        self.strings: dict[int, tuple[str, str, int, int]] = {}
        """``id -> (string, reference, blob id, bytes)`` of the long strings packed so far."""
        self.seen: dict[int, Stored] = {}
        """The flat dicts earlier puts stored (see :data:`Stored`), for :meth:`snapshot`."""
        self.fresh: dict[int, Stored] | None = None
        """Where to note the flat dicts this packer stores (``None``: nowhere)."""

    def text(self, tree: Any) -> str:
        """Return ``tree`` as JSON, or a reference when it is large enough to share."""
        return self.item(tree)[0]

    def item(self, tree: Any) -> tuple[str, int | None]:
        """Return ``(json, blob id or None)`` for ``tree``: inline when small, else stored."""
        if type(tree) is list and 0 < len(tree) <= _FEW:
            # A short list (a node's update, usually) is split without encoding it whole.
            text = self.list_text([self.item(x) for x in tree])
            if len(text) < MIN_BLOB:
                return text, None
            blob_id = self.blob(text)
            return ref(blob_id), blob_id
        kind = type(tree)
        if kind is str and len(tree) >= _SPLIT_DICT:
            return self.long_str(tree)
        text = self.dumps(tree)
        if len(text) < MIN_BLOB:
            return text, None
        if kind is list and len(text) >= _SMALL_ITEMS * len(tree):
            text = self.list_text([self.item(x) for x in tree])
        elif kind is dict and len(text) >= _SPLIT_DICT:
            text = self.fields(tree)
        if len(text) < MIN_BLOB:
            return text, None
        blob_id = self.blob(text)
        item = ref(blob_id), blob_id
        fresh = self.fresh
        if (
            kind is dict
            and fresh is not None
            and len(fresh) < SEEN_LIMIT
            and PLAIN_SCALARS.issuperset(map(type, tree.values()))
        ):  # a chat message a node wrote: the next snapshot holds the same object
            fresh[id(tree)] = (tree, dict(tree), item, len(text))
        return item

    def long_str(self, tree: str) -> tuple[str, int | None]:
        """Pack a long string once per put, however often the checkpoint holds it (a state
        and the update that wrote it hold one object): it is encoded and hashed once."""
        seen = self.strings.get(id(tree))
        if seen is not None and seen[0] is tree:
            self.referred += seen[3]
            return seen[1], seen[2]
        text = self.dumps(tree)
        blob_id = self.blob(text)
        self.strings[id(tree)] = (tree, ref(blob_id), blob_id, len(text))
        return ref(blob_id), blob_id

    def list_text(self, items: list[tuple[str, int | None]]) -> str:
        """Return a list's JSON from its items; a list of stored items as ranges of ids."""
        if len(items) > 1 and all(blob_id is not None for _, blob_id in items):
            return f'{{"{TAG}":"refs","v":{self.dumps(_ranges(items))}}}'
        return "[" + ",".join([text for text, _ in items]) + "]"

    def meta_texts(
        self, meta: Any, before: Mapping[str, str] | None = None
    ) -> tuple[dict[str, str] | str, list[str]]:
        """Return the JSON of each value of a meta dict (or the whole JSON of another value),
        and the ``"key":value`` items of the keys whose JSON is not what ``before`` holds for
        them (of every key when ``before`` is None): one pass makes both."""
        serializer = self.serializer
        if type(meta) is not dict or TAG in meta or not STR.issuperset(map(type, meta)):
            return self.text(encode(meta, serializer=serializer, where="meta")), []
        texts: dict[str, str] = {}
        items: list[str] = []
        dumps = self.dumps
        for k, v in meta.items():
            # The runtime's meta is mostly ints, short strings, a time and small lists and
            # dicts of names and counts: those are encoded here without a call per layer.
            kind = type(v)
            if kind is int:  # an f-string formats an exact int (or float) as its repr,
                text = f"{v}"  # in half the instructions of int.__repr__(v)
            elif kind is str and len(v) < MIN_BLOB:
                text = _encode_str(v)
            elif kind is float and -_INF < v < _INF:  # the encoder's text for a finite float
                text = f"{v}"
            elif not (
                (kind is list or kind is dict) and plain(v, 1) and len(text := dumps(v)) < MIN_BLOB
            ):
                text = (
                    _scalar_json(v)
                    or self.short(v)
                    or self.text(encode(v, serializer=serializer, where=f"meta[{k!r}]", depth=1))
                )
            texts[k] = text
            if before is None or before.get(k) != text:
                items.append((_KEYS.get(k) or _key(k)) + text)
        return texts, items

    def short(self, value: Any) -> str | None:
        """Return the JSON of a plain value (JSON types only) when it stays inline, else None.

        The runtime's meta is mostly small lists and dicts of names and counts; for those
        the encoder and the packer would produce exactly this text, at several times the
        cost.
        """
        if not plain(value, 1):
            return None
        text: str = self.dumps(value)
        return text if len(text) < MIN_BLOB else None

    def record(self, tree: Any) -> str:
        """Return a task record as JSON; its update is packed as a checkpoint's writes are,
        so the values it stores once are the ones the superstep's checkpoint refers to."""
        if type(tree) is not dict or TAG in tree:
            return self.text(tree)
        return (
            "{"
            + ",".join(
                [
                    f"{_encode_str(k)}:{self.fields(v) if k == 'update' else self.text(v)}"
                    for k, v in tree.items()
                ]
            )
            + "}"
        )

    def fields(self, tree: dict[str, Any]) -> str:
        """Return a dict as JSON with each value through :meth:`text` (the dict stays inline)."""
        if type(tree) is not dict:  # not an update the runtime writes, but stored all the same
            return self.text(tree)
        dumps = self.dumps
        if len(tree) > _FEW:
            whole: str = dumps(tree)
            if len(whole) < MIN_BLOB:
                return whole
        return "{" + ",".join([f"{_encode_str(k)}:{self.text(v)}" for k, v in tree.items()]) + "}"

    def snapshot(
        self, state: dict[str, Any], earlier: Mapping[str, ListPacking | ReadList]
    ) -> tuple[str, dict[str, ListPacking]]:
        """Encode and pack a state; a list's items that ``earlier`` packed are not redone.

        An item is reused when it is the very object the previous snapshot of the thread
        held at that index *and* still equals what was stored for it then, so a list that
        grows by appending costs only its new items. Returns the JSON and what to remember.
        """
        if not all(type(k) is str for k in state) or TAG in state:
            return self.text(encode(state, serializer=self.serializer, where="state")), {}
        parts: list[str] = []
        lists: dict[str, ListPacking] = {}
        for key, value in state.items():
            where = f"state[{key!r}]"
            if type(value) is list:
                raw, trees, items, ranges = self.reuse(value, earlier.get(key))
                seen = self.seen
                for i in range(len(raw), len(value)):
                    x = value[i]
                    hit = seen.get(id(x)) if seen else None
                    if hit is not None and hit[0] is x and _same(x, hit[1]):
                        # stored by a write since the last snapshot, and unchanged since
                        tree, item = hit[1], hit[2]
                        self.referred += hit[3]
                    else:
                        tree = encode(x, serializer=self.serializer, where=f"{where}[{i}]", depth=2)
                        item = self.item(tree)
                    raw.append(x)
                    trees.append(tree)
                    items.append(item)
                    if ranges is not None:
                        if item[1] is None:
                            ranges = None
                        else:
                            extend_runs(ranges, item[1])
                lists[key] = (raw, trees, items, ranges)
                if ranges is not None and len(items) > 1:
                    text = f'{{"{TAG}":"refs","v":{self.dumps(ranges)}}}'
                else:
                    text = self.list_text(items)
                if len(text) >= MIN_BLOB:
                    text = ref(self.blob(text))
            else:
                text = self.text(encode(value, serializer=self.serializer, where=where, depth=1))
            parts.append(f"{self.dumps(key)}:{text}")
        return "{" + ",".join(parts) + "}", lists

    def reuse(self, value: list[Any], before: ListPacking | ReadList | None) -> ListPacking:
        """Return the packing of the longest prefix of ``value`` that ``before`` holds: the
        same objects, still equal to what was stored for them (checked by C loops when the
        whole earlier list is a prefix, the usual append-only case)."""
        if before is None:
            return [], [], [], []
        if isinstance(before, ReadList):
            return self.reread(value, before)
        old_raw, old_trees, old_items, old_ranges = before
        count = len(old_raw)
        if (
            count <= len(value)
            and all(map(_is, value, old_raw))
            and (same_objects(value[:count], old_trees) or _same(value[:count], old_trees))
        ):
            ranges = None if old_ranges is None else [run.copy() for run in old_ranges]
            return old_raw.copy(), old_trees.copy(), old_items.copy(), ranges
        n = 0
        for x, old, tree in zip(value, old_raw, old_trees, strict=False):
            if x is not old or not _same(x, tree):
                break
            n += 1
        items = old_items[:n]
        ranges = [] if all(blob_id is not None for _, blob_id in items) else None
        if ranges is not None:
            for _, blob_id in items:
                assert blob_id is not None
                extend_runs(ranges, blob_id)
        return old_raw[:n], old_trees[:n], items, ranges

    def reread(self, value: list[Any], before: ReadList) -> ListPacking:
        """Return the packing of the longest prefix of ``value`` whose items are, each, a plain
        value (JSON types only) whose JSON is the stored text ``before`` read at that index:
        those items are stored as those values (an item changed in place since the read is
        not equal). When the whole list read is a prefix, its texts are parsed by one
        ``json.loads`` and flat dicts (chat messages) compared with C loops: equal, with the
        same keys in the same order and values of the same types (and floats of the same
        text); other items by the encoder's text. The parsed trees are what the next
        snapshot compares with. The texts not re-used are hashed, as reads are (see
        ``StoredValues.hash_reads``, which leaves them to this)."""
        runs, texts, copies = before
        dumps = self.dumps
        count = len(texts)
        n, trees = 0, None
        if count <= len(value):
            prefix = value[:count]
            if flat_dicts(prefix):
                trees = parsed(texts) if copies is None else copies.copy()
                if trees is not None and same_flat(prefix, trees):
                    n = count
            elif plain(prefix, 1) and dumps_equal(dumps, prefix, joined(texts)):
                n = count
        if n == 0:
            for x, text in zip(value, texts, strict=False):
                if not (plain(x, 2) and dumps_equal(dumps, x, text)):
                    break
                n += 1
        ids = run_ids(runs)
        known = self.known
        for text, blob_id in zip(texts[n:], ids[n:], strict=False):
            known[digest(text)] = blob_id
        if n == 0:
            return [], [], [], []
        del ids[n:]
        items: list[tuple[str, int | None]] = list(zip(map(_REF.__mod__, ids), ids, strict=True))
        ranges: list[list[int]] = []
        if n == count:  # the runs read, as the packer writes them
            ranges = [[f, c] if s == 1 or c == 1 else [f, c, s] for f, c, s in runs]
        else:
            for blob_id in ids:
                extend_runs(ranges, blob_id)
        if n != count or trees is None:
            trees = json.loads(joined(texts[:n]))
        return value[:n], trees, items, ranges

    def blob(self, text: str) -> int:
        """Store ``text`` once (as far as this process knows) and return its id."""
        key = digest(text)
        self.referred += len(text)
        blob_id = self.known.get(key) or self.new.get(key)
        if blob_id is None:
            blob_id = self.new[key] = self.store(text)
            self.written += len(text)
        return blob_id


Stored = tuple[dict[str, Any], dict[str, Any], tuple[str, int | None], int]
"""A flat dict (plain scalar values) a put stored: the dict itself, a copy as it was then
(its encoded tree), its packed ``(reference, blob id)`` and the bytes of its text. A
snapshot re-uses it for the very same object, still equal to the copy: a message a node
appended is encoded, hashed and looked up once, by its write, not again by the next
snapshot."""
SEEN_LIMIT: Final = 256
"""Flat dicts a thread's writes note for its next snapshot, at most (the runtime snapshots
every 20 checkpoints; a thread without snapshots stops noting at this many)."""

ListPacking = tuple[list[Any], list[Any], list[tuple[str, int | None]], list[list[int]] | None]
"""What a snapshot remembers of one list: the items, their encoded trees and packed JSON,
and the runs of ids of the stored items (``None`` when an item is inline)."""


_KEYS: dict[str, str] = {}
"""The ``"key":`` text of the meta keys met so far (at most :data:`_KEYS_LIMIT`)."""
_KEYS_LIMIT: Final = 1024


def _key(key: str) -> str:
    """Return the ``"key":`` text of a meta key (remembered while there is room)."""
    text = _encode_str(key) + ":"
    if len(_KEYS) < _KEYS_LIMIT:
        _KEYS[key] = text
    return text


def _scalar_json(value: Any) -> str | None:
    """Return the JSON of a str, int, bool or None cheaply (no encoder call), else None."""
    kind = type(value)
    if kind is str and len(value) < MIN_BLOB:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if (kind is list or kind is dict) and not value:
        return "[]" if kind is list else "{}"
    return None


_INF: Final = float("inf")
_REF: Final = f'{{"{TAG}":%d}}'
"""The reference to a stored value, for ``%`` (:func:`ref`'s text)."""


def _same(value: Any, tree: Any) -> bool:
    """Return whether ``value`` still equals the tree it was stored as, type for type (its
    JSON would be the same: ``True == 1``, ``1.0 == 1`` and ``-0.0 == 0.0`` are not), keys in
    the same order; False if unsure."""
    try:
        if not value == tree:
            return False
    except Exception:
        return False
    if type(value) is list and flat_dicts(value):
        return same_flat(value, tree)
    return _alike(value, tree)


def _alike(value: Any, tree: Any) -> bool:
    """Return whether two equal values have the same types, key orders and float texts."""
    kind = type(value)
    if kind is not type(tree):
        return False
    if kind is list:
        return all(map(_alike, value, tree))
    if kind is dict:
        return list(value) == list(tree) and all(map(_alike, value.values(), tree.values()))
    return kind is not float or float.__repr__(value) == float.__repr__(tree)


def _ranges(items: list[tuple[str, int | None]]) -> list[list[int]]:
    """Return the ids of stored items as the runs of :func:`extend_runs`.

    >>> _ranges([("", 3), ("", 5), ("", 7), ("", 8), ("", 9)])
    [[3, 3, 2], [8, 2]]
    """
    ranges: list[list[int]] = []
    for _, blob_id in items:
        assert blob_id is not None
        extend_runs(ranges, blob_id)
    return ranges


_is: Final = operator.is_


def ref(blob_id: int) -> str:
    """Return the reference to stored value ``blob_id``."""
    return _REF % blob_id
