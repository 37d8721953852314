"""The garbage collector around what a process loads once and keeps: none while it loads, none at exit.

While a command loads its code (numba and its cache, scipy), the collections that the new objects
trigger walk every object made so far, over and over: about 0.09 s of the 0.87 s of CPU that
``pbbflow minimize`` takes on a problem it proves at the root (2 cores,
benchmarks/spatial_cli_path.py).  :func:`collecting_none` runs such a block without collections and
then freezes what it made (``gc.freeze``), so that the search's own collections skip it too; only
garbage in reference cycles made in the block stays (made once, never in a loop).

At exit, CPython clears every module and collects the garbage they leave, which walks every
object the process made: 0.5 s in a client or a worker that imported numba, Dask and Bokeh
(measured on a 2-core machine), which a local cluster's close waits for in each worker
process.  Freezing the objects first (``gc.freeze``, in an ``atexit`` hook, which runs before
the interpreter's final collections) skips that walk.  Other ``atexit`` hooks still run, the
standard streams are flushed, and objects that reference counting frees while the modules are
cleared are finalised as usual; only garbage in reference cycles is left to the operating system.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

_installed = False


def exit_without_final_gc() -> None:
    """Freeze the garbage collector when this process exits (once per process)."""
    global _installed
    if not _installed:
        atexit.register(gc.freeze)
        _installed = True


@contextlib.contextmanager
def collecting_none() -> Iterator[None]:
    """No garbage collection in the block, then every object tracked so far frozen (``gc.freeze``);
    the collector is on again after it where it was on before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
