"""Test helpers for the spatial family: an arb (python-flint) oracle for tapes, random expressions."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import flint
import numpy as np

from pbbflow.spatial import Model
from pbbflow.spatial.interval import E_HI, E_LO, PI_HI, PI_LO
from pbbflow.spatial.problem import Problem
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


# ---------------------------------------------------------------- random intervals for the primitives

INF = math.inf
MAX = 1.7976931348623157e308


def random_interval(rng: np.random.Generator) -> tuple[float, float]:
    """An interval from a mix of shapes: points, tiny, wide, around 0, huge, infinite, subnormal,
    signed zeros, near multiples of pi/2, around the overflow of exp."""
    kind = rng.integers(12)
    x = float(rng.normal() * 10 ** rng.uniform(-3, 2))
    if kind == 0:
        return x, x
    if kind == 1:
        return x, x + abs(x) * 1e-12 + 1e-300
    if kind == 2:
        return tuple(sorted(rng.uniform(-100, 100, 2).tolist()))
    if kind == 3:
        return -float(rng.uniform(0, 5)), float(rng.uniform(0, 5))
    if kind == 4:
        return tuple(sorted((rng.normal(size=2) * 10.0 ** rng.integers(100, 308)).tolist()))
    if kind == 5:
        return [(-INF, x), (x, INF), (-INF, INF)][rng.integers(3)]
    if kind == 6:
        return tuple(sorted((rng.integers(-5, 6, 2) * 5e-324).tolist()))
    if kind == 7:
        return [(0.0, 0.0), (-0.0, 0.0), (0.0, abs(x)), (-abs(x), -0.0), (-0.0, abs(x))][rng.integers(5)]
    if kind == 8:
        centre = float(rng.integers(-8, 9)) * math.pi / 2
        return tuple(sorted((centre + rng.normal(size=2) * 10.0 ** rng.uniform(-17, 0)).tolist()))
    if kind == 9:
        span = (700, 720) if rng.random() < 0.5 else (-760, -700)
        return tuple(sorted(rng.uniform(*span, 2).tolist()))
    if kind == 10:
        centre = float(rng.integers(-(10**6), 10**6)) * math.pi
        return centre - 1e-3, centre + 1e-3 + float(rng.uniform(0, 8))
    return -abs(x), -abs(x) / 2


def sample_points(rng: np.random.Generator, lo: float, hi: float) -> list[float]:
    """Endpoints (large finite stand-ins for infinite ones), interior points, 0 and multiples of pi/2."""
    lo_f = -MAX if lo == -INF else lo
    hi_f = MAX if hi == INF else hi
    points = [lo_f, hi_f]
    if lo == -INF:
        points += [-1e300, -745.5, -20.0]
    if hi == INF:
        points += [1e300, 710.0, 20.0]
    if lo_f < hi_f and math.isfinite(hi_f - lo_f):
        points += (lo_f + (hi_f - lo_f) * rng.random(3)).tolist()
    if lo <= 0.0 <= hi:
        points.append(0.0)
    if math.isfinite(lo) and math.isfinite(hi) and hi - lo < 100:
        for k in range(math.ceil(lo / (math.pi / 2)) - 1, math.floor(hi / (math.pi / 2)) + 2):
            for p in (k * math.pi / 2, np.nextafter(k * math.pi / 2, INF), np.nextafter(k * math.pi / 2, -INF)):
                if lo <= p <= hi:
                    points.append(float(p))
    return [p for p in points if lo <= p <= hi]


def check_enclosure(result: tuple[float, float], exact, context) -> int:
    """1 for a violation: the exact value (arb, 200 bits, then 4,000 where the ball straddles an
    end) lies outside the result; 0 when enclosed, undefined there, or beyond the oracle."""
    lo, hi = result
    assert math.isnan(lo) == math.isnan(hi), context
    for precision in (PRECISION, 4000):
        flint.ctx.prec = precision
        try:
            value = exact()
        except (Undefined, Undecidable):
            return 0
        finally:
            flint.ctx.prec = PRECISION
        if not value.is_finite():
            return 0
        verdict = encloses(lo, hi, value)
        if verdict is not None:
            if not verdict:
                print("violation", context, result, value)
            return 0 if verdict else 1
    return 0


def circle_problem() -> Problem:
    """min x + y on the unit circle with y >= x - 1: -sqrt(2) at x = y = -1/sqrt(2), lam = 1/sqrt(2)."""
    m = Model("circle")
    x, y = m.variable(-2, 2), m.variable(-2, 2)
    m.minimize(x + y)
    m.subject_to(x - y - 1 <= 0)
    m.subject_to(x**2 + y**2 - 1 == 0)
    return m.problem()


def two_optima_problem() -> Problem:
    """min x y z on the unit sphere with y = 2 z: two optima (x, y, z) = (-1/sqrt 3, +-2c, +-c),
    c = sqrt(2 / 15), value -4 / (15 sqrt 3), whose multipliers of y - 2 z have opposite signs
    (the symmetry (y, z) -> (-y, -z) keeps f and the sphere and negates y - 2 z)."""
    m = Model("two optima")
    x, y, z = m.variable(-1.2, 1.2), m.variable(-1.1, 1.3), m.variable(-1.3, 1.1)
    m.minimize(x * y * z)
    m.subject_to(x**2 + y**2 + z**2 == 1)
    m.subject_to(y - 2 * z == 0)
    return m.problem(optimum=-4 / (15 * math.sqrt(3)))


def two_optima_curve(count: int) -> np.ndarray:
    """Points of :func:`two_optima_problem`'s feasible curve (x, 2z, z) with x^2 + 5 z^2 = 1."""
    t = np.linspace(0.0, 2 * np.pi, count, endpoint=False)
    x, z = np.cos(t), np.sin(t) / math.sqrt(5)
    return np.stack([x, 2 * z, z], axis=1)


def check_below_the_curve(
    exploration, points: np.ndarray, values: np.ndarray, node_limit: int, stops: int | None = None
) -> int:
    """Run ``exploration`` (CPU or GPU) ``node_limit`` boxes at a time to its end, or ``stops`` times:
    at every stop each point of ``points`` (feasible, objective ``values``) below the prune level
    lies in an open box whose bound is at or below its value. The points seen below the level."""
    seen = 0
    for _ in itertools.count() if stops is None else range(stops):
        if exploration.done:
            break
        exploration.run(node_limit=node_limit)
        boxes = exploration.remaining()
        below = np.flatnonzero(values < exploration.level - 1e-12)
        inside = np.all((points[below, None, :] >= boxes.lo) & (points[below, None, :] <= boxes.hi), axis=2)
        assert np.all(inside.any(axis=1))
        covering = np.where(inside, boxes.lb, -np.inf).max(axis=1, initial=-np.inf)
        assert np.all(covering <= values[below] + 1e-12)
        seen += len(below)
    return seen


def long_tape(n_vars: int = 2, links: int = 600, n_ineq: int = 69):
    """A tape of more than 1,200 slots and 70 outputs (beyond the compile-time caps the kernels had,
    1,024 slots and 64 outputs): a chain of products and sums of the variables, inequalities along it."""
    builder = TapeBuilder(n_vars)
    x = [builder.var(i) for i in range(n_vars)]
    slot, links_at = x[0], []
    for c in range(links):
        slot = builder.binary(Op.ADD, builder.binary(Op.MUL, slot, builder.const(0.5 + 1.0 / (c + 3))), x[c % n_vars])
        links_at.append(slot)
    step = len(links_at) // n_ineq
    inequalities = [builder.binary(Op.ADD, links_at[k * step], builder.const(-3.0)) for k in range(n_ineq)]
    return builder.build(slot, inequalities)


def affine_net(tmp_path) -> Path:
    """y = 2 x + 1 on one input, as an ONNX file in ``tmp_path``: over [-1, 1] its maximum is 3 at x = 1."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.array([[2.0]]), "W"), numpy_helper.from_array(np.array([1.0]), "b")]
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1)],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, 1])],
        weights,
    )
    path = tmp_path / "affine.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path
