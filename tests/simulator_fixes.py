"""Two fixes to numba's CUDA simulator, which runs a block's threads as Python threads (tests only).

- The barrier: ``BlockManager.run`` polls every thread in a loop until all of them wait at
  ``syncthreads``, and that loop takes the GIL from the threads it waits for.  Here a thread
  that reaches the barrier waits on a condition variable and the last one releases the others;
  as in the simulator, a thread that has returned no longer counts, and an exception in one
  thread aborts the others at their next barrier and is raised by the launch.
- Shared arrays: ``cuda.shared.array`` looks its array up by the caller's file and line and
  creates it when missing, without a lock, so two threads that reach a line first at the same
  time can each get an array of their own (a shuffle through it then reads another lane's stale
  value).  Here the lookup and the creation are one step under a lock.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from numba.core import types
from numba.np import numpy_support


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


_SHARED_LOCK = threading.Lock()


def _shared_array(original):
    """``FakeCUDAShared.array`` with the caller's array found or created under one lock."""

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory, or the simulator's error
            return original(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with _SHARED_LOCK:
            found = self._allocations.get(key)
            if found is None:
                found = self._allocations[key] = np.empty(
                    shape, numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype
                )
        return found

    return array


def install() -> None:
    """Apply both fixes (each a no-op where the simulator's classes are not as expected)."""
    from numba.cuda.simulator import kernel, kernelapi

    manager, thread = getattr(kernel, "BlockManager", None), getattr(kernel, "BlockThread", None)
    if manager is not None and thread is not None and hasattr(manager, "run") and hasattr(thread, "syncthreads"):
        manager.run = _run
        thread.syncthreads = _syncthreads
    shared = getattr(kernelapi, "FakeCUDAShared", None)
    if shared is not None and hasattr(shared, "array") and not getattr(shared.array, "pbbflow_fixed", False):
        shared.array = _shared_array(shared.array)
        shared.array.pbbflow_fixed = True
