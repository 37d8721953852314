"""pbbflow: exact parallel branch-and-bound for two families of problems.

- Permutation flow shop (makespan), proved optimal with PBB@Cluster's algorithm (``flowshop``, CLI ``solve``).
- Continuous global optimization by rigorous spatial B&B with interval bounds: a certified lower bound and a
  verified feasible point (``spatial``, CLI ``minimize``).

The names below (imported on first use) are the flow-shop API; ``pbbflow.spatial`` holds the continuous one's.
"""

import importlib

_HOMES = {  # public name -> the module that defines it, imported on first use
    "lower_bound": ".flowshop.bounds",
    "makespan": ".flowshop.evaluation",
    "neh": ".flowshop.evaluation",
    "FlowShop": ".flowshop.instance",
    "InstanceError": ".flowshop.instance",
    "load_instance": ".flowshop.load",
    "taillard_instance": ".flowshop.taillard",
    "ExploreResult": ".flowshop.explorer",
    "explore": ".flowshop.explorer",
    "WorkUnit": ".flowshop.intervals",
    "Result": ".core.result",
    "Status": ".core.result",
    "solve": ".flowshop.solve",
    "RunStore": ".storage.runstore",
    "RunStoreError": ".storage.runstore",
}


def __getattr__(name: str):
    """The public API, imported when first used: ``import pbbflow`` itself loads neither numba nor Dask
    (the console script installs its signal handlers before they load)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "ExploreResult",
    "FlowShop",
    "InstanceError",
    "Result",
    "RunStore",
    "RunStoreError",
    "Status",
    "WorkUnit",
    "explore",
    "load_instance",
    "lower_bound",
    "makespan",
    "neh",
    "solve",
    "taillard_instance",
]
