"""``SqliteSaver``: checkpoints in one SQLite file (the embedded default).

The tables and rows are those of ``PostgresSaver`` (:mod:`corral.checkpoint._store`); here
is what is SQLite's own: opening and checking a file (``_schema``), upgrading layout 6
(``_layout6``), transactions that wait for another process in slices (Ctrl-C gets through).
The file is in WAL mode; a put is one ``BEGIN IMMEDIATE`` transaction; readers see only
committed checkpoints.
"""

from corral.checkpoint.sqlite._schema import SCHEMA_VERSION
from corral.checkpoint.sqlite.saver import SqliteSaver

__all__ = ["SCHEMA_VERSION", "SqliteSaver"]
