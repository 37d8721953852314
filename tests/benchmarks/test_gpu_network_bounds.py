"""benchmarks/gpu_network_bounds.py runs (its --smoke batch, under the simulator in CI)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import gpu_network_bounds  # noqa: E402


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
def test_the_smoke_batch_agrees_with_the_cpu(tmp_path):
    """Two boxes of the ACAS-shaped network: the GPU's bounds are the CPU's, none above the float value
    at a box's centre, and the JSON is written."""
    document = gpu_network_bounds.main(["--smoke", "--out", str(tmp_path / "out.json")])
    (record,) = document["records"]
    assert record["boxes"] == 2 and record["compared_boxes"] == 2
    assert record["max_relative_difference"] <= 1e-12 and record["bounds_above_centre_value"] == 0
    assert (tmp_path / "out.json").is_file()
