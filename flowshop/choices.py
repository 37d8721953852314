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


def bound_code(name: str) -> int:
    """The code of the lower bound ``name``; ValueError naming the known ones otherwise."""
    return _code(BOUND_NAMES, name, "bound")


def branch_code(name: str) -> int:
    """The code of the branching rule ``name``; ValueError naming the known ones otherwise."""
    return _code(BRANCH_NAMES, name, "branching rule")


def check_codes(bound: int, branch: int) -> None:
    """ValueError unless ``bound`` and ``branch`` are known codes: numba code given another would
    fall through its branches to some rule silently."""
    if bound not in BOUND_NAMES.values() or branch not in BRANCH_NAMES.values():
        raise ValueError(f"unknown bound code {bound!r} or branching code {branch!r}")


def _code(names: dict[str, int], name: str, what: str) -> int:
    if name not in names:
        raise ValueError(f"unknown {what} {name!r} (one of {', '.join(names)})")
    return names[name]
