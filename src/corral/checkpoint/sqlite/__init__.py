"""``SqliteSaver``: checkpoints in one SQLite file (the embedded default).

Layout (version 6, :mod:`~corral.checkpoint.sqlite._layout`). ``checkpoints`` is one table
of two kinds of rows, numbered by ``seq``: a *checkpoint* row (its thread, a small integer
from ``threads``; its id; its parent, the parent row's ``seq``; and three JSON texts, the
snapshot (or NULL), the writes and the meta) and a *value* row (``data``: the JSON of one
stored value, with ``thread`` NULL). Each thread numbers its rows in a range of ``seq`` of
its own, in the order they were put; a put appends the values its checkpoint stores and then
the checkpoint itself to the end of its thread's range: one page written per superstep. The
checkpoint ids are copied into ``ids`` a block of 16 rows at a time (one page every eight
supersteps of one message); the thread's last block is scanned. The thread's newest
checkpoint is its last checkpoint row (``threads.newest`` overrides it only in files
upgraded from layout 3 and inside a fork's transaction), so no pointer row is written per
step. A snapshot put inserts its rows through the view ``put_fold``, whose trigger also
folds the thread's small value rows written since its last fold into one row of ``runs``
(their texts as one JSON array; each value keeps its ``seq``, resolved through the run): a
long list reads back by one query and one parse per run instead of one row per item
(:mod:`~corral.checkpoint.sqlite._runs`). The view ``blobs`` shows every stored value,
folded or not.

``pending_writes`` holds the finished tasks of a superstep whose checkpoint is not written
yet, keyed ``(thread, seq of the checkpoint the superstep started from, task)``; putting
the next checkpoint of that parent deletes them in the same transaction.

Storing values once, and the deltas of metas and snapshots: see
:mod:`corral.checkpoint.sqlite.packing` (shared with ``PostgresSaver``).

Modules: ``saver`` (:class:`SqliteSaver`), ``_layout`` (the tables, their triggers, and
upgrading older layouts), ``_ids`` (finding a checkpoint by id), ``_schema`` (opening a file
and checking it is a corral file of a version this corral reads), ``packing`` (encoded trees
to JSON texts that store large values once), ``puts`` (one checkpoint packed against the
thread's last: meta deltas, snapshot reuse, snapshot placement by bytes), ``_reading`` (rows
back to checkpoints, stored values read by range queries, damage named), ``_writing`` (a put
as one ``INSERT``), ``jsontext`` (the compact JSON encoder), ``_runs`` (the fold into runs)
and ``_folded`` (reading values from runs and rows). None imports ``corral`` itself, only
its ``checkpoint`` and ``errors`` modules; ``packing``, ``puts`` and ``_reading`` serve
``PostgresSaver`` too.

Safety. The file is in WAL mode; every ``put`` is one transaction, usually one ``INSERT``
of rows the saver numbered itself (``_writing``), else ``BEGIN IMMEDIATE`` ... ``COMMIT``
(one writer at a time across processes, others wait up to ``timeout_s``); readers read in a
transaction of their own and see only committed checkpoints. Checkpoint rows and runs are
never updated or deleted, and a stored value, once committed, keeps its ``seq`` and its text
for good: a value row is deleted only by the fold that copied it into a run, in the same
transaction, so whatever a process has cached about them (ids, content hashes) stays true.
The file carries an ``application_id`` and a ``corral_schema`` version row: a file corral
did not write, or a damaged one, raises ``CheckpointError`` naming the path, never a silent
reset.
"""

from corral.checkpoint.sqlite._layout import SCHEMA_VERSION
from corral.checkpoint.sqlite.saver import SqliteSaver

__all__ = ["SCHEMA_VERSION", "SqliteSaver"]
