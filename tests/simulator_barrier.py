"""A barrier for numba's CUDA simulator that waits instead of polling (tests only).

The simulator runs a block's threads as Python threads; its ``BlockManager.run`` polls every
thread in a loop until all of them wait at ``syncthreads``, and that loop takes the GIL from
the threads it waits for.  :func:`install` replaces the loop by a condition variable: a
thread that reaches the barrier waits on it and the last one releases the others.  The
semantics are the simulator's: a thread that has returned no longer counts, and an exception
in one thread aborts the others at their next barrier and is raised by the launch.
"""

from __future__ import annotations

import threading

import numpy as np


class _Barrier:
    """One block's ``syncthreads``: ``alive`` threads, ``waiting`` of them at the barrier."""

    def __init__(self, threads: int) -> None:
        self.condition = threading.Condition()
        self.alive = threads
        self.waiting = 0
        self.generation = 0
        self.failed: threading.Thread | None = None

    def wait(self) -> None:
        with self.condition:
            self._raise_if_aborted()
            self.waiting += 1
            if self.waiting == self.alive:
                self._release()
            else:
                generation = self.generation
                while generation == self.generation and self.failed is None:
                    self.condition.wait()
            self._raise_if_aborted()

    def leave(self) -> None:
        with self.condition:
            self.alive -= 1
            if self.waiting and self.waiting == self.alive:
                self._release()

    def abort(self, thread: threading.Thread) -> None:
        with self.condition:
            if self.failed is None:
                self.failed = thread
            self.condition.notify_all()

    def _release(self) -> None:
        self.waiting = 0
        self.generation += 1
        self.condition.notify_all()

    def _raise_if_aborted(self) -> None:
        if self.failed is not None and self.failed is not threading.current_thread():
            raise RuntimeError("abort flag set on syncthreads")


def _run(self, grid_point, *args) -> None:
    """``BlockManager.run``: start the block's threads, wait for them, raise the first failure."""
    from numba.cuda.simulator.kernel import BlockThread

    points = list(np.ndindex(*self._block_dim))
    barrier = _Barrier(len(points))

    def target() -> None:
        try:
            self._f(*args)
        except BaseException:
            barrier.abort(threading.current_thread())
            raise
        finally:
            barrier.leave()

    threads = [BlockThread(target, self, grid_point, point, self._debug) for point in points]
    for thread in threads:
        thread.barrier = barrier
        thread.start()
    for thread in threads:
        thread.join()
    if barrier.failed is not None and barrier.failed.exception:
        error, traceback = barrier.failed.exception
        raise error.with_traceback(traceback)


def _syncthreads(self) -> None:
    self.barrier.wait()


def install() -> None:
    """Replace the simulator's polling barrier (no-op where its classes are not as expected)."""
    from numba.cuda.simulator import kernel

    manager, thread = getattr(kernel, "BlockManager", None), getattr(kernel, "BlockThread", None)
    if manager is None or thread is None or not hasattr(manager, "run") or not hasattr(thread, "syncthreads"):
        return
    manager.run = _run
    thread.syncthreads = _syncthreads
