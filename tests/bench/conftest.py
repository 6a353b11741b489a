"""Collect the benchmarks: every bench_*.py here is a script that also holds a short test
marked `bench`. pytest's python_files (test_*.py) would skip them, so this directory adds
them itself; `-m 'not bench'` (scripts/test.sh) still deselects every one of them, and the
files import nothing heavy at module level, so collecting them costs little."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_") or file_path.parent != HERE:
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest's own collector takes it
    return pytest.Module.from_parent(parent, path=file_path)
