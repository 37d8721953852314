"""Permutation flow-shop instances: the ``FlowShop`` container and readers for instance files.

Supported inputs: Taillard's benchmark names (``ta001`` … ``ta120``, generated, no file
needed), plain Taillard-style files (header ``n m`` then the matrix, job-major or
machine-major) and VFR files (header ``n m`` then one line per job of ``machine time`` pairs).
Every problem in a file is reported as an :class:`InstanceError` naming the file and line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.files import FileRefused, read_text
from ..core.text import printable

ORIENTATIONS = ("job-major", "machine-major")
FORMATS = ("auto", "taillard", "vfr")

_INT32_MAX = np.iinfo(np.int32).max
# The solver keeps completion times and bounds in int32; every value it forms stays below
# twice the total processing time, so the total is capped at 2**30.
MAX_TOTAL_TIME = 2**30
# ASCII digits only: \d and int() accept the digits of every script (fullwidth "１２", "٣").
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?")
_TAILLARD_NAME = re.compile(r"ta([0-9]+)", re.IGNORECASE)

Lines = list[tuple[int, list[str]]]  # (1-based line number, tokens) of the non-blank lines


class InstanceError(InputError):
    """A malformed or unknown instance; ``str()`` reads ``source: line N: problem``."""

    def __init__(self, source: str | os.PathLike[str], problem: str, line: int | None = None):
        self.source, self.problem, self.line = os.fspath(source), problem, line
        super().__init__(self.source, problem, line)  # all args kept: the error stays picklable

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}: line {self.line}"
        return printable(f"{where}: {self.problem}")  # a file's name or tokens: nothing a terminal obeys


@dataclass(frozen=True)
class FlowShop:
    """A permutation flow-shop instance; ``p[job, machine]`` is a read-only C-contiguous int32 array."""

    name: str
    p: np.ndarray

    def __post_init__(self) -> None:
        a = np.asarray(self.p)
        source = f"instance {self.name!r}"
        if a.ndim != 2:
            raise InstanceError(source, f"p must be 2-D (jobs x machines), got shape {a.shape}")
        if a.shape[0] < 1 or a.shape[1] < 1:
            raise InstanceError(source, f"need at least one job and one machine, got shape {a.shape}")
        if a.dtype.kind not in "iu":
            if a.dtype.kind != "f" or not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
                raise InstanceError(source, f"processing times must be integers (dtype {a.dtype})")
        if np.any(a < 0):
            raise InstanceError(source, "negative processing time")
        if np.any(a > _INT32_MAX):
            raise InstanceError(source, f"processing time above {_INT32_MAX}")
        total = int(a.sum(dtype=np.float64 if a.dtype.kind == "f" else np.int64))
        if total > MAX_TOTAL_TIME:
            raise InstanceError(source, f"total processing time {total} is above {MAX_TOTAL_TIME} (times are 32-bit)")
        p = np.array(a, dtype=np.int32, order="C", copy=True)
        p.flags.writeable = False
        object.__setattr__(self, "p", p)

    @property
    def n(self) -> int:
        """Number of jobs."""
        return self.p.shape[0]

    @property
    def m(self) -> int:
        """Number of machines."""
        return self.p.shape[1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlowShop):
            return NotImplemented
        return self.name == other.name and np.array_equal(self.p, other.p)

    def __hash__(self) -> int:
        return hash((self.name, self.p.shape, self.p.tobytes()))

    def __reduce__(self):
        # Rebuild through __post_init__ so an unpickled instance is validated and read-only again.
        return FlowShop, (self.name, np.array(self.p))


def _read_lines(path: Path) -> Lines:
    """Tokenize a text file into its non-blank lines; raise InstanceError if unreadable or empty."""
    try:
        text = read_text(path, kind="an instance file")
    except FileRefused as error:
        raise InstanceError(path, error.reason) from None
    lines = [(i, raw.split()) for i, raw in enumerate(text.splitlines(), 1) if raw.strip()]
    if not lines:
        raise InstanceError(path, "empty file (expected a header line 'n m')")
    return lines


def _ascii_hint(text: str) -> str:
    """A note for text with characters outside ASCII, such as fullwidth digits."""
    return "" if text.isascii() else " (digits must be ASCII 0-9)"


def _to_int(path: Path, line: int, token: str, what: str) -> int:
    """Parse one token as a non-negative integer that fits in int32."""
    if not _INT.fullmatch(token):
        kind = "not an integer" if _FLOAT.fullmatch(token) else "not a number"
        raise InstanceError(path, f"{what} {token!r} is {kind}{_ascii_hint(token)}", line)
    value = int(token)
    if value < 0:
        raise InstanceError(path, f"negative {what} {value}", line)
    if value > _INT32_MAX:
        raise InstanceError(path, f"{what} {value} is too large (max {_INT32_MAX})", line)
    return value


def _parse_header(path: Path, lines: Lines) -> tuple[int, int]:
    """Parse the header line ``n m`` (both integers >= 1)."""
    line, tokens = lines[0]
    if len(tokens) != 2 or not all(_INT.fullmatch(t) for t in tokens):
        header = " ".join(tokens)
        raise InstanceError(path, f"bad header {header!r}: expected two integers 'n m'{_ascii_hint(header)}", line)
    n, m = int(tokens[0]), int(tokens[1])
    if n < 1:
        raise InstanceError(path, f"bad header: number of jobs n must be >= 1, got {n}", line)
    if m < 1:
        raise InstanceError(path, f"bad header: number of machines m must be >= 1, got {m}", line)
    return n, m


def _data_rows(path: Path, lines: Lines, rows: int, unit: str) -> Lines:
    """Return exactly ``rows`` data lines after the header, else report too few / too many."""
    data = lines[1:]
    if len(data) < rows:
        raise InstanceError(
            path, f"too few rows: header announces {rows} {unit} rows, file ends after {len(data)}", lines[-1][0]
        )
    if len(data) > rows:
        raise InstanceError(
            path, f"too many rows: header announces {rows} {unit} rows, found {len(data)}", data[rows][0]
        )
    return data


def _parse_taillard(path: Path, lines: Lines, orientation: str, name: str) -> FlowShop:
    n, m = _parse_header(path, lines)
    job_major = orientation == "job-major"
    rows, cols, unit = (n, m, "job") if job_major else (m, n, "machine")
    data = _data_rows(path, lines, rows, unit)
    matrix = np.empty((rows, cols), dtype=np.int64)
    for r, (line, tokens) in enumerate(data):
        values = [_to_int(path, line, t, "processing time") for t in tokens]
        if len(values) != cols:
            layout = f"{orientation}, one {unit} per line"
            raise InstanceError(path, f"ragged row: expected {cols} numbers ({layout}), found {len(values)}", line)
        matrix[r] = values
    return _flowshop(path, name, matrix if job_major else matrix.T)


def _parse_vfr(path: Path, lines: Lines, name: str) -> FlowShop:
    n, m = _parse_header(path, lines)
    data = _data_rows(path, lines, n, "job")
    matrix = np.empty((n, m), dtype=np.int64)
    for j, (line, tokens) in enumerate(data):
        if len(tokens) != 2 * m:
            raise InstanceError(
                path, f"ragged row: expected {2 * m} numbers ({m} 'machine time' pairs), found {len(tokens)}", line
            )
        for k in range(m):
            machine = _to_int(path, line, tokens[2 * k], "machine index")
            if machine != k:
                raise InstanceError(
                    path, f"machine index out of order: pair {k + 1} names machine {machine}, expected {k}", line
                )
            matrix[j, k] = _to_int(path, line, tokens[2 * k + 1], "processing time")
    return _flowshop(path, name, matrix)


def _flowshop(path: Path, name: str, matrix: np.ndarray) -> FlowShop:
    """The instance read from ``path``; a problem with the whole matrix names the file."""
    try:
        return FlowShop(name, matrix)
    except InstanceError as error:
        raise InstanceError(path, error.problem) from None


def _looks_like_vfr(lines: Lines) -> bool:
    """True if every data row holds 2*m numbers whose even positions are 0..m-1."""
    header = lines[0][1]
    if len(header) != 2 or not all(_INT.fullmatch(t) for t in header) or len(lines) < 2:
        return False
    m = int(header[1])
    return all(
        len(tokens) == 2 * m
        and all(_INT.fullmatch(tokens[2 * k]) and int(tokens[2 * k]) == k for k in range(m))
        for _, tokens in lines[1:]
    )


def _pairs_row(tokens: list[str], m: int) -> bool:
    """True if at least half the machine indices of the row's pairs (its even positions) are
    right, 0-based or 1-based: a VFR row, though maybe one with an error."""
    indices = tokens[0 : 2 * m : 2]
    hits = max(sum(t == str(k + base) for k, t in enumerate(indices)) for base in (0, 1))
    return len(indices) >= min(m, 2) and len(tokens) > 1 and 2 * hits >= len(indices)


def _detect_format(lines: Lines, orientation: str) -> str:
    """``vfr`` for a VFR file, or one with an error whose rows are mostly 'machine time' pairs
    rather than Taillard rows; ``taillard`` otherwise (ties included)."""
    if _looks_like_vfr(lines):
        return "vfr"
    header = lines[0][1]
    if len(header) != 2 or not all(_INT.fullmatch(t) for t in header) or int(header[1]) < 1:
        return "taillard"
    n, m = int(header[0]), int(header[1])
    cols = m if orientation == "job-major" else n
    pairs = sum(_pairs_row(tokens, m) for _, tokens in lines[1:])
    rows = sum(len(tokens) == cols for _, tokens in lines[1:])
    return "vfr" if pairs > rows else "taillard"


def _check_orientation(orientation: str) -> None:
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")


def read_taillard_file(path: str | os.PathLike[str], orientation: str = "job-major") -> FlowShop:
    """Read header ``n m`` then n lines of m times (job-major) or m lines of n (machine-major)."""
    _check_orientation(orientation)
    path = Path(path)
    return _parse_taillard(path, _read_lines(path), orientation, path.stem)


def read_vfr_file(path: str | os.PathLike[str]) -> FlowShop:
    """Read a VFR file: header ``n m`` then n lines of m pairs ``machine time``, machines 0..m-1."""
    path = Path(path)
    return _parse_vfr(path, _read_lines(path), path.stem)


def load_instance(spec: str | os.PathLike[str], fmt: str = "auto", orientation: str = "job-major") -> FlowShop:
    """Load a Taillard benchmark by name (``ta1``, ``TA001`` … ``ta120``) or an instance file.

    A spec matching ``ta<digits>`` (case-insensitive) is always a Taillard name, never a path.
    ``fmt="auto"`` reads a file as VFR if every data row has 2*m numbers with machine indices
    0..m-1 at the even positions, else as a Taillard file in the given ``orientation``; a file
    that reads as neither is reported as the one its rows resemble most (``_detect_format``).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    _check_orientation(orientation)
    if isinstance(spec, str) and (match := _TAILLARD_NAME.fullmatch(spec.strip())):
        from .taillard import taillard_instance  # deferred: taillard imports this module

        return taillard_instance(int(match.group(1)))
    path = Path(spec)
    lines = _read_lines(path)
    if fmt == "auto":
        fmt = _detect_format(lines, orientation)
    if fmt == "vfr":
        return _parse_vfr(path, lines, path.stem)
    return _parse_taillard(path, lines, orientation, path.stem)
