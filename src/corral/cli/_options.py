"""Argument types and defaults shared by the commands: each type refuses a bad value with
what it should be."""

from __future__ import annotations

import argparse
import os

from corral.cost import Budget
from corral.errors import GraphError

__all__ = ["DEFAULT_DB", "MAX_SECONDS", "budget", "positive", "seconds", "thread_id"]

DEFAULT_DB = os.path.join(".corral", "checkpoints.sqlite")
"""Where ``corral run`` keeps its checkpoints unless ``--db`` says otherwise."""

MAX_SECONDS = 1_000_000.0
"""The longest duration an option takes (about 11.5 days): beyond it, clocks and timers
overflow (a lease of 1e308 s cannot be added to a timestamp) and no run waits that long."""


def positive(text: str) -> int:
    """Return ``text`` as a whole number of 1 or more.

    >>> positive("3")
    3
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"{text!r} is not a whole number, 1 or more"
        raise argparse.ArgumentTypeError(msg)
    return value


def budget(text: str) -> Budget:
    """Return ``text`` as a run's budget, written ``usd=0.5,tokens=100000``.

    >>> budget("usd=0.5").usd
    Decimal('0.5')
    """
    try:
        return Budget.parse(text)
    except GraphError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    """Return ``text`` as a number of seconds above 0 and at most :data:`MAX_SECONDS`.

    >>> seconds("0.5")
    0.5
    """
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_SECONDS:
        msg = f"{text!r} is not a number of seconds above 0 and at most {MAX_SECONDS:,.0f}"
        raise argparse.ArgumentTypeError(msg)
    return value


def thread_id(text: str) -> str:
    """Return ``text`` as a thread id: not empty, and text a database can store.

    >>> thread_id("t-1")
    't-1'
    """
    if not text.strip():
        msg = "a thread id cannot be empty; give an id, or leave --thread out for a new thread"
        raise argparse.ArgumentTypeError(msg)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Bytes the locale could not decode reach Python as lone surrogates.
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        msg = f"the thread id {shown!r} is not valid UTF-8 text; give an id in UTF-8"
        raise argparse.ArgumentTypeError(msg) from None
    return text
