"""Text fit to print: text from files on one line, short, and with nothing a terminal would obey;
shares, rates and clocks of a search."""

from __future__ import annotations

SHORT_CHARS = 60  # text quoted in error messages (expressions, keys, names) is shortened to this


def printable(text: str) -> str:
    """``text`` with each character that is not printable (C0/C1 controls, DEL, bidi overrides,
    lone surrogates, ...) escaped as Python writes it (``\\x1b``, ``\\n``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shorten(text: str, limit: int = SHORT_CHARS) -> str:
    """``text`` on one printable line, cut to ``limit`` characters with an ellipsis."""
    line = printable(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


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


def format_rate(nodes_per_s: float, unit: str = "nodes") -> str:
    """A rate in three significant digits with a unit that fits: '512 nodes/s', '12.3 k nodes/s',
    '5.00 M nodes/s', '1.20 G nodes/s' (``unit``: what is counted, e.g. "boxes")."""
    scale, prefix = 1.0, ""
    for size, name in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        if nodes_per_s >= 0.9995 * size:  # what would round to 1000 of the unit below
            scale, prefix = size, name
    value = nodes_per_s / scale
    if not prefix:
        return f"{value:.0f} {unit}/s"
    decimals = 2 if value < 9.995 else 1 if value < 99.95 else 0
    return f"{value:.{decimals}f} {prefix} {unit}/s"


def clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def duration(seconds: float) -> str:
    """Two units at most: '45s', '3m10s', '2h05m', '3d04h', '12y'."""
    s = int(round(max(seconds, 0.0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s < 365 * 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    return f"{s / (365.25 * 86400):.3g}y"
