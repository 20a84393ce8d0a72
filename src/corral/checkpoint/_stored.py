"""Stored values read back in bulk: the ``fetch`` a store hands the decoder.

A store that keeps large values once (SQLite, PostgreSQL) refers to them by id; a list of
them is a run of ids. Reading one back by one ``SELECT`` and one ``json.loads`` per item
costs more than the data; :func:`parse_stored` parses the texts of many at once, and tells
the decoder when the result holds no tag at all (the usual case: chat messages, strings),
so it is the value itself and is not walked again.
"""

from __future__ import annotations

import gc
import hashlib
import json
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any, Final, NamedTuple, NoReturn

from corral.checkpoint._pieces import TAG, Arrays, Folded, ItemTexts, Pieces, Rows, final_text

__all__ = [
    "TAG",
    "Damaged",
    "Fetch",
    "Fetched",
    "Run",
    "Stored",
    "StoredValues",
    "digest",
    "extend_runs",
    "parse_stored",
    "run_ids",
    "runs_of",
    "scalar_dicts",
]


class Stored(NamedTuple):
    """Stored values as a store's ``fetch(ids)`` returns them, in the order asked."""

    trees: list[Any]
    final: bool
    """True when no tree holds a tag: they are the values themselves, freshly parsed, and
    need no decoding (:func:`parse_stored` tells from the texts)."""


Run = tuple[int, int, int]
"""``(first, count, step)``: the ids ``first``, ``first + step``, ... (``count`` of them)."""
Fetch = Callable[[list[Run]], Stored]
"""Return the trees of the stored values with the ids of these runs (see :func:`decode`)."""
Fetched = tuple[list[Run], Sequence[str], list[Any]]
"""A list of stored values one fetch read, holding no tag: its runs of ids, the stored
texts of its items and the list itself (the decoded value, as the decoder returned it)."""


def run_ids(runs: list[Run]) -> list[int]:
    """Return the ids of ``runs``, in order."""
    return [n for first, count, step in runs for n in range(first, first + count * step, step)]


def extend_runs(ranges: list[list[int]], blob_id: int) -> None:
    """Add ``blob_id`` to ``ranges``: ``[first, count]`` runs of consecutive ids, or
    ``[first, count, step]`` runs of evenly spaced ids, as a ``refs`` tag stores them (a
    thread's values lie between its checkpoint rows, so the items its supersteps appended
    are usually two ids apart)."""
    last = ranges[-1] if ranges else None
    if last is None:
        ranges.append([blob_id, 1])
    elif last[1] == 1 and blob_id > last[0]:
        last[1] = 2
        if blob_id - last[0] != 1:
            last.append(blob_id - last[0])
    elif blob_id == last[0] + last[1] * (last[2] if len(last) > 2 else 1):
        last[1] += 1
    else:
        ranges.append([blob_id, 1])


def runs_of(ids: list[int]) -> list[Run]:
    """Return ``ids`` as runs (the inverse of :func:`run_ids`).

    >>> runs_of([3, 5, 7, 8, 9])
    [(3, 3, 2), (8, 2, 1)]
    """
    ranges: list[list[int]] = []
    for n in ids:
        extend_runs(ranges, n)
    return [(r[0], r[1], r[2] if len(r) > 2 else 1) for r in ranges]


def parse_stored(runs: list[Run], texts: list[str]) -> Stored:
    """Return the trees of stored JSON texts, parsed by one ``json.loads``.

    A text that names no tag (and escapes no character, so no tag hides behind an escape)
    parses to its value as it is: the decoder need not walk it again.

    Raises:
        ValueError: naming the stored value that is not JSON.
        TypeError: a text is not a ``str`` (a value that is missing).
    """
    return _parse(runs, texts)[0]


def _parse(runs: list[Run], texts: list[Any], arrays: Arrays | None = None) -> tuple[Stored, int]:
    """Return :func:`parse_stored`'s trees, and the length of the texts together (the texts
    may come in :class:`Pieces`; ``arrays``: the folded arrays parsed so far by the fetch)."""
    if type(texts) is Pieces:
        return _parse_pieces(texts, Arrays() if arrays is None else arrays)
    if not texts:
        return Stored([], True), 0
    if len(texts) == 1:
        whole = texts[0]
        if type(whole) is not str:
            raise TypeError(whole)
        size = len(whole)
    else:  # one copy of the megabytes: the brackets join the first and last text
        first, last = texts[0], texts[-1]
        if type(first) is not str or type(last) is not str:
            raise TypeError(first)
        whole = ",".join([f"[{first}", *texts[1:-1], f"{last}]"])  # TypeError if one is not
        size = len(whole) - len(texts) - 1  # less the brackets and commas
    final = final_text(whole)
    try:
        tree = json.loads(whole)
    except ValueError:
        pass
    else:
        if len(texts) == 1:
            return Stored([tree], final), size
        if len(tree) == len(texts):
            return Stored(tree, final), size
    _name_damaged(run_ids(runs), texts)


def _name_damaged(ids: list[int], texts: list[Any]) -> NoReturn:
    """Raise the ``ValueError`` naming the first of ``texts`` (of values ``ids``) that is not
    JSON, else the ids of texts that do not read as one list each."""
    for ref, text in zip(ids, texts, strict=True):  # find the damaged one, to name it
        try:
            json.loads(text)
        except ValueError as exc:
            msg = f"stored value {ref} is not JSON ({exc})"
            raise ValueError(msg) from None
    msg = f"stored values {ids[0]}..{ids[-1]} do not read as one list each"
    raise ValueError(msg)


def _parse_pieces(pieces: Pieces, arrays: Arrays) -> tuple[Stored, int]:
    """Return the trees of :class:`Pieces`: single texts joined and parsed together (as by
    :func:`parse_stored`), a folded array by one ``json.loads`` per fetch."""
    only = pieces[0] if len(pieces) == 1 else None
    if isinstance(only, Folded):  # a long read of one run
        trees, final = arrays.items(only)
        return Stored(trees, final), only.size()
    out: list[Any] = []
    final, size = True, 0
    whole = arrays.whole(pieces)  # the usual long read: whole runs, then maybe rows
    if whole is not None:
        out, final, size = whole
        pieces = Pieces(pieces[len(pieces) - (type(pieces[-1]) is Rows) :])
        if not pieces:
            return Stored(out, final), size
    for piece in pieces:
        if isinstance(piece, Rows):
            stored, more = _parse([(n, 1, 1) for n in piece.ids], piece.texts)
            out += stored.trees
        else:
            trees, final_piece = arrays.items(piece)
            stored = Stored(trees, final_piece)
            out += trees
            more = piece.size()
        final = final and stored.final
        size += more
    return Stored(out, final), size


def scalar_dicts(dicts: list[dict[str, Any]]) -> bool:
    """Return whether ``dicts``, parsed by :func:`parse_stored` from JSON text that holds no
    tag (``Stored.final``), hold only scalars (str, number, bool, None).

    CPython does not track a dict for garbage collection until a container is put in it
    (the example in ``gc.is_tracked``'s documentation), and JSON has no containers but
    lists and dicts: a dict fresh from ``json.loads`` is untracked exactly when all of its
    values are scalars. So one C loop over the dicts answers, not one over every value
    (2,000 chat messages: ~25 µs instead of ~200 µs). Where the interpreter does not behave
    so (checked once, on import) the answer is False, and the caller checks the values.
    """
    return _UNTRACKED_SCALARS and not any(map(gc.is_tracked, dicts))


_UNTRACKED_SCALARS: Final = (
    hasattr(gc, "is_tracked")  # not every Python has it
    and not gc.is_tracked(json.loads('{"a": "b", "c": 1.5, "d": null}'))
    and all(map(gc.is_tracked, json.loads('[{"a": []}, {"a": {"b": 1}}]')))
)
"""Whether :func:`scalar_dicts` may answer from ``gc.is_tracked`` in this interpreter."""


_READ_BYTES: Final = 8 << 20
"""Bytes of read texts kept until the next snapshot hashes them (older ones are dropped)."""


class Damaged(Exception):
    """Raised inside a decode when a stored value cannot be read; the caller names the row."""


class StoredValues:
    """Reads stored values in bulk, and remembers what was read for the next snapshot."""

    def __init__(self, known: dict[bytes, int]) -> None:
        self.known = known
        """Content hash -> id of committed values, shared with the writer."""
        self._lock = threading.Lock()
        """A saver's reads may come from several threads (PostgreSQL's pool)."""
        self._unhashed: list[tuple[Sequence[str], list[Run], int]] = []
        """Batches of texts read and not hashed yet, oldest first (bounded by bytes)."""
        self._unhashed_bytes = 0
        self.bytes_read = 0
        """Bytes of stored texts read so far (the saver measures a chain's replay by it)."""

    def fetcher(
        self, texts_of: Callable[[list[Run]], list[Any]], lists: list[Fetched] | None = None
    ) -> Fetch:
        """Return the ``fetch`` of :func:`~corral.checkpoint.serde.decode` over a store's
        ``texts_of(runs)``, which returns the stored texts in order (``None`` if missing).
        The lists it reads that hold no tag are noted in ``lists`` (see :data:`Fetched`).

        Raises (from ``fetch``):
            Damaged: a value is missing or is not JSON.
        """

        arrays = Arrays()
        """The folded arrays this fetch parsed (see :mod:`corral.checkpoint._pieces`)."""
        memo: dict[int, Any] = {}
        """Immutable values already read by this fetch (a snapshot and the write that set
        it refer to one 50 MB string: it is read and parsed once)."""
        noted: list[Fetched] = [] if lists is None else lists
        """Lists read by this fetch that hold no tag, with their runs: a snapshot's list of
        messages and the write that appended its last one refer to the same value."""

        def fetch(runs: list[Run]) -> Stored:
            single = runs[0][0] if len(runs) == 1 and runs[0][1] == 1 else None
            if single is not None:
                if single in memo:
                    return Stored([memo[single]], True)
                known = _known(noted, single)
                if known is not _MISSING:
                    return Stored([known], True)
            texts: Any = texts_of(runs)
            try:
                stored, size = _parse(runs, texts, arrays)
            except TypeError:
                raise Damaged(f"stored value {_missing(runs, texts)} is missing") from None
            except ValueError as exc:
                raise Damaged(str(exc)) from exc
            if type(texts) is Pieces:
                texts = ItemTexts(texts)
            self._read(texts, runs, size)
            if single is not None and stored.final and type(stored.trees[0]) in _SCALARS:
                memo[single] = stored.trees[0]
            elif single is None and stored.final:
                noted.append((runs, texts, stored.trees))
            return stored

        return fetch

    def hash_reads(self, skip: Collection[Sequence[str]] = ()) -> None:
        """Remember the content hash of every value read since the last call, so a snapshot
        refers to them instead of storing them again (done only when a snapshot is packed:
        a read that no snapshot follows, ``get_state``, never pays for hashing). The batches
        of texts in ``skip`` (the very lists) are dropped unhashed: the snapshot compares its
        items with them and hashes the ones it does not re-use (``Packer.reread``)."""
        with self._lock:
            batches, self._unhashed = self._unhashed, []
            self._unhashed_bytes = 0
        known = self.known
        skipped = {id(texts) for texts in skip}
        for texts, runs, _size in batches:
            if skipped and id(texts) in skipped:
                continue
            for text, blob_id in zip(texts, run_ids(runs), strict=True):
                known[digest(text)] = blob_id

    def _read(self, texts: Sequence[str], runs: list[Run], size: int) -> None:
        """Count ``size`` (the length of ``texts``) as read, and keep the texts for hashing."""
        with self._lock:
            self.bytes_read += size
            self._unhashed.append((texts, runs, size))
            self._unhashed_bytes += size
            while self._unhashed_bytes > _READ_BYTES and len(self._unhashed) > 1:
                self._unhashed_bytes -= self._unhashed.pop(0)[2]


def _missing(runs: list[Run], texts: list[Any]) -> int:
    """Return the id of the first value missing from ``texts`` (of ``runs``, maybe in
    :class:`Pieces`)."""
    if type(texts) is Pieces:
        pairs = (pair for p in texts if type(p) is Rows for pair in zip(*p, strict=True))
        return next(n for n, t in pairs if type(t) is not str)
    return next(n for n, t in zip(run_ids(runs), texts, strict=True) if type(t) is not str)


def _known(lists: list[Fetched], ref: int) -> Any:
    """Return a copy of stored value ``ref`` from a list read before (``_MISSING`` if no
    list has it, or it is not a scalar or a dict of scalars: those are fetched again)."""
    for runs, _texts, trees in lists:
        offset = 0
        for first, count, step in runs:
            index, off_step = divmod(ref - first, step)
            if not off_step and 0 <= index < count:
                tree = trees[offset + index]
                kind = type(tree)
                if kind in _SCALARS:
                    return tree
                if kind is dict and _SCALARS.issuperset(map(type, tree.values())):
                    return tree.copy()  # the caller's own: the list keeps its item
                return _MISSING
            offset += count
    return _MISSING


def digest(text: str) -> bytes:
    """Return the content hash of a stored value's text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_MISSING: Final[Any] = object()
