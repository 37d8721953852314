"""The command line.  :func:`main` is the ``pbbflow`` console script."""

from __future__ import annotations

import os
import signal
import sys

_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupted_while_starting(signum: int, frame) -> None:
    """Exit at once, with 3: nothing has been written yet.  Raising ``SystemExit`` here could land
    in code that swallows it (it did, in an import lock's weakref callback, and the command then
    ran on to the end)."""
    sys.stderr.write("pbbflow: interrupted while starting; nothing was changed\n")
    sys.stderr.flush()
    os._exit(3)


def main() -> int:
    """Run the command in ``sys.argv``: a signal while Python loads numba and Dask (the first half
    second) ends it quietly, and one after the command has finished is ignored."""
    previous = {s: signal.signal(s, _interrupted_while_starting) for s in _STOPPING}
    from .main import main as run_command

    for s, handler in previous.items():
        signal.signal(s, handler)
    code = run_command()
    for s in _STOPPING:
        signal.signal(s, signal.SIG_IGN)
    return code
