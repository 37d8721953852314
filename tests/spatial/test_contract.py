"""The FBBT contractor against arb: projections on random intervals, contracted random boxes keep
every sample point that satisfies the constraints, and B&B with and without contraction on the
problems of /work/shared/data/spatial."""

from __future__ import annotations

import math
from pathlib import Path

import flint
import numpy as np
import pytest
from spatial_helpers import (
    PRECISION,
    Undecidable,
    Undefined,
    arb_binary,
    arb_outputs,
    arb_unary,
    encloses,
    random_expression,
)

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.contract import contract_box, contract_boxes, project
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.problem import Problem
from pbbflow.spatial.tape import BINARY, Op, TapeBuilder

PROJECTED = [
    Op.ADD,
    Op.SUB,
    Op.MUL,
    Op.DIV,
    Op.NEG,
    Op.POWI,
    Op.SQRT,
    Op.EXP,
    Op.LOG,
    Op.TANH,
    Op.ABS,
    Op.RELU,
    Op.MIN,
    Op.MAX,
    Op.SIN,
    Op.ATAN2,
]  # SIN, ATAN2: skipped, must leave the operands
NICE = [0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-300, -1e-300, 1e300]


def exact(code: Op, a: float, b: float, k: int) -> flint.arb | None:
    """op(a, b) in arb (None where undefined); raises Undecidable."""
    old = flint.ctx.prec
    flint.ctx.prec = PRECISION
    try:
        x, y = flint.arb(a), flint.arb(b)
        return arb_binary(code, x, y) if code in BINARY else arb_unary(code, x, k)
    except Undefined:
        return None
    finally:
        flint.ctx.prec = old


def random_interval(rng: np.random.Generator) -> tuple[float, float]:
    kind = rng.random()
    if kind < 0.2:
        ends = rng.choice(NICE, 2)
    elif kind < 0.3:
        ends = [rng.choice(NICE), rng.choice([-math.inf, math.inf])]
    else:
        ends = rng.uniform(-4, 4, 2) * 10.0 ** rng.integers(-3, 3)
    return float(min(ends)), float(max(ends))


def points_of(rng: np.random.Generator, lo: float, hi: float, n: int) -> list[float]:
    finite_lo = lo if math.isfinite(lo) else min(hi, 0.0) - 1e3
    finite_hi = hi if math.isfinite(hi) else max(lo, 0.0) + 1e3
    values = [finite_lo, finite_hi, 0.0, 1.0, -1.0] + list(rng.uniform(finite_lo, finite_hi, n))
    return [float(v) for v in values if finite_lo <= v <= finite_hi]


def check_projections(seed: int, count: int) -> int:
    """For random intervals A, B, R: every sampled a in A, b in B with op(a, b) in R (decided by
    arb) lies in the projected A', B'. Returns the number of such points checked."""
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(count):
        code = PROJECTED[rng.integers(len(PROJECTED))]
        k = int(rng.integers(-4, 6)) if code is Op.POWI else 0
        alo, ahi = random_interval(rng)
        blo, bhi = random_interval(rng) if code in BINARY else (0.0, 0.0)
        pairs = [(a, b) for a in points_of(rng, alo, ahi, 6) for b in points_of(rng, blo, bhi, 3)]
        values = []
        for a, b in pairs:
            try:
                values.append((a, b, exact(code, a, b, k)))
            except Undecidable:
                pass
        defined = [(a, b, v) for a, b, v in values if v is not None and v.is_finite() and math.isfinite(float(v.mid()))]
        if rng.random() < 0.7 and defined:  # a result interval around some true values
            mids = [float(defined[i][2].mid()) for i in rng.integers(len(defined), size=2)]
            rlo, rhi = min(mids), max(mids)
            rlo -= abs(rlo) * rng.choice([0.0, 1e-3, 0.5])
            rhi += abs(rhi) * rng.choice([0.0, 1e-3, 0.5])
        else:
            rlo, rhi = random_interval(rng)
        plo, phi, qlo, qhi = project(int(code), k, rlo, rhi, alo, ahi, blo, bhi)
        assert (plo >= alo or math.isnan(plo)) and (phi <= ahi or math.isnan(phi))
        for a, b, value in defined:
            if encloses(rlo, rhi, value) is not True:
                continue
            checked += 1
            context = (code.name, k, (rlo, rhi), (alo, ahi), (blo, bhi), a, b)
            assert plo <= a <= phi, context
            if code in BINARY:
                assert qlo <= b <= qhi, context
    return checked


def test_projections_keep_every_consistent_operand():
    assert check_projections(11, 3000) > 10000


@pytest.mark.slow
def test_projections_soak():
    assert check_projections(12, 30000) > 100000


def test_roots_and_known_projections():
    assert project(int(Op.POWI), 2, 4.0, 9.0, -10.0, 10.0, 0.0, 0.0)[:2] == (-3.0, 3.0)
    assert project(int(Op.POWI), 2, 4.0, 9.0, 0.0, 10.0, 0.0, 0.0)[:2] == (2.0, 3.0)
    assert project(int(Op.POWI), 3, -8.0, 27.0, -10.0, 10.0, 0.0, 0.0)[:2] == (-2.0, 3.0)
    lo, hi = project(int(Op.POWI), 2, 2.0, 2.0, 0.0, 10.0, 0.0, 0.0)[:2]
    assert lo <= math.sqrt(2.0) <= hi and hi - lo < 1e-15
    assert math.isnan(project(int(Op.POWI), 2, -2.0, -1.0, -10.0, 10.0, 0.0, 0.0)[0])  # x^2 < 0
    assert math.isnan(project(int(Op.EXP), 0, -2.0, 0.0, -10.0, 10.0, 0.0, 0.0)[0])  # exp <= 0
    assert project(int(Op.MUL), 0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0) == (-1.0, 1.0, 0.0, 0.0)  # 0 * b = 0
    assert project(int(Op.DIV), 0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0) == (0.0, 0.0, 1.0, 2.0)


# ---------------------------------------------------------------- contracted boxes


def random_constrained_tape(rng: np.random.Generator, d: int, samples: list[np.ndarray]):
    """A random DAG with its last slot the objective, an inequality s - c <= 0 and an equality
    t - e == 0 on two of its slots, c and e chosen among the slots' values at the samples, and a
    tolerance and ub that keep some samples; also the samples' exact outputs."""
    builder, last = random_expression(rng, d, int(rng.integers(3, 12)))
    size = len(builder._rows)
    s, t = (int(v) for v in rng.integers(0, size, 2))
    probe = builder.build(last, [s], [t])
    exact_values = []
    for x in samples:
        try:
            exact_values.append(arb_outputs(probe, x))
        except Undecidable:
            exact_values.append(None)
    finite = [v for v in exact_values if v is not None and all(o is not None and o.is_finite() for o in v)]
    if len(finite) < 3:
        return None
    mids = np.array([[float(o.mid()) for o in v] for v in finite])
    c = float(np.quantile(mids[:, 1], rng.uniform(0.3, 1.0)))
    e = float(mids[rng.integers(len(mids)), 2])
    tol = float(np.quantile(np.abs(mids[:, 2] - e), rng.uniform(0.2, 0.9)))
    ub = float(np.quantile(mids[:, 0], rng.uniform(0.3, 1.0))) if rng.random() < 0.7 else math.inf
    g = builder.binary(Op.SUB, s, builder.const(c))
    h = builder.binary(Op.SUB, t, builder.const(e))
    tape = builder.build(last, [g], [h])
    return tape, ub, tol


def kept(tape, x, ub: float, tol: float) -> bool | None:
    """Whether x satisfies f <= ub, g <= 0, |h| <= tol exactly (None: undecidable)."""
    try:
        f, g, h = arb_outputs(tape, x)
    except Undecidable:
        return None
    if f is None or g is None or h is None:
        return False
    checks = [encloses(-math.inf, ub, f), encloses(-math.inf, 0.0, g), encloses(-tol, tol, h)]
    if False in checks:
        return False
    return None if None in checks else True


def check_random_boxes(seed: int, count: int) -> tuple[int, int]:
    """(kept sample points checked inside their contracted boxes, boxes that shrank)."""
    rng = np.random.default_rng(seed)
    checked = shrunk = 0
    for _ in range(count):
        d = int(rng.integers(1, 4))
        centre = rng.uniform(-3, 3, d)
        half = 10.0 ** rng.uniform(-4, 0.7, d)
        lo, hi = centre - half, centre + half
        samples = [lo + (hi - lo) * rng.random(d) for _ in range(40)] + [lo, hi, (lo + hi) / 2]
        made = random_constrained_tape(rng, d, samples)
        if made is None:
            continue
        tape, ub, tol = made
        new_lo, new_hi, empty = contract_box(tape, lo, hi, ub, tol)
        if not empty:
            assert np.all(lo <= new_lo) and np.all(new_lo <= new_hi) and np.all(new_hi <= hi)
            shrunk += bool(np.any(new_lo > lo) or np.any(new_hi < hi))
        for x in samples:
            if kept(tape, x, ub, tol) is True:
                checked += 1
                assert not empty, (tape.to_json(), lo, hi, ub, tol, x)
                assert np.all(new_lo <= x) and np.all(x <= new_hi), (tape.to_json(), lo, hi, ub, tol, x)
    return checked, shrunk


def test_contracted_random_boxes_keep_every_feasible_sample():
    checked, shrunk = check_random_boxes(3, 400)
    assert checked > 2000 and shrunk > 50


@pytest.mark.slow
def test_contracted_random_boxes_soak():
    assert check_random_boxes(4, 5000)[0] > 30000


def g11_like():
    """min x^2 + (y - 1)^2 s.t. y - x^2 == 0, x + y - 1.2 <= 0."""
    b = TapeBuilder(2)
    x, y = b.var(0), b.var(1)
    f = b.binary(Op.ADD, b.powi(x, 2), b.powi(b.binary(Op.SUB, y, b.const(1.0)), 2))
    g = b.binary(Op.SUB, b.binary(Op.ADD, x, y), b.const(1.2))
    h = b.binary(Op.SUB, y, b.powi(x, 2))
    return b.build(f, [g], [h])


def test_dense_grid_points_stay_and_boxes_shrink():
    tape = g11_like()
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, 401), np.linspace(-1, 1, 401)), -1).reshape(-1, 2)
    x, y = grid[:, 0], grid[:, 1]
    tol, ub = 0.02, 0.9
    # float margins well above rounding: a point kept here is kept in real arithmetic too
    keep = (np.abs(y - x**2) <= tol - 1e-12) & (x + y - 1.2 <= -1e-12) & (x**2 + (y - 1) ** 2 <= ub - 1e-12)
    lo, hi, empty = contract_box(tape, np.array([-1.0, -1.0]), np.array([1.0, 1.0]), ub, tol)
    assert not empty and keep.sum() > 100
    assert np.all(grid[keep] >= lo) and np.all(grid[keep] <= hi)
    assert lo[1] >= -tol and hi[1] < 1.0  # y = x^2 >= 0; y <= 1.2 - x with f <= ub
    assert contract_box(tape, np.array([0.9, -1.0]), np.array([1.0, -0.5]), math.inf, 1e-6)[2]  # y < 0 = x^2
    assert contract_box(tape, np.array([-1.0, -1.0]), np.array([1.0, 1.0]), -0.1, 1e-6)[2]  # f >= 0 > ub
    many_lo = np.array([[-1.0, -1.0], [0.9, -1.0], [0.0, 0.0]])
    many_hi = np.array([[1.0, 1.0], [1.0, -0.5], [0.5, 1.0]])
    new_lo, new_hi, empties = contract_boxes(tape, many_lo, many_hi, ub, tol)
    assert empties.tolist() == [False, True, False] and np.all(np.isnan(new_lo[1]))
    assert new_hi[2, 1] <= 0.25 + tol + 1e-12  # y = x^2 with x <= 0.5


def test_unused_undefined_slots_prove_nothing():
    b = TapeBuilder(1)
    x = b.var(0)
    b.unary(Op.LOG, b.binary(Op.SUB, x, b.const(5.0)))  # undefined on the box, used by no output
    tape = b.build(b.powi(x, 2))
    lo, hi, empty = contract_box(tape, np.array([0.0]), np.array([1.0]), 0.25, 0.0)
    assert not empty and lo[0] == 0.0 and 0.5 <= hi[0] < 0.5 + 1e-12


# ---------------------------------------------------------------- branch and bound

SPATIAL_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "spatial"
PROBLEMS = sorted(p.name for p in SPATIAL_DATA.glob("[BC]*.json")) if SPATIAL_DATA.exists() else []


@pytest.mark.skipif(len(PROBLEMS) != 15, reason="needs the 15 problems of /work/shared/data/spatial")
def test_minimize_with_and_without_contraction_stays_valid():
    for name in PROBLEMS:
        problem = load_problem(str(SPATIAL_DATA / name))
        for contract in (True, False):
            result = minimize(problem, MinimizeOptions(time_limit=0.7, contract=contract))
            optimum = problem.optimum
            assert result.lower_bound <= optimum + 1e-9 * max(1.0, abs(optimum)), (name, contract, result)
            if result.objective is not None:
                assert result.objective >= optimum - 1e-5, (name, contract, result)
            assert result.contract is contract


def test_minimize_proves_an_empty_root_infeasible():
    b = TapeBuilder(2)
    x, y = b.var(0), b.var(1)
    tape = b.build(b.binary(Op.ADD, x, y), [], [b.binary(Op.ADD, b.powi(x, 2), b.const(1.0))])  # x^2 + 1 == 0
    problem = Problem(name="empty", lower=np.array([-1.0, -1.0]), upper=np.array([1.0, 1.0]), tape=tape)
    result = minimize(problem, MinimizeOptions(parallel=False))
    assert result.status == "infeasible" and result.lower_bound == math.inf and result.nodes == 1
