"""PBB@GPU: the IVM explorer on NVIDIA GPUs (numba-cuda); ``explorer`` is the entry point."""

DEFAULT_IVMS = 16384  # IVMs per GPU: the paper's K
