"""A flow-shop search's choices: its lower bounds and branching rules, by the names the options and
run stores use and by the codes the numba code (``flowshop/bounds.py``, ``flowshop/ivm.py``, the GPU
kernels) branches on.  Free of numba, so that the command line's parser reads them without it."""

LB1 = 0
LB2 = 1
LB1_LB2 = 2
BOUND_NAMES = {"lb1": LB1, "lb2": LB2, "lb1+lb2": LB1_LB2}
DEFAULT_BOUND = "lb1"
GPU_BOUND = "lb1"  # the GPU explorer's only bound (gpu/flowshop/kernels.py runs LB1's bodies)

FORWARD = 0
BACKWARD = 1
MINMIN = 2
MINBRANCH = 3
BRANCH_NAMES = {"forward": FORWARD, "backward": BACKWARD, "minmin": MINMIN, "minbranch": MINBRANCH}
DEFAULT_BRANCH = "minmin"
