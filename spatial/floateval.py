"""Plain float64 evaluation of a tape at a point (for local solvers and checks; not rigorous), and
its Jacobian by forward-mode differentiation.

Constants take the midpoint of their enclosure; operations follow IEEE/C semantics (division by
zero gives inf, log of a negative number nan), never raising.

Derivatives (:func:`evaluate_float_gradients`) follow the same values: at a kink the derivative is
one-sided (``abs'(0) = 1``, ``relu'(0) = 0``, ``min``/``max`` take the side whose value they
return, the first on a tie), at the edge of a domain it may be infinite (``sqrt'(0) = +inf``,
``log'(0) = +inf``), and where the value is nan so is the derivative.  A zero times anything is
zero in the chain rule (never ``0 * inf = nan``): a slot that does not depend on a variable has a
zero derivative in it, and an operation whose derivative in an operand is zero (``x ** 0``, the
side ``min`` did not take, ``relu`` below 0) drops that operand's infinite or nan derivatives.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

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


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _power(base: float, exponent: int) -> float:
    """base ** exponent by repeated squaring (exponent may be negative)."""
    result = 1.0
    square = base
    k = abs(exponent)
    while k:
        if k & 1:
            result *= square
        square *= square
        k >>= 1
    return 1.0 / result if exponent < 0 else result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _binary(code: int) -> bool:
    """Whether the operation reads a second slot (arg1 is POWI's exponent, else unused)."""
    return (_ADD <= code <= _DIV) or (_ATAN2 <= code <= _MAX)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _value(code: int, slots, a: int, b: int) -> float:
    """The value of an operation on slots a and b (VAR and CONST excluded; POWI's exponent in b)."""
    if code == _ADD:
        return slots[a] + slots[b]
    if code == _SUB:
        return slots[a] - slots[b]
    if code == _MUL:
        return slots[a] * slots[b]
    if code == _DIV:
        return slots[a] / slots[b]
    if code == _NEG:
        return -slots[a]
    if code == _POWI:
        return _power(slots[a], b)
    if code == _SQRT:
        return math.sqrt(slots[a]) if slots[a] >= 0.0 else np.nan
    if code == _EXP:
        return math.exp(slots[a])
    if code == _LOG:
        return math.log(slots[a]) if slots[a] > 0.0 else (-np.inf if slots[a] == 0.0 else np.nan)
    if code == _TANH:
        return math.tanh(slots[a])
    if code == _SIN:
        return math.sin(slots[a])
    if code == _COS:
        return math.cos(slots[a])
    if code == _TAN:
        return math.tan(slots[a])
    if code == _ABS:
        return abs(slots[a])
    if code == _ATAN2:
        return math.atan2(slots[a], slots[b])
    if code == _MIN:
        return min(slots[a], slots[b])
    if code == _MAX:
        return max(slots[a], slots[b])
    if code == _SIGMOID:
        return 1.0 / (1.0 + math.exp(-slots[a]))
    if code == _RELU:
        return max(slots[a], 0.0)
    return math.nan  # a code this evaluator does not know: no value, never another operation's


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _run(op, arg0, arg1, constants, x, slots) -> None:
    """Fill ``slots`` with every instruction's value at ``x``."""
    for i in range(len(op)):
        code = op[i]
        if code == _VAR:
            slots[i] = x[arg0[i]]
        elif code == _CONST:
            slots[i] = constants[arg0[i]]
        else:
            slots[i] = _value(code, slots, arg0[i], arg1[i])


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _partials(code: int, va: float, vb: float, v: float, b: int) -> tuple[float, float]:
    """d v / d a and d v / d b of one operation (v its value; the second 0 for unary ones)."""
    if v != v:  # nan value: no derivative
        return np.nan, np.nan
    if code == _ADD:
        return 1.0, 1.0
    if code == _SUB:
        return 1.0, -1.0
    if code == _MUL:
        return vb, va
    if code == _DIV:
        inverse = 1.0 / vb
        return inverse, -v * inverse
    if code == _NEG:
        return -1.0, 0.0
    if code == _POWI:
        if b == 0:
            return 0.0, 0.0
        return b * _power(va, b - 1), 0.0
    if code == _SQRT:
        return (0.5 / v if v > 0.0 else np.inf), 0.0
    if code == _EXP:
        return v, 0.0
    if code == _LOG:
        return 1.0 / va if va > 0.0 else np.inf, 0.0
    if code == _TANH:  # 1 / cosh^2 (1 - tanh^2 cancels where tanh saturates)
        c = math.cosh(va)
        return 1.0 / (c * c), 0.0
    if code == _SIN:
        return math.cos(va), 0.0
    if code == _COS:
        return -math.sin(va), 0.0
    if code == _TAN:
        return 1.0 + v * v, 0.0
    if code == _ABS:
        return (1.0 if va >= 0.0 else -1.0), 0.0
    if code == _ATAN2:  # atan2(y = a, x = b): (x, -y) / (x^2 + y^2), scaled against overflow
        r = math.hypot(va, vb)
        return (vb / r) / r, (-va / r) / r
    if code == _MIN or code == _MAX:  # the side whose value it returned (the first on a tie)
        return (1.0, 0.0) if v == va else (0.0, 1.0)
    if code == _SIGMOID:  # e / (1 + e)^2 with e = exp(-|a|) (v (1 - v) cancels where v nears 1)
        e = math.exp(-abs(va))
        return e / ((1.0 + e) * (1.0 + e)), 0.0
    if code == _RELU:
        return (1.0 if va > 0.0 else 0.0), 0.0
    return math.nan, math.nan  # a code this evaluator does not know


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _run_tangents(op, arg0, arg1, constants, x, slots, tangents) -> None:
    """Fill ``slots`` as :func:`_run` does and ``tangents[i]`` with slot i's gradient in x (forward
    mode; a zero partial derivative or tangent entry contributes zero, whatever the other)."""
    d = tangents.shape[1]
    for i in range(len(op)):
        code = op[i]
        a = arg0[i]
        b = arg1[i]
        for j in range(d):
            tangents[i, j] = 0.0
        if code == _VAR:
            slots[i] = x[a]
            tangents[i, a] = 1.0
            continue
        if code == _CONST:
            slots[i] = constants[a]
            continue
        binary = _binary(code)
        va = slots[a]
        vb = slots[b] if binary else 0.0
        v = _value(code, slots, a, b)
        slots[i] = v
        pa, pb = _partials(code, va, vb, v, b)
        if pa != 0.0:
            for j in range(d):
                if tangents[a, j] != 0.0:
                    tangents[i, j] = pa * tangents[a, j]
        if binary and pb != 0.0:
            for j in range(d):
                if tangents[b, j] != 0.0:
                    tangents[i, j] += pb * tangents[b, j]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _outputs_and_jacobian(op, arg0, arg1, constants, outputs, x):
    slots = np.empty(len(op), dtype=np.float64)
    tangents = np.empty((len(op), len(x)), dtype=np.float64)
    _run_tangents(op, arg0, arg1, constants, x, slots, tangents)
    values = np.empty(len(outputs), dtype=np.float64)
    jacobian = np.empty((len(outputs), len(x)), dtype=np.float64)
    for k in range(len(outputs)):
        values[k] = slots[outputs[k]]
        jacobian[k] = tangents[outputs[k]]
    return values, jacobian


def _point(tape: Tape, x) -> np.ndarray:
    """``x`` as a new writable float64 array (one numba type for every caller's point)."""
    point = np.array(x, dtype=np.float64)
    if point.shape != (tape.n_vars,):
        raise ValueError(f"the point has shape {point.shape}; the tape needs ({tape.n_vars},)")
    return point


def evaluate_float(tape: Tape, x) -> tuple[float, np.ndarray, np.ndarray]:
    """(f, g, h) of ``tape`` at the point ``x`` in float64: objective, inequalities, equalities."""
    point = _point(tape, x)
    constants = 0.5 * tape.const_lo + 0.5 * tape.const_hi
    slots = np.empty(tape.size, dtype=np.float64)
    _run(tape.op, tape.arg0, tape.arg1, constants, point, slots)
    return float(slots[tape.objective]), slots[tape.inequalities], slots[tape.equalities]


def evaluate_float_gradients(tape: Tape, x) -> tuple[np.ndarray, np.ndarray]:
    """The outputs of ``tape`` at ``x`` in float64 (f, g..., h..., as :func:`evaluate_float`
    gives them) and their Jacobian (n_outputs, n_vars), in one forward pass (see the module doc
    for kinks, domain edges and nan)."""
    return float_gradients(tape)(x)


def float_gradients(
    tape: Tape, slots: np.ndarray | None = None
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """:func:`evaluate_float_gradients` bound to ``tape`` (its constants taken once: for a local
    solver that asks at many points); ``slots`` (int32) gives those slots' values and gradients
    instead of the outputs'."""
    op, arg0, arg1 = tape.op, tape.arg0, tape.arg1
    outputs = tape.outputs if slots is None else np.ascontiguousarray(slots, dtype=np.int32)
    constants = 0.5 * tape.const_lo + 0.5 * tape.const_hi
    shape = (tape.n_vars,)

    def at(x) -> tuple[np.ndarray, np.ndarray]:
        point = np.array(x, dtype=np.float64)  # writable, as _point: one compiled type
        if point.shape != shape:
            raise ValueError(f"the point has shape {point.shape}; the tape needs {shape}")
        return _outputs_and_jacobian(op, arg0, arg1, constants, outputs, point)

    return at
