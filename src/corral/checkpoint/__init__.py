"""Checkpointers: the protocol and the built-in stores.

``SqliteSaver``, ``PostgresSaver`` and ``open_saver`` are imported on first use, so a program
that keeps its threads in memory never loads sqlite3 (or the Postgres driver's glue).
"""

from importlib import import_module
from typing import TYPE_CHECKING

from corral.checkpoint._thread_info import ThreadInfo
from corral.checkpoint.base import Checkpoint, Checkpointer, TaskWrites
from corral.checkpoint.memory import MemorySaver

if TYPE_CHECKING:
    from corral.checkpoint._open import open_saver
    from corral.checkpoint.postgres import PostgresSaver
    from corral.checkpoint.sqlite import SqliteSaver

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "MemorySaver",
    "PostgresSaver",
    "SqliteSaver",
    "TaskWrites",
    "ThreadInfo",
    "open_saver",
]

_IMPORTED_ON_USE = {
    "PostgresSaver": "corral.checkpoint.postgres",
    "SqliteSaver": "corral.checkpoint.sqlite",
    "open_saver": "corral.checkpoint._open",
}
"""Public names imported on first use, with the module that defines each."""


def __getattr__(name: str) -> object:
    """Import a public name of ``_IMPORTED_ON_USE`` the first time it is asked for."""
    module = _IMPORTED_ON_USE.get(name)
    if module is None:
        msg = f"module 'corral.checkpoint' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
