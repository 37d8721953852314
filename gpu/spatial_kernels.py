"""Subdomain lower bounds of a tape on the GPU: B boxes x N^d subdomains, one thread per subdomain.

Each thread runs the CPU's subdomain bounder (:func:`pbbflow.spatial.bounds._bound_chunk` with
one lane: NIE, interval tangents for the mean value form, f at the centre as a point interval,
the intersection by mode, the kink fallback, the drop rule) compiled for the device with the
device interval operations of :mod:`.spatial_interval` (:func:`~.spatial_interval.device_twin`),
so the GPU bounds the same subdomains by the same rules as the CPU. The per-box reduction is on
the device too: atomics for the lowest bound, the counts and the lowest/highest cell along each
axis of the subdomains below the box's threshold, a second kernel for the first subdomain
reaching the lowest bound, and a third, one thread per box, for its midpoint and the hull.

The interpreter's scratch is ``cuda.local.array``s of compile-time sizes: per thread
``2 * tape_cap * (1 + vars_cap)`` float64 values and tangents (the peaks ANN: 380 slots, d = 2,
so tape_cap 512 and vars_cap 2: 24 KiB). The caps are the powers of two at or above the tape's
size, its variables and its outputs (one compiled kernel per combination), at most
:data:`MAX_TAPE`, :data:`MAX_VARS` and :data:`MAX_OUTPUTS`; bigger tapes are refused.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, float64, int64

from ..spatial import bounds as cpu
from ..spatial.bounds import BoxBounds, Mode, checked_request, subdomain_edges
from ..spatial.tape import Tape
from . import spatial_interval
from .spatial_interval import device_twin
from .warp import SIMULATED

MAX_TAPE = 1024  # slots (1,024 x 8 tangents: 144 KiB of local memory per thread)
MAX_VARS = 8
MAX_OUTPUTS = 64
THREADS_PER_BLOCK = 32 if SIMULATED else 128
_NO_SUBDOMAIN = np.iinfo(np.int64).max

_NAMESPACE = dict(vars(cpu))
_NAMESPACE["iv"] = spatial_interval
for _name in ("_subdomain", "_midpoint", "_unary_derivative", "_binary_derivatives", "_values",
              "_linear_tangents", "_run_tape", "_mean_value_form", "_bound_chunk"):
    _NAMESPACE[_name] = device_twin(getattr(cpu, _name), _NAMESPACE)
del _name
_bound_chunk = _NAMESPACE["_bound_chunk"]
_subdomain = _NAMESPACE["_subdomain"]
_midpoint = _NAMESPACE["_midpoint"]


class TapeTooLarge(ValueError):
    """A tape beyond the kernel's compile-time caps."""


def _cap(n: int) -> int:
    """The power of two at or above n (at least 1)."""
    return 1 << max(n - 1, 0).bit_length()


@functools.lru_cache(maxsize=None)
def bounding_kernel(tape_cap: int, vars_cap: int, outputs_cap: int):
    """The kernel bounding subdomain ``t % n_subdomains`` of box ``t // n_subdomains`` in thread
    ``t``, for tapes of at most the given slots, variables and outputs (sizes fixed at compile time).

    Writes ``sub_lb[box, s]`` (+inf when dropped), atomically lowers ``box_lb[box]``, counts kept and
    fallback subdomains, and lowers ``cell_lo``/raises ``cell_hi`` (B, d) for the kept subdomains
    whose bound is below ``threshold[box]``."""

    @cuda.jit
    def bound_subdomains(op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, varying, edges, n_per_dim,
                         n_subdomains, mode, feas_tol, threshold, sub_lb, box_lb, n_kept, n_fallback, cell_lo,
                         cell_hi):
        t = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
        if t >= edges.shape[0] * n_subdomains:
            return
        box = t // n_subdomains
        s = t % n_subdomains
        n_vars = edges.shape[1]
        scratch_lo = cuda.local.array((tape_cap, 1), float64)
        scratch_hi = cuda.local.array((tape_cap, 1), float64)
        tlo = cuda.local.array((tape_cap, vars_cap, 1), float64)
        thi = cuda.local.array((tape_cap, vars_cap, 1), float64)
        kink = cuda.local.array(1, np.bool_)
        x_lo = cuda.local.array((vars_cap, 1), float64)
        x_hi = cuda.local.array((vars_cap, 1), float64)
        center = cuda.local.array((vars_cap, 1), float64)
        center_lo = cuda.local.array((outputs_cap, 1), float64)
        center_hi = cuda.local.array((outputs_cap, 1), float64)
        mvf_lo = cuda.local.array(outputs_cap, float64)
        mvf_hi = cuda.local.array(outputs_cap, float64)
        cells = cuda.local.array((2, vars_cap), int64)
        for i in range(n_vars):
            cells[0, i] = n_per_dim
            cells[1, i] = -1
        best, _, kept, fallbacks = _bound_chunk(
            op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, varying, edges, box, s, 1, n_per_dim, mode,
            feas_tol, threshold[box], cells[:, :n_vars], scratch_lo, scratch_hi, tlo, thi, kink, x_lo[:n_vars],
            x_hi[:n_vars], center[:n_vars], center_lo, center_hi, mvf_lo, mvf_hi)
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


@cuda.jit
def _first_best(sub_lb, box_lb, best_s):
    """``best_s[box]`` = the lowest subdomain whose bound is the box's lowest (the CPU's tie rule)."""
    t = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
    n_subdomains = sub_lb.shape[1]
    if t >= sub_lb.shape[0] * n_subdomains:
        return
    box = t // n_subdomains
    s = t % n_subdomains
    if sub_lb[box, s] < math.inf and sub_lb[box, s] == box_lb[box]:
        cuda.atomic.min(best_s, box, s)


@cuda.jit
def _finish_boxes(edges, n_per_dim, best_s, cell_lo, cell_hi, best_point, hull_lo, hull_hi):
    """Per box (one thread): the midpoint of its best subdomain (NaN when none) and the hull of the
    cells below the threshold (NaN where there is none)."""
    box = int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
    if box >= edges.shape[0]:
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


def kernel_for(tape: Tape):
    """The bounding kernel for the tape's size (TapeTooLarge beyond the caps)."""
    n_outputs = len(tape.outputs)
    if tape.size > MAX_TAPE or tape.n_vars > MAX_VARS or n_outputs > MAX_OUTPUTS:
        raise TapeTooLarge(
            f"the GPU bounds tapes of at most {MAX_TAPE} slots, {MAX_VARS} variables and {MAX_OUTPUTS} outputs; "
            f"this one has {tape.size}, {tape.n_vars} and {n_outputs}")
    return bounding_kernel(_cap(tape.size), _cap(tape.n_vars), _cap(n_outputs))


def _blocks(n: int) -> int:
    return max(1, -(-n // THREADS_PER_BLOCK))


def bound_boxes_gpu(tape: Tape, box_lo: np.ndarray, box_hi: np.ndarray, n_per_dim: int, mode: int = Mode.BOTH,
                    feas_tol: float = 1e-6, threshold: np.ndarray | None = None) -> BoxBounds:
    """:func:`pbbflow.spatial.bounds.bound_boxes` on the GPU: the same arguments (no ``parallel``),
    the same :class:`BoxBounds`, the per-box reduction on the device."""
    box_lo, box_hi, threshold = checked_request(tape, box_lo, box_hi, n_per_dim, mode, threshold)
    n_boxes, n_vars = box_lo.shape
    n_subdomains = int(n_per_dim) ** n_vars
    kernel = kernel_for(tape)
    edges = cuda.to_device(subdomain_edges(box_lo, box_hi, n_per_dim))
    sub_lb = cuda.device_array((n_boxes, n_subdomains), np.float64)
    box_lb = cuda.to_device(np.full(n_boxes, np.inf))
    n_kept = cuda.to_device(np.zeros(n_boxes, np.int64))
    n_fallback = cuda.to_device(np.zeros(n_boxes, np.int64))
    cell_lo = cuda.to_device(np.full((n_boxes, n_vars), n_per_dim, np.int64))
    cell_hi = cuda.to_device(np.full((n_boxes, n_vars), -1, np.int64))
    best_s = cuda.to_device(np.full(n_boxes, _NO_SUBDOMAIN, np.int64))
    varying = cpu._varying_slots(tape.op, tape.arg0, tape.arg1)
    tape_arrays = [cuda.to_device(a) for a in (tape.op, tape.arg0, tape.arg1, tape.const_lo, tape.const_hi,
                                               tape.outputs, varying)]
    grid = _blocks(n_boxes * n_subdomains)
    kernel[grid, THREADS_PER_BLOCK](*tape_arrays[:6], tape.n_ineq, tape_arrays[6], edges, int(n_per_dim),
                                    n_subdomains, int(mode), float(feas_tol), cuda.to_device(threshold), sub_lb,
                                    box_lb, n_kept, n_fallback, cell_lo, cell_hi)
    _first_best[grid, THREADS_PER_BLOCK](sub_lb, box_lb, best_s)
    best_point = cuda.device_array((n_boxes, n_vars), np.float64)
    hull_lo = cuda.device_array((n_boxes, n_vars), np.float64)
    hull_hi = cuda.device_array((n_boxes, n_vars), np.float64)
    _finish_boxes[_blocks(n_boxes), THREADS_PER_BLOCK](edges, int(n_per_dim), best_s, cell_lo, cell_hi, best_point,
                                                       hull_lo, hull_hi)
    return BoxBounds(lb=box_lb.copy_to_host(), best_point=best_point.copy_to_host(), n_kept=n_kept.copy_to_host(),
                     n_fallback=n_fallback.copy_to_host(), hull_lo=hull_lo.copy_to_host(),
                     hull_hi=hull_hi.copy_to_host())
