"""Fast paths of the encoder (:mod:`corral.checkpoint.serde`) for flat containers.

Most of what a checkpoint holds is flat: a chat message is a dict of ``str`` keys and
``str`` values, a snapshot's list holds hundreds of such dicts or of ints. For those, the
checks the encoder makes of every item (a JSON type, a ``str`` key, no ``"$corral"`` key,
an int of few enough digits) are made here over a whole container at once with built-ins
(``set(map(type, ...))``, ``min``/``max``), and the container is copied with ``list.copy``,
``dict.copy``: no Python code runs per item.

:func:`flat_list` returns the encoded copy, or ``None`` when the list is not flat (or holds
something to refuse); the encoder then takes the general path, which gives the same tree,
or the error naming the item. So a fast path never changes what is stored or raised.
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import chain, compress, repeat
from operator import contains
from typing import Any, Final

TAG: Final = "$corral"
"""The key of a tagged object of the encoding (see :mod:`corral.checkpoint.serde`)."""

MAX_INT_DIGITS: Final = 4300
"""Ints with more digits are refused: Python reads no longer JSON number by default
(``sys.get_int_max_str_digits()``), so another process could not read the checkpoint."""
TOO_BIG: Final = 10**MAX_INT_DIGITS
"""An int is stored when ``-TOO_BIG < value < TOO_BIG``."""

LEAVES: Final = frozenset((str, float, bool, type(None)))
"""The types JSON holds as they are, with nothing to check (a ``bool`` is not an ``int``)."""
SCALARS: Final = LEAVES | {int}
"""The types of the items of a flat container (its ints checked for their digits)."""
_STR: Final = frozenset((str,))
_DICT: Final = frozenset((dict,))
_is_int: Final = frozenset((int,)).__contains__


def ints_fit(values: Collection[Any], kinds: set[type]) -> bool:
    """Return whether every int of ``values`` (whose types are ``kinds``) can be stored."""
    if int not in kinds:
        return True
    ints = values if len(kinds) == 1 else list(compress(values, map(_is_int, map(type, values))))
    return bool(-TOO_BIG < min(ints) and max(ints) < TOO_BIG)


def flat_dicts(value: list[Any]) -> bool:
    """Return whether ``value`` holds only flat dicts (``str`` keys, none of them
    ``"$corral"``, scalar values), by built-ins over the whole list (chat messages)."""
    return (
        _DICT.issuperset(map(type, value))
        and not any(map(contains, value, repeat(TAG)))
        and _STR.issuperset(map(type, chain.from_iterable(value)))
        and SCALARS.issuperset(map(type, chain.from_iterable(map(dict.values, value))))
    )


def flat_list(value: list[Any], dicts_allowed: bool) -> list[Any] | None:
    """Return a copy of a list of scalars, or of flat dicts (``str`` keys, none of them
    ``"$corral"``, scalar values) when ``dicts_allowed`` (the encoder's depth leaves room for
    them), else ``None``."""
    kinds = set(map(type, value))
    if kinds <= SCALARS:
        return value.copy() if ints_fit(value, kinds) else None
    if kinds != _DICT or not dicts_allowed or any(map(contains, value, repeat(TAG))):
        return None
    if not set(map(type, chain.from_iterable(value))) <= _STR:  # the keys of every dict
        return None
    values = list(chain.from_iterable(map(dict.values, value)))
    kinds = set(map(type, values))
    if kinds <= LEAVES or (kinds <= SCALARS and ints_fit(values, kinds)):
        return list(map(dict.copy, value))
    return None
