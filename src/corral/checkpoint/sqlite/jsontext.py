"""The compact JSON encoder the savers write their texts with, and :func:`plain`, which tells
whether a tree is one it writes as it is.

``json.JSONEncoder.encode`` builds a new C encoder on every call, which costs more than
encoding a small value; :func:`compact_dumps` builds it once. The trees it encodes come
from :mod:`corral.checkpoint.serde` (or pass :func:`plain`),
so they hold no cycles and the circular-reference check is left out, as
``check_circular=False`` would. Its output equals ``json.dumps(tree, separators=(",", ":"),
ensure_ascii=...)`` (pinned by ``tests/unit/test_sqlite_packing.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from corral.checkpoint._flat import LEAVES, TOO_BIG, ints_fit
from corral.checkpoint.serde import MAX_DEPTH, TAG

__all__ = ["DUMPS", "DUMPS_ASCII", "PLAIN_SCALARS", "STR", "compact_dumps", "plain"]


def compact_dumps(ensure_ascii: bool) -> Callable[[Any], str]:
    """Return a compact JSON encoder for encoded trees (plain JSON values, no cycles)."""
    slow = json.JSONEncoder(
        ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=True, check_circular=False
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without the _json accelerator
        return slow.encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encoder = make(None, slow.default, quote, None, ":", ",", False, False, True)

    def dumps(tree: Any) -> str:
        return "".join(encoder(tree, 0))

    return dumps


DUMPS: Final = compact_dumps(ensure_ascii=False)
"""Compact JSON keeping non-ASCII characters as they are."""
DUMPS_ASCII: Final = compact_dumps(ensure_ascii=True)
"""Compact JSON escaping every non-ASCII character (for texts holding lone surrogates)."""


PLAIN_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
"""The scalar types JSON has (the encoder writes them as they are)."""
STR: Final = frozenset({str})


def plain(value: Any, depth: int = 0) -> bool:
    """Return whether ``value`` is made of JSON types only, nested no deeper than the
    encoder allows (so the encoder would leave it as it is).

    An int of more digits than a JSON number may have is not plain: the encoder refuses it,
    naming where it sits (a writer that lifted Python's digit limit could write it, and no
    other process could read the thread back).
    """
    kind = type(value)
    if kind in LEAVES:
        return True
    if kind is int:
        return bool(-TOO_BIG < value < TOO_BIG)
    if depth >= MAX_DEPTH:
        return False
    if kind is list:
        if len(value) > _LOOPED:  # one C loop over the item types
            kinds = set(map(type, value))
            return (PLAIN_SCALARS.issuperset(kinds) and ints_fit(value, kinds)) or all(
                [plain(x, depth + 1) for x in value]
            )
        # A short list (a node's update, a meta's tasks): a loop here costs less than
        # setting up the C loop's iterators.
        for x in value:
            if type(x) not in LEAVES and not plain(x, depth + 1):
                return False
        return True
    if kind is dict:
        if TAG in value:
            return False
        if len(value) > _LOOPED:
            kinds = set(map(type, value.values()))
            return STR.issuperset(map(type, value)) and (
                (PLAIN_SCALARS.issuperset(kinds) and ints_fit(value.values(), kinds))
                or all([plain(x, depth + 1) for x in value.values()])
            )
        for key, x in value.items():
            if type(key) is not str or (type(x) not in LEAVES and not plain(x, depth + 1)):
                return False
        return True
    return False


_LOOPED: Final = 8
"""Containers up to this long are checked by a loop in Python: building the iterators of
a C loop (``frozenset.issuperset(map(type, ...))``) costs ~2,000 instructions, a loop's
turn ~200 (callgrind)."""
