"""A one-line terminal progress bar for a running search (stderr, TTY only)."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from typing import TextIO

from ..core.progress import Progress
from ..core.text import clock, format_rate, format_share, printable

WIDTH = 24


def terminal_columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to; else $COLUMNS or stdout's (shutil), else 80."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns if columns > 0 else shutil.get_terminal_size((80, 24)).columns


def fit_fields(fields: list[tuple[int, str]], width: int) -> str:
    """The texts of ``(rank, text)`` fields joined by two spaces, the lowest ranks dropped until the
    line fits in ``width`` characters (the last field left is cut to fit); printable: no field moves
    the cursor or colours the terminal."""
    kept = [(rank, printable(text)) for rank, text in fields]
    while len(kept) > 1 and len("  ".join(text for _, text in kept)) > width:
        kept.remove(min(kept, key=lambda field: field[0]))
    return "  ".join(text for _, text in kept)[: max(width, 0)]


class ProgressBar:
    """Draws the share of the space left (exact, from the ledger), the ETA where there is an
    estimate (``workflow.eta``), rate, the pruning UB, elapsed, the explorers and the dashboard's
    link, in one line that never reaches the terminal's last column: the link goes first where it
    does not fit, then the explorers, the bar, the clock, the ETA, the rate and the UB.  A search
    whose progress is ``bounded`` (spatial, on a cluster or in this process) shows its certified
    lower bound, its incumbent and its open boxes instead of the bar and the share; one whose share
    left is not counted (flow shop's ``solve`` in this process), neither."""

    def __init__(self, stream: TextIO = sys.stderr, dashboard: str | None = None, every: float = 0.5) -> None:
        self.stream, self.dashboard, self.every = stream, dashboard, every  # the link may be set later
        self.last = 0.0
        self.drawn = False
        self.shown = 0  # the length of the line drawn last

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        fields = self._bounds(progress) if progress.bounded else self._share(progress)
        fields += [(4, clock(progress.elapsed_s)), (2, f"{progress.active_explorers} explorers")]
        if self.dashboard:
            fields.append((1, self.dashboard))
        width = terminal_columns(self.stream) - 1  # a character in the last column may wrap the line
        line = fit_fields(fields, width)
        self.stream.write("\r" + line.ljust(min(self.shown, width)))  # blanks what a longer line left
        self.stream.flush()
        self.shown = len(line)
        self.drawn = True

    @staticmethod
    def _share(progress: Progress) -> list[tuple[int, str]]:
        eta = progress.eta.text()
        fields = [
            *([(4.5, eta)] if eta else []),
            (5, f"{format_rate(progress.nodes_per_s):>14}"),
            (6, f"UB {progress.ub}"),
        ]
        if math.isnan(progress.remaining_fraction):  # not counted: no bar, no share
            return fields
        done = 1.0 - progress.remaining_fraction
        filled = min(WIDTH, int(done * WIDTH))
        share = format_share(progress.remaining_fraction, progress.remaining_log10)
        return [(3, f"[{'#' * filled}{'.' * (WIDTH - filled)}]"), (7, f"{share:>8} left"), *fields]

    @staticmethod
    def _bounds(progress: Progress) -> list[tuple[int, str]]:
        ub = "-" if progress.ub == math.inf else f"{progress.ub:.10g}"
        return [
            (7, f"LB {progress.lower_bound:.10g}"),
            (6, f"UB {ub}"),
            (3, f"{progress.pieces:,} open"),
            (5, f"{format_rate(progress.nodes_per_s, 'boxes'):>14}"),
        ]

    def print(self, text: str) -> None:
        """Write the line ``text`` in place of the bar, which is drawn again below it at the next progress."""
        width = terminal_columns(self.stream) - 1
        text = printable(text)
        self.stream.write(("\r" + text.ljust(min(self.shown, width)) if self.drawn else text) + "\n")
        self.stream.flush()
        self.last, self.drawn, self.shown = 0.0, False, 0

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
