"""Benchmark: ``pbbflow solve`` from process start to exit, cold and warm, as JSON.

Runs the command (``python -m pbbflow.cli.main solve INSTANCE --json``, a fresh process each
time) first with an empty numba cache (``NUMBA_CACHE_DIR`` pointed at a new temporary folder:
everything is compiled) and then ``--warm-runs`` times with that cache filled.  Each run
reports the wall seconds measured here, the search's ``elapsed_s`` and nodes/s, the stderr
line that announces compiling (if any) and the command's ``startup`` breakdown (imports,
cluster, code loaded or compiled in the client and the workers, initial heuristic, waiting
for the cluster, search, final checkpoint, close, total), plus ``exit_s``: wall minus the
command's own ``total_s`` (interpreter start and exit).  The warm runs' median is summarised, and
``bytecode`` says (after the runs) whether Python could use bytecode caches for them.

With ``--help-of LABEL=DIR`` (given once per package: DIR holds a ``pbbflow``, put first on
``PYTHONPATH``) it times instead the help of ``pbbflow``, ``pbbflow minimize`` and ``pbbflow
solve`` through the console script's entry point, ``--help-runs`` fresh processes of each, the
packages taking turns (a loaded machine slows them alike), after one untimed run each that writes
the bytecode caches.  Each command reports its wall seconds, their median and which of
``HELP_PROBES`` the process had loaded.

    python benchmarks/startup.py                          # ta011 on the default local cluster
    python benchmarks/startup.py --instance ta021 --warm-runs 3 -- --gpus 1
    python benchmarks/startup.py --help-of before=/tmp/old --help-of after=/tmp/new --help-runs 9
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPILING = re.compile(r"pbbflow: compiled in ([\d.]+) s")


def run_once(instance: str, extra: list[str], folder: Path, cache: Path) -> dict:
    """One ``pbbflow solve`` in a fresh process with numba's cache at ``cache``."""
    command = [
        sys.executable,
        "-m",
        "pbbflow.cli.main",
        "solve",
        instance,
        "--run",
        str(folder / "run.zarr"),
        "--overwrite",
        "--json",
        *extra,
    ]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: {proc.stderr}")
    result = json.loads(proc.stdout)
    compiling = COMPILING.search(proc.stderr)
    startup = result.get("startup") or {}
    total = startup.get("total_s")
    return {
        "wall_s": round(wall, 3),
        "exit_s": None if total is None else round(wall - total, 3),
        "status": result["status"],
        "nodes": result["nodes"],
        "elapsed_s": result["elapsed_s"],
        "nodes_per_s": round(result["nodes"] / result["elapsed_s"]) if result["elapsed_s"] else None,
        "compiling_line_s": float(compiling.group(1)) if compiling else None,
        "startup": startup,
    }


HELP_COMMANDS = (("--help",), ("minimize", "--help"), ("solve", "--help"))
HELP_PROBES = ("distributed", "dask", "numba", "numpy")  # the heavy imports a help might load
# the console script's entry point, then the probed modules loaded, as JSON on stderr's last line
HELP_CODE = (
    "import json, sys\n"
    "from pbbflow.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(json.dumps([m for m in {probes!r} if m in sys.modules]), file=sys.stderr)\n"
)


def help_once(argv: tuple[str, ...], folder: str) -> dict:
    """One ``pbbflow ARGV`` in a fresh process importing the ``pbbflow`` in ``folder``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (folder, os.environ.get("PYTHONPATH"))))}
    command = [sys.executable, "-c", HELP_CODE.format(probes=HELP_PROBES), *argv]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0 or not proc.stdout.startswith("usage: "):
        raise RuntimeError(f"pbbflow {' '.join(argv)} with {folder}: exit {proc.returncode}: {proc.stderr}")
    return {"wall_s": round(wall, 3), "loaded": json.loads(proc.stderr.splitlines()[-1])}


def help_side_by_side(packages: dict[str, str], runs: int) -> dict:
    """Per package and command: the wall seconds of ``runs`` helps, their median, and what loaded."""
    out = {label: {"folder": folder, "commands": {}} for label, folder in packages.items()}
    for argv in HELP_COMMANDS:
        for folder in packages.values():
            help_once(argv, folder)  # untimed: writes the bytecode caches
        for _ in range(runs):
            for label, folder in packages.items():
                one = help_once(argv, folder)
                entry = out[label]["commands"].setdefault(" ".join(argv), {"wall_s": [], "loaded": one["loaded"]})
                entry["wall_s"].append(one["wall_s"])
    for package in out.values():
        for entry in package["commands"].values():
            entry["median_s"] = round(statistics.median(entry["wall_s"]), 3)
    return out


def median_of(runs: list[dict]) -> dict:
    """Per field, the median over ``runs`` (the startup breakdown field by field)."""
    keys = ("wall_s", "exit_s", "elapsed_s", "nodes")
    out = {k: statistics.median(r[k] for r in runs) for k in keys if all(r[k] is not None for r in runs)}
    phases = {k for r in runs for k, v in r["startup"].items() if isinstance(v, (int, float))}
    out["startup"] = {k: round(statistics.median(r["startup"].get(k, 0.0) for r in runs), 3) for k in sorted(phases)}
    return out


# modules a run imports early, whose bytecode caches show whether Python compiles sources at each start
BYTECODE_PROBES = ("numpy", "dask", "distributed", "zarr", "numba", "pbbflow.cli.main")


def bytecode_state() -> dict:
    """Whether the run's Python may write bytecode caches (``PYTHONDONTWRITEBYTECODE`` unset) and,
    per module of ``BYTECODE_PROBES``, whether its cache file exists: without them every start
    compiles those modules from source (seen on the lent H200 image: 1.5-2.1 s of imports against
    0.6-0.8 s with them)."""
    cached = {}
    for name in BYTECODE_PROBES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec else None
        source = origin is not None and origin.endswith(".py")
        cached[name] = source and os.path.exists(importlib.util.cache_from_source(origin))
    return {"writes_bytecode": not os.environ.get("PYTHONDONTWRITEBYTECODE"), "cached": cached}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ta011")
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument("extra", nargs="*", help="more options for pbbflow solve (after --)")
    parser.add_argument(
        "--help-of",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="time the help instead, of the pbbflow in DIR (once per package)",
    )
    parser.add_argument("--help-runs", type=int, default=9, help="timed helps per command and package")
    args = parser.parse_args()
    machine = {
        "cpus": len(os.sched_getaffinity(0)),
        "load_1min": os.getloadavg()[0],
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }
    if args.help_of:
        packages = dict(item.split("=", 1) for item in args.help_of)
        result = {"benchmark": "startup_help", "machine": machine, "runs": args.help_runs}
        result["packages"] = help_side_by_side(packages, args.help_runs)
        result["machine"]["load_1min_after"] = os.getloadavg()[0]
        print(json.dumps(result, indent=2))
        return
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "numba-cache"
        for index in range(1 + args.warm_runs):
            run = run_once(args.instance, args.extra, Path(folder), cache)
            runs.append({"cache": "cold" if index == 0 else "warm", **run})
            print(json.dumps(runs[-1]), file=sys.stderr)
    warm = [r for r in runs if r["cache"] == "warm"]
    print(
        json.dumps(
            {
                "benchmark": "startup",
                "command": f"pbbflow solve {args.instance} --json {' '.join(args.extra)}".strip(),
                "package": str(Path(importlib.util.find_spec("pbbflow").origin).resolve().parent),
                "machine": machine,
                "bytecode": bytecode_state(),
                "runs": runs,
                "warm_median": median_of(warm) if warm else None,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
