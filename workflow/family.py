"""The seam between the workflow and a family of problems: what the coordinator needs of work.

The ledger and the coordinator hand out, split, count and measure work through two protocols
and know no family:

- a :class:`WorkSet` is a family's unit of work, made of pieces (flow shop: intervals of
  [0, n!), ``search.packed.PackedUnit``; spatial B&B: boxes with their lower bounds);
- a :class:`WorkSpace` is the space those sets live in: it decodes their wire format (bytes,
  never a pickle), forms unions, and measures what is left.

A family's space is found by its run kind in ``SPACES`` (module and class, imported on first
use), so that a scheduler builds it from a message naming the kind and the space's parameters
(``WorkSpace.params``, JSON-able).  A third family adds a line there and its two classes.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol, Self

# run kind -> "module:class" of its WorkSpace (a class whose constructor takes the params)
SPACES = {
    "flowshop": "pbbflow.search.packed:PermutationSpace",
}


class WorkSet(Protocol):
    """A family's unit of work; immutable."""

    def __len__(self) -> int:
        """Its pieces (intervals, boxes): what an explorer of capacity k works on k at a time."""

    @property
    def space(self) -> WorkSpace:
        """The space it lives in."""

    def weight(self) -> float:
        """A number that orders sets of one space by their work (to choose what to cut)."""

    def to_bytes(self) -> bytes:
        """The wire format, read back by ``WorkSpace.decode``."""

    def split_half(self) -> tuple[Self, Self]:
        """``(kept, given)``, about half of the work each, from a set of many pieces."""

    def split_piece(self, min_split: int) -> tuple[Self, Self] | None:
        """``(kept, given)``: its largest piece cut in two; None when no piece is large enough
        (``min_split``: the family's unit of the smallest piece worth cutting)."""

    def pieces(self) -> list[Self]:
        """One set per piece, in order."""

    def accept(self, reported: Self) -> Self:
        """What of an explorer's report counts, ``self`` being the coordinator's copy of the work
        it was given (flow shop: the intersection, so that nothing outside the copy comes back)."""


class WorkSpace(Protocol):
    """The space of a run's work sets."""

    kind: str

    def params(self) -> dict:
        """The constructor's arguments, JSON-able: how a scheduler rebuilds this space."""

    def empty(self) -> WorkSet:
        """The empty set."""

    def decode(self, data: bytes) -> WorkSet:
        """A set from its wire format; ``ValueError`` (one line) when malformed."""

    def union(self, sets: Sequence[WorkSet]) -> WorkSet:
        """The union of disjoint sets."""

    def remaining_fraction(self, sets: Sequence[WorkSet]) -> float:
        """The share of the whole space that the disjoint ``sets`` hold."""

    def remaining_log10(self, sets: Sequence[WorkSet]) -> float | None:
        """log10 of that share (None when the sets are empty): readable where it is tiny."""


def work_space(kind: str, params: dict) -> WorkSpace:
    """The space of run kind ``kind`` with ``params``; ``ValueError`` for an unknown kind."""
    where = SPACES.get(kind)
    if where is None:
        raise ValueError(f"unknown run kind {kind!r} (known: {', '.join(sorted(SPACES))})")
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)(**params)
