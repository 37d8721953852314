"""Subdomain lower bounds of a tape on the GPU: B boxes x N^d subdomains, one thread per subdomain.

Each thread runs the CPU's subdomain bounder (:func:`pbbflow.spatial.bounds._bound_chunk` with
one lane: NIE, interval tangents for the mean value form, f at the centre as a point interval,
the intersection by mode, the kink fallback, the drop rule) compiled for the device with the
device interval operations of :mod:`.interval` (:func:`~.interval.device_twin`),
so the GPU bounds the same subdomains by the same rules as the CPU. The per-box reduction is on
the device too: atomics for the lowest bound, the counts and the lowest/highest cell along each
axis of the subdomains below the box's threshold, a second kernel for the first subdomain
reaching the lowest bound, and a third, one thread per box, for its midpoint and the hull. The
subdomain edges are computed on the device (:func:`fill_edges`, equal to the CPU's bit for bit),
so boxes that live on the device are bounded without a transfer (:func:`bound_on_device`).

The interpreters' scratch of a tape's size (its slots, tangents and outputs) lives in a device
:class:`Workspace` per tape, the thread index last, so adjacent threads touch adjacent addresses;
only the variables' few values are ``cuda.local.array``s (:data:`MAX_VARS`). The kernels are
therefore generic over the tape: one compiled kernel serves every problem (numba's disk cache keeps
it between processes). A kernel runs a grid-stride loop over its items on as many threads as the
workspace holds: the device's resident threads at most, fewer where the tape is so large that
their scratch would pass :func:`workspace_budget`.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import cuda, float64, int64
from numba.cuda import libdevice

from ...spatial import bounds as cpu
from ...spatial.bounds import BoxBounds, Mode, checked_request
from ...spatial.tape import Tape
from ..warp import SIMULATED
from . import interval as spatial_interval
from .interval import device_twin

MAX_VARS = 8  # the variables' local arrays (and the N^d subdomain split) are sized by it
THREADS_PER_BLOCK = 32 if SIMULATED else 128
_NO_SUBDOMAIN = np.iinfo(np.int64).max


def _source_stamp() -> int:
    """A digest of the files whose code the cached kernels compile besides their own (the CPU
    bodies and interval operations they twin). It sits in each cached kernel's closure, which
    numba's disk cache hashes into the entry's key: the cache checks only the kernel's own file,
    so without it an edited ``spatial/bounds.py`` would run a stale kernel."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in (
        here.parent.parent / "spatial" / "bounds.py",
        here.parent.parent / "spatial" / "interval.py",
        here.parent.parent / "spatial" / "contract.py",
        here.parent.parent / "spatial" / "opcodes.py",
        here.parent.parent / "spatial" / "tape.py",
        here / "interval.py",
        here / "kernels.py",
        here / "phase.py",
    ):
        digest.update(path.read_bytes())
    return int(digest.hexdigest()[:15], 16)


SOURCE_STAMP = _source_stamp()
_NAMESPACE = dict(vars(cpu))
_NAMESPACE["iv"] = spatial_interval
for _name in (
    "_subdomain",
    "_midpoint",
    "_unary_derivative",
    "_binary_derivatives",
    "_values",
    "_linear_tangents",
    "_run_tape",
    "_interval_ball",
    "_normalized_ball",
    "_ball_op",
    "_narrowed",
    "_run_point_tape",
    "_mean_value_form",
    "_bound_chunk",
):
    _NAMESPACE[_name] = device_twin(getattr(cpu, _name), _NAMESPACE)
del _name
_bound_chunk = _NAMESPACE["_bound_chunk"]
_subdomain = _NAMESPACE["_subdomain"]
_midpoint = _NAMESPACE["_midpoint"]


run_tape = _NAMESPACE["_run_tape"]
run_point_tape = _NAMESPACE["_run_point_tape"]


class TooManyVariables(ValueError):
    """A problem of more variables than the GPU kernels take (:data:`MAX_VARS`)."""


def blocks(n: int) -> int:
    """Blocks of THREADS_PER_BLOCK covering n threads (at least one)."""
    return max(1, -(-n // THREADS_PER_BLOCK))


SIMULATED_THREADS = 2 * THREADS_PER_BLOCK  # the simulator's threads per launch: its grid-stride loops turn


def workspace_budget() -> int:
    """Bytes of device memory one tape's workspace may take: an eighth of the device's, at most 8 GiB."""
    if SIMULATED:
        return 1 << 30
    return min(cuda.current_context().get_memory_info().total // 8, 8 << 30)


def resident_threads() -> int:
    """Threads the device runs at once (more per launch only wait)."""
    if SIMULATED:
        return SIMULATED_THREADS
    device = cuda.get_current_device()
    return device.MULTIPROCESSOR_COUNT * device.MAX_THREADS_PER_MULTIPROCESSOR


class Workspace:
    """A tape's per-thread device scratch, the thread index last: ``slots`` float64
    (tape size, :func:`slot_columns`, threads), ``per_output`` float64 (4 x outputs, threads) and
    ``flags`` bool (tape size, threads). The bounding, candidate and contracting kernels each take a
    thread's views of it (:func:`_thread_scratch` and the kernels' own slices). Allocated at the
    first launch, grown up to :meth:`cap` threads."""

    def __init__(self, tape: Tape):
        self.size, self.n_outputs = tape.size, len(tape.outputs)
        self.columns = slot_columns(tape.n_vars)
        self.threads = 0
        self.slots = self.per_output = self.flags = None
        self._cap = 0

    def bytes_per_thread(self) -> int:
        return 8 * (self.size * self.columns + 4 * self.n_outputs) + self.size

    def cap(self) -> int:
        """Threads at most: resident, within the budget, whole blocks, at least one block (asked of
        the device once: a driver call per launch would cost more than small launches)."""
        if not self._cap:
            fits = workspace_budget() // self.bytes_per_thread()
            self._cap = blocks(max(THREADS_PER_BLOCK, min(resident_threads(), fits))) * THREADS_PER_BLOCK
        return self._cap

    def grid(self, n_items: int) -> int:
        """The blocks of a launch over ``n_items`` items (at least one), the workspace grown to hold them."""
        threads = min(blocks(n_items) * THREADS_PER_BLOCK, self.cap())
        if threads > self.threads:
            self.slots = cuda.device_array((self.size, self.columns, threads), np.float64)
            self.per_output = cuda.device_array((4 * self.n_outputs, threads), np.float64)
            self.flags = cuda.device_array((self.size, threads), np.bool_)
            self.threads = threads
        return threads // THREADS_PER_BLOCK


def slot_columns(n_vars: int) -> int:
    """Scratch values per tape slot and thread: the bounder's enclosure and tangents (2 + 2 d), the
    candidate check's seven point arrays."""
    return max(2 + 2 * n_vars, 7)


@cuda.jit(device=True)
def grid_stride():
    """(this thread's index, the threads of the launch): a kernel takes items t, t + stride, ..."""
    return int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x, int64(cuda.gridDim.x) * cuda.blockDim.x


@functools.cache
def bounding_kernel():
    """The kernel bounding subdomain ``t % n_subdomains`` of box ``t // n_subdomains`` for items
    ``t`` < n_boxes * n_subdomains, a grid-stride loop on the threads of the workspace.

    Writes ``sub_lb[box, s]`` (+inf when dropped), atomically lowers ``box_lb[box]``, counts kept and
    fallback subdomains, and lowers ``cell_lo``/raises ``cell_hi`` (B, d) for the kept subdomains
    whose bound is below ``threshold[box]``. Boxes with ``skip[box]`` set are not bounded (all
    their subdomains dropped)."""

    stamp = SOURCE_STAMP

    @cuda.jit(cache=True)
    def bound_subdomains(
        op,
        arg0,
        arg1,
        const_lo,
        const_hi,
        outputs,
        n_ineq,
        varying,
        n_boxes,
        skip,
        edges,
        n_per_dim,
        n_subdomains,
        mode,
        feas_tol,
        threshold,
        sub_lb,
        box_lb,
        n_kept,
        n_fallback,
        cell_lo,
        cell_hi,
        slots,
        per_output,
    ):
        j, stride = grid_stride()
        if stamp < 0:
            return
        n_vars = edges.shape[1]
        n_out = len(outputs)
        scratch_lo = slots[:, 0, j : j + 1]
        scratch_hi = slots[:, 1, j : j + 1]
        tlo = slots[:, 2 : 2 + n_vars, j : j + 1]
        thi = slots[:, 2 + n_vars : 2 + 2 * n_vars, j : j + 1]
        center_lo = per_output[0:n_out, j : j + 1]
        center_hi = per_output[n_out : 2 * n_out, j : j + 1]
        mvf_lo = per_output[2 * n_out : 3 * n_out, j]
        mvf_hi = per_output[3 * n_out : 4 * n_out, j]
        kink = cuda.local.array(1, np.bool_)
        x_lo = cuda.local.array((MAX_VARS, 1), float64)
        x_hi = cuda.local.array((MAX_VARS, 1), float64)
        center = cuda.local.array((MAX_VARS, 1), float64)
        cells = cuda.local.array((2, MAX_VARS), int64)
        for t in range(j, n_boxes * n_subdomains, stride):
            box = t // n_subdomains
            s = t % n_subdomains
            if skip[box]:
                sub_lb[box, s] = math.inf
                continue
            for i in range(n_vars):
                cells[0, i] = n_per_dim
                cells[1, i] = -1
            best, _, kept, fallbacks = _bound_chunk(
                op,
                arg0,
                arg1,
                const_lo,
                const_hi,
                outputs,
                n_ineq,
                varying,
                edges,
                box,
                s,
                1,
                n_per_dim,
                mode,
                feas_tol,
                threshold[box],
                cells[:, :n_vars],
                scratch_lo,
                scratch_hi,
                tlo,
                thi,
                kink,
                x_lo[:n_vars],
                x_hi[:n_vars],
                center[:n_vars],
                center_lo,
                center_hi,
                mvf_lo,
                mvf_hi,
            )
            sub_lb[box, s] = best
            if kept > 0:
                cuda.atomic.add(n_kept, box, 1)
                if best < math.inf:
                    cuda.atomic.min(box_lb, box, best)
            if fallbacks > 0:
                cuda.atomic.add(n_fallback, box, 1)
            if cells[1, 0] >= 0:
                for i in range(n_vars):
                    cuda.atomic.min(cell_lo, (box, i), cells[0, i])
                    cuda.atomic.max(cell_hi, (box, i), cells[1, i])

    return bound_subdomains


if SIMULATED:  # the simulator's libdevice stubs return None; Python's float operations round to nearest

    @cuda.jit(device=True)
    def mul_nearest(a, b):
        return a * b

    @cuda.jit(device=True)
    def add_nearest(a, b):
        return a + b

else:  # never contracted into an fma, so the edges equal numpy's bit for bit

    @cuda.jit(device=True)
    def mul_nearest(a, b):
        return libdevice.dmul_rn(a, b)

    @cuda.jit(device=True)
    def add_nearest(a, b):
        return libdevice.dadd_rn(a, b)


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def fill_edges(n_boxes, box_lo, box_hi, edges):
    """``edges[box]`` (d, n + 1) = :func:`pbbflow.spatial.bounds.subdomain_edges` of the box, bit for
    bit (one thread per box)."""
    box = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
    if box >= n_boxes:
        return
    n = edges.shape[2] - 1
    for i in range(edges.shape[1]):
        lo = box_lo[box, i]
        hi = box_hi[box, i]
        width = hi - lo
        running = -math.inf
        for j in range(n + 1):
            fraction = float64(j) / float64(n)
            if math.isinf(width):
                edge = add_nearest(mul_nearest(lo, 1.0 - fraction), mul_nearest(hi, fraction))
            else:
                edge = add_nearest(lo, mul_nearest(width, fraction))
            running = max(running, edge)
            edges[box, i, j] = min(max(running, lo), hi)
        edges[box, i, 0] = lo
        edges[box, i, n] = hi


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def _reset_boxes(n_boxes, n_per_dim, box_lb, n_kept, n_fallback, cell_lo, cell_hi, best_s):
    """Clear the per-box reductions of boxes 0 .. n_boxes - 1 before they are bounded."""
    box = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
    if box >= n_boxes:
        return
    box_lb[box] = math.inf
    n_kept[box] = 0
    n_fallback[box] = 0
    best_s[box] = _NO_SUBDOMAIN
    for i in range(cell_lo.shape[1]):
        cell_lo[box, i] = n_per_dim
        cell_hi[box, i] = -1


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def _first_best(n_boxes, sub_lb, box_lb, best_s):
    """``best_s[box]`` = the lowest subdomain whose bound is the box's lowest (the CPU's tie rule)."""
    t = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
    n_subdomains = sub_lb.shape[1]
    if t >= n_boxes * n_subdomains:
        return
    box = t // n_subdomains
    s = t % n_subdomains
    if sub_lb[box, s] < math.inf and sub_lb[box, s] == box_lb[box]:
        cuda.atomic.min(best_s, box, s)


@functools.cache
def finishing_kernel():
    """Per box (one thread): the midpoint of its best subdomain (NaN when none) and the hull of the
    cells below the threshold (NaN where there is none)."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def finish_boxes(n_boxes, edges, n_per_dim, best_s, cell_lo, cell_hi, best_point, hull_lo, hull_hi):
        if stamp < 0:
            return
        box = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
        if box >= n_boxes:
            return
        n_vars = edges.shape[1]
        for i in range(n_vars):
            if cell_hi[box, i] >= 0:
                hull_lo[box, i] = edges[box, i, cell_lo[box, i]]
                hull_hi[box, i] = edges[box, i, cell_hi[box, i] + 1]
            else:
                hull_lo[box, i] = math.nan
                hull_hi[box, i] = math.nan
        if best_s[box] == _NO_SUBDOMAIN:
            for i in range(n_vars):
                best_point[box, i] = math.nan
            return
        x_lo = cuda.local.array((MAX_VARS, 1), float64)
        x_hi = cuda.local.array((MAX_VARS, 1), float64)
        _subdomain(edges, box, best_s[box], n_per_dim, x_lo[:n_vars], x_hi[:n_vars], 0)
        for i in range(n_vars):
            best_point[box, i] = _midpoint(x_lo[i, 0], x_hi[i, 0])

    return finish_boxes


def check_size(tape: Tape) -> None:
    """TooManyVariables for a tape of more variables than the kernels take (any number of slots and
    outputs fits: the workspace grows with the tape)."""
    if tape.n_vars > MAX_VARS:
        raise TooManyVariables(f"the GPU bounds problems of at most {MAX_VARS} variables; this one has {tape.n_vars}")


@dataclass(frozen=True)
class DeviceTape:
    """A tape's arrays on the device (its varying slots included) and the kernels' workspace for it."""

    tape: Tape
    arrays: tuple  # op, arg0, arg1, const_lo, const_hi, outputs
    varying: object
    workspace: Workspace

    @classmethod
    def upload(cls, tape: Tape) -> DeviceTape:
        if SIMULATED and libdevice.dmul_rd(1.0, 3.0) is None:  # its stubs would fill every bound with NaN
            raise RuntimeError(
                "the CUDA simulator's libdevice returns None: install exact stand-ins first (tests/libdevice_shim.py)"
            )
        check_size(tape)
        arrays = tuple(
            cuda.to_device(a) for a in (tape.op, tape.arg0, tape.arg1, tape.const_lo, tape.const_hi, tape.outputs)
        )
        varying = cuda.to_device(cpu._varying_slots(tape.op, tape.arg0, tape.arg1))
        return cls(tape, arrays, varying, Workspace(tape))


class DeviceBoxBounds:
    """Device arrays for the bounds of up to ``capacity`` boxes of d variables on n_subdomains each."""

    def __init__(self, capacity: int, n_vars: int, n_subdomains: int):
        self.sub_lb = cuda.device_array((capacity, n_subdomains), np.float64)
        self.box_lb = cuda.device_array(capacity, np.float64)
        self.n_kept = cuda.device_array(capacity, np.int64)
        self.n_fallback = cuda.device_array(capacity, np.int64)
        self.cell_lo = cuda.device_array((capacity, n_vars), np.int64)
        self.cell_hi = cuda.device_array((capacity, n_vars), np.int64)
        self.best_s = cuda.device_array(capacity, np.int64)
        self.best_point = cuda.device_array((capacity, n_vars), np.float64)
        self.hull_lo = cuda.device_array((capacity, n_vars), np.float64)
        self.hull_hi = cuda.device_array((capacity, n_vars), np.float64)

    def to_host(self, n_boxes: int) -> BoxBounds:
        """The first ``n_boxes`` boxes' bounds as the CPU's :class:`BoxBounds`."""
        return BoxBounds(
            lb=self.box_lb[:n_boxes].copy_to_host(),
            best_point=self.best_point[:n_boxes].copy_to_host(),
            n_kept=self.n_kept[:n_boxes].copy_to_host(),
            n_fallback=self.n_fallback[:n_boxes].copy_to_host(),
            hull_lo=self.hull_lo[:n_boxes].copy_to_host(),
            hull_hi=self.hull_hi[:n_boxes].copy_to_host(),
        )


def bound_on_device(
    dtape: DeviceTape,
    n_boxes: int,
    skip,
    edges,
    n_per_dim: int,
    mode: int,
    feas_tol: float,
    threshold,
    out: DeviceBoxBounds,
) -> None:
    """Bound boxes 0 .. n_boxes - 1 of ``edges`` (device (B, d, n_per_dim + 1), from :func:`fill_edges`)
    into ``out``, below the per-box ``threshold`` (device (B,)), except those whose ``skip`` (device
    (B,) bool) is set; launches only, no transfer."""
    if n_boxes == 0:
        return
    n_subdomains = int(n_per_dim) ** edges.shape[1]
    _reset_boxes[blocks(n_boxes), THREADS_PER_BLOCK](
        n_boxes, int(n_per_dim), out.box_lb, out.n_kept, out.n_fallback, out.cell_lo, out.cell_hi, out.best_s
    )
    workspace = dtape.workspace
    bounding_kernel()[workspace.grid(n_boxes * n_subdomains), THREADS_PER_BLOCK](
        *dtape.arrays,
        dtape.tape.n_ineq,
        dtape.varying,
        n_boxes,
        skip,
        edges,
        int(n_per_dim),
        n_subdomains,
        int(mode),
        float(feas_tol),
        threshold,
        out.sub_lb,
        out.box_lb,
        out.n_kept,
        out.n_fallback,
        out.cell_lo,
        out.cell_hi,
        workspace.slots,
        workspace.per_output,
    )
    _first_best[blocks(n_boxes * n_subdomains), THREADS_PER_BLOCK](n_boxes, out.sub_lb, out.box_lb, out.best_s)
    finishing_kernel()[blocks(n_boxes), THREADS_PER_BLOCK](
        n_boxes, edges, int(n_per_dim), out.best_s, out.cell_lo, out.cell_hi, out.best_point, out.hull_lo, out.hull_hi
    )


def bound_boxes_gpu(
    tape: Tape,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    n_per_dim: int,
    mode: int = Mode.BOTH,
    feas_tol: float = 1e-6,
    threshold: np.ndarray | None = None,
) -> BoxBounds:
    """:func:`pbbflow.spatial.bounds.bound_boxes` on the GPU: the same arguments (no ``parallel``),
    the same :class:`BoxBounds`, the edges and the per-box reduction on the device."""
    box_lo, box_hi, threshold = checked_request(tape, box_lo, box_hi, n_per_dim, mode, threshold)
    n_boxes, n_vars = box_lo.shape
    dtape = DeviceTape.upload(tape)
    edges = cuda.device_array((n_boxes, n_vars, int(n_per_dim) + 1), np.float64)
    fill_edges[blocks(n_boxes), THREADS_PER_BLOCK](n_boxes, cuda.to_device(box_lo), cuda.to_device(box_hi), edges)
    out = DeviceBoxBounds(n_boxes, n_vars, int(n_per_dim) ** n_vars)
    skip = cuda.to_device(np.zeros(n_boxes, np.bool_))
    bound_on_device(dtape, n_boxes, skip, edges, n_per_dim, mode, feas_tol, cuda.to_device(threshold), out)
    return out.to_host(n_boxes)
