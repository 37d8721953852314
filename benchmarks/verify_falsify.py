"""Benchmark: deciding VNN-LIB properties with and without the descent before each region's search
(``verify(..., falsify=...)``), as JSON.

The network is the ACAS-Xu-shaped 5-6x50-5 ReLU ONNX of ``benchmarks/networks`` (written by
``benchmarks/network_bounds.py`` when missing). The properties: "Y_k is the largest output"
(``Y_k >= Y_j`` for every other j: a counterexample of ACAS Xu's property 2 shape) over boxes of
side ``--widths`` around seeded centres in [-0.4, 0.4]^5, for k = 0..4 in turn. Each instance runs
both ways in turn (which goes first alternates), one thread, ``--time-limit`` each. Per run: the
answer, boxes, seconds; ``agree`` is false where the two ways gave different decided answers (a
bug: each sat point is checked exactly, and unsat is certified).

    NUMBA_NUM_THREADS=1 python benchmarks/verify_falsify.py --instances 5 --widths 0.02 0.05 0.1 0.3 \
        --time-limit 20 --out benchmarks/results/verify_falsify_2core_2026-12-06.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from network_bounds import ACAS, write_acas_shaped  # noqa: E402

from pbbflow.spatial.bnb import load_code  # noqa: E402
from pbbflow.spatial.onnx_network import read_onnx  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402
from pbbflow.spatial.verify import margin_problem, verify  # noqa: E402
from pbbflow.spatial.vnnlib import parse_vnnlib  # noqa: E402


def largest_output(k: int, box: list[tuple[float, float]], n_outputs: int = 5) -> str:
    """VNN-LIB text: inputs in ``box``; the counterexample has Y_k at least every other output."""
    lines = [f"(declare-const X_{i} Real)" for i in range(len(box))]
    lines += [f"(declare-const Y_{j} Real)" for j in range(n_outputs)]
    for i, (lo, hi) in enumerate(box):
        lines += [f"(assert (>= X_{i} {lo!r}))", f"(assert (<= X_{i} {hi!r}))"]
    conditions = " ".join(f"(>= Y_{k} Y_{j})" for j in range(n_outputs) if j != k)
    return "\n".join([*lines, f"(assert (and {conditions}))"])


def run(network, prop, time_limit: float, **how) -> dict:
    """Decide ``prop`` on one thread (``how``: ``verify``'s keywords); its answer, boxes and seconds."""
    began = time.perf_counter()
    verdict = verify(network, prop, MinimizeOptions(parallel=False, time_limit=time_limit), **how)
    return {"answer": verdict.answer, "nodes": verdict.nodes, "seconds": round(time.perf_counter() - began, 4)}


def add_instance_options(parser: argparse.ArgumentParser, instances: int, widths: list[float]) -> None:
    """The options of the instances (shared with ``verify_gpu.py``)."""
    parser.add_argument("--instances", type=int, default=instances, help="centres per width")
    parser.add_argument("--widths", type=float, nargs="+", default=widths)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the JSON here after every instance")


def acas_network_and_report(benchmark: str, args: argparse.Namespace):
    """The ACAS-shaped network (written first where missing) and the report's header."""
    if not ACAS.exists():
        write_acas_shaped(ACAS)
    report = {
        "benchmark": benchmark,
        "command": "python " + " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine(), "python": platform.python_version()},
        "network": ACAS.name,
        "time_limit_s": args.time_limit,
    }
    return read_onnx(ACAS), report


def side_by_side(report: dict, ways: dict[str, Callable], args: argparse.Namespace) -> None:
    """Decide every instance each of ``ways`` (name -> function of the property), the first way
    alternating; record them in ``report`` with a summary, and write it to ``--out`` or print it."""
    rng = np.random.default_rng(args.seed)
    report["instances"] = []
    index = 0
    for width in args.widths:
        for _ in range(args.instances):
            centre = rng.uniform(-0.4, 0.4, 5)
            box = [(round(float(c) - width / 2, 6), round(float(c) + width / 2, 6)) for c in centre]
            k = index % 5
            prop = parse_vnnlib(largest_output(k, box))
            order = list(ways) if index % 2 == 0 else list(ways)[::-1]
            results = {name: ways[name](prop) for name in order}
            decided = {r["answer"] for r in results.values() if r["answer"] in ("sat", "unsat")}
            report["instances"].append(
                {"width": width, "largest": k, "box": box, **results, "agree": len(decided) <= 1}
            )
            print(json.dumps(report["instances"][-1]), file=sys.stderr, flush=True)
            index += 1
            if args.out:
                args.out.write_text(json.dumps(report, indent=1))
    report["summary"] = {
        way: {
            answer: sum(1 for r in report["instances"] if r[way]["answer"] == answer)
            for answer in ("sat", "unsat", "timeout", "unknown")
        }
        | {
            "seconds": round(sum(r[way]["seconds"] for r in report["instances"]), 3),
            "boxes": sum(r[way]["nodes"] for r in report["instances"]),
        }
        for way in ways
    }
    report["summary"]["all_agree"] = all(r["agree"] for r in report["instances"])
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_instance_options(parser, 10, [0.02, 0.05])
    parser.add_argument("--time-limit", type=float, default=20.0)
    args = parser.parse_args()
    network, report = acas_network_and_report("verify_falsify", args)
    load_code(margin_problem(network, parse_vnnlib(largest_output(0, [(0.0, 0.01)] * 5)).regions[0]))
    ways = {
        "with_descent": lambda prop: run(network, prop, args.time_limit, falsify=True),
        "search_alone": lambda prop: run(network, prop, args.time_limit, falsify=False),
    }
    side_by_side(report, ways, args)


if __name__ == "__main__":
    main()
