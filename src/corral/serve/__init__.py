"""``corral serve``: the served graphs over the Agent Protocol, and an inbox for people.

The API is the threads/runs/assistants part of the Agent Protocol in the shapes the
LangGraph server gives it, so the LangGraph SDK (``langgraph_sdk``) works against it; runs
are queued in the checkpointer's database and run by durable workers
(:mod:`corral.workers`). ``GET /`` is a page listing the threads, those waiting for a
person on top, where a person answers them. Needs the ``serve`` extra (Starlette and
uvicorn). See ``docs/serve.md``.
"""

from __future__ import annotations

from corral.serve._app import create_app

__all__ = ["create_app"]
