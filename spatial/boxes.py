"""Work units of the spatial family: sets of boxes of the domain with certified lower bounds.

A :class:`BoxSet` holds ``k`` boxes ``[lo[i], hi[i]]`` (``k x d`` float64, finite, ``lo <= hi``)
and their bounds ``lb`` (``k`` float64, never NaN): no point of box ``i`` that is feasible has an
objective below ``lb[i]`` (``-inf``: not bounded yet, or unbounded so far; ``+inf``: no feasible
point). It is immutable; its arrays are read-only copies.

Splitting never loses or weakens anything: the two halves' boxes together are the original ones
(the same union of points) and every point keeps its bound. On the wire (:meth:`BoxSet.to_bytes`)
a set is a fixed header (magic, format version, d, k) followed by ``lo``, ``hi`` and ``lb`` as
little-endian float64; reading it back is bit-exact and checks everything above.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from .problem import Problem

MAGIC = b"PBBX"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<4sIIQ")  # magic, format version, d, k
_FLOAT = np.dtype("<f8")


def bisect(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The two halves of [lo, hi] across its widest side relative to ``scale`` (as ``2 x d`` lo and
    hi arrays); None when no side can be split in floating point."""
    halves_lo, halves_hi, split = bisect_many(lo[None, :], hi[None, :], scale)
    return (halves_lo, halves_hi) if split[0] else None


def relative_widths(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The sides of boxes (k x d) relative to ``scale`` (0 where ``scale`` is 0): what the
    branching rule (:func:`bisect_many`) and the subdomain split (:func:`widest_sides`) compare."""
    positive = scale > 0
    return np.where(positive, (hi - lo) / np.where(positive, scale, 1.0), 0.0)


def widest_sides(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` sides of each box (k x d, k <= d) widest relative to ``scale``, the first of equal
    ones, in increasing order (an int64 array, one row per box)."""
    order = np.argsort(-relative_widths(lo, hi, scale), axis=1, kind="stable")
    return np.sort(order[:, :k], axis=1).astype(np.int64)


def bisect_many(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boxes (k x d) that can be split in floating point, each cut in two across its widest side
    relative to ``scale`` that can (the first of equal ones): the halves' lo and hi (the lower then
    the upper half of each box, in order), and which boxes were split."""
    widths = relative_widths(lo, hi, scale)
    middle = lo + 0.5 * (hi - lo)
    splittable = (widths > 0) & (lo < middle) & (middle < hi)
    split = splittable.any(axis=1)
    side = np.argmax(np.where(splittable, widths, -np.inf), axis=1)[split]
    cut = middle[split, side]
    halves_lo, halves_hi = np.repeat(lo[split], 2, axis=0), np.repeat(hi[split], 2, axis=0)
    lower, upper = np.arange(0, 2 * len(side), 2), np.arange(1, 2 * len(side), 2)
    halves_hi[lower, side] = cut
    halves_lo[upper, side] = cut
    return halves_lo, halves_hi, split


_LEAF = 8  # outer boxes per leaf of ``_inside_any``'s tree


@njit(cache=True)
def _holds(outer_lo, outer_hi, lo, hi) -> bool:
    for j in range(len(lo)):
        if lo[j] < outer_lo[j] or hi[j] > outer_hi[j]:
            return False
    return True


@njit(cache=True)
def _inside_any(outer_lo, outer_hi, lo, hi):
    """Which boxes ``[lo[i], hi[i]]`` lie inside some box of ``outer`` (k >= 1 boxes; exact float
    comparisons): a tree of the outer boxes (cut at the middle of their centres' range on the side
    where it is widest, down to ``_LEAF`` boxes), searched down the nodes whose bounding box holds
    the box.  Building it costs O(k) per level, a search O(depth) where the outer boxes barely overlap."""
    k, d = outer_lo.shape
    order = np.arange(k)
    cap = 2 * k + 1
    node_lo, node_hi = np.empty((cap, d)), np.empty((cap, d))
    start, end = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    first_child = np.full(cap, -1, np.int64)  # the second is the next node
    stack = np.empty(cap, np.int64)
    end[0], count, stack[0], top = k, 1, 0, 1
    while top:
        top -= 1
        node = stack[top]
        s, e = start[node], end[node]
        widest, spread, low_of_widest = 0, -1.0, 0.0
        for j in range(d):
            node_lo[node, j], node_hi[node, j] = np.inf, -np.inf
            low, high = np.inf, -np.inf
            for t in range(s, e):
                i = order[t]
                node_lo[node, j] = min(node_lo[node, j], outer_lo[i, j])
                node_hi[node, j] = max(node_hi[node, j], outer_hi[i, j])
                centre = 0.5 * outer_lo[i, j] + 0.5 * outer_hi[i, j]
                low, high = min(low, centre), max(high, centre)
            if high - low > spread:
                widest, spread, low_of_widest = j, high - low, low
        if e - s <= _LEAF or spread <= 0.0:
            continue
        cut, middle, last = low_of_widest + 0.5 * spread, s, e - 1  # below the cut to the left, in place
        while middle <= last:
            i = order[middle]
            if 0.5 * outer_lo[i, widest] + 0.5 * outer_hi[i, widest] < cut:
                middle += 1
            else:
                order[middle], order[last] = order[last], i
                last -= 1
        if middle == s or middle == e:  # the cut rounded to an end of the range: a leaf
            continue
        first_child[node] = count
        start[count], end[count], start[count + 1], end[count + 1] = s, middle, middle, e
        stack[top], stack[top + 1] = count, count + 1
        top += 2
        count += 2
    inside = np.zeros(len(lo), np.bool_)
    for r in range(len(lo)):
        stack[0], top = 0, 1
        while top and not inside[r]:
            top -= 1
            node = stack[top]
            if not _holds(node_lo[node], node_hi[node], lo[r], hi[r]):
                continue
            if first_child[node] < 0:
                for t in range(start[node], end[node]):
                    if _holds(outer_lo[order[t]], outer_hi[order[t]], lo[r], hi[r]):
                        inside[r] = True
                        break
            else:
                stack[top], stack[top + 1] = first_child[node], first_child[node] + 1
                top += 2
    return inside


def _read_only(values, shape: tuple[int, ...], name: str) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    if array.shape != shape:
        raise ValueError(f"box set: {name} has shape {array.shape}, expected {shape}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class BoxSet:
    """Boxes ``lo``, ``hi`` (k x d) and their certified lower bounds ``lb`` (k); see the module."""

    lo: np.ndarray
    hi: np.ndarray
    lb: np.ndarray

    def __post_init__(self) -> None:
        lo = np.asarray(self.lo)
        if lo.ndim != 2 or lo.shape[1] < 1:
            raise ValueError(f"box set: lo must be k x d with d >= 1, not of shape {lo.shape}")
        k, d = lo.shape
        lo = _read_only(lo, (k, d), "lo")
        hi = _read_only(self.hi, (k, d), "hi")
        lb = _read_only(self.lb, (k,), "lb")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("box set: a box has a NaN or infinite end")
        if np.any(lo > hi):
            raise ValueError(f"box set: box {int(np.flatnonzero(np.any(lo > hi, axis=1))[0])} has lo > hi")
        if np.any(np.isnan(lb)):
            raise ValueError(f"box set: box {int(np.flatnonzero(np.isnan(lb))[0])} has a NaN bound")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "lb", lb)

    @classmethod
    def root(cls, problem: Problem) -> BoxSet:
        """The problem's domain as one box, not bounded yet."""
        return cls(problem.lower[None, :], problem.upper[None, :], np.array([-math.inf]))

    @classmethod
    def empty(cls, d: int) -> BoxSet:
        """No box, in dimension ``d``."""
        return cls(np.empty((0, d)), np.empty((0, d)), np.empty(0))

    @classmethod
    def concat(cls, sets: Sequence[BoxSet]) -> BoxSet:
        """All boxes of ``sets`` (at least one, all of one dimension), in order."""
        if not sets:
            raise ValueError("box set: concat needs at least one set")
        d = sets[0].d
        if any(s.d != d for s in sets):
            raise ValueError(f"box set: concat of sets of dimensions {sorted({s.d for s in sets})}")
        return cls(
            np.concatenate([s.lo for s in sets]),
            np.concatenate([s.hi for s in sets]),
            np.concatenate([s.lb for s in sets]),
        )

    @property
    def d(self) -> int:
        return self.lo.shape[1]

    def __len__(self) -> int:
        return len(self.lb)

    def __repr__(self) -> str:
        return f"BoxSet(d={self.d}, {len(self)} boxes, lowest bound {self.lowest()})"

    def lowest(self) -> float:
        """The lowest bound of a box (inf when the set is empty)."""
        return float(self.lb.min()) if len(self) else math.inf

    def volume(self, scale: np.ndarray) -> float:
        """The sum over boxes of prod(width / scale) (sides where ``scale`` is 0 count as 1)."""
        scale = np.asarray(scale, dtype=np.float64)
        ratios = np.where(scale > 0, (self.hi - self.lo) / np.where(scale > 0, scale, 1.0), 1.0)
        return float(np.prod(ratios, axis=1).sum())

    def inside(self, outer: BoxSet) -> np.ndarray:
        """Which of these boxes lie inside a box of ``outer`` (exactly, no tolerance), as booleans."""
        if not len(self) or not len(outer):
            return np.zeros(len(self), dtype=bool)
        return _inside_any(outer.lo, outer.hi, self.lo, self.hi)

    def split(self, scale: np.ndarray) -> tuple[BoxSet, BoxSet]:
        """About half the work each: the boxes sorted by bound, alternate ones to each side (the
        first half holds the lowest); a single box bisected (:func:`bisect`, relative to ``scale``)
        into two with its bound; (self, empty) for an empty set or a box too small to split."""
        if len(self) == 1:
            halves = bisect(self.lo[0], self.hi[0], np.asarray(scale, dtype=np.float64))
            if halves is None:
                return self, BoxSet.empty(self.d)
            return (BoxSet(halves[0][:1], halves[1][:1], self.lb), BoxSet(halves[0][1:], halves[1][1:], self.lb))
        order = np.argsort(self.lb, kind="stable")
        first, second = order[0::2], order[1::2]
        return (
            BoxSet(self.lo[first], self.hi[first], self.lb[first]),
            BoxSet(self.lo[second], self.hi[second], self.lb[second]),
        )

    def to_bytes(self) -> bytes:
        """The wire format: header, then lo, hi, lb as little-endian float64."""
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, self.d, len(self))
        return header + b"".join(a.astype(_FLOAT, copy=False).tobytes() for a in (self.lo, self.hi, self.lb))

    @classmethod
    def from_bytes(cls, data: bytes, d: int) -> BoxSet:
        """The set ``to_bytes`` wrote, for dimension ``d``; ValueError for anything else."""
        data = bytes(data)
        if len(data) < _HEADER.size:
            raise ValueError(f"box set: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
        magic, version, d_read, k = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise ValueError(f"box set: wrong magic {magic!r} (expected {MAGIC!r})")
        if version != FORMAT_VERSION:
            raise ValueError(f"box set: format version {version}, this code reads {FORMAT_VERSION}")
        if d_read != d:
            raise ValueError(f"box set: written for d={d_read}, expected d={d}")
        expected = _HEADER.size + _FLOAT.itemsize * k * (2 * d + 1)
        if len(data) != expected:
            raise ValueError(f"box set: {len(data)} bytes, expected {expected} for {k} boxes of d={d}")
        values = np.frombuffer(data, dtype=_FLOAT, offset=_HEADER.size)
        n = k * d
        return cls(values[:n].reshape(k, d), values[n : 2 * n].reshape(k, d), values[2 * n :])
