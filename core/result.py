"""A search's answer, for every family: :class:`Status` and :class:`Result`.

``solve``, ``minimize``, a run store's result and ``RunInstance.result()`` all give a
:class:`Result`: the fields every family shares, under common names, and the family's own in
``extras`` (as scipy's ``OptimizeResult`` is one type for many solvers).  Its JSON
(:meth:`Result.to_dict`) names them as the family does (``Family.result_fields``, which the family
gives each result it builds as ``fields``); a field reads
by its shared name, by its family's, or as JSON (``result.value``, ``result.makespan``,
``result["makespan"]``: a result is also a read-only mapping, its JSON).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """A search's status, as results and run stores spell it."""

    OPTIMAL = "optimal"  # the best solution found is proved optimal
    BOUND_PROVED = "bound_proved"  # search finished: no solution below the given upper bound exists (flow shop)
    INFEASIBLE = "infeasible"  # search finished: no feasible point exists (spatial)
    DECIDED = "decided"  # a threshold question answered (spatial ``prove_above``): holds, or a point violates it
    LIMIT = "limit"  # stopped at a time or node limit (or interrupted): work is left, a run can resume


@dataclass(frozen=True)
class Result(Mapping):
    """The outcome of a search of family ``kind`` on the instance or problem ``name``.

    ``value`` and ``solution``: the best found (None: none); ``lower_bound``: the one proved (a
    spatial search's: inf when infeasible, -inf when unbounded so far); ``run``: the run store's
    path (None for a search in this process); ``estimate``: the work left as a run store's series
    estimate it (``workflow.eta``; None: none made); ``fields``: the family's ``result_fields``."""

    kind: str
    name: str
    status: Status
    value: Any
    solution: list | None
    lower_bound: Any
    nodes: int
    elapsed_s: float
    remaining_fraction: float
    remaining_log10: float | None  # log10 of the share left (None when nothing is): readable when tiny
    extras: dict[str, Any] = field(default_factory=dict)  # the family's own fields (``leaves``, ``open_boxes``...)
    run: str | None = None
    estimate: dict | None = None
    # its JSON's fields, in order: its family's ``result_fields`` ("key", or "key=field": the shared
    # ``field`` under the family's name ``key``)
    fields: tuple[str, ...] = field(kw_only=True, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        """A family's own field (``result.leaves``), or a shared one under the family's name for it
        (``result.makespan``: ``value``; ``result.x``: ``solution``)."""
        extras = self.__dict__.get("extras", {})
        if name in extras:
            return extras[name]
        for entry in self.__dict__.get("fields", ()):
            key, _, shared = entry.partition("=")
            if key == name and shared:
                return getattr(self, shared)
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} has no field {name!r}")

    def __getitem__(self, key: str) -> Any:
        """A field of its JSON (``result["makespan"]``), as ``to_dict`` writes it."""
        if key == "run":
            return self.run
        if key == "estimate" and self.estimate is not None:
            return self.estimate
        for entry in self.fields:
            name, _, shared = entry.partition("=")
            if name == key:
                return _json(key, getattr(self, shared or key))
        return self.extras[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    @property
    def nodes_per_s(self) -> float:
        """The search's rate (0 before any time passed)."""
        return self.nodes / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def gap_abs(self) -> float | None:
        """``value - lower_bound`` (not below 0; None without a value or a finite bound)."""
        if self.value is None or self.lower_bound is None or not math.isfinite(self.lower_bound):
            return None
        return max(0.0, self.value - self.lower_bound)

    @property
    def gap_rel(self) -> float | None:
        """gap_abs / |value| (None where that is undefined)."""
        gap = self.gap_abs
        if gap is None or (self.value == 0 and gap > 0):
            return None
        return 0.0 if gap == 0 else gap / abs(self.value)

    def to_dict(self) -> dict:
        """The JSON of ``--json``: the family's ``result_fields`` in order (``"key=field"`` names a
        shared field ``key``), then the extras not named there, then ``run`` and the ``estimate``
        where there is one; a bound that is not finite is null."""
        out: dict[str, Any] = {}
        for entry in self.fields:
            key, _, name = entry.partition("=")
            out[key] = _json(key, getattr(self, name or key))
        out.update({k: v for k, v in self.extras.items() if k not in out})
        out["run"] = self.run
        if self.estimate is not None:
            out["estimate"] = self.estimate
        return out


def _json(key: str, value: Any) -> Any:
    """``value`` as the JSON field ``key`` holds it: a status as its string, a bound that is not
    finite as None."""
    if key == "lower_bound" and isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value) if isinstance(value, Status) else value
