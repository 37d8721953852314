"""Waiting, in tests, for a command in another process to reach a state: its signal handlers
installed, or progress committed to its run store."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pbbflow.storage.runstore import RunStore


def handles(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (Linux: its SigCgt mask)."""
    with open(f"/proc/{pid}/status") as status:
        caught = int(next(line for line in status if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught & (1 << (signum - 1)))


def wait_for_handler(
    process: subprocess.Popen,
    seconds: float,
    signum: int = signal.SIGTERM,
    meanwhile: Callable[[float], None] = time.sleep,
) -> None:
    """Return once ``process`` handles ``signum``; fail where it ends first or after ``seconds``.
    ``meanwhile(0.02)`` between looks (e.g. reading the command's terminal).

    ``python -m pbbflow.cli.main`` handles SIGTERM (and SIGHUP) only from the moment a command
    installs its stopping handlers (``cli.signals.StopSignals``): a signal sent earlier would kill
    it, or land in its imports, not in the phase a test targets.  (The ``pbbflow`` console script
    also handles them while it loads the command line and a command's code: ``cli.signals.starting``.)"""
    deadline = time.monotonic() + seconds
    while not handles(process.pid, signum):
        assert process.poll() is None, f"the command ended (exit {process.returncode}) before handling {signum}"
        assert time.monotonic() < deadline, f"no handler for signal {signum} after {seconds:.0f} s"
        meanwhile(0.02)


def wait_for_committed_nodes(path: Path, seconds: float) -> None:
    """Return once the run store at ``path`` holds a checkpoint with nodes > 0 (the store may not
    exist yet, or be between versions), or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if RunStore.open(path).latest().nodes > 0:
                return
        except Exception:  # noqa: BLE001 (not there yet, or read while the writer moves on)
            pass
        time.sleep(0.2)
