"""The inbox page (``GET /``)."""

from __future__ import annotations

from starlette.routing import Route

__all__ = ["routes"]

routes: list[Route] = []
