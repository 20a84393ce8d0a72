"""A headless Chromium driven over the DevTools protocol (CDP), for the inbox page's tests.

Chromium comes from the machine's packages (``.ci/run`` installs it); the protocol is
spoken with ``websockets`` (installed with uvicorn). The test drives the browser as a
person would: load a page, type into a field, press a button; the page itself runs no
script.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest


def chromium() -> str:
    """Return the Chromium binary, or skip (fail in CI) when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI; .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


class Browser:
    """One headless Chromium with one page."""

    def __init__(self, profile: Path) -> None:
        from websockets.sync.client import connect

        command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu"]
        command += ["--remote-debugging-port=0", f"--user-data-dir={profile}"]
        command += ["--window-size=1200,900", "--hide-scrollbars", "about:blank"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json()]
        page = next(t for t in pages if t["type"] == "page")
        self._stack = contextlib.ExitStack()
        self.socket = self._stack.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=None)
        )
        self._ids = itertools.count(1)
        self.send("Page.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one CDP command and return its result (events in between are dropped)."""
        call = next(self._ids)
        self.socket.send(json.dumps({"id": call, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == call:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        """Return the value of a JavaScript expression in the page (the test's hands)."""
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        """Load ``url`` and wait until the page is complete."""
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never had {expression}: {self.text()[:500]}")
            time.sleep(0.1)

    def text(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def screenshot(self, path: Path) -> None:
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        stack = getattr(self, "_stack", None)
        if stack is not None:
            stack.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
