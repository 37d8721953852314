"""The flow-shop family on the GPU: PBB@GPU's IVM explorer (``explorer``), its kernels and the
factoradic limbs they share with the CPU."""
