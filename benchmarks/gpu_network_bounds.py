"""Benchmark: CROWN lower bounds of a network over batches of boxes on the GPU
(``gpu/spatial/network_bounds.py``) against the CPU's ``NetworkBounds``; boxes per second. JSON out.

The network is the ACAS-shaped ReLU network (5 inputs, 6 hidden layers of 50, 5 outputs) of
``benchmarks/networks`` (``benchmarks/network_bounds.py`` writes it), on its box [-0.5, 0.5]^5.
Per width w (a fraction of the box's side) and batch size B: B boxes of side w, centres seeded
uniform in the box (clipped to it), the rows c = the identity (each output's lower bound), d = 0.
The GPU's time is the median of ``--repeats`` calls of ``lower_bounds`` (upload, launches,
download; after one call that compiles); the CPU's is single-threaded over ``--sample`` boxes of
the batch, whose bounds are compared with the GPU's (the largest relative difference). Every GPU
bound is also checked against the network's float value at its box's centre (a bound above it
is counted: there should be none), and against the same bound in the other repeats (a bound that
changes between repeats is counted: the kernel's sums run in a fixed order, so there should be none).

    python benchmarks/gpu_network_bounds.py --out benchmarks/results/gpu_network_bounds_h100.json
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu_network_bounds.py --smoke   # the simulator, tiny
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from numba import cuda

from pbbflow.gpu.spatial.network_bounds import DeviceNetworkBounds
from pbbflow.gpu.warp import SIMULATED
from pbbflow.spatial import read_onnx
from pbbflow.spatial.network import Layer, Network
from pbbflow.spatial.network_bounds import NetworkBounds

HERE = Path(__file__).resolve().parent
ACAS = HERE / "networks" / "acas-shaped-5-6x50-5-relu.onnx"
BATCHES = (256, 1024, 4096, 16384)
WIDTHS = (0.01, 0.1, 1.0)


def float_values(network: Network, x: np.ndarray) -> np.ndarray:
    """The network's outputs at the rows of x in float64 (dense ReLU and linear layers)."""
    for step in network.steps:
        x = x @ step.weights.T + (0.0 if step.bias is None else step.bias)
        if step.activation == "relu":
            x = np.maximum(x, 0.0)
    return x


def boxes(rng: np.random.Generator, n: int, n_inputs: int, width: float) -> tuple[np.ndarray, np.ndarray]:
    """n boxes of side ``width`` in [-0.5, 0.5]^n_inputs."""
    centre = rng.uniform(-0.5, 0.5, (n, n_inputs))
    return np.clip(centre - width / 2, -0.5, 0.5), np.clip(centre + width / 2, -0.5, 0.5)


def run(network: Network, batches, widths, sample: int, repeats: int, seed: int) -> list[dict]:
    """One record per width and batch size."""
    if not all(isinstance(s, Layer) and s.activation in ("relu", "linear") for s in network.steps):
        raise SystemExit("the benchmark's float check takes dense ReLU networks only")
    gpu = DeviceNetworkBounds(network)
    cpu = NetworkBounds(network)
    c, d = np.eye(network.n_outputs), np.zeros(network.n_outputs)
    rng = np.random.default_rng(seed)
    lo, hi = boxes(rng, 1, network.n_inputs, widths[0])
    gpu.lower_bounds(lo, hi, c, d)  # compiles (or loads the cached kernel)
    cpu.lower_bounds(lo[0], hi[0], c, d)
    records = []
    for width in widths:
        for n in batches:
            los, his = boxes(rng, n, network.n_inputs, width)
            times, repeats_differ = [], 0
            bounds = None
            for _ in range(repeats):
                start = time.perf_counter()
                again = gpu.lower_bounds(los, his, c, d)
                times.append(time.perf_counter() - start)
                repeats_differ += 0 if bounds is None else int(np.sum(again != bounds))
                bounds = again
            gpu_s = float(np.median(times))
            k = min(sample, n)
            start = time.perf_counter()
            expected = np.array([cpu.lower_bounds(los[b], his[b], c, d) for b in range(k)])
            cpu_s = (time.perf_counter() - start) / k
            difference = np.abs(bounds[:k] - expected) / np.maximum(np.abs(expected), 1e-300)
            centre = float_values(network, 0.5 * los + 0.5 * his) @ c.T + d
            records.append(
                {
                    "width": width,
                    "boxes": n,
                    "gpu_s": gpu_s,
                    "gpu_boxes_per_s": n / gpu_s,
                    "cpu_s_per_box": cpu_s,
                    "cpu_boxes_per_s": 1.0 / cpu_s,
                    "speedup": (n / gpu_s) * cpu_s,
                    "compared_boxes": k,
                    "max_relative_difference": float(np.max(difference[bounds[:k] != expected], initial=0.0)),
                    "bounds_changed_between_repeats": repeats_differ,
                    "bounds_above_centre_value": int(np.sum(bounds > centre + 1e-9 * (1.0 + np.abs(centre)))),
                    "chunk_boxes": gpu.chunk(len(c)),
                    "threads_per_box": gpu.threads(len(c)),
                }
            )
            print(json.dumps(records[-1]), file=sys.stderr)
    return records


def _device_name() -> str:
    """The current device's name (bytes in older numba-cuda, str in newer)."""
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else name


def main(argv: list[str] | None = None) -> dict:
    """Parse the arguments, run, print the JSON (and write it to ``--out``); the document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", type=Path, default=ACAS)
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--widths", type=float, nargs="+", default=list(WIDTHS))
    parser.add_argument("--sample", type=int, default=64, help="boxes of each batch bounded on the CPU too")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="one batch of 2 boxes, one width (the simulator)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        args.batches, args.widths, args.sample, args.repeats = [2], [0.01], 2, 1
    network = read_onnx(args.network)
    document = {
        "benchmark": "gpu_network_bounds",
        "network": args.network.name,
        "device": "CUDA simulator" if SIMULATED else _device_name(),
        "host": platform.processor() or platform.machine(),
        "records": run(network, args.batches, args.widths, args.sample, args.repeats, args.seed),
    }
    text = json.dumps(document, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return document


def _simulated_libdevice() -> contextlib.AbstractContextManager:
    """Under the simulator (run as a script), the tests' exact libdevice stand-ins and barrier fix."""
    if not SIMULATED:
        return contextlib.nullcontext()
    sys.path.insert(0, str(HERE.parent / "tests"))
    from libdevice_shim import exact_libdevice
    from simulator_fixes import install

    install()
    return exact_libdevice()


if __name__ == "__main__":
    with _simulated_libdevice():
        main()
