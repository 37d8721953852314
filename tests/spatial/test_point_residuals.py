"""Point enclosures that keep a product's rounding error (``bounds._run_point_tape``): a * b - c
is enclosed to the ulp of the residual. Oracles: exact Fractions for + - * and integer powers,
python-flint's arb for the rest; the plain interval enclosure (NIE on the degenerate box) must
contain every point enclosure; Bukin N.6 (issue 35) is proved."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from spatial_helpers import Undecidable, arb_outputs, encloses, random_expression

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import Mode, bound_boxes, evaluate_point
from pbbflow.spatial.interval import LIBRARY_ULPS
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.tape import Op, Tape, TapeBuilder

pytestmark = pytest.mark.usefixtures("arb_precision")

BUKIN = str(Path(__file__).resolve().parents[2] / "benchmarks" / "problems" / "bukin-6.json")


def plain_enclosure(tape, x: np.ndarray) -> tuple[float, float]:
    """f's natural interval extension on the box [x, x] (no balls): from NIE lower bounds of f and -f."""
    lo = bound_boxes(tape, x[None], x[None], 1, Mode.NIE, parallel=False).lb[0]
    hi = -bound_boxes(_negated(tape), x[None], x[None], 1, Mode.NIE, parallel=False).lb[0]
    return float(lo), float(hi)


def _negated(tape):
    """The tape with one more instruction: the negation of its objective."""
    return Tape(
        op=np.append(tape.op, np.int32(Op.NEG)).astype(np.int32),
        arg0=np.append(tape.arg0, np.int32(tape.objective)).astype(np.int32),
        arg1=np.append(tape.arg1, np.int32(-1)).astype(np.int32),
        const_lo=tape.const_lo,
        const_hi=tape.const_hi,
        outputs=np.array([tape.size], dtype=np.int32),
        n_vars=tape.n_vars,
        n_ineq=0,
        n_eq=0,
    )


def exact_fraction(tape, x) -> Fraction:
    """f at x in exact rational arithmetic (tapes of VAR, point CONST, ADD, SUB, MUL, NEG, POWI k >= 0)."""
    values: list[Fraction] = []
    for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
        code = Op(code)
        if code is Op.VAR:
            values.append(Fraction(float(x[a])))
        elif code is Op.CONST:
            assert tape.const_lo[a] == tape.const_hi[a]
            values.append(Fraction(float(tape.const_lo[a])))
        elif code is Op.ADD:
            values.append(values[a] + values[b])
        elif code is Op.SUB:
            values.append(values[a] - values[b])
        elif code is Op.MUL:
            values.append(values[a] * values[b])
        elif code is Op.NEG:
            values.append(-values[a])
        elif code is Op.POWI:
            values.append(values[a] ** b)
        else:
            raise AssertionError(f"no exact rational value for {code.name}")
    return values[tape.objective]


def inside(lo: float, hi: float, value: Fraction) -> bool:
    return (lo == -math.inf or Fraction(lo) <= value) and (hi == math.inf or value <= Fraction(hi))


def check_point(tape, x: np.ndarray, exact: Fraction | None = None) -> tuple[float, float]:
    """The point enclosure of f at x: inside the plain one, around the exact value (a Fraction, or arb)."""
    point = evaluate_point(tape, x)
    plain_lo, plain_hi = plain_enclosure(tape, x)
    if math.isnan(point.f_lo):
        assert math.isinf(plain_lo) and plain_lo > 0  # undefined there: NIE dropped the box too
        return point.f_lo, point.f_hi
    assert plain_lo <= point.f_lo <= point.f_hi <= plain_hi, (x, point, plain_lo, plain_hi)
    if exact is not None:
        assert inside(point.f_lo, point.f_hi, exact), (x, point, float(exact))
    else:
        value = arb_outputs(tape, x)[0]
        assert value is not None and encloses(point.f_lo, point.f_hi, value) is not False, (x, point, value)
    return point.f_lo, point.f_hi


def residual_tape(shape: str) -> TapeBuilder:
    """Near-cancellation shapes over x0, x1, x2: a * b - c and its relatives."""
    builder = TapeBuilder(3)
    x0, x1, x2 = (builder.var(i) for i in range(3))
    if shape == "ab-c":
        slot = builder.binary(Op.SUB, builder.binary(Op.MUL, x0, x1), x2)
    elif shape == "c-ab":
        slot = builder.binary(Op.SUB, x2, builder.binary(Op.MUL, x0, x1))
    elif shape == "a^2-c":
        slot = builder.binary(Op.ADD, builder.powi(x0, 2), builder.unary(Op.NEG, x2))
    elif shape == "k*a^2-c":
        product = builder.binary(Op.MUL, builder.const(0.01), builder.powi(x0, 2))
        slot = builder.binary(Op.SUB, x2, product)
    elif shape == "(ab-c)+(c-ab)":
        product = builder.binary(Op.MUL, x0, x1)
        slot = builder.binary(Op.ADD, builder.binary(Op.SUB, product, x2), builder.binary(Op.SUB, x2, product))
    else:  # "(ab-c)*a - c": a product of a cancelled residual, cancelled again
        residual = builder.binary(Op.SUB, builder.binary(Op.MUL, x0, x1), x2)
        slot = builder.binary(Op.SUB, builder.binary(Op.MUL, residual, x0), x2)
    return builder, slot


SHAPES = ("ab-c", "c-ab", "a^2-c", "k*a^2-c", "(ab-c)+(c-ab)", "(ab-c)*a-c")


def adversarial_point(rng: np.random.Generator, shape: str) -> np.ndarray:
    """x0, x1 of mixed magnitudes (subnormal to near overflow now and then), x2 placed on or a few
    floats from the rounded value the shape cancels against."""
    scale = 10.0 ** rng.choice([rng.uniform(-3, 3), rng.uniform(-170, -150), rng.uniform(150, 154), -310.0])
    x0 = float(rng.normal() * scale)
    x1 = float(rng.normal() * 10.0 ** rng.uniform(-3, 3))
    with np.errstate(all="ignore"):
        target = {
            "ab-c": x0 * x1,
            "c-ab": x0 * x1,
            "a^2-c": x0 * x0,
            "k*a^2-c": 0.01 * (x0 * x0),
            "(ab-c)+(c-ab)": x0 * x1,
            "(ab-c)*a-c": x0 * x1,
        }[shape]
    if not math.isfinite(target):
        target = float(rng.normal())
    x2 = float(target)
    for _ in range(int(rng.integers(0, 4))):
        x2 = math.nextafter(x2, math.inf if rng.random() < 0.5 else -math.inf)
    return np.array([x0, x1, x2])


@pytest.mark.parametrize("shape", SHAPES)
def test_near_cancellations_are_enclosed_exactly(shape):
    """At adversarial points the exact rational value lies in the point enclosure, which lies in the
    plain one; for a * b - c and c - a * b with c finite the enclosure is the residual's own interval
    (a point when the residual is a double, else at most two floats wide) and a sum that cancels
    exactly is exactly 0."""
    builder, slot = residual_tape(shape)
    tape = builder.build(slot)
    rng = np.random.default_rng(sum(map(ord, shape)))
    tighter = 0
    for _ in range(300):
        x = adversarial_point(rng, shape)
        exact = exact_fraction(tape, x)
        lo, hi = check_point(tape, x, exact)
        plain = plain_enclosure(tape, x)
        tighter += (lo, hi) != plain
        if shape in ("ab-c", "c-ab") and math.isfinite(lo) and abs(x[0] * x[1]) >= 2.0**-900:
            residual = float(exact)  # the nearest double
            if Fraction(residual) == exact:
                assert lo == hi == residual, (x, lo, hi, exact)
            else:
                assert math.nextafter(math.nextafter(lo, math.inf), math.inf) >= hi, (x, lo, hi)
        if shape == "(ab-c)+(c-ab)" and math.isfinite(lo) and abs(x[0] * x[1]) >= 2.0**-900:
            assert lo == hi == 0.0, (x, lo, hi)
    assert tighter > 30  # the balls do something on these points


def test_the_residual_of_a_product_is_kept_through_the_rest_of_a_tape():
    """0.01 * 100 - 1 = 2.08e-17 (0.01 is a double above 1/100): exact, and sqrt, exp and abs of it
    enclose arb's value, as narrow as the operation allows."""
    builder = TapeBuilder(2)
    x0, x1 = builder.var(0), builder.var(1)
    residual = builder.binary(Op.SUB, builder.binary(Op.MUL, builder.const(0.01), builder.powi(x0, 2)), x1)
    x = np.array([-10.0, 1.0])
    exact = Fraction(0.01) * 100 - 1
    assert check_point(builder.build(residual), x, exact) == (float(exact), float(exact))
    for code in (Op.SQRT, Op.EXP, Op.ABS, Op.NEG, Op.TANH):
        slot = builder.unary(code, residual)
        lo, hi = check_point(builder.build(slot), x)
        assert hi - lo <= (2 * LIBRARY_ULPS + 1) * math.ulp(abs(hi)), (code.name, lo, hi)  # not 1e-8 wide


def test_random_expressions_at_random_points():
    """Random tapes over every opcode with cancellations planted: arb's value in the point
    enclosure, the point enclosure in the plain one."""
    rng = np.random.default_rng(35)
    checked = 0
    for _ in range(150):
        d = int(rng.integers(1, 4))
        builder, slot = random_expression(rng, d, int(rng.integers(2, 9)))
        x = rng.normal(size=d) * 10.0 ** rng.uniform(-2, 2, d)
        planted = builder.binary(Op.MUL, builder.var(0), builder.var(d - 1))
        value = float(x[0] * x[d - 1])
        slot = builder.binary(Op.ADD, builder.binary(Op.SUB, planted, builder.const(value)), slot)
        tape = builder.build(slot)
        try:
            check_point(tape, x)
        except Undecidable:
            continue
        checked += 1
    assert checked > 100


def test_overflow_and_underflow_fall_back_to_the_plain_enclosure():
    """Products that overflow or whose residual would underflow: the enclosure still holds the exact
    value and lies in the plain one."""
    builder, slot = residual_tape("ab-c")
    tape = builder.build(slot)
    for x in (
        [1e200, 1e200, 1.0],  # a * b overflows: the plain [MAX, inf)
        [1.7e308, 1.0000001, 1.7e308],
        [1e-170, 1e-170, 1e-320],  # the product underflows
        [5e-324, 0.75, 5e-324],
        [3e-160, 7e-161, 2.1e-320],
        [0.0, 1e308, -0.0],
    ):
        x = np.array(x)
        exact = Fraction(x[0]) * Fraction(x[1]) - Fraction(x[2])
        check_point(tape, x, exact)


def test_bukin6_point_value_and_proof():
    """Issue 35: at (-10, 1) f is 100 sqrt(2.08e-17) = 4.6e-7, enclosed below 1e-6; the CPU B&B proves
    the optimum 0 within eps_abs = 1e-6 in 20 s, with a certified bound at or below 0."""
    problem = load_problem(BUKIN)
    point = evaluate_point(problem.tape, np.array([-10.0, 1.0]))
    value = arb_outputs(problem.tape, [-10.0, 1.0])[0]
    assert encloses(point.f_lo, point.f_hi, value) is True
    assert 4.5e-7 < point.f_lo <= point.f_hi < 4.6e-7
    result = minimize(problem, MinimizeOptions(time_limit=20.0, parallel=False))
    assert result.status == "optimal", result
    assert result.lower_bound <= 0.0 < result.objective < 1e-6
    at_x = arb_outputs(problem.tape, result.x)[0]
    assert encloses(-math.inf, result.objective, at_x) is True  # the reported value is an upper bound there


def test_bukin6_ends_at_its_polished_root_point_before_the_grid(monkeypatch):
    """Issue 35 (Bukin N.6's fixed cost): the root's best point moved onto the kinks is offered
    first; it verifies below 1e-6 and the root's bound is 0, so the search ends there, with no grid
    of first candidates evaluated and no local solve."""
    from pbbflow.spatial import explorer

    def no_grid(*args):
        raise AssertionError("the grid of first candidates was evaluated")

    monkeypatch.setattr(explorer, "first_candidates", no_grid)
    result = minimize(load_problem(BUKIN), MinimizeOptions(parallel=False))
    assert result.status == "optimal" and result.nodes == 1
    assert result.extras["local_solves"] == 0
    assert result.lower_bound <= 0.0 < result.objective < 1e-6
