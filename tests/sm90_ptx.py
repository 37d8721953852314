"""Compile every GPU kernel (flow shop and spatial) to sm_90 PTX without a GPU (NVVM only), as a script.

The tests run it in a subprocess without ``NUMBA_ENABLE_CUDASIM`` (the simulator, which the test
process uses, accepts code that numba-cuda refuses to type, e.g. a local array sized by an
expression). ``python tests/sm90_ptx.py OUT_DIR``: prints ``SKIP <reason>`` when there is no CUDA
toolchain to compile with; otherwise compiles each kernel (a typing or compile error exits 1 with
its traceback), writes ``OUT_DIR/<kernel>.ptx`` and prints ``ok <kernel>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pbbflow.gpu.offline_ptx import kernel_ptx

A1, A2, A3 = "float64[::1]", "float64[:, ::1]", "float64[:, :, ::1]"
I1, I2, B1, B2 = "int64[::1]", "int64[:, ::1]", "boolean[::1]", "boolean[:, ::1]"
J1, J2 = "int32[::1]", "int32[:, ::1]"
TAPE = "int32[::1], int32[::1], int32[::1], float64[::1], float64[::1], int32[::1], int64"


def _kernels() -> dict:
    from pbbflow.gpu.flowshop import kernels
    from pbbflow.gpu.spatial import contract as spatial_contract
    from pbbflow.gpu.spatial import kernels as spatial_kernels
    from pbbflow.gpu.spatial import network_bounds as spatial_network_bounds
    from pbbflow.gpu.spatial import phase as spatial_phase

    return {
        # one n <= 32 kernel and one for larger n (their loops over a row's chunks differ)
        "explore_n20": (kernels.explore_kernel(20, 5), kernels.EXPLORE_SIGNATURE),
        "explore_n50": (kernels.explore_kernel(50, 5), kernels.EXPLORE_SIGNATURE),
        "classify": (kernels.classify, f"({J2}, {J2}, {I2}, {J1}, {I1})"),
        "list_victims": (kernels.list_victims, f"({J2}, {J2}, {I2}, {J1}, {I1}, int64)"),
        "steal": (kernels.steal, f"({J2}, {J2}, {J2}, {I2}, {J1}, {J1}, {I1})"),
        "pack_work": (kernels.pack_work, f"({J2}, {J2}, {J2}, {I2}, uint64[:, :, ::1])"),
        "bound_subdomains": (
            spatial_kernels.bounding_kernel(),
            f"({TAPE}, {B1}, int64, {B1}, {A3}, int64, int64, int64, float64, {A1}, {A2}, {A1}, "
            f"{I1}, {I1}, {I2}, {I2}, {A3}, {A2})",
        ),
        "fill_edges": (spatial_kernels.fill_edges, f"(int64, {A2}, {A2}, {A3})"),
        "reset_boxes": (spatial_kernels._reset_boxes, f"(int64, int64, {A1}, {I1}, {I1}, {I2}, {I2}, {I1})"),
        "first_best": (spatial_kernels._first_best, f"(int64, {A2}, {A1}, {I1})"),
        "finish_boxes": (
            spatial_kernels.finishing_kernel(),
            f"(int64, {A3}, int64, {I1}, {I2}, {I2}, {A2}, {A2}, {A2})",
        ),
        "contract": (
            spatial_contract.contracting_kernel(),
            f"({TAPE}, {A2}, {A2}, int64, {A1}, float64, {B1}, {A3}, {B2})",
        ),
        "begin_phase": (spatial_phase.begin_phase, f"({A1}, {I1}, float64)"),
        "branch": (
            spatial_phase.branch_kernel(),
            f"(int64, {A2}, {A2}, {A1}, float64, int64, int64, {A1}, float64, float64, "
            f"{A1}, {I1}, {A2}, {A2}, {A1}, {A2}, {A2})",
        ),
        "fill_levels": (
            spatial_phase.levels_kernel(),
            f"(int64, {A1}, float64, float64, {B1}, {A2}, {A2}, {A2}, int64, {A1}, {A1}, {A1}, {A1}, {B2}, {B1})",
        ),
        "take_lagrangian": (
            spatial_phase.lagrangian_kernel(),
            f"(int64, {B1}, {A1}, {A2}, {A2}, float64, {A1}, {A1}, {A2}, {A2}, {B1})",
        ),
        "offer_candidates": (
            spatial_phase.candidate_kernel(),
            f"({TAPE}, {B1}, int64, {A2}, float64, {A1}, {A1}, {A3})",
        ),
        "keep": (
            spatial_phase.keep_kernel(),
            f"(int64, {A2}, {A2}, {B1}, {A1}, {A2}, {A2}, {A1}, boolean, {B1}, {A1}, {A2}, {A2}, "
            f"float64, float64, {A1}, {I1}, {A1}, {A2}, {A2}, {A1})",
        ),
        "claim": (spatial_phase.claim, f"(int64, {A1}, {A1}, {A1}, {I1})"),
        "network_lower_bounds": (
            spatial_network_bounds.bounds_kernel(),
            f"(int64, int64, {I1}, {I1}, {I1}, {I1}, {I1}, {A1}, {A1}, {I1}, {A1}, {I1}, {A1}, {A1}, {A2}, {A1}, "
            f"{A2}, {A2}, {A3}, {A3}, float64[:, :, :, ::1], {A2}, {A2})",
        ),
    }


def main(out: Path) -> None:
    def trivial(x):
        x[0] = 1.0

    try:
        kernel_ptx(trivial, f"({A1},)")
    except Exception as error:  # no NVVM, no CUDA headers: nothing to compile with here
        print(f"SKIP {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, (kernel, signature) in _kernels().items():
        (out / f"{name}.ptx").write_text(kernel_ptx(kernel.py_func, signature))
        print(f"ok {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
