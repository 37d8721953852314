"""Threshold questions (``MinimizeOptions.prove_above``, ``pbbflow minimize --prove-above C`` and
``--maximize --prove-below C``): "is f >= C at every feasible point?" against known optima, brute
force on a grid and arb at the violating points; the status ``decided``, limits, the CLI's exit
codes and lines, and a run stopped and resumed."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import flint
import numpy as np
import pytest
from spatial_helpers import affine_net, arb_outputs

from pbbflow.cli.main import main
from pbbflow.spatial import Model, evaluate_float, onnx_problem
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import evaluate_point, is_feasible
from pbbflow.spatial.family import SpatialRun
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions, prune_level
from pbbflow.spatial.problem import Problem
from pbbflow.storage.runstore import RunStore

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "spatial"
LOCAL = ["--gpus", "0", "--workers", "2", "--quiet"]
# a problem of the model API, a constrained and an equality-constrained one of ../shared/data/spatial
# (booth, st_e01, g11 are written out in tests/gpu/spatial/test_bnb.py, so these need the data), and peaks
FILES = ["B2-six-hump-camel", "C9-st-e01-globallib", "C3-g11-cec2006-g11", "B15-hartmann-3"]


def shifted_bowl():
    """(x - 1)^2 + 3 (y - 0.5)^2 + 2 over [-2, 3] x [-1, 2]: minimum 2 at (1, 0.5), a point of doubles."""
    model = Model("bowl")
    x, y = model.variable(-2, 3), model.variable(-1, 2)
    model.minimize((x - 1) ** 2 + 3 * (y - 0.5) ** 2 + 2)
    return model.problem(optimum=2.0)


def problems():
    cases = [pytest.param(shifted_bowl, id="bowl"), pytest.param(lambda: load_problem("peaks"), id="peaks")]
    for name in FILES:
        marks = pytest.mark.skipif(not (DATA / f"{name}.json").is_file(), reason="the shared data are not here")
        cases.append(pytest.param(lambda name=name: load_problem(str(DATA / f"{name}.json")), id=name, marks=marks))
    return cases


def grid_minimum(problem, count: int = 201) -> float:
    """Brute force: the least objective over a grid's feasible points (float evaluation), an upper
    bound of the minimum where the grid holds a feasible point."""
    axes = [
        np.linspace(lo, hi, count if problem.dimension <= 2 else 41) for lo, hi in zip(problem.lower, problem.upper)
    ]
    best = math.inf
    for point in np.stack(np.meshgrid(*axes), axis=-1).reshape(-1, problem.dimension):
        value = evaluate_point(problem.tape, point)
        if is_feasible(value, 1e-6):
            best = min(best, value.f_hi)
    return best


def check_violation(problem, result, level: float) -> None:
    """The reported point is feasible and its value below ``level`` rigorously, in floats and in arb."""
    assert result.status == "decided" and result.threshold == {"prove_above": level, "holds": False}
    x = np.array(result.solution)
    assert np.all(problem.lower <= x) and np.all(x <= problem.upper)
    value = evaluate_point(problem.tape, x)
    assert is_feasible(value, MinimizeOptions().feas_tol) and value.f_hi == result.value < level
    assert evaluate_float(problem.tape, x)[0] < level
    assert arb_outputs(problem.tape, x)[0] < flint.arb(level)
    assert result.lower_bound <= result.value


@pytest.mark.parametrize("make", problems())
def test_just_below_the_optimum_holds_and_just_above_it_is_violated(make):
    problem = make()
    optimum = problem.optimum
    delta = 1e-3 * max(1.0, abs(optimum))
    below = minimize(problem, MinimizeOptions(prove_above=optimum - delta))
    assert below.status == "decided" and below.threshold == {"prove_above": optimum - delta, "holds": True}
    assert optimum - delta <= below.lower_bound <= optimum and below.remaining_fraction == 0
    assert below.value is None or below.value >= optimum - delta
    assert below.lower_bound <= grid_minimum(problem)  # the certificate is below every sampled point
    check_violation(problem, minimize(problem, MinimizeOptions(prove_above=optimum + delta)), optimum + delta)


def test_deciding_takes_no_more_boxes_than_the_proof_and_stops_at_a_violating_point():
    problem = load_problem("peaks")
    options = MinimizeOptions(eps_abs=1e-9, eps_rel=0.0)
    proof = minimize(problem, options)
    assert proof.status == "optimal" and proof.threshold is None and proof.to_dict()["threshold"] is None
    for delta in (1.0, 0.1, 1e-3):
        decided = minimize(problem, MinimizeOptions(eps_abs=1e-9, eps_rel=0.0, prove_above=problem.optimum - delta))
        assert decided.threshold["holds"] is True and decided.nodes < proof.nodes, (delta, decided.nodes, proof.nodes)
    violated = minimize(problem, MinimizeOptions(prove_above=problem.optimum + 0.5))
    assert violated.nodes == 1 and violated.threshold["holds"] is False  # the root's points violate it


def test_a_threshold_at_an_optimum_attained_at_a_point_of_doubles_holds_and_is_never_violated():
    problem = shifted_bowl()  # f(1, 0.5) = 2 exactly; every box's natural bound of the squares is >= 2
    result = minimize(problem, MinimizeOptions(prove_above=2.0))
    assert result.status == "decided" and result.threshold["holds"] is True and result.lower_bound >= 2.0
    assert result.value is None or result.value >= 2.0
    model = Model("dip")  # x^2 - 2x: the minimum -1 at x = 1, which no subdomain bound reaches from below
    x = model.variable(-3, 3)
    model.minimize(x * x - 2 * x)
    options = MinimizeOptions(prove_above=-1.0, node_limit=300, second_order=False)
    undecidable = minimize(model.problem(), options)
    assert undecidable.threshold["holds"] is None and undecidable.status == "limit"
    assert undecidable.value >= -1.0 and undecidable.lower_bound < -1.0
    # the second-order bound at the verified point x = 1 (f = -1, f' = 0 exactly, f'' = 2) reaches it
    decided = minimize(model.problem(), replace(options, second_order=True))
    assert decided.status == "decided" and decided.threshold["holds"] is True and decided.lower_bound == -1.0


def test_an_infeasible_problem_holds_vacuously(capsys, tmp_path):
    document = {
        "name": "none",
        "variables": 2,
        "domain": [[-1, 1], [-1, 1]],
        "objective": "(x[0] + x[1])",
        "inequalities": ["(((x[0] ** 2) + (x[1] ** 2)) + 1)"],  # x^2 + y^2 + 1 <= 0 nowhere
    }
    path = tmp_path / "none.json"
    path.write_text(json.dumps(document))
    result = minimize(load_problem(str(path)), MinimizeOptions(prove_above=5.0))
    assert result.status == "decided" and result.threshold["holds"] is True
    assert result.lower_bound == math.inf and result.value is None
    assert main(["minimize", str(path), "--prove-above", "5", "--gpus", "0"]) == 0
    assert "threshold    holds: f >= 5.0 vacuously: no point is feasible" in capsys.readouterr().out


def test_a_node_limit_leaves_the_question_open():
    problem = load_problem("peaks")
    result = minimize(problem, MinimizeOptions(prove_above=problem.optimum - 1e-9, node_limit=3))
    assert result.status == "limit" and result.threshold == {"prove_above": problem.optimum - 1e-9, "holds": None}
    assert result.lower_bound < problem.optimum - 1e-9 and result.remaining_fraction > 0


def test_the_prune_level_of_a_threshold():
    """C while undecided, whatever the incumbent and the tolerances (UB - eps may lie below C);
    -inf once a point is below C; the optimum's rule without a threshold."""
    options = MinimizeOptions(eps_abs=0.5, eps_rel=0.1, prove_above=1.0)
    assert prune_level(math.inf, options) == prune_level(1.2, options) == prune_level(100.0, options) == 1.0
    assert prune_level(1.0, options) == 1.0 and prune_level(0.999, options) == -math.inf
    assert prune_level(1.2, MinimizeOptions(eps_abs=0.5, eps_rel=0.1)) == pytest.approx(0.7)
    for bad in (math.inf, math.nan, True, "1"):
        with pytest.raises(ValueError, match="prove_above must be a finite number"):
            MinimizeOptions(prove_above=bad)


def test_prove_below_with_maximize_through_the_cli(capsys, tmp_path):
    net = str(affine_net(tmp_path))
    base = ["minimize", net, "--domain", "-1:1", "--maximize", "--gpus", "0"]
    assert main([*base, "--prove-below", "3.5"]) == 0
    out = capsys.readouterr().out
    assert "status       decided" in out and "threshold    holds: f <= 3.5 on the whole box (certified bound " in out
    bound = float(out.split("certified bound ")[1].split(")")[0])
    assert 3.0 <= bound <= 3.5  # the certified maximum
    assert main([*base, "--prove-below", "2.5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "decided" and result["threshold"] == {"prove_above": -2.5, "holds": False}
    assert -result["objective"] > 2.5 and 2 * result["x"][0] + 1 > 2.5  # the output, exactly
    assert main([*base, "--prove-below", "2.5"]) == 0
    line = capsys.readouterr().out.split("threshold    ")[1].split("\n")[0]
    x = float(line.split("x = ")[1].split()[0])
    assert line.startswith("violated at x = ") and line.endswith("> 2.5)") and 2 * x + 1 > 2.5
    assert main([*base, "--prove-below", "-1e-3", "--node-limit", "1", "--json"]) == 0  # decided at the root
    assert json.loads(capsys.readouterr().out)["threshold"]["holds"] is False


def test_a_maximized_run_answers_in_the_users_sign_like_minimize(capsys, tmp_path):
    """``--maximize --prove-below`` through ``--run`` and ``info``: the maximum and the threshold
    read as in this process (f <= C, f = 3.0 > 2.5), from the store alone."""
    net = str(affine_net(tmp_path))
    base = ["minimize", net, "--domain", "-1:1", "--maximize", "--prove-below", "2.5"]
    assert main([*base, "--gpus", "0"]) == 0
    here = capsys.readouterr().out
    store = tmp_path / "max.zarr"
    assert main([*base, "--run", str(store), *LOCAL]) == 0
    run = capsys.readouterr().out
    assert main(["info", str(store)]) == 0
    info = capsys.readouterr().out
    for out in (here, run, info):
        maximum = out.split("maximum      ")[1].split("\n")[0]
        assert float(maximum.split()[0]) > 2.5 and "(certified <= " in maximum
        assert "threshold    violated at x = " in out and out.split("threshold    ")[1].split("\n")[0].endswith(
            "> 2.5)"
        )
    problem = onnx_problem(net, [(-1.0, 1.0)], maximize=True)
    assert problem.source["maximized"] is True and Problem.from_source(problem.source).maximized
    assert "maximized" not in onnx_problem(net, [(-1.0, 1.0)]).source  # older sources read the same


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["peaks", "--prove-below", "1"], "--prove-below needs --maximize"),
        (["peaks", "--prove-above", "1", "--prove-below", "1"], "--prove-above and --prove-below ask two questions"),
        (["peaks", "--prove-above", "inf"], "argument --prove-above: expected a finite number, got 'inf'"),
        (["peaks", "--prove-above", "nan"], "expected a finite number, got 'nan'"),
        (["peaks", "--prove-above", "x"], "expected a finite number, got 'x'"),
    ],
)
def test_threshold_user_errors_exit_2_in_one_line(capsys, arguments, message):
    try:
        code = main(["minimize", *arguments, "--gpus", "0"])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_cli_decides_negative_thresholds_and_stops_at_a_limit(capsys):
    optimum = load_problem("peaks").optimum
    assert main(["minimize", "peaks", "--prove-above", repr(optimum - 1e-3), "--gpus", "0"]) == 0
    out = capsys.readouterr().out
    assert f"threshold    holds: f >= {optimum - 1e-3!r} on the whole box (certified bound " in out
    assert main(["minimize", "peaks", "--prove-above", "-6.5e0", "--gpus", "0"]) == 0  # -6.5 > the optimum
    assert "threshold    violated at x = " in capsys.readouterr().out
    code = main(["minimize", "peaks", "--prove-above", repr(optimum - 1e-9), "--node-limit", "2", "--gpus", "0"])
    assert code == 3 and "threshold    undecided: f >= " in capsys.readouterr().out


def test_a_threshold_run_stops_resumes_and_decides(capsys, tmp_path):
    """The threshold is a run option in the store (JSON): resume keeps it."""
    path = tmp_path / "t.zarr"
    level = load_problem("peaks-ann-error-max").optimum - 1e-6  # about 36,000 boxes
    argv = ["minimize", "peaks-ann-error-max", "--prove-above", repr(level), "--subdomains", "4", "--run", str(path)]
    stop = ["--node-limit", "50", "--checkpoint-every", "1", "--gpus", "0", "--workers", "1", "--quiet"]
    assert main([*argv, "--json", *stop]) == 3
    stopped = json.loads(capsys.readouterr().out)
    assert stopped["status"] == "limit" and stopped["threshold"] == {"prove_above": level, "holds": None}
    assert RunStore.open(path).options["prove_above"] == level
    assert main(["resume", str(path), "--json", *LOCAL]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "decided" and result["threshold"] == {"prove_above": level, "holds": True}
    assert result["lower_bound"] >= level and result["remaining_fraction"] == 0
    violated = tmp_path / "v.zarr"
    assert main(["minimize", "peaks", "--prove-above", "-6.0", "--run", str(violated), "--json", *LOCAL]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "decided" and result["threshold"]["holds"] is False and result["objective"] < -6.0
    assert main(["info", str(violated)]) == 0
    assert "threshold    violated at x = " in capsys.readouterr().out


def test_a_run_store_of_before_thresholds_reads_as_the_optimum_and_a_bad_threshold_is_refused():
    problem = load_problem("peaks")
    options = dict(SpatialRun.new(problem, MinimizeOptions()).options)
    assert options.pop("prove_above") is None
    assert SpatialRun(problem, options).minimize_options().prove_above is None  # its options lack the key
    with pytest.raises(ValueError, match="option prove_above must be a number"):
        SpatialRun(problem, {**options, "prove_above": "1"})
    with pytest.raises(ValueError, match=r"\(prove_above may be absent\); they hold"):
        SpatialRun(problem, {**options, "workers": 2})
    assert SpatialRun(problem, {**options, "prove_above": 2}).minimize_options().prove_above == 2
