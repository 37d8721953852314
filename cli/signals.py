"""Signals while ``solve`` or ``resume`` runs: stop gracefully, and keep them from the workers.

A terminal's Ctrl-C and a group's SIGTERM (``timeout``, ``docker stop``, systemd, Slurm's
preemption) reach every process of the group.  The first one asks the run to stop: the driver
stops the explorers, writes the final checkpoint and exits 3.  A second one stops without
waiting for the explorers (the checkpoint then holds the coordinator's ledger as of their last
reports); a third raises KeyboardInterrupt.  The cluster's threads, and the worker processes
they start, block these signals, so the workers keep running until the driver has its
checkpoint and closes them.
"""

from __future__ import annotations

import signal
import threading
from multiprocessing import resource_tracker

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def block_in_this_thread() -> None:
    """Block ``SIGNALS`` in the calling thread; the threads and processes it starts inherit the mask.

    multiprocessing's resource tracker is started first: starting it unblocks SIGINT and SIGTERM
    in the thread that starts it (CPython's bpo-33613 guard), which would then start the
    workers with those signals unblocked."""
    resource_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


class StopSignals:
    """Handlers for ``SIGNALS`` (installed in the main thread); a context manager that restores them."""

    def __init__(self) -> None:
        self.stop = threading.Event()  # the first signal: stop the run and checkpoint
        self.hurry = threading.Event()  # the second: checkpoint without waiting for the explorers
        self._previous: dict[int, object] = {}

    def _on_signal(self, signum: int, frame) -> None:
        if self.hurry.is_set():
            raise KeyboardInterrupt
        (self.hurry if self.stop.is_set() else self.stop).set()

    def __enter__(self) -> StopSignals:
        self._previous = {s: signal.signal(s, self._on_signal) for s in SIGNALS}
        return self

    def __exit__(self, *exc_info) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
