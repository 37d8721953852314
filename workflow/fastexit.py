"""Exit a process without the interpreter's last garbage collections.

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
import gc

_installed = False


def exit_without_final_gc() -> None:
    """Freeze the garbage collector when this process exits (once per process)."""
    global _installed
    if not _installed:
        atexit.register(gc.freeze)
        _installed = True
