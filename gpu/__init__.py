"""The GPU code in numba-cuda: each family's in a subpackage (PBB@GPU's IVM explorer in
``flowshop``, the spatial family's B&B in ``spatial``), beside the device helpers both share
(``warp``, ``offline_ptx``; device detection is ``core.devices``, which the command line uses
too). Importing this package loads neither numba nor a CUDA driver."""

DEFAULT_IVMS = 16384  # IVMs per GPU: the paper's K
