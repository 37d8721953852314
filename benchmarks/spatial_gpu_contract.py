"""Benchmark (real GPU): FBBT contraction on the GPU against the CPU's ``contract_boxes``, as JSON.

For each problem (the built-in peaks and peaks ANN, and the constrained files C*.json of
``../shared/data/spatial`` where present) and box count (the root box and random sub-boxes), at
ub = +inf and at ub = optimum + 1e-3 (1 + |optimum|): the seconds of ``contract_boxes_device`` on
device-resident boxes (launch and synchronize), of ``contract_boxes_gpu`` (transfers included)
and of the CPU (one thread), medians over ``--repeats`` after a warm-up; and how the results
agree: equal empty flags, boxes equal bit for bit, the largest endpoint difference relative to
the box's width, and how many GPU boxes are strictly inside / strictly around the CPU's. Also
the kernel's registers and local memory per thread.

    python benchmarks/spatial_gpu_contract.py > benchmarks/results/spatial_gpu_contract_h200.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spatial_gpu_bounds import boxes, median_seconds  # noqa: E402

from pbbflow.gpu.spatial.contract import contract_boxes_device, contract_boxes_gpu, contracting_kernel  # noqa: E402
from pbbflow.gpu.spatial.kernels import DeviceTape  # noqa: E402
from pbbflow.spatial.contract import contract_boxes  # noqa: E402
from pbbflow.spatial.load import load_problem  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"
BOXES = (1, 256, 4096, 65536)


def agreement(lo, hi, gpu, cpu) -> dict:
    both = ~gpu[2] & ~cpu[2]
    width = np.maximum(hi[both] - lo[both], np.finfo(float).tiny)
    difference = np.maximum(np.abs(gpu[0][both] - cpu[0][both]), np.abs(gpu[1][both] - cpu[1][both])) / width
    inside = np.all((gpu[0][both] >= cpu[0][both]) & (gpu[1][both] <= cpu[1][both]), axis=1)
    around = np.all((gpu[0][both] <= cpu[0][both]) & (gpu[1][both] >= cpu[1][both]), axis=1)
    same = np.all((gpu[0][both] == cpu[0][both]) & (gpu[1][both] == cpu[1][both]), axis=1)
    return {
        "empty_gpu": int(gpu[2].sum()),
        "empty_cpu": int(cpu[2].sum()),
        "empty_equal": bool(np.array_equal(gpu[2], cpu[2])),
        "boxes_bitwise_equal": int(same.sum()),
        "boxes_compared": int(both.sum()),
        "gpu_strictly_inside_cpu": int((inside & ~same).sum()),
        "gpu_strictly_around_cpu": int((around & ~same).sum()),
        "max_difference_over_width": float(difference.max()) if difference.size else 0.0,
    }


def run(problem, count: int, ub: float, repeats: int) -> dict:
    lo, hi = boxes(problem, count)
    dtape = DeviceTape.upload(problem.tape)
    d_lo, d_hi = cuda.to_device(lo), cuda.to_device(hi)
    d_ub = cuda.to_device(np.array([ub]))
    empty = cuda.device_array(count, np.bool_)

    def on_device():
        d_lo.copy_to_device(lo)  # a device-to-device refill would do; this keeps the inputs equal
        d_hi.copy_to_device(hi)
        cuda.synchronize()
        start = time.perf_counter()
        contract_boxes_device(dtape, d_lo, d_hi, count, d_ub, 1e-6, empty)
        cuda.synchronize()
        return time.perf_counter() - start

    on_device()
    device_seconds = statistics.median(on_device() for _ in range(repeats))
    contract_boxes_gpu(problem.tape, lo, hi, ub)
    gpu_seconds, gpu = median_seconds(lambda: contract_boxes_gpu(problem.tape, lo, hi, ub), repeats)
    contract_boxes(problem.tape, lo[:1], hi[:1], ub)
    cpu_seconds, cpu = median_seconds(lambda: contract_boxes(problem.tape, lo, hi, ub), repeats)
    return {
        "boxes": count,
        "ub": ub if math.isfinite(ub) else "inf",
        "device_seconds": device_seconds,
        "gpu_seconds_with_transfers": gpu_seconds,
        "cpu_seconds_one_thread": cpu_seconds,
        "boxes_per_second_device": count / device_seconds,
        **agreement(lo, hi, gpu, cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, nargs="+", default=list(BOXES))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    problems = [load_problem("peaks"), load_problem("peaks-ann")]
    problems += [load_problem(str(path)) for path in sorted(DATA.glob("C*.json"))]
    results = []
    for problem in problems:
        finite_ub = problem.optimum + 1e-3 * (1.0 + abs(problem.optimum))
        rows = [run(problem, count, ub, args.repeats) for count in args.boxes for ub in (math.inf, finite_ub)]
        kernel = contracting_kernel()
        resources = {
            "registers": sorted(set(kernel.get_regs_per_thread().values())),
            "local_bytes": sorted(set(kernel.get_local_mem_per_thread().values())),
        }
        results.append(
            {
                "problem": problem.name,
                "slots": problem.tape.size,
                "vars": problem.tape.n_vars,
                "kernel_resources": resources,
                "runs": rows,
            }
        )
        print(json.dumps(results[-1]), file=sys.stderr)
    device = cuda.get_current_device()
    json.dump(
        {
            "device": device.name.decode() if isinstance(device.name, bytes) else str(device.name),
            "host": platform.node(),
            "results": results,
        },
        sys.stdout,
        indent=1,
    )


if __name__ == "__main__":
    main()
