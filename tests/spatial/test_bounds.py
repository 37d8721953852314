"""Tape evaluators and subdomain lower bounding against arb, known optima and the peaks ANN's
reference root bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from spatial_helpers import BINARY_CODES, UNARY_CODES, Undecidable, arb_outputs, encloses, random_expression

from pbbflow.spatial import Model
from pbbflow.spatial.bounds import Mode, bound_boxes, evaluate_point, is_feasible, subdomain_edges
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.tape import BINARY, UNARY, Op, TapeBuilder

MODES = (Mode.NIE, Mode.MVF, Mode.BOTH)


def random_box(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    centre = rng.uniform(-3, 3, d)
    half = 10.0 ** rng.uniform(-6, 0.5, d)
    return centre - half, centre + half


def box_samples(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, n: int = 6) -> list[np.ndarray]:
    corners = [np.where(np.array([(c >> i) & 1 for i in range(len(lo))], bool), hi, lo) for c in range(2 ** len(lo))]
    return corners + [(lo + hi) / 2] + [lo + (hi - lo) * rng.random(len(lo)) for _ in range(n)]


def exact_value(tape, x):
    """arb's f at x, None where undefined, 'skip' where the oracle cannot decide."""
    try:
        return arb_outputs(tape, x)[0]
    except Undecidable:
        return "skip"


def check_random_expressions(seed: int, count: int) -> int:
    """f(x) >= lb(f) and -f(x) >= lb(-f) at sample points of random boxes, for NIE, MVF and both, on
    1 and 2**d subdomains; the point evaluator encloses f(x); a box reported without any kept
    subdomain has no sample point where f is defined. Returns the number of checks."""
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(count):
        d = int(rng.integers(1, 4))
        builder, slot = random_expression(rng, d, int(rng.integers(3, 12)))
        tape = builder.build(slot)
        negated = builder.build(builder.unary(Op.NEG, slot))
        lo, hi = random_box(rng, d)
        samples = box_samples(rng, lo, hi)
        values = [exact_value(tape, x) for x in samples]
        for x, value in zip(samples, values):
            if value is None or value == "skip":
                continue
            point = evaluate_point(tape, x)
            assert encloses(point.f_lo, point.f_hi, value) is not False, (x, point)
        for n in (1, 2):
            for mode in MODES:
                low = bound_boxes(tape, lo[None], hi[None], n, mode, parallel=False)
                high = bound_boxes(negated, lo[None], hi[None], n, mode, parallel=False)
                for value in values:
                    if value is None or value == "skip":
                        continue
                    checked += 1
                    assert encloses(low.lb[0], -high.lb[0], value) is not False, (tape.to_json(), lo, hi, n, mode)
                if low.n_kept[0] == 0:
                    assert all(value is None or value == "skip" for value in values)
    return checked


def test_random_expressions_draw_every_opcode():
    """An opcode added to the tape must join the random expressions (and arb's reference in
    spatial_helpers): the evaluators' branches for it are tested only there, and an evaluator
    without one silently treats it as RELU (their last branch), a bound that may lie above f."""
    assert set(UNARY_CODES) == UNARY
    assert set(BINARY_CODES) == BINARY


def test_random_expressions_are_enclosed_by_every_evaluator():
    assert check_random_expressions(2024, 400) > 8000


@pytest.mark.slow
def test_random_expressions_soak():
    assert check_random_expressions(7, 5000) > 100000


def test_point_evaluation_and_feasibility():
    builder = TapeBuilder(2)
    x, y = builder.var(0), builder.var(1)
    f = builder.binary(Op.ADD, builder.powi(x, 2), builder.powi(y, 2))
    g = builder.binary(Op.SUB, builder.binary(Op.ADD, x, y), builder.const(1.0))  # x + y - 1 <= 0
    h = builder.binary(Op.SUB, x, builder.unary(Op.SQRT, y))  # x - sqrt(y) == 0
    tape = builder.build(f, [g], [h])
    value = evaluate_point(tape, np.array([0.25, 0.0625]))
    assert value.f_lo <= 0.25**2 + 0.0625**2 <= value.f_hi and value.g_hi[0] <= 0.0
    assert value.h_lo[0] == 0.0 == value.h_hi[0] and is_feasible(value, 0.0)
    assert not is_feasible(evaluate_point(tape, np.array([0.9, 0.9])), 1e-6)  # g > 0
    assert not is_feasible(evaluate_point(tape, np.array([0.5, 0.2])), 1e-6)  # |h| > tol
    assert not is_feasible(evaluate_point(tape, np.array([0.0, -1.0])), 1e-6)  # h undefined there
    assert math.isnan(evaluate_point(tape, np.array([0.0, -1.0])).h_lo[0])


def test_subdomains_cover_the_box_exactly():
    rng = np.random.default_rng(5)
    lo = np.vstack([rng.uniform(-5, 0, (20, 3)), [[-1.7e308, 0.1, 1.0]], [[1.0, 1.0, -5e-324]]])
    hi = np.vstack(
        [
            lo[:20] + 10.0 ** rng.uniform(-15, 2, (20, 3)),
            [[1.7e308, 0.1 + 1e-16, 1.0 + 2e-16]],
            [[1.0, 1.0 + 2.3e-16, 5e-324]],
        ]
    )
    for n in (1, 2, 3, 7, 32):
        edges = subdomain_edges(lo, hi, n)
        assert np.array_equal(edges[..., 0], lo) and np.array_equal(edges[..., -1], hi)
        assert np.all(edges[..., 1:] >= edges[..., :-1])
    assert np.array_equal(subdomain_edges(np.array([[0.0]]), np.array([[1.0]]), 4)[0, 0], [0, 0.25, 0.5, 0.75, 1])


def six_hump_camel():
    """(4 - 2.1 x^2 + x^4 / 3) x^2 + x y + (-4 + 4 y^2) y^2, global minimum -1.0316284534898774."""
    m = Model("six-hump camel")
    x, y = m.variable(-3, 3), m.variable(-2, 2)
    m.minimize((4 - 2.1 * x**2 + x**4 / 3) * x**2 + x * y + (-4 + 4 * y**2) * y**2)
    return m.problem().tape


def test_lower_bounds_are_below_known_minima_and_dense_samples():
    tape = six_hump_camel()
    lo, hi = np.array([[-3.0, -2.0]]), np.array([[3.0, 2.0]])
    grid = np.stack(np.meshgrid(np.linspace(-3, 3, 301), np.linspace(-2, 2, 201)), -1).reshape(-1, 2)
    gx, gy = grid[:, 0], grid[:, 1]
    sampled = np.min((4 - 2.1 * gx**2 + gx**4 / 3) * gx**2 + gx * gy + (-4 + 4 * gy**2) * gy**2)
    for n in (1, 4, 16, 64):
        for mode in MODES:
            result = bound_boxes(tape, lo, hi, n, mode)
            assert result.lb[0] <= -1.0316284534898774 <= sampled
            assert result.n_kept[0] == n * n and result.n_fallback[0] == 0
    assert bound_boxes(tape, lo, hi, 64, Mode.BOTH).lb[0] > -1.1  # and not absurdly low


def test_nie_lower_bounds_grow_with_nested_subdomains():
    tape = six_hump_camel()
    rng = np.random.default_rng(9)
    lo = rng.uniform(-3, 0, (5, 2))
    hi = lo + rng.uniform(0.1, 3, (5, 2))
    previous = np.full(5, -np.inf)
    for n in (1, 2, 4, 8, 16):  # each split refines the one before (the edges are the same floats)
        lb = bound_boxes(tape, lo, hi, n, Mode.NIE).lb
        assert np.all(lb >= previous)
        previous = lb


def test_parallel_and_serial_give_identical_results():
    tape = load_problem("peaks-ann").tape
    rng = np.random.default_rng(1)
    lo = rng.uniform(-3, 2, (7, 2))
    hi = np.minimum(lo + rng.uniform(0.01, 2, (7, 2)), 3.0)
    for mode in MODES:
        for n in (1, 5, 9):
            serial = bound_boxes(tape, lo, hi, n, mode, parallel=False)
            parallel = bound_boxes(tape, lo, hi, n, mode, parallel=True)
            for name in ("lb", "best_point", "n_kept", "n_fallback"):
                np.testing.assert_array_equal(getattr(serial, name), getattr(parallel, name))


def test_infeasible_boxes_and_subdomains_are_dropped():
    b = TapeBuilder(2)
    x, y = b.var(0), b.var(1)
    f = b.binary(Op.ADD, x, y)
    outside_disk = b.binary(Op.SUB, b.const(1.0), b.binary(Op.ADD, b.powi(x, 2), b.powi(y, 2)))  # 1 - |x|^2 <= 0
    on_line = b.binary(Op.SUB, x, b.binary(Op.ADD, y, b.const(10.0)))  # x - y - 10 == 0
    ring = b.build(f, [outside_disk])
    line = b.build(f, [], [on_line])
    inside = bound_boxes(ring, np.array([[-0.5, -0.5]]), np.array([[0.5, 0.5]]), 4, Mode.BOTH)
    assert inside.lb[0] == math.inf and inside.n_kept[0] == 0 and np.all(np.isnan(inside.best_point))
    assert bound_boxes(line, np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]]), 3, Mode.NIE).lb[0] == math.inf
    part = bound_boxes(ring, np.array([[-2.0, -2.0]]), np.array([[2.0, 2.0]]), 8, Mode.BOTH)
    assert 0 < part.n_kept[0] < 64 and part.lb[0] <= -4.0  # the minimum of x + y there is -4
    undefined = b.build(b.unary(Op.LOG, b.binary(Op.SUB, x, b.const(5.0))))  # log(x - 5) on x <= 3
    assert bound_boxes(undefined, np.array([[0.0, 0.0]]), np.array([[3.0, 3.0]]), 2, Mode.BOTH).lb[0] == math.inf


def test_kinks_fall_back_to_nie():
    b = TapeBuilder(2)
    f = b.build(b.binary(Op.ADD, b.unary(Op.ABS, b.var(0)), b.var(1)))
    lo, hi = np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]])
    assert bound_boxes(f, lo, hi, 2, Mode.BOTH).n_fallback[0] == 0  # the kink x = 0 is an edge
    split3 = bound_boxes(f, lo, hi, 3, Mode.MVF)
    assert split3.n_fallback[0] == 3 and split3.lb[0] <= -1.0  # the middle column holds x = 0
    assert bound_boxes(f, lo, hi, 3, Mode.NIE).n_fallback[0] == 0
    sqrt_at_zero = b.build(b.unary(Op.SQRT, b.var(0)))
    result = bound_boxes(sqrt_at_zero, np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]]), 2, Mode.MVF)
    assert result.n_fallback[0] == 2 and result.lb[0] == 0.0


def test_peaks_ann_root_bounds_match_the_reference():
    problem = load_problem("peaks-ann")
    tape, net = problem.tape, {"ann_min_f": problem.optimum, "ann_min_x": problem.x_optimum}
    lo, hi = np.array([[-3.0, -3.0]]), np.array([[3.0, 3.0]])
    reference = {
        Mode.NIE: {1: -44.17, 8: -33.94, 32: -12.08, 64: -9.65, 128: -8.18},
        Mode.MVF: {8: -35.40, 32: -8.66, 64: -7.05, 128: -6.65},
    }
    for mode, bounds in reference.items():
        for n, expected in bounds.items():
            lb = bound_boxes(tape, lo, hi, n, mode).lb[0]
            assert lb <= net["ann_min_f"] and abs(lb - expected) <= 0.05, (mode, n, lb)
    both = bound_boxes(tape, lo, hi, 32, Mode.BOTH)
    separate = [bound_boxes(tape, lo, hi, 32, mode).lb[0] for mode in (Mode.NIE, Mode.MVF)]
    assert max(separate) <= both.lb[0] <= net["ann_min_f"]  # min of maxima >= max of minima
    value = evaluate_point(tape, both.best_point[0])
    assert value.f_lo >= both.lb[0] and value.f_lo <= -6.0  # the best subdomain's midpoint is good
    at_min = evaluate_point(tape, np.array(net["ann_min_x"]))
    assert at_min.f_lo <= net["ann_min_f"] <= at_min.f_hi and at_min.f_hi - at_min.f_lo < 1e-12


def test_the_hull_below_a_threshold_keeps_every_point_below_it():
    """Outside the hull of the subdomains whose lb is below t, no sampled point has f < t (nor is
    any infeasible subdomain part of it); t = +inf keeps every feasible subdomain."""
    tape = six_hump_camel()
    lo, hi = np.array([[-3.0, -2.0]]), np.array([[3.0, 2.0]])
    grid = np.stack(np.meshgrid(np.linspace(-3, 3, 241), np.linspace(-2, 2, 161)), -1).reshape(-1, 2)
    gx, gy = grid[:, 0], grid[:, 1]
    values = (4 - 2.1 * gx**2 + gx**4 / 3) * gx**2 + gx * gy + (-4 + 4 * gy**2) * gy**2
    for threshold in (-1.0, 0.0, 2.0):
        for mode in MODES:
            found = bound_boxes(tape, lo, hi, 16, mode, threshold=np.array([threshold]))
            inside = np.all((grid >= found.hull_lo[0]) & (grid <= found.hull_hi[0]), axis=1)
            assert np.all(values[~inside] >= threshold - 1e-12)
            assert np.all(found.hull_lo[0] >= lo[0]) and np.all(found.hull_hi[0] <= hi[0])
            assert np.any(found.hull_hi[0] - found.hull_lo[0] < hi[0] - lo[0])  # something was cut
    whole = bound_boxes(tape, lo, hi, 16, Mode.BOTH)
    np.testing.assert_array_equal(np.stack([whole.hull_lo[0], whole.hull_hi[0]]), np.stack([lo[0], hi[0]]))
    nothing = bound_boxes(tape, lo, hi, 16, Mode.BOTH, threshold=np.array([-1e6]))  # below every bound
    assert np.all(np.isnan(nothing.hull_lo)) and np.all(np.isnan(nothing.hull_hi))


def test_a_code_no_evaluator_knows_gives_no_value_never_another_operations():
    """An operation added to the tape but not to an evaluator (Tape.check refuses unknown codes from
    files; this is the developer's slip) yields the whole line or NaN, never relu's range or slope."""
    from pbbflow.spatial import bounds, contract, floateval

    unknown = max(int(code) for code in Op) + 1
    slots = np.array([-2.0, 3.0])
    vlo, vhi = np.array([[-2.0], [0.0]]), np.array([[-1.0], [0.0]])
    bounds._values.py_func(unknown, 0, 0, 1, 1, vlo, vhi)
    assert (vlo[1, 0], vhi[1, 0]) == (-math.inf, math.inf)
    assert bounds._unary_derivative.py_func(unknown, -2.0, -1.0, 0.0, 0.0, 0) == (-math.inf, math.inf, True)
    assert contract._forward.py_func(unknown, -2.0, -1.0, 0.0, 0.0, 0) == (-math.inf, math.inf)
    assert math.isnan(floateval._value.py_func(unknown, slots, 0, 1))
    assert all(math.isnan(v) for v in floateval._partials.py_func(unknown, -2.0, 3.0, 0.0, 0))
