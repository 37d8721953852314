"""The spatial family's work (``core.family``): sets of boxes with their certified lower bounds
(:class:`BoxWork`, a :class:`.boxes.BoxSet` on the wire) in a domain (:class:`BoxSpace`), the work
left measured by volume as a share of the domain (a side of zero width counts as 1, as in
:meth:`.BoxSet.volume`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .boxes import BoxSet


class BoxSpace:
    """The spatial work space (``core.family.WorkSpace``): sets of boxes in a domain."""

    kind = "spatial"

    def __init__(self, lower: Iterable[float], upper: Iterable[float]) -> None:
        self.lower = np.asarray(list(lower), dtype=np.float64)
        self.upper = np.asarray(list(upper), dtype=np.float64)
        self.scale = self.upper - self.lower

    def params(self) -> dict:
        return {"lower": self.lower.tolist(), "upper": self.upper.tolist()}

    def empty(self) -> BoxWork:
        return BoxWork(BoxSet.empty(len(self.lower)), self)

    def decode(self, data: bytes) -> BoxWork:
        """The boxes of ``data``; no bytes at all is the empty set (an explorer's first checkpoint)."""
        return BoxWork(BoxSet.from_bytes(data, len(self.lower)), self) if data else self.empty()

    def union(self, sets: Iterable[BoxWork]) -> BoxWork:
        parts = [s.boxes for s in sets]
        return BoxWork(BoxSet.concat(parts), self) if parts else self.empty()

    def remaining_fraction(self, sets: Iterable[BoxWork]) -> float:
        return sum(s.weight() for s in sets)

    def remaining_log10(self, sets: Iterable[BoxWork]) -> float | None:
        sets = list(sets)
        if not any(len(s) for s in sets):
            return None
        return math.log10(max(self.remaining_fraction(sets), math.ulp(0.0)))  # boxes flat in some side: the least

    def lower_bound(self, sets: Iterable[BoxWork]) -> float:
        """The lowest bound of an open box (inf when none is open)."""
        return min((s.lowest for s in sets), default=math.inf)


@dataclass(frozen=True, eq=False)
class BoxWork:
    """A ``BoxSet`` as the coordinator's work set (``core.family.WorkSet``)."""

    boxes: BoxSet
    space: BoxSpace

    def __len__(self) -> int:
        return len(self.boxes)

    def to_bytes(self) -> bytes:
        return self.boxes.to_bytes()

    @functools.cached_property
    def volume(self) -> float:
        """Its share of the domain (computed once: the coordinator measures its sets at every poll)."""
        return self.boxes.volume(self.space.scale)

    @functools.cached_property
    def lowest(self) -> float:
        """Its lowest box bound (inf when empty), computed once."""
        return self.boxes.lowest()

    def weight(self) -> float:
        return self.volume

    def split_half(self) -> tuple[BoxWork, BoxWork]:
        kept, given = self.boxes.split(self.space.scale)
        return BoxWork(kept, self.space), BoxWork(given, self.space)

    def split_piece(self, min_split: int) -> tuple[BoxWork, BoxWork] | None:
        """Half of the boxes (alternately by bound); None for fewer than two.  A box is cut only by
        an explorer, which bounds the halves: the coordinator cut single boxes, unbounded, each time
        a waiting explorer took one, until they were too small to split in floating point with
        their first bound, a run ended as ``limit``.  ``min_split`` is flow shop's."""
        if len(self) < 2:
            return None
        return self.split_half()

    def pieces(self) -> list[BoxWork]:
        b = self.boxes
        return [BoxWork(BoxSet(b.lo[i : i + 1], b.hi[i : i + 1], b.lb[i : i + 1]), self.space) for i in range(len(b))]

    def accept(self, reported: BoxWork) -> BoxWork:
        """The reported boxes that lie inside a box of this copy (an explorer only refines the boxes
        it was given): the report itself when all do, as on every normal checkpoint."""
        keep = reported.boxes.inside(self.boxes)
        if keep.all():
            return reported
        b = reported.boxes
        return BoxWork(BoxSet(b.lo[keep], b.hi[keep], b.lb[keep]), self.space)
