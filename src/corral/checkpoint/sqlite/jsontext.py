"""The compact JSON encoder the savers write their texts with.

``json.JSONEncoder.encode`` builds a new C encoder on every call, which costs more than
encoding a small value; :func:`compact_dumps` builds it once. The trees it encodes come
from :mod:`corral.checkpoint.serde` (or pass :func:`corral.checkpoint.sqlite.packing.plain`),
so they hold no cycles and the circular-reference check is left out, as
``check_circular=False`` would. Its output equals ``json.dumps(tree, separators=(",", ":"),
ensure_ascii=...)`` (pinned by ``tests/unit/test_sqlite_packing.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

__all__ = ["DUMPS", "DUMPS_ASCII", "compact_dumps"]


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
