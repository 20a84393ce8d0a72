"""Import and check modules in a child process, so user code cannot hang or end ``corral lint``.

``corral lint`` imports the modules it checks, and importing runs their top-level code: a
``while True: pass`` would hang the linter, ``os._exit(0)`` would end it with exit code 0
and no output, a crash in a C extension would take it down. So the parent process never
imports them. It walks the folders (:func:`corral.loader.python_files`), then hands each
module to one worker process, which imports it, finds its graphs
(:func:`corral.loader.find_targets`), runs the analyser and sends back plain data: findings
and error messages. One worker serves every module in turn (starting an interpreter per
module would cost ~100 ms each), so modules that import each other are imported once, as
in-process. The invariant: every module asked about gets exactly one answer, either the
worker's or a load error written by the parent when the worker died (the exit code or
signal is named) or did not answer within the per-module timeout (the worker is killed).
In both cases the next module gets a fresh worker.

The protocol is length-prefixed pickles over the worker's stdin and a private copy of its
stdout; the worker's own fd 1 is pointed at stderr, so a module that prints cannot corrupt
the answers, and its stdin is ``/dev/null``, so a module that reads input does not block.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from corral.analysis.diagnostic import Diagnostic
from corral.errors import GraphError
from corral.loader import Target, UsageError, find_targets, import_modules

__all__ = [
    "Failure",
    "ModuleReport",
    "Request",
    "TargetReport",
    "Worker",
    "check_module",
    "check_target",
    "serve",
]

_HEADER = struct.Struct("!I")
_READY = b"R"
_FLUSH_S = 0.05
"""The worker sends its answers at least this often (seconds) while requests keep coming."""
_STARTUP_S = 60.0
"""How long a new worker may take to start (import corral), before any module's clock."""


@dataclass(frozen=True)
class Failure:
    """A module or graph that could not be loaded or checked, as text."""

    source: str
    """The file, module or ``file:graph`` it is about."""
    message: str
    """One line for the user, naming the source."""
    formatted: str = ""
    """The traceback, for ``--verbose``."""


@dataclass(frozen=True)
class TargetReport:
    """One graph a module defined, with its findings."""

    name: str
    aliases: tuple[str, ...]
    failed: bool
    """Its module failed to import after defining it (its findings are not reported)."""
    diagnostics: tuple[Diagnostic, ...] = ()
    failure: Failure | None = None
    """Set when the graph was found but its spec could not be built or checked."""


@dataclass(frozen=True)
class ModuleReport:
    """What the worker learnt from importing one module."""

    source: str
    targets: tuple[TargetReport, ...] = ()
    failure: Failure | None = None
    """The import failed (with a plain exception, or the worker died or timed out)."""
    graph_error: tuple[Diagnostic, ...] = ()
    """The import raised ``GraphError`` with findings: they are reported as findings."""


@dataclass(frozen=True)
class Request:
    """One thing for the worker to import: a file path, or a dotted module name."""

    path: str
    dotted: bool = False
    only_marked: bool = True
    sys_path: tuple[str, ...] = ()
    """The parent's ``sys.path``: entries the worker lacks are added in front, so a module
    importable in the parent (a test's ``syspath_prepend``, a tool's plugin folder) is
    importable in the worker too."""


def check_module(source: str, module: Any, error: Any, seen: dict[int, Target]) -> ModuleReport:
    """Return the findings for one imported module (runs in the worker)."""
    failure = None
    graph_error: tuple[Diagnostic, ...] = ()
    if error is not None:
        if isinstance(error.exc, GraphError) and error.exc.diagnostics:
            graph_error = tuple(error.exc.diagnostics)
        else:
            failure = Failure(error.source, error.message, error.formatted)
    reports: list[TargetReport] = []
    if module is not None:
        for target in find_targets(module, source, seen, failed=error is not None):
            reports.append(check_target(target))
    return ModuleReport(source, tuple(reports), failure, graph_error)


def check_target(target: Target) -> TargetReport:
    if target.failed:
        return TargetReport(target.name, target.aliases, failed=True)
    try:
        found = tuple(target.check())
    except GraphError as exc:
        if not exc.diagnostics:
            return TargetReport(target.name, target.aliases, False, (), _failure(target, exc))
        found = tuple(exc.diagnostics)
    except Exception as exc:
        return TargetReport(target.name, target.aliases, False, (), _failure(target, exc))
    return TargetReport(target.name, target.aliases, False, found)


def _failure(target: Target, exc: BaseException) -> Failure:
    text = str(exc).strip().splitlines()
    detail = f": {text[0]}" if text else ""
    message = f"cannot check {target.label}: {type(exc).__name__}{detail}"
    return Failure(target.label, message, "".join(traceback.format_exception(exc)))


def _answer(request: Request, seen: dict[int, Target]) -> list[ModuleReport]:
    if request.sys_path:
        sys.path[:0] = [p for p in request.sys_path if p not in sys.path]
    found = import_modules(request.path, dotted=request.dotted, only_marked=request.only_marked)
    return [check_module(source, module, error, seen) for source, module, error in found]


def serve() -> None:
    """Answer requests on stdin until it closes (the worker's main loop)."""
    answers = os.fdopen(os.dup(1), "wb")
    requests = os.dup(0)  # unbuffered, so select() sees every waiting request
    os.dup2(2, 1)  # a module's print() goes to stderr, never into the answers
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = sys.stderr
    seen: dict[int, Target] = {}
    # What every checked module needs of corral (the DSL it imports, the analyser that
    # checks its graphs) is imported before the first clock starts: --import-timeout
    # measures the user's module, not corral's own first import (seconds on a cold start).
    import corral.analysis
    import corral.dsl  # noqa: F401

    answers.write(_READY)  # the per-module clock starts once the interpreter is up
    answers.flush()
    flushed = time.monotonic()
    # Answers written while the next request was already waiting are sent in batches; a
    # module that then hangs at import must not hold back the answers before it (the
    # parent would blame them on the timeout), so a thread sends them every _FLUSH_S too.
    threading.Thread(target=_flush_every, args=(answers,), daemon=True).start()
    while True:
        if time.monotonic() - flushed > _FLUSH_S or not _waiting(requests):
            answers.flush()  # a write per answer would cost a context switch per module
            flushed = time.monotonic()
        header = _read_exactly(requests, _HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        request: Request = pickle.loads(_read_exactly(requests, size))
        try:
            reply: object = _answer(request, seen)
        except BaseException as exc:  # a UsageError for a dotted name that is no module
            reply = [_unexpected(request.path, exc)]
        data = _dumps(reply, request.path)
        answers.write(_HEADER.pack(len(data)) + data)


def _flush_every(answers: IO[bytes]) -> None:
    """Send the worker's buffered answers every :data:`_FLUSH_S` (a daemon thread)."""
    while True:
        time.sleep(_FLUSH_S)
        try:
            answers.flush()
        except (OSError, ValueError):  # the parent is gone, or the stream is closed
            return


def _waiting(fd: int) -> bool:
    """Return whether another request is waiting in the pipe."""
    return bool(select.select([fd], [], [], 0)[0])


def _read_exactly(fd: int, size: int) -> bytes:
    """Read ``size`` bytes from ``fd``; fewer only when it closes."""
    parts: list[bytes] = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _unexpected(source: str, exc: BaseException) -> ModuleReport:
    if isinstance(exc, UsageError):
        message = str(exc)
    else:
        message = f"cannot import {source}: {type(exc).__name__}: {exc}"
    formatted = "".join(traceback.format_exception(exc))
    return ModuleReport(source, failure=Failure(source, message, formatted))


def _dumps(reply: object, source: str) -> bytes:
    try:
        return pickle.dumps(reply)
    except Exception as exc:  # a finding that holds something unpicklable: never expected
        failure = Failure(source, f"cannot report on {source}: {type(exc).__name__}: {exc}")
        return pickle.dumps([ModuleReport(source, failure=failure)])


@dataclass
class Worker:
    """The parent's handle on the worker process: ask about one module at a time.

    >>> with Worker(timeout_s=10.0) as worker:
    ...     [report.source for report in worker.ask(Request("corral.spec", dotted=True))]
    ['corral.spec']
    """

    timeout_s: float
    """How long one module may take to import and check before the worker is killed."""
    window: int = 32
    """How many requests may wait in the worker's pipe."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _sent_path: tuple[str, ...] = field(default=(), repr=False)
    _clock: float = field(default=0.0, repr=False)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and process.stdout is not None
        # Every answer is in; killing spares the interpreter's teardown of every module.
        process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def ask(self, request: Request) -> list[ModuleReport]:
        """Return the worker's reports for one request."""
        return next(iter(self.run([request])))

    def run(self, requests: Iterable[Request]) -> Iterator[list[ModuleReport]]:
        """Yield the reports for each request, in order.

        Up to :attr:`window` requests wait in the worker's pipe, so the worker never waits
        for the parent between modules (a round trip per module doubled lint's time on a
        busy machine). Each module's clock starts when the answer before it arrived. When
        the worker dies or is stopped, the module it was on gets a failure and the
        requests queued behind it go to a fresh worker.
        """
        queue = iter(requests)
        resend: deque[Request] = deque()
        pending: deque[Request] = deque()
        while True:
            while len(pending) < self.window:
                request = resend.popleft() if resend else next(queue, None)
                if request is None:
                    break
                self._send(request)
                pending.append(request)
            if not pending:
                return
            request = pending.popleft()
            reply, alive = self._receive(request)
            if not alive:
                resend.extendleft(reversed(pending))
                pending.clear()
            yield reply

    def _send(self, request: Request) -> None:
        process = self._start()
        assert process.stdin is not None
        here = tuple(sys.path)
        if here != self._sent_path:
            request = dataclasses.replace(request, sys_path=here)
            self._sent_path = here
        data = pickle.dumps(request)
        try:
            process.stdin.write(_HEADER.pack(len(data)) + data)
        except OSError:
            pass  # the worker has died; the answer it owes says so

    def _receive(self, request: Request) -> tuple[list[ModuleReport], bool]:
        process = self._process
        assert process is not None and process.stdout is not None
        deadline = self._clock + self.timeout_s
        shown = _shown(request)
        try:
            (size,) = _HEADER.unpack(_read(process.stdout, _HEADER.size, deadline))
            reply: list[ModuleReport] = pickle.loads(_read(process.stdout, size, deadline))
        except _TimedOut:
            self._kill()
            message = (
                f"cannot import {shown}: it did not finish within "
                f"{self.timeout_s:g} s (--import-timeout); it was stopped"
            )
            return [ModuleReport(shown, failure=Failure(shown, message))], False
        except (OSError, EOFError, struct.error, pickle.UnpicklingError):
            how = self._kill()
            message = f"cannot import {shown}: importing it {how}"
            return [ModuleReport(shown, failure=Failure(shown, message))], False
        self._clock = time.monotonic()
        return reply, True

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            code = "from corral.cli._worker import serve; serve()"
            self._process = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            assert self._process.stdout is not None
            deadline = time.monotonic() + _STARTUP_S
            if _read(self._process.stdout, len(_READY), deadline) != _READY:
                msg = "the corral lint worker did not start"
                raise OSError(msg)
            self._sent_path = ()
            self._clock = time.monotonic()
        return self._process

    def _kill(self) -> str:
        """Stop the worker; return how it ended, for the message."""
        process, self._process = self._process, None
        assert process is not None
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if code == -signal.SIGKILL:
            return "was stopped"
        if code < 0:
            return f"crashed the process ({signal.Signals(-code).name})"
        return f"ended the process (exit code {code})"


class _TimedOut(Exception):
    pass


def _read(stream: IO[bytes], size: int, deadline: float) -> bytes:
    """Read exactly ``size`` bytes before ``deadline`` (a ``time.monotonic()`` value)."""
    parts: list[bytes] = []
    left = size
    fd = stream.fileno()
    while left:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise _TimedOut
        chunk = os.read(fd, left)
        if not chunk:
            raise EOFError
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _shown(request: Request) -> str:
    from corral.loader import display_path

    return request.path if request.dotted else display_path(request.path)
