"""End-to-end solves: proved optima equal the published ones (Taillard, VFR against brute force)."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from pbbflow.core.result import Status
from pbbflow.flowshop.evaluation import brute_force_optimum, makespan
from pbbflow.flowshop.instance import FlowShop
from pbbflow.flowshop.load import load_instance
from pbbflow.flowshop.solve import solve
from pbbflow.flowshop.taillard import taillard_instance

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
# Known optima of ta001-020 and ta031-050 (../shared/data/taillard/bounds.csv, all optimal=yes),
# embedded so that the test does not depend on the shared folder.
TAILLARD_OPTIMA = {
    1: 1278,
    2: 1359,
    3: 1081,
    4: 1293,
    5: 1235,
    6: 1195,
    7: 1234,
    8: 1206,
    9: 1230,
    10: 1108,
    11: 1582,
    12: 1659,
    13: 1496,
    14: 1377,
    15: 1419,
    16: 1397,
    17: 1484,
    18: 1538,
    19: 1593,
    20: 1591,
    31: 2724,
    32: 2834,
    33: 2621,
    34: 2751,
    35: 2863,
    36: 2829,
    37: 2725,
    38: 2683,
    39: 2552,
    40: 2782,
    41: 2991,
    42: 2867,
    43: 2839,
    44: 3063,
    45: 2976,
    46: 3006,
    47: 3093,
    48: 3037,
    49: 2897,
    50: 3065,
}
SLOW = {17, 42, 43, 46, 47, 48, 50}  # each takes seconds to tens of seconds on 2 cores


@pytest.mark.skipif(not (DATA / "taillard" / "bounds.csv").exists(), reason="../shared/data not present")
def test_embedded_optima_match_the_shared_table():
    with open(DATA / "taillard" / "bounds.csv") as handle:
        table = {int(r["instance"][2:]): r for r in csv.DictReader(handle)}
    for number, value in TAILLARD_OPTIMA.items():
        assert table[number]["optimal"] == "yes"
        assert int(table[number]["upper_bound"]) == value


@pytest.mark.parametrize(
    "number", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in sorted(TAILLARD_OPTIMA)]
)
def test_taillard_optimum_is_proved(number):
    instance = taillard_instance(number)
    result = solve(instance, threads=2)
    assert result.status == Status.OPTIMAL
    assert result.makespan == result.lower_bound == TAILLARD_OPTIMA[number]
    assert makespan(instance.p, np.array(result.permutation)) == TAILLARD_OPTIMA[number]
    assert result.remaining_fraction == 0.0


VFR_SMALL = ["VFR10_5_1", "VFR10_10_2", "VFR10_15_3", "VFR10_20_4"]


@pytest.mark.skipif(not (DATA / "vfr" / "small").exists(), reason="../shared/data not present")
@pytest.mark.parametrize("name", VFR_SMALL)
def test_vfr_small_optimum_equals_brute_force_and_published_bounds(name):
    instance = load_instance(str(DATA / "vfr" / "small" / f"{name}_Gap.txt"))
    optimum, _ = brute_force_optimum(instance.p)
    result = solve(instance, threads=2)
    assert result.status == Status.OPTIMAL and result.makespan == optimum
    with open(DATA / "vfr" / "small_bounds_vrf_authors.csv") as handle:
        row = next(r for r in csv.DictReader(handle) if r["instance"] == name)
    assert int(row["lower_bound_vrf"]) <= optimum <= int(row["upper_bound_vrf"])


def test_user_upper_bound_below_the_optimum_is_proved():
    result = solve(taillard_instance(1), ub=1277)
    assert result.status == Status.BOUND_PROVED
    assert result.lower_bound == 1277
    assert result.makespan >= 1278  # the best schedule known (NEH's), never below the optimum


def test_without_neh_the_search_finds_the_optimum_itself():
    result = solve(taillard_instance(2), use_neh=False, threads=2)
    assert result.status == Status.OPTIMAL and result.makespan == 1359 and result.leaves >= 1


def test_degenerate_sizes():
    one_job = FlowShop("one-job", np.array([[3, 4, 5]], dtype=np.int32))
    one_machine = FlowShop("one-machine", np.array([[3], [4], [5]], dtype=np.int32))
    assert solve(one_job).makespan == 12
    assert solve(one_machine).makespan == 12
    assert solve(one_machine, use_neh=False).status == Status.OPTIMAL


def test_limit_reports_a_valid_bound_and_remainder():
    result = solve(taillard_instance(21), node_limit=50_000, threads=2)
    assert result.status == Status.LIMIT
    assert 0.0 < result.remaining_fraction < 1.0
    assert result.remaining_log10 == pytest.approx(math.log10(result.remaining_fraction))
    assert result.lower_bound <= 2297 <= result.makespan  # 2297 is ta021's optimum


def test_progress_is_reported_as_the_one_progress_model():
    """``on_progress`` gets ``core.progress.Progress``: the explorers' nodes, rate, UB and leaves;
    the share left is not counted in this process (NaN) and the work holds no bounds."""
    seen = []
    result = solve(taillard_instance(21), time_limit=2.5, threads=2, on_progress=seen.append)
    assert result.status == Status.LIMIT and seen
    assert [p.nodes for p in seen] == sorted(p.nodes for p in seen) and seen[-1].nodes <= result.nodes
    assert all(not p.bounded and math.isnan(p.remaining_fraction) and p.active_explorers == 2 for p in seen)
    assert all(p.ub >= result.makespan and 0 <= p.extras["leaves"] <= result.leaves for p in seen)
