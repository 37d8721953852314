"""Plain float64 evaluation of a tape at a point (for local solvers and checks; not rigorous).

Constants take the midpoint of their enclosure; operations follow IEEE/C semantics (division by
zero gives inf, log of a negative number nan), never raising.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .tape import Op, Tape

_VAR, _CONST, _ADD, _SUB, _MUL, _DIV, _NEG, _POWI = (int(Op.VAR), int(Op.CONST), int(Op.ADD), int(Op.SUB),
                                                     int(Op.MUL), int(Op.DIV), int(Op.NEG), int(Op.POWI))
_SQRT, _EXP, _LOG, _TANH, _SIN, _COS, _TAN, _ABS = (int(Op.SQRT), int(Op.EXP), int(Op.LOG), int(Op.TANH),
                                                    int(Op.SIN), int(Op.COS), int(Op.TAN), int(Op.ABS))
_ATAN2, _MIN, _MAX, _SIGMOID, _RELU = int(Op.ATAN2), int(Op.MIN), int(Op.MAX), int(Op.SIGMOID), int(Op.RELU)


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


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _run(op, arg0, arg1, constants, x, slots) -> None:
    """Fill ``slots`` with every instruction's value at ``x``."""
    for i in range(len(op)):
        code = op[i]
        a = arg0[i]
        b = arg1[i]
        if code == _VAR:
            v = x[a]
        elif code == _CONST:
            v = constants[a]
        elif code == _ADD:
            v = slots[a] + slots[b]
        elif code == _SUB:
            v = slots[a] - slots[b]
        elif code == _MUL:
            v = slots[a] * slots[b]
        elif code == _DIV:
            v = slots[a] / slots[b]
        elif code == _NEG:
            v = -slots[a]
        elif code == _POWI:
            v = _power(slots[a], b)
        elif code == _SQRT:
            v = math.sqrt(slots[a]) if slots[a] >= 0.0 else np.nan
        elif code == _EXP:
            v = math.exp(slots[a])
        elif code == _LOG:
            v = math.log(slots[a]) if slots[a] > 0.0 else (-np.inf if slots[a] == 0.0 else np.nan)
        elif code == _TANH:
            v = math.tanh(slots[a])
        elif code == _SIN:
            v = math.sin(slots[a])
        elif code == _COS:
            v = math.cos(slots[a])
        elif code == _TAN:
            v = math.tan(slots[a])
        elif code == _ABS:
            v = abs(slots[a])
        elif code == _ATAN2:
            v = math.atan2(slots[a], slots[b])
        elif code == _MIN:
            v = min(slots[a], slots[b])
        elif code == _MAX:
            v = max(slots[a], slots[b])
        elif code == _SIGMOID:
            v = 1.0 / (1.0 + math.exp(-slots[a]))
        else:  # RELU
            v = max(slots[a], 0.0)
        slots[i] = v


def evaluate_float(tape: Tape, x) -> tuple[float, np.ndarray, np.ndarray]:
    """(f, g, h) of ``tape`` at the point ``x`` in float64: objective, inequalities, equalities."""
    point = np.ascontiguousarray(x, dtype=np.float64)
    if point.shape != (tape.n_vars,):
        raise ValueError(f"the point has shape {point.shape}; the tape needs ({tape.n_vars},)")
    constants = 0.5 * tape.const_lo + 0.5 * tape.const_hi
    slots = np.empty(tape.size, dtype=np.float64)
    _run(tape.op, tape.arg0, tape.arg1, constants, point, slots)
    return float(slots[tape.objective]), slots[tape.inequalities], slots[tape.equalities]
