"""A one-line terminal progress bar for a running search (stderr, TTY only)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..workflow.run import Progress

WIDTH = 24


def format_share(fraction: float, log10: float | None) -> str:
    """A share of the search space that says something at any size: a percentage down to
    0.01 %, then scientific notation, then a power of ten (below the smallest float)."""
    if log10 is None:
        return "0"
    if fraction >= 1e-4:
        return f"{fraction:.2%}"
    if fraction > 0:
        return f"{fraction:.2e}"
    return f"10^{log10:.1f}"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


class ProgressBar:
    """Draws the share of [0, n!) left (exact, from the ledger), rate, the pruning UB, elapsed."""

    def __init__(self, stream: TextIO = sys.stderr, dashboard: str | None = None, every: float = 0.5) -> None:
        self.stream, self.dashboard, self.every = stream, dashboard, every
        self.last = 0.0
        self.drawn = False

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        done = 1.0 - progress.remaining_fraction
        filled = min(WIDTH, int(done * WIDTH))
        share = format_share(progress.remaining_fraction, progress.remaining_log10)
        line = (f"\r[{'#' * filled}{'.' * (WIDTH - filled)}] {share:>8} left  "
                f"{progress.nodes_per_s / 1e6:6.2f} M nodes/s  UB {progress.ub}  "
                f"{_clock(progress.elapsed_s)}  {progress.active_explorers} explorers")  # fmt: skip
        if self.dashboard:
            line += f"  {self.dashboard}"
        self.stream.write(line)
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
