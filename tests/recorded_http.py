"""Recorded provider responses served through the HTTP library's own ``MockTransport``.

The provider SDKs run their real client code (request building, retries off, response
parsing, server-sent events); only the socket is replaced. The responses are files in
``tests/fixtures/agents/`` written in the providers' documented formats: ``.json`` bodies,
``.sse`` event streams, and ``.http`` whole responses (status line, headers, body) for the
answers that are not 200. ``!connect`` and ``!timeout`` in place of a file name make the
transport fail as httpx does when no server answers.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents"


def http_module() -> Any:
    """Return the HTTP library the SDKs use (``httpx2`` in new releases, else ``httpx``)."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


class Recorded:
    """Serve the named fixture files in order, one per request; keep each request's JSON body."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.http = http_module()

    def handle(self, request: Any) -> Any:
        self.requests.append(json.loads(request.content))
        self.paths.append(request.url.path)
        name = self.names.pop(0)
        if name == "!connect":
            raise self.http.ConnectError("[Errno 111] Connection refused", request=request)
        if name == "!timeout":
            raise self.http.ReadTimeout("timed out", request=request)
        if name.endswith(".http"):
            head, _, body = (FIXTURES / name).read_bytes().partition(b"\n\n")
            status, *lines = head.decode().splitlines()
            headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines]
            return self.http.Response(int(status.split()[1]), headers=headers, content=body)
        body = (FIXTURES / name).read_bytes()
        kind = "text/event-stream" if name.endswith(".sse") else "application/json"
        return self.http.Response(200, headers={"content-type": kind}, content=body)

    def client(self) -> Any:
        return self.http.Client(transport=self.http.MockTransport(self.handle))

    def async_client(self) -> Any:
        return self.http.AsyncClient(transport=self.http.MockTransport(self.handle))
