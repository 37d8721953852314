"""Device detection: how many GPUs this process may use, without loading numba or a CUDA driver."""

import os


def gpu_count() -> int:
    """GPUs this process may use: NVML's device count capped by ``CUDA_VISIBLE_DEVICES``; 0 on any failure."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 (no driver, no library, no permission: all mean no GPU)
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [d.strip() for d in visible.split(",")]
        usable = 0
        for d in ids:  # CUDA ignores every id from the first invalid one on
            if not d or d.startswith("-"):
                break
            usable += 1
        count = min(count, usable)
    return count
