"""The descent that looks for counterexamples before a region's search: its margin and gradient
against the tape and finite differences, and no candidate where the property holds."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pbbflow.spatial import Model
from pbbflow.spatial.falsify import candidates, inner_box
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.model import ACTIVATIONS
from pbbflow.spatial.network import Activation, Elementwise, Layer, Network, forms_and_gradient
from pbbflow.spatial.vnnlib import Atom, Region


def mixed_network(rng: np.random.Generator, activation: str) -> Network:
    """Every kind of step: elementwise scalings, layers with ``activation``, a lone activation."""
    return Network(
        3,
        (
            Elementwise("sub", rng.normal(size=3)),
            Elementwise("div", np.array([2.0, -4.0, 0.5])),
            Layer(rng.normal(size=(6, 3)), rng.normal(size=6), activation, 0.1),
            Elementwise("rsub", rng.normal(size=6)),
            Elementwise("mul", rng.normal(size=6)),
            Activation(activation, 0.2),
            Elementwise("add", rng.normal(size=6)),
            Layer(rng.normal(size=(2, 6)), None, "linear"),
        ),
    )


def form_tape(network: Network, row: np.ndarray, offset: float):
    """The tape of ``row . N(x) + offset`` over [-2, 2]^3."""
    model = Model("form")
    y = network(model.variables(3, -2.0, 2.0))
    model.minimize(row[0] * y[0] + row[1] * y[1] + offset)
    return model.problem().tape


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_forms_and_gradient_against_the_tape_and_finite_differences(activation):
    rng = np.random.default_rng(ACTIVATIONS.index(activation))
    network = mixed_network(rng, activation)
    c, d = np.array([[1.0, -2.0], [-0.5, 1.0]]), np.array([0.25, -0.75])
    tape = [form_tape(network, row, offset) for row, offset in zip(c, d)]
    points = rng.uniform(-2.0, 2.0, (50, 3))
    margin, gradient = forms_and_gradient(network, c, d, points)
    h = 1e-6
    for point, m, g in zip(points, margin, gradient):
        values = [evaluate_float(t, point)[0] for t in tape]
        assert m == pytest.approx(max(values), rel=1e-12, abs=1e-12)
        best = tape[int(np.argmax(values))]
        for i in range(3):
            step = np.eye(3)[i] * h
            slope = (evaluate_float(best, point + step)[0] - evaluate_float(best, point - step)[0]) / (2 * h)
            assert g[i] == pytest.approx(slope, rel=1e-5, abs=1e-5)


def test_no_candidate_where_the_property_holds_and_one_where_it_does_not():
    """y = x0 + 2 x1 - 0.5 on [-1, 1]^2 has the maximum 2.5 at (1, 1): 'y >= 2.6' has no
    counterexample, 'y >= 2.4' has, near the corner."""
    network = Network(2, (Layer(np.array([[1.0, 2.0]]), np.array([-0.5]), "linear"),))
    box = (Fraction(-1), Fraction(-1)), (Fraction(1), Fraction(1))
    for level, expected in ((Fraction("2.6"), 0), (Fraction("2.4"), 1)):
        region = Region(*box, (Atom({0: Fraction(-1)}, level),))
        found = candidates(network, region)
        assert (len(found) > 0) == bool(expected)
        for point in found:
            assert point @ np.array([1.0, 2.0]) - 0.5 >= 2.4


def test_the_inner_box_holds_only_doubles_of_the_region():
    third = Fraction(1, 3)
    lower, upper = inner_box(Region((third,), (Fraction(2, 3),), ()))
    assert Fraction(lower[0]) >= third and Fraction(upper[0]) <= Fraction(2, 3)
    assert inner_box(Region((third,), (third,), ())) is None  # a point that no double is
