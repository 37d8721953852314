"""A run's result as lines, for each family (``--json`` prints the dict as it is)."""

from __future__ import annotations

from ..search.solve import LIMIT
from .progress import format_rate, format_share


def print_result(result: dict, kind: str) -> None:
    """Print the result of a run of family ``kind``."""
    lines = (_flowshop_lines if kind == "flowshop" else _spatial_lines)(result)
    if result["status"] == LIMIT:
        share = format_share(result["remaining_fraction"], result["remaining_log10"])
        log10 = result["remaining_log10"]
        lines.append(f"remaining    {share} of the search space"
                     + ("" if log10 is None else f" (log10 {log10:.2f})"))  # fmt: skip
    print("\n".join(lines))


def _rate(result: dict) -> float:
    return result["nodes"] / result["elapsed_s"] if result["elapsed_s"] > 0 else 0.0


def _flowshop_lines(result: dict) -> list[str]:
    permutation = result["permutation"]
    return [
        f"instance     {result['instance']} ({result['n']} jobs x {result['m']} machines)",
        f"status       {result['status']}",
        f"makespan     {result['makespan'] if result['makespan'] is not None else '-'}",
        f"permutation  {' '.join(map(str, permutation)) if permutation else '-'}",
        f"lower bound  {result['lower_bound']}",
        f"nodes        {result['nodes']:,} decomposed, {result['leaves']:,} leaves, "
        f"{result['elapsed_s']:.2f} s ({format_rate(_rate(result))})",
        f"run          {result['run']}",
    ]


def _spatial_lines(result: dict) -> list[str]:
    def number(value) -> str:
        return "-" if value is None else repr(value)

    x = result["x"]
    return [
        f"problem      {result['problem']} ({result['dimension']} variables)",
        f"status       {result['status']}",
        f"objective    {number(result['objective'])}",
        f"x            {'-' if x is None else ' '.join(repr(v) for v in x)}",
        f"lower bound  {number(result['lower_bound'])}",
        f"gap          {number(result['gap_abs'])} (relative {number(result['gap_rel'])})",
        f"nodes        {result['nodes']:,} boxes bounded, {result['open_boxes']:,} open, {result['elapsed_s']:.2f} s "
        f"({_rate(result):,.0f} boxes/s)",
        f"run          {result['run']}",
    ]
