"""Forward-backward constraint propagation (FBBT, HC4-revise) on boxes: a rigorous contractor.

A box is contracted to a sub-box that still holds every point ``x`` where the tape is defined
and which satisfies ``f(x) <= ub``, ``g(x) <= 0`` and ``|h(x)| <= feas_tol``:

- **forward**: the natural interval extension of every slot over the box (:mod:`.interval`);
- the outputs are intersected with what a point worth keeping must satisfy (objective
  ``[-inf, ub]``, inequalities ``[-inf, 0]``, equalities ``[-feas_tol, feas_tol]``);
- **backward**: in reverse instruction order each slot's interval narrows its operands
  (:func:`project`: the operand values that can give a result inside it), so a slot is narrowed
  by all its users before its own projection runs; VAR slots then give the new box.

Sweeps repeat while some side shrinks by more than ``MIN_SHRINK`` of its width. An EMPTY
interval on the way proves that no such point exists (``empty``). Every projection is rounded
outward with the interval primitives; operations without a projection are skipped (always
sound). Only slots an output depends on take part, so an unused slot undefined on the box
proves nothing.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import interval as iv
from .opcodes import (
    _ABS,
    _ADD,
    _ATAN2,
    _CONST,
    _COS,
    _DIV,
    _EXP,
    _LOG,
    _MAX,
    _MIN,
    _MUL,
    _NEG,
    _POWI,
    _RELU,
    _SIGMOID,
    _SIN,
    _SQRT,
    _SUB,
    _TAN,
    _TANH,
    _VAR,
)
from .tape import Tape

SWEEPS = 4  # forward-backward sweeps per box at most
MIN_SHRINK = 0.05  # another sweep only when a side lost more than this share of its width
ROOT_TRIES = 64  # outward steps (doubling) when verifying a k-th root

jit = numba.njit(cache=True, nogil=True)


# ---------------------------------------------------------------- forward


@jit
def _forward(code: int, alo: float, ahi: float, blo: float, bhi: float, k: int) -> tuple[float, float]:
    """The natural interval extension of one instruction (not VAR, not CONST)."""
    if code == _ADD:
        return iv.add(alo, ahi, blo, bhi)
    if code == _SUB:
        return iv.sub(alo, ahi, blo, bhi)
    if code == _MUL:
        return iv.mul(alo, ahi, blo, bhi)
    if code == _DIV:
        return iv.div(alo, ahi, blo, bhi)
    if code == _NEG:
        return iv.neg(alo, ahi)
    if code == _POWI:
        return iv.powi(alo, ahi, k)
    if code == _SQRT:
        return iv.sqrt(alo, ahi)
    if code == _EXP:
        return iv.exp(alo, ahi)
    if code == _LOG:
        return iv.log(alo, ahi)
    if code == _TANH:
        return iv.tanh(alo, ahi)
    if code == _SIN:
        return iv.sin(alo, ahi)
    if code == _COS:
        return iv.cos(alo, ahi)
    if code == _TAN:
        return iv.tan(alo, ahi)
    if code == _ABS:
        return iv.abs_(alo, ahi)
    if code == _ATAN2:
        return iv.atan2(alo, ahi, blo, bhi)
    if code == _MIN:
        return iv.min_(alo, ahi, blo, bhi)
    if code == _MAX:
        return iv.max_(alo, ahi, blo, bhi)
    if code == _SIGMOID:
        return iv.sigmoid(alo, ahi)
    if code == _RELU:
        return iv.relu(alo, ahi)
    return -math.inf, math.inf  # a code this contractor does not know: the whole line


# ---------------------------------------------------------------- backward projections


@jit
def _quotient(plo: float, phi: float, qlo: float, qhi: float) -> tuple[float, float]:
    """The x with p = x q for some p in P, q in Q: P / Q, or ENTIRE when 0 is in both (q = 0
    gives p = 0 for every x)."""
    if plo <= 0.0 <= phi and qlo <= 0.0 <= qhi:
        return iv.ENTIRE
    return iv.div(plo, phi, qlo, qhi)


@jit
def _root_down(r: float, k: int) -> float:
    """A lower bound of r ** (1 / k) for r >= 0 and k >= 2, verified by an outward power."""
    if r == 0.0 or r == math.inf:
        return r
    y = r ** (1.0 / k)
    steps = 1
    for _ in range(ROOT_TRIES):
        if y <= 0.0:
            return 0.0
        if iv.powi(y, y, k)[1] <= r:
            return y
        y = iv.step(y, -steps)
        steps *= 2
    return 0.0


@jit
def _root_up(r: float, k: int) -> float:
    """An upper bound of r ** (1 / k) for r >= 0 and k >= 2, verified by an outward power."""
    if r == 0.0 or r == math.inf:
        return r
    y = r ** (1.0 / k)
    steps = 1
    for _ in range(ROOT_TRIES):
        if y == math.inf:
            return y
        if iv.powi(y, y, k)[0] >= r:
            return y
        y = iv.step(y, steps)
        steps *= 2
    return math.inf


@jit
def _signed_hull(alo: float, ahi: float, plo: float, phi: float) -> tuple[float, float]:
    """A ∩ ([-phi, -plo] ∪ [plo, phi]) as an interval hull (0 <= plo <= phi)."""
    nlo, nhi = iv.intersect(alo, ahi, -phi, -plo)
    qlo, qhi = iv.intersect(alo, ahi, plo, phi)
    if iv.is_empty(nlo, nhi):
        return qlo, qhi
    if iv.is_empty(qlo, qhi):
        return nlo, nhi
    return nlo, qhi


@jit
def _power_operand(rlo: float, rhi: float, alo: float, ahi: float, k: int) -> tuple[float, float]:
    """The a in A with a ** k in R, for k >= 2."""
    if k % 2 == 1:
        lo = -_root_up(-rlo, k) if rlo < 0.0 else _root_down(rlo, k)
        hi = -_root_down(-rhi, k) if rhi < 0.0 else _root_up(rhi, k)
        return iv.intersect(alo, ahi, lo, hi)
    plo, phi = iv.intersect(rlo, rhi, 0.0, math.inf)
    if iv.is_empty(plo, phi):
        return iv.EMPTY
    return _signed_hull(alo, ahi, _root_down(plo, k), _root_up(phi, k))


@jit
def project(
    code: int, k: int, rlo: float, rhi: float, alo: float, ahi: float, blo: float, bhi: float
) -> tuple[float, float, float, float]:
    """Narrow the operands A (and B) of ``r = op(a, b)`` given the result interval R: every a in A,
    b in B with op(a, b) defined and in R stays inside the returned ones (EMPTY when none is left).
    ``k`` is POWI's exponent; B is returned unchanged for unary operations."""
    if iv.is_empty(rlo, rhi) or iv.is_empty(alo, ahi) or iv.is_empty(blo, bhi):
        return iv.NAN, iv.NAN, iv.NAN, iv.NAN
    if code == _ADD:  # a = r - b, b = r - a
        alo, ahi = iv.intersect(alo, ahi, *iv.sub(rlo, rhi, blo, bhi))
        blo, bhi = iv.intersect(blo, bhi, *iv.sub(rlo, rhi, alo, ahi))
    elif code == _SUB:  # a = r + b, b = a - r
        alo, ahi = iv.intersect(alo, ahi, *iv.add(rlo, rhi, blo, bhi))
        blo, bhi = iv.intersect(blo, bhi, *iv.sub(alo, ahi, rlo, rhi))
    elif code == _MUL:  # a = r / b, b = r / a
        alo, ahi = iv.intersect(alo, ahi, *_quotient(rlo, rhi, blo, bhi))
        blo, bhi = iv.intersect(blo, bhi, *_quotient(rlo, rhi, alo, ahi))
    elif code == _DIV:  # a = r b (b != 0), b = a / r
        alo, ahi = iv.intersect(alo, ahi, *iv.mul(rlo, rhi, blo, bhi))
        blo, bhi = iv.intersect(blo, bhi, *_quotient(alo, ahi, rlo, rhi))
    elif code == _NEG:
        alo, ahi = iv.intersect(alo, ahi, -rhi, -rlo)
    elif code == _POWI:
        if k == 1:
            alo, ahi = iv.intersect(alo, ahi, rlo, rhi)
        elif k >= 2:
            alo, ahi = _power_operand(rlo, rhi, alo, ahi, k)
        elif k <= -1:  # a ** -k = 1 / r (r is never 0)
            plo, phi = iv.div(1.0, 1.0, rlo, rhi)
            if k == -1:
                alo, ahi = iv.intersect(alo, ahi, plo, phi)
            elif not iv.is_empty(plo, phi):
                alo, ahi = _power_operand(plo, phi, alo, ahi, -k)
            else:
                alo, ahi = iv.EMPTY
    elif code == _SQRT:  # a = r ** 2, r >= 0
        plo, phi = iv.intersect(rlo, rhi, 0.0, math.inf)
        if iv.is_empty(plo, phi):
            alo, ahi = iv.EMPTY
        else:
            alo, ahi = iv.intersect(alo, ahi, *iv.powi(plo, phi, 2))
    elif code == _EXP:
        alo, ahi = iv.intersect(alo, ahi, *iv.log(rlo, rhi))
    elif code == _LOG:
        alo, ahi = iv.intersect(alo, ahi, *iv.exp(rlo, rhi))
    elif code == _TANH:  # a = atanh(r), |r| < 1
        if rlo >= 1.0 or rhi <= -1.0:
            alo, ahi = iv.EMPTY
        else:
            lo = -math.inf if rlo <= -1.0 else iv.widen_down(math.atanh(rlo), iv.LIBRARY_ULPS)
            hi = math.inf if rhi >= 1.0 else iv.widen_up(math.atanh(rhi), iv.LIBRARY_ULPS)
            alo, ahi = iv.intersect(alo, ahi, lo, hi)
    elif code == _ABS:  # |a| = r
        plo, phi = iv.intersect(rlo, rhi, 0.0, math.inf)
        alo, ahi = iv.EMPTY if iv.is_empty(plo, phi) else _signed_hull(alo, ahi, plo, phi)
    elif code == _RELU:  # max(a, 0) = r: a <= r, and a = r where r > 0
        if rhi < 0.0:
            alo, ahi = iv.EMPTY
        elif rlo > 0.0:
            alo, ahi = iv.intersect(alo, ahi, rlo, rhi)
        else:
            alo, ahi = iv.intersect(alo, ahi, -math.inf, rhi)
    elif code == _MIN:  # both operands >= min(a, b) >= rlo
        alo, ahi = iv.intersect(alo, ahi, rlo, math.inf)
        blo, bhi = iv.intersect(blo, bhi, rlo, math.inf)
    elif code == _MAX:  # both operands <= max(a, b) <= rhi
        alo, ahi = iv.intersect(alo, ahi, -math.inf, rhi)
        blo, bhi = iv.intersect(blo, bhi, -math.inf, rhi)
    if iv.is_empty(alo, ahi) or iv.is_empty(blo, bhi):
        return iv.NAN, iv.NAN, iv.NAN, iv.NAN
    return alo, ahi, blo, bhi


# ---------------------------------------------------------------- the contractor


@jit
def _needed_slots(op: np.ndarray, arg0: np.ndarray, arg1: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    """Whether an output depends on each slot."""
    needed = np.empty(len(op), dtype=np.bool_)
    _mark_needed(op, arg0, arg1, outputs, needed)
    return needed


@jit
def _mark_needed(op, arg0, arg1, outputs, needed) -> None:
    """``needed[k]`` (for k < len(op)): whether an output depends on slot k."""
    for k in range(len(op)):
        needed[k] = False
    for o in outputs:
        needed[o] = True
    for k in range(len(op) - 1, -1, -1):
        if not needed[k] or op[k] == _VAR or op[k] == _CONST:
            continue
        needed[arg0[k]] = True
        if (
            op[k] == _ADD
            or op[k] == _SUB
            or op[k] == _MUL
            or op[k] == _DIV
            or op[k] == _ATAN2
            or op[k] == _MIN
            or op[k] == _MAX
        ):
            needed[arg1[k]] = True


@jit
def _is_binary(code: int) -> bool:
    return (
        code == _ADD or code == _SUB or code == _MUL or code == _DIV or code == _ATAN2 or code == _MIN or code == _MAX
    )


@jit
def _sweep(op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, needed, lo, hi, ub, feas_tol, first, vlo, vhi) -> bool:
    """One forward-backward sweep narrowing ``lo, hi`` in place; True when it proves the box empty.
    After the first sweep the forward values are intersected with the last sweep's (they enclose
    the slot at every kept point of the larger box before)."""
    size = len(op)
    for k in range(size):
        code = op[k]
        if code == _VAR:
            lo_k, hi_k = lo[arg0[k]], hi[arg0[k]]
        elif code == _CONST:
            lo_k, hi_k = const_lo[arg0[k]], const_hi[arg0[k]]
        else:
            b = arg1[k]
            blo, bhi = (vlo[b], vhi[b]) if _is_binary(code) else (0.0, 0.0)
            lo_k, hi_k = _forward(code, vlo[arg0[k]], vhi[arg0[k]], blo, bhi, b)
        if needed[k] and not first:
            lo_k, hi_k = iv.intersect(lo_k, hi_k, vlo[k], vhi[k])
        if needed[k] and iv.is_empty(lo_k, hi_k):
            return True
        vlo[k], vhi[k] = lo_k, hi_k
    for o in range(len(outputs)):
        if o == 0:
            bound_lo, bound_hi = -math.inf, ub
        elif o <= n_ineq:
            bound_lo, bound_hi = -math.inf, 0.0
        else:
            bound_lo, bound_hi = -feas_tol, feas_tol
        s = outputs[o]
        vlo[s], vhi[s] = iv.intersect(vlo[s], vhi[s], bound_lo, bound_hi)
        if iv.is_empty(vlo[s], vhi[s]):
            return True
    for k in range(size - 1, -1, -1):
        code = op[k]
        if not needed[k] or code == _CONST:
            continue
        a = arg0[k]
        if code == _VAR:
            lo[a], hi[a] = iv.intersect(lo[a], hi[a], vlo[k], vhi[k])
            if iv.is_empty(lo[a], hi[a]):
                return True
            continue
        b = arg1[k]
        binary = _is_binary(code)
        blo, bhi = (vlo[b], vhi[b]) if binary else (0.0, 0.0)
        alo, ahi, blo, bhi = project(code, b, vlo[k], vhi[k], vlo[a], vhi[a], blo, bhi)
        if iv.is_empty(alo, ahi):
            return True
        if binary and b == a:  # op(a, a): both narrowings hold for the one slot
            alo, ahi = iv.intersect(alo, ahi, blo, bhi)
            if iv.is_empty(alo, ahi):
                return True
        vlo[a], vhi[a] = alo, ahi
        if binary and b != a:
            vlo[b], vhi[b] = blo, bhi
    return False


@jit
def _contract_into(
    op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, needed, lo, hi, ub, feas_tol, sweeps, vlo, vhi, before
) -> bool:
    """Contract ``lo, hi`` in place by up to ``sweeps`` sweeps; True when the box holds no kept point.
    ``vlo, vhi`` (a value per slot) and ``before`` (per variable) are scratch: nothing is allocated,
    so the GPU runs this same code (:mod:`pbbflow.gpu.spatial.contract`)."""
    for sweep in range(sweeps):
        for i in range(len(lo)):
            before[i] = hi[i] - lo[i]
        if _sweep(
            op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, needed, lo, hi, ub, feas_tol, sweep == 0, vlo, vhi
        ):
            return True
        shrunk = False
        for i in range(len(lo)):
            if before[i] > 0.0 and before[i] - (hi[i] - lo[i]) > MIN_SHRINK * before[i]:
                shrunk = True
        if not shrunk:
            break
    return False


@jit
def _contract_boxes(
    op, arg0, arg1, const_lo, const_hi, outputs, n_ineq, box_lo, box_hi, ub, feas_tol, sweeps, new_lo, new_hi, empty
) -> None:
    needed = _needed_slots(op, arg0, arg1, outputs)
    vlo = np.empty(len(op))
    vhi = np.empty(len(op))
    before = np.empty(box_lo.shape[1])
    for box in range(box_lo.shape[0]):
        new_lo[box] = box_lo[box]
        new_hi[box] = box_hi[box]
        empty[box] = _contract_into(
            op,
            arg0,
            arg1,
            const_lo,
            const_hi,
            outputs,
            n_ineq,
            needed,
            new_lo[box],
            new_hi[box],
            ub,
            feas_tol,
            sweeps,
            vlo,
            vhi,
            before,
        )
        if empty[box]:
            new_lo[box] = math.nan
            new_hi[box] = math.nan


def checked_request(
    tape: Tape, box_lo: np.ndarray, box_hi: np.ndarray, ub: float, feas_tol: float, sweeps: int = SWEEPS
) -> tuple[np.ndarray, np.ndarray]:
    """The boxes of a :func:`contract_boxes` request as contiguous float64 arrays; ValueError for
    anything malformed."""
    box_lo = np.ascontiguousarray(box_lo, dtype=np.float64)
    box_hi = np.ascontiguousarray(box_hi, dtype=np.float64)
    if box_lo.ndim != 2 or box_lo.shape != box_hi.shape or box_lo.shape[1] != tape.n_vars:
        raise ValueError(f"boxes must be two (B, {tape.n_vars}) arrays")
    if math.isnan(ub) or not (math.isfinite(feas_tol) and feas_tol >= 0) or sweeps < 1:
        raise ValueError("ub must not be NaN, feas_tol must be finite >= 0, sweeps at least 1")
    return box_lo, box_hi


def contract_boxes(
    tape: Tape,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    ub: float = math.inf,
    feas_tol: float = 1e-6,
    sweeps: int = SWEEPS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contract B boxes ``[box_lo[b], box_hi[b]]`` (float64 (B, d)): ``(new_lo, new_hi, empty)``,
    each new box inside its box and holding every point of it with f <= ub, g <= 0 and
    |h| <= feas_tol; ``empty[b]`` (its new box NaN) when no such point exists."""
    box_lo, box_hi = checked_request(tape, box_lo, box_hi, ub, feas_tol, sweeps)
    new_lo = np.empty_like(box_lo)
    new_hi = np.empty_like(box_hi)
    empty = np.empty(box_lo.shape[0], dtype=np.bool_)
    _contract_boxes(
        tape.op,
        tape.arg0,
        tape.arg1,
        tape.const_lo,
        tape.const_hi,
        tape.outputs,
        tape.n_ineq,
        box_lo,
        box_hi,
        float(ub),
        float(feas_tol),
        int(sweeps),
        new_lo,
        new_hi,
        empty,
    )
    return new_lo, new_hi, empty


def contract_box(
    tape: Tape, lo: np.ndarray, hi: np.ndarray, ub: float = math.inf, feas_tol: float = 1e-6, sweeps: int = SWEEPS
) -> tuple[np.ndarray, np.ndarray, bool]:
    """One box ``[lo, hi]`` (float64 (d,)) contracted: see :func:`contract_boxes`."""
    new_lo, new_hi, empty = contract_boxes(tape, np.reshape(lo, (1, -1)), np.reshape(hi, (1, -1)), ub, feas_tol, sweeps)
    return new_lo[0], new_hi[0], bool(empty[0])
