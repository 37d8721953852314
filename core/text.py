"""Text from files, fit to print: on one line, short, and with nothing a terminal would obey."""

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
