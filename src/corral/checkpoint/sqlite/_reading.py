"""Reading checkpoint rows back, and naming the damage when they cannot be read.

Every failure to read a row (text that is not UTF-8 or not JSON, a meta that is not an
object, writes that are not pairs, a stored value that is missing, a chain that does not
start at a snapshot) becomes a ``CheckpointError`` naming the file, the thread and the
checkpoint: never a bare error, and never a state rebuilt from part of the history.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, NoReturn

from corral.checkpoint.base import Checkpoint
from corral.checkpoint.serde import TAG, Serializer, decode_checkpoint
from corral.checkpoint.sqlite.packing import digest
from corral.errors import CheckpointError

__all__ = [
    "Damaged",
    "StoredValues",
    "check_chain",
    "damaged",
    "decode_row",
    "find_damaged_row",
]

_CACHE_BYTES: Final = 8 << 20
"""Bytes of stored-value text kept in memory for reading."""


class Damaged(Exception):
    """Raised inside a decode when a stored value cannot be read; the caller names the row."""


class StoredValues:
    """The texts of stored values this process read (a bounded cache), and their reading."""

    def __init__(self, known: dict[bytes, int]) -> None:
        self.known = known
        """Content hash -> id of committed values, shared with the writer."""
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._bytes = 0

    def resolver(self, conn: sqlite3.Connection) -> Callable[[int], Any]:
        """Return the ``resolve`` of :func:`~corral.checkpoint.serde.decode` over ``conn``."""

        def resolve(blob_id: int) -> Any:
            text = self._texts.get(blob_id)
            if text is None:
                row = conn.execute(
                    "SELECT data FROM checkpoints WHERE seq = ?", (blob_id,)
                ).fetchone()
                if row is None or type(row[0]) is not str:
                    raise Damaged(f"stored value {blob_id} is missing")
                text = row[0]
                self._remember(blob_id, text)
                # Whatever this process has read it can share: a resumed run's next
                # snapshot refers to the items its chain already stored.
                self.known[digest(text)] = blob_id
            else:
                self._texts.move_to_end(blob_id)
            try:
                return json.loads(text)
            except ValueError as exc:
                raise Damaged(f"stored value {blob_id} is not JSON ({exc})") from exc

        return resolve

    def _remember(self, blob_id: int, text: str) -> None:
        self._texts[blob_id] = text
        self._bytes += len(text)
        while self._bytes > _CACHE_BYTES and self._texts:
            _, old = self._texts.popitem(last=False)
            self._bytes -= len(old)


def decode_row(
    path: str,
    serializer: Serializer | None,
    resolve: Callable[[int], Any],
    thread_id: str,
    row: tuple[Any, ...],
    metas: dict[str, Any],
) -> Checkpoint:
    """Decode one checkpoint row; ``metas`` holds the metas of the rows decoded before it.

    Raises:
        CheckpointError: the row is damaged (naming the file, thread and checkpoint), or a
            value needs a serializer this saver was not given.
    """
    _seq, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta = row
    try:
        trees = [None if snapshot is None else json.loads(snapshot), json.loads(writes)]
        meta_tree = json.loads(meta)
        if meta_is_delta:
            delta = meta_tree if meta_tree.get(TAG) == "delta" else {"v": meta_tree}
            meta_tree = {**metas[parent_id], **delta["v"]}
            for key in delta.get("del", ()):
                meta_tree.pop(key, None)
        if type(meta_tree) is not dict or type(trees[1]) is not list:
            raise Damaged("its meta is not an object or its writes are not a list")
        metas[checkpoint_id] = meta_tree
        trees.append(meta_tree)
        checkpoint = decode_checkpoint(
            (thread_id, checkpoint_id, parent_id), *trees, serializer=serializer, resolve=resolve
        )
        if not all(type(n) is str and type(u) is dict for n, u in checkpoint.writes):
            raise Damaged("its writes are not (node, update) pairs")
    except CheckpointError as exc:
        if exc.path is not None:
            raise
        msg = f"{exc} (in {path!r})"
        raise CheckpointError(msg, path=path) from exc
    except Exception as exc:  # any damage at all: JSON, shapes, missing values, depth
        damaged(path, thread_id, checkpoint_id, exc)
    return checkpoint


def damaged(path: str, thread_id: str, checkpoint_id: object, exc: BaseException) -> NoReturn:
    """Raise the ``CheckpointError`` for a checkpoint that cannot be read back."""
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        msg = (
            f"checkpoint {checkpoint_id!r} of thread {thread_id!r} in {path!r} holds an int "
            "longer than this Python reads (sys.get_int_max_str_digits()); raise the limit "
            "with sys.set_int_max_str_digits(0) in this process to read it"
        )
        raise CheckpointError(msg, path=path) from exc
    shown = str(exc) if isinstance(exc, Damaged) else f"{type(exc).__name__}: {exc}"
    msg = (
        f"checkpoint {checkpoint_id!r} of thread {thread_id!r} in {path!r} is damaged "
        f"({shown[:200]}); resume from an earlier checkpoint (app.history) or start a new "
        "thread, and move the file away if this keeps happening"
    )
    raise CheckpointError(msg, path=path) from exc


def check_chain(path: str, thread_id: str, chain: list[Checkpoint]) -> None:
    """Raise ``CheckpointError`` unless ``chain`` starts at a snapshot (or the thread's first
    checkpoint) and each checkpoint's parent is the one before it."""
    if not chain:
        return
    first = chain[0]
    if first.snapshot is None and first.parent_id is not None:
        exc = Damaged(f"its parent {first.parent_id!r} cannot be found")
        damaged(path, thread_id, first.checkpoint_id, exc)
    for before, after in itertools.pairwise(chain):
        if after.parent_id != before.checkpoint_id:
            damaged(path, thread_id, after.checkpoint_id, Damaged("its parent link is broken"))


def find_damaged_row(
    conn: sqlite3.Connection, path: str, thread: int, thread_id: str, exc: BaseException
) -> NoReturn:
    """Raise the ``CheckpointError`` for a read of the thread that failed while fetching
    rows (text that is not UTF-8, a damaged page): find the first row that cannot be
    fetched and name it."""
    try:
        seqs = [
            s for (s,) in conn.execute("SELECT seq FROM checkpoints WHERE thread = ?", (thread,))
        ]
    except sqlite3.Error:
        seqs = []
    for seq in seqs:
        try:
            conn.execute(
                "SELECT checkpoint_id, snapshot, writes, meta FROM checkpoints WHERE seq = ?",
                (seq,),
            ).fetchone()
        except (sqlite3.Error, ValueError) as err:
            try:
                (name,) = conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE seq = ?", (seq,)
                ).fetchone()
            except (sqlite3.Error, ValueError, TypeError):
                name = f"<row {seq}>"
            damaged(path, thread_id, name, err)
    damaged(path, thread_id, "<unknown>", exc)
