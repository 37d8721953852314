"""numba's compile on a machine's first run: seen coming, spread over the cores, timed and told.

numba compiles a function the first time a process calls it, or loads it from its on-disk cache
(``cache=True``) when an earlier process on the machine compiled it.  One process compiles one
function at a time (numba holds a lock and the GIL), so a first run that has two parts to compile
compiles one of them in a process of its own (:func:`start_apart`) beside this one, which then
loads it from the cache.  :func:`in_cache` tells a first run before it compiles, so that
:class:`FirstRunNotice` can say so before the wait, not after it.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .files import open_append


@dataclass(frozen=True)
class CodeLoad:
    """How long loading a process's numba code took, and whether any of it had to be compiled."""

    seconds: float
    compiled: bool


@contextlib.contextmanager
def recording() -> Iterator[dict]:
    """Time the block; ``compiled`` is set when numba compiled anything in this process meanwhile
    (its ``numba:compile`` event fires on a cache miss only)."""
    from numba.core import event  # here: the command line's parser imports this module, and needs no numba

    outcome = {"compiled": False, "seconds": 0.0}
    started = time.perf_counter()
    with event.install_recorder("numba:compile") as recorder:
        yield outcome
    outcome["compiled"] = outcome["compiled"] or bool(recorder.buffer)
    outcome["seconds"] = time.perf_counter() - started


def in_cache(*functions) -> bool:
    """Whether numba's on-disk cache holds code of every one of ``functions`` (``cache=True``
    dispatchers) for their source as it is now; False where that cannot be told.  A first run's
    test: True does not promise that every type the run needs is there."""
    try:
        return all(bool(f._cache._cache_file._load_index()) for f in functions)
    except Exception:  # noqa: BLE001 (numba's cache internals: where they differ, say "not known to be there")
        return False


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def start_apart(job: str, *arguments, lock: Path | None = None) -> subprocess.Popen | None:
    """Run ``job`` (``"pbbflow.module:function"``, a function that compiles code by calling it)
    with the JSON-able ``arguments`` in a new Python process, to fill numba's cache beside this
    process.  With ``lock``, the process holds that file's lock from before it starts until it
    ends (a process that takes its turn by the lock waits for it).  None where nothing started: a
    machine of one core (the process would only compete), or ``lock`` held by another process
    (which compiles the same code).  Wait for it with :func:`wait_apart`."""
    if usable_cores() < 2:
        return None
    command = [
        sys.executable,
        "-c",
        "from pbbflow.core.compiling import run_job; run_job()",
        job,
        json.dumps(arguments),
    ]
    with contextlib.ExitStack() as stack:
        held = ()
        if lock is not None:
            try:
                handle = stack.enter_context(open_append(lock))
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held (BlockingIOError), or no lock file here: compile in turn instead
                return None
            held = (handle.fileno(),)  # the child's copy keeps the lock once this one closes
        # a session of its own: the terminal's Ctrl-C asks the run to stop once its code is loaded
        # (it stops at once only on the third, which ends this process too: wait_apart)
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=held,
            start_new_session=True,
        )


def wait_apart(process: subprocess.Popen | None) -> None:
    """Wait for a process of :func:`start_apart` (its failure only means this process compiles
    what it did not); a signal meanwhile ends it with this one."""
    if process is None:
        return
    try:
        process.wait()
    except BaseException:
        process.kill()
        raise


def run_job() -> None:
    """The entry of :func:`start_apart`'s process: ``argv[1]`` names the job, ``argv[2]`` holds its
    arguments (JSON).  Only pbbflow's own functions are run."""
    job, arguments = sys.argv[1], json.loads(sys.argv[2])
    module, _, name = job.partition(":")
    if not module.startswith("pbbflow.") or not name.isidentifier():
        raise SystemExit(f"not a pbbflow compile job: {job!r}")
    getattr(importlib.import_module(module), name)(*arguments)


class FirstRunNotice:
    """What a first run tells ``stream`` about its compile: one line before it starts (what, that
    it happens once per machine, about how long), the seconds going by on a terminal, and the
    measured figure after (:meth:`finish`)."""

    def __init__(self, stream: TextIO, what: str, about: str) -> None:
        self.stream, self.what, self.about = stream, what, about
        self.seconds: float | None = None
        self._began = 0.0
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self) -> FirstRunNotice:
        """Print the line and start the clock (and, on a terminal, the ticker)."""
        self._began = time.perf_counter()
        print(
            f"pbbflow: compiling {self.what} for this machine: first run only, about {self.about}",
            file=self.stream,
            flush=True,
        )
        if self.stream.isatty():
            self._ticker = threading.Thread(target=self._tick, name="pbbflow-compile-ticker", daemon=True)
            self._ticker.start()
        return self

    def _tick(self) -> None:
        while not self._done.wait(1.0):
            self.stream.write(f"\rpbbflow: compiling... {time.perf_counter() - self._began:.0f} s")
            self.stream.flush()

    def finish(self, *, report: bool = True) -> float:
        """Stop the clock once (the ticker's line cleared) and, with ``report``, print the figure;
        the seconds."""
        if self.seconds is None:
            self.seconds = time.perf_counter() - self._began
            self._done.set()
            if self._ticker is not None:
                self._ticker.join()
                self.stream.write("\r\033[K")
            if report:
                print(compiled_line(self.seconds), file=self.stream, flush=True)
        return self.seconds


def compiled_line(seconds: float) -> str:
    """The line that gives a first run's compile time."""
    return f"pbbflow: compiled in {seconds:.1f} s; later runs load it from numba's cache"
