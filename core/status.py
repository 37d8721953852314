"""A search's statuses, as results and run stores spell them (every family)."""

OPTIMAL = "optimal"  # the best solution found is proved optimal
BOUND_PROVED = "bound_proved"  # search finished: no solution below the given upper bound exists (flow shop)
INFEASIBLE = "infeasible"  # search finished: no feasible point exists (spatial)
LIMIT = "limit"  # stopped at a time or node limit (or interrupted): work is left, a run can resume
