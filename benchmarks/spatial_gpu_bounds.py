"""Benchmark (real GPU): ``bound_boxes_gpu`` against the CPU's ``bound_boxes`` on the peaks ANN, as JSON.

For each subdomain count (N^2 = 1 ... 16,384 per box) and box count (the root box [-3, 3]^2 and
random sub-boxes of it), the GPU bounds every box; the first ``--check`` boxes are bounded on the
CPU too (numba's threads) and compared: lb to 1e-12 relative (library functions differ between
libdevice and glibc in the last bits and are widened by 2 and 4 ulps), n_kept, hull and best point
equal. Seconds are medians over ``--repeats`` calls after a warm-up call that compiles the kernel;
a GPU call includes its transfers. Run it where numba-cuda sees a GPU:

    python benchmarks/spatial_gpu_bounds.py > benchmarks/results/spatial_gpu_bounds_h200.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np
from numba import cuda

from pbbflow.gpu.spatial.kernels import bound_boxes_gpu, bounding_kernel
from pbbflow.spatial.bounds import Mode, bound_boxes
from pbbflow.spatial.load import load_problem

SUBDOMAINS = (1, 4, 16, 64, 256, 1024, 4096, 16384)
BOXES = (1, 16, 256, 4096)


def boxes(problem, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The root box and ``count - 1`` random sub-boxes of it."""
    rng = np.random.default_rng(seed)
    lower, upper = np.asarray(problem.lower, float), np.asarray(problem.upper, float)
    ends = np.sort(lower + (upper - lower) * rng.random((count - 1, 2, len(lower))), axis=1)
    return np.vstack([lower, ends[:, 0]]), np.vstack([upper, ends[:, 1]])


def median_seconds(call, repeats: int) -> tuple[float, object]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def agreement(gpu, cpu) -> dict:
    finite = np.isfinite(cpu.lb)
    scale = np.maximum(np.abs(cpu.lb[finite]), 1.0)
    relative = float(np.max(np.abs(gpu.lb[finite] - cpu.lb[finite]) / scale)) if finite.any() else 0.0
    return {
        "lb_max_relative_difference": relative,
        "lb_agrees": bool(relative <= 1e-12 and np.array_equal(np.isinf(gpu.lb), np.isinf(cpu.lb))),
        "n_kept_equal": bool(np.array_equal(gpu.n_kept, cpu.n_kept)),
        "n_fallback_equal": bool(np.array_equal(gpu.n_fallback, cpu.n_fallback)),
        "hull_equal": bool(
            np.array_equal(gpu.hull_lo, cpu.hull_lo, equal_nan=True)
            and np.array_equal(gpu.hull_hi, cpu.hull_hi, equal_nan=True)
        ),
        "best_point_equal": bool(np.array_equal(gpu.best_point, cpu.best_point, equal_nan=True)),
    }


def kernel_resources() -> dict:
    """Registers and local memory per thread of the compiled bounding kernel (one for every tape;
    where numba says)."""
    kernel = bounding_kernel()
    try:
        registers, local = kernel.get_regs_per_thread(), kernel.get_local_mem_per_thread()
    except Exception as error:  # noqa: BLE001 (a report, not a check)
        return {"resources_unavailable": f"{type(error).__name__}: {error}"}
    if isinstance(registers, dict):  # one entry per compiled signature, keyed by its type tuple
        registers = {str(k): v for k, v in registers.items()}
        local = {str(k): v for k, v in local.items()}
    return {"registers_per_thread": registers, "local_memory_bytes_per_thread": local}


def device_name() -> str:
    name = getattr(cuda.get_current_device(), "name", "CUDA simulator")
    return name.decode() if isinstance(name, bytes) else str(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", default="peaks-ann")
    parser.add_argument("--subdomains", type=int, nargs="+", default=list(SUBDOMAINS))
    parser.add_argument("--boxes", type=int, nargs="+", default=list(BOXES))
    parser.add_argument("--mode", type=int, default=int(Mode.BOTH))
    parser.add_argument("--check", type=int, default=16, help="boxes also bounded on the CPU and compared")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    tape = problem.tape
    bound_boxes(tape, *boxes(problem, 1), 1, args.mode)  # loads the CPU code before any timing
    rows = []
    for subdomains in args.subdomains:
        n_per_dim = round(subdomains ** (1.0 / tape.n_vars))
        if n_per_dim**tape.n_vars != subdomains:
            raise SystemExit(f"{subdomains} is not a {tape.n_vars}-th power")
        for count in args.boxes:
            lo, hi = boxes(problem, count)
            threshold = np.full(count, problem.optimum + 0.1)
            bound_boxes_gpu(tape, lo, hi, n_per_dim, args.mode, threshold=threshold)  # compiles on first use
            gpu_seconds, gpu = median_seconds(
                lambda: bound_boxes_gpu(tape, lo, hi, n_per_dim, args.mode, threshold=threshold), args.repeats
            )
            check = min(args.check, count)
            cpu_seconds, cpu = median_seconds(
                lambda: bound_boxes(tape, lo[:check], hi[:check], n_per_dim, args.mode, threshold=threshold[:check]), 1
            )
            checked = bound_boxes_gpu(tape, lo[:check], hi[:check], n_per_dim, args.mode, threshold=threshold[:check])
            rows.append(
                {
                    "subdomains": subdomains,
                    "n_per_dim": n_per_dim,
                    "boxes": count,
                    "gpu_seconds": gpu_seconds,
                    "gpu_subdomains_per_second": count * subdomains / gpu_seconds,
                    "cpu_checked_boxes": check,
                    "cpu_seconds": cpu_seconds,
                    "cpu_subdomains_per_second": check * subdomains / cpu_seconds,
                    "root_lb": float(gpu.lb[0]),
                    "root_n_kept": int(gpu.n_kept[0]),
                    **agreement(checked, cpu),
                }
            )
            print(json.dumps(rows[-1]), flush=True, file=sys.stderr)  # progress
    print(
        json.dumps(
            {
                "problem": args.problem,
                "tape_slots": tape.size,
                "mode": args.mode,
                "repeats": args.repeats,
                "device": device_name(),
                "host": platform.node(),
                **kernel_resources(),
                "rows": rows,
                "all_agree": all(r["lb_agrees"] and r["n_kept_equal"] and r["hull_equal"] for r in rows),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
