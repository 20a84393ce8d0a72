"""What keeps the server safe: the token, the body limit, and no database URL in output.

- :class:`Guard` (ASGI middleware) refuses a body over ``max_body`` bytes with 413, counted
  as it arrives (a missing or false ``Content-Length`` does not help), and, with a token,
  every API call without ``Authorization: Bearer TOKEN`` or ``x-api-key: TOKEN`` with 401.
  The page's paths take the token from a cookie set by its sign-in form instead.
- :class:`Scrubber` replaces the database URL, its redacted form and its password with
  ``<database>`` in every log line and error text the server writes.
"""

from __future__ import annotations

import hmac
import logging
import re
from urllib.parse import unquote, urlsplit

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["PAGE_COOKIE", "Guard", "Scrubber", "page_paths"]


PAGE_COOKIE = "corral_token"
"""The cookie the page's sign-in sets (HttpOnly, SameSite=Strict)."""

_OPEN = frozenset({"/ok"})
"""Paths answered without a token: the health check says nothing about the data."""


def page_paths(path: str) -> bool:
    """Return whether ``path`` is the page's (cookie sign-in) rather than the API's."""
    return path == "/" or path.startswith("/inbox") or path == "/signin"


class _TooLarge(Exception):
    pass


class Guard:
    """ASGI middleware: body limit (413) and token check (401), as ``{"detail": ...}``."""

    def __init__(self, app: ASGIApp, *, max_body: int, token: str | None) -> None:
        self.app = app
        self.max_body = max_body
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = HTTPConnection(scope)
        if self.token is not None and not self._allowed(request):
            if page_paths(request.url.path):
                scope["corral.signed_in"] = False  # the page shows its sign-in form
            else:
                detail = "a token is required: send Authorization: Bearer TOKEN or x-api-key"
                headers = {"WWW-Authenticate": "Bearer"}
                await JSONResponse({"detail": detail}, 401, headers)(scope, receive, send)
                return
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await JSONResponse({"detail": self._too_large()}, 413)(scope, receive, send)
            return
        seen = 0
        started = False

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded, watched)
        except _TooLarge:
            if not started:
                await JSONResponse({"detail": self._too_large()}, 413)(scope, receive, send)

    def _too_large(self) -> str:
        return f"the request body is over {self.max_body} bytes (--max-body)"

    def _allowed(self, request: HTTPConnection) -> bool:
        assert self.token is not None
        if request.url.path in _OPEN or request.scope.get("method") == "OPTIONS":
            return True
        given = request.headers.get("x-api-key", "")
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = given or credentials.strip()
        if page_paths(request.url.path) and not given:
            given = request.cookies.get(PAGE_COOKIE, "")
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())


class Scrubber(logging.Filter):
    """Removes the database's URL (and password) from text: a log filter and a function."""

    def __init__(self, *secrets: str | None) -> None:
        super().__init__()
        found: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            found.add(secret)
            parts = urlsplit(secret) if "://" in secret else None
            if parts is not None and parts.password:
                found.add(parts.password)
                found.add(unquote(parts.password))
            for match in re.finditer(r"password\s*=\s*(\S+)", secret):
                found.add(match.group(1))
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in sorted(found, key=len, reverse=True)))
            if found
            else None
        )

    def __call__(self, text: str) -> str:
        """Return ``text`` with every secret replaced by ``<database>``."""
        return text if self._pattern is None else self._pattern.sub("<database>", text)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self(record.getMessage())
        record.args = None
        if record.exc_info:
            import traceback

            record.exc_text = self("".join(traceback.format_exception(*record.exc_info)))
            record.exc_info = None
        return True
