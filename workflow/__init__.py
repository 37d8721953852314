"""Dask side of pbbflow: clusters, the coordinator (a scheduler plugin) and its ledger, the routes, the
explorer and side-heuristic tasks, the ETA, and the driver that runs and checkpoints a run (``run``)."""
