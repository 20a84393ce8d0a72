"""``Context``: the optional second parameter of a node or router."""

from __future__ import annotations

__all__ = ["Context"]


class Context:
    """What a node can see of its run: ``deps``, ``step``, ``thread_id``, run and guard counts."""
