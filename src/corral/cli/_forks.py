"""The lint worker: a clean process that forks one child per module to import and check it.

The worker (started by :class:`corral.cli._lint_worker.Worker`) imports corral's DSL and
analyser and never any user module. For each request it forks a child, which puts itself in its
own process group, points its stdin at ``/dev/null`` and its stdout at stderr, closes every
other descriptor it inherited except the write end of a pipe of its own (fd 3), imports the
module, checks its graphs, writes one frame (a 4-byte length, then the JSON of
:func:`corral.cli._reports.encode_reports`) to fd 3, and leaves with ``os._exit``.

Invariants:

- One module, one process, one pipe. Whatever a module does to corral's functions, to
  ``sys.modules`` or to its pipe touches only its own child, so it can spoil only its own
  report: the worker attributes a frame to the request it forked the child for, never by
  what the frame says.
- The worker answers every request exactly once, on its stdout: a JSON header line
  ``{"id": N, ...}`` and, when the child sent a frame, its bytes unread. A child that ends
  without a frame is answered with how it ended (exit code or signal); one that outlives
  the per-module timeout is killed with its whole process group.
- After a child ends, its process group is killed, so what it forked without leaving the
  group cannot outlive its check; what left the group (``setsid``) holds no descriptor of
  the worker's or of ``corral lint``'s but the stderr pipe the parent drains and drops.
- The worker starts by forking once and letting the first process end, in a session of its
  own: a module's ``os.getppid()`` is the worker, and the worker's parent is not lint, so a
  module that kills its parent or its process group reaches the worker at most, which the
  parent notices (end of the worker's stdout) and replaces.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import select
import signal
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from corral.analysis.diagnostic import Diagnostic
from corral.cli._reports import Failure, ModuleReport, TargetReport, encode_reports
from corral.errors import GraphError
from corral.loader import Target, UsageError, find_targets, import_modules

__all__ = ["FRAME", "MAX_REPORT_BYTES", "check_module", "check_target", "serve"]

FRAME = struct.Struct("!I")
MAX_REPORT_BYTES = 64 * 1024 * 1024
"""A child's report larger than this is not read (a module writing garbage to its pipe)."""
_RESULT_FD = 3
_POLL_S = 0.01
"""How often children are polled for their end where ``os.pidfd_open`` is missing."""


def check_module(source: str, module: Any, error: Any, seen: dict[int, Target]) -> ModuleReport:
    """Return the findings for one imported module (runs in the child)."""
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
    """Run the analyser on one graph; a graph that cannot be checked is a failure."""
    if target.failed:
        return TargetReport(target.name, target.aliases, failed=True)
    try:
        found = tuple(target.check())
    except Exception as exc:  # a GraphError with findings reports them
        if not (isinstance(exc, GraphError) and exc.diagnostics):
            return TargetReport(target.name, target.aliases, False, (), _failure(target, exc))
        found = tuple(exc.diagnostics)
    return TargetReport(target.name, target.aliases, False, found)


def _failure(target: Target, exc: BaseException) -> Failure:
    text = str(exc).strip().splitlines()
    detail = f": {text[0]}" if text else ""
    message = f"cannot check {target.label}: {type(exc).__name__}{detail}"
    return Failure(target.label, message, "".join(traceback.format_exception(exc)))


def _unexpected(source: str, exc: BaseException) -> ModuleReport:
    if isinstance(exc, UsageError):
        message = str(exc)
    else:
        message = f"cannot import {source}: {type(exc).__name__}: {exc}"
    formatted = "".join(traceback.format_exception(exc))
    return ModuleReport(source, failure=Failure(source, message, formatted))


@dataclass
class _Child:
    """One forked child: the request it checks, its pipe, its clock, what it has sent."""

    ident: int
    pid: int
    pipe: int
    ends: int | None
    """A pidfd that becomes readable when the child ends (``None`` where unsupported)."""
    deadline: float
    received: bytearray = field(default_factory=bytearray)
    reading: bool = True
    """Whether the pipe may still bring bytes wanted (not at its end, not over the limit):
    a pipe at its end stays readable, and waiting on it would spin until the child is reaped."""
    status: int | None = None
    timed_out: bool = False


def serve(cpu_s: float, wall_s: float, jobs: int) -> None:
    """Answer the requests on stdin until it closes (the worker's main loop): each child may
    use ``cpu_s`` seconds of CPU time and live ``wall_s`` seconds."""
    if os.fork():
        os._exit(0)  # the worker's parent becomes init (or a subreaper), never lint
    os.setsid()
    _warm_up()
    gc.freeze()  # children share these pages instead of copying them on the first collection
    devnull = os.open(os.devnull, os.O_RDONLY)
    _write(1, (json.dumps({"ready": os.getpid()}) + "\n").encode())
    children: dict[int, _Child] = {}
    try:
        _loop(children, devnull, cpu_s, wall_s, jobs)
    except BrokenPipeError:
        pass  # lint has gone: nobody is left to answer
    finally:
        for child in children.values():
            _stop(child)
    os._exit(0)  # nothing to tear down: lint has every answer it wanted


def _loop(
    children: dict[int, _Child], devnull: int, cpu_s: float, wall_s: float, jobs: int
) -> None:
    waiting: list[tuple[int, dict[str, Any]]] = []
    pending = b""
    while True:
        while waiting and len(children) < jobs:
            ident, request = waiting.pop(0)
            child = _fork(ident, request, devnull, cpu_s, wall_s)
            children[child.pipe] = child
        readable = _wait(children)
        if 0 in readable:
            chunk = os.read(0, 65536)
            if not chunk:
                return  # lint closed the requests: it wants no more answers
            pending += chunk
            *lines, pending = pending.split(b"\n")
            waiting.extend(_request(line) for line in lines if line.strip())
        for child in list(children.values()):
            if _step(child, readable):
                del children[child.pipe]
                _answer(child)


_WARM_UP = """
from typing import Literal, TypedDict
from corral import END, End, Graph, Guard

class State(TypedDict):
    n: int

g = Graph(State)

@g.node(start=True)
def step(state: State) -> dict[str, object]:
    return {}

@g.router("step", guards=[Guard("step", max=2, otherwise=END)])
def again(state: State) -> Literal["step"] | End:
    return END
"""


def _warm_up() -> None:
    """Check one small graph from a file, as a child checks a module.

    Each child then starts with what checking imports, compiles and caches (the analyser's
    rules, the tokenizer's patterns reading a node's source), instead of redoing it per
    module; and --import-timeout measures the user's module, not corral's first use.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="corral-lint-") as folder:
        path = os.path.join(folder, "corral_lint_warm_up.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_WARM_UP)
        for source, module, error in import_modules(path, dotted=False, only_marked=False):
            check_module(source, module, error, {})
    sys.modules.pop("corral_lint_warm_up", None)
    sys.path_importer_cache.clear()


def _request(line: bytes) -> tuple[int, dict[str, Any]]:
    request: dict[str, Any] = json.loads(line)
    for entry in reversed(request.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    return int(request["id"]), request


def _fork(ident: int, request: dict[str, Any], devnull: int, cpu_s: float, wall_s: float) -> _Child:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(request, write, devnull, cpu_s)  # never returns
    os.close(write)
    os.set_blocking(read, False)
    try:
        ends: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        ends = None
    return _Child(ident, pid, read, ends, time.monotonic() + wall_s)


def _child(request: dict[str, Any], write: int, devnull: int, cpu_s: float) -> None:
    """Import and check one module, send the frame, end (runs in the forked child).

    The CPU limit counts the child's own work only, never the time it waits for a core on
    a busy machine: the kernel sends SIGXCPU past ``cpu_s`` (SIGKILL a second later, for
    a module that catches it), and no core file is written.
    """
    try:
        import resource

        limit = math.ceil(cpu_s)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setpgid(0, 0)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # a module's print() goes to stderr, never into a report
        os.dup2(write, _RESULT_FD)
        os.closerange(_RESULT_FD + 1, max(os.sysconf("SC_OPEN_MAX"), 4096))
        me = os.getpid()
        path = str(request["path"])
        try:
            found = import_modules(path, dotted=bool(request["dotted"]), only_marked=True)
            reports = [check_module(s, module, error, {}) for s, module, error in found]
        except BaseException as exc:  # a UsageError for a dotted name that is no module
            reports = [_unexpected(path, exc)]
        if os.getpid() == me:  # a copy the module forked does not answer for it
            data = encode_reports(reports)
            _write(_RESULT_FD, FRAME.pack(len(data)) + data)
    finally:
        os._exit(0)


def _wait(children: dict[int, _Child]) -> set[int]:
    fds = [0]
    for child in children.values():
        if child.reading:
            fds.append(child.pipe)
        if child.ends is not None:
            fds.append(child.ends)
    soonest = min((c.deadline for c in children.values()), default=None)
    timeout = None if soonest is None else max(0.0, soonest - time.monotonic())
    if any(c.ends is None for c in children.values()):
        timeout = _POLL_S if timeout is None else min(timeout, _POLL_S)
    return set(select.select(fds, [], [], timeout)[0])


def _step(child: _Child, readable: set[int]) -> bool:
    """Read what ``child`` sent; return whether it is done (ended, or out of time)."""
    if child.pipe in readable:
        _drain(child)
    if child.ends is None or child.ends in readable:
        ended, status = os.waitpid(child.pid, os.WNOHANG)
        if ended:
            child.status = status
            _drain(child)
            return True
    if time.monotonic() >= child.deadline:
        child.timed_out = True
        _stop(child)
        return True
    return False


def _drain(child: _Child) -> None:
    while child.reading:
        try:
            chunk = os.read(child.pipe, 65536)
        except BlockingIOError:
            return
        child.received += chunk
        child.reading = bool(chunk) and len(child.received) <= MAX_REPORT_BYTES + FRAME.size


def _stop(child: _Child) -> None:
    """Kill the child and its process group, and reap it."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(child.pid, signal.SIGKILL)
    if child.status is None:
        child.status = os.waitpid(child.pid, 0)[1]


def _answer(child: _Child) -> None:
    """Send the parent the header line for ``child`` and its frame's bytes when complete."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)  # whatever the module left in its group
    for fd in (child.pipe, child.ends):
        if fd is not None:
            os.close(fd)
    header: dict[str, Any] = {"id": child.ident}
    data = bytes(child.received)
    body = _frame(data)
    status = child.status if child.status is not None else 0
    if body is not None:
        header["size"] = len(body)
    elif child.timed_out:
        header["timeout"] = True
    elif os.WIFSIGNALED(status) and not data:
        header["signal"] = os.WTERMSIG(status)
    elif not data:
        header["exit"] = os.WEXITSTATUS(status)
    else:
        header["garbled"] = True
    _write(1, (json.dumps(header) + "\n").encode() + (body or b""))


def _frame(data: bytes) -> bytes | None:
    """Return the report in a child's bytes: one whole frame; ``None`` if malformed."""
    if len(data) < FRAME.size:
        return None
    (size,) = FRAME.unpack(data[: FRAME.size])
    if size > MAX_REPORT_BYTES or len(data) != FRAME.size + size:
        return None
    return data[FRAME.size :]


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
