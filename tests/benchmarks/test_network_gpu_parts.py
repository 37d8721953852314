"""benchmarks/network_gpu_parts.py runs (one small network problem, under the simulator in CI)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import network_gpu_parts  # noqa: E402


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
def test_the_parts_of_a_small_network_solve_are_timed_and_put_back(tmp_path):
    """ann04's maximum on the GPU route: proved, its parts timed (the layers' bound with its boxes,
    the local solves), the JSON written, and every timed method put back afterwards."""
    originals = {name: getattr(owner, method) for name, (owner, method) in network_gpu_parts.PARTS.items()}
    name = "ann04-camel-2-16-1-sigmoid (max)"
    out = tmp_path / "parts.json"
    document = network_gpu_parts.main(["--problems", name, "--repeats", "1", "--profile", name, "--out", str(out)])
    (row,) = document["problems"]
    run = row["median_run"]
    assert row["problem"] == name and run["status"] == "optimal" and run["lower_bound"] <= run["objective"]
    seconds, calls, boxes = run["parts"]["crown"]
    assert calls >= 1 and boxes >= calls and seconds > 0
    assert run["parts"]["local"][1] == run["local_solves"] and "function calls" in row["profile"]
    assert out.is_file()
    assert all(getattr(owner, method) is originals[n] for n, (owner, method) in network_gpu_parts.PARTS.items())
    with pytest.raises(SystemExit):
        network_gpu_parts.main(["--problems", "no such problem"])
