"""The spatial family's defaults that ``pbbflow minimize`` names in its help, here apart from the
solver's modules so that the command line reads them without loading them."""

# Subdomains per box on the CPU.  The seed paper's 1,024 suits a GPU; on the CPU, over the 15 problem
# files and the peaks ANN (one thread; benchmarks/spatial_budgets.py), every budget proves all of them,
# in 0.44 s (16), 0.36 s (64), 0.58 s (256) and 0.96 s (1,024) in all.
CPU_SUBDOMAINS = 64
GPU_SUBDOMAINS = 1024  # the seed paper's budget; benchmarks/spatial_figure6.py on an H200
