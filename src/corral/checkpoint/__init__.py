"""Checkpointers: the protocol and the built-in stores.

``PostgresSaver`` and ``open_saver`` are imported on first use, so a program that keeps its
threads in memory or in a SQLite file never loads the Postgres driver's glue.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from corral.checkpoint._thread_info import ThreadInfo
from corral.checkpoint.base import Checkpoint, Checkpointer, TaskWrites
from corral.checkpoint.memory import MemorySaver
from corral.checkpoint.sqlite import SqliteSaver

if TYPE_CHECKING:
    from corral.checkpoint._open import open_saver
    from corral.checkpoint.postgres import PostgresSaver

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


def __getattr__(name: str) -> object:
    """Import ``PostgresSaver`` or ``open_saver`` the first time it is asked for."""
    modules = {
        "PostgresSaver": "corral.checkpoint.postgres",
        "open_saver": "corral.checkpoint._open",
    }
    if name not in modules:
        msg = f"module 'corral.checkpoint' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(import_module(modules[name]), name)
    globals()[name] = value
    return value
