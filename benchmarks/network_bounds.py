"""Benchmark: bounds of one network output over boxes of several widths by the tape's natural
interval extension (NIE), its mean value form (MVF), and the backward linear bounds of
``spatial/network_bounds.py`` (CROWN-style), against the sampled range; seconds per box. JSON out.

Networks: the ONNX files of ``../shared/data/ann`` (and its ``torch-export``; box: the JSON twin's
domain, the torch exports [-1, 1]^2), the ANN files of ``benchmarks/networks`` (their input scaling
enclosed by interval arithmetic onto the network's box; the output scaling is ``c``, ``d``), and an
ACAS-Xu-shaped ReLU network (5 inputs, 6 hidden layers of 50, 5 outputs; seeded He-initialized
float32 weights, MatMul/Add/Relu as ACAS Xu's files; box [-0.5, 0.5]^5, written to
``benchmarks/networks/acas-shaped-5-6x50-5-relu.onnx`` when missing).

Per network, width w (a fraction of the domain's side) and box (``--boxes`` boxes, centres seeded
uniform in the domain, clipped to it): output 0's lower and upper bound by each method, the
min/max of ``--samples`` random points' float values and the box's corners' and centre's, and the
seconds of one bound (median of ``--repeats``, single-threaded, the code loaded first).

    python benchmarks/network_bounds.py --out benchmarks/results/network_bounds_2core_2026-12-05.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from pbbflow.spatial import Model, evaluate_float, read_onnx
from pbbflow.spatial import interval as iv
from pbbflow.spatial.ann import AnnNetwork
from pbbflow.spatial.bounds import Mode, bound_boxes
from pbbflow.spatial.network import Network
from pbbflow.spatial.network_bounds import NetworkBounds

HERE = Path(__file__).resolve().parent
DATA = next((p / "shared/data/ann" for p in HERE.parents if (p / "shared/data/ann").is_dir()), None)
ACAS = HERE / "networks" / "acas-shaped-5-6x50-5-relu.onnx"
WIDTHS = (1.0, 0.1, 0.01)


def write_acas_shaped(path: Path, seed: int = 0) -> None:
    """5 inputs, 6 hidden layers of 50 ReLU, 5 outputs: MatMul, Add, Relu in float32 (He init)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    sizes = [5, *[50] * 6, 5]
    nodes, initializers, value = [], [], "x"
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        weights = rng.normal(0.0, np.sqrt(2.0 / a), (a, b)).astype(np.float32)
        bias = rng.normal(0.0, 0.05, b).astype(np.float32)
        initializers += [numpy_helper.from_array(weights, f"W{k}"), numpy_helper.from_array(bias, f"b{k}")]
        nodes += [
            helper.make_node("MatMul", [value, f"W{k}"], [f"m{k}"]),
            helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"]),
        ]
        value = f"a{k}"
        if k < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [value], [f"r{k}"]))
            value = f"r{k}"
    nodes.append(helper.make_node("Identity", [value], ["y"]))
    graph = helper.make_graph(
        nodes,
        "acas-shaped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def _ann_scaling(ann: AnnNetwork, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An enclosure of the ANN file's input scaling 2 (x - in_lo) / (in_hi - in_lo) - 1 over [lo, hi]."""
    a_lo, a_hi = np.empty(len(lo)), np.empty(len(lo))
    for i, (x_lo, x_hi, p, q) in enumerate(zip(lo, hi, ann.in_lo, ann.in_hi)):
        t = iv.mul(2.0, 2.0, *iv.sub(x_lo, x_hi, p, p))
        t = iv.div(*t, *iv.sub(q, q, p, p))
        a_lo[i], a_hi[i] = iv.sub(*t, 1.0, 1.0)
    return a_lo, a_hi


def networks() -> list[dict]:
    """name, the Network, a function x -> (box for the network, c, d) for output 0, the domain,
    and the tapes (minimized, maximized) of output 0."""
    found = []

    def tapes(network_output, domain) -> tuple:
        result = []
        for sign in (1.0, -1.0):
            model = Model("bench")
            x = [model.variable(a, b) for a, b in domain]
            model.minimize(sign * network_output(x))
            result.append(model.problem().tape)
        return tuple(result)

    onnx_files = sorted(DATA.glob("*.onnx")) + sorted((DATA / "torch-export").glob("*.onnx")) if DATA else []
    if not ACAS.exists():
        write_acas_shaped(ACAS)
    for path in [*onnx_files, ACAS]:
        network = read_onnx(path)
        twin = path.with_suffix(".json")
        if path == ACAS:
            domain = [(-0.5, 0.5)] * 5
        elif twin.exists():
            ann = AnnNetwork.from_document(json.loads(twin.read_text()), twin.name)
            domain = list(zip(ann.in_lo, ann.in_hi))
        else:
            domain = [(-1.0, 1.0)] * network.n_inputs
        unit = np.eye(network.n_outputs)[0]
        found.append(
            {
                "name": path.name,
                "network": network,
                "mapped": lambda lo, hi, unit=unit: (lo, hi, unit, 0.0),
                "domain": domain,
                "tapes": tapes(lambda x, network=network: network(x)[0], domain),
            }
        )
    for path in sorted((HERE / "networks").glob("*.json")):
        ann = AnnNetwork.from_document(json.loads(path.read_text()), path.name)
        domain = list(zip(ann.in_lo, ann.in_hi))
        found.append(
            {
                "name": path.name,
                "network": ann.network,
                "mapped": lambda lo, hi, ann=ann: (*_ann_scaling(ann, lo, hi), np.array([ann.y_sd]), ann.y_mu),
                "domain": domain,
                "tapes": tapes(ann.output, domain),
            }
        )
    return found


def _timed(function, repeats: int) -> tuple[float, float]:
    """(value, median seconds) of ``function()``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return value, float(np.median(times))


def measure(entry: dict, lo: np.ndarray, hi: np.ndarray, samples: int, repeats: int, rng) -> dict:
    minimized, maximized = entry["tapes"]
    row = {"lo": lo.tolist(), "hi": hi.tolist()}
    for name, mode in (("nie", Mode.NIE), ("mvf", Mode.MVF)):
        lower, seconds = _timed(
            lambda: bound_boxes(minimized, lo[None], hi[None], 1, mode, parallel=False).lb[0], repeats
        )
        upper = -bound_boxes(maximized, lo[None], hi[None], 1, mode, parallel=False).lb[0]
        row[name] = {"lower": float(lower), "upper": float(upper), "seconds": seconds}
    bounds: NetworkBounds = entry["bounds"]
    net_lo, net_hi, c, d = entry["mapped"](lo, hi)
    lower, seconds = _timed(lambda: bounds.lower_bound(net_lo, net_hi, c, d), repeats)
    upper = -bounds.lower_bound(net_lo, net_hi, -c, -d)
    row["crown"] = {"lower": lower, "upper": upper, "seconds": seconds}
    points = [lo, hi, 0.5 * lo + 0.5 * hi, *(lo + rng.random((samples, len(lo))) * (hi - lo))]
    values = np.array([evaluate_float(minimized, x)[0] for x in points])
    row["sampled"] = {"min": float(values.min()), "max": float(values.max()), "points": len(points)}
    row["valid"] = bool(
        all(row[m]["lower"] <= values.min() and row[m]["upper"] >= values.max() for m in ("nie", "mvf", "crown"))
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--boxes", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    report = {
        "command": "python benchmarks/network_bounds.py "
        + " ".join(f"--{k} {v}" for k, v in vars(args).items() if v is not None),
        "machine": platform.node(),
        "widths": list(WIDTHS),
        "networks": [],
    }
    for entry in networks():
        network: Network = entry["network"]
        entry["bounds"] = NetworkBounds(network)
        domain_lo, domain_hi = (np.array(side, dtype=np.float64) for side in zip(*entry["domain"]))
        measure(entry, domain_lo, domain_hi, 10, 1, rng)  # code loaded
        rows = []
        for width in WIDTHS:
            for _ in range(args.boxes if width < 1.0 else 1):
                side = width * (domain_hi - domain_lo)
                centre = domain_lo + rng.random(len(domain_lo)) * (domain_hi - domain_lo)
                lo = np.clip(centre - side / 2, domain_lo, domain_hi - side)
                rows.append({"width": width, **measure(entry, lo, lo + side, args.samples, args.repeats, rng)})
        report["networks"].append({"name": entry["name"], "n_inputs": network.n_inputs, "boxes": rows})
        summary = {w: [r for r in rows if r["width"] == w] for w in WIDTHS}
        for width, group in summary.items():
            print(
                entry["name"],
                width,
                *(
                    f"{m} {np.mean([r[m]['upper'] - r[m]['lower'] for r in group]):.4g}"
                    for m in ("nie", "mvf", "crown")
                ),
                f"sampled {np.mean([r['sampled']['max'] - r['sampled']['min'] for r in group]):.4g}",
                f"crown_s {np.median([r['crown']['seconds'] for r in group]):.2e}",
                flush=True,
            )
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
    if not args.out:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
