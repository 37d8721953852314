"""Packed work units: a work unit as one numpy array, for the coordinator and for messages.

A ``PackedUnit`` holds the same set as a normalised ``WorkUnit`` (sorted, disjoint,
non-adjacent, non-empty half-open intervals of ``[0, n!)``), with every bound written as a
fixed number of 64-bit limbs, most significant first: ``bounds[i, 0]`` is ``a_i`` and
``bounds[i, 1]`` is ``b_i``.  Limb rows compare like the integers they encode, so
intersection, validation and the merge of many units are numba loops over a few words, with
no Python object per interval.  On the wire the limbs are big-endian bytes: ``to_bytes`` of a
packed unit is the format of ``WorkUnit.to_bytes``, so explorers need no other format.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import gmpy2
import numpy as np
from gmpy2 import mpz
from numba import njit

from .factoradic import factorial
from .intervals import Interval, WorkUnit, byte_width, share_log10

WIRE = np.dtype(">u8")  # a limb in a message

_OK, _EMPTY, _UNSORTED, _BEYOND = 0, 1, 2, 3
_PROBLEMS = {
    _EMPTY: "an interval is empty or reversed",
    _UNSORTED: "intervals are not sorted, disjoint and non-adjacent",
    _BEYOND: "an interval ends beyond n!",
}


@njit(cache=True)
def _cmp(x, i, s, y, j, t) -> int:
    """Compare bound ``x[i, s]`` with ``y[j, t]``: -1, 0 or 1."""
    for limb in range(x.shape[2]):
        if x[i, s, limb] != y[j, t, limb]:
            return -1 if x[i, s, limb] < y[j, t, limb] else 1
    return 0


@njit(cache=True)
def _copy(src, i, s, dst, j, t) -> None:
    for limb in range(src.shape[2]):
        dst[j, t, limb] = src[i, s, limb]


@njit(cache=True)
def _validate(bounds, total) -> int:
    """0 when ``bounds`` is normalised and within ``[0, total]`` (``total`` has shape (1, 1, W))."""
    for i in range(bounds.shape[0]):
        if _cmp(bounds, i, 0, bounds, i, 1) >= 0:
            return _EMPTY
        if i > 0 and _cmp(bounds, i - 1, 1, bounds, i, 0) >= 0:
            return _UNSORTED
    k = bounds.shape[0]
    if k > 0 and _cmp(bounds, k - 1, 1, total, 0, 0) > 0:
        return _BEYOND
    return _OK


@njit(cache=True)
def _intersect(x, y, out) -> int:
    """Write ``x ∩ y`` into ``out`` (room for ``len(x) + len(y)`` rows); return its row count."""
    i = j = k = 0
    while i < x.shape[0] and j < y.shape[0]:
        lo_x = _cmp(x, i, 0, y, j, 0) >= 0  # the larger start comes from x
        hi_x = _cmp(x, i, 1, y, j, 1) <= 0  # the smaller end comes from x
        if lo_x:
            _copy(x, i, 0, out, k, 0)
        else:
            _copy(y, j, 0, out, k, 0)
        if hi_x:
            _copy(x, i, 1, out, k, 1)
        else:
            _copy(y, j, 1, out, k, 1)
        if _cmp(out, k, 0, out, k, 1) < 0:
            k += 1
        if hi_x:
            i += 1
        else:
            j += 1
    return k


@njit(cache=True)
def _coalesce(bounds, order, out) -> int:
    """Rows of ``bounds`` taken in ``order`` (by start), adjacent ones merged, into ``out``.

    Returns the row count, or -1 when two intervals overlap (the inputs were not disjoint).
    """
    k = 0
    for r in range(order.shape[0]):
        i = order[r]
        if k > 0:
            c = _cmp(out, k - 1, 1, bounds, i, 0)
            if c > 0:
                return -1
            if c == 0:
                _copy(bounds, i, 1, out, k - 1, 1)
                continue
        _copy(bounds, i, 0, out, k, 0)
        _copy(bounds, i, 1, out, k, 1)
        k += 1
    return k


@njit(cache=True)
def _difference(bounds, i, diff) -> None:
    """``diff = b_i - a_i`` in limbs."""
    borrow = np.uint64(0)
    for limb in range(bounds.shape[2] - 1, -1, -1):
        a, b = bounds[i, 0, limb], bounds[i, 1, limb]
        diff[limb] = b - a - borrow
        borrow = np.uint64(1) if b < a or (b == a and borrow) else np.uint64(0)


@njit(cache=True)
def _size(bounds, acc) -> None:
    """Add every ``b - a`` into ``acc``, limbs most significant first, one more than a bound's."""
    width = bounds.shape[2]
    diff = np.zeros(width, dtype=np.uint64)
    for i in range(bounds.shape[0]):
        _difference(bounds, i, diff)
        carry = np.uint64(0)
        for limb in range(width - 1, -1, -1):
            s = acc[limb + 1] + diff[limb]
            c = np.uint64(1) if s < diff[limb] else np.uint64(0)
            s2 = s + carry
            if s2 < carry:
                c = np.uint64(1)
            acc[limb + 1] = s2
            carry = c
        acc[0] += carry


@njit(cache=True)
def _largest(bounds) -> int:
    """Index of the first interval of maximal length (-1 when there is none)."""
    width = bounds.shape[2]
    best = np.zeros(width, dtype=np.uint64)
    diff = np.zeros(width, dtype=np.uint64)
    found = -1
    for i in range(bounds.shape[0]):
        _difference(bounds, i, diff)
        bigger = found < 0
        for limb in range(width):
            if diff[limb] != best[limb]:
                bigger = diff[limb] > best[limb]
                break
        if bigger:
            found = i
            best[:] = diff
    return found


@njit(cache=True)
def _log2_sizes(bounds, out) -> None:
    """``out[i]`` ~ log2(b_i - a_i), for ranking intervals by size (-1 for an empty one)."""
    width = bounds.shape[2]
    diff = np.zeros(width, dtype=np.uint64)
    for i in range(bounds.shape[0]):
        _difference(bounds, i, diff)
        out[i] = -1.0
        for lead in range(width):
            if diff[lead] != 0:
                top = float(diff[lead])
                if lead + 1 < width:
                    top += float(diff[lead + 1]) / 18446744073709551616.0  # 2**64
                out[i] = np.log2(top) + 64.0 * (width - 1 - lead)
                break


class PackedUnit:
    """Immutable normalised set of intervals of ``[0, n!)``, bounds packed in one uint64 array."""

    __slots__ = ("n", "bounds", "_size")

    def __init__(self, n: int, bounds: np.ndarray) -> None:
        """Wrap an already normalised ``(k, 2, limbs(n))`` uint64 array (use the constructors below)."""
        bounds.flags.writeable = False
        self.n, self.bounds, self._size = n, bounds, None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def empty(cls, n: int) -> PackedUnit:
        return cls(n, np.zeros((0, 2, limbs(n)), dtype=np.uint64))

    @classmethod
    def from_bytes(cls, n: int, data: bytes) -> PackedUnit:
        """Decode and validate a message (``WorkUnit.to_bytes`` format); ``ValueError`` if malformed."""
        width = limbs(n)
        if len(data) % (2 * 8 * width):
            raise ValueError(f"{len(data)} bytes is not a whole number of intervals for n={n}")
        bounds = np.frombuffer(data, dtype=WIRE).astype(np.uint64).reshape(-1, 2, width)
        problem = _validate(bounds, _encode(n, [factorial(n)]).reshape(1, 1, width))
        if problem != _OK:
            raise ValueError(f"malformed work unit for n={n}: {_PROBLEMS[problem]}")
        return cls(n, bounds)

    @classmethod
    def from_work_unit(cls, unit: WorkUnit) -> PackedUnit:
        return cls.from_intervals(unit.n, unit.intervals)

    @classmethod
    def from_intervals(cls, n: int, intervals: Iterable[Interval]) -> PackedUnit:
        """Pack intervals that are already normalised (as a ``WorkUnit`` keeps them)."""
        values = [v for interval in intervals for v in interval]
        return cls(n, _encode(n, values).reshape(-1, 2, limbs(n)))

    @classmethod
    def union_of_disjoint(cls, n: int, units: Iterable[PackedUnit]) -> PackedUnit:
        """The union of pairwise disjoint units (``ValueError`` if two overlap)."""
        parts = [u.bounds for u in units if len(u)]
        return cls.from_disjoint_bounds(n, np.concatenate(parts) if parts else cls.empty(n).bounds)

    @classmethod
    def from_disjoint_bounds(cls, n: int, bounds: np.ndarray) -> PackedUnit:
        """Normalise ``(k, 2, limbs(n))`` rows of disjoint, non-empty intervals in any order."""
        order = np.lexsort(bounds[:, 0, :].T[::-1])  # the most significant limb is the primary key
        out = np.empty_like(bounds)
        k = _coalesce(bounds, order, out)
        if k < 0:
            raise ValueError("work units overlap")
        return cls(n, out[:k].copy())

    # ------------------------------------------------------------------ views
    def to_bytes(self) -> bytes:
        return self.bounds.astype(WIRE).tobytes()

    def intervals(self) -> list[Interval]:
        """The exact ``(a, b)`` pairs."""
        data = self.to_bytes()
        width = 8 * self.bounds.shape[2]
        values = [mpz.from_bytes(data[i : i + width], "big") for i in range(0, len(data), width)]
        return list(zip(values[0::2], values[1::2], strict=True))

    def to_work_unit(self) -> WorkUnit:
        return WorkUnit._normalized(self.n, tuple(self.intervals()))

    @property
    def size(self) -> mpz:
        """Total number of leaf positions (exact, computed once)."""
        if self._size is None:
            acc = np.zeros(self.bounds.shape[2] + 1, dtype=np.uint64)
            _size(self.bounds, acc)
            self._size = mpz.from_bytes(acc.astype(WIRE).tobytes(), "big")
        return self._size

    def __len__(self) -> int:
        return self.bounds.shape[0]

    def __bool__(self) -> bool:
        return self.bounds.shape[0] > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedUnit):
            return NotImplemented
        return self.n == other.n and np.array_equal(self.bounds, other.bounds)

    __hash__ = None  # holds an array: compared by value, not hashable

    def __repr__(self) -> str:
        return f"PackedUnit(n={self.n}, {len(self)} intervals)"

    # ------------------------------------------------------------------ set operations
    def intersect(self, other: PackedUnit) -> PackedUnit:
        if other.n != self.n:
            raise ValueError(f"work units over different spaces: n={self.n} vs n={other.n}")
        out = np.empty((len(self) + len(other), 2, self.bounds.shape[2]), dtype=np.uint64)
        k = _intersect(self.bounds, other.bounds, out)
        return PackedUnit(self.n, out[:k].copy())

    def split_half(self) -> tuple[PackedUnit, PackedUnit]:
        """``(kept, given)``: every second interval, in decreasing size, is given away, so
        each side gets about half of the work of a unit of many intervals (a GPU's IVMs)."""
        sizes = np.empty(len(self), dtype=np.float64)
        _log2_sizes(self.bounds, sizes)
        given = np.zeros(len(self), dtype=bool)
        given[np.argsort(-sizes, kind="stable")[1::2]] = True
        return PackedUnit(self.n, self.bounds[~given]), PackedUnit(self.n, self.bounds[given])

    def split_largest(self) -> tuple[PackedUnit, Interval | None]:
        """``(self without the right half of its largest interval, that right half)``.

        Like ``WorkUnit.split_largest``: the first interval of maximal length is cut at
        ``(a + b) // 2``; an empty unit gives ``(self, None)``.
        """
        i = _largest(self.bounds)
        if i < 0:
            return self, None
        ((a, b),) = PackedUnit(self.n, self.bounds[i : i + 1]).intervals()
        mid = (a + b) // 2
        if mid > a:
            kept = self.bounds.copy()
            kept[i, 1] = _encode(self.n, [mid])
        else:
            kept = np.delete(self.bounds, i, axis=0)
        return PackedUnit(self.n, kept), (mid, b)

    # ------------------------------------------------------------------ the coordinator's WorkSet
    @property
    def space(self) -> PermutationSpace:
        return PermutationSpace(self.n)

    def weight(self) -> float:
        """log2 of the positions it holds (-inf for none): orders units by their work, for any n."""
        return float(gmpy2.log2(self.size)) if self.size else -math.inf

    def pieces(self) -> list[PackedUnit]:
        """One unit per interval, in order."""
        return [PackedUnit(self.n, self.bounds[i : i + 1]) for i in range(len(self))]

    def split_piece(self, min_split: int) -> tuple[PackedUnit, PackedUnit] | None:
        """``(kept, given)``: the right half of the largest interval given away
        (:meth:`split_largest`); None when that interval holds fewer than ``min_split`` positions."""
        i = _largest(self.bounds)
        if i < 0:
            return None
        ((a, b),) = PackedUnit(self.n, self.bounds[i : i + 1]).intervals()
        if b - a < max(2, min_split):
            return None
        kept, given = self.split_largest()
        return kept, PackedUnit.from_intervals(self.n, [given])

    def accept(self, reported: PackedUnit) -> PackedUnit:
        """The part of an explorer's report within this copy of its work."""
        return self.intersect(reported)


class PermutationSpace:
    """The flow-shop family's work space (``core.family.WorkSpace``): sets of intervals of [0, n!)."""

    kind = "flowshop"

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def params(self) -> dict:
        return {"n": self.n}

    def empty(self) -> PackedUnit:
        return PackedUnit.empty(self.n)

    def decode(self, data: bytes) -> PackedUnit:
        return PackedUnit.from_bytes(self.n, data)

    def union(self, sets: Iterable[PackedUnit]) -> PackedUnit:
        return PackedUnit.union_of_disjoint(self.n, sets)

    def _size(self, sets: Iterable[PackedUnit]) -> mpz:
        return sum((s.size for s in sets), mpz(0))

    def remaining_fraction(self, sets: Iterable[PackedUnit]) -> float:
        return int(self._size(sets)) / int(factorial(self.n))

    def remaining_log10(self, sets: Iterable[PackedUnit]) -> float | None:
        return share_log10(self._size(sets), self.n)

    def lower_bound(self, sets: Iterable[PackedUnit]) -> None:
        """Intervals hold no bounds."""
        return None


def limbs(n: int) -> int:
    """64-bit limbs per bound for ``[0, n!]``."""
    return byte_width(n) // 8


def _encode(n: int, values: list[mpz]) -> np.ndarray:
    """The limbs of ``values``, as a ``(len(values), limbs(n))`` uint64 array."""
    width = byte_width(n)
    data = b"".join(mpz(v).to_bytes(width, "big") for v in values)
    return np.frombuffer(data, dtype=WIRE).astype(np.uint64).reshape(len(values), width // 8)
