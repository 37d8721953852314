"""Deciding VNN-LIB properties: against exact rational evaluation of ReLU networks on grids and at
planted counterexamples. No unsat may have a counterexample; every sat point is checked exactly."""

from __future__ import annotations

import itertools
import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from spatial_helpers import affine_net

from pbbflow.spatial.network import Layer, Network
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.verify import _double_form, verify
from pbbflow.spatial.vnnlib import parse_vnnlib

OPTIONS = MinimizeOptions(time_limit=30.0)


def exact_outputs(network: Network, x) -> list[Fraction]:
    """The network at ``x`` in rational arithmetic on its stored doubles (ReLU and linear layers)."""
    values = [Fraction(v) for v in x]
    for layer in network.steps:
        bias = [0.0] * layer.sizes[1] if layer.bias is None else layer.bias.tolist()
        values = [
            sum((Fraction(w) * v for w, v in zip(row, values)), Fraction(b))
            for row, b in zip(layer.weights.tolist(), bias)
        ]
        if layer.activation == "relu":
            values = [max(v, Fraction(0)) for v in values]
    return values


def relu_network(seed: int, widths) -> Network:
    rng = np.random.default_rng(seed)
    layers = [
        Layer(rng.normal(0.0, np.sqrt(2.0 / a), (b, a)), rng.normal(0.0, 0.1, b), "relu")
        for a, b in zip(widths[:-2], widths[1:-1])
    ]
    layers.append(Layer(rng.normal(0.0, 1.0, (widths[-1], widths[-2])), rng.normal(0.0, 0.1, widths[-1]), "linear"))
    return Network(widths[0], tuple(layers))


def vnnlib(n_in: int, n_out: int, box, condition: str) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(n_in)] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    for i, (lo, hi) in enumerate(box):
        lines += [f"(assert (>= X_{i} {lo}))", f"(assert (<= X_{i} {hi}))"]
    return "\n".join([*lines, f"(assert {condition})"])


def satisfies(network: Network, prop, x) -> bool:
    """Whether ``x`` is a counterexample of ``prop``, exactly."""
    y = exact_outputs(network, x)
    for region in prop.regions:
        inside = all(a <= Fraction(v) <= b for a, v, b in zip(region.lower, x, region.upper))
        if inside and all(sum(c * y[j] for j, c in a.coefficients.items()) + a.constant <= 0 for a in region.atoms):
            return True
    return False


def test_a_linear_network_on_both_sides_of_its_maximum():
    """y0 = x0 + 2 x1 - 0.5 on [-1, 1]^2 has the maximum 2.5 at (1, 1)."""
    network = Network(2, (Layer(np.array([[1.0, 2.0], [-1.0, 1.0]]), np.array([-0.5, 0.0]), "linear"),))
    box = [(-1, 1), (-1, 1)]
    above = verify(network, parse_vnnlib(vnnlib(2, 2, box, "(>= Y_0 2.6)")), OPTIONS)
    assert above.answer == "unsat"
    below = verify(network, parse_vnnlib(vnnlib(2, 2, box, "(>= Y_0 2.4)")), OPTIONS)
    assert below.answer == "sat" and satisfies(network, parse_vnnlib(vnnlib(2, 2, box, "(>= Y_0 2.4)")), below.x)
    assert below.y[0] >= 2.4
    at = verify(network, parse_vnnlib(vnnlib(2, 2, box, "(>= Y_0 2.5)")), MinimizeOptions(time_limit=5.0))
    assert at.answer != "unsat"  # (1, 1) is a counterexample


@pytest.mark.parametrize("seed", range(6))
def test_output_zero_largest_against_an_exact_grid(seed):
    """'Y_0 is the largest' on a small box of a 2-8-8-3 ReLU network: unsat only where no grid
    point is a counterexample; sat only at a point that is one exactly."""
    network = relu_network(seed, [2, 8, 8, 3])
    rng = np.random.default_rng(50 + seed)
    centre = rng.uniform(-1.0, 1.0, 2)
    box = [(round(c - 0.25, 3), round(c + 0.25, 3)) for c in centre]
    prop = parse_vnnlib(vnnlib(2, 3, box, "(and (>= Y_0 Y_1) (>= Y_0 Y_2))"))
    verdict = verify(network, prop, OPTIONS)
    grid = [
        [Fraction(a) + (Fraction(b) - Fraction(a)) * Fraction(k, 20) for (a, b), k in zip(box, ks)]
        for ks in itertools.product(range(21), repeat=2)
    ]
    found = [x for x in grid if satisfies(network, prop, x)]
    if verdict.answer == "unsat":
        assert not found
    else:
        assert verdict.answer == "sat" and satisfies(network, prop, verdict.x)


@pytest.mark.parametrize("falsify", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_planted_counterexamples_are_found(seed, falsify):
    """A level just below the exact output at a planted point: never unsat, and a checked point,
    from the search alone or from the descent before it (then with no box bounded)."""
    network = relu_network(100 + seed, [3, 10, 10, 2])
    rng = np.random.default_rng(seed)
    planted = [Fraction(round(v, 4)) for v in rng.uniform(-1.0, 1.0, 3)]
    level = exact_outputs(network, planted)[1] - Fraction(1, 10**6)
    box = [(p - Fraction(1, 10), p + Fraction(1, 10)) for p in planted]
    text = vnnlib(3, 2, [(float(a), float(b)) for a, b in box], f"(>= Y_1 {float(level)!r})")
    prop = parse_vnnlib(text)
    verdict = verify(network, prop, OPTIONS, falsify=falsify)
    assert verdict.answer == "sat" and satisfies(network, prop, verdict.x)
    assert (verdict.nodes == 0) == falsify


@pytest.mark.parametrize("seed", range(4))
def test_a_coefficient_that_no_double_is_goes_to_the_general_search(seed):
    """'0.1 Y_0 >= Y_1' (0.1 is no double): the tape search decides it, against the exact grid."""
    network = relu_network(200 + seed, [2, 6, 2])
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-1.0, 1.0, 2)
    box = [(round(c - 0.3, 3), round(c + 0.3, 3)) for c in centre]
    prop = parse_vnnlib(vnnlib(2, 2, box, "(>= (* 0.1 Y_0) Y_1)"))
    assert _double_form(prop.regions[0].atoms, 2) is None
    verdict = verify(network, prop, OPTIONS)
    grid = [
        [Fraction(a) + (Fraction(b) - Fraction(a)) * Fraction(k, 16) for (a, b), k in zip(box, ks)]
        for ks in itertools.product(range(17), repeat=2)
    ]
    if verdict.answer == "unsat":
        assert not any(satisfies(network, prop, x) for x in grid)
    else:
        assert verdict.answer == "sat" and satisfies(network, prop, verdict.x)


def test_a_point_that_no_double_is_stays_unknown_never_unsat():
    """X_0 = 0.1 exactly, Y_0 = X_0 >= 0.1: the one counterexample is no double; the box of doubles
    around it cannot be split, and its points fail the exact check: unknown, with one box bounded."""
    network = Network(1, (Layer(np.array([[1.0]]), None, "linear"),))
    text = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (and (>= X_0 0.1) (<= X_0 0.1) (>= Y_0 0.1)))"
    verdict = verify(network, parse_vnnlib(text), OPTIONS)
    assert verdict.answer == "unknown"


def test_wide_boxes_are_split_until_each_holds():
    """'Y_0 is the largest' on a wide box of a 3-16-16-3 ReLU network takes many boxes; the answer
    agrees with an exact grid, and a sat point is a counterexample exactly."""
    network = relu_network(7, [3, 16, 16, 3])
    box = [(-1.0, 1.0)] * 3
    grid = [[Fraction(k, 4) for k in ks] for ks in itertools.product(range(-4, 5), repeat=3)]
    answers = []
    for condition in ("(and (>= Y_0 Y_1) (>= Y_0 Y_2))", "(and (>= Y_0 (+ Y_1 3)) (>= Y_0 (+ Y_2 3)))"):
        prop = parse_vnnlib(vnnlib(3, 3, box, condition))
        verdict = verify(network, prop, OPTIONS, falsify=False)
        answers.append(verdict.answer)
        if verdict.answer == "unsat":
            assert verdict.nodes > 50 and not any(satisfies(network, prop, x) for x in grid)
        else:
            assert verdict.answer == "sat" and satisfies(network, prop, verdict.x)
    assert answers == ["sat", "unsat"]


def test_regions_are_tried_in_turn_and_a_later_one_answers():
    network = Network(1, (Layer(np.array([[1.0], [-1.0]]), None, "linear"),))
    text = """(declare-const X_0 Real)
(declare-const Y_0 Real)
(declare-const Y_1 Real)
(assert (or (and (>= X_0 0) (<= X_0 1) (>= Y_0 2)) (and (>= X_0 3) (<= X_0 4) (>= Y_0 3.5))))"""
    verdict = verify(network, parse_vnnlib(text), OPTIONS)
    assert verdict.answer == "sat" and 3.5 <= verdict.x[0] <= 4


def test_a_region_without_output_atoms_is_sat_at_once_and_sizes_must_match():
    network = Network(1, (Layer(np.array([[2.0]]), None, "linear"),))
    text = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (and (>= X_0 0.1) (<= X_0 0.3)))"
    verdict = verify(network, parse_vnnlib(text), OPTIONS)
    assert verdict.answer == "sat" and Fraction("0.1") <= Fraction(verdict.x[0]) <= Fraction("0.3")
    stopped = verify(network, parse_vnnlib(text.replace("(>= X_0 0.1)", "(>= X_0 0.1) (>= Y_0 9)")), None, lambda: True)
    assert stopped.answer == "timeout"
    with pytest.raises(ValueError, match="the property has 1 inputs and 1 outputs, the network 2 and 1"):
        verify(Network(2, (Layer(np.ones((1, 2)), None, "linear"),)), parse_vnnlib(text))


def test_the_command_answers_writes_vnncomp_results_and_exits_0_or_3(tmp_path, capsys):
    from pbbflow.cli.main import main

    pytest.importorskip("onnx")
    net = str(affine_net(tmp_path))
    prop = tmp_path / "p.vnnlib"
    result = tmp_path / "r.txt"
    base = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"
    prop.write_text(base + "(assert (>= Y_0 3.5))")
    assert main(["verify", net, str(prop), "--result", str(result), "--quiet"]) == 0
    assert "answer       unsat" in capsys.readouterr().out and result.read_text() == "unsat\n"
    prop.write_text(base + "(assert (>= Y_0 2.5))")
    assert main(["verify", net, str(prop), "--result", str(result), "--json", "--quiet"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["answer"] == "sat" and 2 * answer["x"][0] + 1 >= 2.5 and answer["y"][0] >= 2.5
    lines = result.read_text().splitlines()
    assert (
        lines[0] == "sat" and lines[1].startswith("((X_0 ") and lines[2].startswith("(Y_0 ") and lines[2].endswith("))")
    )
    assert float(lines[1].split()[1].rstrip(")")) == answer["x"][0]
    acas = Path(__file__).resolve().parents[2] / "benchmarks" / "networks" / "acas-shaped-5-6x50-5-relu.onnx"
    declare = [f"(declare-const X_{i} Real)" for i in range(5)] + [f"(declare-const Y_{j} Real)" for j in range(5)]
    box = [f"(assert (>= X_{i} 0.05))\n(assert (<= X_{i} 0.15))" for i in range(5)]
    prop.write_text("\n".join([*declare, *box, "(assert (and (>= Y_0 Y_1) (>= Y_0 Y_2) (>= Y_0 Y_3) (>= Y_0 Y_4)))"]))
    assert main(["verify", str(acas), str(prop), "--quiet", "--time-limit", "0.5"]) == 3  # open at 30 s
    assert "answer       timeout" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (< X_0 1))", r"p\.vnnlib:3: '<' is not in"),
        (
            "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
            "(assert (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1)))",
            "p.vnnlib has 2 inputs and 1 outputs; affine.onnx 1 and 1",
        ),
    ],
)
def test_command_user_errors_are_one_line_exit_2(tmp_path, capsys, text, message):
    from pbbflow.cli.main import main

    pytest.importorskip("onnx")
    net = str(affine_net(tmp_path))
    prop = tmp_path / "p.vnnlib"
    prop.write_text(text)
    assert main(["verify", net, str(prop)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.count("\n") == 1 and "Traceback" not in err


def test_a_result_file_that_cannot_be_written_is_refused_before_the_search(tmp_path, capsys):
    from pbbflow.cli.main import main

    pytest.importorskip("onnx")
    net = str(affine_net(tmp_path))
    prop = tmp_path / "p.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))")
    target = tmp_path / "elsewhere.txt"
    link = tmp_path / "r.txt"
    link.symlink_to(target)
    assert main(["verify", net, str(prop), "--result", str(link), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--result" in err and "cannot write it" in err and err.count("\n") == 1 and not target.exists()
    assert main(["verify", net, str(prop), "--result", str(tmp_path / "no" / "r.txt"), "--quiet"]) == 2
    assert "cannot write it" in capsys.readouterr().err


def test_load_code_loads_the_general_search_only_where_a_region_needs_it(monkeypatch):
    from pbbflow.spatial import bnb
    from pbbflow.spatial.verify import general_region, load_code

    loaded = []
    monkeypatch.setattr(bnb, "load_code", lambda problem, options: loaded.append(problem) or (0.0, False))
    network = relu_network(3, [2, 4, 2])
    box = [(0.0, 1.0), (0.0, 1.0)]
    doubles = parse_vnnlib(vnnlib(2, 2, box, "(>= Y_0 (* 0.5 Y_1))"))
    assert general_region(network, doubles) is None
    seconds, _ = load_code(network, doubles, OPTIONS)
    assert seconds >= 0.0 and loaded == []
    tenth = parse_vnnlib(vnnlib(2, 2, box, "(or (>= Y_0 (* 0.5 Y_1)) (>= Y_0 (* 0.1 Y_1)))"))
    assert general_region(network, tenth) is tenth.regions[1]
    load_code(network, tenth, OPTIONS)
    assert len(loaded) == 1
