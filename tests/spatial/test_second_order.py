"""The second-order box bound (:mod:`pbbflow.spatial.second_order`) against exact rationals and arb,
and what it does to searches: a bound at or below f at every sampled point of random expressions'
boxes, sharp at a minimizer of a convex function, none over a kink."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import flint
import numpy as np
import pytest
from spatial_helpers import Undecidable, arb_outputs, random_expression

from pbbflow.spatial import Model
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.second_order import _quadratic_minimum, second_order_bounds
from pbbflow.spatial.tape import Op, TapeBuilder

PROBLEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "problems"


def _exact_quadratic_minimum(glo: float, ghi: float, s: float, tlo: float, thi: float) -> Fraction:
    """min of g t + s t^2 / 2 over g in {glo, ghi} (the minimum over [glo, ghi] is at an end) and t
    in [tlo, thi], in rationals."""
    s_, lo, hi = Fraction(s), Fraction(tlo), Fraction(thi)
    best = None
    for g in (Fraction(glo), Fraction(ghi)):
        candidates = [lo, hi]
        if s_ > 0 and lo <= -g / s_ <= hi:
            candidates.append(-g / s_)
        for t in candidates:
            value = g * t + s_ * t * t / 2
            best = value if best is None or value < best else best
    return best


def test_the_quadratic_minimum_is_a_sharp_lower_bound_of_the_exact_one():
    rng = np.random.default_rng(11)
    for _ in range(20_000):
        scale = 10.0 ** rng.uniform(-8, 3)
        g = np.sort(rng.normal(size=2) * scale)
        if rng.random() < 0.3:
            g[1] = g[0]  # a point gradient
        s = float(rng.choice([0.0, rng.normal() * 10.0 ** rng.uniform(-6, 4)]))
        tlo, thi = -float(rng.random()) * 10.0 ** rng.uniform(-8, 2), float(rng.random()) * 10.0 ** rng.uniform(-8, 2)
        bound = _quadratic_minimum(float(g[0]), float(g[1]), s, tlo, thi)
        exact = _exact_quadratic_minimum(float(g[0]), float(g[1]), s, tlo, thi)
        assert Fraction(bound) <= exact, (g, s, tlo, thi)
        assert float(exact) - bound <= 1e-12 * (1.0 + abs(float(exact))), (g, s, tlo, thi, bound, exact)


def _exact_f(tape, x):
    try:
        return arb_outputs(tape, x)[0]
    except Undecidable:
        return None


def check_random_expressions(seed: int, count: int) -> tuple[int, int]:
    """At every sampled point of random boxes (corners, centre, the expansion points, random ones)
    where f is defined, the second-order bound from the centre and from a random point of the box
    is at or below arb's f. Returns (finite bounds, points checked)."""
    rng = np.random.default_rng(seed)
    finite = checked = 0
    for _ in range(count):
        d = int(rng.integers(1, 4))
        builder, slot = random_expression(rng, d, int(rng.integers(2, 10)))
        tape = builder.build(slot)
        centre = rng.uniform(-3, 3, d)
        half = 10.0 ** rng.uniform(-4, 0.3, d)
        lo, hi = centre - half, centre + half
        inside = lo + (hi - lo) * rng.random(d)
        points = np.stack([0.5 * (lo + hi), inside])[None]
        lb = float(second_order_bounds(tape, lo[None], hi[None], points)[0])
        if lb == -math.inf:
            continue
        finite += 1
        corners = [np.where(np.array([(c >> i) & 1 for i in range(d)], bool), hi, lo) for c in range(2**d)]
        samples = [*corners, *points[0], *(lo + (hi - lo) * rng.random((12, d)))]
        for x in samples:
            value = _exact_f(tape, x)
            if value is None:
                continue
            checked += 1
            assert not flint.arb(lb) > value, (tape, lo, hi, x, lb, value)
    return finite, checked


def test_random_expressions_are_bounded_from_below_at_every_sampled_point():
    finite, checked = check_random_expressions(5, 1500)
    assert finite > 300 and checked > 5000


@pytest.mark.slow
def test_random_expressions_soak():
    finite, checked = check_random_expressions(17, 20_000)
    assert finite > 4000 and checked > 60_000


def test_the_bound_is_sharp_at_the_minimizer_of_a_convex_function():
    """f = (x - 1)^2 + (y + 2)^2 + xy / 2 is convex (Hessian [[2, 1/2], [1/2, 2]]); expanded at its
    minimizer the bound over any box around it is f's minimum up to rounding; from the centre of a
    box away from it, it is at or below f's minimum over the box (by a fine grid)."""
    model = Model("bowl")
    x, y = model.variable(-10, 10), model.variable(-10, 10)
    model.minimize((x - 1) ** 2 + (y + 2) ** 2 + x * y / 2)
    tape = model.problem().tape
    star = np.linalg.solve([[2.0, 0.5], [0.5, 2.0]], [2.0, -4.0])  # the gradient 2(x - 1) + y/2, 2(y + 2) + x/2 = 0
    f_star = (star[0] - 1) ** 2 + (star[1] + 2) ** 2 + star[0] * star[1] / 2
    for width in (10.0, 1.0, 1e-3):
        lo, hi = star - width, star + width
        lb = second_order_bounds(tape, lo[None], hi[None], star[None, None, :])[0]
        assert f_star - 1e-12 <= lb <= f_star + 1e-12 * (1 + width)
    lo, hi = np.array([3.0, 3.0]), np.array([4.0, 5.0])
    lb = second_order_bounds(tape, lo[None], hi[None], (0.5 * (lo + hi))[None, None, :])[0]
    grid = np.stack(np.meshgrid(np.linspace(3, 4, 101), np.linspace(3, 5, 101)), axis=-1).reshape(-1, 2)
    values = (grid[:, 0] - 1) ** 2 + (grid[:, 1] + 2) ** 2 + grid[:, 0] * grid[:, 1] / 2
    assert lb <= values.min() and values.min() - lb < 5.0  # the curvature of the sides taken, not wild


@pytest.mark.parametrize("op", [Op.ABS, Op.RELU])
def test_a_kink_inside_gives_no_bound_and_one_outside_does(op):
    """op(x - 1/4) + x: no second derivative at 1/4, so no bound over [-1, 1]; over [1/2, 1] one,
    at or below f there (a grid in arb)."""
    builder = TapeBuilder(1)
    v = builder.var(0)
    tape = builder.build(builder.binary(Op.ADD, builder.unary(op, builder.binary(Op.SUB, v, builder.const(0.25))), v))
    across = second_order_bounds(tape, np.array([[-1.0]]), np.array([[1.0]]), np.array([[[0.0]]]))[0]
    right = second_order_bounds(tape, np.array([[0.5]]), np.array([[1.0]]), np.array([[[0.75]]]))[0]
    assert across == -math.inf and math.isfinite(right)
    assert all(not flint.arb(right) > _exact_f(tape, [t]) for t in np.linspace(0.5, 1.0, 51))


def test_trid_is_proved_in_a_few_boxes():
    """Trid-6 (a convex quadratic) takes 238,795 boxes of 64 subdomains without the bound (measured
    on 2026-12-05); with it, a few: every box around the minimizer is pruned whole."""
    trid = load_problem(str(PROBLEMS / "trid-6.json"))
    result = minimize(trid, MinimizeOptions(parallel=False))
    assert result.status == "optimal" and result.nodes <= 20 and result.lower_bound <= -50.0 <= result.objective


def _kink_at_the_edge(kind: str):
    builder = TapeBuilder(1)
    x = builder.var(0)
    if kind == "abs":  # -|x| = x on [-1, 0]
        slot = builder.unary(Op.NEG, builder.unary(Op.ABS, x))
    elif kind == "relu":  # -relu(-x) = x on [-1, 0]
        slot = builder.unary(Op.NEG, builder.unary(Op.RELU, builder.unary(Op.NEG, x)))
    elif kind == "min":  # min(0, x) = x on [-1, 0]
        slot = builder.binary(Op.MIN, builder.const(0.0), x)
    else:  # max(0, x) - 2x: -2x on [-1, 0], its minimum 0 at 0; -max(0, -x) = x
        slot = builder.unary(Op.NEG, builder.binary(Op.MAX, builder.const(0.0), builder.unary(Op.NEG, x)))
    return builder.build(slot)


@pytest.mark.parametrize("kind", ["abs", "relu", "min", "max"])
def test_a_point_on_a_kink_at_the_box_edge_takes_the_box_side_slope(kind):
    """f = x on [-1, 0] written with a kink at 0 (its minimum -1): expanded at p = 0, where the
    point alone cannot tell which side's slope is f's over the box, the bound stays <= -1."""
    tape = _kink_at_the_edge(kind)
    lb = second_order_bounds(tape, np.array([[-1.0]]), np.array([[0.0]]), np.array([[[0.0]]]))[0]
    assert lb <= -1.0 and lb == pytest.approx(-1.0)
