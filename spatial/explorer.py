"""The spatial B&B of :mod:`.bnb` as a resumable object: run it for a budget, stop, hand part of
its open boxes to another explorer, and resume it from a :class:`.boxes.BoxSet`.

An :class:`Exploration` explores a share of the domain: the whole domain (it bounds the root and
solves locally from the root's best point, as ``minimize`` always did) or the boxes of a
``BoxSet``, pushed open with their bounds as they are. Each step takes the open boxes with the
lowest bounds (or the dive's last one above ``max_open``), bisects them and bounds the children
(contraction, subdomain bounds, the Lagrangian bound, hull cuts: :mod:`.bnb`'s rules; where the
objective is exactly ``c . network(x) + d``, the larger of the subdomain bound and the network's
backward linear bound, :mod:`.network_bounds`).

Between two calls (after ``run`` returns, after ``give_share``) nothing is in flight, and:

- every feasible point of its share whose objective is below the prune level lies in an open box
  (:meth:`Exploration.remaining`), in a box too small to split (kept only as ``unsplittable`` and
  ``unsplittable_lb``), or in a box given away by :meth:`Exploration.give_share`;
- ``settled_lb`` bounds every point it discarded (boxes pruned at the level, parts of boxes cut by
  contraction or to their hull), so that ``min(settled_lb, unsplittable_lb, remaining().lowest())``
  bounds its share and the min of those over the explorations of one run bounds the problem.

Incumbents pass between explorations as points (:meth:`Exploration.offer`), each checked
rigorously where it is offered.

:class:`ExplorationBase` is what this exploration shares with the GPU's
(``gpu.spatial.bnb.GpuExploration``): the surface above and the run loop.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..core.blas import one_blas_thread
from ..core.progress import Progress
from .bounds import BoxBounds, bound_boxes, evaluate_point, is_feasible
from .boxes import BoxSet, bisect_many, widest_sides
from .contract import contract_boxes
from .defaults import LOCAL_EVERY_SUBDOMAINS
from .first import first_candidates, local_starts
from .lagrangian import LAGRANGIANS, LagrangianBound, distance_scale, lagrangian_bound, multipliers, nearest
from .local import _LocalSolver
from .network import NetworkObjective
from .network_bounds import NetworkBounds
from .options import (
    BATCH_SUBDOMAINS,
    BOUNDS,
    MinimizeOptions,
    _Incumbent,
    prune_level,
    prune_terms,
    split_shape,
    subdomains_per_dim,
)
from .problem import Problem
from .second_order import second_order_bounds


@dataclass(frozen=True)
class RunReport:
    """One ``Exploration.run`` call: ``done`` when nothing is left below the prune level (else it
    stopped at a limit or on request), ``nodes`` and ``elapsed_s`` of this call, the incumbent
    (None when none was found) and the exploration's counters after the call."""

    done: bool
    nodes: int
    elapsed_s: float
    objective: float | None
    x: list[float] | None
    lower_bound: float  # over this exploration's share: min(settled_lb, unsplittable_lb, open bounds)
    settled_lb: float
    open_boxes: int  # open boxes below the prune level
    unsplittable: int
    unsplittable_lb: float
    total_nodes: int
    local_solves: int


class _OpenBoxes:
    """Open boxes: a heap by lower bound, and a depth-first dive stack used above ``max_open``.

    Entries are ``(lb, order, slot)``; a box's corners and bound are row ``slot`` of growing arrays,
    with a mask of the rows in use, so that gathering and counting the open boxes (each checkpoint
    of a run on a cluster) are array operations, not loops over the entries."""

    def __init__(self, max_open: int, d: int):
        self.max_open, self.d = max_open, d
        self.heap: list[tuple[float, int, int]] = []
        self.dive: list[tuple[float, int, int]] = []
        self._order = itertools.count()
        self._lo = np.empty((0, d))
        self._hi = np.empty((0, d))
        self._lb = np.empty(0)
        self._used = np.zeros(0, dtype=bool)
        self._free: list[int] = []  # rows of boxes taken, to reuse

    def __len__(self) -> int:
        return len(self.heap) + len(self.dive)

    def _slot(self) -> int:
        if not self._free:
            used = len(self._lo)
            grown = max(64, 2 * used)
            self._lo = np.concatenate([self._lo, np.empty((grown - used, self.d))])
            self._hi = np.concatenate([self._hi, np.empty((grown - used, self.d))])
            self._lb = np.concatenate([self._lb, np.empty(grown - used)])
            self._used = np.concatenate([self._used, np.zeros(grown - used, dtype=bool)])
            self._free = list(range(grown - 1, used - 1, -1))
        return self._free.pop()

    def push(self, lb: float, lo: np.ndarray, hi: np.ndarray, diving: bool) -> None:
        slot = self._slot()
        self._lo[slot] = lo
        self._hi[slot] = hi
        self._lb[slot] = lb
        self._used[slot] = True
        entry = (lb, -next(self._order), slot)  # ties: the newest first (depth first, e.g. at -inf)
        if diving:
            self.dive.append(entry)
        else:
            heapq.heappush(self.heap, entry)

    def reset(self, boxes: BoxSet) -> None:
        """Hold exactly ``boxes``, all in the heap (a dive in progress ends)."""
        self.dive, self._free = [], []
        self._lo, self._hi = np.array(boxes.lo, dtype=np.float64), np.array(boxes.hi, dtype=np.float64)
        self._lb, self._used = np.array(boxes.lb, dtype=np.float64), np.ones(len(boxes), dtype=bool)
        self.heap = [(lb, -next(self._order), i) for i, lb in enumerate(boxes.lb.tolist())]
        heapq.heapify(self.heap)

    def boxes(self) -> BoxSet:
        """Every open box (heap and dive) as a BoxSet, in the order of their rows."""
        slots = np.flatnonzero(self._used)
        return BoxSet(self._lo[slots], self._hi[slots], self._lb[slots])

    def count_below(self, level: float) -> int:
        """Open boxes whose bound is below ``level`` (the others are pruned by it)."""
        return int(np.count_nonzero((self._lb < level) & self._used))

    def lowest_centre_without(self, points: np.ndarray, level: float) -> np.ndarray | None:
        """The centre of the open box with the least bound below ``level`` that holds none of
        ``points`` (k, d); None where there is none."""
        slots = np.flatnonzero(self._used & (self._lb < level))
        lo, hi = self._lo[slots], self._hi[slots]
        holds = np.zeros(len(slots), dtype=bool)
        for point in points:
            holds |= np.all((lo <= point) & (point <= hi), axis=1)
        if np.all(holds):
            return None
        best = np.flatnonzero(~holds)[np.argmin(self._lb[slots][~holds])]
        return 0.5 * lo[best] + 0.5 * hi[best]

    def lowest(self) -> float:
        """The lowest lower bound of an open box (inf when none is open)."""
        heap_min = self.heap[0][0] if self.heap else math.inf
        return min([heap_min, *(entry[0] for entry in self.dive)])

    def _taken(self, entry: tuple[float, int, int]) -> tuple[float, np.ndarray, np.ndarray]:
        lb, _, slot = entry
        self._free.append(slot)
        self._used[slot] = False
        return lb, self._lo[slot].copy(), self._hi[slot].copy()

    def take(self, count: int) -> tuple[list[tuple[float, np.ndarray, np.ndarray]], bool]:
        """Up to ``count`` boxes: the dive's last one, else the heap's lowest; and whether to dive."""
        if self.dive:
            return [self._taken(self.dive.pop())], True
        taken = []
        while self.heap and len(taken) < count:
            taken.append(self._taken(heapq.heappop(self.heap)))
        return taken, len(self.heap) + 2 * len(taken) > self.max_open


class ExplorationBase:
    """What the explorations share, on the CPU (:class:`Exploration`) and the GPU
    (``gpu.spatial.bnb.GpuExploration``): the value they prune with, their certified bound, offers,
    shares and the run loop. A subclass sets ``problem``, ``options``, ``began``, ``incumbent``,
    ``local``, ``n_per_dim``, ``subdomains_per_box``, ``nodes``, ``settled_lb``, ``unsplittable``, ``unsplittable_lb``, ``_scale``,
    ``_lagrangians`` (empty), ``_ub_elsewhere`` and ``_network`` (None without a network objective) and holds the open boxes (``remaining``, ``replace``,
    ``settle``, ``_lowest``, ``_open_count``, ``_count_below``) and its step (``_step``), which bounds
    each box below the level with the Lagrangian of ``_lagrangians`` nearest it (:func:`.lagrangian.nearest`)."""

    @property
    def ub(self) -> float:
        """The best value known: the incumbent's, or a lower one reached elsewhere (:meth:`prune_at`)."""
        return min(self.incumbent.value, self._ub_elsewhere)

    @property
    def level(self) -> float:
        """The prune level of :attr:`ub` (+inf without one; with a threshold, :func:`.options.prune_level`)."""
        return prune_level(self.ub, self.options)

    @property
    def cut_value(self) -> float:
        """What contraction cuts at (the points with f above it go): :attr:`ub`, or with a
        threshold C, min(ub, C) (:func:`.options.prune_terms`)."""
        return prune_terms(self.ub, self.options)[0]

    @property
    def done(self) -> bool:
        """Whether nothing is left below the prune level (with a threshold C: no open box below C, or
        a verified point below C)."""
        return self._lowest() >= self.level

    @property
    def lower_bound(self) -> float:
        """The certified lower bound over this exploration's share (inf when it holds nothing)."""
        return min(self._lowest(), self.settled_lb, self.unsplittable_lb)

    def offer(self, x: np.ndarray) -> bool:
        """Take ``x`` (another explorer's point) when it verifies rigorously and improves the
        incumbent; a constrained problem then bounds with the Lagrangian of its multipliers there."""
        if not self.incumbent.offer(x):
            return False
        self._use_multipliers_at(self.incumbent.x)
        return True

    def prune_at(self, value: float) -> None:
        """Prune with ``value`` from now on where it is below the incumbent's: the value of a point
        verified elsewhere (another explorer's incumbent, known to this one by its value only)."""
        self._ub_elsewhere = min(self._ub_elsewhere, float(value))

    def _first_incumbents(self, root_point: np.ndarray) -> None:
        """Before the first split, the root bounded: with ``options.first_incumbents`` offer the
        root's best point ``root_point`` (NaN: none) moved onto the objective's kinks, then the
        centre and grid of :mod:`.first` in one evaluation (an unconstrained network objective's
        lowest few by float value: :func:`offer_lowest`), then solve locally from ``root_point``
        and the best of those points until the search is done."""
        if not np.all(np.isfinite(root_point)):
            return
        if not self.options.first_incumbents:
            if self.local is not None:
                self._solve_locally(root_point)
            return
        if self.local is not None and self._offer_on_kinks(root_point):
            return
        problem = self.problem
        n_grid = subdomains_per_dim(self.options.subdomains, problem.dimension)
        points = first_candidates(problem.lower, problem.upper, n_grid)
        network = NetworkObjective.of_unconstrained(problem)
        if network is None:
            values = self.incumbent.offer_many(points)
        else:  # the lowest few by their float values, verified: the local solves' starts need no more
            values = offer_lowest(self.incumbent, network, points)
        if self.local is None:
            return
        for k, start in enumerate((root_point, *local_starts(points, values, skip=root_point))):
            if self.done:
                return
            self._solve_locally(start, polish=k > 0)  # the root's point was polished first

    def _offer_on_kinks(self, start: np.ndarray) -> bool:
        """Offer ``start`` moved onto the objective's kinks (:meth:`.local._LocalSolver.polished`);
        whether that ended the search (Bukin N.6: then no grid and no local solve are needed)."""
        on_kinks = self.local.polished(start)
        return on_kinks is not start and self.incumbent.offer(on_kinks) and self.done

    def _solve_locally(self, start: np.ndarray, polish: bool = True) -> None:
        """A local solve; one that improves the incumbent brings the multipliers at its optimum, one
        whose local optimum ties the incumbent (another optimum of a symmetric problem) brings its
        multipliers too. With ``polish`` the start moved onto the objective's kinks is offered
        first (:meth:`_offer_on_kinks`): where it ends the search, no solve is needed."""
        before = self.incumbent.value
        if polish and self._offer_on_kinks(start):
            return
        optimum = self.local.run(start)
        if optimum is not None:
            self._use_multipliers_at(optimum)
        elif self.local.found is not None and self.incumbent.value == before:
            self._add_multipliers_at(self.local.found, first=False)

    def _use_multipliers_at(self, x: np.ndarray) -> None:
        """A constrained problem bounds with the Lagrangian of the multipliers at ``x`` (the new
        incumbent's local optimum) first from now on."""
        self._add_multipliers_at(x, first=True)

    def _add_multipliers_at(self, x: np.ndarray, first: bool) -> None:
        """Bound with the Lagrangian of the multipliers at ``x`` too: first (``x`` is the new
        incumbent's local optimum), or after the others when ``x`` verifies and ties the best
        value known (another optimum). Up to ``LAGRANGIANS`` are kept, of points that tie, with
        distinct multipliers: a problem with symmetric optima has one set per optimum, each sharp
        only near its own. Any weights give a valid bound; these are the ones that prune."""
        tape, options = self.problem.tape, self.options
        if not (tape.n_ineq or tape.n_eq):
            return
        ub = self.ub
        if self.local is not None and self.local.best_found < math.inf:
            # the incumbent may lie below its local optimum, inside the equalities' tolerance
            # (``local._LocalSolver._into_tolerance``): other optima tie with that optimum's value
            ub = max(ub, self.local.best_found)
        tie = ub + max(options.eps_abs, options.eps_rel * abs(ub))
        if first:
            value = self.incumbent.value  # x's, or that of a point it was pulled to
        else:
            point = evaluate_point(tape, x)
            value = point.f_hi
            if not (is_feasible(point, options.feas_tol) and value <= tie):
                return
        weights = multipliers(tape, x)
        if weights is None:
            return
        bound_l = lagrangian_bound(tape, *weights, options.feas_tol)
        if not first and any(b.same_weights(bound_l) for _, _, b in self._lagrangians):
            return
        kept = [(v, p, b) for v, p, b in self._lagrangians if v <= tie and not b.same_weights(bound_l)]
        entry = (value, np.array(x, dtype=np.float64), bound_l)
        self._lagrangians = ([entry, *kept] if first else [*kept, entry])[:LAGRANGIANS]

    def give_share(self) -> BoxSet:
        """About half the open boxes, removed from this exploration (:meth:`.BoxSet.split`: a single
        open box is bisected); empty when nothing can be given."""
        keep, give = self.remaining().split(self._scale)
        if len(give):
            self.replace(keep)
        return give

    def run(
        self,
        should_stop: Callable[[], bool] | None = None,
        time_limit: float | None = None,
        node_limit: int | None = None,
        *,
        progress: Callable[[Progress], None] | None = None,
        progress_seconds: float = 0.5,
    ) -> RunReport:
        """Explore best first until nothing is left below the prune level, ``time_limit`` seconds
        or ``node_limit`` boxes bounded in this call (0 or less: stop unless done), or
        ``should_stop()``, checked between steps; ``progress`` gets a snapshot every ``progress_seconds``."""
        # a network objective's bounds and points are BLAS's work: numba's threads and theirs use the cores
        with one_blas_thread() if self._network is not None else contextlib.nullcontext():
            return self._run(should_stop, time_limit, node_limit, progress, progress_seconds)

    def _run(
        self,
        should_stop: Callable[[], bool] | None,
        time_limit: float | None,
        node_limit: int | None,
        progress: Callable[[Progress], None] | None,
        progress_seconds: float,
    ) -> RunReport:
        """:meth:`run`."""
        began = time.perf_counter()
        nodes_before = self.nodes
        next_report = began + progress_seconds
        while True:
            now = time.perf_counter()
            if progress is not None and now >= next_report:
                progress(self._progress(now - self.began))
                next_report = now + progress_seconds
            if self.done:
                done = True
                break
            if (
                (time_limit is not None and now - began >= time_limit)
                or (node_limit is not None and self.nodes - nodes_before >= node_limit)
                or (should_stop is not None and should_stop())
            ):
                done = False
                break
            self._step()
        found = self.incumbent.x is not None
        return RunReport(
            done=done,
            nodes=self.nodes - nodes_before,
            elapsed_s=time.perf_counter() - began,
            objective=self.incumbent.value if found else None,
            x=self.incumbent.x.tolist() if found else None,
            lower_bound=self.lower_bound,
            settled_lb=self.settled_lb,
            open_boxes=self._count_below(self.level),
            unsplittable=self.unsplittable,
            unsplittable_lb=self.unsplittable_lb,
            total_nodes=self.nodes,
            local_solves=0 if self.local is None else self.local.count,
        )

    def _progress(self, elapsed_s: float) -> Progress:
        """The search as a progress bar draws it: one explorer, its certified lower bound, incumbent
        and open boxes."""
        ub = math.inf if self.incumbent.x is None else self.incumbent.value
        rate = self.nodes / elapsed_s if elapsed_s > 0 else 0.0
        return Progress(
            elapsed_s,
            self.nodes,
            rate,
            ub,
            remaining_fraction=math.nan,
            remaining_log10=None,
            active_explorers=1,
            lower_bound=self.lower_bound,
            pieces=self._open_count(),
        )


ESTIMATES_OFFERED = 4  # points chosen by their float values (offer_lowest): verified per batch at most


def offer_lowest(incumbent: _Incumbent, objective: NetworkObjective, points: np.ndarray) -> np.ndarray:
    """The float values of an unconstrained network ``objective`` at ``points``, of which the
    ``ESTIMATES_OFFERED`` lowest below the incumbent's value are offered to it (verifying a point
    costs an interval pass through the layers, a float value a tenth of that)."""
    estimates = objective.float_values(points)
    promising = np.flatnonzero(estimates < incumbent.value)  # NaN never is
    chosen = promising[np.argsort(estimates[promising], kind="stable")[:ESTIMATES_OFFERED]]
    if len(chosen):
        incumbent.offer_many(points[chosen])
    return estimates


def offer_centres(incumbent: _Incumbent, objective: NetworkObjective, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The centres of whole network boxes, offered as :func:`offer_lowest` offers points."""
    centres = np.clip(0.5 * lo + 0.5 * hi, lo, hi)
    offer_lowest(incumbent, objective, centres)
    return centres


def bounds_whole_boxes(problem: Problem) -> bool:
    """Whether ``problem``'s boxes are bounded whole, on the CPU and the GPU: an unconstrained
    network objective, whose boxes are bounded through its layers alone, their centres offered as
    candidates (:func:`offer_centres`), with no tape bound, no second-order bound and no
    contraction. One thread, 60 s, the 28 network runs of ``benchmarks/spatial_splits.py --set
    networks``: with N^d subdomains 24 proved in 299 s; whole boxes from 3 inputs or 1,000 weights,
    with f's tape over each, 27 in 142 s; without the tape and on every network objective, 27 in
    91 s, 30.5 s of them on the 27 proved (80.5 s before), the eight 2-D runs of 48-304 weights
    3.3x faster too (docs/performance.md)."""
    return NetworkObjective.of_unconstrained(problem) is not None


class Exploration(ExplorationBase):
    """Best-first spatial B&B over the domain (``boxes`` None) or over ``boxes``; see the module.

    ``incumbent`` and ``local`` (None without local solves) are what :func:`.bnb.make_result`
    reads; ``nodes`` counts the boxes bounded since construction. The options' time and node
    limits are ``minimize``'s: ``run`` takes its own, per call."""

    def __init__(self, problem: Problem, options: MinimizeOptions | None = None, boxes: BoxSet | None = None):
        options = options or MinimizeOptions()
        d = problem.dimension
        if boxes is not None and boxes.d != d:
            raise ValueError(f"boxes of dimension {boxes.d} for a problem of dimension {d}")
        self.problem, self.options = problem, options
        self.began = time.perf_counter()
        self._objective = NetworkObjective.of(problem)
        threads = numba.get_num_threads() if options.parallel else 1  # as the tape's bounds use
        self._network = None if self._objective is None else NetworkBounds(self._objective.network, threads)
        self._whole_boxes = bounds_whole_boxes(problem)
        # n pieces along k sides of each box
        self.n_per_dim, self._split_axes = (1, d) if self._whole_boxes else split_shape(options, d)
        self.subdomains_per_box = self.n_per_dim**self._split_axes
        self.incumbent = _Incumbent(problem, options.feas_tol)
        self.local = (
            _LocalSolver(problem, self.incumbent, options.eps_abs, options.eps_rel) if options.local_solves else None
        )
        self.nodes = 0
        self.settled_lb = math.inf  # the lowest bound of anything discarded (pruned, cut away)
        self.unsplittable = 0  # boxes too small to split in floating point, dropped from the open boxes
        self.unsplittable_lb = math.inf
        self._scale = problem.upper - problem.lower
        self._distance_scale = distance_scale(problem.lower, problem.upper)
        self._mode = int(BOUNDS[options.bound])
        self._open = _OpenBoxes(options.max_open, d)
        self._batch = max(1, BATCH_SUBDOMAINS // (2 * self.subdomains_per_box))
        self._next_local = LOCAL_EVERY_SUBDOMAINS
        self._lagrangians: list[tuple[float, np.ndarray, LagrangianBound]] = []  # (f, point, L): _add_multipliers_at
        self._ub_elsewhere = math.inf
        if boxes is not None:
            self._open.reset(boxes)
            return
        root = self._bound(problem.lower[None, :].copy(), problem.upper[None, :].copy(), diving=False)
        if root is not None:
            self._first_incumbents(root.best_point[0])

    def replace(self, boxes: BoxSet) -> None:
        """Explore ``boxes`` from now on instead of the open boxes (the incumbent, the bounds it
        prunes with and the counters stay)."""
        if boxes.d != self.problem.dimension:
            raise ValueError(f"boxes of dimension {boxes.d} for a problem of dimension {self.problem.dimension}")
        self._open.reset(boxes)

    def settle(self) -> None:
        """Close the open boxes whose bounds reached the prune level, as taking them would: their
        bounds go into ``settled_lb`` (:attr:`lower_bound` stays the same).  The open boxes are
        gathered only when some box must go (an engine settles before every checkpoint)."""
        if self._open.count_below(self.level) == len(self._open):
            return
        boxes = self.remaining()
        above = boxes.lb >= self.level
        if np.any(above):
            self.settled_lb = min(self.settled_lb, float(boxes.lb[above].min()))
            self._open.reset(BoxSet(boxes.lo[~above], boxes.hi[~above], boxes.lb[~above]))

    def remaining(self) -> BoxSet:
        """The open boxes (the dive's included), whatever their bounds (see :meth:`settle`)."""
        return self._open.boxes()

    def _lowest(self) -> float:
        return self._open.lowest()

    def _open_count(self) -> int:
        return len(self._open)

    def _count_below(self, level: float) -> int:
        return self._open.count_below(level)

    def _step(self) -> None:
        """Bisect the boxes taken and bound their children; a local solve when one is due."""
        taken, diving = self._open.take(self._batch)
        if not taken:
            return
        lb, lo, hi = (np.array(column) for column in zip(*taken, strict=True))
        live = ~(lb >= self.level)  # the others are settled at their bounds
        self.settled_lb = min(self.settled_lb, lb[~live].min(initial=math.inf))
        children_lo, children_hi, split = bisect_many(lo[live], hi[live], self._scale)
        self.unsplittable += int(np.count_nonzero(~split))
        self.unsplittable_lb = min(self.unsplittable_lb, lb[live][~split].min(initial=math.inf))
        if not len(children_lo):
            return
        found = self._bound(children_lo, children_hi, diving)
        subdomains = self.nodes * self.subdomains_per_box
        if found is None or self.local is None or subdomains < self._next_local:
            return
        self._next_local += LOCAL_EVERY_SUBDOMAINS
        start = self._local_start(found)
        if start is not None:
            self._solve_locally(start)

    def _local_start(self, found: BoxBounds) -> np.ndarray | None:
        """Without known optima, the best point of the batch's box with the least bound, if below
        the level. With them (the points of the Lagrangians that bound), the centre of the open box
        with the least bound below the level that holds none of them: a solve from a box around
        one most likely finds it again (G13's four symmetric optima: the solves kept finding the
        first two, and the boxes around the others waited for one of them); None where every such
        box holds one."""
        if not self._lagrangians:
            best = int(np.argmin(found.lb))
            return found.best_point[best] if found.lb[best] < self.level else None
        return self._open.lowest_centre_without(np.array([point for _, point, _ in self._lagrangians]), self.level)

    def _bound(self, lo: np.ndarray, hi: np.ndarray, diving: bool) -> BoxBounds | None:
        """Contract boxes (those proved to hold no point with f <= :attr:`cut_value` go: pruned there,
        or infeasible without one), bound them, offer their best points, and keep each shrunk to the
        hull of its subdomains below the prune level (the rest holds nothing below that level).
        A constrained problem's boxes are bounded on its Lagrangians first (subdomains), then on f
        over the whole box where still below the level; a network objective's boxes through its
        layers first, then on f's subdomains where still below the level. f's bounds of the boxes it bounded, or None
        when it bounded none."""
        options, tape = self.options, self.problem.tape
        self.nodes += len(lo)
        if options.contract and not self._whole_boxes:  # a network's boxes: it never narrowed one
            cut = self.cut_value
            new_lo, new_hi, empty = contract_boxes(tape, lo, hi, cut, options.feas_tol)
            if np.any(empty):
                self.settled_lb = min(self.settled_lb, self._emptied_bound(lo[empty], hi[empty], cut))
            lo, hi = new_lo[~empty], new_hi[~empty]
        if not len(lo):
            return None
        level = self.level
        lb = np.full(len(lo), -math.inf)
        # whole boxes near a minimizer go here, before any subdomain is bounded; once Lagrangians
        # bound, their second-order bounds take its place (theirs prune wherever f's did)
        if options.second_order and not self._lagrangians and not self._whole_boxes:
            lb = second_order_bounds(tape, lo, hi, self._expansion_points(lo, hi))
        hull_lo, hull_hi = np.full(lo.shape, np.nan), np.full(lo.shape, np.nan)
        n_f, sides = self.n_per_dim, self._sides(lo, hi)
        if self._lagrangians:  # first: near an optimum L's bound prunes most, and f's is then not needed
            lb, hull_lo, hull_hi = self._with_lagrangians(lo, hi, sides, level, lb, hull_lo, hull_hi)
            n_f, sides = 1, None  # L's subdomains gave the fine bound and hull: f's bound is a fallback over the box
        if self._network is not None:  # first: it prunes most boxes of a network, whose subdomains cost far more
            lb = self._with_network(lo, hi, lb, level)
        below = np.flatnonzero(lb < level)
        found = None
        if len(below) and self._whole_boxes:
            found = self._offer_centres(lo[below], hi[below], lb[below])
        elif len(below):
            found = bound_boxes(
                tape,
                lo[below],
                hi[below],
                n_f,
                self._mode,
                options.feas_tol,
                options.parallel,
                threshold=np.full(len(below), level),
                sides=None if sides is None else sides[below],
            )
            self.incumbent.offer_many(found.best_point)
            lb[below] = np.maximum(lb[below], found.lb)
            hull_lo[below] = np.fmax(hull_lo[below], found.hull_lo)
            hull_hi[below] = np.fmin(hull_hi[below], found.hull_hi)
        rows = np.flatnonzero(lb < math.inf)  # +inf: proved infeasible; -inf: unbounded so far, kept
        lb, box_lo, box_hi = lb[rows], lo[rows], hi[rows]
        hull = np.all(np.isfinite(hull_lo[rows]), axis=1)[:, None]
        cut_lo = np.where(hull, np.maximum(box_lo, hull_lo[rows]), box_lo)
        cut_hi = np.where(hull, np.minimum(box_hi, hull_hi[rows]), box_hi)
        empty = np.any(cut_lo > cut_hi, axis=1)  # f's and L's hulls do not meet: nothing below the level
        if np.any(empty) or np.any(cut_lo > box_lo) or np.any(cut_hi < box_hi):
            self.settled_lb = min(self.settled_lb, level)  # cut subdomains: feasible ones have lb >= level
        self._keep(lb[~empty], cut_lo[~empty], cut_hi[~empty], diving)
        return found

    def _offer_centres(self, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray) -> BoxBounds:
        """Whole network boxes: their bounds are the layers' alone (f's tape over a whole box never
        raised one on rosenbrock-4, styblinski-5 or gauss3-32-32, and cost a third of the time), and
        their candidates are their centres, the tape's best points there (:func:`offer_centres`)."""
        centres = offer_centres(self.incumbent, self._objective, lo, hi)
        count = np.ones(len(lo), dtype=np.int64)
        return BoxBounds(lb, centres, count, 0 * count, np.full(lo.shape, np.nan), np.full(lo.shape, np.nan))

    def _expansion_points(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The points each box's second-order bound expands f at (B, 2, d): the incumbent's point
        moved into the box (NaN without one) and the box's centre."""
        x = self.incumbent.x
        moved = np.full(lo.shape, np.nan) if x is None else np.clip(x, lo, hi)
        return np.stack([moved, np.clip(0.5 * (lo + hi), lo, hi)], axis=1)

    def _emptied_bound(self, lo: np.ndarray, hi: np.ndarray, cut: float) -> float:
        """The bound of boxes that contraction at ``cut`` emptied: ``cut``; or, with a threshold below
        :attr:`ub`, ``ub`` when contraction at ``ub`` empties them all too (+inf without an
        incumbent: they hold no feasible point, so that an infeasible problem keeps the bound +inf
        and its threshold holds vacuously)."""
        ub = self.ub
        if not cut < ub:
            return cut
        return ub if np.all(contract_boxes(self.problem.tape, lo, hi, ub, self.options.feas_tol)[2]) else cut

    def _with_network(self, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray, level: float) -> np.ndarray:
        """Each bound below ``level`` raised to the network objective's backward linear bound over
        its box (both bound f over the whole box; the others are pruned already)."""
        raised = lb.copy()
        below = np.flatnonzero(lb < level)
        if len(below):
            raised[below] = np.maximum(lb[below], self._network.objective_bounds(self._objective, lo[below], hi[below]))
        return raised

    def _sides(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
        """The sides of each box to cut into subdomains (None: all of them, :func:`.options.split_shape`)."""
        if self._split_axes == self.problem.dimension:
            return None
        return widest_sides(lo, hi, self._scale, self._split_axes)

    def _with_lagrangians(self, lo, hi, sides, level, lb, hull_lo, hull_hi):
        """The bounds and hulls of f sharpened, on the boxes below ``level``, by the Lagrangian of
        the point nearest each box's centre (relative to the domain): multipliers are local, each
        set sharp only near its own point."""
        points = np.array([point for _, point, _ in self._lagrangians])
        closest = nearest(lo, hi, points, self._distance_scale)
        for k, (_, _, bound_l) in enumerate(self._lagrangians):
            rows = np.flatnonzero((closest == k) & (lb < level))
            if len(rows):
                lb, hull_lo, hull_hi = self._with_lagrangian(bound_l, rows, lo, hi, sides, level, lb, hull_lo, hull_hi)
        return lb, hull_lo, hull_hi

    def _with_lagrangian(self, bound_l, rows, lo, hi, sides, level, lb, hull_lo, hull_hi):
        """The bounds and hulls of f sharpened on ``rows`` by ``bound_l``'s (both are valid: the
        larger bound, the intersection of the hulls; a box whose L-hull is empty has nothing below
        the level)."""
        options = self.options
        threshold = math.nextafter(level + bound_l.slack, math.inf)
        if options.second_order:
            so = second_order_bounds(bound_l.tape, lo[rows], hi[rows], self._expansion_points(lo[rows], hi[rows]))
            so = np.nextafter(so - bound_l.slack, -np.inf)
            lb = lb.copy()
            lb[rows] = np.maximum(lb[rows], so)
            rows = rows[lb[rows] < level]
            if not len(rows):
                return lb, hull_lo, hull_hi
        by_l = bound_boxes(
            bound_l.tape,
            lo[rows],
            hi[rows],
            self.n_per_dim,
            self._mode,
            options.feas_tol,
            options.parallel,
            threshold=np.full(len(rows), threshold),
            sides=None if sides is None else sides[rows],
        )
        lb_l = np.where(by_l.lb < np.inf, np.nextafter(by_l.lb - bound_l.slack, -np.inf), np.inf)  # rounded down
        raised = np.maximum(lb[rows], lb_l)
        none_below = np.isnan(by_l.hull_lo[:, 0]) & (raised < math.inf)
        lb, hull_lo, hull_hi = lb.copy(), hull_lo.copy(), hull_hi.copy()
        lb[rows] = np.where(none_below, np.maximum(raised, level), raised)  # every subdomain's L-bound is >= it
        hull_lo[rows] = np.fmax(hull_lo[rows], by_l.hull_lo)
        hull_hi[rows] = np.fmin(hull_hi[rows], by_l.hull_hi)
        return lb, hull_lo, hull_hi

    def _keep(self, lb: np.ndarray, lo: np.ndarray, hi: np.ndarray, diving: bool) -> None:
        """Open the boxes (in order) whose bounds are below the prune level; settle the others."""
        level = self.level
        above = lb >= level
        self.settled_lb = min(self.settled_lb, lb[above].min(initial=math.inf))
        for b in np.flatnonzero(~above):
            self._open.push(float(lb[b]), lo[b], hi[b], diving)
