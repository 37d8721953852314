"""Pictures of runs of both families: PNGs from a run store (``pbbflow plot``) and the dashboard page."""
