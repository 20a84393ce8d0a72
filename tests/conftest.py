"""Fixtures shared by every test folder: a real PostgreSQL server for the Postgres tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType

import pytest
from hypothesis import settings
from leftovers import left_behind, mark_run
from postgres_cluster import Cluster, find_bin

_RUN: list[str] = []

# In CI every property test draws the same examples on every run, so a submission's result
# does not depend on luck; new random examples are the job of local runs and of the
# reference model's long mode (docs/guarantees.md).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """Mark this run, so the processes it starts can be found at its end; a run stopped
    by SIGTERM (``timeout``, a CI runner's cancel) unwinds as on Ctrl-C, so its fixtures
    still stop the servers they started."""
    if os.path.isdir("/proc"):
        _RUN.append(mark_run())
    signal.signal(signal.SIGTERM, _stop)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a process it started is still running at its end."""
    if not _RUN:
        return
    left = left_behind(_RUN[0])
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["processes the test run left running (a test must stop what it starts):"]
        lines += [f"  {line}" for line in left]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """Start one throwaway PostgreSQL server for the session (skip when none is installed).

    In CI (``CI`` set) missing binaries are an error, not a skip: ``.ci/run`` installs them.
    """
    bin_dir = find_bin()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI; .ci/run installs them")
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl)")
    cluster = Cluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """Return the URL of a new, empty database on the session's server."""
    return postgres_cluster.new_database()
