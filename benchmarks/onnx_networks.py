"""Benchmark: the ONNX networks of ``../shared/data/ann`` (and its ``torch-export``) minimized and
maximized from their ONNX files, on the CPU or one GPU, as JSON.

Each network's box is its JSON twin's input box (the torch exports: [-1, 1]^2, their graph input).
Per network and sense: the status, the value and the certified bound (for a maximum: minus the
minimized negation's), nodes, seconds of the search (the code loaded first, out of the clock) and
two checks: the bound lies on the right side of every one of ``--samples`` random points' float
values, and of the twin's ``best_known`` (a minimum; the torch twin's ``grid_min_f``). The JSON
twin of each ANN file is minimized too, for the optimum proved both ways.

    python benchmarks/onnx_networks.py --out benchmarks/results/onnx_networks_cpu.json
    python benchmarks/onnx_networks.py --gpu --no-twin --only torch --out onnx_networks_h200.json

``--out`` is written again after each network, so a run cut short keeps the networks it finished.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from pbbflow.spatial import evaluate_float, load_problem, onnx_problem
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data" / "ann"


def networks(data: Path) -> list[tuple[str, Path, list, float | None, Path | None]]:
    """(name, ONNX file, box, a known value at or above the minimum, the JSON twin) per network."""
    found = []
    for path in sorted(data.glob("*.onnx")):
        twin = data / f"{path.stem}.json"
        document = json.loads(twin.read_text())
        box = list(zip(load_problem(str(twin)).lower.tolist(), load_problem(str(twin)).upper.tolist()))
        found.append((path.stem, path, box, document.get("best_known"), twin))
    torch = json.loads((data / "torch-export" / "torch_sequential_tanh_relu.json").read_text())
    for path in sorted((data / "torch-export").glob("*.onnx")):
        found.append((path.stem, path, [(-1.0, 1.0)] * 2, torch["grid_min_f"], None))
    return found


def solve(problem, options: MinimizeOptions, gpu: bool) -> tuple[object, float]:
    """The result of ``problem`` on the CPU or the GPU, its code loaded first; the load's seconds."""
    if gpu:
        from pbbflow.gpu.spatial.bnb import load_code
        from pbbflow.gpu.spatial.bnb import minimize_gpu as minimize
    else:
        from pbbflow.spatial.bnb import load_code, minimize
    seconds, _ = load_code(problem, options)
    return minimize(problem, options), seconds


def row(problem, result, load_s: float, sign: int, samples: np.ndarray, known: float | None) -> dict:
    """A result as the sense it answers: sign 1 a minimum, -1 a maximum (the negation minimized)."""
    values = np.array([sign * evaluate_float(problem.tape, x)[0] for x in samples])  # the output itself
    bound = None if result.lower_bound is None else sign * result.lower_bound
    answer = None if result.value is None else sign * result.value
    below = bound is not None and (values.min() >= bound if sign == 1 else values.max() <= bound)
    return {
        "status": str(result.status),
        "value": answer,
        "certified_bound": bound,
        "gap_abs": result.gap_abs,
        "nodes": result.nodes,
        "seconds": result.elapsed_s,
        "code_load_s": round(load_s, 3),
        "backend": result.backend,
        "tape_slots": int(len(problem.tape.op)),
        "sampled_extreme": float(values.min() if sign == 1 else values.max()),
        "bound_on_the_right_side_of_samples": bool(below),
        "bound_at_or_below_best_known": None if known is None or sign == -1 or bound is None else bound <= known,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="minimize_gpu on the current GPU (default: the CPU)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"the ANN folder (default: {DATA})")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--no-twin", action="store_true", help="skip the JSON twins")
    parser.add_argument("--only", nargs="*", default=(), help="networks whose name contains one of these")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args()
    options = MinimizeOptions(time_limit=args.time_limit)
    rows = []
    document = {
        "benchmark": "onnx_networks",
        "device": "gpu" if args.gpu else "cpu",
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "options": {"time_limit": args.time_limit, "eps_abs": options.eps_abs, "eps_rel": options.eps_rel},
        "rows": rows,
    }
    for name, path, box, known, twin in networks(args.data):
        if args.only and not any(part in name for part in args.only):
            continue
        rng = np.random.default_rng(0)
        lo, hi = np.array(box).T
        samples = lo + rng.random((args.samples, len(box))) * (hi - lo)
        entry = {"network": name, "box": box, "best_known": known}
        for sense, sign in (("min", 1), ("max", -1)):
            problem = onnx_problem(path, box, maximize=sign == -1)
            result, load_s = solve(problem, options, args.gpu)
            entry[sense] = row(problem, result, load_s, sign, samples, known)
        if twin is not None and not args.no_twin:
            problem = load_problem(str(twin))
            result, load_s = solve(problem, options, args.gpu)
            entry["json_twin_min"] = row(problem, result, load_s, 1, samples, known)
        rows.append(entry)
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
