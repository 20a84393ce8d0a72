"""Making files read-only for this process, for tests of opening checkpoint files that
may not be written (root ignores file modes: there ``chattr +i``, which binds root too)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make ``paths`` read-only for this process for the block (files and folders)."""
    done: list[Path] = []
    try:
        for path in paths:
            if os.geteuid() == 0:
                result = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
                if result.returncode != 0:
                    pytest.skip(f"cannot make a file read-only for root: {result.stderr!r}")
            else:
                path.chmod(0o555 if path.is_dir() else 0o444)
            done.append(path)
        yield
    finally:
        for path in done:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(path)], check=True)
            else:
                path.chmod(0o755 if path.is_dir() else 0o644)
