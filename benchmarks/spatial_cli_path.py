"""Benchmark: ``pbbflow minimize FILE --serial --json`` against the API's ``minimize``, as JSON.

For each problem (the ``B*``/``C*`` JSON files of ``--data``, default ``../shared/data/spatial``, and
every JSON file of ``--extra``, default ``benchmarks/problems``: the files of ``spatial_vs_maingo.py``,
which this script does not import, as that one imports maingopy)
it runs, after one untimed run of each (numba's disk cache and the bytecode caches filled), ``--repeats``
times and alternating which goes first:

- the command, in a fresh process through the console script's entry point (``pbbflow.cli.main``):
  its ``elapsed_s``, the process's wall seconds and CPU seconds (user + system, from ``getrusage``:
  less disturbed by other work on a shared machine than the wall), and which of ``PROBES`` it loaded;
- the API in this process, as ``benchmarks/spatial_vs_maingo.py`` calls it (``minimize`` with
  ``MinimizeOptions(subdomains=64, parallel=False, time_limit=...)`` after ``load_code``): its
  ``elapsed_s`` and the wall seconds around the call.

Per problem the medians and whether both explored the same number of boxes (a run stopped by the
time limit may not); then the medians over the problems, and over those that ended before the limit
the median of ``cli elapsed_s - api elapsed_s``.  Which ``pbbflow`` runs is the one this Python
imports (``PYTHONPATH=DIR`` with DIR holding a ``pbbflow`` for another tree).

    python benchmarks/spatial_cli_path.py --repeats 5 --time-limit 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pbbflow.spatial.bnb import load_code, minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"
PROBLEMS = Path(__file__).resolve().parent / "problems"
SUBDOMAINS = 64  # pbbflow minimize's default on the CPU, as spatial_vs_maingo.py runs the API
PROBES = ("asyncio", "ssl", "urllib.request", "dask", "distributed", "zarr", "scipy.optimize", "numba")
# the console script's entry point, then the probed modules loaded, as JSON on stderr's last line
CLI_CODE = (
    "import json, sys\n"
    "from pbbflow.cli import main\n"
    "code = main()\n"
    "print(json.dumps([m for m in {probes!r} if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_once(spec: str, time_limit: float) -> dict:
    """One ``pbbflow minimize SPEC --serial --json`` in a fresh process."""
    argv = ["minimize", spec, "--serial", "--json", "--time-limit", f"{time_limit:g}"]
    command = [sys.executable, "-c", CLI_CODE.format(probes=PROBES), *argv]
    cpu, started = _children_cpu(), time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"pbbflow {' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
    result = json.loads(proc.stdout)
    return {
        "elapsed_s": result["elapsed_s"],
        "wall_s": wall,
        "cpu_s": cpu,
        "nodes": result["nodes"],
        "status": result["status"],
        "loaded": json.loads(proc.stderr.splitlines()[-1]),
    }


def api_once(problem, time_limit: float) -> dict:
    """One ``minimize`` in this process, timed as spatial_vs_maingo.py times it."""
    options = MinimizeOptions(subdomains=SUBDOMAINS, parallel=False, time_limit=time_limit)
    started = time.perf_counter()
    result = minimize(problem, options)
    return {"elapsed_s": result.elapsed_s, "seconds": time.perf_counter() - started, "nodes": result.nodes}


def _median(runs: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 6)


def compare(spec: str, repeats: int, time_limit: float) -> dict:
    """One problem's row: the command and the API, alternating, after one untimed run of each."""
    problem = load_problem(spec)
    load_code(problem, MinimizeOptions(subdomains=SUBDOMAINS, parallel=False))
    runners = {"cli": lambda: cli_once(spec, time_limit), "api": lambda: api_once(problem, time_limit)}
    for runner in runners.values():
        runner()
    runs: dict[str, list[dict]] = {name: [] for name in runners}
    for i in range(repeats):
        for name in list(runners) if i % 2 == 0 else list(runners)[::-1]:
            runs[name].append(runners[name]())
    cli, api = runs["cli"], runs["api"]
    return {
        "problem": Path(spec).stem,
        "status": cli[-1]["status"],
        "nodes": {"cli": [r["nodes"] for r in cli], "api": [r["nodes"] for r in api]},
        "same_nodes": {r["nodes"] for r in cli} == {r["nodes"] for r in api},
        "cli_elapsed_s": _median(cli, "elapsed_s"),
        "api_elapsed_s": _median(api, "elapsed_s"),
        "api_seconds": _median(api, "seconds"),
        "cli_wall_s": _median(cli, "wall_s"),
        "cli_cpu_s": _median(cli, "cpu_s"),
        "cli_outside_elapsed_s": round(_median(cli, "wall_s") - _median(cli, "elapsed_s"), 6),
        "cli_elapsed_runs": [round(r["elapsed_s"], 6) for r in cli],
        "api_elapsed_runs": [round(r["elapsed_s"], 6) for r in api],
        "cli_wall_runs": [round(r["wall_s"], 4) for r in cli],
        "loaded": cli[-1]["loaded"],
    }


def summary(rows: list[dict]) -> dict:
    """Medians over the problems; the elapsed difference over those that ended before the limit."""
    ended = [r for r in rows if r["status"] != "limit"]
    keys = ("cli_elapsed_s", "api_elapsed_s", "api_seconds", "cli_wall_s", "cli_cpu_s", "cli_outside_elapsed_s")
    out = {f"median_{k}": round(statistics.median(r[k] for r in rows), 6) for k in keys}
    out["problems"] = len(rows)
    out["ended"] = len(ended)
    out["ended_same_nodes"] = sum(r["same_nodes"] for r in ended)
    if ended:
        out["ended_median_cli_minus_api_elapsed_s"] = round(
            statistics.median(r["cli_elapsed_s"] - r["api_elapsed_s"] for r in ended), 6
        )
        out["ended_median_cli_over_api_elapsed"] = round(
            statistics.median(r["cli_elapsed_s"] / r["api_elapsed_s"] for r in ended), 3
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of problem JSON files (its B*/C* files)")
    parser.add_argument("--extra", type=Path, nargs="*", default=[PROBLEMS], help="further folders, every JSON file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("problems", nargs="*", help="problem specs (default: the files of --data and --extra)")
    args = parser.parse_args()
    files = [
        *sorted(args.data.glob("[BC]*.json")),
        *(p for folder in args.extra for p in sorted(folder.glob("*.json"))),
    ]
    specs = args.problems or [str(path) for path in files]
    load_start = os.getloadavg()
    rows = []
    for spec in specs:
        rows.append(compare(spec, args.repeats, args.time_limit))
        print(
            json.dumps({k: rows[-1][k] for k in ("problem", "cli_elapsed_s", "api_elapsed_s", "cli_wall_s")}),
            file=sys.stderr,
        )
    print(
        json.dumps(
            {
                "benchmark": "spatial_cli_path",
                "command": "python benchmarks/spatial_cli_path.py " + " ".join(sys.argv[1:]),
                "package": str(Path(importlib.util.find_spec("pbbflow").origin).resolve().parent),
                "machine": {
                    "cpus": len(os.sched_getaffinity(0)),
                    "load_average_1_5_15_min": {"start": load_start, "end": os.getloadavg()},
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                    "writes_bytecode": not os.environ.get("PYTHONDONTWRITEBYTECODE"),
                },
                "settings": {"subdomains": SUBDOMAINS, "repeats": args.repeats, "time_limit": args.time_limit},
                "summary": summary(rows),
                "problems": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
