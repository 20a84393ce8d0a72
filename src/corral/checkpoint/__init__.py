"""Checkpointers: the protocol and the built-in stores."""

from corral.checkpoint._open import open_saver
from corral.checkpoint.base import Checkpoint, Checkpointer, TaskWrites
from corral.checkpoint.memory import MemorySaver
from corral.checkpoint.postgres import PostgresSaver
from corral.checkpoint.sqlite import SqliteSaver

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "MemorySaver",
    "PostgresSaver",
    "SqliteSaver",
    "TaskWrites",
    "open_saver",
]
