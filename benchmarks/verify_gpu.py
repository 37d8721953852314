"""Benchmark: deciding VNN-LIB properties by input splitting with each box bounded on one CPU thread
or in batches on the GPU (``verify(..., gpu=...)``), side by side, as JSON.

The instances are those of ``benchmarks/verify_falsify.py`` ("Y_k is the largest output" of the
ACAS-shaped 5-6x50-5 ReLU network over boxes of side ``--widths`` around seeded centres), each
decided both ways in turn, with the descent first. ``agree`` is false where the two gave different
decided answers (a bug). The GPU kernel's first launch (its compile or numba's cache) is timed
apart, before the instances.

    python benchmarks/verify_gpu.py --instances 5 --widths 0.1 0.3 0.6 --time-limit 60 --out FILE
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verify_falsify import acas_network_and_report, add_instance_options, largest_output, run, side_by_side  # noqa: E402

from pbbflow.spatial.options import MinimizeOptions  # noqa: E402
from pbbflow.spatial.verify import load_code, verify  # noqa: E402
from pbbflow.spatial.vnnlib import parse_vnnlib  # noqa: E402

WAYS = ("cpu", "gpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_instance_options(parser, 5, [0.1, 0.3])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    args = parser.parse_args()
    network, report = acas_network_and_report("verify_gpu", args)
    warm = parse_vnnlib(largest_output(0, [(0.0, 0.01)] * 5))
    load_code(network, warm, MinimizeOptions(parallel=False))
    if "gpu" in args.ways:
        began = time.perf_counter()
        verify(network, warm, MinimizeOptions(parallel=False), falsify=False, gpu=True)
        report["gpu_first_launch_s"] = round(time.perf_counter() - began, 3)
    ways = {way: (lambda prop, gpu=(way == "gpu"): run(network, prop, args.time_limit, gpu=gpu)) for way in args.ways}
    side_by_side(report, ways, args)


if __name__ == "__main__":
    main()
