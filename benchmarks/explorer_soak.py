"""Soak: explorations stopped and resumed at random, counting failures; prints JSON.

Two parts, each for ``--seconds``:

* ``issue12``: issue 12's 200-exploration script, repeated: a Taillard instance (ta011,
  ta031, ta034, ta035, ta041), UB = optimum + 0, 1, 5 or 30, 1-3 threads, chunks of 1e-6 or
  1e-4 s, a node budget of 1-20,000 or a time budget of 1-50 ms, then a resume of the
  remainder to its end.  A failure: an exception, a remainder outside the unit given, a
  wrong optimum, or (UB = optimum) a node count other than the uninterrupted run's.
* ``chains``: ``tests/stress.py``'s stop-and-resume chains on random instances of up to 50
  jobs and on ta011 / ta041 at their optima (node and leaf counts against one uninterrupted
  run), with every way of stopping.
* ``gpu`` (``--parts gpu``, on a machine with an NVIDIA GPU): ``tests/stress.py``'s GPU chains (launches of 1-4 steps, stops by
  node budget, by ``on_launch`` or by time, device-side steals, resumes on fresh explorers of
  up to 4,096 IVMs) on ta011 / ta041 at their optima and ta041 from above.

    python benchmarks/explorer_soak.py --seconds 300                   # issue12 and chains
    python benchmarks/explorer_soak.py --seconds 120 --parts gpu       # the GPU chains
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np  # noqa: E402
from stress import check_books, explore_in_pieces, gpu_in_pieces  # noqa: E402

from pbbflow.flowshop.evaluation import neh  # noqa: E402
from pbbflow.flowshop.explorer import explore  # noqa: E402
from pbbflow.flowshop.intervals import WorkUnit  # noqa: E402
from pbbflow.flowshop.taillard import taillard_instance  # noqa: E402

OPTIMA = {11: 1582, 31: 2724, 34: 2751, 35: 2863, 41: 2991}  # ../shared/data/taillard/bounds.csv


def issue12_case(rng: random.Random, whole_nodes: dict) -> None:
    """One exploration cut by a random budget, then the rest: raises on any failure."""
    number = rng.choice(sorted(OPTIMA))
    p = taillard_instance(number).p
    ub = OPTIMA[number] + rng.choice((0, 1, 5, 30))
    options = {"threads": rng.randint(1, 3), "chunk_seconds": rng.choice((1e-6, 1e-4))}
    if rng.random() < 0.5:
        options["max_nodes"] = rng.randint(1, 20_000)
    else:
        options["max_seconds"] = rng.uniform(0.001, 0.05)
    first = explore(p, WorkUnit.full(p.shape[0]), ub, **options)
    check_books(WorkUnit.full(p.shape[0]), first.remaining)
    second_ub = first.best_makespan or ub
    second = explore(p, first.remaining, second_ub, threads=options["threads"])
    check_books(first.remaining, second.remaining)
    assert not second.remaining
    best = second.best_makespan or first.best_makespan
    if ub > OPTIMA[number]:
        assert best == OPTIMA[number], f"ta{number:03d} from {ub}: found {best}"
    else:
        assert best is None
        assert first.nodes + second.nodes == whole_nodes[number], f"ta{number:03d}: node count"


def chains_case(rng: random.Random, whole_nodes: dict) -> None:
    """One stop-and-resume chain (tests/stress.py) on a random instance or ta011 / ta041."""
    if rng.random() < 0.3:
        number = rng.choice((11, 41))
        p, ub, nodes = taillard_instance(number).p, OPTIMA[number], whole_nodes[number]
    else:
        rs = random.Random(rng.random())
        n, m = rs.randint(6, 50), rs.randint(3, 15)
        p = np.array([[rs.randint(1, 99) for _ in range(m)] for _ in range(n)], np.int32)
        found = explore(p, WorkUnit.full(n), neh(p)[0], max_nodes=200_000)
        if found.remaining:
            return
        ub = found.best_makespan or neh(p)[0]
        nodes = explore(p, WorkUnit.full(n), ub).nodes
    pieces = explore_in_pieces(p, ub, rng)
    assert pieces.best is None and pieces.nodes == nodes, "node count"


def gpu_case(rng: random.Random, whole_nodes: dict) -> None:
    """One GPU stop-and-resume chain: node counts against the CPU's uninterrupted run."""
    number, above = rng.choice(((11, 0), (41, 0), (41, 0), (41, 1), (41, 5)))
    p = taillard_instance(number).p
    pieces = gpu_in_pieces(p, OPTIMA[number] + above, rng, max_ivms=4096, max_nodes=200_000)
    if above:
        assert pieces.best == OPTIMA[number], f"ta{number:03d} from {OPTIMA[number] + above}: found {pieces.best}"
    else:
        assert pieces.best is None and pieces.nodes == whole_nodes[number], f"ta{number:03d}: node count"


def soak(part, seconds: float, seed: int, whole_nodes: dict) -> dict:
    rng = random.Random(seed)
    runs, failures, examples = 0, 0, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            part(rng, whole_nodes)
        except Exception as error:  # noqa: BLE001 (every failure is counted and shown)
            failures += 1
            if len(examples) < 5:
                examples.append("".join(traceback.format_exception_only(error)).strip()[:300])
        runs += 1
    return {"runs": runs, "failures": failures, "examples": examples}


PARTS = {"issue12": issue12_case, "chains": chains_case, "gpu": gpu_case}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per part (default: 60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", nargs="+", choices=sorted(PARTS), default=["issue12", "chains"])
    args = parser.parse_args()
    whole = {
        k: explore(taillard_instance(k).p, WorkUnit.full(taillard_instance(k).n), ub).nodes for k, ub in OPTIMA.items()
    }
    out = {
        "benchmark": "explorer_soak",
        "python": platform.python_version(),
        "seconds_per_part": args.seconds,
        "seed": args.seed,
    }
    if "gpu" in args.parts:
        from pbbflow.gpu.flowshop.explorer import device_summary

        out["device"] = device_summary()
    for part in args.parts:
        out[part] = soak(PARTS[part], args.seconds, args.seed, whole)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
