"""The spatial family's defaults that ``pbbflow minimize`` names in its help, here apart from the
solver's modules so that the command line reads them without loading them."""

# Subdomains per box on the CPU.  The seed paper's 1,024 suits a GPU; on the CPU, over the 15 problem
# files and the peaks ANN (one thread; benchmarks/spatial_budgets.py), every budget proves all of them,
# in 0.44 s (16), 0.36 s (64), 0.58 s (256) and 0.96 s (1,024) in all.
CPU_SUBDOMAINS = 64
# On the GPU the seed paper used 1,024.  Over 27 problems on an H200 (benchmarks/spatial_budgets.py
# --gpu, results/spatial_gpu_budgets_h200_merged_2026-12-04.json) 256 proves all 27 in 1.55 s in all,
# 1,024 leaves G13 open at 10 s (0.58 s at 256) and is no faster on the other 26 (1.11 s against 0.98 s).
GPU_SUBDOMAINS = 256
# With no --gpus, a GPU visible: the CPU explores first (one thread) for this many seconds, without
# touching CUDA, and hands what is left to the GPU. On an H200 host 18 of 27 problems end on one
# thread in <= 0.02 s, where the GPU takes 0.006-0.023 s (Trid-6 0.15 s). Slices of 0.01, 0.02,
# 0.04 and 0.08 s took 0.72, 0.76, 0.88 and 1.03 s over the class; 0.01 s hands G11, G05 and
# Eggholder over at 1.7-1.8x their CPU time (results/spatial_side_by_side_h200_2026-12-06/). A second
# slice follows where the gap closes fast enough to end within it (gpu.spatial.bnb.closes_within):
# on an H100 host G05 took 0.025 s on one thread and 0.051 s handed over at 0.02 s
# (results/networks_class_verify_h100_2026-12-07/).
CPU_SLICE_S = 0.02
# What a proof means: a gap of at most max(EPS_ABS, EPS_REL |f*|), equalities within FEAS_TOL.
EPS_ABS = 1e-6
EPS_REL = 1e-6
FEAS_TOL = 1e-6
# A local solve per this many subdomains bounded: a schedule by work done, not by time, so a run
# repeats. The GPU bounds thousands of times more subdomains per second, hence its own.
LOCAL_EVERY_SUBDOMAINS = 16384
GPU_LOCAL_EVERY_SUBDOMAINS = 1 << 22
