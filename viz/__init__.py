"""Pictures of runs: the best schedule and the search history, from a run store."""
