"""The JSON encoding of checkpoints: tagged, lossless for corral's own values, never pickle.

:func:`encode` turns a value into a tree of plain JSON values (``dict`` with ``str`` keys,
``list``, ``str``, ``int``, ``float``, ``bool``, ``None``); :func:`decode` turns it back.
Values JSON has no form for are written as a *tagged* object, a dict whose key ``"$corral"``
names the kind::

    (1, 2)              -> {"$corral": "tuple", "v": [1, 2]}
    {1: "a"}            -> {"$corral": "dict", "v": [[1, "a"]]}
    Overwrite([])       -> {"$corral": "overwrite", "v": []}
    Send("work", 3)     -> {"$corral": "send", "node": "work", "v": 3}
    a user value        -> {"$corral": "ext", "t": "<tag>", "v": <data>}

``decode(encode(x)) == x`` with the same types all the way down. A user dict holding the
key ``"$corral"`` is written in the ``"dict"`` form, so no data poses as a tag; ``"items"``
and ``"item"`` are the stores' (:mod:`corral.checkpoint._rows`). A value nothing can encode
raises :class:`~corral.errors.SerializationError` naming where it sits
(``state['drafts'][2]``); a *serializer* (:class:`Serializer`) teaches new types. Decoding
never runs code: a tag builds one of the types above or calls the store's serializer.
"""

from __future__ import annotations

import base64
import reprlib
from typing import Any, Final, Protocol, runtime_checkable

from corral.control import Send
from corral.errors import CheckpointError, SerializationError
from corral.reducers import Overwrite

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "TAG",
    "Serializer",
    "decode",
    "encode",
    "encode_record",
]

TAG: Final = "$corral"
"""The key of a tagged object."""
_PLAIN = (str, int, float, bool, type(None))
_CONTAINERS: Final = frozenset((dict, tuple, set, frozenset, Overwrite, Send))
"""The containers written as a tagged object, or a dict that is not plain JSON."""


def _str_keys(value: dict[Any, Any]) -> bool:
    """Return whether every key of a dict is a ``str`` (an empty dict's too)."""
    return all(type(key) is str for key in value)


MAX_DEPTH: Final = 200
"""Containers nested deeper than this are refused (a list that holds itself is nested
forever): every stored value can then be read back within Python's recursion limit."""
_TOO_DEEP: Final = (
    f"it is nested more than {MAX_DEPTH} levels deep, or holds itself (a cycle); "
    "store a flatter value, or an id instead of the object itself"
)


MAX_INT_DIGITS: Final = 4300
"""Ints with more digits are refused: Python reads no longer JSON number by default
(``sys.get_int_max_str_digits()``), so another process could not read the checkpoint."""
_TOO_BIG: Final = 10**MAX_INT_DIGITS
"""An int is stored when ``-_TOO_BIG < value < _TOO_BIG``."""


class _Unstorable(Exception):
    """Raised inside the encoder when a value cannot be stored; each container on the way
    out adds its part of the path, and :func:`encode` turns it into the
    ``SerializationError`` users see."""

    def __init__(self, value: Any, problem: str, cause: Exception | None = None) -> None:
        super().__init__(problem)
        self.value = value
        self.problem = problem
        self.cause = cause
        self.path: list[str] = []
        """Path parts, innermost first (``["[2]", "['drafts']"]``)."""
        self.inner: Any = value
        """The value whose encoding raised, as seen from the container being left."""

    def within(self, container: Any) -> _Unstorable:
        """Add the part of the path that leads from ``container`` to :attr:`inner`."""
        self.path.append(_place(container, self.inner))
        self.inner = container
        return self


def _place(container: Any, child: Any) -> str:
    """Return where ``child`` sits in ``container`` (``[2]``, ``['k']``, ``<key 1j>``,
    ``<item 1j>``, ``.value``, ``.arg``). The child is found by identity, so nothing is
    encoded again (which would cost twice per level, exponential in the nesting)."""
    kind = type(container)
    if kind is Overwrite or kind is Send:
        return ".value" if kind is Overwrite else ".arg"
    if kind is set or kind is frozenset:
        return f"<item {_shown(child)}>"
    for label, item in container.items() if kind is dict else enumerate(container):
        if kind is dict and label is child:
            return f"<key {_shown(label)}>"
        if item is child:  # a str key in full: it names the place
            return f"[{label!r}]" if type(label) is str else f"[{_shown(label)}]"
    return "[?]"


def _shown(value: Any) -> str:
    """Return a short repr of a value that could not be stored (never failing itself)."""
    try:
        shown = _SHORT.repr(value)
    except Exception:  # a repr that fails, or an int too long to print
        shown = f"<{type(value).__name__} object>"
    return shown if len(shown) <= 60 else shown[:57] + "..."


_SHORT: Final = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxother = 60


def _too_many_digits(value: int) -> str:
    """Return why an int with too many digits cannot be stored, and what to do."""
    digits = int(value.bit_length() * 0.30103) + 1
    return (
        f"it has about {digits} digits, more than the {MAX_INT_DIGITS} a JSON number may have "
        "(Python refuses longer ones when reading); store it as a str or as bytes"
    )


@runtime_checkable
class Serializer(Protocol):
    """Teaches a checkpointer to store values JSON cannot hold (datetimes, dataclasses...).

    ``encode`` returns ``(tag, data)`` for a value it handles, where ``data`` is anything the
    encoding can store (it is encoded in turn, so it may hold tuples, other handled values,
    ...), or ``None`` to decline. ``decode(tag, data)`` rebuilds the value from what
    ``encode`` returned. Tags are yours to choose; keep them stable, they are stored.

    >>> import datetime
    >>> class Dates:
    ...     def encode(self, value):
    ...         if isinstance(value, datetime.date):
    ...             return "date", value.isoformat()
    ...         return None
    ...     def decode(self, tag, data):
    ...         return datetime.date.fromisoformat(data)
    >>> tree = encode({"due": datetime.date(2026, 1, 2)}, serializer=Dates())
    >>> tree
    {'due': {'$corral': 'ext', 't': 'date', 'v': '2026-01-02'}}
    >>> decode(tree, serializer=Dates())
    {'due': datetime.date(2026, 1, 2)}
    """

    def encode(self, value: Any) -> tuple[str, Any] | None:
        """Return ``(tag, data)`` for a value this serializer stores, else ``None``."""
        ...

    def decode(self, tag: str, data: Any) -> Any:
        """Return the value that ``encode`` turned into ``(tag, data)``."""
        ...


def encode(
    value: Any,
    *,
    serializer: Serializer | None = None,
    where: str = "value",
    owner: str = "",
    depth: int = 0,
) -> Any:
    """Return ``value`` as a tree of plain JSON values, tagging what JSON cannot hold.

    ``where`` names the value in error messages (``"state"`` gives ``state['drafts'][2]``);
    ``owner`` is added after it (``"written by node 'draft'"``); ``depth`` is how deep
    ``value`` sits in what is stored (for :data:`MAX_DEPTH`).

    >>> encode({"pair": (1, 2), "tags": {"b"}})
    {'pair': {'$corral': 'tuple', 'v': [1, 2]}, 'tags': {'$corral': 'set', 'v': ['b']}}

    Raises:
        SerializationError: a value that neither JSON, the tags nor ``serializer`` can store.
    """
    try:
        return _tree(value, depth, serializer)
    except _Unstorable as err:
        location = where + "".join(reversed(err.path))
        shown_at = location if len(location) <= 100 else location[:80] + "...(deeper)"
        kind = type(err.value).__name__
        msg = f"cannot store the {kind} {_shown(err.value)} at {shown_at}"
        msg += f" ({owner}) in a checkpoint; " if owner else " in a checkpoint; "
        msg += err.problem
        raise SerializationError(msg, location=location, value_type=type(err.value)) from (
            err.cause
        )


def decode(tree: Any, *, serializer: Serializer | None = None, where: str = "value") -> Any:
    """Return the value :func:`encode` turned into ``tree`` (always freshly built objects).

    >>> decode({"$corral": "tuple", "v": [1, {"$corral": "frozenset", "v": [2]}]})
    (1, frozenset({2}))

    Raises:
        CheckpointError: an unknown tag, or a user tag and no serializer to read it.
    """
    return _decode(tree, serializer, where)


def _tree(value: Any, depth: int, serializer: Serializer | None) -> Any:
    """Return ``value`` as a tree of plain JSON values (:func:`encode`); a failure's path
    is built only when something fails."""
    kind = type(value)
    if kind in _PLAIN:
        if kind is int and not -_TOO_BIG < value < _TOO_BIG:
            raise _Unstorable(value, _too_many_digits(value))
        return value
    if depth >= MAX_DEPTH:
        raise _Unstorable(value, _TOO_DEEP)
    inner = depth + 1
    try:
        if kind is list:
            return [_tree(x, inner, serializer) for x in value]
        if kind is dict and TAG not in value and _str_keys(value):
            return {k: _tree(v, inner, serializer) for k, v in value.items()}
        if kind in _CONTAINERS:
            return _tagged(value, kind, inner, serializer)
    except _Unstorable as err:
        raise err.within(value) from None
    if kind is bytes:
        return {TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    return _user(value, inner, serializer)


def _tagged(value: Any, kind: type[Any], inner: int, serializer: Serializer | None) -> Any:
    """Encode a container JSON has no plain form for (a dict with other keys, a tuple, a
    set, ``Overwrite``, ``Send``)."""
    if kind is dict:
        pairs = [
            [_tree(k, inner, serializer), _tree(v, inner, serializer)] for k, v in value.items()
        ]
        return {TAG: "dict", "v": pairs}
    if kind is tuple:
        return {TAG: "tuple", "v": [_tree(x, inner, serializer) for x in value]}
    if kind is Overwrite:
        return {TAG: "overwrite", "v": _tree(value.value, inner, serializer)}
    if kind is Send:
        return {TAG: "send", "node": value.node, "v": _tree(value.arg, inner, serializer)}
    items = [_tree(x, inner, serializer) for x in _ordered(value)]
    return {TAG: "set" if kind is set else "frozenset", "v": items}


def _user(value: Any, depth: int, serializer: Serializer | None) -> Any:
    """Return the ``ext`` tree of a value only the serializer can store."""
    if serializer is not None:
        try:
            handled = serializer.encode(value)
        except Exception as exc:
            problem = f"the serializer's encode() failed ({exc}); fix it or return None"
            raise _Unstorable(value, problem, exc) from exc
        if handled is not None:
            tag, data = handled
            if type(data) is type(value):
                problem = (
                    f"the serializer returned a {type(value).__name__} for it; "
                    "encode() must turn it into JSON-friendly data"
                )
                raise _Unstorable(value, problem)
            try:
                return {TAG: "ext", "t": str(tag), "v": _tree(data, depth, serializer)}
            except _Unstorable as err:
                err.inner = value  # the path goes on from the value the data stands for
                raise
    problem = (
        "use JSON-friendly values (str, int, float, bool, None, list, dict, tuple, set) "
        "or pass serializer= to the checkpointer"
    )
    raise _Unstorable(value, problem)


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    """Return a set's items in a stable order when they can be sorted (stable bytes dedupe)."""
    try:
        return sorted(items)
    except TypeError:
        return list(items)


_COLLECTIONS: Final[dict[str, Any]] = {"tuple": tuple, "set": set, "frozenset": frozenset}


def _decode(tree: Any, serializer: Serializer | None, where: str) -> Any:
    """Return the value :func:`encode` turned into ``tree`` (:func:`decode`)."""
    kind = type(tree)
    if kind is list:
        return [_decode(item, serializer, where) for item in tree]
    if kind is not dict:
        return tree
    tag = tree.get(TAG)
    if tag is None:
        return {k: _decode(v, serializer, where) for k, v in tree.items()}
    data = tree.get("v")
    build = _COLLECTIONS.get(tag)
    if build is not None:
        return build(_decode(x, serializer, where) for x in data)
    if tag == "dict":
        return {_decode(k, serializer, where): _decode(v, serializer, where) for k, v in data}
    if tag == "overwrite":
        return Overwrite(_decode(data, serializer, where))
    if tag == "send":
        return Send(tree["node"], _decode(data, serializer, where))
    if tag == "bytes":
        return base64.b64decode(data)
    if tag == "ext":
        return _from_serializer(tree["t"], _decode(data, serializer, where), serializer, where)
    msg = (
        f"{where} holds a value tagged {tag!r} that this version of corral cannot read; "
        "open the checkpoints with the corral version that wrote them"
    )
    raise CheckpointError(msg)


def _from_serializer(tag: str, data: Any, serializer: Serializer | None, where: str) -> Any:
    """Return the value the serializer stored as ``(tag, data)``."""
    if serializer is None:
        msg = (
            f"{where} holds a value stored by a serializer (tag {tag!r}); "
            "pass the same serializer= to the checkpointer to read it"
        )
        raise CheckpointError(msg)
    try:
        return serializer.decode(tag, data)
    except Exception as exc:
        msg = f"the serializer failed to decode tag {tag!r} in {where}: {exc}"
        raise CheckpointError(msg) from exc


def encode_record(record: Any, serializer: Serializer | None = None) -> Any:
    """Return the encoded record of a finished task (see ``Checkpointer.put_writes``).

    A value it cannot store is named as in a checkpoint's writes: ``update['log'][0]
    (written by 'b')``.

    Raises:
        SerializationError: naming the field and the node whose record holds the value.
    """
    node = record.get("node") if type(record) is dict else None
    owner = f"written by {node!r}" if node is not None else ""
    if type(record) is dict and TAG not in record and _str_keys(record):
        return {
            k: encode(v, serializer=serializer, where=k, owner=owner) for k, v in record.items()
        }
    return encode(record, serializer=serializer, where="record", owner=owner)
