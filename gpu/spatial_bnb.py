"""Spatial branch-and-bound on one GPU: the open boxes live on the device, in phases.

The CPU solver's algorithm (:mod:`pbbflow.spatial.bnb`: the same bounds, contraction, hull cuts,
Lagrangian bound, prune rule and certified lower bound) with the tree on the device, after the
lecture seed's static task lists: two preallocated lists of boxes and their bounds, ``q_in`` read
and ``q_out`` appended through an atomic tail, swapped each phase (:mod:`.spatial_phase`). A phase
splits up to ``phase_subdomains / N^d`` of the lowest-bound open boxes (best first in batches),
bounds their children on all their subdomains in one launch, updates the device incumbent with
an atomic min from rigorously evaluated points and keeps the survivors. The host launches, reads
two small arrays of counters per phase, and runs the local solves (scipy) whose points it feeds
into the device incumbent. A phase costs a dozen launches whatever its size, so while the tree is
small each box is split into up to 8 children (bisected in up to 3 rounds): fewer, fuller phases.

The lists grow on demand up to ``capacity`` boxes. Before a phase that could overflow ``q_out``
there, the open boxes are sorted and the upper half by bound moves to a host reserve; it comes
back, lowest bounds first, when the device runs short of work. No box is ever dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numba import config, cuda

from ..spatial.bnb import (BOUNDS, MinimizeOptions, MinimizeResult, Progress, _Incumbent, _LocalSolver,
                           load_host_code, make_result, prune_level, subdomains_per_dim)
from ..spatial.lagrangian import lagrangian_bound, multipliers
from ..spatial.problem import Problem
from . import spatial_phase as phase
from .spatial_contract import contract_boxes_device
from .spatial_kernels import (THREADS_PER_BLOCK, DeviceBoxBounds, DeviceTape, TapeTooLarge, blocks, bound_on_device,
                              caps, fill_edges)

config.CUDA_LOW_OCCUPANCY_WARNINGS = False  # early phases bound few boxes by design
PHASE_SUBDOMAINS = 1 << 21  # subdomain bounds per phase at most (about 30 ms of an H200 on the peaks ANN)
MIN_PHASE_SUBDOMAINS = 1 << 17  # below this a phase splits its boxes into up to 8 (see _levels)
INITIAL_BOXES = 256  # the lists' and the children's first capacity (they grow fourfold on demand)
CAPACITY = 1 << 20  # open boxes on the device (beyond them, a host reserve)
LOCAL_EVERY_SUBDOMAINS = 1 << 22  # a local solve per this many subdomains bounded (a schedule by work done)


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


class _Children:
    """The device arrays of the boxes bounded in one phase, grown on demand up to ``largest``."""

    def __init__(self, capacity: int, largest: int, n_vars: int, n_per_dim: int):
        self.largest, self.n_vars, self.n_per_dim = largest, n_vars, n_per_dim
        self.bounds_l: DeviceBoxBounds | None = None  # allocated with the first Lagrangian bound
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
        self.candidate = cuda.device_array(capacity, np.float64)
        self.kept_lb = cuda.device_array(capacity, np.float64)
        self.bounds = DeviceBoxBounds(capacity, n_vars, n_per_dim**n_vars)
        if self.bounds_l is not None:
            self.bounds_l = DeviceBoxBounds(capacity, n_vars, n_per_dim**n_vars)

    def ensure(self, needed: int) -> None:
        """Room for ``needed`` children (their contents are not kept)."""
        if needed > self.capacity:
            self._allocate(_grown(self.capacity, needed, self.largest))

    def lagrangian_bounds(self) -> DeviceBoxBounds:
        if self.bounds_l is None:
            self.bounds_l = DeviceBoxBounds(self.capacity, self.n_vars, self.n_per_dim**self.n_vars)
        return self.bounds_l


def _levels(selected: int, n_subdomains: int, room: int) -> int:
    """Bisection rounds per selected box this phase: more while the phase would bound fewer than
    :data:`MIN_PHASE_SUBDOMAINS` subdomains (a phase costs launches whatever its size, so small
    trees take fewer, fuller phases), within ``room`` children and :data:`.spatial_phase.MAX_LEVELS`."""
    target = min(room, max(2 * selected, MIN_PHASE_SUBDOMAINS // n_subdomains))
    levels = 1
    while levels < phase.MAX_LEVELS and selected << (levels + 1) <= target:
        levels += 1
    return levels


def minimize_gpu(problem: Problem, options: MinimizeOptions | None = None, *,
                 progress: Callable[[Progress], None] | None = None, progress_seconds: float = 0.5,
                 should_stop: Callable[[], bool] | None = None, phase_subdomains: int = PHASE_SUBDOMAINS,
                 capacity: int = CAPACITY) -> MinimizeResult:  # fmt: skip
    """Minimize ``problem`` by spatial B&B on the current GPU (see the module docstring); the
    result is the CPU solver's :class:`MinimizeResult`. TapeTooLarge for tapes beyond the kernels'
    caps."""
    options = options or MinimizeOptions()
    began = time.perf_counter()
    tape, d = problem.tape, problem.dimension
    n_per_dim = subdomains_per_dim(options.subdomains, d)
    n_subdomains = n_per_dim**d
    mode = int(BOUNDS[options.bound])
    eps_abs, eps_rel, feas_tol = float(options.eps_abs), float(options.eps_rel), float(options.feas_tol)
    dtape = DeviceTape.upload(tape)
    offer_candidates = phase.candidate_kernel(*caps(tape)[:2])
    per_phase = max(1, int(phase_subdomains) // n_subdomains)  # boxes bisected per phase at most
    capacity = max(int(capacity), 4 * per_phase)
    lists = [_BoxList(INITIAL_BOXES, capacity, d), _BoxList(INITIAL_BOXES, capacity, d)]
    children = _Children(INITIAL_BOXES, 2 * per_phase, d, n_per_dim)
    real = cuda.to_device(np.full(phase.N_REAL, np.inf))
    count = cuda.to_device(np.zeros(phase.N_COUNT, np.int64))
    scale = cuda.to_device(problem.upper - problem.lower)
    incumbent = _Incumbent(problem, feas_tol)
    local = _LocalSolver(problem, incumbent) if options.local_solves else None
    reserve = _Reserve(d)
    lagrangian: tuple[DeviceTape, float] | None = None
    nodes = phases = spills = 0
    waited = 0.0  # seconds the host waited for the device: the kernels' share, roughly

    def read(array) -> np.ndarray:
        """A small device array on the host (the wait for the kernels before it is counted)."""
        nonlocal waited
        began_read = time.perf_counter()
        values = array.copy_to_host()
        waited += time.perf_counter() - began_read
        return values

    next_local = LOCAL_EVERY_SUBDOMAINS
    next_report = began + progress_seconds

    def bound_children(n_children: int, out: _BoxList) -> tuple[np.ndarray, np.ndarray]:
        """Contract, bound, offer and keep children 0 .. n_children - 1 into ``out``; the counters."""
        nonlocal nodes
        nodes += n_children
        grid = blocks(n_children)
        if options.contract:
            contract_boxes_device(dtape, children.lo, children.hi, n_children, real[phase.R_UB:phase.R_UB + 1],
                                  feas_tol, children.emptied)
        fill_edges[grid, THREADS_PER_BLOCK](n_children, children.lo, children.hi, children.edges)
        slack = lagrangian[1] if lagrangian is not None else 0.0
        phase.fill_levels[grid, THREADS_PER_BLOCK](n_children, real, eps_abs, eps_rel, slack, children.threshold,
                                                   children.threshold_l)
        found = children.bounds
        bound_on_device(dtape, n_children, children.emptied, children.edges, n_per_dim, mode, feas_tol,
                        children.threshold, found)
        offer_candidates[grid, THREADS_PER_BLOCK](*dtape.arrays, tape.n_ineq, dtape.varying, n_children,
                                                  found.best_point, feas_tol, children.candidate, real)
        by_l = found
        if lagrangian is not None:
            by_l = children.lagrangian_bounds()
            bound_on_device(lagrangian[0], n_children, children.emptied, children.edges, n_per_dim, mode, feas_tol,
                            children.threshold_l, by_l)
        phase.keep[grid, THREADS_PER_BLOCK](
            n_children, children.lo, children.hi, children.emptied, found.box_lb, found.hull_lo, found.hull_hi,
            children.threshold, lagrangian is not None, by_l.box_lb, by_l.hull_lo, by_l.hull_hi, slack, eps_abs,
            eps_rel, real, count, children.kept_lb, out.lo, out.hi, out.lb)
        phase.claim[grid, THREADS_PER_BLOCK](n_children, children.candidate, children.kept_lb, real, count)
        return read(real), read(count)

    def take_incumbent(reals: np.ndarray, counts: np.ndarray) -> None:
        """The device's incumbent, when one of this phase's children holds it."""
        child = int(counts[phase.C_UB_CHILD])
        if child != phase.NONE and reals[phase.R_UB] < incumbent.value:
            incumbent.value = float(reals[phase.R_UB])
            incumbent.x = children.bounds.best_point[child].copy_to_host()

    def solve_locally(start: np.ndarray) -> None:
        """A local solve; one that improves the incumbent of a constrained problem brings a
        Lagrangian bound (skipped when its tape is beyond the kernels' caps)."""
        nonlocal lagrangian
        optimum = local.run(start)
        if optimum is None or not (tape.n_ineq or tape.n_eq):
            return
        weights = multipliers(tape, optimum)
        if weights is None:
            return
        bound_l = lagrangian_bound(tape, *weights, feas_tol)
        try:
            lagrangian = (DeviceTape.upload(bound_l.tape), float(bound_l.slack))
        except TapeTooLarge:
            pass

    phase.begin_phase[1, 1](real, count, math.inf)
    children.lo[0:1] = problem.lower[None, :].copy()
    children.hi[0:1] = problem.upper[None, :].copy()
    current = 0
    reals, counts = bound_children(1, lists[current])
    take_incumbent(reals, counts)
    root_point = children.bounds.best_point[0].copy_to_host()
    if local is not None and np.all(np.isfinite(root_point)):
        solve_locally(root_point)
    n_open, open_lowest = int(counts[phase.C_OUT]), float(reals[phase.R_OPEN_MIN])
    status = None
    while True:
        now = time.perf_counter()
        level = prune_level(incumbent.value, options)
        lowest = min(open_lowest, reserve.lowest())
        if progress is not None and now >= next_report:
            overall = min(lowest, reals[phase.R_PRUNED], reals[phase.R_UNSPLIT])
            objective = None if incumbent.x is None else incumbent.value
            progress(Progress(float(overall), objective, n_open + len(reserve), nodes, now - began))
            next_report = now + progress_seconds
        if (n_open == 0 and not len(reserve)) or lowest >= level:
            break
        if options.limit_reached(now - began, nodes) or (should_stop is not None and should_stop()):
            status = "limit"
            break
        source = lists[current]
        if n_open < per_phase and len(reserve):
            lo, hi, lb = reserve.take(per_phase - n_open)
            source.upload(n_open, lo, hi, lb)
            n_open += len(lb)
            open_lowest = min(open_lowest, float(lb.min()))
        selected = min(per_phase, n_open)
        levels = _levels(selected, n_subdomains, 2 * per_phase)
        if n_open + selected * ((1 << levels) - 1) > capacity:  # q_out could overflow: half waits on the host
            lo, hi, lb = source.download(n_open)
            order = np.argsort(lb, kind="stable")
            stay, leave = order[: capacity // 2], order[capacity // 2:]
            reserve.put(lo[leave], hi[leave], lb[leave])
            source.upload(0, lo[stay], hi[stay], lb[stay])
            n_open = len(stay)
            selected = min(per_phase, n_open)
            levels = _levels(selected, n_subdomains, 2 * per_phase)
            spills += 1
        select_lb = math.inf
        if n_open > selected:
            select_lb = float(np.partition(source.lb[:n_open].copy_to_host(), selected - 1)[selected - 1])
        target = lists[1 - current]
        target.ensure(n_open + selected * ((1 << levels) - 1), 0)
        children.ensure(selected << levels)
        phase.begin_phase[1, 1](real, count, incumbent.value)
        phase.branch[blocks(n_open), THREADS_PER_BLOCK](
            n_open, source.lo, source.hi, source.lb, select_lb, selected, levels, scale, eps_abs, eps_rel, real,
            count, target.lo, target.hi, target.lb, children.lo, children.hi)
        n_children = int(read(count)[phase.C_CHILDREN])
        phases += 1
        if n_children:
            reals, counts = bound_children(n_children, target)
            take_incumbent(reals, counts)
        else:
            reals, counts = read(real), read(count)
        current = 1 - current
        n_open, open_lowest = int(counts[phase.C_OUT]), float(reals[phase.R_OPEN_MIN])
        best_kept = int(counts[phase.C_BEST_KEPT])
        if local is not None and nodes * n_subdomains >= next_local and best_kept != phase.NONE:
            next_local = nodes * n_subdomains + LOCAL_EVERY_SUBDOMAINS
            solve_locally(children.bounds.best_point[best_kept].copy_to_host())
    level = prune_level(incumbent.value, options)
    lower_bound = float(min(open_lowest, reserve.lowest(), reals[phase.R_PRUNED], reals[phase.R_UNSPLIT]))
    unsplittable = int(counts[phase.C_UNSPLIT])
    open_below = unsplittable + int(np.count_nonzero(reserve.lb < level))
    if n_open:
        open_below += int(np.count_nonzero(lists[current].lb[:n_open].copy_to_host() < level))
    return make_result(problem, options, incumbent, local, status, unsplittable, lower_bound, nodes, n_subdomains,
                       began, open_below, backend="gpu", phases=phases, reserve_spills=spills,
                       device_wait_s=round(waited, 6))


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
        load_host_code(problem, options)
    return time.perf_counter() - began, bool(recorder.buffer)
