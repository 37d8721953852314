"""Benchmark: deciding VNN-LIB properties by input splitting with each box bounded on one CPU thread
or in batches on the GPU (``verify(..., gpu=...)``), side by side, as JSON.

The instances are those of ``benchmarks/verify_falsify.py`` ("Y_k is the largest output" of the
ACAS-shaped 5-6x50-5 ReLU network over boxes of side ``--widths`` around seeded centres), each
decided both ways in turn, with the descent first. ``agree`` is false where the two gave different
decided answers (a bug). The GPU kernel's first launch (its compile or numba's cache) is timed
apart, before the instances.

    python benchmarks/verify_gpu.py --instances 5 --widths 0.1 0.3 0.6 --time-limit 60 --out FILE
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from network_bounds import ACAS, write_acas_shaped  # noqa: E402
from verify_falsify import largest_output  # noqa: E402

from pbbflow.spatial.onnx_network import read_onnx  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402
from pbbflow.spatial.verify import load_code, verify  # noqa: E402
from pbbflow.spatial.vnnlib import parse_vnnlib  # noqa: E402

WAYS = ("cpu", "gpu")


def run(network, prop, time_limit: float, gpu: bool) -> dict:
    began = time.perf_counter()
    verdict = verify(network, prop, MinimizeOptions(parallel=False, time_limit=time_limit), gpu=gpu)
    return {"answer": verdict.answer, "nodes": verdict.nodes, "seconds": round(time.perf_counter() - began, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=5, help="centres per width")
    parser.add_argument("--widths", type=float, nargs="+", default=[0.1, 0.3])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--out", type=Path, help="also write the JSON here after every instance")
    args = parser.parse_args()
    if not ACAS.exists():
        write_acas_shaped(ACAS)
    network = read_onnx(ACAS)
    warm = parse_vnnlib(largest_output(0, [(0.0, 0.01)] * 5))
    load_code(network, warm, MinimizeOptions(parallel=False))
    report = {
        "benchmark": "verify_gpu",
        "command": "python " + " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine(), "python": platform.python_version()},
        "network": ACAS.name,
        "time_limit_s": args.time_limit,
        "instances": [],
    }
    if "gpu" in args.ways:
        began = time.perf_counter()
        verify(network, warm, MinimizeOptions(parallel=False), falsify=False, gpu=True)
        report["gpu_first_launch_s"] = round(time.perf_counter() - began, 3)
    rng = np.random.default_rng(args.seed)
    index = 0
    for width in args.widths:
        for _ in range(args.instances):
            centre = rng.uniform(-0.4, 0.4, 5)
            box = [(round(float(c) - width / 2, 6), round(float(c) + width / 2, 6)) for c in centre]
            k = index % 5
            prop = parse_vnnlib(largest_output(k, box))
            ways = args.ways if index % 2 == 0 else args.ways[::-1]
            results = {way: run(network, prop, args.time_limit, way == "gpu") for way in ways}
            decided = {r["answer"] for r in results.values() if r["answer"] in ("sat", "unsat")}
            report["instances"].append({"width": width, "largest": k, **results, "agree": len(decided) <= 1})
            print(json.dumps(report["instances"][-1]), file=sys.stderr, flush=True)
            index += 1
            if args.out:
                args.out.write_text(json.dumps(report, indent=1))
    report["summary"] = {
        way: {
            answer: sum(1 for r in report["instances"] if r[way]["answer"] == answer)
            for answer in ("sat", "unsat", "timeout", "unknown")
        }
        | {
            "seconds": round(sum(r[way]["seconds"] for r in report["instances"]), 3),
            "boxes": sum(r[way]["nodes"] for r in report["instances"]),
        }
        for way in args.ways
    }
    report["summary"]["all_agree"] = all(r["agree"] for r in report["instances"])
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
