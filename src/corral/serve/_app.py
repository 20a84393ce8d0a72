"""The Starlette application: the API's routes, the page, the server's own workers.

On start-up (the ASGI lifespan) it starts a :class:`~corral.serve._runs.ServeWorker` on a
thread of its own when ``workers > 0``; on shutdown it stops the worker, which finishes or
releases the runs it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any, TextIO, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.errors import CheckpointError, CorralError
from corral.runtime.app import CompiledGraph
from corral.serve import _page, _runs_api, _threads_api
from corral.serve._guard import Guard, Scrubber
from corral.serve._hub import Hub
from corral.serve._requests import JSONText
from corral.serve._runs import Served, ServeWorker, database_of

__all__ = ["create_app"]

log = logging.getLogger("corral.serve")


class _ScrubbedLog(io.TextIOBase):
    """The worker's log stream, with the database URL taken out of each line."""

    def __init__(self, scrub: Scrubber, out: TextIO) -> None:
        self.scrub = scrub
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(self.scrub(text))

    def flush(self) -> None:
        self.out.flush()


def create_app(
    graphs: dict[str, CompiledGraph[Any]],
    *,
    workers: int = 2,
    deps: Any = None,
    token: str | None = None,
    max_body: int = 1 << 20,
    cors_origins: tuple[str, ...] = (),
    secrets: tuple[str, ...] = (),
    lease_s: float = 30.0,
) -> Starlette:
    """Return the ASGI app serving ``graphs`` (by assistant name; one shared checkpointer).

    Args:
        workers: runs this process runs at once (0: leave them to ``corral worker``).
        token: the token every API call must carry (``None``: no token).
        max_body: the largest request body, in bytes (413 above it).
        cors_origins: origins a browser UI may call the API from.
        secrets: text that must never appear in a response or log line (the database URL).
    """
    first = next(iter(graphs.values()))
    for name, app in graphs.items():
        if app.checkpointer is not first.checkpointer:
            msg = f"graph {name!r} has another checkpointer; serve graphs of one database"
            raise CorralError(msg)
    database_of(first)  # refused now, before the server listens
    scrub = Scrubber(*secrets, getattr(first.checkpointer, "where", None))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "corral.serve", ""):
        logging.getLogger(name).addFilter(scrub)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub = Hub(asyncio.get_running_loop())
        served = Served(graphs, hub, deps=deps)
        app.state.served = served
        app.state.token = token
        if workers == 0:  # the runs are left to `corral worker` processes
            yield
            return
        out = cast(TextIO, _ScrubbedLog(scrub, sys.stderr))
        worker = ServeWorker(served, concurrency=workers, poll_s=0.05, lease_s=lease_s, log=out)
        served.worker_name = worker.name
        thread = threading.Thread(target=worker.run, name="corral-serve-worker", daemon=True)
        thread.start()
        try:
            yield
        finally:
            worker.stop()
            await asyncio.to_thread(thread.join, worker.grace_s + 5)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return JSONText({"detail": scrub(str(exc.detail))}, status_code=exc.status_code)

    async def store_error(request: Request, exc: Exception) -> Response:
        log.error("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        detail = "the database did not answer; the server's log says why (try again)"
        return JSONText({"detail": detail}, status_code=503)

    async def corral_error(request: Request, exc: Exception) -> Response:
        return JSONText({"detail": scrub(str(exc))}, status_code=422)

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
        detail = f"internal error ({type(exc).__name__}); the server's log has the traceback"
        return JSONText({"detail": detail}, status_code=500)

    async def ok(request: Request) -> Response:
        return JSONText({"ok": True})

    async def info(request: Request) -> Response:
        from corral import __version__

        return JSONText({"version": __version__, "server": "corral", "flags": {}})

    middleware = [Middleware(Guard, max_body=max_body, token=token)]
    if cors_origins:
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST", "PATCH", "DELETE"],
                allow_headers=["authorization", "x-api-key", "content-type", "last-event-id"],
                expose_headers=["location", "content-location"],
            ),
        )
    routes = [
        Route("/ok", ok, methods=["GET"]),
        Route("/info", info, methods=["GET"]),
        *_threads_api.routes,
        *_runs_api.routes,
        *_page.routes,
    ]
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            HTTPException: http_error,
            CheckpointError: store_error,
            CorralError: corral_error,
            Exception: unexpected,
        },
    )
