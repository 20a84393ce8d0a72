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
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["PAGE_COOKIE", "Guard", "Scrubber", "page_paths"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

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
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token is not None and not self._allowed(scope, headers):
            if page_paths(scope["path"]):
                scope["corral.signed_in"] = False
            else:
                await _answer(send, 401, "a token is required: send Authorization: Bearer TOKEN")
                return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await _answer(send, 413, self._too_large())
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
                await _answer(send, 413, self._too_large())

    def _too_large(self) -> str:
        return f"the request body is over {self.max_body} bytes (--max-body)"

    def _allowed(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        if scope["path"] in _OPEN or scope.get("method") == "OPTIONS":
            return True
        given = headers.get("x-api-key") or ""
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            given = given or bearer[7:].strip()
        if page_paths(scope["path"]) and not given:
            given = _cookie(headers.get("cookie", ""), PAGE_COOKIE)
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return unquote(value)
    return ""


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
