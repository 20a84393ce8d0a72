"""Why the encoder (:mod:`corral.checkpoint.serde`) could not store a value, and where:
:class:`Unstorable` carries the path out, one container at a time, and the encoder turns it
into the :class:`~corral.errors.SerializationError` users see."""

from __future__ import annotations

import reprlib
from typing import Any, Final

MAX_INT_DIGITS: Final = 4300
"""Ints with more digits are refused: Python reads no longer JSON number by default
(``sys.get_int_max_str_digits()``), so another process could not read the checkpoint."""
TOO_BIG: Final = 10**MAX_INT_DIGITS
"""An int is stored when ``-TOO_BIG < value < TOO_BIG``."""


class Unstorable(Exception):
    """Raised inside the encoder; each container on the way out adds its part of the path."""

    def __init__(self, value: Any, problem: str, cause: Exception | None = None) -> None:
        super().__init__(problem)
        self.value = value
        self.problem = problem
        self.cause = cause
        self.path: list[str] = []
        """Path parts, innermost first (``["[2]", "['drafts']"]``)."""
        self.inner: Any = value
        """The value whose encoding raised, as seen from the container being left."""

    def within(self, container: Any, *places: Any) -> Unstorable:
        """Add the part of the path that leads from ``container`` to :attr:`inner`.

        ``places`` are ``(pairs, part)``: ``(label, child)`` pairs and the format of a
        label. The failing child is found by identity, so nothing is encoded again (which
        would cost twice per level, exponential in the nesting).
        """
        for pairs, part in zip(places[::2], places[1::2], strict=True):
            for label, child in pairs:
                if child is self.inner:
                    self.path.append(part.format(label))
                    self.inner = container
                    return self
        self.path.append("[?]")
        self.inner = container
        return self


def shown(value: Any) -> str:
    """Return a short repr of a value that could not be stored (never failing itself)."""
    try:
        shown = _SHORT.repr(value)
    except Exception:  # a repr that fails, or an int too long to print
        shown = f"<{type(value).__name__} object>"
    return shown if len(shown) <= 60 else shown[:57] + "..."


_SHORT: Final = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxother = 60


def too_many_digits(value: int) -> str:
    """Return why an int with too many digits cannot be stored, and what to do."""
    digits = int(value.bit_length() * 0.30103) + 1
    return (
        f"it has about {digits} digits, more than the {MAX_INT_DIGITS} a JSON number may have "
        "(Python refuses longer ones when reading); store it as a str or as bytes"
    )
