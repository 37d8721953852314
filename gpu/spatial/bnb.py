"""Spatial branch-and-bound on one GPU: the open boxes live on the device, in phases.

The CPU solver's algorithm (:mod:`pbbflow.spatial.bnb`: the same bounds, contraction, hull cuts,
Lagrangian bound, prune rule and certified lower bound) with the tree on the device, after the
lecture seed's static task lists: two preallocated lists of boxes and their bounds, ``q_in`` read
and ``q_out`` appended through an atomic tail, swapped each phase (:mod:`.phase`). A phase
splits up to ``phase_subdomains / N^d`` of the lowest-bound open boxes (best first in batches),
bounds their children on all their subdomains in one launch, updates the device incumbent with
an atomic min from rigorously evaluated points and keeps the survivors. The host launches, reads
two small arrays of counters per phase, and runs the local solves (scipy) whose points it feeds
into the device incumbent. A phase costs a dozen launches whatever its size, so while the tree is
small each box is split into up to 8 children (bisected in up to 3 rounds): fewer, fuller phases.
Where the CPU bounds a network objective's boxes whole (:func:`.explorer.bounds_whole_boxes`), so
does the device: f's tape is not run, each box's bound is its layers' (raised on the device), no
contraction, and its centre is its candidate, the few most promising offered on the host as the
CPU does; such a box counts as ``NETWORK_BOX_SUBDOMAINS`` of a phase's budget.

The lists grow on demand up to ``capacity`` boxes. Before a phase that could overflow ``q_out``
there, the open boxes are sorted and the upper half by bound moves to a host reserve; it comes
back, lowest bounds first, when the device runs short of work. No box is ever dropped.

:class:`GpuExploration` is this search as a resumable object, the device twin of
:class:`pbbflow.spatial.explorer.Exploration` (run for a budget, stop, share, resume from a
``BoxSet``): its lists, counters and incumbent stay on the device between calls.
``minimize_gpu`` runs one over the whole domain.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numba import config, cuda

from ...core.progress import Progress
from ...core.result import Result
from ...spatial.bnb import load_host_code, run_to_end
from ...spatial.boxes import BoxSet
from ...spatial.defaults import CPU_SLICE_S, CPU_SUBDOMAINS, GPU_LOCAL_EVERY_SUBDOMAINS
from ...spatial.explorer import Exploration, ExplorationBase, bounds_whole_boxes, offer_centres
from ...spatial.lagrangian import LAGRANGIANS, LagrangianBound, distance_scale
from ...spatial.local import _LocalSolver
from ...spatial.network import NetworkObjective
from ...spatial.options import (
    BOUNDS,
    MinimizeOptions,
    _Incumbent,
    check_uniform_split,
    prune_level,
    prune_terms,
    subdomains_per_dim,
)
from ...spatial.problem import Problem
from . import phase
from .contract import contract_boxes_device
from .kernels import (
    THREADS_PER_BLOCK,
    DeviceBoxBounds,
    DeviceTape,
    blocks,
    bound_on_device,
    fill_edges,
)
from .network_bounds import DeviceNetworkBounds, load_kernel

config.CUDA_LOW_OCCUPANCY_WARNINGS = False  # early phases bound few boxes by design
PHASE_SUBDOMAINS = 1 << 21  # subdomain bounds per phase at most (about 30 ms of an H200 on the peaks ANN)
MIN_PHASE_SUBDOMAINS = 1 << 17  # below this a phase splits its boxes into up to 8 (see _levels)
INITIAL_BOXES = 256  # the lists' and the children's first capacity (they grow fourfold on demand)
CAPACITY = 1 << 20  # open boxes on the device (beyond them, a host reserve)
NETWORK_BOX_SUBDOMAINS = 128  # a whole network box's share of a phase (its bound through the layers)


class _Reserve:
    """Open boxes waiting on the host (lists of arrays, merged when taken)."""

    def __init__(self, n_vars: int):
        self.lo = np.empty((0, n_vars))
        self.hi = np.empty((0, n_vars))
        self.lb = np.empty(0)

    def __len__(self) -> int:
        return len(self.lb)

    def lowest(self) -> float:
        return float(self.lb.min()) if len(self.lb) else math.inf

    def put(self, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray) -> None:
        self.lo = np.concatenate([self.lo, lo])
        self.hi = np.concatenate([self.hi, hi])
        self.lb = np.concatenate([self.lb, lb])

    def take(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``count`` boxes of lowest bound (fewer when fewer wait)."""
        order = np.argsort(self.lb, kind="stable")
        taken, left = order[:count], order[count:]
        boxes = self.lo[taken], self.hi[taken], self.lb[taken]
        self.lo, self.hi, self.lb = self.lo[left], self.hi[left], self.lb[left]
        return boxes


def _grown(capacity: int, needed: int, largest: int) -> int:
    """A capacity of at least ``needed`` (at most ``largest``): four times the old one or more."""
    return min(largest, max(needed, 4 * capacity))


class _BoxList:
    """One static task list on the device: boxes (capacity, d) and their lower bounds, grown on
    demand up to ``largest`` (a run that stays small allocates little)."""

    def __init__(self, capacity: int, largest: int, n_vars: int):
        self.largest, self.n_vars = largest, n_vars
        self._allocate(min(capacity, largest))

    def _allocate(self, capacity: int) -> None:
        self.capacity = capacity
        self.lo = cuda.device_array((capacity, self.n_vars), np.float64)
        self.hi = cuda.device_array((capacity, self.n_vars), np.float64)
        self.lb = cuda.device_array(capacity, np.float64)

    def ensure(self, needed: int, keep: int) -> None:
        """Room for ``needed`` boxes, the first ``keep`` kept."""
        if needed <= self.capacity:
            return
        old = self.lo, self.hi, self.lb
        self._allocate(_grown(self.capacity, needed, self.largest))
        if keep:
            for new, array in zip((self.lo, self.hi, self.lb), old):
                new[:keep].copy_to_device(array[:keep])

    def download(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.lo[:count].copy_to_host(), self.hi[:count].copy_to_host(), self.lb[:count].copy_to_host()

    def upload(self, start: int, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray) -> None:
        end = start + len(lb)
        self.ensure(end, start)
        if end > start:
            self.lo[start:end] = np.ascontiguousarray(lo)
            self.hi[start:end] = np.ascontiguousarray(hi)
            self.lb[start:end] = np.ascontiguousarray(lb)


class _LagrangianArrays:
    """The device arrays of the children's Lagrangian bounds (allocated with the first Lagrangian):
    each child's bounds on its nearest L (``bounds``, merged into ``lb``, ``hull_lo``, ``hull_hi``)
    and f's over the whole box where those leave it below the level (``edges``, ``bounds_f``)."""

    def __init__(self, capacity: int, n_vars: int, n_per_dim: int):
        self.bounds = DeviceBoxBounds(capacity, n_vars, n_per_dim**n_vars)
        self.lb = cuda.device_array(capacity, np.float64)
        self.hull_lo = cuda.device_array((capacity, n_vars), np.float64)
        self.hull_hi = cuda.device_array((capacity, n_vars), np.float64)
        self.edges = cuda.device_array((capacity, n_vars, 2), np.float64)
        self.bounds_f = DeviceBoxBounds(capacity, n_vars, 1)


class _Children:
    """The device arrays of the boxes bounded in one phase, grown on demand up to ``largest``."""

    def __init__(self, capacity: int, largest: int, n_vars: int, n_per_dim: int):
        self.largest, self.n_vars, self.n_per_dim = largest, n_vars, n_per_dim
        self.by_l: _LagrangianArrays | None = None  # allocated with the first Lagrangian bound
        self._allocate(min(capacity, largest))

    def _allocate(self, capacity: int) -> None:
        n_vars, n_per_dim = self.n_vars, self.n_per_dim
        self.capacity = capacity
        self.lo = cuda.device_array((capacity, n_vars), np.float64)
        self.hi = cuda.device_array((capacity, n_vars), np.float64)
        self.edges = cuda.device_array((capacity, n_vars, n_per_dim + 1), np.float64)
        self.emptied = cuda.to_device(np.zeros(capacity, np.bool_))
        self.threshold = cuda.device_array(capacity, np.float64)
        self.threshold_l = cuda.device_array(capacity, np.float64)
        self.skip_l = cuda.device_array((LAGRANGIANS, capacity), np.bool_)
        self.skip_f = cuda.device_array(capacity, np.bool_)
        self.candidate = cuda.device_array(capacity, np.float64)
        self.kept_lb = cuda.device_array(capacity, np.float64)
        self.bounds = DeviceBoxBounds(capacity, n_vars, n_per_dim**n_vars)
        if self.by_l is not None:
            self.by_l = _LagrangianArrays(capacity, n_vars, n_per_dim)

    def ensure(self, needed: int) -> None:
        """Room for ``needed`` children (their contents are not kept)."""
        if needed > self.capacity:
            self._allocate(_grown(self.capacity, needed, self.largest))

    def lagrangian_arrays(self) -> _LagrangianArrays:
        if self.by_l is None:
            self.by_l = _LagrangianArrays(self.capacity, self.n_vars, self.n_per_dim)
        return self.by_l


def _levels(selected: int, box_cost: int, room: int) -> int:
    """Bisection rounds per selected box this phase: more while the phase would bound fewer than
    :data:`MIN_PHASE_SUBDOMAINS` subdomains (a box costs ``box_cost``; a phase costs launches
    whatever its size, so small trees take fewer, fuller phases), within ``room`` children and
    :data:`.phase.MAX_LEVELS`."""
    target = min(room, max(2 * selected, MIN_PHASE_SUBDOMAINS // box_cost))
    levels = 1
    while levels < phase.MAX_LEVELS and selected << (levels + 1) <= target:
        levels += 1
    return levels


class GpuExploration(ExplorationBase):
    """The CPU's :class:`pbbflow.spatial.explorer.Exploration` with its open boxes in the device's
    static lists (see the module docstring), kept there between calls: the same public surface
    (:class:`.ExplorationBase`) and invariants (that module's docstring).

    ``boxes`` None explores the whole domain (the root is bounded and solved locally from its best
    point); a ``BoxSet`` is pushed open with its bounds as they are. The kernels prune with
    :attr:`ub` (the device's value is lowered to it at each phase); device points join the
    incumbent when they beat it. With a threshold C the device's value is lowered to
    :attr:`cut_value`, min(ub, C), and its tolerances are 0 (:func:`.options.prune_terms`), so that
    the kernels prune and contract at C (:func:`.options.prune_level`); a device point then joins the
    incumbent only at or below C (it cannot beat the device's value otherwise), which is all the
    question needs. The lowest bounds of the boxes the device pruned or cut
    (``R_PRUNED``) and of those too small to split (``R_UNSPLIT``, ``C_UNSPLIT``) stay on it
    across calls. TooManyVariables for a problem of more variables than the kernels take."""

    def __init__(
        self,
        problem: Problem,
        options: MinimizeOptions | None = None,
        boxes: BoxSet | None = None,
        *,
        phase_subdomains: int = PHASE_SUBDOMAINS,
        capacity: int = CAPACITY,
    ):
        options = options or MinimizeOptions()
        check_uniform_split(options)
        d = problem.dimension
        if boxes is not None and boxes.d != d:
            raise ValueError(f"boxes of dimension {boxes.d} for a problem of dimension {d}")
        self.problem, self.options = problem, options
        self.began = time.perf_counter()
        self._whole_boxes = bounds_whole_boxes(problem)
        self.n_per_dim = 1 if self._whole_boxes else subdomains_per_dim(options.subdomains, d)
        self.subdomains_per_box = self.n_per_dim**d
        # what a box costs of a phase's budget and of the local solves' schedule, in subdomains
        self._box_cost = NETWORK_BOX_SUBDOMAINS if self._whole_boxes else self.subdomains_per_box
        self._mode = int(BOUNDS[options.bound])
        self._dtape = DeviceTape.upload(problem.tape)
        self._per_phase = max(1, int(phase_subdomains) // self._box_cost)  # boxes bisected per phase at most
        self._capacity = max(int(capacity), 4 * self._per_phase)
        self._lists = [_BoxList(INITIAL_BOXES, self._capacity, d), _BoxList(INITIAL_BOXES, self._capacity, d)]
        self._children = _Children(INITIAL_BOXES, 2 * self._per_phase, d, self.n_per_dim)
        self._real = cuda.to_device(np.full(phase.N_REAL, np.inf))
        self._count = cuda.to_device(np.zeros(phase.N_COUNT, np.int64))
        self._reals, self._counts = self._real.copy_to_host(), self._count.copy_to_host()  # as of the last phase
        self._scale = problem.upper - problem.lower
        self._device_scale = cuda.to_device(self._scale)
        self.incumbent = _Incumbent(problem, options.feas_tol)
        self.local = (
            _LocalSolver(problem, self.incumbent, options.eps_abs, options.eps_rel) if options.local_solves else None
        )
        self._reserve = _Reserve(d)
        objective = NetworkObjective.of(problem)
        self._network = None if objective is None else (objective, DeviceNetworkBounds(objective.network))
        self._lagrangians = []  # (f, point, L): ExplorationBase._add_multipliers_at
        self._distance_scale = distance_scale(problem.lower, problem.upper)
        self._device_l = _DeviceLagrangians(d, self._distance_scale)
        self._ub_elsewhere = math.inf
        self._settled = math.inf  # what settle() closed (the device keeps the rest)
        self._unsplit_before, self._unsplit_lb_before = 0, math.inf  # taken over (take_over), not on the device
        self._next_local = GPU_LOCAL_EVERY_SUBDOMAINS
        self._current, self._n_open, self._open_lowest = 0, 0, math.inf  # lists[current][:n_open] are open
        self.nodes = self.phases = self.spills = 0
        self.device_wait_s = 0.0  # seconds the host waited for the device: the kernels' share, roughly
        if boxes is not None:
            self.replace(boxes)
            return
        phase.begin_phase[1, 1](self._real, self._count, self.cut_value)
        self._children.lo[0:1] = problem.lower[None, :].copy()
        self._children.hi[0:1] = problem.upper[None, :].copy()
        found = self._bound_children(1, self._lists[self._current])
        self._n_open, self._open_lowest = int(self._counts[phase.C_OUT]), float(self._reals[phase.R_OPEN_MIN])
        self._first_incumbents(found.best_point[0].copy_to_host())

    @property
    def settled_lb(self) -> float:
        """The lowest bound of anything discarded (pruned, cut away, closed by :meth:`settle`)."""
        return min(self._settled, float(self._reals[phase.R_PRUNED]))

    @property
    def unsplittable(self) -> int:
        """Boxes too small to split in floating point, dropped from the open boxes."""
        return self._unsplit_before + int(self._counts[phase.C_UNSPLIT])

    @property
    def unsplittable_lb(self) -> float:
        """The lowest bound of those boxes (inf when none)."""
        return min(self._unsplit_lb_before, float(self._reals[phase.R_UNSPLIT]))

    def _lowest(self) -> float:
        """The lowest bound of an open box, on the device or in the reserve."""
        return min(self._open_lowest, self._reserve.lowest())

    def _open_count(self) -> int:
        return self._n_open + len(self._reserve)

    def _count_below(self, level: float) -> int:
        below = int(np.count_nonzero(self._reserve.lb < level))
        if self._n_open:
            below += int(np.count_nonzero(self._lists[self._current].lb[: self._n_open].copy_to_host() < level))
        return below

    def replace(self, boxes: BoxSet) -> None:
        """Explore ``boxes`` from now on instead of the open boxes (uploaded; beyond the lists'
        capacity the upper half by bound waits on the host). The incumbent, the bounds it prunes
        with and the counters stay."""
        if boxes.d != self.problem.dimension:
            raise ValueError(f"boxes of dimension {boxes.d} for a problem of dimension {self.problem.dimension}")
        self._reserve = _Reserve(boxes.d)
        if len(boxes) > self._capacity:
            self._place(boxes.lo, boxes.hi, boxes.lb)
            return
        self._lists[self._current].upload(0, boxes.lo, boxes.hi, boxes.lb)
        self._n_open, self._open_lowest = len(boxes), boxes.lowest()

    def take_over(self, other: ExplorationBase) -> None:
        """Go on from ``other``, a stopped exploration of the same problem whose open boxes this one
        was made with (``boxes``): its incumbent (offered, so verified again here, with its
        Lagrangian bound), the points of its other Lagrangians (tied optima, verified again), the
        value it prunes with, the bounds of what it settled and of the boxes it could not split,
        its nodes and its local solves. The certified bound then covers both parts."""
        if other.problem is not self.problem:
            raise ValueError("take_over needs an exploration of the same problem")
        if other.incumbent.x is not None:
            self.offer(other.incumbent.x)
        for _, point, _ in other._lagrangians:  # those of tied optima too, verified again
            self._add_multipliers_at(point, first=False)
        self.prune_at(other.ub)
        self._settled = min(self._settled, other.settled_lb)
        self._unsplit_before += other.unsplittable
        self._unsplit_lb_before = min(self._unsplit_lb_before, other.unsplittable_lb)
        self.nodes += other.nodes
        self._next_local = self.nodes * self._box_cost + GPU_LOCAL_EVERY_SUBDOMAINS
        if self.local is not None and other.local is not None:
            self.local.count += other.local.count
            self.local.fallbacks += other.local.fallbacks
            self.local.seconds += other.local.seconds

    def settle(self) -> None:
        """Close the open boxes whose bounds reached the prune level, as taking them would: their
        bounds go into ``settled_lb`` (:attr:`lower_bound` stays the same). Only the bounds are
        downloaded unless some box must go (the phases prune the others on the device)."""
        level = self.level
        device_lb = self._lists[self._current].lb[: self._n_open].copy_to_host()
        if not (np.any(device_lb >= level) or np.any(self._reserve.lb >= level)):
            return
        boxes = self.remaining()
        above = boxes.lb >= level
        self._settled = min(self._settled, float(boxes.lb[above].min()))
        self.replace(BoxSet(boxes.lo[~above], boxes.hi[~above], boxes.lb[~above]))

    def remaining(self) -> BoxSet:
        """The open boxes (downloaded, and the host reserve's), whatever their bounds (see :meth:`settle`)."""
        lo, hi, lb = self._lists[self._current].download(self._n_open)
        reserve = self._reserve
        return BoxSet(
            np.concatenate([lo, reserve.lo]), np.concatenate([hi, reserve.hi]), np.concatenate([lb, reserve.lb])
        )

    def _read(self, array) -> np.ndarray:
        """A small device array on the host (the wait for the kernels before it is counted)."""
        began = time.perf_counter()
        values = array.copy_to_host()
        self.device_wait_s += time.perf_counter() - began
        return values

    def _place(self, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray) -> None:
        """Open boxes split by bound: the lower ``capacity // 2`` on the device, the rest to the reserve."""
        order = np.argsort(lb, kind="stable")
        stay, leave = order[: self._capacity // 2], order[self._capacity // 2 :]
        self._reserve.put(lo[leave], hi[leave], lb[leave])
        self._lists[self._current].upload(0, lo[stay], hi[stay], lb[stay])
        self._n_open, self._open_lowest = len(stay), float(lb[stay].min())

    def _step(self) -> None:
        """One phase: refill from the reserve or spill to it, select, branch, bound the children,
        swap the lists; a local solve when one is due."""
        per_phase, box_cost = self._per_phase, self._box_cost
        source = self._lists[self._current]
        if self._n_open < per_phase and len(self._reserve):
            lo, hi, lb = self._reserve.take(per_phase - self._n_open)
            source.upload(self._n_open, lo, hi, lb)
            self._n_open += len(lb)
            self._open_lowest = min(self._open_lowest, float(lb.min()))
        n_open = self._n_open
        selected = min(per_phase, n_open)
        levels = _levels(selected, box_cost, 2 * per_phase)
        if n_open + selected * ((1 << levels) - 1) > self._capacity:  # q_out could overflow: half waits on the host
            self._place(*source.download(n_open))
            n_open = self._n_open
            selected = min(per_phase, n_open)
            levels = _levels(selected, box_cost, 2 * per_phase)
            self.spills += 1
        select_lb = math.inf
        if n_open > selected:
            select_lb = float(np.partition(source.lb[:n_open].copy_to_host(), selected - 1)[selected - 1])
        target = self._lists[1 - self._current]
        target.ensure(n_open + selected * ((1 << levels) - 1), 0)
        children = self._children
        children.ensure(selected << levels)
        real, count = self._real, self._count
        cut, eps_abs, eps_rel = prune_terms(self.ub, self.options)
        phase.begin_phase[1, 1](real, count, cut)
        phase.branch_kernel()[blocks(n_open), THREADS_PER_BLOCK](
            n_open,
            source.lo,
            source.hi,
            source.lb,
            select_lb,
            selected,
            levels,
            self._device_scale,
            float(eps_abs),
            float(eps_rel),
            real,
            count,
            target.lo,
            target.hi,
            target.lb,
            children.lo,
            children.hi,
        )
        n_children = int(self._read(count)[phase.C_CHILDREN])
        self.phases += 1
        if n_children:
            found = self._bound_children(n_children, target)
        else:
            self._reals, self._counts = self._read(real), self._read(count)
        self._current = 1 - self._current
        self._n_open, self._open_lowest = int(self._counts[phase.C_OUT]), float(self._reals[phase.R_OPEN_MIN])
        best_kept = int(self._counts[phase.C_BEST_KEPT])
        if self.local is not None and self.nodes * box_cost >= self._next_local and best_kept != phase.NONE:
            self._next_local = self.nodes * box_cost + GPU_LOCAL_EVERY_SUBDOMAINS
            self._solve_locally(found.best_point[best_kept].copy_to_host())

    def _bound_children(self, n_children: int, out: _BoxList) -> DeviceBoxBounds:
        """Contract, bound, offer and keep children 0 .. n_children - 1 into ``out``; read the
        counters and take the device's incumbent when one of these children holds it. With
        Lagrangians (a constrained problem's), as the CPU: each child is bounded on the subdomains
        of its nearest L first, then f over the whole box where L leaves it below the level. Whole
        boxes are bounded by the layers alone, their centres the candidates (:meth:`_raise_by_network`).
        f's bounds (their best points are the candidates)."""
        options, children, dtape, real, count = self.options, self._children, self._dtape, self._real, self._count
        _, eps_abs, eps_rel = prune_terms(self.ub, options)
        eps_abs, eps_rel, feas_tol = float(eps_abs), float(eps_rel), float(options.feas_tol)
        self.nodes += n_children
        grid = blocks(n_children)
        if options.contract and not self._whole_boxes:  # a network's boxes: it never narrowed one (CPU)
            contract_boxes_device(
                dtape,
                children.lo,
                children.hi,
                n_children,
                real[phase.R_UB : phase.R_UB + 1],
                feas_tol,
                children.emptied,
            )
        if not self._whole_boxes:  # the edges of f's subdomains: whole boxes run no tape
            fill_edges[grid, THREADS_PER_BLOCK](n_children, children.lo, children.hi, children.edges)
        lagrangians = self._device_l.update(self._lagrangians)
        phase.levels_kernel()[grid, THREADS_PER_BLOCK](
            n_children,
            real,
            eps_abs,
            eps_rel,
            children.emptied,
            children.lo,
            children.hi,
            self._device_l.points,
            len(lagrangians),
            self._device_l.scale,
            self._device_l.slacks,
            children.threshold,
            children.threshold_l,
            children.skip_l,
            children.skip_f,
        )
        found, edges, n_per_dim, by_l = children.bounds, children.edges, self.n_per_dim, None
        if lagrangians:
            by_l = children.lagrangian_arrays()
            for k, (tape_l, slack) in enumerate(lagrangians):
                bound_on_device(
                    tape_l,
                    n_children,
                    children.skip_l[k],
                    children.edges,
                    self.n_per_dim,
                    self._mode,
                    feas_tol,
                    children.threshold_l,
                    by_l.bounds,
                )
                phase.lagrangian_kernel()[grid, THREADS_PER_BLOCK](
                    n_children,
                    children.skip_l[k],
                    by_l.bounds.box_lb,
                    by_l.bounds.hull_lo,
                    by_l.bounds.hull_hi,
                    slack,
                    children.threshold,
                    by_l.lb,
                    by_l.hull_lo,
                    by_l.hull_hi,
                    children.skip_f,
                )
            found, edges, n_per_dim = by_l.bounds_f, by_l.edges, 1  # L's subdomains gave the fine bound and hull
            fill_edges[grid, THREADS_PER_BLOCK](n_children, children.lo, children.hi, edges)
        whole = self._whole_boxes  # never with Lagrangians (no constraints): f's tape is not run
        if whole:
            phase.whole_boxes[grid, THREADS_PER_BLOCK](
                n_children,
                children.lo,
                children.hi,
                found.box_lb,
                found.best_point,
                found.hull_lo,
                found.hull_hi,
                children.candidate,
            )
        else:
            bound_on_device(
                dtape, n_children, children.skip_f, edges, n_per_dim, self._mode, feas_tol, children.threshold, found
            )
        if self._network is not None and by_l is None:
            self._raise_by_network(n_children, children, found)
        if not whole:
            phase.offer_candidates(dtape, n_children, found.best_point, feas_tol, children.candidate, real)
        phase.keep_kernel()[grid, THREADS_PER_BLOCK](
            n_children,
            children.lo,
            children.hi,
            children.emptied,
            found.box_lb,
            found.hull_lo,
            found.hull_hi,
            children.threshold,
            by_l is not None,
            children.skip_f,
            found.box_lb if by_l is None else by_l.lb,
            found.hull_lo if by_l is None else by_l.hull_lo,
            found.hull_hi if by_l is None else by_l.hull_hi,
            eps_abs,
            eps_rel,
            real,
            count,
            children.kept_lb,
            out.lo,
            out.hi,
            out.lb,
        )
        phase.claim[grid, THREADS_PER_BLOCK](n_children, children.candidate, children.kept_lb, real, count)
        self._reals, self._counts = self._read(real), self._read(count)
        child = int(self._counts[phase.C_UB_CHILD])
        if child != phase.NONE and self._reals[phase.R_UB] < self.incumbent.value:
            self.incumbent.value = float(self._reals[phase.R_UB])
            self.incumbent.x = found.best_point[child].copy_to_host()
        return found

    def _raise_by_network(self, n_children: int, children, found) -> None:
        """Each child's bound below the prune level raised to the network objective's backward
        linear bound over its box, bounded on the device (both bound f over the whole box; the CPU's
        explorer does the same): a network's boxes are pruned by it far more than by its tape.
        Whole boxes have the layers' bound alone, and their centres are offered here (:meth:`_offer_centres`)."""
        objective, device = self._network
        lo, hi = children.lo[:n_children].copy_to_host(), children.hi[:n_children].copy_to_host()
        lb, emptied = found.box_lb[:n_children].copy_to_host(), children.emptied[:n_children].copy_to_host()
        level = prune_level(self.ub, self.options)
        usable = np.all(np.isfinite(lo) & np.isfinite(hi) & (lo <= hi), axis=1)
        rows = np.flatnonzero(~emptied & usable & ~(lb >= level))
        if not len(rows):
            return
        inputs = list(objective.inputs)
        bounds = device.lower_bounds(lo[rows][:, inputs], hi[rows][:, inputs], objective.c, objective.d)
        network_lb = bounds.max(axis=1) if objective.combine == "max" else bounds.min(axis=1)
        higher = network_lb > lb[rows]  # NaN in either: the tape's bound stands
        if np.any(higher):
            lb[rows[higher]] = network_lb[higher]
            found.box_lb[:n_children].copy_to_device(lb)
        if self._whole_boxes:
            below = rows[lb[rows] < level]
            self._offer_centres(objective, lo[below], hi[below])

    def _offer_centres(self, objective: NetworkObjective, lo: np.ndarray, hi: np.ndarray) -> None:
        """The centres of whole boxes still below the level, offered as the CPU offers them
        (:func:`.explorer.offer_centres`); an improvement lowers the device's value at once, so
        that this phase's keep kernel prunes with it."""
        before = self.incumbent.value
        offer_centres(self.incumbent, objective, lo, hi)
        if self.incumbent.value < before:
            phase.lower_ub[1, 1](self._real, self.cut_value)


class _DeviceLagrangians:
    """An exploration's Lagrangians on the device: their tapes and slacks, and their points and
    the distance scale for the levels kernel (rows beyond the Lagrangians held are unused)."""

    def __init__(self, n_vars: int, scale: np.ndarray):
        self.scale = cuda.to_device(scale)
        self.points = cuda.to_device(np.zeros((LAGRANGIANS, n_vars)))
        self.slacks = cuda.to_device(np.zeros(LAGRANGIANS))
        self._held: list[tuple[LagrangianBound, DeviceTape]] = []

    def update(self, lagrangians: list) -> list[tuple[DeviceTape, float]]:
        """The tapes and slacks of ``lagrangians`` ((f, point, L) entries, in order), each tape
        uploaded once; the points and slacks uploaded when the entries changed."""
        if len(self._held) != len(lagrangians) or any(a is not b for (a, _), (_, _, b) in zip(self._held, lagrangians)):
            uploaded = {id(b): tape for b, tape in self._held}
            self._held = [(b, uploaded.get(id(b)) or DeviceTape.upload(b.tape)) for _, _, b in lagrangians]
            if lagrangians:
                points = np.zeros((LAGRANGIANS, self.points.shape[1]))
                points[: len(lagrangians)] = [p for _, p, _ in lagrangians]
                slacks = np.zeros(LAGRANGIANS)
                slacks[: len(lagrangians)] = [b.slack for _, _, b in lagrangians]
                self.points.copy_to_device(points)
                self.slacks.copy_to_device(slacks)
        return [(tape, float(b.slack)) for b, tape in self._held]


def minimize_gpu(
    problem: Problem,
    options: MinimizeOptions | None = None,
    *,
    progress: Callable[[Progress], None] | None = None,
    progress_seconds: float = 0.5,
    should_stop: Callable[[], bool] | None = None,
    phase_subdomains: int = PHASE_SUBDOMAINS,
    capacity: int = CAPACITY,
) -> Result:
    """Minimize ``problem`` by spatial B&B on the current GPU: a :class:`GpuExploration` of the
    whole domain run to its end or to a limit (see the module docstring); the result is the CPU
    solver's :class:`Result`. TooManyVariables for a problem of more variables than the kernels take."""
    options = options or MinimizeOptions()
    began = time.perf_counter()
    exploration = GpuExploration(problem, options, phase_subdomains=phase_subdomains, capacity=capacity)
    return run_to_end(
        exploration,
        began,
        should_stop,
        progress,
        progress_seconds,
        lambda: _gpu_details(exploration),
    )


def minimize_auto(
    problem: Problem,
    options: MinimizeOptions | None = None,
    cpu_options: MinimizeOptions | None = None,
    *,
    slice_s: float | None = None,
    load_gpu: Callable[[], None] | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_seconds: float = 0.5,
    should_stop: Callable[[], bool] | None = None,
    phase_subdomains: int = PHASE_SUBDOMAINS,
    capacity: int = CAPACITY,
) -> Result:
    """Minimize ``problem`` on the CPU first and on the GPU only when that takes long: an
    :class:`.Exploration` with ``cpu_options`` (default: ``options`` with the CPU's subdomains, on
    one thread) for ``slice_s`` seconds (default ``CPU_SLICE_S``), which touches no CUDA, and for
    one slice more where its gap is closing fast enough to end within it (:func:`closes_within`);
    its result (backend ``cpu``) when it ended there (proved, infeasible, or at ``options``' limits or a stop), else a
    :class:`GpuExploration` of every box it left, taking over its incumbent, settled bounds and
    counters (:meth:`GpuExploration.take_over`), run to the end (backend ``gpu``, nodes of both).
    ``load_gpu`` (e.g. ``load_code``) runs before the GPU's part, its time not the search's."""
    options = options or MinimizeOptions()
    check_uniform_split(options)  # before the CPU's slice, not at the hand-over
    cpu_options = cpu_options or replace(options, subdomains=CPU_SUBDOMAINS, parallel=False)
    began = time.perf_counter()
    cpu = Exploration(problem, cpu_options)
    slice_s = CPU_SLICE_S if slice_s is None else slice_s

    def ended() -> bool:
        return (
            cpu.done
            or options.limit_reached(time.perf_counter() - began, cpu.nodes)
            or (should_stop is not None and should_stop())
        )

    def run_until(seconds: float) -> None:
        stop_at = seconds if options.time_limit is None else min(seconds, options.time_limit)
        node_limit = None if options.node_limit is None else options.node_limit - cpu.nodes
        cpu.run(
            should_stop,
            stop_at - (time.perf_counter() - began),
            node_limit,
            progress=progress,
            progress_seconds=progress_seconds,
        )

    run_until(slice_s / 2)
    halfway, gap_halfway = time.perf_counter(), cpu.ub - cpu.lower_bound
    if not ended():
        run_until(slice_s)
        gap = cpu.ub - cpu.lower_bound
        # the gap at which the search ends: UB less its prune level (a threshold's too); without an
        # incumbent the gap is infinite and no tolerance is used
        tolerance = cpu.ub - cpu.level if math.isfinite(cpu.ub) else options.eps_abs
        if not ended() and closes_within(gap_halfway, gap, time.perf_counter() - halfway, tolerance, slice_s):
            run_until(2 * slice_s)
    if ended():  # run_to_end returns at once, with the slice's answer
        return run_to_end(cpu, began, should_stop, progress, progress_seconds, lambda: {"backend": "cpu"})
    cpu.settle()
    if load_gpu is not None:
        paused = time.perf_counter()
        load_gpu()
        began += time.perf_counter() - paused
    gpu = GpuExploration(problem, options, boxes=cpu.remaining(), phase_subdomains=phase_subdomains, capacity=capacity)
    gpu.take_over(cpu)
    gpu.began = began
    return run_to_end(gpu, began, should_stop, progress, progress_seconds, lambda: _gpu_details(gpu))


def closes_within(before: float, after: float, seconds: float, tolerance: float, within_s: float) -> bool:
    """Whether a gap that shrank from ``before`` to ``after`` in ``seconds``, shrinking on by the
    same factor every ``seconds``, reaches ``tolerance`` within ``within_s`` seconds (False for a
    gap that did not shrink, that is not finite, or that must close to 0). The CPU's gap at the end of the auto route's
    slice closes about geometrically where the CPU is near its end (HS071 on the 2-core machine:
    0.53, 0.10, 0.016, 0.0024 every 5 ms), and hardly moves where the GPU's many boxes are needed
    (G13, Hartmann-6, Colville)."""
    if not (math.isfinite(before) and math.isfinite(after)) or not before > after > 0 or seconds <= 0:
        return False
    if not tolerance > 0:  # a threshold met exactly by the incumbent: no geometric shrink ends there
        return False
    if after <= tolerance:
        return True
    return seconds * math.log(after / tolerance) / math.log(before / after) <= within_s


def _gpu_details(exploration: GpuExploration) -> dict:
    """A GPU search's backend and counters, for its result."""
    return {
        "backend": "gpu",
        "phases": exploration.phases,
        "reserve_spills": exploration.spills,
        "device_wait_s": round(exploration.device_wait_s, 6),
    }


def load_code(problem: Problem, options: MinimizeOptions | None = None) -> tuple[float, bool]:
    """Compile the kernels ``minimize_gpu`` runs for ``problem`` (numba-cuda compiles them in every
    process) and load the host code of its local solves: (seconds, whether anything was compiled).
    Called first, it keeps compilation out of the search's time."""
    from numba.core import event

    options = options or MinimizeOptions()
    began = time.perf_counter()
    with event.install_recorder("numba:compile") as recorder:
        tiny = replace(options, node_limit=3, time_limit=None, local_solves=False)
        minimize_gpu(problem, tiny, phase_subdomains=1, capacity=1)
        objective = NetworkObjective.of(problem)
        if objective is not None:
            load_kernel(objective.network)
        load_host_code(problem, options)
    return time.perf_counter() - began, bool(recorder.buffer)
