"""``SqliteSaver``: checkpoints in one SQLite file (the embedded default).

The tables and the way a checkpoint becomes a row are those of ``PostgresSaver`` too
(:mod:`corral.checkpoint._store`, :mod:`corral.checkpoint._tables`). What is SQLite's own is
here: opening a file and checking that it is corral's, of a layout this corral reads
(``_schema``), upgrading a file of layout 6 (``_layout6``), and waiting for another
process's lock in slices, so that a Ctrl-C gets through.

Safety. The file is in WAL mode; every ``put`` is one ``BEGIN IMMEDIATE`` ... ``COMMIT``
transaction (one writer at a time across processes, others wait up to ``timeout_s``);
readers read in a transaction of their own and see only committed checkpoints. The file
carries an ``application_id`` and a ``corral_schema`` version row: a file corral did not
write, or a damaged one, raises ``CheckpointError`` naming the path, never a silent reset.
"""

from corral.checkpoint.sqlite._schema import SCHEMA_VERSION
from corral.checkpoint.sqlite.saver import SqliteSaver

__all__ = ["SCHEMA_VERSION", "SqliteSaver"]
