"""Benchmark: an ACAS-shaped suite decided as one job by ``pbbflow verify --instances CSV --run
PATH`` on a local cluster, as JSON: per instance its answer, seconds and boxes, and the suite's wall
time (the command's whole run: start-up, cluster, workers' code, every instance).

The networks: ``--networks`` ACAS-Xu-shaped 5-6x50-5 ReLU ONNX files (``network_bounds.py``'s
``write_acas_shaped``, seeds 0, 1, ...; seed 0 is ``benchmarks/networks``'s). The properties: as
``verify_falsify.py``, "Y_k is the largest output" over boxes of side ``--widths`` around seeded
centres in [-0.4, 0.4]^5, k = 0..4 in turn, each on every network: a mix of sat and unsat (and, for
wide boxes, timeouts). Every row has ``--time-limit`` seconds.

    python benchmarks/verify_suite.py --networks 2 --instances 3 --widths 0.02 0.05 0.1 --time-limit 20 \
        --workers 2 --out benchmarks/results/verify_suite_2core_2026-12-06.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from network_bounds import ACAS, write_acas_shaped  # noqa: E402
from verify_falsify import largest_output  # noqa: E402


def write_suite(folder: Path, networks: int, instances: int, widths: list[float], time_limit: float, seed: int) -> Path:
    """The networks, properties and instance list in ``folder``; the CSV."""
    (folder / "onnx").mkdir(parents=True)
    (folder / "vnnlib").mkdir()
    for n in range(networks):
        path = folder / "onnx" / f"acas_shaped_{n}.onnx"
        if n == 0 and ACAS.exists():
            path.write_bytes(ACAS.read_bytes())
        else:
            write_acas_shaped(path, seed=n)
    rng = np.random.default_rng(seed)
    rows, index = [], 0
    for width in widths:
        for _ in range(instances):
            centre = rng.uniform(-0.4, 0.4, 5)
            box = [(round(float(c) - width / 2, 6), round(float(c) + width / 2, 6)) for c in centre]
            name = f"vnnlib/prop_{index}_w{width:g}_largest{index % 5}.vnnlib"
            (folder / name).write_text(largest_output(index % 5, box))
            rows += [f"onnx/acas_shaped_{n}.onnx,{name},{time_limit:g}" for n in range(networks)]
            index += 1
    csv = folder / "instances.csv"
    csv.write_text("\n".join(rows) + "\n")
    return csv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", type=int, default=2)
    parser.add_argument("--instances", type=int, default=3, help="centres per width")
    parser.add_argument("--widths", type=float, nargs="+", default=[0.02, 0.05, 0.1])
    parser.add_argument("--time-limit", type=float, default=20.0, help="each row's timeout_seconds")
    parser.add_argument("--workers", type=int, default=None, help="local workers (default: one per core)")
    parser.add_argument("--gpus", default=None, help="the suite's --gpus (default: its own, every visible GPU)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="verify-suite-") as tmp:
        folder = Path(tmp)
        csv = write_suite(folder / "suite", args.networks, args.instances, args.widths, args.time_limit, args.seed)
        command = [sys.executable, "-m", "pbbflow.cli.main", "verify", "--instances", str(csv)]
        command += ["--run", str(folder / "suite.zarr"), "--json", "--quiet"]
        options = [] if args.workers is None else ["--workers", str(args.workers)]
        options += [] if args.gpus is None else ["--gpus", args.gpus]
        command += options
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - began
        if done.returncode not in (0, 3):
            sys.exit(f"the suite failed (exit {done.returncode}): {done.stderr}")
        document = json.loads(done.stdout)
    rows = document["instances"]
    report = {
        "benchmark": "verify_suite",
        "command": "python " + " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine(), "python": platform.python_version()},
        "suite_command": " ".join(
            ["pbbflow verify --instances instances.csv --run suite.zarr --json --quiet", *options]
        ),
        "exit_code": done.returncode,
        "wall_s": round(wall, 3),
        "instances_s": document["total_s"],
        "counts": document["counts"],
        "time_limit_s": args.time_limit,
        "instances": [
            {
                "index": row["index"],
                "network": row["network"],
                "property": row["property"],
                "answer": row["answer"],
                "seconds": None if row["seconds"] is None else round(row["seconds"], 4),
                "nodes": row["nodes"],
                **({"reason": row["reason"]} if row.get("reason") else {}),
            }
            for row in rows
        ],
    }
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
