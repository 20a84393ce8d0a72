"""``SqliteSaver``: checkpoints in one SQLite file (the embedded default): the store of
:mod:`corral.checkpoint._store`, with what is SQLite's own: opening and checking a file
(``_schema``), upgrading layout 6 (``_layout6``), transactions that wait for another process
in slices (Ctrl-C gets through)."""

from corral.checkpoint.sqlite._schema import SCHEMA_VERSION
from corral.checkpoint.sqlite.saver import SqliteSaver

__all__ = ["SCHEMA_VERSION", "SqliteSaver"]
