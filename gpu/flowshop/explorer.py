"""The GPU explorer: K IVMs on one device, with the CPU explorer's contract.

``GpuExplorer`` keeps its IVMs on the device between calls, so an explorer task that the
coordinator tells to continue does not reload anything: ``load`` a work unit (at most K
intervals), ``run`` under a UB for a budget, read ``remaining`` (a ``PackedUnit`` built from
the IVMs' digit vectors in numba, no Python integer per interval) and ``best``.
``explore_gpu`` is the one-shot form, returning an ``ExploreResult`` like ``flowshop.explorer``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import cuda

from ...core.errors import GpuError
from ...flowshop.bounds import head_tail_minima
from ...flowshop.choices import DEFAULT_BRANCH, GPU_BOUND, branch_code
from ...flowshop.explorer import ExploreResult, Snapshot
from ...flowshop.intervals import WorkUnit
from ...flowshop.ivm import DEVICE_COLUMNS, DONE, INIT
from ...flowshop.packed import PackedUnit, limbs
from .. import default_ivms
from ..warp import WARP, WARPS_PER_BLOCK
from . import kernels as K
from .factoradic import limbs_to_digits

STEAL_BELOW = 0.8  # steal when fewer than this share of the IVMs is busy (paper, section 3.3)
VICTIM_SLACK = 2  # victims: intervals within this many leading factoradic digits of the largest
# Nodes per IVM and explore launch.  A launch has a fixed cost (each block stages the instance, each IVM
# loads and stores its state), worth about 3 node steps on ta056; an idle IVM waits up to one launch for a
# steal.  128 was the fastest on both size classes of an H100 (gpu_launch_steps_h100_2026-12-06.json): ta056
# from 3680 at 764 M nodes/s (9 ms launches) against 646 with launches sized to 2 ms (16 steps); ta021-ta030
# in 5.70 s against 6.01 (2 ms launches at 128, and no ramp from a few steps on the small trees).
STEPS = 128


@dataclass(frozen=True)
class RunCounts:
    """What one ``GpuExplorer.run`` call did."""

    nodes: int
    leaves: int
    launches: int
    peak_active: int  # the most IVMs busy in one launch
    kernel_s: float  # device time of the explore launches (CUDA events), the rest is stealing and waiting


class _Launch:
    """One explore launch's buffers: its counters on the device and, pinned on the host, their copy,
    the UB after it and the zeros it starts from; ``began`` and ``done`` are recorded on the stream
    before the kernel and after the copies."""

    def __init__(self) -> None:
        self.device_counters = cuda.to_device(np.zeros(K.N_COUNTERS, np.int64))
        self.counters = cuda.pinned_array(K.N_COUNTERS, np.int64)
        self.ub = cuda.pinned_array(1, np.int32)
        self.zero = cuda.pinned_array(K.N_COUNTERS, np.int64)
        self.zero[:] = 0
        self.began, self.done = cuda.event(), cuda.event()


def device_summary() -> dict:
    """Name and memory of the current device (for reports)."""
    device = cuda.get_current_device()
    free, total = cuda.current_context().get_memory_info()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    return {"gpu": name, "device_memory_total": int(total), "device_memory_free": int(free)}


class GpuExplorer:
    """K IVMs of one instance on the current device."""

    def __init__(
        self,
        p: np.ndarray,
        *,
        ivms: int | None = None,
        bound: str = GPU_BOUND,
        branch: str = DEFAULT_BRANCH,
    ) -> None:
        if bound != GPU_BOUND:
            raise GpuError(f"the GPU explorer bounds with {GPU_BOUND} only, not {bound!r}")
        if not cuda.is_available():
            raise GpuError("no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and the driver)")
        p = np.ascontiguousarray(p, dtype=np.int32)
        n, m = p.shape
        if n > K.MAX_CHUNKS * WARP:
            raise GpuError(f"the GPU explorer handles up to {K.MAX_CHUNKS * WARP} jobs, not {n}")
        if m > K.MAX_MACHINES:
            raise GpuError(f"the GPU explorer handles up to {K.MAX_MACHINES} machines, not {m}")
        ivms = default_ivms(n) if ivms is None else ivms
        if ivms < 1:
            raise GpuError("ivms must be >= 1")
        self.n, self.m, self.k = n, m, ivms
        self.kernel = K.explore_kernel(n, m)
        self.branch = branch_code(branch)
        heads, tails = head_tail_minima(p)
        self.p, self.heads, self.tails = cuda.to_device(p), cuda.to_device(heads), cuda.to_device(tails)
        self.M = cuda.device_array((ivms, n, n), np.int16)
        self.V = cuda.to_device(np.zeros((ivms, n), np.int32))
        self.dirs = cuda.to_device(np.zeros((ivms, n), np.int32))
        self.F, self.B, self.R = (cuda.device_array((ivms, n + 1, m), np.int32) for _ in range(3))
        self.end = cuda.to_device(np.zeros((ivms, n + 1), np.int32))
        self.start = cuda.to_device(np.zeros((ivms, n + 1), np.int32))
        state = np.zeros((ivms, DEVICE_COLUMNS), np.int64)
        state[:, DONE] = 1
        self.state = cuda.to_device(state)
        self.bounds = cuda.device_array((ivms, 2, limbs(n)), np.uint64)  # remaining()'s intervals
        self.best_schedule = cuda.to_device(np.zeros((ivms, n), np.int32))
        self.best_cost = cuda.to_device(np.full(ivms, np.iinfo(np.int32).max, np.int32))
        self.ub = cuda.to_device(np.zeros(1, np.int32))
        self.stream = cuda.stream()
        self.slots = (_Launch(), _Launch())  # one launch running, the next queued behind it
        self.steal_counters = cuda.to_device(np.zeros(K.N_COUNTERS, np.int64))
        self.steal_start = cuda.pinned_array(K.N_COUNTERS, np.int64)
        self.steal_start[:] = 0
        self.steal_start[K.C_MIN_LEADING] = n + 1
        self.idle = cuda.device_array(ivms, np.int32)
        self.victims = cuda.device_array(ivms, np.int32)
        self.steps = STEPS
        self.pack_sums = n * int(p.astype(np.int64).sum()) < 2**31  # every child LB sum fits in 31 bits
        self.initial_ub: int | None = None

    @property
    def memory_bytes(self) -> int:
        """Device memory held by the IVMs and the instance."""
        arrays = (
            self.M,
            self.V,
            self.dirs,
            self.F,
            self.B,
            self.R,
            self.end,
            self.start,
            self.state,
            self.bounds,
            self.best_schedule,
            self.best_cost,
            self.idle,
            self.victims,
            self.p,
        )
        return int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ work in and out
    def load(self, unit: PackedUnit | WorkUnit) -> None:
        """Replace the IVMs' work by ``unit`` (at most K intervals): one interval per IVM."""
        if isinstance(unit, WorkUnit):
            unit = PackedUnit.from_work_unit(unit)
        if unit.n != self.n:
            raise ValueError(f"work unit is for n={unit.n}, instance has n={self.n}")
        count = len(unit)
        if count > self.k:
            raise GpuError(f"{count} intervals for {self.k} IVMs: ask the coordinator for at most {self.k}")
        starts = np.zeros((self.k, self.n + 1), np.int32)
        ends = np.zeros((self.k, self.n + 1), np.int32)
        limbs_to_digits(np.ascontiguousarray(unit.bounds[:, 0, :]), starts[:count])
        limbs_to_digits(np.ascontiguousarray(unit.bounds[:, 1, :]), ends[:count])
        state = np.zeros((self.k, DEVICE_COLUMNS), np.int64)
        state[count:, DONE] = 1
        state[:count, INIT] = 1
        self.start.copy_to_device(starts)
        self.end.copy_to_device(ends)
        self.state.copy_to_device(state)
        self.best_cost.copy_to_device(np.full(self.k, np.iinfo(np.int32).max, np.int32))

    def remaining(self) -> PackedUnit:
        """What the IVMs have not explored yet (packed into limbs on the device: ``kernels.pack_work``)."""
        threads = 128
        K.pack_work[(self.k + threads - 1) // threads, threads, self.stream](
            self.V, self.start, self.end, self.state, self.bounds
        )
        state = self.state.copy_to_host(stream=self.stream)
        bounds = self.bounds.copy_to_host(stream=self.stream)
        self.stream.synchronize()
        return PackedUnit.from_disjoint_bounds(self.n, bounds[state[:, DONE] == 0])

    def best(self) -> tuple[int, np.ndarray] | None:
        """The best schedule found below the UB of the last ``run`` start, if any."""
        costs = self.best_cost.copy_to_host()
        winner = int(np.argmin(costs))
        if self.initial_ub is None or costs[winner] >= self.initial_ub:
            return None
        return int(costs[winner]), self.best_schedule.copy_to_host()[winner].copy()

    # ------------------------------------------------------------------ exploring
    def run(
        self,
        ub: int,
        *,
        max_seconds: float | None = None,
        max_nodes: int | None = None,
        steps: int | None = None,
        on_launch: Callable[[int, int, int], bool | None] | None = None,
    ) -> RunCounts:
        """Explore under ``ub`` until the work is done or a budget is reached (checked between launches).

        ``steps``: nodes per IVM and launch, from this call on (default: ``STEPS``, or the last call's).
        ``on_launch(nodes, leaves, ub)`` is called after every launch with the totals of this
        call; it returns True to stop here (e.g. when other explorers wait for work).
        The next launch is queued before the host reads a launch's counters, so that the device
        never waits for Python: a stop takes effect one launch later, and that launch's nodes count.
        """
        if steps is not None:
            self.steps = steps
        self.initial_ub = ub
        self.ub.copy_to_device(np.array([ub], np.int32))
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        nodes = leaves = launches = peak_active = 0
        kernel_s = 0.0
        queued = [self._enqueue(self.slots[0])]
        stopping = False
        while queued:
            launch = queued.pop(0)
            if not stopping:
                queued.append(self._enqueue(self.slots[1] if launch is self.slots[0] else self.slots[0]))
            launch.done.synchronize()
            elapsed = launch.began.elapsed_time(launch.done) / 1000
            kernel_s += elapsed
            launches += 1
            nodes += int(launch.counters[K.C_NODES])
            leaves += int(launch.counters[K.C_LEAVES])
            active = int(launch.counters[K.C_ACTIVE])
            peak_active = max(peak_active, active)
            if stopping:
                continue
            stopping = (
                active == 0
                or (on_launch is not None and bool(on_launch(nodes, leaves, int(launch.ub[0]))))
                or (deadline is not None and time.monotonic() >= deadline)
                or (max_nodes is not None and nodes >= max_nodes)
            )
            if stopping:
                continue
            if active < STEAL_BELOW * self.k:
                self._steal()
        return RunCounts(nodes, leaves, launches, peak_active, kernel_s)

    def _enqueue(self, launch: _Launch) -> _Launch:
        """Queue one explore launch of ``self.steps`` nodes per IVM on the stream, and the copy of its
        counters and of the UB back to ``launch``'s host buffers."""
        launch.device_counters.copy_to_device(launch.zero, stream=self.stream)
        launch.began.record(self.stream)
        self.kernel[(self.k + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK, WARP * WARPS_PER_BLOCK, self.stream](
            self.p,
            self.heads,
            self.tails,
            self.M,
            self.V,
            self.dirs,
            self.F,
            self.B,
            self.R,
            self.end,
            self.start,
            self.state,
            self.best_schedule,
            self.best_cost,
            self.ub,
            launch.device_counters,
            self.steps,
            self.branch,
            self.pack_sums,
        )
        launch.device_counters.copy_to_host(launch.counters, stream=self.stream)
        self.ub.copy_to_host(launch.ub, stream=self.stream)
        launch.done.record(self.stream)
        return launch

    def _steal(self) -> None:
        """Queue a round of stealing on the stream: idle IVMs take half of a busy one's interval."""
        self.steal_counters.copy_to_device(self.steal_start, stream=self.stream)
        threads = 128
        blocks = (self.k + threads - 1) // threads
        launch = blocks, threads, self.stream
        K.classify[launch](self.V, self.end, self.state, self.idle, self.steal_counters)
        K.list_victims[launch](self.V, self.end, self.state, self.victims, self.steal_counters, VICTIM_SLACK)
        K.steal[launch](self.V, self.end, self.start, self.state, self.idle, self.victims, self.steal_counters)


def compile_kernels(p: np.ndarray, branch: str = DEFAULT_BRANCH) -> None:
    """Compile (or load from numba's cache) the kernels for this instance's size on the current
    device: a short run on 64 IVMs that launches the explore kernel twice and steals between,
    then reads the IVMs' work back (the host code of ``remaining``)."""
    explorer = GpuExplorer(p, ivms=64, branch=branch)
    explorer.load(WorkUnit.full(explorer.n))
    launches = 0

    def second_launch(nodes: int, leaves: int, ub: int) -> bool:
        nonlocal launches
        launches += 1
        return launches >= 2

    explorer.run(int(np.asarray(p, dtype=np.int64).sum()), steps=4, on_launch=second_launch)
    explorer.remaining()


def explore_gpu(
    p: np.ndarray,
    work: WorkUnit,
    ub: int,
    *,
    bound: str = GPU_BOUND,
    branch: str = DEFAULT_BRANCH,
    ivms: int | None = None,
    max_nodes: int | None = None,
    max_seconds: float | None = None,
    on_progress: Callable[[Snapshot], None] | None = None,
) -> ExploreResult:
    """``flowshop.explorer.explore`` on the GPU: same arguments (``ivms`` for ``threads``), same result."""
    started = time.monotonic()
    explorer = GpuExplorer(p, ivms=ivms, bound=bound, branch=branch)
    explorer.load(work)

    next_report = started + 1.0

    def progress(nodes: int, leaves: int, current_ub: int) -> None:
        nonlocal next_report
        if on_progress is not None and time.monotonic() >= next_report:
            next_report += 1.0
            on_progress(Snapshot(nodes, leaves, current_ub, time.monotonic() - started))

    counts = explorer.run(ub, max_seconds=max_seconds, max_nodes=max_nodes, on_launch=progress)
    best = explorer.best()
    return ExploreResult(
        remaining=explorer.remaining().to_work_unit(),
        nodes=counts.nodes,
        leaves=counts.leaves,
        best_makespan=None if best is None else best[0],
        best_permutation=None if best is None else best[1],
        elapsed_s=time.monotonic() - started,
    )
