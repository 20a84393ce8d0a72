"""Stored values read back in pieces: texts of single values, and runs folded into one array.

A store that folds many small values into one JSON array text (SQLite's ``runs``, see
:mod:`corral.checkpoint.sqlite._runs`) hands the reader :class:`Pieces`: in the order of the
ids asked, groups of single texts (parsed together, as before) and parts of folded arrays
(:class:`Folded`: one ``json.loads`` of the array, whose items are sliced out). A fetch
parses each array once (:class:`Arrays`) and hands out each of its items once as parsed;
asked again (a snapshot and the write that stored a value refer to the same id), an item
is parsed again, so no two decoded values share an object.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, NamedTuple, overload

__all__ = ["Arrays", "Folded", "ItemTexts", "Pieces", "Rows"]

TAG: Final = "$corral"
"""The key that marks a tagged object."""


class Folded(NamedTuple):
    """Some items of one folded array: ``positions`` (a ``range`` when consecutive) of the
    array ``text`` of ``total`` items."""

    key: int
    """The array's identity in its store (a fetch parses each array once)."""
    last: int
    """With ``key``, how an error names it: ``"stored values key..last"``."""
    text: str
    total: int
    """How many items the array holds."""
    items: str
    """The run's ``[[seq, ...], [length, ...]]`` (parsed only to split the text)."""
    positions: range | list[int]

    @property
    def name(self) -> str:
        return f"stored values {self.key}..{self.last}"

    def size(self) -> int:
        """Return the length of the texts of the items at ``positions``."""
        positions = self.positions
        if len(positions) == self.total:
            return len(self.text) - self.total - 1
        lengths = self.lengths()
        if type(positions) is range:
            return sum(lengths[positions.start : positions.stop])
        return sum([lengths[p] for p in positions])

    def lengths(self) -> list[int]:
        """Return the length of each item's text (``ValueError`` if they do not tile it)."""
        try:
            lengths = json.loads(self.items)[1]
            if type(lengths) is list and len(lengths) == self.total:
                if sum(lengths) + self.total + 1 == len(self.text):
                    return lengths
        except (ValueError, TypeError, IndexError, KeyError):
            pass
        msg = f"{self.name} (folded into one row) are damaged (their sizes do not tile them)"
        raise ValueError(msg)


class Rows(NamedTuple):
    """Single stored texts (``None`` where one is missing), with their ids."""

    ids: list[int]
    texts: list[Any]


class Pieces(list[Folded | Rows]):
    """The texts of the ids asked, in order, as :class:`Rows` and :class:`Folded` pieces."""

    def value_count(self) -> int:
        """Return how many values the pieces hold (``list.count`` keeps its meaning)."""
        return sum(len(p.positions) if isinstance(p, Folded) else len(p.ids) for p in self)


def final_text(text: str) -> bool:
    """Return whether a JSON text names no tag (and escapes no character, so no tag hides
    behind an escape): its parse is the value itself. One-character searches run at memory
    speed; the longer ones only when they may match."""
    return ("$" not in text or TAG not in text) and ("\\" not in text or "\\u" not in text)


def check_array(piece: Folded, tree: Any) -> list[Any]:
    """Return the parsed array ``tree`` of ``piece`` if it holds its count of items.

    Raises:
        ValueError: naming the folded values, and what is wrong.
    """
    if type(tree) is not list or len(tree) != piece.total:
        msg = f"{piece.name} do not read as the list of {piece.total} values they hold"
        raise ValueError(msg)
    return tree


class Arrays:
    """The folded arrays one fetch parsed, and which of their items it handed out."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[list[Any], bool]] = {}
        self._used: dict[int, set[int]] = {}
        """Per array handed out in part, the positions handed out."""

    def items(self, piece: Folded) -> tuple[list[Any], bool]:
        """Return the parsed items at ``piece.positions`` (objects no earlier call handed
        out), and whether the array names no tag."""
        positions = piece.positions
        known = self._parsed.get(piece.key)
        if known is None:
            trees, final = self._parse(piece)
            self._parsed[piece.key] = trees, final
            if len(positions) == len(trees):
                self._used[piece.key] = _ALL
                return trees, final
            self._used[piece.key] = used = set()
        else:
            trees, final = known
            used = self._used[piece.key]
            if used is _ALL or not used.isdisjoint(positions):
                # handed out before: parsed again, so no two values share an object
                trees = self._parse(piece)[0]
                used = set()
        used.update(positions)
        if len(positions) == len(trees):
            return trees, final
        if type(positions) is range:
            return trees[positions.start : positions.stop], final
        return [trees[p] for p in positions], final

    def whole(self, pieces: Pieces) -> tuple[list[Any], bool, int] | None:
        """Return the items of ``pieces`` when all but maybe the last are whole arrays, their
        finality and the length of their texts (else ``None``): each array parsed afresh by
        one call of the JSON scanner, and no bookkeeping per item."""
        ahead = len(pieces) - (type(pieces[-1]) is Rows)
        runs = [p for p in pieces[:ahead] if type(p) is Folded]
        if len(runs) < 2 or len(runs) != ahead:
            return None
        if any(len(p.positions) != p.total for p in runs):
            return None
        texts = [p.text for p in runs]
        try:  # the C scanner itself: json.loads adds ~3,000 instructions a call
            parsed = list(map(_SCAN, texts, itertools.repeat(0)))
        except (ValueError, StopIteration):
            return None  # damage: named piece by piece
        trees = [tree for tree, _end in parsed]
        if [end for _tree, end in parsed] != list(map(len, texts)) or list(map(len, trees)) != [
            p.total for p in runs
        ]:
            return None
        finals = list(map(final_text, texts))
        for p, tree, final in zip(runs, trees, finals, strict=True):
            if p.key not in self._parsed:  # else parsed afresh: handed out before
                self._parsed[p.key] = tree, final
                self._used[p.key] = _ALL
        size = sum(map(len, texts)) - sum(map(len, trees)) - len(trees)
        return list(itertools.chain.from_iterable(trees)), all(finals), size

    @staticmethod
    def _parse(piece: Folded) -> tuple[list[Any], bool]:
        try:
            tree = json.loads(piece.text)
        except ValueError as exc:
            msg = f"{piece.name} are not JSON ({exc})"
            raise ValueError(msg) from None
        return check_array(piece, tree), final_text(piece.text)


_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""``json.loads`` without its checks of leading and trailing whitespace (stored texts
have none: the end is checked instead)."""

_ALL: Final[set[int]] = set()
"""Marks an array handed out whole."""


class ItemTexts(Sequence[str]):
    """The stored text of each value of :class:`Pieces`, split from the arrays when first
    asked for (a snapshot re-using a list it read asks only for the count)."""

    def __init__(self, pieces: Pieces) -> None:
        self._pieces = pieces
        self._count = pieces.value_count()
        self._texts: list[str] | None = None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self.texts()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts())

    def texts(self) -> list[str]:
        """Return every text, in order."""
        if self._texts is None:
            out: list[str] = []
            for piece in self._pieces:
                if type(piece) is Rows:
                    out += piece.texts
                    continue
                assert type(piece) is Folded
                lengths = piece.lengths()
                ends, at = [], 1
                for length in lengths:
                    ends.append(at)
                    at += length + 1
                text = piece.text
                out += [text[ends[p] : ends[p] + lengths[p]] for p in piece.positions]
            self._texts = out
        return self._texts
