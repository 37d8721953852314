"""PBB@GPU: the IVM explorer on NVIDIA GPUs (numba-cuda); ``explorer`` is the entry point."""

DEFAULT_IVMS = 16384  # IVMs per GPU: the paper's K


class GpuError(RuntimeError):
    """No usable GPU, or a request the GPU explorer cannot serve (one line, meant for the user)."""
