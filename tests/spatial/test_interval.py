"""Interval primitives against python-flint's arb: every result encloses the exact value at sample
points of its operands (0 violations), special cases of the set-based semantics, tightness."""

from __future__ import annotations

import math

import flint
import numpy as np
import pytest
from spatial_helpers import (
    arb_binary,
    arb_unary,
    check_enclosure,
    encloses,
    random_interval,
    sample_points,
)

from pbbflow.spatial import interval as iv
from pbbflow.spatial import tape
from pbbflow.spatial.tape import Op

pytestmark = pytest.mark.usefixtures("arb_precision")

INF = math.inf
MAX = 1.7976931348623157e308

UNARY = {
    Op.NEG: iv.neg,
    Op.SQRT: iv.sqrt,
    Op.EXP: iv.exp,
    Op.LOG: iv.log,
    Op.TANH: iv.tanh,
    Op.SIN: iv.sin,
    Op.COS: iv.cos,
    Op.TAN: iv.tan,
    Op.ABS: iv.abs_,
    Op.SIGMOID: iv.sigmoid,
    Op.RELU: iv.relu,
}
BINARY = {
    Op.ADD: iv.add,
    Op.SUB: iv.sub,
    Op.MUL: iv.mul,
    Op.DIV: iv.div,
    Op.ATAN2: iv.atan2,
    Op.MIN: iv.min_,
    Op.MAX: iv.max_,
}


def test_every_operation_of_the_tape_is_checked_against_arb():
    """A new opcode's interval function joins these tables, so that it is checked against arb."""
    assert set(UNARY) == tape.UNARY
    assert set(BINARY) == tape.BINARY


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
                    result, lambda: arb_binary(code, flint.arb(x), flint.arb(y)), (code.name, alo, ahi, blo, bhi, x, y)
                )
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
