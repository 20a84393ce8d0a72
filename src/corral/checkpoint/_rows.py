"""A checkpoint as a row and back: its JSON texts, with large values stored once as items.

Every top-level value of a state or of a node's update whose JSON is at least
:data:`MIN_ITEM` bytes is stored once, as an item (a row of ``corral_items``), and the text
refers to it by id; a list is stored item by item the same way::

    {"messages": {"$corral": "items", "v": [17, 18, [{"role": "user"}], 19]}}
    {"report": {"$corral": "item", "v": 20}}

An id is an item; a one-element list holds a small item inline.

A write that appends a message stores the message once and the snapshots after it refer
to the same item, so a snapshot costs a few bytes a message. Equal content is stored once
per thread while the saver remembers it: the saver keeps the content hash of each item it
wrote (:func:`digest`).

Everything else (the meta, small values, values inside a value) is the JSON tree of
:mod:`corral.checkpoint.serde`, as it is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any, Final

from corral.checkpoint.base import Checkpoint, Damaged, damaged
from corral.checkpoint.serde import TAG, Serializer, decode
from corral.errors import CheckpointError

MIN_ITEM: Final = 128
"""Values (and list items) whose JSON is shorter stay inline: a reference saves little."""
_TAG_TEXT: Final = f'"{TAG}"'

Row = tuple[str, str | None, Any, Any, Any]
"""``(checkpoint_id, parent_id, snapshot, writes, meta)``: texts as stored, or parsed."""


def digest(text: str) -> bytes:
    """Return the content hash the savers know an item by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


Known = dict[tuple[int, bytes], tuple[int, int]]
"""``(thread row id, content hash) -> (item id, bytes)`` of committed items."""


def _listed(refs: list[int | list[Any]]) -> Any:
    """Return the row tree of a list whose items are ``refs`` (an item's id, or ``[tree]``
    for a small one kept inline): the list itself when every item is small."""
    if any(type(ref) is int for ref in refs):
        return {TAG: "items", "v": refs}
    return [ref[0] for ref in refs if type(ref) is list]


class Packer:
    """Turns the encoded trees of one put into row trees, storing large values as items.

    ``insert`` is :data:`~corral.checkpoint._tables.PUT_ITEM` in the style of ``db``'s
    driver; ``known`` are the items already stored.
    """

    def __init__(
        self, db: Any, insert: str, thread: int, known: Known, dumps: Callable[[Any], str]
    ) -> None:
        self.db, self.insert, self.thread, self.known, self.dumps = db, insert, thread, known, dumps
        self.new: Known = {}
        """The items this put stored (to remember once it commits)."""
        self.written = 0
        """Bytes of the items this put stored."""

    def state(self, tree: Any) -> Any:
        """Return a state's (or an update's) tree with its large values stored as items."""
        if type(tree) is not dict or TAG in tree:
            return tree
        return {key: self._value(value) for key, value in tree.items()}

    def _value(self, tree: Any) -> Any:
        if type(tree) is list:
            return _listed([self._item(x) for x in tree])
        text = self.dumps(tree)
        return {TAG: "item", "v": self._stored(text)} if len(text) >= MIN_ITEM else tree

    def _item(self, tree: Any) -> int | list[Any]:
        text = self.dumps(tree)
        return [tree] if len(text) < MIN_ITEM else self._stored(text)

    def _stored(self, text: str) -> int:
        """Return the id of the item holding ``text``, storing it when it is new."""
        key = (self.thread, digest(text))
        found = self.known.get(key) or self.new.get(key)
        if found is None:
            row = self.db.execute(self.insert, {"thread": self.thread, "data": text}).fetchone()
            found = self.new[key] = (int(row[0]), len(text))
            self.written += len(text)
        return found[0]


class Rows:
    """Checkpoint rows read back: parsed, their items fetched at once, decoded.

    Args:
        where: the file or database, for messages.
        rows: :data:`Row` texts, as stored.
    """

    def __init__(
        self, where: str, serializer: Serializer | None, thread_id: str, rows: Iterable[Row]
    ) -> None:
        self.where = where
        self.serializer = serializer
        self.thread_id = thread_id
        self.rows: list[Row] = []
        """The rows, their texts parsed."""
        self.sizes: list[int] = []
        """Bytes of each row's texts."""
        self.ids: list[list[int]] = []
        """The ids of the items each row refers to."""
        for checkpoint_id, parent_id, snapshot, writes, meta in rows:
            try:
                trees = [None if snapshot is None else json.loads(snapshot), json.loads(writes)]
                self.rows.append((checkpoint_id, parent_id, *trees, json.loads(meta)))
                self.ids.append(_item_ids(*trees))
            except Exception as exc:
                damaged(where, thread_id, checkpoint_id, exc)
            self.sizes.append(len(snapshot or "") + len(writes) + len(meta))
        self.items: dict[int, str] = {}
        """The texts of the items the rows refer to, by id."""
        self._parsed: dict[int, Any] = {}

    def fetch(self, db: Any, query: str) -> None:
        """Read the items the rows refer to from ``db`` with ``query`` (taking the JSON array
        of their ids)."""
        ids = sorted({n for row in self.ids for n in row})
        self.items = dict(db.execute(query, {"ids": json.dumps(ids)}).fetchall()) if ids else {}
        try:  # parsed together: one call for thousands of chat messages
            trees = json.loads("[" + ",".join(self.items.values()) + "]")
        except Exception:  # a damaged item: each is parsed on its own, and named
            trees = [None] * len(self.items)
        self._parsed = {n: t for n, t in zip(self.items, trees, strict=True) if t is not None}

    def checkpoints(self) -> list[Checkpoint]:
        """Return the rows as checkpoints (damage named with the row's checkpoint)."""
        return [self._checkpoint(*row) for row in self.rows]

    def item_bytes(self, row: int) -> int:
        """Return the bytes of the items the ``row``-th row refers to."""
        return sum(len(self.items.get(n, "")) for n in self.ids[row])

    def _checkpoint(
        self, checkpoint_id: str, parent_id: str | None, snapshot: Any, writes: Any, meta: Any
    ) -> Checkpoint:
        where = f"checkpoint {checkpoint_id!r} of thread {self.thread_id!r}"
        try:
            state = None if snapshot is None else self._state(snapshot, f"the state of {where}")
            pairs = [(node, self._state(u, f"the writes of {where}")) for node, u in writes]
            info = decode(meta, serializer=self.serializer, where=f"the meta of {where}")
            if type(info) is not dict:
                raise Damaged("its meta is not an object")
        except CheckpointError as exc:
            if exc.path is not None:
                raise
            msg = f"{exc} (in {self.where!r})"
            raise CheckpointError(msg, path=self.where) from exc
        except Exception as exc:  # any damage at all: shapes, missing items, depth
            damaged(self.where, self.thread_id, checkpoint_id, exc)
        return Checkpoint(self.thread_id, checkpoint_id, parent_id, state, pairs, info)

    def _state(self, tree: Any, where: str) -> Any:
        if type(tree) is not dict or TAG in tree:
            return decode(tree, serializer=self.serializer, where=where)
        return {key: self._value(value, where) for key, value in tree.items()}

    def _value(self, tree: Any, where: str) -> Any:
        kind = tree.get(TAG) if type(tree) is dict else None
        if kind == "items":
            return [
                self._item(ref, where)
                if type(ref) is int
                else decode(ref[0], serializer=self.serializer, where=where)
                for ref in tree["v"]
            ]
        if kind == "item":
            return self._item(tree["v"], where)
        return decode(tree, serializer=self.serializer, where=where)

    def _item(self, ref: int, where: str) -> Any:
        """Return the value of item ``ref``: the tree parsed with the others on its first
        use (fresh objects), parsed again on a later one (each use its own objects)."""
        text = self.items.get(ref)
        if text is None:
            raise Damaged(f"its stored value {ref} is missing")
        tree = self._parsed.pop(ref, None)
        if tree is None:
            tree = json.loads(text)
        if _TAG_TEXT not in text:
            return tree
        return decode(tree, serializer=self.serializer, where=where)


def _is_dict(tree: Any) -> bool:
    """Return whether ``tree`` decodes to a dict."""
    return type(tree) is dict and tree.get(TAG, "dict") == "dict"


def _item_ids(snapshot: Any, writes: Any) -> list[int]:
    """Return the ids of the items a row's parsed texts refer to; ``Damaged`` for writes
    that are not ``(node, update)`` pairs."""
    if type(writes) is not list or not all(
        type(w) is list and len(w) == 2 and type(w[0]) is str and _is_dict(w[1]) for w in writes
    ):
        raise Damaged("its writes are not (node, update) pairs")
    ids: list[int] = []
    for tree in [snapshot, *(update for _, update in writes)]:
        for value in tree.values() if type(tree) is dict and TAG not in tree else ():
            kind = value.get(TAG) if type(value) is dict else None
            if kind == "items" and type(value.get("v")) is list:
                ids.extend([ref for ref in value["v"] if type(ref) is int])
            elif kind == "item" and type(value.get("v")) is int:
                ids.append(value["v"])
    return ids
