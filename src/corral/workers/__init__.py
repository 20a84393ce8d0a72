"""Durable workers: runs queued in the checkpointer's database, run by ``corral worker``.

``app.submit(input, thread_id=T)`` adds a run to the queue; a :class:`Worker` (or the
``corral worker`` command, on any number of machines) takes it under a lease and runs it;
``app.wait(T)`` returns its :class:`~corral.Run`. See ``docs/scaling.md``.
"""

from __future__ import annotations

from corral.workers.client import queue_for, submit, wait
from corral.workers.worker import Worker

__all__ = ["Worker", "queue_for", "submit", "wait"]
