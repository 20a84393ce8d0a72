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

import json
from collections.abc import Iterator, Sequence
from typing import Any, Final, NamedTuple, overload

__all__ = ["Arrays", "Folded", "ItemTexts", "Pieces", "Rows"]

TAG: Final = "$corral"


class Folded(NamedTuple):
    """Some items of one folded array: ``positions`` (a ``range`` when consecutive) of the
    array ``text``, whose items' texts have the ``lengths`` given."""

    name: str
    """How an error names it: ``"stored values first..last"``."""
    key: int
    """The array's identity in its store (a fetch parses each array once)."""
    text: str
    lengths: list[int]
    positions: range | list[int]


class Rows(NamedTuple):
    """Single stored texts (``None`` where one is missing), with their ids."""

    ids: list[int]
    texts: list[Any]


class Pieces(list[Folded | Rows]):
    """The texts of the ids asked, in order, as :class:`Rows` and :class:`Folded` pieces."""

    def count(self) -> int:  # type: ignore[override]
        """Return how many values the pieces hold."""
        return sum(len(p.positions) if isinstance(p, Folded) else len(p.ids) for p in self)


def final_text(text: str) -> bool:
    """Return whether a JSON text names no tag (and escapes no character, so no tag hides
    behind an escape): its parse is the value itself. One-character searches run at memory
    speed; the longer ones only when they may match."""
    return ("$" not in text or TAG not in text) and ("\\" not in text or "\\u" not in text)


def check_array(piece: Folded, tree: Any) -> list[Any]:
    """Return the parsed array ``tree`` of ``piece`` if it holds one item per length.

    Raises:
        ValueError: naming the folded values, and what is wrong.
    """
    if type(tree) is not list or len(tree) != len(piece.lengths):
        msg = f"{piece.name} do not read as the list of {len(piece.lengths)} values they hold"
        raise ValueError(msg)
    return tree


class Arrays:
    """The folded arrays one fetch parsed, and which of their items it handed out."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[list[Any], bool, set[int]]] = {}

    def items(self, piece: Folded) -> tuple[list[Any], bool]:
        """Return the parsed items at ``piece.positions`` (objects no earlier call handed
        out), and whether the array names no tag."""
        known = self._parsed.get(piece.key)
        if known is None:
            try:
                tree = json.loads(piece.text)
            except ValueError as exc:
                msg = f"{piece.name} are not JSON ({exc})"
                raise ValueError(msg) from None
            known = (check_array(piece, tree), final_text(piece.text), set())
            self._parsed[piece.key] = known
        trees, final, used = known
        positions = piece.positions
        if used.isdisjoint(positions):
            used.update(positions)
        else:  # handed out before: parsed again, so no two values share an object
            trees = check_array(piece, json.loads(piece.text))
        if type(positions) is range and len(positions) == len(trees):
            return trees, final
        if type(positions) is range:
            return trees[positions.start : positions.stop], final
        return [trees[p] for p in positions], final


class ItemTexts(Sequence[str]):
    """The stored text of each value of :class:`Pieces`, split from the arrays when first
    asked for (a snapshot re-using a list it read asks only for the count)."""

    def __init__(self, pieces: Pieces) -> None:
        self._pieces = pieces
        self._count = pieces.count()
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
                ends, at = [], 1
                for length in piece.lengths:
                    ends.append(at)
                    at += length + 1
                text, lengths = piece.text, piece.lengths
                out += [text[ends[p] : ends[p] + lengths[p]] for p in piece.positions]
            self._texts = out
        return self._texts
