"""benchmarks/solve_sweep.py's verdicts on runs, against known bounds."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "solve_sweep.py"
SPEC = importlib.util.spec_from_file_location("solve_sweep", SCRIPT)
sweep = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sweep)
BOUNDS = {"ta011": (1582, 1582, True), "ta051": (3771, 3844, False)}


def run(instance="ta011", exit_code=0, status="optimal", makespan=1582, lower_bound=1582) -> dict:
    return {"instance": instance, "exit": exit_code, "status": status, "makespan": makespan, "lower_bound": lower_bound}


def test_a_proof_of_the_known_optimum_and_a_stop_at_the_limit_pass():
    assert sweep.failure(run(), BOUNDS) is None
    assert sweep.failure(run(exit_code=3, status="limit", makespan=1590, lower_bound=1500), BOUNDS) is None
    assert sweep.failure(run("ta051", status="limit", makespan=3900, lower_bound=3771), BOUNDS) is None


def test_a_wrong_optimum_a_bound_above_the_best_known_a_crash_and_no_result_fail():
    assert "optimum is 1582" in sweep.failure(run(makespan=1583, lower_bound=1583), BOUNDS)
    assert "above the best known" in sweep.failure(
        run("ta051", status="limit", makespan=3900, lower_bound=3845), BOUNDS
    )
    assert sweep.failure(run(exit_code=1), BOUNDS) == "exit 1"
    assert sweep.failure({"instance": "ta011", "exit": 0}, BOUNDS) == "no result"


def test_the_shared_bounds_file_reads_as_instance_bounds(tmp_path):
    csv = tmp_path / "bounds.csv"
    csv.write_text('instance,n,m,lower_bound,upper_bound,optimal,source\nta051,50,20,3771,3844,no,"x, y"\n')
    assert sweep.known_bounds(csv) == {"ta051": (3771, 3844, False)}
