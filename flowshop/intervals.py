"""Work units: exact sets of disjoint half-open intervals of the search space ``[0, n!)``."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator

import gmpy2
import numpy as np
from gmpy2 import mpz

from .factoradic import digits_to_int, factorial, int_to_digits

Interval = tuple[mpz, mpz]


def split_interval(a: int | mpz, b: int | mpz) -> tuple[Interval, Interval]:
    """Split ``[a, b)`` at ``mid = (a + b) // 2`` into ``([a, mid), [mid, b))``.

    Requires ``a < b``. The right half is never empty; when ``b - a == 1`` the
    left half ``[a, a)`` is empty and the right half is the whole interval.
    """
    a, b = mpz(operator.index(a)), mpz(operator.index(b))
    if a >= b:
        raise ValueError(f"cannot split empty interval [{a}, {b})")
    mid = (a + b) // 2
    return (a, mid), (mid, b)


def _coalesce(sorted_ivs: Iterable[Interval]) -> tuple[Interval, ...]:
    """Merge overlapping/adjacent non-empty intervals sorted by start."""
    out: list[list[mpz]] = []
    for a, b in sorted_ivs:
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


class WorkUnit:
    """Immutable set of integers of ``[0, n!)`` stored as sorted, merged half-open intervals."""

    __slots__ = ("_n", "_intervals", "_size")

    def __init__(self, n: int, intervals: Iterable[tuple[int | mpz, int | mpz]] = ()) -> None:
        """Normalise ``intervals``: drop empty ones, merge overlapping/adjacent ones.

        Raises ``ValueError`` if ``n < 1``, or an interval has ``a > b``, ``a < 0`` or ``b > n!``.
        """
        n = operator.index(n)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        total = factorial(n)
        ivs = []
        for a, b in intervals:
            a, b = mpz(operator.index(a)), mpz(operator.index(b))
            if a > b or a < 0 or b > total:
                raise ValueError(f"invalid interval [{a}, {b}) for space [0, {n}!)")
            if a < b:
                ivs.append((a, b))
        ivs.sort()
        self._set(n, _coalesce(ivs))

    def _set(self, n: int, intervals: tuple[Interval, ...]) -> None:
        self._n = n
        self._intervals = intervals
        self._size = sum((b - a for a, b in intervals), mpz(0))

    @classmethod
    def _normalized(cls, n: int, intervals: tuple[Interval, ...]) -> WorkUnit:
        """Build from intervals already sorted, merged, non-empty and in range."""
        unit = cls.__new__(cls)
        unit._set(n, intervals)
        return unit

    @classmethod
    def full(cls, n: int) -> WorkUnit:
        """The whole space ``[0, n!)``."""
        return cls(n, [(0, factorial(n))])

    @classmethod
    def empty(cls, n: int) -> WorkUnit:
        """The empty unit."""
        return cls(n)

    @property
    def n(self) -> int:
        """Number of jobs."""
        return self._n

    @property
    def intervals(self) -> tuple[Interval, ...]:
        """Sorted, disjoint, non-adjacent, non-empty ``(a, b)`` pairs."""
        return self._intervals

    @property
    def size(self) -> mpz:
        """Total number of leaf positions."""
        return self._size

    def is_empty(self) -> bool:
        return not self._intervals

    def __bool__(self) -> bool:
        return bool(self._intervals)

    def __len__(self) -> int:
        return len(self._intervals)

    def __iter__(self) -> Iterator[Interval]:
        return iter(self._intervals)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkUnit):
            return NotImplemented
        return self._n == other._n and self._intervals == other._intervals

    def __hash__(self) -> int:
        return hash((self._n, self._intervals))

    def __repr__(self) -> str:
        k = len(self._intervals)
        return (
            f"WorkUnit(n={self._n}, {k} interval{'' if k == 1 else 's'}, "
            f"{100 * self.fraction_of_space():.4g}% of space)"
        )

    def _check_same_n(self, other: WorkUnit) -> None:
        if not isinstance(other, WorkUnit):
            raise TypeError(f"expected WorkUnit, got {type(other).__name__}")
        if other._n != self._n:
            raise ValueError(f"work units over different spaces: n={self._n} vs n={other._n}")

    def intersect(self, other: WorkUnit) -> WorkUnit:
        """Set intersection, O(k1 + k2)."""
        self._check_same_n(other)
        x, y = self._intervals, other._intervals
        out = []
        i = j = 0
        while i < len(x) and j < len(y):
            lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
            if lo < hi:
                out.append((lo, hi))
            if x[i][1] < y[j][1]:
                i += 1
            else:
                j += 1
        return WorkUnit._normalized(self._n, tuple(out))

    def union(self, other: WorkUnit) -> WorkUnit:
        """Set union, O(k1 + k2)."""
        self._check_same_n(other)
        x, y = self._intervals, other._intervals
        merged = []
        i = j = 0
        while i < len(x) or j < len(y):
            if j == len(y) or (i < len(x) and x[i][0] <= y[j][0]):
                merged.append(x[i])
                i += 1
            else:
                merged.append(y[j])
                j += 1
        return WorkUnit._normalized(self._n, _coalesce(merged))

    def difference(self, other: WorkUnit) -> WorkUnit:
        """Set difference ``self - other``, O(k1 + k2)."""
        self._check_same_n(other)
        y = other._intervals
        out = []
        j = 0
        for a, b in self._intervals:
            while j < len(y) and y[j][1] <= a:
                j += 1
            k = j
            while k < len(y) and y[k][0] < b:
                if y[k][0] > a:
                    out.append((a, y[k][0]))
                a = max(a, y[k][1])
                k += 1
            if a < b:
                out.append((a, b))
        return WorkUnit._normalized(self._n, tuple(out))

    def halve(self) -> tuple[WorkUnit, WorkUnit]:
        """Split into ``(left, right)`` with ``left.size == size // 2``, cutting at most one interval."""
        target = self._size // 2
        ivs = self._intervals
        acc = mpz(0)
        for i, (a, b) in enumerate(ivs):
            if acc + (b - a) >= target:
                cut = a + (target - acc)
                left = ivs[:i] + (((a, cut),) if cut > a else ())
                right = (((cut, b),) if cut < b else ()) + ivs[i + 1 :]
                return WorkUnit._normalized(self._n, left), WorkUnit._normalized(self._n, right)
            acc += b - a
        return self, self  # empty unit

    def split_largest(self) -> tuple[WorkUnit, WorkUnit]:
        """Work-stealing split: ``(self without the right half of its largest interval, that right half)``.

        The largest interval is the first one of maximal length; its halves come
        from :func:`split_interval`. An empty unit yields two empty units.
        """
        if not self._intervals:
            return self, self
        i = max(range(len(self._intervals)), key=lambda t: self._intervals[t][1] - self._intervals[t][0])
        (a, mid), right = split_interval(*self._intervals[i])
        kept = self._intervals[:i] + (((a, mid),) if mid > a else ()) + self._intervals[i + 1 :]
        return WorkUnit._normalized(self._n, kept), WorkUnit._normalized(self._n, (right,))

    def fraction_of_space(self) -> float:
        """``size / n!``, correctly rounded (exact integer true division; 0.0 below 1e-308)."""
        return int(self._size) / int(factorial(self._n))

    def log10_fraction(self) -> float | None:
        """``log10(size / n!)`` (None when empty): readable where the fraction is tiny."""
        return share_log10(self._size, self._n)

    def to_digit_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(starts, ends, end_is_total)`` for exact persistence.

        ``starts``/``ends`` are int32 arrays of shape ``(k, n)`` with the factoradic
        digits of each ``a`` and ``b``. An end ``b == n!`` has no digit vector: its
        row in ``ends`` is all zeros and ``end_is_total`` (bool, shape ``(k,)``) is True.
        """
        n, k = self._n, len(self._intervals)
        total = factorial(n)
        starts = np.zeros((k, n), dtype=np.int32)
        ends = np.zeros((k, n), dtype=np.int32)
        end_is_total = np.zeros(k, dtype=bool)
        for r, (a, b) in enumerate(self._intervals):
            starts[r] = int_to_digits(a, n)
            if b == total:
                end_is_total[r] = True
            else:
                ends[r] = int_to_digits(b, n)
        return starts, ends, end_is_total

    @classmethod
    def from_digit_arrays(cls, n: int, starts: np.ndarray, ends: np.ndarray, end_is_total: np.ndarray) -> WorkUnit:
        """Inverse of :meth:`to_digit_arrays`; ``ends`` rows flagged in ``end_is_total`` are ignored."""
        starts, ends, flags = np.asarray(starts), np.asarray(ends), np.asarray(end_is_total, dtype=bool)
        k = flags.shape[0] if flags.ndim == 1 else -1
        if starts.shape != (k, n) or ends.shape != (k, n) or flags.shape != (k,):
            raise ValueError(
                f"expected shapes (k, {n}), (k, {n}), (k,); got {starts.shape}, {ends.shape}, {flags.shape}"
            )
        total = factorial(n)
        return cls(
            n, [(digits_to_int(s), total if f else digits_to_int(e)) for s, e, f in zip(starts, ends, flags.tolist())]
        )

    def to_bytes(self) -> bytes:
        """The bounds as fixed-width big-endian integers (a0 b0 a1 b1 ...), for messages.

        This is also the layout of ``PackedUnit.to_bytes``: big-endian bytes sort like the integers.
        """
        width = byte_width(self._n)
        return b"".join(v.to_bytes(width, "big") for interval in self._intervals for v in interval)

    @classmethod
    def from_bytes(cls, n: int, data: bytes) -> WorkUnit:
        """Inverse of :meth:`to_bytes` (validated like the constructor)."""
        width = byte_width(n)
        if len(data) % (2 * width):
            raise ValueError(f"{len(data)} bytes is not a whole number of intervals for n={n}")
        values = [mpz.from_bytes(data[i : i + width], "big") for i in range(0, len(data), width)]
        return cls(n, zip(values[0::2], values[1::2], strict=True))


def share_log10(size: int | mpz, n: int) -> float | None:
    """``log10(size / n!)`` for ``0 <= size <= n!``, None for 0; for any n (no float underflow)."""
    if size <= 0:
        return None
    return float(gmpy2.log10(mpz(size)) - gmpy2.log10(factorial(n)))


def byte_width(n: int) -> int:
    """Bytes per bound in messages: whole 64-bit words holding any bound in [0, n!]."""
    return 8 * max(1, (factorial(n).bit_length() + 63) // 64)
