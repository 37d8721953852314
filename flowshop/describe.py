"""How a flow-shop result reads: its JSON fields (``core.result.Result.to_dict``), its lines and a
row of its history, for the command line (``core.family.Family``)."""

from __future__ import annotations

from ..core.result import Result
from ..core.text import format_rate

# ``pbbflow solve --json``'s fields, in order ("key=field": the shared field ``field`` as ``key``)
result_fields = (
    "instance=name",
    "n",
    "m",
    "status",
    "makespan=value",
    "permutation=solution",
    "lower_bound",
    "nodes",
    "leaves",
    "elapsed_s",
    "remaining_fraction",
    "remaining_log10",
)


def result_lines(result: Result) -> list[str]:
    """The result, a line for each of its parts."""
    permutation = result.solution
    return [
        f"instance     {result.name} ({result.n} jobs x {result.m} machines)",
        f"status       {result.status}",
        f"makespan     {result.value if result.value is not None else '-'}",
        f"permutation  {' '.join(map(str, permutation)) if permutation else '-'}",
        f"lower bound  {result.lower_bound}",
        f"nodes        {result.nodes:,} decomposed, {result.leaves:,} leaves, "
        f"{result.elapsed_s:.2f} s ({format_rate(result.nodes_per_s)})",
    ]


def history_text(history: dict[str, list], i: int) -> str:
    """Row ``i`` of a run's history (``info``): the incumbent and the share left."""
    left = history["remaining_fraction"][i]
    return f"UB {history['incumbent'][i]}  {'-' if left is None else f'{left:.4%}'} left"
