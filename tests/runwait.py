"""Waiting, in tests, for a run in another process to commit progress to its store."""

from __future__ import annotations

import time
from pathlib import Path

from pbbflow.storage.runstore import RunStore


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
