"""The options a run store records: how they are made and what a valid set is.

``bound`` and ``branch`` name the search's lower bound and branching rule; ``initial`` (``neh`` or
``ig``) the heuristic that gave the first schedule, of makespan ``initial_makespan``; ``user_ub``
the user's upper bound, if any; ``search_ub`` the bound the search prunes with from the start
(the smaller of the two); ``root_lower_bound`` the bound of the root, recomputed from ``p`` to
check it.  A user bound below the root's is valid (the search then proves it at once).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .bounds import lower_bound
from .choices import BOUND_NAMES, BRANCH_NAMES

INITIAL_NAMES = ("neh", "ig")
KEYS = ("bound", "branch", "search_ub", "user_ub", "initial", "initial_makespan", "root_lower_bound")


def run_options(
    p: np.ndarray, *, bound: str, branch: str, user_ub: int | None, initial: str, initial_makespan: int
) -> dict:
    """The options of a new run on ``p`` (``search_ub`` and ``root_lower_bound`` derived)."""
    search_ub = initial_makespan if user_ub is None else min(user_ub, initial_makespan)
    options = {
        "bound": bound,
        "branch": branch,
        "search_ub": search_ub,
        "user_ub": user_ub,
        "initial": initial,
        "initial_makespan": initial_makespan,
        "root_lower_bound": lower_bound(p, [], [], bound),
    }
    check_options(options, p)
    return options


def check_options(options: Any, p: np.ndarray) -> None:
    """ValueError naming the first thing wrong with ``options`` as the options of a run on ``p``."""
    if not isinstance(options, dict):
        raise ValueError(f"options must be a JSON object, not {type(options).__name__}")
    if sorted(options) != sorted(KEYS):
        raise ValueError(f"options must hold exactly {', '.join(KEYS)}; they hold {', '.join(sorted(options))}")
    for key, names in (("bound", BOUND_NAMES), ("branch", BRANCH_NAMES), ("initial", INITIAL_NAMES)):
        if options[key] not in names:
            raise ValueError(f"option {key} must be one of {', '.join(names)}, not {options[key]!r}")
    for key in ("search_ub", "initial_makespan", "root_lower_bound", "user_ub"):
        value = options[key]
        if not (type(value) is int and value >= 0 or key == "user_ub" and value is None):
            raise ValueError(f"option {key} must be an integer >= 0{' or null' * (key == 'user_ub')}, not {value!r}")
    root = lower_bound(p, [], [], options["bound"])
    if options["root_lower_bound"] != root:
        raise ValueError(
            f"option root_lower_bound is {options['root_lower_bound']}, the instance's root bound "
            f"({options['bound']}) is {root}"
        )
    if not root <= options["initial_makespan"] <= int(p.sum(dtype=np.int64)):
        raise ValueError(
            f"option initial_makespan {options['initial_makespan']} is not a makespan of the "
            f"instance (below its root bound {root} or above its total work)"
        )
    user_ub, initial = options["user_ub"], options["initial_makespan"]
    if options["search_ub"] != (initial if user_ub is None else min(user_ub, initial)):
        raise ValueError(
            f"option search_ub {options['search_ub']} is not the smaller of user_ub {user_ub} "
            f"and initial_makespan {initial}"
        )
