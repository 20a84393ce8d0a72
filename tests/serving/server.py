"""Start a real ``corral serve`` process on a free loopback port, and always stop it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

GRAPHS = str(Path(__file__).with_name("served_graph.py"))
SERVED = [f"{GRAPHS}:review", f"{GRAPHS}:slow"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """A running ``corral serve``: its URL, its process and what it wrote to stderr."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@contextmanager
def serving(
    db: str,
    tmp: Path,
    *args: str,
    paths: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Run ``corral serve PATHS --db DB ARGS`` until the block ends (then kill it)."""
    port = free_port()
    log = tmp / f"serve-{port}.log"
    command = [sys.executable, "-m", "corral", "serve", *(paths or SERVED), "--db", db]
    command += ["--port", str(port), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"corral serve exited {process.returncode}: {server.output()}")
            try:
                if httpx.get(f"{server.url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"corral serve did not start: {server.output()}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
