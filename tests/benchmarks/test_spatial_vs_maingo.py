"""benchmarks/spatial_vs_maingo.py's merge of reports: speed-ups over the better anchor and ratios to MAiNGO."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "spatial_vs_maingo.py"


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("spatial_vs_maingo", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(SCRIPT.parent))


def column(status: str, seconds: float) -> dict:
    return {"status": status, "seconds_median": seconds}


def report(command: str, rows: list[dict]) -> dict:
    return {"command": command, "machine": {}, "settings": {}, "problems": rows}


def test_merge_joins_rows_and_rates_both_routes_against_the_better_anchor(script):
    ours = report(
        "ours",
        [
            {"problem": "a", "pbbflow_gpu": column("optimal", 0.5), "pbbflow_auto": column("optimal", 0.1)},
            {"problem": "b", "pbbflow_gpu": column("optimal", 2.0), "pbbflow_auto": column("time_limit", 20.0)},
            {"problem": "c", "pbbflow_gpu": column("optimal", 0.25), "pbbflow_auto": column("optimal", 0.25)},
        ],
    )
    maingo = report(
        "maingo",
        [
            {"problem": "a", "maingo": column("GLOBALLY_OPTIMAL", 0.2)},
            {"problem": "b", "maingo": column("GLOBALLY_OPTIMAL", 4.0)},
            {"problem": "c", "maingo": column("FEASIBLE_POINT", 20.0)},
        ],
    )
    scip = report(
        "scip", [{"problem": "a", "scip": column("optimal", 0.05)}, {"problem": "c", "scip": column("timelimit", 20.0)}]
    )
    merged = script.merge([ours, maingo, scip])
    assert merged["sources"] == ["ours", "maingo", "scip"]
    a, b, c = merged["speedups"]
    assert a == {
        "problem": "a",
        "better_anchor": "scip",
        "anchor_s": 0.05,
        "anchor_open": False,
        "gpu_s": 0.5,
        "speedup": 0.1,
        "gpu_over_maingo": 2.5,
        "auto_s": 0.1,
        "auto_speedup": 0.5,
        "auto_over_maingo": 0.5,
    }
    assert b["auto_s"] is None and b["auto_speedup"] is None and "auto_over_maingo" not in b
    assert (b["better_anchor"], b["speedup"], b["gpu_over_maingo"]) == ("maingo", 2.0, 0.5)
    assert c["anchor_open"] and c["anchor_s"] == 20.0 and c["speedup"] == 80.0 and "gpu_over_maingo" not in c
    gpu_only = script.merge([report("gpu", [{"problem": "a", "pbbflow_gpu": column("optimal", 0.5)}]), maingo])
    assert "auto_s" not in gpu_only["speedups"][0]


def test_a_missing_problem_folder_stops_the_benchmark(script, tmp_path):
    """A data folder that is not there (a tree copied away from ../shared/data) is an error naming
    it, not a set with fewer problems."""
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "p.json").write_text("{}")
    missing = tmp_path / "no-such-data"
    with pytest.raises(SystemExit, match="no-such-data: no such folder"):
        script.problem_specs(missing, [tmp_path / "extra"])
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "B1.json").write_text("{}")
    (tmp_path / "data" / "README.json").write_text("{}")
    specs = script.problem_specs(tmp_path / "data", [tmp_path / "extra"])
    assert specs == [str(tmp_path / "data" / "B1.json"), str(tmp_path / "extra" / "p.json")]
