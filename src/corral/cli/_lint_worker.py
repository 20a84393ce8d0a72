"""Import and check modules outside ``corral lint``'s process, one process per module.

``corral lint`` imports the modules it checks, and importing runs their top-level code: a
``while True: pass`` would hang the linter, ``os._exit(0)`` would end it, a module could
patch the analyser. So the parent process never imports them, and never reads anything
from them but plain JSON. It walks the folders (:func:`corral.loader.python_files`), then
hands each module to the worker (:mod:`corral.cli._forks`), which forks a fresh child per
module; the child imports it, finds its graphs, runs the analyser and sends back a report.

The invariant: every module asked about gets exactly one answer, and only from the child
that imported it (or a failure written here when no such answer came: the child ended
without one, was stopped at the per-module timeout, or sent bytes that are not a report).
A module can spoil its own answer, never another's: a fresh child per module means a
module's patches, its ``os._exit`` or its crash reach nobody else.

The worker itself runs no module code, but a module can kill it (``os.kill(os.getppid(),
...)``). When the worker ends with several modules in flight, they are asked again one at
a time, so the module that kills the worker again is named alone and the others keep
their answers.

A module's stderr (and its stdout, pointed there) reaches ``corral lint``'s stderr through
a pipe this process copies, so a process a module leaves behind holding it cannot keep
``corral lint ... 2>&1 | cat`` from ending.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from corral.cli._reports import Failure, ModuleReport, UnreadableReport, decode_reports

__all__ = ["Request", "Worker"]

_STARTUP_S = 60.0
"""How long a new worker may take to start (import corral), before any module's clock."""
WALL_FACTOR = 3
"""A module may take this many times ``--import-timeout`` in wall-clock time (sleeping,
waiting on the network or for a core) before it is stopped."""
_SLACK_S = 5.0
"""How much longer than the per-module timeout the worker may be silent before it is
taken for stopped (a module can ``SIGSTOP`` it)."""
_WINDOW = 32
"""How many requests may wait at the worker."""


@dataclass(frozen=True)
class Request:
    """One thing for the worker to import: a file path, or a dotted module name."""

    path: str
    dotted: bool = False


def _jobs() -> int:
    """Return how many children import modules at once."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


class _WorkerGone(Exception):
    """The worker ended, or stopped answering, with modules in flight."""


@dataclass
class Worker:
    """The parent's handle on the worker process: ask about modules, one answer each.

    >>> with Worker(timeout_s=10.0) as worker:
    ...     [[r.source for r in reply] for reply in worker.run([Request("corral.spec", True)])]
    [['corral.spec']]
    """

    timeout_s: float
    """How many seconds of CPU time one module may use to import and check before its
    child is killed (and :data:`WALL_FACTOR` times that in wall-clock time)."""
    _process: _Process | None = field(default=None, repr=False)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the worker."""
        process, self._process = self._process, None
        if process is not None:
            process.stop()

    def run(self, requests: Iterable[Request]) -> Iterator[list[ModuleReport]]:
        """Yield the reports for each request, in order.

        Up to :data:`_WINDOW` requests wait at the worker, so it never waits for this
        process between modules. When the worker ends with one module in flight, that module
        is named; with several, they are asked again one at a time.
        """
        queue = iter(requests)
        asked: dict[int, Request] = {}
        answers: dict[int, list[ModuleReport]] = {}
        suspects: deque[int] = deque()
        shown = 0
        ident = 0
        while True:
            process = self._start()
            if suspects:
                if not process.in_flight:
                    process.send(suspects.popleft(), asked)
            else:
                while len(process.in_flight) < _WINDOW:
                    request = next(queue, None)
                    if request is None:
                        break
                    asked[ident] = request
                    process.send(ident, asked)
                    ident += 1
            if not process.in_flight:
                return
            try:
                done, reports = process.receive(asked)
                answers[done] = reports
            except _WorkerGone as gone:
                self._process = None
                process.stop()
                lost = sorted(process.in_flight)
                if len(lost) == 1:
                    answers[lost[0]] = [_failed(asked[lost[0]], str(gone))]
                else:
                    suspects.extend(lost)
            while shown in answers:
                asked.pop(shown)
                yield answers.pop(shown)
                shown += 1

    def _start(self) -> _Process:
        if self._process is None:
            self._process = _Process.start(self.timeout_s, _jobs())
        return self._process


@dataclass
class _Process:
    """One running worker: its pipes, the requests it holds, the thread copying its stderr."""

    popen: subprocess.Popen[bytes]
    pid: int
    timeout_s: float
    relay: threading.Thread
    """Copies the worker's stderr (its children's too) to this process's fd 2."""
    relayed: threading.Event
    """Set when the relay should stop once nothing more is waiting."""
    in_flight: set[int] = field(default_factory=set)
    buffer: bytearray = field(default_factory=bytearray)
    sys_path: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, timeout_s: float, jobs: int) -> _Process:
        wall_s = timeout_s * WALL_FACTOR
        code = f"from corral.cli._forks import serve; serve({timeout_s!r}, {wall_s!r}, {jobs!r})"
        popen = subprocess.Popen(
            [sys.executable, "-P", "-c", code],  # -P: the current folder is not on its path
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
        )
        assert popen.stderr is not None
        relayed = threading.Event()
        relay = threading.Thread(target=_copy, args=(os.dup(popen.stderr.fileno()), relayed))
        relay.daemon = True
        relay.start()
        popen.stderr.close()
        popen.wait()  # the first process forks the worker and ends at once
        process = cls(popen, 0, timeout_s, relay, relayed)
        try:
            line = process._line(time.monotonic() + _STARTUP_S)
            process.pid = int(json.loads(line)["ready"])
        except (_WorkerGone, ValueError, KeyError, TypeError):
            process.stop()
            msg = "the corral lint worker did not start"
            raise OSError(msg) from None
        return process

    def send(self, ident: int, asked: dict[int, Request]) -> None:
        request = asked[ident]
        message: dict[str, object] = {"id": ident, "path": request.path, "dotted": request.dotted}
        if sys.path != self.sys_path:
            # Entries this process has and the worker lacks (a test's syspath_prepend, a
            # tool's plugin folder) are added in front of the worker's.
            message["sys_path"] = self.sys_path = list(sys.path)
        assert self.popen.stdin is not None
        self.in_flight.add(ident)
        with contextlib.suppress(OSError):  # the worker has ended: receive() says so
            self.popen.stdin.write((json.dumps(message) + "\n").encode())

    def receive(self, asked: dict[int, Request]) -> tuple[int, list[ModuleReport]]:
        """Return the next answer: the request's id and its reports."""
        deadline = time.monotonic() + self.timeout_s * WALL_FACTOR + _SLACK_S
        try:
            header = json.loads(self._line(deadline))
            ident = header["id"]
            if ident not in self.in_flight:
                raise _WorkerGone("sent an answer to nothing it was asked")
            size = header.get("size")
            body = self._exactly(size, deadline) if isinstance(size, int) else b""
        except (ValueError, KeyError, TypeError) as exc:
            raise _WorkerGone(f"sent an unreadable answer ({exc})") from None
        self.in_flight.discard(ident)
        request = asked[ident]
        if isinstance(size, int):
            return ident, _reports(request, body)
        return ident, [_failed(request, _how(header, self.timeout_s))]

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            self._fill(deadline)
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer[:] = rest
        return line

    def _exactly(self, size: int, deadline: float) -> bytes:
        while len(self.buffer) < size:
            self._fill(deadline)
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _fill(self, deadline: float) -> None:
        assert self.popen.stdout is not None
        fd = self.popen.stdout.fileno()
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise _WorkerGone("stopped the lint worker (it stopped answering)")
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise _WorkerGone("ended the lint worker")
        self.buffer += chunk

    def stop(self) -> None:
        """Close the worker's requests (it ends, killing its children) and, to be sure, kill it."""
        assert self.popen.stdin is not None and self.popen.stdout is not None
        with contextlib.suppress(OSError):
            self.popen.stdin.close()
        with contextlib.suppress(_WorkerGone, OSError):
            while True:  # until the worker's stdout ends: it has stopped its children
                self._fill(time.monotonic() + 2.0)
        with contextlib.suppress(OSError):
            self.popen.stdout.close()
        if self.pid:
            # The worker is not our child (it forked away); closing its stdin ends it, and
            # this reaches one that was stopped. Same session id: it is still the worker.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.getsid(self.pid) == self.pid:
                    os.killpg(self.pid, 9)
        # copy what is already written, then stop: a process left behind holding the
        # worker's stderr does not keep lint waiting
        self.relayed.set()
        self.relay.join(timeout=5.0)


def _copy(fd: int, done: threading.Event) -> None:
    try:
        while True:
            if not select.select([fd], [], [], 0.05)[0]:
                if done.is_set():
                    return
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            with contextlib.suppress(OSError):
                os.write(2, chunk)
    finally:
        os.close(fd)


def _reports(request: Request, body: bytes) -> list[ModuleReport]:
    try:
        reports = decode_reports(body)
    except UnreadableReport:
        return [_failed(request, "sent lint an unreadable report (it wrote to lint's pipe)")]
    expected = _shown(request)
    if not request.dotted and [r.source for r in reports] != [expected]:
        return [_failed(request, "sent lint a report about another module")]
    return reports


def _how(header: dict[str, object], timeout_s: float) -> str:
    if header.get("timeout"):
        wall = f"{timeout_s * WALL_FACTOR:g} s ({WALL_FACTOR} x --import-timeout)"
        return f"it did not finish within {wall}; it was stopped"
    signum = header.get("signal")
    if signum == signal.SIGXCPU:
        return f"it used {timeout_s:g} s of CPU time (--import-timeout); it was stopped"
    if isinstance(signum, int):
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"importing it crashed the process ({name})"
    if header.get("garbled"):
        return "importing it sent lint an unreadable report (it wrote to lint's pipe)"
    return f"importing it ended the process (exit code {header.get('exit')})"


def _failed(request: Request, how: str) -> ModuleReport:
    shown = _shown(request)
    if not how.startswith(("it ", "importing ")):
        how = f"importing it {how}"
    message = f"cannot import {shown}: {how}"
    return ModuleReport(shown, failure=Failure(shown, message))


def _shown(request: Request) -> str:
    from corral.loader import display_path

    return request.path if request.dotted else display_path(request.path)
