"""Benchmark: the CPU search on network objectives with and without the backward linear bound
(``Problem.network_objective``: the explorer's bound is max(tape bound, the network's)). JSON out.

Problems: the ACAS-Xu-shaped ReLU network of ``benchmarks/networks`` (written by
``benchmarks/network_bounds.py``), output 0 maximized over boxes [c - w/2, c + w/2]^5 around
c = 0.1 for several widths w, with the default options and with one subdomain bounded by NIE
alone; on the same boxes, the margin max_j (y_j - y_0) over outputs j = 1..4 minimized (a
verification question, "is output 0 never the largest?": a max of affine forms of the outputs,
bounded row by row); and the ONNX files of ``../shared/data/ann`` (their JSON twins' boxes, the torch exports
[-1, 1]^2), minimized. Per run: status, value, certified bound (a maximum's as minus the minimized
negation's), nodes and seconds (the code loaded first, out of the clock).

    python benchmarks/network_bounds_search.py --out benchmarks/results/network_bounds_search_2core_2026-12-05.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import replace
from pathlib import Path

from pbbflow.spatial import Model, onnx_problem, read_onnx
from pbbflow.spatial.ann import AnnNetwork
from pbbflow.spatial.bnb import load_code, minimize
from pbbflow.spatial.model import maximum
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
DATA = next((p / "shared/data/ann" for p in HERE.parents if (p / "shared/data/ann").is_dir()), None)
ACAS = HERE / "networks" / "acas-shaped-5-6x50-5-relu.onnx"
PARTS = ("acas", "margin", "onnx")


def run(problem, options: MinimizeOptions, sign: int) -> dict:
    """The search with and without the network objective."""
    rows = {}
    for label, chosen in (("with", problem), ("without", replace(problem, network_objective=None))):
        load_code(chosen, options)
        start = time.perf_counter()
        result = minimize(chosen, options)
        seconds = time.perf_counter() - start
        rows[label] = {
            "status": result.status.name.lower(),
            **({"holds": result.threshold["holds"]} if options.prove_above is not None else {}),
            "value": None if result.value is None else sign * result.value,
            "bound": sign * result.lower_bound,
            "nodes": result.nodes,
            "seconds": round(seconds, 3),
        }
        print(problem.name, options.subdomains, options.bound, label, rows[label], flush=True)
    return rows


def margin_problem(width: float):
    """The largest margin of outputs 1..4 over output 0 of the ACAS-shaped network on the box."""
    network = read_onnx(ACAS)
    model = Model(f"acas-shaped margin w={width}")
    x = model.variables(network.n_inputs, 0.1 - width / 2, 0.1 + width / 2)
    y = network(x)
    model.minimize(maximum(*(y[j] - y[0] for j in range(1, network.n_outputs))))
    return model.problem()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--widths", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    report = {
        "command": f"python benchmarks/network_bounds_search.py --time-limit {args.time_limit} --widths "
        + " ".join(map(str, args.widths))
        + " --parts "
        + " ".join(args.parts),
        "machine": platform.node(),
        "acas_shaped": [],
        "acas_shaped_margin": [],
        "shared_onnx": [],
    }
    default = MinimizeOptions(time_limit=args.time_limit)
    cheap = MinimizeOptions(time_limit=args.time_limit, subdomains=1, bound="nie")
    for width in args.widths:
        problem = onnx_problem(ACAS, [(0.1 - width / 2, 0.1 + width / 2)], output=0, maximize=True)
        for options in (default, cheap) if "acas" in args.parts else ():
            report["acas_shaped"].append(
                {"width": width, "subdomains": options.subdomains, "bound": options.bound, **run(problem, options, -1)}
            )
        if "margin" in args.parts:
            margin = margin_problem(width)
            report["acas_shaped_margin"].append({"width": width, **run(margin, default, 1)})
            decide = replace(default, prove_above=0.0)
            report["acas_shaped_margin"].append({"width": width, "prove_above": 0.0, **run(margin, decide, 1)})
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
    files = sorted(DATA.glob("*.onnx")) + sorted((DATA / "torch-export").glob("*.onnx")) if DATA else []
    files = files if "onnx" in args.parts else []
    for path in files:
        twin = path.with_suffix(".json")
        if twin.exists():
            ann = AnnNetwork.from_document(json.loads(twin.read_text()), twin.name)
            domain = list(zip(ann.in_lo, ann.in_hi))
        else:
            domain = [(-1.0, 1.0)]
        problem = onnx_problem(path, domain)
        report["shared_onnx"].append({"name": path.name, **run(problem, default, 1)})
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
    if not args.out:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
