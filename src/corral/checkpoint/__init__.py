"""Checkpointers: the protocol and the built-in stores."""

from corral.checkpoint.base import Checkpoint, Checkpointer, TaskWrites
from corral.checkpoint.memory import MemorySaver
from corral.checkpoint.sqlite import SqliteSaver

__all__ = ["Checkpoint", "Checkpointer", "MemorySaver", "SqliteSaver", "TaskWrites"]
