"""Pictures of runs: PNGs from a run store (``pbbflow plot``) and the dashboard page, each drawn by
the run's family with the panels and figures here, or by the common ones here for a family without its own."""
