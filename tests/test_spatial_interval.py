"""Interval primitives against python-flint's arb: every result encloses the exact value at sample
points of its operands (0 violations), special cases of the set-based semantics, tightness."""

from __future__ import annotations

import math

import flint
import numpy as np
import pytest
from spatial_helpers import PRECISION, Undecidable, Undefined, arb_binary, arb_unary, encloses

from pbbflow.spatial import interval as iv
from pbbflow.spatial.tape import Op

INF = math.inf
MAX = 1.7976931348623157e308

UNARY = {
    Op.NEG: iv.neg, Op.SQRT: iv.sqrt, Op.EXP: iv.exp, Op.LOG: iv.log, Op.TANH: iv.tanh, Op.SIN: iv.sin,
    Op.COS: iv.cos, Op.TAN: iv.tan, Op.ABS: iv.abs_, Op.SIGMOID: iv.sigmoid, Op.RELU: iv.relu,
}
BINARY = {
    Op.ADD: iv.add, Op.SUB: iv.sub, Op.MUL: iv.mul, Op.DIV: iv.div, Op.ATAN2: iv.atan2, Op.MIN: iv.min_,
    Op.MAX: iv.max_,
}


@pytest.fixture(autouse=True)
def _precision():
    old = flint.ctx.prec
    flint.ctx.prec = PRECISION
    yield
    flint.ctx.prec = old


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
        centre = float(rng.integers(-10**6, 10**6)) * math.pi
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


@pytest.mark.parametrize("code", list(UNARY), ids=lambda c: c.name)
def test_unary_operations_enclose_arb(code):
    rng = np.random.default_rng(int(code))
    function = UNARY[code]
    violations = 0
    for _ in range(600):
        lo, hi = random_interval(rng)
        result = function(lo, hi)
        assert result[0] <= result[1] or (math.isnan(result[0]) and math.isnan(result[1]))
        for x in sample_points(rng, lo, hi):
            violations += check_enclosure(result, lambda: arb_unary(code, flint.arb(x)), (code.name, lo, hi, x))
    assert violations == 0


@pytest.mark.parametrize("code", list(BINARY), ids=lambda c: c.name)
def test_binary_operations_enclose_arb(code):
    rng = np.random.default_rng(100 + int(code))
    function = BINARY[code]
    violations = 0
    for _ in range(500):
        alo, ahi = random_interval(rng)
        blo, bhi = random_interval(rng)
        result = function(alo, ahi, blo, bhi)
        assert result[0] <= result[1] or (math.isnan(result[0]) and math.isnan(result[1]))
        xs = sample_points(rng, alo, ahi)
        ys = sample_points(rng, blo, bhi)
        for x in xs:
            for y in ys[:4]:
                violations += check_enclosure(
                    result, lambda: arb_binary(code, flint.arb(x), flint.arb(y)), (code.name, alo, ahi, blo, bhi, x, y))
    assert violations == 0


def test_integer_powers_enclose_arb():
    rng = np.random.default_rng(7)
    violations = 0
    for _ in range(800):
        lo, hi = random_interval(rng)
        k = int(rng.choice([-7, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 8, 31, 2**31 - 1]))
        result = iv.powi(lo, hi, k)
        for x in sample_points(rng, lo, hi):
            if abs(k) > 100 and x not in (0.0, 1.0, -1.0) and abs(x) > 1e-300:
                continue  # arb's x ** (2^31 - 1) of a general x is too slow; 0 and +-1 are exact
            violations += check_enclosure(result, lambda: arb_unary(Op.POWI, flint.arb(x), k), (k, lo, hi, x))
    assert violations == 0


def test_directed_operations_are_the_correctly_rounded_neighbours():
    """add/mul/div/sqrt _down and _up bracket the exact value, one float apart at most (two where
    an operand or the result is tiny: there the residual may underflow and both ends step out)."""
    flint.ctx.prec = 4000  # sums of doubles are exact at about 2,100 bits
    rng = np.random.default_rng(3)
    for _ in range(3000):
        a, b = (rng.normal(size=2) * 10.0 ** rng.integers(-320, 300, 2)).tolist()
        for down, up, exact in (
            (iv.add_down, iv.add_up, lambda: flint.arb(a) + flint.arb(b)),
            (iv.mul_down, iv.mul_up, lambda: flint.arb(a) * flint.arb(b)),
            (iv.div_down, iv.div_up, lambda: flint.arb(a) / flint.arb(b)),
        ):
            lo, hi = down(a, b), up(a, b)
            value = exact()
            assert encloses(lo, hi, value), (down, a, b)
            if math.isfinite(lo) and math.isfinite(hi):
                places = 1 if min(abs(lo), abs(a), abs(b)) >= 2.0**-900 else 2
                assert lo <= hi <= iv.step(lo, places)
        s = abs(a)
        assert encloses(iv.sqrt_down(s), iv.sqrt_up(s), flint.arb(s).sqrt())


def test_step_is_nextafter():
    for x in (0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, 2.2250738585072014e-308, MAX, -MAX, INF, -INF, 3.5e-310):
        assert iv.step(x, 1) == math.nextafter(x, INF)
        assert iv.step(x, -1) == math.nextafter(x, -INF)


def test_pi_and_e_enclosures_are_neighbouring_doubles():
    assert encloses(iv.PI_LO, iv.PI_HI, flint.arb.pi()) and iv.PI_HI == math.nextafter(iv.PI_LO, INF)
    assert encloses(iv.E_LO, iv.E_HI, flint.arb(1).exp()) and iv.E_HI == math.nextafter(iv.E_LO, INF)
    assert not flint.arb(iv.PI_LO) == flint.arb.pi()


def test_set_based_special_cases():
    assert iv.div(1.0, 2.0, 0.0, 1.0) == (1.0, INF)
    assert iv.div(1.0, 2.0, -1.0, 1.0) == (-INF, INF)
    assert iv.div(-2.0, -1.0, -1.0, 0.0) == (1.0, INF)
    assert iv.is_empty(*iv.div(1.0, 2.0, 0.0, 0.0))
    assert iv.powi(-1.0, 2.0, 2) == (0.0, 4.0)  # even power: exactly 0 at the interior zero
    assert iv.powi(-2.0, 3.0, -2) == (iv.div_down(1.0, 9.0), INF)
    assert iv.powi(-2.0, 3.0, -3) == (-INF, INF)
    assert iv.is_empty(*iv.powi(0.0, 0.0, -1))
    assert iv.powi(0.0, 0.0, 0) == (1.0, 1.0)
    lo, hi = iv.log(-1.0, 2.0)
    assert lo == -INF and encloses(lo, hi, flint.arb(2).log()) and hi < 0.6931471805599463
    assert iv.is_empty(*iv.log(-2.0, 0.0)) and iv.is_empty(*iv.sqrt(-2.0, -1.0))
    assert iv.sqrt(-1.0, 4.0) == (0.0, 2.0)
    assert iv.mul(0.0, 0.0, 1.0, INF) == (0.0, 0.0) and iv.mul(0.0, 0.0, -INF, INF) == (0.0, 0.0)
    assert iv.mul(0.0, 1.0, 1.0, INF) == (0.0, INF)
    assert iv.add(MAX, MAX, MAX, MAX) == (MAX, INF)  # overflow: the lower end stays finite
    assert iv.sub(-INF, 1.0, -INF, 2.0) == (-INF, INF)
    assert iv.exp(1000.0, 1001.0)[1] == INF and iv.exp(1000.0, 1001.0)[0] > 1e308
    assert iv.exp(-INF, 0.0)[0] == 0.0
    assert iv.tanh(-INF, INF) == (-1.0, 1.0) and iv.sigmoid(-INF, INF) == (0.0, 1.0)
    assert iv.sin(-INF, 0.0) == (-1.0, 1.0) and iv.cos(1e300, 1e300) == (-1.0, 1.0)
    assert iv.cos(-0.1, 0.1)[1] == 1.0 and iv.sin(1.5, 1.6)[1] == 1.0 and iv.cos(3.1, 3.2)[0] == -1.0
    assert iv.tan(1.5, 1.6) == (-INF, INF) and iv.tan(-1.0, 1.0)[1] < 1.6
    assert iv.is_empty(*iv.atan2(0.0, 0.0, -0.0, 0.0))
    lo, hi = iv.atan2(0.0, 0.0, -2.0, -1.0)  # on the cut: pi
    assert encloses(lo, hi, flint.arb.pi()) and lo > 3.14159 and hi == iv.PI_HI
    assert iv.atan2(-1.0, 1.0, -2.0, -1.0) == (-iv.PI_HI, iv.PI_HI)
    assert iv.abs_(-2.0, 1.0) == (0.0, 2.0) and iv.relu(-2.0, 1.0) == (0.0, 1.0)
    assert iv.is_empty(*iv.intersect(0.0, 1.0, 2.0, 3.0)) and iv.intersect(0.0, 2.0, 1.0, 3.0) == (1.0, 2.0)


def test_empty_propagates_through_every_operation():
    empty = iv.EMPTY
    for function in UNARY.values():
        assert iv.is_empty(*function(*empty))
    for function in BINARY.values():
        assert iv.is_empty(*function(*empty, 1.0, 2.0)) and iv.is_empty(*function(1.0, 2.0, *empty))
    assert iv.is_empty(*iv.powi(*empty, 2)) and iv.is_empty(*iv.powi(*empty, 0))


def test_no_nan_from_valid_operands():
    """A NaN end is only ever EMPTY (both ends); infinite operands never produce one."""
    specials = [(-INF, INF), (-INF, 0.0), (0.0, INF), (0.0, 0.0), (-INF, -MAX), (MAX, INF), (-1.0, 1.0)]
    for a in specials:
        for function in UNARY.values():
            lo, hi = function(*a)
            assert math.isnan(lo) == math.isnan(hi)
            assert not math.isnan(lo) or function in (iv.sqrt, iv.log)
        for b in specials:
            for function in BINARY.values():
                lo, hi = function(*a, *b)
                assert math.isnan(lo) == math.isnan(hi)
                assert not math.isnan(lo) or function in (iv.div, iv.atan2)


def test_results_are_tight_for_points():
    """A point operand gives a result a few ulps wide (library functions: 8 floats at most)."""
    rng = np.random.default_rng(11)
    for x in rng.uniform(-20, 20, 200).tolist():
        for code, function in UNARY.items():
            if (code in (Op.SQRT, Op.LOG) and x <= 0) or (code is Op.TAN and abs(math.cos(x)) < 1e-3):
                continue
            lo, hi = function(x, x)
            assert hi - lo <= 1e-14 * max(1.0, abs(hi)), (code, x, lo, hi)
        for code, function in BINARY.items():
            lo, hi = function(x, x, 1.5, 1.5)
            assert hi - lo <= 1e-14 * max(1.0, abs(hi)), (code, x, lo, hi)
    assert iv.add(0.1, 0.1, 0.2, 0.2)[1] == math.nextafter(iv.add(0.1, 0.1, 0.2, 0.2)[0], INF)
    assert iv.mul(3.0, 3.0, 7.0, 7.0) == (21.0, 21.0)  # exact results stay points
