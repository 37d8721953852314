"""Benchmark summary: the outputs of ``benchmarks/old_new_side_by_side.sh`` (an unpacked devbench folder) as
one JSON, old and new side by side: the GPU explorer's nodes and rates, ``minimize``'s second (warm) runs,
start-up cold and warm.

    python benchmarks/old_new_summary.py /tmp/dev3/devbench --old-commit d605857 --new-commit 9a2434d
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def summary(folder: Path, tree: str) -> dict:
    explorer = json.loads((folder / f"{tree}-gpu_explorer.json").read_text())
    minimize = {}
    for path in sorted(folder.glob(f"{tree}-minimize-*-2.json")):
        result = json.loads(path.read_text())
        minimize[result["problem"]] = {
            k: result.get(k) for k in ("status", "objective", "lower_bound", "nodes", "elapsed_s")
        }
    startup = _json_lines(folder / f"{tree}-startup.err")
    coordinator = [json.loads(path.read_text()) for path in sorted(folder.glob(f"{tree}-coordinator-*.json"))]
    return {
        "gpu_explorer": [
            {k: run[k] for k in ("instance", "nodes", "seconds", "nodes_per_s")} for run in explorer["runs"]
        ],
        "minimize_warm": minimize,
        "coordinator": [
            {
                "flowshop_handler_ms": {
                    r["intervals"]: r["handler_ms_median_continue"] for r in run["checkpoint_cost"]
                },
                "spatial_handler_ms": {
                    r["boxes"]: r["handler_ms_median_continue"] for r in run["spatial_checkpoint_cost"]
                },
                "rpc_round_trip_ms": {r["intervals"]: r["rpc_round_trip_ms_median"] for r in run["checkpoint_cost"]},
                "calls_per_s": {r["intervals_each"]: r["calls_per_s"] for r in run["message_rate"]},
            }
            for run in coordinator
        ],
        "startup": [
            {k: run[k] for k in ("cache", "wall_s", "compile_s" if "compile_s" in run else "compiling_line_s")}
            for run in startup
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--old-commit", required=True)
    parser.add_argument("--new-commit", required=True)
    args = parser.parse_args()
    gpu = (args.folder / "gpu.csv").read_text().splitlines()[-1].split(",")[0]
    print(
        json.dumps(
            {
                "benchmark": "old_new_side_by_side",
                "gpu": gpu,
                "old": {"commit": args.old_commit, **summary(args.folder, "old")},
                "new": {"commit": args.new_commit, **summary(args.folder, "new")},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
