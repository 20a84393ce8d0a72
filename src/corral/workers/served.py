"""Runs with an id of their own in the queue: the runs ``corral serve`` creates.

A served run is a row of ``corral_runs`` like any queued run, with the columns the Agent
Protocol needs: its id (``uuid``), its graph, the request it was made from (metadata,
multitask strategy, stream modes...), and a cancel request. Whichever worker takes it,
the server's own or a ``corral worker`` elsewhere, runs it from the row (its input, its
``command`` and the checkpoint it forks from, see :func:`~corral.workers.queue.load_input`)
and stops before its next node once ``cancel`` is set. So a run's record and its place in
the queue are one row: it is queued exactly when it is recorded.

:class:`~corral.workers.queue.RunQueue` reads and changes them (``add``, ``get``,
``cancel``...) with statements written once, with ``:name`` parameters; each queue gives
the transaction (one that only reads takes no write lock in SQLite), the placeholder style
and the lock that orders the runs of one thread.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["SERVED_COLUMNS", "add_served_columns"]

SERVED_COLUMNS: Final = tuple(f"{c} TEXT" for c in "uuid graph request command fork cancel".split())
"""The columns a served run adds to ``corral_runs``, added to a table made without them."""


def add_served_columns(db: Any) -> None:
    """Add the :data:`SERVED_COLUMNS` ``corral_runs`` lacks and the index on ``uuid``, in
    the caller's transaction (which holds the lock that orders creating tables)."""
    present = {column[0] for column in db.execute("SELECT * FROM corral_runs LIMIT 0").description}
    missing = [c for c in SERVED_COLUMNS if c.split()[0] not in present]
    for column in missing:
        db.execute(f"ALTER TABLE corral_runs ADD COLUMN {column}")
    if missing:
        db.execute("CREATE UNIQUE INDEX corral_runs_uuid ON corral_runs (uuid)")
