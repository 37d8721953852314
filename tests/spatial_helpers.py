"""Test helpers for the spatial family: an arb (python-flint) oracle for tapes, random expressions."""

from __future__ import annotations

import math

import flint
import numpy as np

from pbbflow.spatial.interval import E_HI, E_LO, PI_HI, PI_LO
from pbbflow.spatial.tape import BINARY, Op, Tape, TapeBuilder

PRECISION = 200


class Undefined(Exception):
    """The exact point lies outside the operation's domain."""


class Undecidable(Exception):
    """A ball straddles a switch point (a domain edge, a branch cut): the sample is skipped."""


def _sign(a: flint.arb) -> int:
    if a.is_zero():
        return 0
    if a > 0:
        return 1
    if a < 0:
        return -1
    raise Undecidable


def arb_unary(code: Op, a: flint.arb, k: int = 0) -> flint.arb:
    """The exact unary operation (POWI's exponent in k) at the ball a, rigorously."""
    if code is Op.NEG:
        return -a
    if code is Op.POWI:
        if k < 0 and _sign(a) == 0:
            raise Undefined
        return a**k if k >= 0 else 1 / a ** (-k)
    if code is Op.SQRT:
        sign = _sign(a)
        if sign < 0:
            raise Undefined
        return flint.arb(0) if sign == 0 else a.sqrt()
    if code is Op.EXP:
        return a.exp()
    if code is Op.LOG:
        if _sign(a) <= 0:
            raise Undefined
        return a.log()
    if code is Op.TANH:
        return a.tanh()
    if code is Op.SIN:
        return a.sin()
    if code is Op.COS:
        return a.cos()
    if code is Op.TAN:
        _sign(a.cos())  # a pole cannot be told apart
        return a.tan()
    if code is Op.ABS:
        return abs(a)
    if code is Op.SIGMOID:
        return 1 / (1 + (-a).exp())
    if code is Op.RELU:
        if a > 0:
            return a
        if a <= 0:
            return flint.arb(0)
        return a.union(0)  # holds max(x, 0) for every x in a
    raise AssertionError(code)


def arb_binary(code: Op, a: flint.arb, b: flint.arb) -> flint.arb:
    """The exact binary operation at the balls a, b (ATAN2: a = y, b = x), rigorously."""
    if code is Op.ADD:
        return a + b
    if code is Op.SUB:
        return a - b
    if code is Op.MUL:
        return a * b
    if code is Op.DIV:
        if _sign(b) == 0:
            raise Undefined
        return a / b
    if code is Op.ATAN2:
        y_sign = 0 if a.is_zero() else (1 if a > 0 else -1 if a < 0 else None)
        if y_sign == 0:
            x_sign = _sign(b)
            if x_sign == 0:
                raise Undefined
            return flint.arb(0) if x_sign > 0 else flint.arb.pi()
        if y_sign is None and not b > 0:
            raise Undecidable  # near the cut or the origin
        return flint.arb.atan2(a, b)
    if code is Op.MIN:
        return a if a <= b else b if b <= a else a.union(b)
    if code is Op.MAX:
        return a if a >= b else b if b >= a else a.union(b)
    raise AssertionError(code)


def arb_constant(lo: float, hi: float) -> flint.arb:
    """The real a tape constant stands for: its point, or pi or e for their enclosures."""
    if lo == hi:
        return flint.arb(lo)
    if (lo, hi) == (PI_LO, PI_HI):
        return flint.arb.pi()
    if (lo, hi) == (E_LO, E_HI):
        return flint.arb(1).exp()
    raise AssertionError(f"no known real for the constant [{lo}, {hi}]")


def arb_outputs(tape: Tape, x) -> list[flint.arb | None]:
    """The exact outputs at the point x (None where undefined); raises Undecidable."""
    old = flint.ctx.prec
    flint.ctx.prec = PRECISION
    try:
        values: list[flint.arb | None] = []
        for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
            code = Op(code)
            if code is Op.VAR:
                values.append(flint.arb(float(x[a])))
            elif code is Op.CONST:
                values.append(arb_constant(tape.const_lo[a], tape.const_hi[a]))
            elif values[a] is None or (code in BINARY and values[b] is None):
                values.append(None)
            else:
                try:
                    value = arb_binary(code, values[a], values[b]) if code in BINARY else arb_unary(code, values[a], b)
                except Undefined:
                    value = None
                if value is not None and not value.is_finite():
                    raise Undecidable
                values.append(value)
        return [values[slot] for slot in tape.outputs.tolist()]
    finally:
        flint.ctx.prec = old


def encloses(lo: float, hi: float, value: flint.arb) -> bool | None:
    """True when every point of the ball lies in [lo, hi] (infinite ends allowed), False when the
    ball lies beyond an end, None when it straddles an end (the oracle cannot tell)."""
    if math.isnan(lo) or math.isnan(hi):
        return False
    above_lo = True if lo == -math.inf else (flint.arb(lo) <= value or (None if not flint.arb(lo) > value else False))
    below_hi = True if hi == math.inf else (value <= flint.arb(hi) or (None if not value > flint.arb(hi) else False))
    if above_lo is False or below_hi is False:
        return False
    if above_lo is None or below_hi is None:
        return None
    return True


UNARY_CODES = [Op.NEG, Op.SQRT, Op.EXP, Op.LOG, Op.TANH, Op.SIN, Op.COS, Op.TAN, Op.ABS, Op.SIGMOID, Op.RELU]
BINARY_CODES = [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.ATAN2, Op.MIN, Op.MAX]


def random_expression(rng: np.random.Generator, n_vars: int, n_ops: int) -> tuple[TapeBuilder, int]:
    """A random DAG over every opcode; returns the builder and the slot of its last instruction."""
    builder = TapeBuilder(n_vars)
    slots = [builder.var(i) for i in range(n_vars)]
    slots += [builder.const(float(c)) for c in np.round(rng.uniform(-3, 3, 3), 2)]
    slots += [builder.const(PI_LO, PI_HI), builder.const(E_LO, E_HI)]
    slot = slots[0]
    for _ in range(n_ops):
        recent = slots[-6:]
        kind = rng.random()
        a = recent[rng.integers(len(recent))] if rng.random() < 0.7 else slots[rng.integers(len(slots))]
        if kind < 0.15:
            slot = builder.powi(a, int(rng.integers(-3, 5)))
        elif kind < 0.55:
            slot = builder.unary(UNARY_CODES[rng.integers(len(UNARY_CODES))], a)
        else:
            b = slots[rng.integers(len(slots))]
            slot = builder.binary(BINARY_CODES[rng.integers(len(BINARY_CODES))], a, b)
        slots.append(slot)
    return builder, slot
