"""Benchmark: how a box is cut into subdomains on the CPU (one thread, or numba's threads with
``--parallel``), as JSON: the uniform N^d
split (``split_axes`` 0, the default) against splitting only the k widest sides of each box
(``MinimizeOptions.split_axes``), for several subdomain budgets.

Two sets of problems (``--set``):

- ``networks``: the network problems of 2-6 inputs, each minimized and maximized: the ANN files
  of ``../shared/data/ann`` and ``benchmarks/networks`` (the maximum as the minimum of minus the
  output, whose certified bound is minus the maximum's), and the error problem files of
  ``../shared/data/ann`` (minimized, as written).
- ``class``: the problem files of ``../shared/data/spatial`` and ``benchmarks/problems``, and the
  built-in ``peaks-ann`` (the set of ``benchmarks/spatial_budgets.py``).

A split of k >= d sides is the uniform one and is not run again. Per run: status, nodes (boxes bounded), seconds, the certified lower bound and the verified value
(both of the minimized problem) and the gap. ``valid`` checks every lower bound against the best
verified value of the same problem over all runs (and the file's optimum where it has one): a
bound above it would be wrong. The numba code is loaded before the clock.

    python benchmarks/spatial_splits.py --set networks --budgets 16 64 256 --split-axes 0 \
        --out benchmarks/results/spatial_splits_2core_2026-12-05.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numba

from pbbflow.spatial.ann import AnnNetwork, is_ann
from pbbflow.spatial.bnb import load_code, minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.model import Model
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.parse import read_json

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data"
NETWORK_FOLDERS = (SHARED / "ann", HERE / "networks")
CLASS_FOLDERS = (SHARED / "spatial", HERE / "problems")


def json_files(folder: Path, pattern: str = "*.json") -> list[Path]:
    """The files of ``folder`` matching ``pattern``, sorted. A folder that is not there stops the
    benchmark: a tree copied away from ``../shared/data`` would otherwise run without its problems."""
    if not folder.is_dir():
        raise SystemExit(f"{folder}: no such folder, so its problems would be left out (see the module)")
    return sorted(folder.glob(pattern))


def _maximized(path: Path):
    """Minus the output of the ANN file at ``path``, to be minimized."""
    ann = AnnNetwork.from_document(read_json(path, path.name), path.name)
    model = Model(f"{path.stem} (max)")
    x = [model.variable(lo, hi) for lo, hi in zip(ann.in_lo, ann.in_hi)]
    model.minimize(-ann.output(x))
    return model.problem(origin=str(path))


def problems(which: str) -> list:
    """The problems of set ``which`` (see the module)."""
    if which == "class":
        files = sorted(p for folder in CLASS_FOLDERS for p in json_files(folder))
        return [*map(load_problem, files), load_problem("peaks-ann")]
    chosen = []
    for path in sorted(p for folder in NETWORK_FOLDERS for p in json_files(folder) if p.name != "manifest.json"):
        if path.name == "results.json":
            continue
        chosen.append(load_problem(path))
        if is_ann(read_json(path, path.name)):
            chosen.append(_maximized(path))
    return chosen


def validate(rows: list[dict]) -> None:
    """Mark each row's bound against the best verified value of its problem over all rows (and its
    file's optimum, where a row names one)."""
    best: dict[str, float] = {}
    for row in rows:
        for value in (row["value"], row.get("optimum")):
            if value is not None:
                best[row["problem"]] = min(best.get(row["problem"], value), value)
    for row in rows:
        reference = best.get(row["problem"])
        row["valid"] = None if reference is None else row["lower_bound"] <= reference + 1e-9 * max(1.0, abs(reference))


def summarize(rows: list[dict]) -> dict:
    """Runs, proved, total seconds and nodes, the problems not proved, and whether every bound was valid."""
    return {
        "runs": len(rows),
        "proved": sum(r["status"] == "optimal" for r in rows),
        "total_seconds": round(sum(r["seconds"] for r in rows), 3),
        "total_nodes": sum(r["nodes"] for r in rows),
        "not_proved": [r["problem"] for r in rows if r["status"] != "optimal"],
        "all_valid": all(r["valid"] is not False for r in rows),
    }


def report(args: argparse.Namespace, rows: list[dict]) -> dict:
    """The JSON: settings, a summary per (budget, split_axes), and every run."""
    validate(rows)
    summary = []
    for budget in args.budgets:
        for axes in args.split_axes:
            mine = [r for r in rows if r["budget"] == budget and r["split_axes"] == axes]
            summary.append({"budget": budget, "split_axes": axes, **summarize(mine)})
    return {
        "benchmark": "spatial_splits",
        "command": "python benchmarks/spatial_splits.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average": os.getloadavg()},
        "settings": {
            "set": args.set,
            "eps": 1e-6,
            "backend": f"cpu, {numba.get_num_threads()} threads" if args.parallel else "cpu, one thread",
            "time_limit_s": args.time_limit,
        },
        "summary": summary,
        "runs": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("networks", "class"), default="networks")
    parser.add_argument("--budgets", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--split-axes", type=int, nargs="+", default=[0], help="0: uniform N^d (the default)")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--min-dimension", type=int, default=1, help="only problems of at least this many variables")
    parser.add_argument("--only", nargs="+", help="only problems whose name holds one of these")
    parser.add_argument("--out", type=Path, help="also write the JSON here after every problem")
    parser.add_argument("--parallel", action="store_true", help="numba's threads (NUMBA_NUM_THREADS), as the CLI")
    args = parser.parse_args()
    rows = []
    chosen = [p for p in problems(args.set) if p.dimension >= args.min_dimension]
    for problem in (p for p in chosen if not args.only or any(part in p.name for part in args.only)):
        for budget in args.budgets:
            for axes in args.split_axes:
                if axes >= problem.dimension:  # every side: the uniform split, run as split_axes 0
                    continue
                extra = {"split_axes": axes} if axes else {}  # runs on code without the option too
                options = MinimizeOptions(
                    subdomains=budget, parallel=args.parallel, time_limit=args.time_limit, **extra
                )
                load_code(problem, options)
                result = minimize(problem, options)
                row = {
                    "problem": problem.name,
                    "d": problem.dimension,
                    "budget": budget,
                    "split_axes": axes,
                    "status": result.status.value,
                    "nodes": result.nodes,
                    "seconds": round(result.elapsed_s, 3),
                    "lower_bound": result.lower_bound,
                    "value": result.value,
                    "gap": None if result.value is None else result.value - result.lower_bound,
                    "optimum": problem.optimum,
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        if args.out:
            args.out.write_text(json.dumps(report(args, rows), indent=1))
    print(json.dumps(report(args, rows), indent=1))


if __name__ == "__main__":
    main()
