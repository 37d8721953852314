"""pbbflow: exact branch-and-bound for the permutation flow-shop problem (PBB@Cluster in Python).

The public API; the subpackages hold the implementation.
"""

from .flowshop.bounds import lower_bound
from .flowshop.evaluation import makespan, neh
from .flowshop.instance import FlowShop, InstanceError, load_instance
from .flowshop.taillard import taillard_instance
from .search.explorer import ExploreResult, explore
from .search.intervals import WorkUnit
from .search.solve import SolveResult, solve
from .storage.runstore import RunStore, RunStoreError

__all__ = [
    "ExploreResult",
    "FlowShop",
    "InstanceError",
    "RunStore",
    "RunStoreError",
    "SolveResult",
    "WorkUnit",
    "explore",
    "load_instance",
    "lower_bound",
    "makespan",
    "neh",
    "solve",
    "taillard_instance",
]
