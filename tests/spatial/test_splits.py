"""Cutting a box into subdomains along only some of its sides (``MinimizeOptions.split_axes``): the
pieces cover the box exactly, each is bounded as it would be alone, and the search stays
rigorous."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from spatial_helpers import arb_outputs

from pbbflow.spatial import Model, exp, sin
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import Mode, _subdomain, bound_boxes, split_edges, split_order
from pbbflow.spatial.boxes import widest_sides
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions, check_uniform_split, split_shape

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "spatial"
PROBLEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "problems"


def pieces(lo: np.ndarray, hi: np.ndarray, n: int, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The subdomains the kernels bound for the box [lo, hi] cut into n along ``sides``: their edges
    (:func:`split_edges`) decoded by the kernels' own ``_subdomain``, in the problem's variables."""
    d = len(lo)
    order = split_order(np.asarray(sides, dtype=np.int64), d)
    edges = split_edges(lo[None, :], hi[None, :], n, order, len(sides))
    count = n ** len(sides)
    x_lo, x_hi = np.empty((d, count)), np.empty((d, count))
    for s in range(count):
        _subdomain(edges, 0, s, n, x_lo, x_hi, s)
    out_lo, out_hi = np.empty((count, d)), np.empty((count, d))
    out_lo[:, order], out_hi[:, order] = x_lo.T, x_hi.T
    return out_lo, out_hi


def assert_exact_cover(lo, hi, n, sides, piece_lo, piece_hi, tiny: bool) -> None:
    """The pieces are the product of one chain of intervals per side, from lo to hi without a gap or
    an overlap: n intervals along each side cut (fewer, some repeated, on a box a few doubles wide),
    the whole side along the others."""
    d = len(lo)
    chains = []
    for i in range(d):
        intervals = sorted(set(zip(piece_lo[:, i].tolist(), piece_hi[:, i].tolist())))
        assert len(intervals) <= n if tiny and i in sides else len(intervals) == (n if i in sides else 1)
        assert intervals[0][0] == lo[i] and intervals[-1][1] == hi[i]
        assert all(a[1] == b[0] for a, b in zip(intervals, intervals[1:]))
        assert all(a <= b for a, b in intervals)
        chains.append(intervals)
    grid = {tuple(itertools.chain.from_iterable(p)) for p in itertools.product(*chains)}
    got = [tuple(itertools.chain.from_iterable(zip(a, b))) for a, b in zip(piece_lo.tolist(), piece_hi.tolist())]
    assert set(got) == grid and len(got) == n ** len(sides)
    assert tiny or len(set(got)) == len(got)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("budget", [1, 16, 64, 256, 1024])
def test_the_subdomains_of_a_split_cover_the_box_exactly(d, budget):
    rng = np.random.default_rng(10 * d + budget)
    boxes = [
        (np.zeros(d), np.ones(d)),
        (rng.uniform(-5, 0, d), rng.uniform(-5, 0, d) + 10.0 ** rng.uniform(-15, 2, d)),
        (np.full(d, 1.0), np.full(d, 1.0) + 2.3e-16),  # two doubles wide: pieces of width 0
    ]
    tiny = [False, False, True]
    for k in range(1, d + 1):
        options = MinimizeOptions(subdomains=budget, split_axes=k)
        n, k_used = split_shape(options, d)
        assert k_used == k and n**k <= budget < (n + 1) ** k
        for (lo, hi), degenerate in zip(boxes, tiny):
            lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
            sides = widest_sides(lo[None], hi[None], np.ones(d), k)[0]
            piece_lo, piece_hi = pieces(lo, hi, n, sides)
            assert_exact_cover(lo, hi, n, set(sides.tolist()), piece_lo, piece_hi, degenerate)
            points = lo + (hi - lo) * rng.random((200, d))
            inside = np.all((points[:, None, :] >= piece_lo) & (points[:, None, :] <= piece_hi), axis=2)
            assert inside.any(axis=1).all()


def test_widest_sides_are_relative_to_the_scale_and_take_the_first_of_equal_ones():
    lo = np.zeros((3, 4))
    hi = np.array([[1.0, 3.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], [4.0, 1.0, 1.0, 1.0]])
    scale = np.array([4.0, 1.0, 1.0, 1.0])
    assert widest_sides(lo, hi, scale, 2).tolist() == [[1, 3], [1, 2], [0, 1]]
    assert widest_sides(lo, hi, np.array([0.0, 1.0, 1.0, 1.0]), 1).tolist() == [[1], [1], [1]]


def network_like(d: int) -> Model:
    """A smooth function of d variables that mixes them all (tanh units, a product, a sine)."""
    model = Model(f"mixed-{d}")
    x = [model.variable(-2.0 + 0.1 * i, 1.5 + 0.2 * i) for i in range(d)]
    rng = np.random.default_rng(d)
    value = 0.0
    for _ in range(3):
        weights = rng.normal(size=d)
        value = value + float(rng.normal()) * exp(-sum((float(w) * v) ** 2 for w, v in zip(weights, x)) / d)
    model.minimize(value + sin(x[0] * x[-1]) + 0.3 * x[d // 2])
    return model


@pytest.mark.parametrize("d", [2, 3, 5, 6])
@pytest.mark.parametrize("mode", [Mode.NIE, Mode.MVF, Mode.BOTH])
def test_a_split_box_is_bounded_as_its_pieces_alone(d, mode):
    """Each box's bound is the least of its pieces' bounds, each piece bounded as one subdomain (so
    the kernels read each variable where the tape names it): exactly with NIE, up to the order in
    which the mean value form sums its terms otherwise; its best point the midpoint of the best
    piece, and its hull the hull of the pieces below the threshold. Each bound is below arb's f at
    points of its box."""
    tape = network_like(d).problem().tape
    rng = np.random.default_rng(d)
    lo = rng.uniform(-2, 0, (4, d))
    hi = lo + rng.uniform(0.1, 1.5, (4, d))
    for k in range(1, d + 1):
        n = 3 if k <= 3 else 2
        sides = widest_sides(lo, hi, np.ones(d), k)
        sides[1] = np.sort(rng.permutation(d)[:k])  # boxes of one call, cut along different sides
        threshold = np.full(4, np.inf)
        found = bound_boxes(tape, lo, hi, n, mode, parallel=False, sides=sides, threshold=threshold)
        for b in range(4):
            piece_lo, piece_hi = pieces(lo[b], hi[b], n, sides[b])
            alone = bound_boxes(tape, piece_lo, piece_hi, 1, mode, parallel=False)
            best = int(np.argmin(alone.lb))
            if mode == Mode.NIE:
                assert found.lb[b] == alone.lb[best]
                assert np.array_equal(found.best_point[b], alone.best_point[best])
            else:
                assert found.lb[b] == pytest.approx(alone.lb[best], rel=1e-12, abs=1e-12)
            for x in lo[b] + (hi[b] - lo[b]) * rng.random((3, d)):
                assert found.lb[b] <= arb_outputs(tape, x)[0]
            assert found.n_kept[b] == np.sum(alone.n_kept) and found.n_fallback[b] == np.sum(alone.n_fallback)
            assert np.array_equal(found.hull_lo[b], piece_lo.min(axis=0))
            assert np.array_equal(found.hull_hi[b], piece_hi.max(axis=0))


def test_all_sides_is_the_uniform_split():
    tape = network_like(4).problem().tape
    rng = np.random.default_rng(1)
    lo = rng.uniform(-2, 0, (5, 4))
    hi = lo + rng.uniform(0.1, 1.5, (5, 4))
    uniform = bound_boxes(tape, lo, hi, 3, parallel=False, threshold=np.full(5, 0.0))
    every = bound_boxes(tape, lo, hi, 3, parallel=False, threshold=np.full(5, 0.0), sides=np.tile(np.arange(4), (5, 1)))
    for name in ("lb", "best_point", "n_kept", "n_fallback", "hull_lo", "hull_hi"):
        assert np.array_equal(getattr(uniform, name), getattr(every, name), equal_nan=True)


def test_sides_that_name_no_side_or_one_twice_are_refused():
    tape = network_like(3).problem().tape
    lo, hi = np.zeros((2, 3)), np.ones((2, 3))
    for sides in ([[0, 0], [1, 2]], [[0, 3], [1, 2]], [[0], [1], [2]], np.zeros((2, 0)), [[0, 1, 2, 1], [0, 1, 2, 1]]):
        with pytest.raises(ValueError, match="sides"):
            bound_boxes(tape, lo, hi, 2, sides=np.array(sides))


def test_many_pieces_along_one_side_of_many_are_allowed():
    """256 pieces along one side of 6 is 256 subdomains, not 256^6 (beyond the kernels' limit)."""
    tape = network_like(6).problem().tape
    lo, hi = np.zeros((1, 6)), np.ones((1, 6))
    found = bound_boxes(tape, lo, hi, 256, parallel=False, sides=np.array([[4]]), threshold=np.array([np.inf]))
    alone = bound_boxes(tape, *pieces(lo[0], hi[0], 256, np.array([4])), 1, parallel=False)
    assert found.lb[0] == pytest.approx(alone.lb.min(), rel=1e-12, abs=1e-12) and found.n_kept[0] == 256


@pytest.mark.parametrize("value", [-1, True, 1.5, "2"])
def test_split_axes_must_be_a_count(value):
    with pytest.raises(ValueError, match="split_axes"):
        MinimizeOptions(split_axes=value)


def test_the_gpu_refuses_a_split_of_some_sides():
    check_uniform_split(MinimizeOptions())
    with pytest.raises(ValueError, match="CPU only"):
        check_uniform_split(MinimizeOptions(split_axes=2))


@pytest.mark.parametrize(
    ("spec", "split_axes"),
    [
        (str(PROBLEMS / "ackley-2.json"), 1),
        (str(PROBLEMS / "bukin-6.json"), 1),
        (str(PROBLEMS / "colville.json"), 3),
        (str(PROBLEMS / "C-g05-cec2006.json"), 2),
        (str(DATA / "B15-hartmann-3.json"), 2),
        (str(DATA / "B17-shekel-m-5.json"), 2),
    ],
    ids=lambda value: Path(str(value)).stem,
)
def test_the_search_proves_the_optimum_with_some_sides_split(spec, split_axes):
    if spec.endswith(".json") and not Path(spec).exists():
        pytest.skip(f"{spec} is absent")
    problem = load_problem(spec)
    options = MinimizeOptions(split_axes=split_axes, parallel=False, time_limit=60)
    result = minimize(problem, options)
    assert result.status.value == "optimal"
    n, k = split_shape(options, problem.dimension)
    assert result.extras["subdomains"] == n**k
    assert result.lower_bound <= problem.optimum + 1e-9 * max(1.0, abs(problem.optimum))
    assert math.isclose(result.value, problem.optimum, rel_tol=1e-5, abs_tol=1e-5)
