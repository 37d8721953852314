"""benchmarks/spatial_fixed_cost.py: one tree's round in a fresh process, and the whole report."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "spatial_fixed_cost.py"
REPO = Path(__file__).parents[2]


def test_the_report_names_each_tree_with_its_nodes_and_value(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pbbflow").symlink_to(REPO)
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--trees",
            str(tree),
            "--rounds",
            "1",
            "--warmup",
            "1",
            "--solves",
            "3",
            "bukin-6",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    (row,) = report["problems"]
    column = row[str(tree)]
    assert row["problem"] == "bukin-6"
    assert column["nodes"] == 1 and column["status"] == "optimal"
    assert 0.0 <= column["value"] < 1e-6 and column["median_s"] > 0.0
    assert report["settings"] == {"rounds": 1, "warmup": 1, "solves": 3, "parallel": False}
