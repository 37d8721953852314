"""The GPU code in numba-cuda: each family's in a subpackage (PBB@GPU's IVM explorer in
``flowshop``, the spatial family's B&B in ``spatial``), beside the device helpers both share
(``warp``, ``offline_ptx``; device detection is ``core.devices``, which the command line uses
too). Importing this package loads neither numba nor a CUDA driver."""

SMALL_IVMS = 16384  # IVMs per GPU up to 32 jobs (one warp's row): the paper's K
LARGE_IVMS = (
    65536  # above: ta056 from 3680 at 714 against 691 M nodes/s over 25 s on an H200 (gpu_ivms_h200_2026-12-05.json)
)


def default_ivms(n: int) -> int:
    """IVMs per GPU for an instance of ``n`` jobs."""
    return SMALL_IVMS if n <= 32 else LARGE_IVMS  # 32: a row in one warp's lanes
