"""Benchmark: pbbflow's spatial B&B against MAiNGO (and SCIP), side by side on one core, as JSON.

For each problem (the ``B*``/``C*`` JSON files of a folder, default ``../shared/data/spatial``, every
JSON file of the ``--extra`` folders, default ``benchmarks/problems``, then the built-ins
``peaks-ann``, ``peaks-ann-error-min`` and ``peaks-ann-error-max``): pbbflow ``minimize`` on one
thread (``parallel=False``, after a warm-up solve that loads its numba code) and MAiNGO
(``benchmarks/maingo_reference.py``, serial), both to eps_abs = eps_rel = 1e-6 with equalities
within 1e-6, alternating which goes first, ``--repeats`` times; the median seconds are reported
with nodes, value, lower bound and gap, and for each solver whether its lower bound stays at or
below the problem's ``optimum`` (pbbflow's is certified: above it is a bug).  ``--scip`` adds SCIP
(``benchmarks/scip_reference.py``, one thread, same tolerances; atan2 problems come back
``unsupported``), ``--parallel`` pbbflow on every core, ``--gpu`` pbbflow on the GPU
(``minimize_gpu``, ``--gpu-subdomains`` per box, its kernels compiled before the runs),
``--auto`` pbbflow's route with a GPU visible and no ``--gpus`` (``minimize_auto``: a CPU slice,
then the GPU with ``--gpu-subdomains``), ``--maingo-interval`` MAiNGO with interval bounds alone.  The 1, 5 and 15 minute load averages
are recorded at the start and the end.  ``--out FILE`` writes the report there instead of to
standard output, rewritten after each problem, so that a run cut short keeps the rows it has.

``--set networks`` takes ``spatial_splits.py``'s network set instead of the files (every ANN file
minimized and maximized, and the error problems).  ``--skip`` leaves runners out (``pbbflow``,
``maingo``) and ``--shard I/N`` keeps every N-th problem from the I-th, so that one host can run
the anchors of a set on several cores at once and pbbflow's GPU alone; ``--merge REPORT...``
joins such reports by problem and adds, per problem, the GPU's speed-up over the better anchor
(an anchor still open counts at its time limit: the ratio is then at least that).

    pip install maingopy pyscipopt
    python benchmarks/spatial_vs_maingo.py --repeats 3 > benchmarks/results/spatial_vs_maingo.json
    nice -n 5 python benchmarks/spatial_vs_maingo.py --scip --repeats 1 --time-limit 20 \
        > benchmarks/results/spatial_vs_maingo_scip_2core_2026-12-04.json
    python benchmarks/spatial_vs_maingo.py --repeats 3 --parallel --maingo-interval \
        peaks-ann-error-min peaks-ann-error-max > benchmarks/results/spatial_vs_maingo_peaks_ann_error.json
    python benchmarks/spatial_vs_maingo.py --repeats 3 --parallel --gpu > benchmarks/results/spatial_vs_maingo_h200.json
    python benchmarks/spatial_vs_maingo.py --set networks --gpu --skip pbbflow maingo --out gpu.json
    python benchmarks/spatial_vs_maingo.py --set networks --scip --skip pbbflow --shard 0/2 --out anchors0.json
    python benchmarks/spatial_vs_maingo.py --merge gpu.json anchors*.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatial_splits import json_files  # noqa: E402

from pbbflow.spatial.bnb import minimize  # noqa: E402
from pbbflow.spatial.defaults import GPU_SUBDOMAINS  # noqa: E402
from pbbflow.spatial.load import load_problem  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"
PROBLEMS = Path(__file__).resolve().parent / "problems"  # the benchmark's own problems
BUILTINS = ("peaks-ann", "peaks-ann-error-min", "peaks-ann-error-max")  # the seed's network and its error


def _pbbflow(
    problem, subdomains: int, time_limit: float, parallel: bool = False, gpu: bool = False, auto: bool = False
) -> dict:
    options = MinimizeOptions(subdomains=subdomains, parallel=parallel, time_limit=time_limit)
    if auto:
        from pbbflow.gpu.spatial.bnb import minimize_auto as solve
    elif gpu:
        from pbbflow.gpu.spatial.bnb import minimize_gpu as solve
    else:
        solve = minimize
    started = time.perf_counter()
    result = solve(problem, options)
    seconds = time.perf_counter() - started
    return {**result.to_dict(), "seconds": seconds}


def problem_specs(data: Path = DATA, extra: Sequence[Path] = (PROBLEMS,)) -> list[str]:
    """The problem files: ``B*``/``C*`` of ``data`` (its other files are not problems), then every
    JSON file of each ``extra`` folder."""
    files = [*json_files(data, "[BC]*.json"), *(path for folder in extra for path in json_files(folder))]
    return [str(path) for path in files]


def _at_or_below(bound: float | None, optimum: float | None) -> bool | None:
    """Whether a lower bound stays at or below the known optimum (None where either is missing)."""
    if optimum is None or bound is None:
        return None
    return bound <= optimum + 1e-12 * max(1.0, abs(optimum))


def _ours(runs: list[dict], optimum: float | None) -> dict:
    mine = runs[-1]
    valid = _at_or_below(mine["lower_bound"], optimum)
    return {
        "status": mine["status"],
        "objective": mine["objective"],
        "lower_bound": mine["lower_bound"],
        "gap_abs": mine["gap_abs"],
        "nodes": mine["nodes"],
        "subdomains": mine["subdomains"],
        "local_solves": mine["local_solves"],
        "seconds_median": statistics.median(r["seconds"] for r in runs),
        "seconds": [round(r["seconds"], 4) for r in runs],
        "lower_bound_at_or_below_optimum": valid,
        **{key: mine[key] for key in ("phases", "device_wait_s") if key in mine},
    }


def _theirs(runs: list[dict], optimum: float | None) -> dict:
    """A reference solver's column (MAiNGO or SCIP): its last run, and the median seconds."""
    last = runs[-1]
    return {
        "status": last["status"],
        "objective": last.get("objective"),
        "lower_bound": last.get("lower_bound"),
        "gap_abs": last.get("gap_abs"),
        "nodes": last.get("nodes"),
        "seconds_median": statistics.median(r["seconds"] for r in runs) if "seconds" in last else None,
        "seconds": [round(r["seconds"], 4) for r in runs if "seconds" in r],
        "reason": last.get("reason"),
        "lower_bound_at_or_below_optimum": _at_or_below(last.get("lower_bound"), optimum),
    }


def compare(
    problem,
    subdomains: int,
    repeats: int,
    time_limit: float,
    parallel: bool = False,
    maingo_interval: bool = False,
    gpu_subdomains: int | None = None,
    scip: bool = False,
    auto: bool = False,
    skip: Sequence[str] = (),
) -> dict:
    """One row: pbbflow on one thread and MAiNGO (McCormick), and on request pbbflow on every core
    (``pbbflow_parallel``), on the GPU (``pbbflow_gpu``, with ``gpu_subdomains``), by the route
    without ``--gpus`` (``pbbflow_auto``, the GPU part with ``gpu_subdomains``), MAiNGO with
    interval bounds (``maingo_interval``) and SCIP (``scip``, one thread), less the runners named
    in ``skip``; runs alternate order."""
    from maingo_reference import solve_with_maingo  # here: --merge runs without maingopy

    box = (problem.tape, problem.lower, problem.upper)
    runners = {
        "pbbflow": lambda: _pbbflow(problem, subdomains, time_limit),
        "maingo": lambda: solve_with_maingo(*box, time_limit=time_limit),
    }
    if parallel:
        runners["pbbflow_parallel"] = lambda: _pbbflow(problem, subdomains, time_limit, parallel=True)
    if gpu_subdomains:
        from pbbflow.gpu.spatial.bnb import load_code

        load_code(problem, MinimizeOptions(subdomains=gpu_subdomains))  # compile its kernels first
        runners["pbbflow_gpu"] = lambda: _pbbflow(problem, gpu_subdomains, time_limit, gpu=True)
        if auto:
            runners["pbbflow_auto"] = lambda: _pbbflow(problem, gpu_subdomains, time_limit, auto=True)
    if maingo_interval:
        runners["maingo_interval"] = lambda: solve_with_maingo(*box, time_limit=time_limit, lbp_solver="interval")
    if scip:
        from scip_reference import solve_with_scip

        runners["scip"] = lambda: solve_with_scip(*box, time_limit=time_limit)
    for name in skip:
        runners.pop(name, None)
    runs = {name: [] for name in runners}
    for i in range(repeats):
        for name in list(runners) if i % 2 == 0 else list(runners)[::-1]:
            runs[name].append(runners[name]())
    row = {"problem": problem.name, "optimum": problem.optimum}
    for name, results in runs.items():
        row[name] = _ours(results, problem.optimum) if name.startswith("pbbflow") else _theirs(results, problem.optimum)
    return row


def _device() -> str:
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def _scip_versions() -> dict:
    from importlib.metadata import version

    import pyscipopt

    return {"scip": str(pyscipopt.Model().version()), "pyscipopt": version("pyscipopt")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of problem JSON files (its B*/C* files)")
    parser.add_argument(
        "--extra",
        type=Path,
        nargs="*",
        default=[PROBLEMS],
        help="further folders, every JSON file (default: problems/)",
    )
    parser.add_argument("--subdomains", type=int, default=64, help="per box (default: 64, as pbbflow minimize)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--parallel", action="store_true", help="also pbbflow on every core (its default)")
    parser.add_argument("--maingo-interval", action="store_true", help="also MAiNGO with interval bounds alone")
    parser.add_argument("--gpu", action="store_true", help="also pbbflow on the GPU")
    parser.add_argument(
        "--gpu-subdomains", type=int, default=GPU_SUBDOMAINS, help="per box on the GPU (default: pbbflow's)"
    )
    parser.add_argument("--scip", action="store_true", help="also SCIP (benchmarks/scip_reference.py, one thread)")
    parser.add_argument(
        "--auto", action="store_true", help="with --gpu, also the route without --gpus (CPU slice, then GPU)"
    )
    parser.add_argument(
        "--out", type=Path, help="write the report here (after each problem too) instead of to standard output"
    )
    parser.add_argument("--set", choices=("files", "networks"), default="files", help="networks: spatial_splits'")
    parser.add_argument("--skip", nargs="+", default=[], choices=("pbbflow", "maingo"), help="runners left out")
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th problem from the I-th (default: all)")
    parser.add_argument("--merge", type=Path, nargs="+", help="join these reports (the rest is ignored)")
    parser.add_argument(
        "problems", nargs="*", help=f"problem specs (default: the files of --data and --extra, {', '.join(BUILTINS)})"
    )
    args = parser.parse_args()
    if args.merge:
        text = json.dumps(merge([json.loads(path.read_text()) for path in args.merge]), indent=1)
        if args.out is None:
            print(text)
        else:
            _write(args.out, text)
        return
    if args.set == "networks":
        from spatial_splits import problems as problem_set

        problems = problem_set("networks")
    else:
        specs = args.problems or [*problem_specs(args.data, args.extra), *BUILTINS]
        problems = [load_problem(spec) for spec in specs]
    first, every = map(int, args.shard.split("/"))
    problems = problems[first::every]
    load_start = os.getloadavg()
    serial = () if "pbbflow" in args.skip and not args.auto else (False,)  # the auto route's CPU part too
    for parallel in (*serial, True) if args.parallel else serial:  # load the numba code first
        minimize(problems[-1], MinimizeOptions(parallel=parallel, node_limit=8))
    settings = {
        "eps_abs": 1e-6,
        "eps_rel": 1e-6,
        "feas_tol": 1e-6,
        "one_core": not args.parallel,
        "subdomains": args.subdomains,
        "repeats": args.repeats,
        "gpu_subdomains": args.gpu_subdomains if args.gpu else None,
        "gpu": _device() if args.gpu else None,
        "scip": _scip_versions() if args.scip else None,
        "auto": bool(args.auto and args.gpu),
    }
    rows = []
    for problem in problems:
        rows.append(
            compare(
                problem,
                args.subdomains,
                args.repeats,
                args.time_limit,
                args.parallel,
                args.maingo_interval,
                args.gpu_subdomains if args.gpu else None,
                args.scip,
                args.auto and args.gpu,
                args.skip,
            )
        )
        if args.out is not None:  # the rows so far: a run cut short keeps them
            _write(args.out, _report(args, load_start, settings, rows))
    report = _report(args, load_start, settings, rows)
    if args.out is None:
        print(report)
    else:
        _write(args.out, report)


ANCHORS = ("maingo", "scip")
PROVED = ("GLOBALLY_OPTIMAL", "optimal", "gaplimit")  # the statuses of MAiNGO and SCIP that certify the gap


def merge(reports: list[dict]) -> dict:
    """The rows of ``reports`` joined by problem (each runner's column from the report that ran it),
    and per problem the GPU's speed-up over the better anchor: that anchor's seconds over the GPU's
    (``anchor_open`` where no anchor proved it: the slowest anchor's seconds, its time limit, are
    counted and the speed-up is a lower bound), None where the GPU did not prove it; the same for
    the auto route (``auto_speedup``) where a report ran it; and each one's time over MAiNGO's
    (``gpu_over_maingo``, ``auto_over_maingo``) where MAiNGO proved it."""
    rows: dict[str, dict] = {}
    for report in reports:
        for row in report["problems"]:
            rows.setdefault(row["problem"], {}).update(row)
    speedups = []
    for name, row in rows.items():
        anchors = {a: row[a] for a in ANCHORS if a in row}
        proved = {a: col["seconds_median"] for a, col in anchors.items() if col["status"] in PROVED}
        best = min(proved.values(), default=None)
        limit = max((col["seconds_median"] or 0.0 for col in anchors.values()), default=None)
        anchor_s = best if best is not None else limit
        entry = {
            "problem": name,
            "better_anchor": None if best is None else min(proved, key=proved.get),
            "anchor_s": anchor_s,
            "anchor_open": best is None,
        }
        for key, column in (("gpu", "pbbflow_gpu"), ("auto", "pbbflow_auto")):
            if key == "auto" and column not in row:
                continue
            ours = row.get(column)
            seconds = ours["seconds_median"] if ours and ours["status"] == "optimal" else None
            entry[f"{key}_s"] = seconds
            entry["speedup" if key == "gpu" else "auto_speedup"] = (
                None if seconds is None or not anchor_s else round(anchor_s / seconds, 1)
            )
            if "maingo" in proved and seconds is not None:  # the goal's "at most 1.5x MAiNGO's time"
                entry[f"{key}_over_maingo"] = round(seconds / proved["maingo"], 2)
        speedups.append(entry)
    return {
        "benchmark": "spatial_vs_maingo (merged)",
        "sources": [report["command"] for report in reports],
        "machines": [report["machine"] for report in reports],
        "settings": [report["settings"] for report in reports],
        "speedups": speedups,
        "problems": list(rows.values()),
    }


def _report(args: argparse.Namespace, load_start: tuple, settings: dict, rows: list[dict]) -> str:
    """The JSON report of ``rows`` (all of them, or those done so far)."""
    return json.dumps(
        {
            "benchmark": "spatial_vs_maingo",
            "command": "python benchmarks/spatial_vs_maingo.py " + " ".join(sys.argv[1:]),
            "machine": {
                "cpus": os.cpu_count(),
                "load_average_1_5_15_min": {"start": load_start, "end": os.getloadavg()},
                "processor": platform.processor(),
                "python": platform.python_version(),
            },
            "settings": settings,
            "problems": rows,
        },
        indent=1,
    )


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` whole (a new file renamed over it)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text + "\n")
    partial.replace(path)


if __name__ == "__main__":
    main()
