"""FBBT (HC4-revise) box contraction on the GPU, one thread per box.

Each thread runs the CPU contractor (:func:`pbbflow.spatial.contract._contract_into`: the sweeps,
the projections, the stopping rule) compiled for the device with the device interval operations
of :mod:`.interval` (:func:`~.interval.device_twin`), so the GPU contracts by the
CPU's rules; under the simulator (exact libdevice) the results are the CPU's bit for bit. On a GPU
the library functions (and atanh in the tanh projection) are widened by 3 floats instead of 4 and
the k-th root guesses come from the device's ``pow``: the boxes stay rigorous but may differ from
the CPU's in the last floats (or, through the stopping rule, by a sweep).

The tape is the bounding kernels' :class:`~.kernels.DeviceTape`; each thread marks the
slots the outputs depend on itself (:func:`~pbbflow.spatial.contract._mark_needed`, one backward
pass). Its scratch is the tape's :class:`~.kernels.Workspace` (two value columns and the flags of
each slot), so one compiled kernel serves every tape; a grid-stride loop takes the boxes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, float64

from ...spatial import contract as cpu
from ...spatial.contract import SWEEPS, checked_request
from ...spatial.tape import Tape
from . import interval as spatial_interval
from .interval import device_twin
from .kernels import MAX_VARS, SOURCE_STAMP, THREADS_PER_BLOCK, DeviceTape, grid_stride

_NAMESPACE = dict(vars(cpu))
_NAMESPACE["iv"] = spatial_interval
for _name in (
    "_mark_needed",
    "_forward",
    "_quotient",
    "_root_down",
    "_root_up",
    "_signed_hull",
    "_power_operand",
    "project",
    "_is_binary",
    "_sweep",
    "_contract_into",
):
    _NAMESPACE[_name] = device_twin(getattr(cpu, _name), _NAMESPACE)
del _name
_mark_needed = _NAMESPACE["_mark_needed"]
_contract_into = _NAMESPACE["_contract_into"]


@functools.cache
def contracting_kernel():
    """The kernel contracting boxes ``t < count`` in place, a grid-stride loop on the threads of the
    workspace (NaN and ``empty[t] = 1`` when a box holds no kept point)."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def contract(
        op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, box_lo, box_hi, count, ub, feas_tol, empty, slots, flags
    ):
        j, stride = grid_stride()
        if stamp < 0:
            return
        needed = flags[:, j]
        vlo = slots[:, 0, j]
        vhi = slots[:, 1, j]
        before = cuda.local.array(MAX_VARS, float64)
        if j < count:
            _mark_needed(op, arg0, arg1, outputs, needed)
        for box in range(j, count, stride):
            lo = box_lo[box]
            hi = box_hi[box]
            gone = _contract_into(
                op,
                arg0,
                arg1,
                const_lo,
                const_hi,
                outputs,
                n_ineq,
                needed,
                lo,
                hi,
                ub[0],
                feas_tol,
                SWEEPS,
                vlo,
                vhi,
                before,
            )
            empty[box] = gone
            if gone:
                for i in range(lo.shape[0]):
                    lo[i] = math.nan
                    hi[i] = math.nan

    return contract


def contract_boxes_device(dtape: DeviceTape, box_lo, box_hi, count: int, ub, feas_tol: float, empty) -> None:
    """Launch the contraction of rows ``[0, count)`` of the device arrays ``box_lo, box_hi``
    (float64 (capacity, d)) in place, against the incumbent ``ub[0]`` (a device float64 (1,), read
    by the kernel, not NaN); ``empty[b]`` (device bool or uint8 (capacity,)) becomes 1 for a box
    holding no point with f <= ub, g <= 0, |h| <= feas_tol (the box then NaN), else 0. Rows from
    ``count`` on are untouched. No synchronisation."""
    tape = dtape.tape
    if box_lo.ndim != 2 or box_lo.shape != box_hi.shape or box_lo.shape[1] != tape.n_vars:
        raise ValueError(f"boxes must be two (capacity, {tape.n_vars}) arrays")
    if not 0 <= count <= min(box_lo.shape[0], empty.shape[0]):
        raise ValueError(f"count {count} is beyond the arrays' {box_lo.shape[0]} rows or {empty.shape[0]} flags")
    if count == 0:
        return
    workspace = dtape.workspace
    contracting_kernel()[workspace.grid(count), THREADS_PER_BLOCK](
        *dtape.arrays, tape.n_ineq, box_lo, box_hi, count, ub, float(feas_tol), empty, workspace.slots, workspace.flags
    )


def contract_boxes_gpu(
    tape: Tape, box_lo: np.ndarray, box_hi: np.ndarray, ub: float = math.inf, feas_tol: float = 1e-6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pbbflow.spatial.contract.contract_boxes` on the GPU: the same arguments (no
    ``sweeps``: always :data:`~pbbflow.spatial.contract.SWEEPS`), the same ``(new_lo, new_hi, empty)``."""
    box_lo, box_hi = checked_request(tape, box_lo, box_hi, ub, feas_tol)
    dtape = DeviceTape.upload(tape)
    n_boxes = box_lo.shape[0]
    new_lo = cuda.to_device(box_lo)
    new_hi = cuda.to_device(box_hi)
    empty = cuda.device_array(n_boxes, np.bool_)
    contract_boxes_device(dtape, new_lo, new_hi, n_boxes, cuda.to_device(np.array([float(ub)])), feas_tol, empty)
    return new_lo.copy_to_host(), new_hi.copy_to_host(), empty.copy_to_host()
