"""The code is formatted and lint-clean under the project's ruff configuration (pyproject.toml's
``[tool.ruff]``): CI enforces it through this test, which the README's test command runs."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("command", [("check",), ("format", "--check")], ids=["check", "format"])
def test_ruff_is_clean(command):
    outcome = _ruff(*command)
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
