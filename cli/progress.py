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


def format_rate(nodes_per_s: float) -> str:
    """A rate in three significant digits with a unit that fits: '512 nodes/s', '12.3 k nodes/s',
    '5.00 M nodes/s', '1.20 G nodes/s'."""
    scale, prefix = 1.0, ""
    for unit, name in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        if nodes_per_s >= 0.9995 * unit:  # what would round to 1000 of the unit below
            scale, prefix = unit, name
    value = nodes_per_s / scale
    if not prefix:
        return f"{value:.0f} nodes/s"
    decimals = 2 if value < 9.995 else 1 if value < 99.95 else 0
    return f"{value:.{decimals}f} {prefix} nodes/s"


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
                f"{format_rate(progress.nodes_per_s):>14}  UB {progress.ub}  "
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
