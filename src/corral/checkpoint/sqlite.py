"""``SqliteSaver``: checkpoints in a SQLite file (the embedded default)."""

from __future__ import annotations

from corral.checkpoint.base import Checkpoint
from corral.errors import CheckpointError

__all__ = ["SqliteSaver"]


class SqliteSaver:
    """A checkpointer backed by one SQLite file. (Placeholder until the persistence issue.)"""

    def __init__(self, path: str) -> None:
        self.path = path

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint``."""
        raise CheckpointError("SqliteSaver is not implemented yet", path=self.path)

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints needed to rebuild ``checkpoint_id``."""
        raise CheckpointError("SqliteSaver is not implemented yet", path=self.path)

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread."""
        raise CheckpointError("SqliteSaver is not implemented yet", path=self.path)
