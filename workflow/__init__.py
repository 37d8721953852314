"""Dask side of pbbflow: clusters, the coordinator scheduler plugin, explorer tasks, solve/resume."""
