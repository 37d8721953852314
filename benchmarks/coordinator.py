"""Benchmark: the coordinator's cost per checkpoint and the message rate it sustains, as JSON.

1. One checkpoint carrying K intervals at n = 50 (a GPU worker's many IVMs, each a third
   of the way into its interval): decoding the message, intersecting it with the
   coordinator's copy, deciding, encoding the reply - by the plugin's handler called
   directly (answering "continue", and splitting for a waiting explorer), and as a
   scheduler RPC from a worker (in-process cluster, round trip).
   The same for a spatial explorer's K boxes in d = 4 (a grid of the unit box, every second box
   bisected since the last checkpoint): the report is checked against the coordinator's copy
   (``BoxWork.accept``).
2. Many fake explorers (tasks on worker threads) checkpointing as fast as they can with
   1-interval and 16,384-interval work units: handler calls per second sustained.

The goal in issue 3: <= 5 ms for K = 16,384, and enough throughput for 1,000 GPU workers
checkpointing every 10 s (100 messages/s) at < 50 % of the scheduler's time.

    python benchmarks/coordinator.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from distributed import Client, LocalCluster, get_worker
from distributed.utils import sync

from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.spatial.boxes import BoxSet, bisect_many
from pbbflow.workflow.coordinator import Coordinator

N = 50


def spread_unit(k: int) -> WorkUnit:
    """K disjoint intervals spread over [0, 50!), like the intervals of K IVMs."""
    total = int(factorial(N))
    step = total // k
    return WorkUnit(N, [(i * step, i * step + step // 2) for i in range(k)])


def progressed(unit: WorkUnit) -> WorkUnit:
    """The unit after an explorer went some way into each of its intervals."""
    return WorkUnit(N, [(a + (b - a) // 3, b) for a, b in unit])


def handler_checkpoint_ms(k: int, repeats: int = 7) -> dict:
    """The plugin's checkpoint handler, called directly: decode, intersect, decide, encode."""
    unit = spread_unit(k)
    message = progressed(unit).to_bytes()
    times = {"continue": [], "split_for_a_waiter": []}
    for _ in range(repeats):
        for case, sample in times.items():
            coordinator = Coordinator()
            coordinator.open_run("bench", kind="flowshop", space={"n": N}, work=unit.to_bytes(), ub=10**6)
            coordinator.checkpoint("bench", "gpu-0", "w", b"", capacity=k)  # hands the whole unit out
            if case == "split_for_a_waiter":
                coordinator.checkpoint("bench", "gpu-1", "w", b"")  # nothing left: it waits
            started = time.perf_counter()
            reply = coordinator.checkpoint("bench", "gpu-0", "w", message, nodes=10**6, capacity=k)
            sample.append((time.perf_counter() - started) * 1e3)
            assert reply["action"] == ("continue" if case == "continue" else "replace")
    return {
        "intervals": k,
        "message_bytes": len(message),
        **{f"handler_ms_median_{case}": round(statistics.median(t), 3) for case, t in times.items()},
    }


def spatial_checkpoint_ms(k: int, d: int = 4, repeats: int = 7) -> dict:
    """The handler for a spatial checkpoint of about ``k`` boxes that refines a copy of ``k / 1.5``."""
    lo, hi, scale = np.zeros((1, d)), np.ones((1, d)), np.ones(d)
    while len(lo) < k / 1.5:
        lo, hi, _ = bisect_many(lo, hi, scale)
    copy = BoxSet(lo, hi, np.zeros(len(lo)))
    half_lo, half_hi, _ = bisect_many(lo[1::2], hi[1::2], scale)
    report = BoxSet(
        np.concatenate([lo[0::2], half_lo]), np.concatenate([hi[0::2], half_hi]), np.zeros(len(lo[0::2]) + len(half_lo))
    )
    times = []
    for _ in range(repeats):
        coordinator = Coordinator()
        coordinator.open_run(
            "bench", kind="spatial", space={"lower": [0.0] * d, "upper": [1.0] * d}, work=copy.to_bytes(), ub=0.0
        )
        coordinator.checkpoint("bench", "e", "w", b"", capacity=len(copy))  # hands the whole copy out
        started = time.perf_counter()
        reply = coordinator.checkpoint("bench", "e", "w", report.to_bytes(), nodes=len(copy), capacity=len(copy))
        times.append((time.perf_counter() - started) * 1e3)
        assert reply["action"] == "continue"
    return {
        "boxes": len(report),
        "copy_boxes": len(copy),
        "d": d,
        "message_bytes": len(report.to_bytes()),
        "handler_ms_median_continue": round(statistics.median(times), 3),
    }


def rpc_checkpoint_ms(client: Client, k: int, repeats: int = 5) -> float:
    unit = spread_unit(k)
    client.sync(
        client.scheduler.pbbflow_open, run="bench-rpc", kind="flowshop", space={"n": N}, work=unit.to_bytes(), ub=10**6
    )

    def hammer(message: bytes, repeats: int) -> list[float]:
        worker = get_worker()
        call = worker.scheduler.pbbflow_checkpoint
        sync(worker.loop, call, run="bench-rpc", explorer="gpu-0", worker=worker.address, remaining=b"", capacity=k)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            sync(
                worker.loop,
                call,
                run="bench-rpc",
                explorer="gpu-0",
                worker=worker.address,
                remaining=message,
                capacity=k,
            )
            times.append((time.perf_counter() - started) * 1e3)
        return times

    times = client.submit(hammer, progressed(unit).to_bytes(), repeats, pure=False).result()
    client.sync(client.scheduler.pbbflow_close, run="bench-rpc")
    return round(statistics.median(times), 2)


def message_rate(client: Client, explorers: int, intervals: int, seconds: float) -> dict:
    """Fake explorers, each holding ``intervals`` intervals, checkpointing in a loop; returns calls/s.

    Workers and scheduler share one process (and its GIL) here, so this is a lower bound on
    what a scheduler process alone sustains.
    """
    unit = spread_unit(explorers * intervals)
    client.sync(
        client.scheduler.pbbflow_open, run="bench-rate", kind="flowshop", space={"n": N}, work=unit.to_bytes(), ub=10**6
    )

    def fake_explorer(name: str, seconds: float) -> int:
        worker = get_worker()
        call = worker.scheduler.pbbflow_checkpoint
        reply = sync(
            worker.loop, call, run="bench-rate", explorer=name, worker=worker.address, remaining=b"", capacity=intervals
        )
        work, calls, deadline = reply["work"] or b"", 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            sync(
                worker.loop,
                call,
                run="bench-rate",
                explorer=name,
                worker=worker.address,
                remaining=work,
                nodes=1,
                capacity=intervals,
            )
            calls += 1
        return calls

    futures = [client.submit(fake_explorer, f"fake-{i}", seconds, pure=False) for i in range(explorers)]
    calls = sum(client.gather(futures))
    client.sync(client.scheduler.pbbflow_close, run="bench-rate")
    return {
        "fake_explorers": explorers,
        "intervals_each": intervals,
        "seconds": seconds,
        "calls_per_s": round(calls / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 256, 4096, 16384])
    args = parser.parse_args()
    rows = [handler_checkpoint_ms(k) for k in args.sizes]
    spatial_checkpoint_ms(2)  # numba's code of the check loaded (or compiled) first
    spatial = [spatial_checkpoint_ms(k) for k in args.sizes]
    with (
        LocalCluster(n_workers=1, threads_per_worker=8, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(Coordinator())
        for row in rows:
            row["rpc_round_trip_ms_median"] = rpc_checkpoint_ms(client, row["intervals"])
        rates = [message_rate(client, explorers=8, intervals=k, seconds=5.0) for k in (1, 16384)]
    needed = 1000 / 10  # 1,000 GPU workers every 10 s
    big = next((r for r in rows if r["intervals"] == 16384), None)
    print(
        json.dumps(
            {
                "benchmark": "coordinator",
                "n": N,
                "checkpoint_cost": rows,
                "spatial_checkpoint_cost": spatial,
                "message_rate": rates,
                "scheduler_busy_share_at_goal_load_from_rate": round(needed / rates[-1]["calls_per_s"], 3),
                "goal": {"ms_per_16384_interval_checkpoint": 5.0, "messages_per_s_for_1000_gpu_workers": needed},
                "scheduler_busy_share_at_goal_load_16384_intervals": None
                if big is None
                else round(needed * big["handler_ms_median_continue"] / 1e3, 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
