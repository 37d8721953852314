"""The command line.  :func:`main` is the ``pbbflow`` console script."""

from __future__ import annotations

import signal

from ..workflow.fastexit import collecting_none
from .signals import SIGNALS, guard_starts, starting


def main() -> int:
    """Run the command in ``sys.argv``: a signal while Python loads the command line ends it quietly
    (and so does one while the command loads its code: ``signals.starting``), and one after the
    command has finished is ignored."""
    guard_starts()
    with collecting_none(), starting():
        from .main import main as run_command

    code = run_command()
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    return code
