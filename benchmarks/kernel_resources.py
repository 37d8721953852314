"""Benchmark: registers, spills and PTX instruction mix of the explore kernel, as JSON (no GPU).

Compiles the explore kernel to PTX for one instance size with numba-cuda (NVVM must be
installed, e.g. the ``nvidia-cuda-nvcc-cu12`` wheel; no GPU or driver is needed), then runs
``ptxas -v`` (``$PTXAS`` or ``ptxas`` on the PATH) for each register limit: registers, stack
frame and spill bytes per thread.  The PTX counts show how much of the kernel is 64-bit integer
work, which the GPU emulates with several 32-bit instructions.

    python benchmarks/kernel_resources.py --n 20 --m 20 --registers 0 64 80 96 128
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path


def explore_ptx(n: int, m: int) -> str:
    from pbbflow.gpu.flowshop import kernels
    from pbbflow.gpu.offline_ptx import kernel_ptx

    return kernel_ptx(kernels.explore_kernel(n, m).py_func, kernels.EXPLORE_SIGNATURE)


def ptxas_report(ptx: str, registers: int) -> dict:
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas")
    if ptxas is None:
        raise SystemExit("ptxas not found: set PTXAS or put it on the PATH")
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "explore.ptx"
        source.write_text(ptx)
        limit = ["-maxrregcount", str(registers)] if registers else []
        done = subprocess.run(
            [ptxas, "-arch=sm_90", "-v", *limit, str(source), "-o", str(Path(folder) / "k.cubin")],
            capture_output=True,
            text=True,
            check=True,
        )
    used = re.search(r"Used (\d+) registers", done.stderr)
    spills = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", done.stderr)
    return {
        "max_registers": registers or None,
        "registers": int(used.group(1)),
        "stack_frame_bytes": int(spills.group(1)),
        "spill_store_bytes": int(spills.group(2)),
        "spill_load_bytes": int(spills.group(3)),
    }


def instruction_mix(ptx: str) -> dict:
    opcodes = collections.Counter(
        line.split()[0] for line in ptx.splitlines() if re.match(r"\t[a-z@%]", line) and not line.startswith("\t//")
    )
    total = sum(opcodes.values())
    wide = sum(count for op, count in opcodes.items() if re.search(r"\.[sub]64$", op))
    return {"ptx_instructions": total, "ptx_64bit_integer_instructions": wide, "top": opcodes.most_common(8)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--m", type=int, default=20)
    parser.add_argument("--registers", nargs="+", type=int, default=[0, 64, 80, 96, 128], help="0: no limit")
    args = parser.parse_args()
    ptx = explore_ptx(args.n, args.m)
    print(
        json.dumps(
            {
                "benchmark": "kernel_resources",
                "n": args.n,
                "m": args.m,
                "arch": "sm_90",
                **instruction_mix(ptx),
                "ptxas": [ptxas_report(ptx, r) for r in args.registers],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
