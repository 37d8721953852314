"""Benchmark: where the GPU route's time goes on network problems, as JSON.

For each problem of ``spatial_splits.py``'s network set (or those named with ``--problems``),
``minimize_gpu`` with pbbflow's defaults (``MinimizeOptions(time_limit=...)``): its code loaded
first (``load_code``: the seconds, the first problem's including the machine's compile), one run to
warm it, then ``--repeats`` runs, of which the median's parts are reported. A part is a method of
the search timed from outside: its seconds and calls, and for the layers' bound on the device the
boxes it bounded.

- ``first_incumbents``: the root's point, the grid of first candidates and the first local solves;
- ``local``: every local solve (``_LocalSolver.run``);
- ``step``: the phases; ``bound_children`` their bounding, ``raise`` the layers' bound of their
  children (``crown``: its device launches and their copies), ``offer_centres`` the centres offered.

``--profile NAME...`` adds cProfile's 30 costliest functions of one more run of those problems.
Every run's certified bound is checked against its own verified value.

    python benchmarks/network_gpu_parts.py --out parts.json
    python benchmarks/network_gpu_parts.py --problems "branin-2-64-64-1-relu" --profile branin-2-64-64-1-relu
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatial_splits import problems  # noqa: E402

from pbbflow.gpu.spatial import bnb as gpu_bnb  # noqa: E402
from pbbflow.gpu.spatial.network_bounds import DeviceNetworkBounds  # noqa: E402
from pbbflow.spatial.local import _LocalSolver  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402

# part -> (owner, method): the methods timed from outside
PARTS = {
    "first_incumbents": (gpu_bnb.GpuExploration, "_first_incumbents"),
    "local": (_LocalSolver, "run"),
    "step": (gpu_bnb.GpuExploration, "_step"),
    "bound_children": (gpu_bnb.GpuExploration, "_bound_children"),
    "raise": (gpu_bnb.GpuExploration, "_raise_by_network"),
    "crown": (DeviceNetworkBounds, "lower_bounds"),
    "offer_centres": (gpu_bnb.GpuExploration, "_offer_centres"),
}
SKIPPED = ("gauss6-6-16-16-1-sigmoid (max)",)  # open everywhere (docs/performance.md): it runs to its limit
RESULT_KEYS = ("status", "objective", "lower_bound", "nodes", "local_solves", "phases", "device_wait_s")


@contextlib.contextmanager
def timed_parts(parts: dict):
    """While open, each method of ``PARTS`` adds its seconds, calls and (``crown``) boxes to ``parts``."""
    originals = {name: getattr(owner, method) for name, (owner, method) in PARTS.items()}

    def wrapper(name, original):
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                entry = parts.setdefault(name, [0.0, 0, 0])
                entry[0] += time.perf_counter() - began
                entry[1] += 1
                if name == "crown":
                    entry[2] += len(args[1])

        return timed

    for name, (owner, method) in PARTS.items():
        setattr(owner, method, wrapper(name, originals[name]))
    try:
        yield parts
    finally:
        for name, (owner, method) in PARTS.items():
            setattr(owner, method, originals[name])


def device_name() -> str:
    """The GPU's name ("CUDA simulator" under the simulator)."""
    name = getattr(gpu_bnb.cuda.get_current_device(), "name", "CUDA simulator")
    return name.decode() if isinstance(name, bytes) else str(name)


def one_problem(problem, options: MinimizeOptions, repeats: int, profile: bool) -> dict:
    """The problem's load, its runs' median and the median run's parts (and a profile)."""
    load_s = gpu_bnb.load_code(problem, options)[0]
    gpu_bnb.minimize_gpu(problem, options)
    runs = []
    for _ in range(repeats):
        with timed_parts({}) as parts:
            began = time.perf_counter()
            result = gpu_bnb.minimize_gpu(problem, options).to_dict()
            seconds = time.perf_counter() - began
        if result["lower_bound"] is not None and result["objective"] is not None:
            assert result["lower_bound"] <= result["objective"], f"{problem.name}: bound above its verified value"
        parts = {name: [round(s, 6), calls, boxes] for name, (s, calls, boxes) in parts.items()}
        runs.append({"seconds": seconds, **{key: result.get(key) for key in RESULT_KEYS}, "parts": parts})
    runs.sort(key=lambda run: run["seconds"])
    row = {
        "problem": problem.name,
        "load_s": round(load_s, 3),
        "seconds": [round(run["seconds"], 5) for run in runs],
        "seconds_median": round(statistics.median(run["seconds"] for run in runs), 5),
        "median_run": runs[len(runs) // 2],
    }
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        gpu_bnb.minimize_gpu(problem, options)
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        row["profile"] = text.getvalue()
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", help="names of the network set's problems (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=8.0)
    parser.add_argument("--profile", nargs="*", default=[], help="problems to profile with cProfile")
    parser.add_argument("--out", help="write the JSON here (rewritten after each problem)")
    args = parser.parse_args(argv)
    chosen = [p for p in problems("networks") if (p.name in args.problems if args.problems else p.name not in SKIPPED)]
    if args.problems and len(chosen) != len(set(args.problems)):
        missing = set(args.problems) - {p.name for p in chosen}
        parser.error(f"not in the network set: {', '.join(sorted(missing))}")
    options = MinimizeOptions(time_limit=args.time_limit)
    document = {
        "benchmark": "network_gpu_parts",
        "command": " ".join(sys.argv) if argv is None else " ".join(["network_gpu_parts.py", *argv]),
        "machine": {
            "python": platform.python_version(),
            "host": platform.node(),
            "gpu": device_name(),
        },
        "settings": {"repeats": args.repeats, "time_limit": args.time_limit},
        "problems": [],
    }
    for problem in chosen:
        document["problems"].append(one_problem(problem, options, args.repeats, problem.name in args.profile))
        if args.out:
            Path(args.out).write_text(json.dumps(document, indent=1))
    if not args.out:
        print(json.dumps(document, indent=1))
    return document


if __name__ == "__main__":
    main()
