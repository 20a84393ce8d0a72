"""Find the processes a test run leaves behind, wherever they went.

Every process the run starts inherits one environment variable with a value unique to the
run (:data:`MARK`), even a server that detached from its parent (``pg_ctl start``) or a
process a linted module forked into a session of its own; ``/proc/PID/environ`` shows the
environment a process started with, so the run's own process, which set the variable after
it started, is never counted.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

__all__ = ["MARK", "left_behind", "mark_run"]

MARK = "CORRAL_TEST_RUN"


def mark_run() -> str:
    """Give this run (and every process it starts from now on) a mark of its own."""
    value = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.environ[MARK] = value
    return value


def left_behind(value: str, *, grace_s: float = 5.0) -> list[str]:
    """Return ``pid: command`` for each live process carrying ``value``, after ``grace_s``
    for processes that are ending (a server's shutdown, a killed child being reaped)."""
    deadline = time.monotonic() + grace_s
    while True:
        found = _carrying(value)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _carrying(value: str) -> list[str]:
    needle = f"{MARK}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile, or another user's
            continue
        if state != "Z":  # a zombie holds nothing; its parent reaps it
            found.append(f"{entry.name}: {command.strip()}")
    return found
