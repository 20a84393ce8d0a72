"""A throwaway PostgreSQL cluster for the tests, started from the machine's binaries.

The cluster listens on a unix socket in a temporary folder only (``listen_addresses=''``,
no TCP port is opened), trusts local connections, and is made with ``initdb`` and run with
``pg_ctl``. As root, both run as the ``postgres`` user through ``runuser`` (PostgreSQL
refuses to run as root), so the folder is made readable for that user. The disk flushes
are turned off (``fsync=off``): a test cluster dies with the test session anyway, and a
test must not wait for the disk. ``synchronous_commit`` stays on: a commit is in the WAL
(the OS's page cache) before the client hears of it, so a server crash (``pg_ctl stop -m
immediate``) keeps every acknowledged commit, as a real server does. The benchmarks start
their own cluster with the defaults.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

__all__ = ["Cluster", "find_bin"]


def find_bin() -> Path | None:
    """Return the folder of the newest installed PostgreSQL's binaries, or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


class Cluster:
    """One PostgreSQL server in a temporary folder, reachable through a unix socket."""

    def __init__(self, bin_dir: Path, *, durable: bool = False) -> None:
        self.bin_dir = bin_dir
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="corral-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.socket = self.root  # the socket lives next to the data folder
        self.port = 5432
        self.log = self.root / "server.log"
        self._as_postgres = os.geteuid() == 0

    def _cmd(self, *args: str) -> list[str]:
        if self._as_postgres:
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def _run(self, *args: str) -> None:
        result = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            msg = f"{' '.join(args)} failed: {result.stdout}{result.stderr}{log}"
            raise RuntimeError(msg)

    def start(self) -> None:
        """Create the cluster (first time only) and start the server; wait until it answers."""
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        if not self.data.exists():
            self._run(
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            )
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.socket}'"
        if not self.durable:
            options += " -c fsync=off -c full_page_writes=off"
        options += " -c max_connections=200"
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast`` ends sessions; ``immediate`` is a crash)."""
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "immediate") -> None:
        """Stop the server as a crash would (by default) and start it again."""
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        """Stop the server if it runs and delete its folder."""
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        """Return a ``postgresql://`` URL for ``dbname`` over the unix socket."""
        return f"postgresql://postgres@/{dbname}?host={self.socket}&port={self.port}"

    def conninfo(self, dbname: str = "postgres") -> str:
        """Return a libpq key=value connection string for ``dbname``."""
        return f"host={self.socket} port={self.port} user=postgres dbname={dbname}"

    def new_database(self) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)
