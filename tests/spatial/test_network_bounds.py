"""Backward linear bounds of networks (``spatial/network_bounds.py``) against arb's exact network
values at the corners, the centre and random points of random boxes, a brute-force grid, and the
tape's natural interval extension."""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import flint
import numpy as np
import pytest

from pbbflow.spatial import Model, ProblemError, network_bounds, read_onnx
from pbbflow.spatial import model as api
from pbbflow.spatial.ann import AnnNetwork, ann_problem
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import Mode, bound_boxes
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.model import maximum, minimum
from pbbflow.spatial.network import Activation, Elementwise, Layer, Network, NetworkObjective
from pbbflow.spatial.network_bounds import NetworkBounds, _matmul_error_constants, lower_bound, output_bounds
from pbbflow.spatial.options import MinimizeOptions, _Incumbent
from pbbflow.spatial.problem import Problem

PRECISION = 200
SMOOTH = ("tanh", "sigmoid", "softplus")


def _arb_activation(name: str, alpha: float, a: flint.arb) -> flint.arb:
    if name == "linear":
        return a
    if name in ("relu", "leaky_relu"):
        slope = 0.0 if name == "relu" else alpha
        if a >= 0:
            return a
        if a <= 0:
            return a * slope
        return a.union(a * slope)  # straddles 0: the hull of both branches
    if abs(a) > 1000:  # arb's exp gives NaN at 1e400: the tails, enclosed by hand (e^-1000 < 2^-1400)
        tail = flint.arb(0).union(flint.arb(2) ** -1400)
        positive = a > 0
        if name == "softplus":
            return a + tail if positive else tail
        if name == "tanh":
            return 1 - tail if positive else tail - 1
        return 1 - tail if positive else tail
    if name == "tanh":
        return a.tanh()
    if name == "sigmoid":
        return 1 / (1 + (-a).exp())
    return (1 + a.exp()).log()


def arb_network(network: Network, x, c=None, d: float = 0.0) -> list[flint.arb]:
    """The network's outputs at the doubles ``x``, in arb from the stored weights (with ``c``:
    the one value ``c . N(x) + d``)."""
    old = flint.ctx.prec
    flint.ctx.prec = PRECISION
    try:
        values = [flint.arb(float(v)) for v in x]
        for step in network.steps:
            if isinstance(step, Layer):
                bias = [0.0] * step.sizes[1] if step.bias is None else step.bias.tolist()
                values = [
                    _arb_activation(
                        step.activation, step.alpha, sum((w * v for w, v in zip(row, values)), flint.arb(b))
                    )
                    for row, b in zip(step.weights.tolist(), bias)
                ]
            elif isinstance(step, Elementwise):
                ops = {"add": lambda v, c: v + c, "sub": lambda v, c: v - c, "rsub": lambda v, c: c - v}
                ops |= {"mul": lambda v, c: v * c, "div": lambda v, c: v / c}
                values = [ops[step.op](v, flint.arb(c)) for v, c in zip(values, step.constant.tolist())]
            else:
                values = [_arb_activation(step.activation, step.alpha, v) for v in values]
        if c is None:
            return values
        return [sum((flint.arb(float(cj)) * y for cj, y in zip(c, values)), flint.arb(float(d)))]
    finally:
        flint.ctx.prec = old


def arb_objective(network: Network, x, c, d) -> flint.arb:
    return arb_network(network, x, c, d)[0]


def _weights(rng: np.random.Generator, shape, kind: str) -> np.ndarray:
    """float32-exact, general float64, or huge and cancelling weights."""
    w = rng.normal(0.0, 1.0 / np.sqrt(shape[1]), shape)
    if kind == "float32":
        return w.astype(np.float32).astype(np.float64)
    if kind == "huge":
        w = w * 10.0 ** rng.integers(-3, 9, shape)
        w[:, -1] = -w[:, 0]  # columns that cancel against each other
    return w


def random_network(rng: np.random.Generator, activations=None, kind: str | None = None) -> Network:
    """A small random network: dense layers with mixed activations, elementwise constants and
    activation steps of their own."""
    n_inputs = int(rng.integers(1, 5))
    size = n_inputs
    steps = []
    kind = kind or str(rng.choice(["float32", "float64", "huge"]))
    names = activations or ("relu", "leaky_relu", "tanh", "sigmoid", "softplus", "linear")
    for _ in range(int(rng.integers(1, 5))):
        if rng.random() < 0.25:
            op = str(rng.choice(["add", "sub", "rsub", "mul", "div"]))
            constant = rng.uniform(0.25, 3.0, size) * rng.choice([-1.0, 1.0], size)
            steps.append(Elementwise(op, constant))
        out = int(rng.integers(1, 9))
        activation = str(rng.choice(names))
        alpha = float(rng.choice([0.01, 0.3, -0.5, 2.0]))
        bias = None if rng.random() < 0.2 else rng.normal(0.0, 1.0, out)
        steps.append(Layer(_weights(rng, (out, size), kind), bias, activation, alpha))
        size = out
        if rng.random() < 0.15:
            steps.append(Activation(str(rng.choice(names)), 0.1))
    out = int(rng.integers(1, 4))
    steps.append(Layer(_weights(rng, (out, size), kind), rng.normal(0.0, 1.0, out), "linear"))
    return Network(n_inputs, tuple(steps))


def random_box(rng: np.random.Generator, n: int, degenerate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    centre = rng.uniform(-2.0, 2.0, n)
    width = np.zeros(n) if degenerate else rng.uniform(0.0, 2.0, n) * (rng.random(n) < 0.9)
    return centre - width / 2, centre + width / 2


def points(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, count: int = 30) -> list[np.ndarray]:
    corners = [np.array(c) for c in itertools.product(*zip(lo, hi))]
    return [*corners, 0.5 * lo + 0.5 * hi, *rng.uniform(lo, hi, (count, len(lo)))]


def check_below(network: Network, bound: float, x, c, d) -> None:
    exact = arb_objective(network, x, c, d)
    assert not (exact < bound), f"bound {bound!r} above the exact value {exact} at {list(x)}"
    assert exact >= bound or (exact - bound).rad() < 1e-40, f"undecided at {list(x)}: {exact} vs {bound!r}"


@pytest.mark.parametrize("seed", range(40))
def test_bound_below_exact_values(seed):
    """On random networks and boxes (a quarter of them points), the bound is below arb's exact
    value at the corners, the centre and random points; at a point, within 1e-13 of it relative
    (1e-10 with huge weights)."""
    rng = np.random.default_rng(seed)
    network = random_network(rng)
    bounds = NetworkBounds(network)
    for trial in range(4):
        degenerate = trial == 3
        lo, hi = random_box(rng, network.n_inputs, degenerate)
        c = rng.normal(0.0, 1.0, network.n_outputs)
        d = float(rng.normal())
        bound = bounds.lower_bound(lo, hi, c, d)
        assert bound == bound
        for x in points(rng, lo, hi, 1 if degenerate else 30):
            check_below(network, bound, x, c, d)
        if degenerate:  # measured: within 1e-14 relative, 8e-12 where huge weights cancel
            exact = float(arb_objective(network, lo, c, d).mid())
            large = max(np.abs(s.weights).max() for s in network.steps if isinstance(s, Layer))
            assert exact - bound <= (1e-13 if large < 10 else 1e-10) * (1.0 + abs(exact))


@pytest.mark.parametrize("seed", range(20))
def test_many_boxes_in_one_pass_get_their_own_bounds(seed, monkeypatch):
    """Boxes bounded together (the explorer's batches) get what each gets alone (each row takes the
    same steps; only BLAS may order a product's sums otherwise), in one pass, in passes shared among
    threads, or in passes of one box (the memory cap), and stay below arb's exact values in their
    own box."""
    rng = np.random.default_rng(300 + seed)
    network = random_network(rng)
    bounds = NetworkBounds(network)
    boxes = [random_box(rng, network.n_inputs, degenerate=k == 5) for k in range(7)]
    lo, hi = np.array([box[0] for box in boxes]), np.array([box[1] for box in boxes])
    c = rng.normal(0.0, 1.0, (3, network.n_outputs))
    d = rng.normal(0.0, 1.0, 3)
    together = bounds.box_lower_bounds(lo, hi, c, d)
    assert together.shape == (7, 3)
    monkeypatch.setattr(network_bounds, "BOXES_A_THREAD", 1)  # passes of 3, 3 and 1 boxes on 3 threads
    shared = NetworkBounds(network, threads=3).box_lower_bounds(lo, hi, c, d)
    np.testing.assert_allclose(shared, together, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(network_bounds, "PASS_DOUBLES", 1)
    np.testing.assert_allclose(bounds.box_lower_bounds(lo, hi, c, d), together, rtol=1e-12, atol=1e-12)
    for b, (box_lo, box_hi) in enumerate(boxes):
        alone = bounds.lower_bounds(box_lo, box_hi, c, d)
        np.testing.assert_allclose(together[b], alone, rtol=1e-12, atol=1e-12)
        for x in points(rng, box_lo, box_hi, 5):
            for k in range(3):
                check_below(network, float(together[b, k]), x, c[k], float(d[k]))


def test_an_input_scaling_costs_no_bound():
    """A network that scales its inputs elementwise first is bounded over a box exactly as the rest
    of it over the scaled box (the backward passes stop after the scaling; dyadic constants scale
    exactly), and no thread count below one is taken."""
    rng = np.random.default_rng(7)
    rest = random_network(rng, kind="float64")
    while isinstance(rest.steps[0], Elementwise):
        rest = random_network(rng, kind="float64")
    n = rest.n_inputs
    scaled = Network(n, (Elementwise("sub", np.full(n, 0.5)), Elementwise("div", np.full(n, 4.0)), *rest.steps))
    assert NetworkBounds(scaled).scaling_steps == 2 and NetworkBounds(rest).scaling_steps == 0
    for _ in range(5):
        lo, hi = (np.round(side * 1024.0) / 1024.0 for side in random_box(rng, n))  # scaled exactly
        c = rng.normal(0.0, 1.0, (2, rest.n_outputs))
        d = rng.normal(0.0, 1.0, 2)
        np.testing.assert_array_equal(
            NetworkBounds(scaled).lower_bounds(lo, hi, c, d),
            NetworkBounds(rest).lower_bounds((lo - 0.5) / 4.0, (hi - 0.5) / 4.0, c, d),
        )
    with pytest.raises(ValueError, match="threads"):
        NetworkBounds(rest, threads=0)


def test_boxes_that_are_not_boxes_are_refused():
    """A box of the wrong width, with lo > hi, or not finite is refused, alone and among others;
    the one-box methods refuse many boxes."""
    bounds = NetworkBounds(deep_relu_network(np.random.default_rng(2), [2, 4, 1]))
    c, d = np.ones((1, 1)), np.zeros(1)
    good = np.zeros((2, 2)), np.ones((2, 2))
    with pytest.raises(ValueError, match="a box is 2 lower and 2 upper values"):
        bounds.box_lower_bounds(np.zeros((2, 3)), np.ones((2, 3)), c, d)
    with pytest.raises(ValueError, match="a box is 2 lower and 2 upper values"):
        bounds.lower_bound(np.zeros(3), np.ones(3), np.ones(1))
    for one_box_only in (bounds.lower_bounds, lambda lo, hi, c, d: bounds.output_bounds(lo, hi)):
        with pytest.raises(ValueError, match="a box is 2 lower and 2 upper values"):  # not the first of many
            one_box_only(*good, c, d)
    for lo, hi in ((good[1], good[0]), (np.array([[0.0, 0.0], [0.0, np.nan]]), good[1])):
        with pytest.raises(ValueError, match="every box must be finite with lo <= hi"):
            bounds.box_lower_bounds(lo, hi, c, d)
    assert bounds.box_lower_bounds(*good, c, d).shape == (2, 1)


@pytest.mark.parametrize("seed", range(10))
def test_output_bounds_enclose_both_sides(seed):
    rng = np.random.default_rng(100 + seed)
    network = random_network(rng)
    lo, hi = random_box(rng, network.n_inputs)
    out_lo, out_hi = output_bounds(network, lo, hi)
    for x in points(rng, lo, hi):
        for value, a, b in zip(arb_network(network, x), out_lo, out_hi):
            assert not (value < a) and not (value > b)


def test_cancelling_weights_are_not_rounded_into_a_wrong_bound():
    """c . W x with W = (1e17, -1, -1e17) after a layer that copies x = 1: the float product
    (lam @ W of the backward pass) is 0 and the exact value -1; the bound must be <= -1."""
    first = Layer(np.ones((3, 1)), None, "relu")
    second = Layer(np.array([[1e17, -1.0, -1e17]]), None, "linear")
    network = Network(1, (first, second))
    for lo, hi in [(1.0, 1.0), (0.5, 1.5)]:
        bound = lower_bound(network, np.array([lo]), np.array([hi]), np.array([1.0]))
        assert bound <= -1.0 * hi
        check_below(network, bound, [hi], [1.0], 0.0)
    # through the backward matmul itself: lam = (1e17, -1, -1e17) times a column of ones
    network = Network(1, (Layer(np.ones((3, 1)), None, "linear"), Activation("relu"), second))
    assert lower_bound(network, np.array([1.0]), np.array([1.0]), np.array([1.0])) <= -1.0


@pytest.mark.parametrize(
    ("step", "c", "x"),
    [
        (Elementwise("mul", np.array([3.0])), 0.1, 1.0),  # fl(0.1 * 3) is above 0.1 * 3
        (Elementwise("div", np.array([3.0])), -1.0, 1.0),  # -fl(1 / 3) is above -1 / 3
        (Activation("leaky_relu", 0.1), -3.0, -1.0),  # the slope 0.1 times -3
    ],
)
def test_rounded_coefficients_carry_their_residual(step, c, x):
    """At a point where the last steps are exact, a coefficient rounded up would put the bound
    above the value: each product's residual must join the bound."""
    network = Network(1, (step,))
    bound = lower_bound(network, np.array([x]), np.array([x]), np.array([c]))
    check_below(network, bound, [x], [c], 0.0)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu", "tanh", "sigmoid", "softplus"])
def test_overflowing_intermediate_bounds_stay_sound(activation, monkeypatch):
    """Weights of 1e200 overflow the intermediate bounds to infinity: the lines fall back to act's
    range and the bound stays below arb's values (and is not NaN). arb at 3,000 bits: 1e200 times
    a saturated tanh's ball must stay small."""
    monkeypatch.setattr(sys.modules[__name__], "PRECISION", 3000)
    first = Layer(np.array([[1e200], [-1e200]]), None, activation, 0.5)
    second = Layer(np.array([[1e200, 1e200]]), np.array([1.0]), activation, 0.5)
    network = Network(1, (first, second, Layer(np.array([[1.0]]), None, "linear")))
    rng = np.random.default_rng(0)
    for lo, hi in [(-1.0, 1.0), (0.5, 2.0), (-1e-300, 1e-300)]:
        for c in (1.0, -1.0):
            bound = lower_bound(network, np.array([lo]), np.array([hi]), np.array([c]))
            assert bound == bound
            for x in points(rng, np.array([lo]), np.array([hi]), 5):
                check_below(network, bound, x, [c], 0.0)


def test_matmul_error_constants_bound_gamma_n():
    for n in (1, 2, 51, 4097):
        k, t = _matmul_error_constants(n)
        nu = Fraction(n, 2**53)
        assert Fraction(k) >= nu / (1 - 2 * nu) and Fraction(t) == 4 * n * Fraction(1, 2**1075)


def test_smooth_relaxations_are_tight_on_small_boxes():
    """One unit of each smooth activation over [z0 - h, z0 + h]: the bound of act(z) is within
    O(h^2) of its true minimum (tangent and chord lines)."""
    for name in SMOOTH:
        network = Network(1, (Layer(np.ones((1, 1)), None, name),))
        for z0 in (-3.0, -0.2, 0.0, 0.7, 4.0):
            h = 1e-3
            bound = lower_bound(network, np.array([z0 - h]), np.array([z0 + h]), np.array([1.0]))
            exact = float(arb_network(network, [z0 - h])[0].mid())
            assert bound <= exact and exact - bound < 1e-6
            upper = -lower_bound(network, np.array([z0 - h]), np.array([z0 + h]), np.array([-1.0]))
            assert upper >= float(arb_network(network, [z0 + h])[0].mid()) - 1e-15


def _tape_nie(network: Network, lo, hi, c, d) -> float:
    model = Model("nie")
    x = [model.variable(a, b) for a, b in zip(lo.tolist(), hi.tolist())]
    outputs = network(x)
    model.minimize(sum((float(cj) * y for cj, y in zip(c, outputs)), start=0.0) + d)
    return float(bound_boxes(model.problem().tape, lo[None, :], hi[None, :], 1, Mode.NIE, parallel=False).lb[0])


def deep_relu_network(rng: np.random.Generator, widths) -> Network:
    layers = [
        Layer(rng.normal(0.0, np.sqrt(2.0 / a), (b, a)), rng.normal(0.0, 0.1, b), "relu")
        for a, b in zip(widths[:-2], widths[1:-1])
    ]
    layers.append(Layer(rng.normal(0.0, np.sqrt(1.0 / widths[-2]), (widths[-1], widths[-2])), None, "linear"))
    return Network(widths[0], tuple(layers))


def test_relu_networks_at_least_as_tight_as_the_tape_nie():
    """On 3-input ReLU networks of 3 hidden layers of 12, the bound beats or ties the tape's NIE on
    a clear majority of seeded boxes (measured: 20 of 20)."""
    wins = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        network = deep_relu_network(rng, [3, 12, 12, 12, 2])
        lo, hi = random_box(rng, 3)
        c = rng.normal(0.0, 1.0, 2)
        ours = lower_bound(network, lo, hi, c, 0.5)
        nie = _tape_nie(network, lo, hi, c, 0.5)
        wins += ours >= nie
        for x in points(rng, lo, hi, 10):
            check_below(network, ours, x, c, 0.5)
    assert wins >= 18


def test_two_input_network_against_a_grid():
    """A 2-16-16-1 mixed network: on each of 8 x 8 sub-boxes the bound is below the float minimum
    over a 21 x 21 grid of it (minus float evaluation's error), and close to it."""
    rng = np.random.default_rng(7)
    layers = (
        Layer(rng.normal(0, 1, (16, 2)), rng.normal(0, 1, 16), "tanh"),
        Layer(rng.normal(0, 0.3, (16, 16)), rng.normal(0, 1, 16), "relu"),
        Layer(rng.normal(0, 0.3, (1, 16)), rng.normal(0, 1, 1), "linear"),
    )
    network = Network(2, layers)
    bounds = NetworkBounds(network)
    edges = np.linspace(-2.0, 2.0, 9)
    gaps = []
    for i, j in itertools.product(range(8), range(8)):
        lo = np.array([edges[i], edges[j]])
        hi = np.array([edges[i + 1], edges[j + 1]])
        bound = bounds.lower_bound(lo, hi, np.array([1.0]))
        grid = np.stack(np.meshgrid(np.linspace(lo[0], hi[0], 21), np.linspace(lo[1], hi[1], 21)), -1).reshape(-1, 2)
        values = grid.T
        for layer in layers:
            values = layer.weights @ values + layer.bias[:, None]
            values = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0.0)}.get(layer.activation, lambda v: v)(values)
        least = values.min()
        assert bound <= least + 1e-12 * (1 + abs(least))
        gaps.append(least - bound)
    assert max(gaps) < 0.5


def _two_output_network(rng: np.random.Generator) -> Network:
    return deep_relu_network(rng, [2, 6, 6, 2])


@pytest.mark.parametrize(
    ("objective", "c", "d", "combine"),
    [
        (lambda y, x: y[0], [[1.0, 0.0]], [0.0], "max"),
        (lambda y, x: -y[1] + 3, [[0.0, -1.0]], [3.0], "max"),
        (lambda y, x: 2 * y[0] - 0.5 * y[1] + y[0] - 1.25, [[3.0, -0.5]], [-1.25], "max"),
        (lambda y, x: (y[1] - y[0]) * 4, [[-4.0, 4.0]], [0.0], "max"),
        (lambda y, x: maximum(y[0], y[1]), [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0], "max"),
        (lambda y, x: -maximum(y[0], y[1] + 1), [[-1.0, 0.0], [0.0, -1.0]], [0.0, -1.0], "min"),
        (lambda y, x: maximum(y[0], y[1]) + 2 * y[0] - 1, [[3.0, 0.0], [2.0, 1.0]], [-1.0, -1.0], "max"),
        (lambda y, x: minimum(y[0], 3 - y[1]) * 2, [[2.0, 0.0], [0.0, -2.0]], [0.0, 6.0], "min"),
        (lambda y, x: maximum(y[0], y[1], -y[0]) * -0.5, [[-0.5, 0], [0, -0.5], [0.5, 0]], [0, 0, 0], "min"),
        (lambda y, x: y[0] * y[1], None, None, None),
        (lambda y, x: y[0] + x[0], None, None, None),
        (lambda y, x: 0.1 * y[0] + 0.2 * y[0], None, None, None),  # 0.1 + 0.2 is no double
        (lambda y, x: y[0] / 3, None, None, None),
        (lambda y, x: maximum(y[0], y[1]) + maximum(y[0], -y[1]), None, None, None),  # no max of pieces
        (lambda y, x: maximum(y[0], minimum(y[0], y[1])), None, None, None),
        (lambda y, x: maximum(y[0], x[0]), None, None, None),
    ],
)
def test_network_objective_is_recognised_exactly(objective, c, d, combine):
    model = Model("objective")
    x = model.variables(2, -1, 1)
    y = _two_output_network(np.random.default_rng(0))(x)
    model.minimize(objective(y, x))
    found = NetworkObjective.of(model.problem())
    if c is None:
        assert found is None
    else:
        assert found.c.tolist() == c and found.d.tolist() == d and found.inputs == (0, 1)
        assert found.combine == combine or len(d) == 1
        at = np.random.default_rng(1).uniform(-1, 1, (20, 2))  # its float values: the tape's
        tape_values = [evaluate_float(model.problem().tape, point)[0] for point in at]
        assert np.allclose(found.float_values(at), tape_values, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_max_and_min_objectives_bound_below_exact_values(seed):
    """The largest (smallest) of several affine forms of the outputs: its bound is below arb's
    value of that max (min) at the box's corners, centre and random points."""
    rng = np.random.default_rng(300 + seed)
    network = random_network(rng)
    rows = int(rng.integers(2, 5))
    c = rng.normal(0.0, 1.0, (rows, network.n_outputs))
    d = rng.normal(0.0, 1.0, rows)
    bounds = NetworkBounds(network)
    for combine in ("max", "min"):
        objective = NetworkObjective(network, tuple(range(network.n_inputs)), c, d, combine)
        lo, hi = random_box(rng, network.n_inputs)
        bound = bounds.objective_bound(objective, lo, hi)
        row_bounds = bounds.lower_bounds(lo, hi, c, d)
        one_by_one = [bounds.lower_bound(lo, hi, c[k], d[k]) for k in range(rows)]  # BLAS may sum in another order
        assert np.allclose(row_bounds, one_by_one, rtol=1e-12, atol=1e-12)
        assert bound == (max(row_bounds) if combine == "max" else min(row_bounds))
        for x in points(rng, lo, hi):
            values = [arb_objective(network, x, c[k], float(d[k])) for k in range(rows)]
            exact = values[0]
            for value in values[1:]:
                exact = exact.max(value) if combine == "max" else exact.min(value)
            assert not (exact < bound), f"bound {bound!r} above the exact value {exact} at {list(x)}"


def test_max_objective_search_is_certified():
    """The largest of two outputs of a ReLU network, minimized with and without the network
    bound: the same certified optimum, below the grid's minimum and arb's value at the point."""
    network = deep_relu_network(np.random.default_rng(4), [2, 12, 12, 2])
    model = Model("max search")
    x = model.variables(2, -2, 2)
    y = network(x)
    model.minimize(maximum(y[0], y[1] - 0.5))
    problem = model.problem()
    assert NetworkObjective.of(problem).c.shape == (2, 2)
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 401), np.linspace(-2, 2, 401)), -1).reshape(-1, 2).T
    for layer in network.steps:
        grid = layer.weights @ grid + (0.0 if layer.bias is None else layer.bias[:, None])
        grid = np.maximum(grid, 0.0) if layer.activation == "relu" else grid
    least = np.maximum(grid[0], grid[1] - 0.5).min()
    results = [minimize(p, MinimizeOptions()) for p in (problem, replace(problem, network_objective=None))]
    for result in results:
        assert result.status.name == "OPTIMAL"
        assert result.lower_bound <= least + 1e-12
        at = arb_network(network, result.x)
        assert at[0].max(at[1] - 0.5) >= result.lower_bound
    assert abs(results[0].lower_bound - results[1].lower_bound) <= 2e-6


def test_network_objective_needs_distinct_variables():
    network = _two_output_network(np.random.default_rng(0))
    model = Model("objective")
    x = model.variables(2, -1, 1)
    model.minimize(network([x[0], x[0]])[0])
    assert model.problem().network_objective is None
    model = Model("objective")
    x = model.variables(3, -1, 1)
    model.minimize(network([x[2], x[0]])[1] + network([x[2], x[0]])[0])
    assert NetworkObjective.of(model.problem()).inputs == (2, 0)


def test_network_objective_round_trips_through_the_source():
    rng = np.random.default_rng(5)
    network = random_network(rng)
    model = Model("round trip")
    x = model.variables(network.n_inputs + 1, -1, 1)
    model.minimize(network(x[1:])[0] * 2)
    problem = model.problem()
    again = Problem.from_source(json.loads(json.dumps(problem.source, allow_nan=False)))
    objective, other = NetworkObjective.of(problem), NetworkObjective.of(again)
    assert other.inputs == objective.inputs and other.c.tolist() == objective.c.tolist()
    assert other.d.tolist() == objective.d.tolist()
    assert json.dumps(again.source) == json.dumps(problem.source)
    lo, hi = random_box(rng, network.n_inputs)
    assert lower_bound(other.network, lo, hi, other.c[0]) == lower_bound(network, lo, hi, objective.c[0])
    broken = {**problem.source, "network_objective": {**problem.source["network_objective"], "c": "x"}}
    with pytest.raises(ProblemError, match="network objective"):
        NetworkObjective.of(Problem.from_source(broken))
    with pytest.raises(ProblemError, match="network objective must read variables"):
        Problem.from_source({**problem.source, "network_objective": {**broken["network_objective"], "inputs": [9]}})
    assert "network_objective" not in Model.problem(_plain_model()).source


def _plain_model() -> Model:
    model = Model("plain")
    x = model.variable(-1, 1)
    model.minimize(x * x)
    return model


def test_search_uses_the_network_bound():
    """A 2-16-16-16-1 ReLU network minimized with and without the network objective: the same
    certified optimum, below the brute-force grid minimum and arb's value at the point found, with
    far fewer subdomains bounded with it: whole boxes (measured: 105 boxes of one against 101 of 64)."""
    network = deep_relu_network(np.random.default_rng(3), [2, 16, 16, 16, 1])
    model = Model("relu search")
    x = model.variables(2, -2, 2)
    model.minimize(network(x)[0])
    problem = model.problem()
    assert problem.network_objective is not None
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 401), np.linspace(-2, 2, 401)), -1).reshape(-1, 2).T
    for layer in network.steps:
        grid = layer.weights @ grid + (0.0 if layer.bias is None else layer.bias[:, None])
        grid = np.maximum(grid, 0.0) if layer.activation == "relu" else grid
    least = grid.min()
    results = [minimize(p, MinimizeOptions()) for p in (problem, replace(problem, network_objective=None))]
    for result in results:
        assert result.status.name == "OPTIMAL"
        assert result.lower_bound <= least + 1e-12
        assert arb_network(network, result.x)[0] >= result.lower_bound
    work = [result.nodes * result.extras["subdomains"] for result in results]
    assert results[0].extras["subdomains"] == 1 and work[0] < work[1] / 10


def _grid_minimum(network: Network, keep=None) -> float:
    """The least output 0 of ``network`` on a grid of [-2, 2]^d, 61 points a side (where ``keep`` holds)."""
    axes = [np.linspace(-2, 2, 61)] * network.n_inputs
    points = np.stack(np.meshgrid(*axes), -1).reshape(-1, network.n_inputs)
    values = points.T
    for layer in network.steps:
        values = layer.weights @ values + (0.0 if layer.bias is None else layer.bias[:, None])
        values = np.maximum(values, 0.0) if layer.activation == "relu" else values
    return float(values[0][keep(points) if keep else slice(None)].min())


def test_an_unconstrained_network_objective_bounds_whole_boxes(monkeypatch):
    """An unconstrained network objective: its boxes are bounded through its layers alone (one
    subdomain a box), with no tape bound and no second-order bound, and only a few of their centres
    are verified a batch. With a constraint, the subdomains (4^3) and the second-order bound stay.
    Every certified minimum lies below a brute-force grid's and arb's value at the point found."""
    from pbbflow.spatial import explorer

    second_order, tape_bounds, offer_many = explorer.second_order_bounds, explorer.bound_boxes, _Incumbent.offer_many
    calls, tape_calls, offered = [], [], []
    monkeypatch.setattr(explorer, "second_order_bounds", lambda *a: calls.append(1) or second_order(*a))
    monkeypatch.setattr(explorer, "bound_boxes", lambda *a, **k: tape_calls.append(1) or tape_bounds(*a, **k))
    monkeypatch.setattr(_Incumbent, "offer_many", lambda self, p: offered.append(len(p)) or offer_many(self, p))
    for widths in ([3, 12, 12, 1], [2, 12, 12, 1], [2, 32, 32, 1]):
        network = deep_relu_network(np.random.default_rng(11), widths)
        model = Model("whole boxes")
        x = model.variables(network.n_inputs, -2, 2)
        model.minimize(network(x)[0])
        calls.clear(), tape_calls.clear(), offered.clear()
        result = minimize(model.problem(), MinimizeOptions(parallel=False))
        assert result.status.name == "OPTIMAL" and result.extras["subdomains"] == 1
        assert not calls and not tape_calls
        assert max(offered) <= explorer.ESTIMATES_OFFERED  # the first candidates too: by float value
        assert result.lower_bound <= _grid_minimum(network) + 1e-12
        assert arb_network(network, result.x)[0] >= result.lower_bound
    network = deep_relu_network(np.random.default_rng(11), [3, 12, 12, 1])
    model = Model("constrained")
    x = model.variables(3, -2, 2)
    model.minimize(network(x)[0])
    model.subject_to(x[0] + x[1] <= 0.5)
    constrained = model.problem()
    assert NetworkObjective.of(constrained) is not None
    calls.clear()
    result = minimize(constrained, MinimizeOptions(parallel=False))
    assert result.status.name == "OPTIMAL" and result.extras["subdomains"] == 64 and calls
    assert result.lower_bound <= _grid_minimum(network, lambda p: p[:, 0] + p[:, 1] <= 0.5) + 1e-12
    assert result.x[0] + result.x[1] <= 0.5 + 1e-6 and arb_network(network, result.x)[0] >= result.lower_bound


def _ann_document(rng: np.random.Generator, in_lo, in_hi) -> dict:
    """A 2-16-16-1 ReLU network as an ANN file's JSON."""
    network = deep_relu_network(rng, [2, 16, 16, 1])
    weights = [step.weights.tolist() for step in network.steps]
    biases = [(np.zeros(step.sizes[1]) if step.bias is None else step.bias).tolist() for step in network.steps]
    return {"layers": [2, 16, 16, 1], "W": weights, "b": biases, "in_lo": in_lo, "in_hi": in_hi}


def test_an_ann_file_is_bounded_through_its_layers():
    """Where every in_hi - in_lo is a double, the scaling is the network's first steps: the same
    tape values as the scaling recorded before the network, and the certified minimum, with and
    without the network bound, below a brute-force grid and arb's value at the point, with far
    fewer subdomains bounded with it: whole boxes (measured: 151 boxes of one against 65 of 64)."""
    document = _ann_document(np.random.default_rng(8), [-5.0, 0.0], [10.0, 15.0])
    document |= {"y_mu": 0.25, "y_sd": 1.5, "activation": "relu"}
    ann = AnnNetwork.from_document(document, "net.json")
    problem = ann_problem(document, "net.json")
    assert NetworkObjective.of(problem).c.tolist() == [[1.5]] and NetworkObjective.of(problem).d.tolist() == [0.25]
    model = Model("scaled on the tape")
    x = [model.variable(lo, hi) for lo, hi in zip(ann.in_lo, ann.in_hi)]
    model.minimize(api.unscale_outputs(ann.network(api.scale_inputs(x, ann.in_lo, ann.in_hi)), 0.25, 1.5)[0])
    on_tape = model.problem()
    points = np.random.default_rng(9).uniform(ann.in_lo, ann.in_hi, (200, 2))
    for point in points:
        assert evaluate_float(problem.tape, point)[0] == evaluate_float(on_tape.tape, point)[0]
    scaled = ann.scaled_network()
    axes = [np.linspace(lo, hi, 301) for lo, hi in zip(ann.in_lo, ann.in_hi)]
    grid = np.stack(np.meshgrid(*axes), -1).reshape(-1, 2)
    least = min(evaluate_float(problem.tape, point)[0] for point in grid[::7])
    results = [minimize(p, MinimizeOptions()) for p in (problem, replace(problem, network_objective=None))]
    for result in results:
        assert result.status.name == "OPTIMAL"
        assert result.lower_bound <= least
        assert arb_network(scaled, result.x)[0] * 1.5 + 0.25 >= result.lower_bound
    work = [result.nodes * result.extras["subdomains"] for result in results]
    assert results[0].extras["subdomains"] == 1 and work[0] < work[1] / 10


def test_an_ann_file_whose_widths_are_not_doubles_scales_on_the_tape():
    document = _ann_document(np.random.default_rng(8), [0.1, -7.0], [0.7, 3.0])  # 0.7 - 0.1 is no double
    document |= {"y_mu": 0.0, "y_sd": 1.0}
    assert AnnNetwork.from_document(document, "net.json").scaled_network() is None
    assert ann_problem(document, "net.json").network_objective is None


DATA = next(
    (p / "shared/data/ann" for p in Path(__file__).resolve().parents if (p / "shared/data/ann").is_dir()),
    Path("shared/data/ann-missing"),
)


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared ANN fixtures are not here")
@pytest.mark.parametrize(
    "name",
    [
        "ann01-peaks-2-8-8-1-tanh.onnx",
        "ann04-camel-2-16-1-sigmoid.onnx",
        "ann05-branin-2-16-16-1-relu.onnx",
        "torch-export/torch_sequential_tanh_relu_legacy.onnx",
        "torch-export/torch_sequential_tanh_relu_dynamo.onnx",
    ],
)
def test_shared_onnx_networks(name):
    """The shared ONNX files (input scaling as Sub/Mul/Div steps, Gemm, tanh, sigmoid, ReLU; the
    torch exports' MatMul/Add): both sides of output 0 on boxes of a tenth of the domain enclose
    arb's values, and are at least as tight as the tape's NIE."""
    rng = np.random.default_rng(11)
    path = DATA / name
    network = read_onnx(path)
    twin = path.with_suffix(".json")
    if twin.exists():
        ann = AnnNetwork.from_document(json.loads(twin.read_text()), twin.name)
        domain_lo, domain_hi = np.array(ann.in_lo), np.array(ann.in_hi)
    else:
        domain_lo, domain_hi = -np.ones(network.n_inputs), np.ones(network.n_inputs)
    for _ in range(3):
        side = 0.1 * (domain_hi - domain_lo)
        lo = domain_lo + rng.random(network.n_inputs) * (domain_hi - domain_lo - side)
        hi = lo + side
        for sign in (1.0, -1.0):
            c = np.zeros(network.n_outputs)
            c[0] = sign
            bound = lower_bound(network, lo, hi, c)
            assert bound >= _tape_nie(network, lo, hi, c, 0.0)
            for x in points(rng, lo, hi, 10):
                check_below(network, bound, x, c, 0.0)


def test_the_error_term_of_a_backward_step_is_that_of_a_sum_over_the_layers_outputs():
    """``lam @ [W b]`` sums over the rows of [W b] (the layer's outputs): a 1 -> 64 layer's step
    takes the constants of a contraction of length 64, not of its 2 columns (a wider layer than its
    inputs got too small an error term before; the GPU's ordered sums showed a bound above the
    exact value, tests/gpu/spatial/test_network_bounds.py)."""
    from pbbflow.spatial.network_bounds import _affine

    step = _affine(Layer(np.ones((64, 1)), np.zeros(64), "relu"))
    assert (step.k_factor, step.t_term) == _matmul_error_constants(64)
    assert _matmul_error_constants(64)[0] > _matmul_error_constants(2)[0]


@pytest.mark.parametrize("seed", range(16))
def test_objective_point_values_are_above_the_exact_values_and_tight(seed):
    """The network objective's verified values at points (the incumbent's, for an unconstrained
    network objective): at or above arb's exact max (min) of the forms at each point, within a few
    ulps of the floating-point value, and those of the objective's own inputs (others ignored)."""
    rng = np.random.default_rng(500 + seed)
    network = random_network(rng)
    rows = int(rng.integers(1, 4))
    c, d = rng.normal(0.0, 1.0, (rows, network.n_outputs)), rng.normal(0.0, 1.0, rows)
    n_vars = network.n_inputs + 1
    inputs = tuple(int(i) for i in rng.permutation(n_vars)[: network.n_inputs])
    bounds = NetworkBounds(network)
    checked = 0
    for combine in ("max", "min"):
        objective = NetworkObjective(network, inputs, c, d, combine)
        at = rng.uniform(-2.0, 2.0, (12, n_vars))
        values = bounds.objective_point_values(objective, at)
        estimates = objective.float_values(at)
        for x, value, estimate in zip(at, values, estimates):
            forms = [arb_objective(network, x[list(inputs)], c[k], float(d[k])) for k in range(rows)]
            exact = forms[0]
            for form in forms[1:]:
                exact = exact.max(form) if combine == "max" else exact.min(form)
            if not np.isfinite(estimate):
                continue
            assert value == value and not (exact > value), f"{value!r} below the exact value {exact}"
            assert value - estimate <= 1e-9 * max(1.0, abs(estimate)) * (1.0 + np.abs(c).sum())
            checked += 1
    assert checked > 0  # not every point's float value overflowed


def test_objective_point_values_of_an_undefined_point_are_nan():
    network = Network(1, (Layer(np.array([[1e308], [-1e308]]), np.zeros(2), "linear"),))
    objective = NetworkObjective(network, (0,), np.array([[1.0, 1.0]]), np.zeros(1))
    values = NetworkBounds(network).objective_point_values(objective, np.array([[0.0], [10.0]]))
    assert values[0] == 0.0 and np.isnan(values[1])


@pytest.mark.parametrize("combine", ["max", "min"])
def test_the_objectives_jacobian_is_the_tapes(combine):
    """The local solver's value and Jacobian of an unconstrained network objective (from the
    layers, compiled) equal those of f's tape, to rounding, away from kinks."""
    from pbbflow.spatial.floateval import float_gradients
    from pbbflow.spatial.local import network_gradients

    rng = np.random.default_rng(7)
    network = random_network(rng, activations=("tanh", "sigmoid", "softplus", "leaky_relu", "linear"), kind="float64")
    model = Model("jacobian")
    x = model.variables(network.n_inputs + 1, -1, 1)
    y = network(x[1:])
    model.minimize(y[0] if network.n_outputs == 1 else (maximum if combine == "max" else minimum)(*y))
    problem = model.problem()
    assert NetworkObjective.of(problem) is not None
    objective = NetworkObjective.of_unconstrained(problem)
    ours, tape = network_gradients(problem, objective), float_gradients(problem.tape)
    for point in rng.uniform(-1.0, 1.0, (10, problem.dimension)):
        (value, jacobian), (tape_value, tape_jacobian) = ours(point), tape(point)
        assert value.shape == (1,) and jacobian.shape == (1, problem.dimension)
        assert np.allclose(value, tape_value, rtol=1e-12, atol=1e-12)
        assert np.allclose(jacobian, tape_jacobian, rtol=1e-9, atol=1e-12)
    model.subject_to(x[0] <= 0.5)
    constrained = model.problem()
    assert NetworkObjective.of_unconstrained(constrained) is None
    assert network_gradients(constrained, None) is None


@pytest.mark.parametrize("combine", ["max", "min"])
def test_the_compiled_point_evaluation_is_numpys(combine):
    """The local solver's compiled value and gradient at one point (every kind of step, a form or
    several) equal numpy's batched ones to rounding; a NaN point gives a NaN value."""
    from pbbflow.spatial.network import forms_and_gradient
    from pbbflow.spatial.network_point import point_gradients

    rng = np.random.default_rng(23)
    for _ in range(20):
        network = random_network(rng, kind="float64")
        rows = int(rng.integers(1, 4))
        c, d = rng.normal(size=(rows, network.n_outputs)), rng.normal(size=rows)
        n_vars = network.n_inputs + 1
        inputs = tuple(int(i) for i in rng.permutation(n_vars)[: network.n_inputs])
        evaluate = point_gradients(NetworkObjective(network, inputs, c, d, combine), n_vars)
        for point in rng.uniform(-2.0, 2.0, (5, n_vars)):
            value, jacobian = evaluate(point)
            expected, gradient = forms_and_gradient(network, c, d, point[None, list(inputs)], combine)
            assert value.shape == (1,) and jacobian.shape == (1, n_vars)
            assert np.allclose(value, expected, rtol=1e-12, atol=1e-12)
            assert np.allclose(jacobian[0, list(inputs)], gradient[0], rtol=1e-9, atol=1e-12)
            assert np.all(np.delete(jacobian[0], list(inputs)) == 0.0)
        assert np.isnan(evaluate(np.full(n_vars, np.nan))[0][0])
        with pytest.raises(ValueError, match="shape"):
            evaluate(np.zeros(n_vars + 1))


def test_a_network_objectives_local_solves_stop_after_the_network_cap():
    """An unconstrained network objective's SLSQP solves stop after NETWORK_SLSQP_ITERATIONS (a ReLU
    network's kinks stall its line searches); with a constraint, or without a network, they keep
    SLSQP_OPTIONS. A capped solve on a ReLU network still ends at a point no worse than its start."""
    from pbbflow.spatial.local import NETWORK_SLSQP_ITERATIONS, SLSQP_OPTIONS, _LocalSolver

    rng = np.random.default_rng(11)
    network = random_network(rng, activations=("relu",), kind="float64")
    model = Model("capped")
    x = model.variables(network.n_inputs, -1, 1)
    model.minimize(network(x)[0])
    problem = model.problem()
    incumbent = _Incumbent(problem, 1e-6)
    solver = _LocalSolver(problem, incumbent)
    assert solver.options == {**SLSQP_OPTIONS, "maxiter": NETWORK_SLSQP_ITERATIONS}
    start = np.zeros(problem.dimension)
    solver.run(start)
    assert 0 < solver.evaluations  # distinct points, each evaluated once
    assert incumbent.x is not None
    assert incumbent.value <= float(evaluate_float(problem.tape, start)[0]) + 1e-9
    model.subject_to(x[0] <= 0.5)
    assert _LocalSolver(model.problem(), _Incumbent(model.problem(), 1e-6)).options is SLSQP_OPTIONS
    plain = Model("no network")
    y = plain.variables(2, -1, 1)
    plain.minimize(y[0] * y[0] + y[1])
    assert _LocalSolver(plain.problem(), _Incumbent(plain.problem(), 1e-6)).options is SLSQP_OPTIONS


def test_the_incumbent_verifies_a_network_objective_through_its_layers():
    """An unconstrained network objective's incumbent takes its verified values from the layers:
    the same as f's tape's to a few ulps, and at or above arb's exact values; with a constraint,
    from the tape."""
    from pbbflow.spatial.bounds import feasible_values

    network = deep_relu_network(np.random.default_rng(12), [2, 16, 16, 1])
    model = Model("incumbent")
    x = model.variables(2, -2, 2)
    model.minimize(network(x)[0])
    problem = model.problem()
    incumbent = _Incumbent(problem, 1e-6)
    at = np.random.default_rng(13).uniform(-2.0, 2.0, (50, 2))
    values, tape = incumbent.verified_values(at), feasible_values(problem.tape, at, 1e-6)
    assert np.allclose(values, tape, rtol=1e-12, atol=1e-12)
    for point, value in zip(at, values):
        assert not (arb_network(network, point)[0] > value)
    assert incumbent.offer(at[0]) and incumbent.value == values[0]
    assert incumbent.offer_many(at)[3] == values[3] and incumbent.value == values.min()
    model.subject_to(x[0] <= 1.0)
    assert _Incumbent(model.problem(), 1e-6)._network is None
