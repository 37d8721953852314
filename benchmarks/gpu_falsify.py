"""Benchmark: falsification on the GPU, as JSON: per VNN-LIB instance, whether the descent alone
(64 random starts, on the CPU) or the descent from the margin sampled at ``--samples`` points on
the GPU (:func:`pbbflow.spatial.falsify.candidates` with
:meth:`pbbflow.gpu.spatial.network_bounds.DeviceNetworkBounds.sample_margins`) finds a
counterexample that passes verify's exact check, and in how many seconds; and ``verify(...,
gpu=True)``'s answer (the truth where it decides: sat or unsat).

The instances are ``benchmarks/verify_falsify.py``'s ("Y_k is the largest output" of the
ACAS-shaped 5-6x50-5 ReLU network over boxes of side ``--widths`` around seeded centres). A way
answers ``sat`` (found) or ``none``; ``agree`` is false where a way's sat meets verify's unsat (a
bug). The kernels' first launches are timed apart, before the instances.

    python benchmarks/gpu_falsify.py --instances 10 --widths 0.05 0.1 0.3 0.6 --samples 4096 65536 1048576 \
        --time-limit 30 --out FILE
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verify_falsify import acas_network_and_report, add_instance_options, largest_output, run, side_by_side  # noqa: E402

from pbbflow.gpu.spatial.network_bounds import DeviceNetworkBounds, load_kernel  # noqa: E402
from pbbflow.spatial.falsify import candidates  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402
from pbbflow.spatial.verify import checked_verdict, load_code  # noqa: E402
from pbbflow.spatial.vnnlib import parse_vnnlib  # noqa: E402


def falsified(network, prop, sample=None) -> dict:
    """Falsification alone over the property's regions: ``sat`` at the first candidate that passes
    the exact check, else ``none``; its seconds."""
    began = time.perf_counter()
    for region in prop.regions:
        for point in candidates(network, region, sample=sample):
            if checked_verdict(network, region, point.tolist(), 0, began).answer == "sat":
                return {"answer": "sat", "nodes": 0, "seconds": round(time.perf_counter() - began, 4)}
    return {"answer": "none", "nodes": 0, "seconds": round(time.perf_counter() - began, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_instance_options(parser, 5, [0.1, 0.3])
    parser.add_argument("--samples", type=int, nargs="+", default=[4096, 65536, 1 << 20])
    parser.add_argument("--time-limit", type=float, default=30.0)
    args = parser.parse_args()
    network, report = acas_network_and_report("gpu_falsify", args)
    warm = parse_vnnlib(largest_output(0, [(0.0, 0.01)] * 5))
    load_code(network, warm, MinimizeOptions(parallel=False))
    report["gpu_first_launch_s"] = round(load_kernel(network), 3)
    device = DeviceNetworkBounds(network)
    ways = {
        "verify_gpu": lambda prop: run(network, prop, args.time_limit, gpu=True),
        "descent_cpu": lambda prop: falsified(network, prop),
    }
    for count in args.samples:
        sample = functools.partial(device.sample_margins, count=count)
        falsified(network, warm, sample)  # the first launch of this size
        ways[f"samples_{count}"] = lambda prop, sample=sample: falsified(network, prop, sample)
    side_by_side(report, ways, args)


if __name__ == "__main__":
    main()
