"""Benchmark: ``pbbflow minimize``'s route with a GPU visible and no ``--gpus`` (the CPU for a slice,
then the GPU: ``minimize_auto``) against the CPU alone and the GPU from the start, as JSON.

Each problem file of ``../shared/data/spatial`` and ``benchmarks/problems``, and the built-in
``peaks-ann``, is minimized to 1e-6 in this process three ways after a warm-up of each (numba's
code and the problem's kernels loaded): ``cpu`` (``minimize``, one thread, the CPU's subdomains),
``gpu`` (``minimize_gpu``, the GPU's) and ``auto`` (``minimize_auto`` with its defaults); per way
the median seconds of ``--repeats``, nodes, status, backend and whether the lower bound stayed at
or below the file's optimum. ``--no-gpu`` (a machine without one) skips the ``gpu`` column and
runs ``auto`` up to its hand-over: a problem the slice does not finish is recorded as
``handed_over`` with the slice's seconds and nodes. ``--slices`` adds ``auto`` with other CPU slices
than the default ``CPU_SLICE_S``, a column each. ``--fresh`` also times the command itself,
one new process per way (``--gpus 0``, ``--gpus 1``, no ``--gpus``): CUDA's context creation and
the kernels' load included, as a user sees it.

    python benchmarks/spatial_auto_route.py --fresh > benchmarks/results/spatial_auto_route_h200.json
    python benchmarks/spatial_auto_route.py --no-gpu --only B6-booth B15-hartmann-3
    python benchmarks/spatial_auto_route.py --slices 0.01 0.04 0.08 > benchmarks/results/spatial_auto_slices_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.defaults import CPU_SLICE_S, CPU_SUBDOMAINS, GPU_SUBDOMAINS
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
FOLDERS = (HERE.parents[1] / "shared" / "data" / "spatial", HERE / "problems")
CLI = "import sys; from pbbflow.cli.main import main; sys.exit(main(sys.argv[1:]))"


class _HandedOver(Exception):
    """Raised where ``minimize_auto`` would load the GPU's kernels (``--no-gpu``)."""


def _specs(folders: list[Path], only: list[str] | None) -> list[str]:
    specs = [*sorted(str(p) for folder in folders for p in folder.glob("*.json")), "peaks-ann"]
    return [s for s in specs if only is None or Path(s).stem in only or s in only]


def _valid(problem, lower_bound: float) -> bool | None:
    optimum = problem.optimum
    return None if optimum is None else bool(lower_bound <= optimum + 1e-12 * max(1.0, abs(optimum)))


def _figures(problem, result) -> dict:
    return {
        "search_s": round(result.elapsed_s, 5),
        "nodes": result.nodes,
        "status": result.status.value,
        "backend": result.extras["backend"],
        "lower_bound": result.lower_bound,
        "valid": _valid(problem, result.lower_bound),
    }


def _timed(problem, solve, repeats: int) -> dict:
    """Median seconds of ``repeats`` calls of ``solve()`` (a Result), and the last one's figures."""
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = solve()
        seconds.append(time.perf_counter() - began)
    return {"seconds": round(statistics.median(seconds), 5), **_figures(problem, result)}


def _slice_only(problem, options: MinimizeOptions, repeats: int) -> dict:
    """``minimize_auto`` on a machine without a GPU: its figures when the slice ends the search,
    else ``handed_over`` with the seconds until the hand-over (median of ``repeats``)."""
    from pbbflow.gpu.spatial.bnb import minimize_auto

    def refuse() -> None:
        raise _HandedOver

    seconds, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        try:
            result = minimize_auto(problem, options, load_gpu=refuse)
        except _HandedOver:
            result = None
        seconds.append(time.perf_counter() - began)
    figures = {"backend": "handed_over"} if result is None else _figures(problem, result)
    return {"seconds": round(statistics.median(seconds), 5), **figures}


def _fresh(spec: str, gpus: str | None, time_limit: float) -> dict:
    """One ``pbbflow minimize`` in a new process: its wall seconds and ``--json`` figures."""
    command = [sys.executable, "-c", CLI, "minimize", spec, "--json", "--quiet", "--time-limit", str(time_limit)]
    if gpus is not None:
        command += ["--gpus", gpus]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode not in (0, 3):
        return {"wall_s": round(wall, 3), "error": done.stderr.strip().splitlines()[-1:]}
    out = json.loads(done.stdout)
    return {"wall_s": round(wall, 3), "search_s": out["elapsed_s"], "status": out["status"], "backend": out["backend"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-gpu", action="store_true", help="no gpu column; auto up to its hand-over")
    parser.add_argument("--fresh", action="store_true", help="also time the command, a new process per way")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--folder", type=Path, action="append", help="problem folders (default: both)")
    parser.add_argument("--only", nargs="+", help="problems by file stem or built-in name")
    parser.add_argument(
        "--slices", type=float, nargs="+", help="also auto with these CPU slices (s), a column auto_<slice> each"
    )
    args = parser.parse_args()
    specs = _specs(args.folder or list(FOLDERS), args.only)
    cpu = MinimizeOptions(subdomains=CPU_SUBDOMAINS, parallel=False, time_limit=args.time_limit)
    gpu = MinimizeOptions(subdomains=GPU_SUBDOMAINS, time_limit=args.time_limit)
    minimize(load_problem("peaks-ann"), MinimizeOptions(parallel=False, node_limit=5))  # numba's CPU code
    rows = []
    for spec in specs:
        problem = load_problem(spec)
        row = {"problem": problem.name, "spec": Path(spec).stem, "optimum": problem.optimum}
        minimize(problem, cpu)  # warm-up: the problem's first call
        row["cpu"] = _timed(problem, lambda p=problem: minimize(p, cpu), args.repeats)
        if args.no_gpu:
            row["auto"] = _slice_only(problem, gpu, args.repeats)
        else:
            from pbbflow.gpu.spatial.bnb import minimize_auto, minimize_gpu

            minimize_gpu(problem, gpu)  # warm-up: the kernels of this problem's sizes
            row["gpu"] = _timed(problem, lambda p=problem: minimize_gpu(p, gpu), args.repeats)
            row["auto"] = _timed(problem, lambda p=problem: minimize_auto(p, gpu), args.repeats)
            for seconds in args.slices or ():
                row[f"auto_{seconds:g}"] = _timed(
                    problem, lambda p=problem, s=seconds: minimize_auto(p, gpu, slice_s=s), args.repeats
                )
        if args.fresh:
            ways = {"cpu": "0"} if args.no_gpu else {"cpu": "0", "gpu": "1", "auto": None}
            row["fresh"] = {way: _fresh(spec, gpus, args.time_limit) for way, gpus in ways.items()}
        rows.append(row)
        print(
            f"{problem.name}: " + json.dumps({k: row[k] for k in ("cpu", "gpu", "auto") if k in row}), file=sys.stderr
        )
    ways = ("cpu", "gpu", "auto", *(f"auto_{seconds:g}" for seconds in args.slices or ()))
    report = {
        "benchmark": "spatial_auto_route",
        "command": "python benchmarks/spatial_auto_route.py " + " ".join(sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
        },
        "settings": {
            "eps_abs": 1e-6,
            "eps_rel": 1e-6,
            "cpu_slice_s": CPU_SLICE_S,
            "cpu_subdomains": CPU_SUBDOMAINS,
            "gpu_subdomains": GPU_SUBDOMAINS,
            "repeats": args.repeats,
            "time_limit_s": args.time_limit,
            "gpu": not args.no_gpu,
        },
        "totals_s": {
            way: round(sum(r[way]["seconds"] for r in rows if way in r), 4)
            for way in ways
            if not (args.no_gpu and way != "cpu")
        },
        "problems": rows,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
