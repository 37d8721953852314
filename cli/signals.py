"""Signals while ``solve`` or ``resume`` runs: stop gracefully, and keep them from the workers;
before a command has changed anything (:func:`starting`): exit at once.

A terminal's Ctrl-C and a group's SIGTERM (``timeout``, ``docker stop``, systemd, Slurm's
preemption) reach every process of the group.  The first one asks the run to stop: the driver
stops the explorers, writes the final checkpoint and exits 3.  A second one stops without
waiting for the explorers (the checkpoint then holds the coordinator's ledger as of their last
reports); a third raises KeyboardInterrupt.  The cluster's threads, and the worker processes
they start, block these signals, so the workers keep running until the driver has its
checkpoint and closes them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_guarded = False  # whether :func:`starting` guards: in the console script only (:func:`guard_starts`)


def _interrupted_while_starting(signum: int, frame) -> None:
    """Exit at once, with 3: nothing has been written yet.  Raising ``SystemExit`` here could land
    in code that swallows it (it did, in an import lock's weakref callback, and the command then
    ran on to the end)."""
    sys.stderr.write("pbbflow: interrupted while starting; nothing was changed\n")
    sys.stderr.flush()
    os._exit(3)


def guard_starts() -> None:
    """From now on, :func:`starting` guards its blocks: the console script's choice.  Elsewhere
    (``python -m pbbflow.cli.main``, ``main()`` called in a process) a signal while a command loads
    its code is Python's to handle, and a test that waits for a command's ``StopSignals`` handlers
    sees only those."""
    global _guarded
    _guarded = True


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """A block that loads code before anything is changed (the command line itself, then a command's
    numba, Dask or matplotlib, which its handler imports): where guarded (:func:`guard_starts`),
    ``SIGNALS`` meanwhile end the process at once, exit 3.  Call it from the main thread."""
    if not _guarded:
        yield
        return
    previous = {s: signal.signal(s, _interrupted_while_starting) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def block_in_this_thread() -> None:
    """Block ``SIGNALS`` in the calling thread; the threads and processes it starts inherit the mask.

    multiprocessing's resource tracker is started first: starting it unblocks SIGINT and SIGTERM
    in the thread that starts it (CPython's bpo-33613 guard), which would then start the
    workers with those signals unblocked."""
    from multiprocessing import resource_tracker  # here: the console script imports this module first

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
