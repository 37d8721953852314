"""The permutation flow-shop family (makespan): PBB@Cluster's IVM branch-and-bound.

- Instances: :mod:`.instance` (``FlowShop``, file readers), :mod:`.taillard` (ta001 .. ta120),
  :mod:`.load` (a name or a file), :mod:`.evaluation` (makespan, NEH, brute force).
- The search: :mod:`.choices` (bound and branching-rule names and codes), :mod:`.bounds` (LB1,
  LB2), :mod:`.ivm` (the explorer), :mod:`.explorer` (threads), :mod:`.solve` (in this process).
- Work: :mod:`.factoradic` (positions of [0, n!)), :mod:`.intervals` (exact work units),
  :mod:`.packed` (their array form), :mod:`.estimate` and :mod:`.calibrate` (the ETA's probes).
- Heuristic: :mod:`.iterated_greedy`.
- The family's seam (``core.family``): :mod:`.family`, :mod:`.run_options`, :mod:`.warmup`,
  :mod:`.describe`, :mod:`.plots`, :mod:`.dashboard`, and :mod:`.commands` (``solve``,
  ``heuristic``). Its GPU explorer is ``gpu.flowshop``.
"""
