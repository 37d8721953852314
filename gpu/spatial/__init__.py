"""The spatial family on the GPU: its B&B (``bnb``), bounding and contracting kernels, phases and
device interval arithmetic."""
