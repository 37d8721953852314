"""Benchmark: the coordinator's cost per checkpoint and the message rate it sustains, as JSON.

1. One checkpoint carrying K intervals at n = 50 (a GPU worker's many IVMs): decoding the
   message, intersecting it with the coordinator's copy, encoding the reply - on the ledger
   directly, and as a scheduler RPC from a worker (in-process cluster, round trip).
2. Many fake explorers (tasks on worker threads) checkpointing as fast as they can with a
   1-interval work unit: handler calls per second, and the scheduler's time per call.

The goal in issue 3: <= 5 ms for K = 16,384, and enough throughput for 1,000 GPU workers
checkpointing every 10 s (100 messages/s) at < 50 % of the scheduler's time.

    python benchmarks/coordinator.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from distributed import Client, LocalCluster, get_worker
from distributed.utils import sync

from pbbflow.search.factoradic import factorial
from pbbflow.search.intervals import WorkUnit
from pbbflow.workflow.coordinator import Coordinator
from pbbflow.workflow.ledger import Ledger

N = 50


def spread_unit(k: int) -> WorkUnit:
    """K disjoint intervals spread over [0, 50!), like the intervals of K IVMs."""
    total = int(factorial(N))
    step = total // k
    return WorkUnit(N, [(i * step, i * step + step // 2) for i in range(k)])


def ledger_checkpoint_ms(k: int, repeats: int = 5) -> dict:
    unit = spread_unit(k)
    message = unit.to_bytes()
    times = []
    for _ in range(repeats):
        ledger = Ledger(unit, ub=10**6)
        ledger.checkpoint("gpu-0", "w", WorkUnit.empty(N))  # hands the whole unit out
        started = time.perf_counter()
        reply = ledger.checkpoint("gpu-0", "w", WorkUnit.from_bytes(N, message), nodes=10**6)
        reply.work.to_bytes()
        times.append((time.perf_counter() - started) * 1e3)
    return {"intervals": k, "message_bytes": len(message), "ledger_ms_median": round(statistics.median(times), 2)}


def rpc_checkpoint_ms(client: Client, k: int, repeats: int = 5) -> float:
    unit = spread_unit(k)
    client.sync(client.scheduler.pbbflow_open, run="bench-rpc", n=N, work=unit.to_bytes(), ub=10**6)

    def hammer(message: bytes, repeats: int) -> list[float]:
        worker = get_worker()
        call = worker.scheduler.pbbflow_checkpoint
        sync(worker.loop, call, run="bench-rpc", explorer="gpu-0", worker=worker.address, remaining=b"")
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            sync(worker.loop, call, run="bench-rpc", explorer="gpu-0", worker=worker.address, remaining=message)
            times.append((time.perf_counter() - started) * 1e3)
        return times

    times = client.submit(hammer, unit.to_bytes(), repeats, pure=False).result()
    client.sync(client.scheduler.pbbflow_close, run="bench-rpc")
    return round(statistics.median(times), 2)


def message_rate(client: Client, explorers: int, seconds: float) -> dict:
    """Fake explorers checkpointing a 1-interval unit in a loop; returns calls/s."""
    client.sync(client.scheduler.pbbflow_open, run="bench-rate", n=N, work=WorkUnit.full(N).to_bytes(), ub=10**6,
                pieces=explorers)  # fmt: skip

    def fake_explorer(name: str, seconds: float) -> int:
        worker = get_worker()
        call = worker.scheduler.pbbflow_checkpoint
        reply = sync(worker.loop, call, run="bench-rate", explorer=name, worker=worker.address, remaining=b"")
        unit, calls, deadline = reply["work"] or b"", 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            sync(worker.loop, call, run="bench-rate", explorer=name, worker=worker.address, remaining=unit, nodes=1)
            calls += 1
        return calls

    futures = [client.submit(fake_explorer, f"fake-{i}", seconds, pure=False) for i in range(explorers)]
    calls = sum(client.gather(futures))
    client.sync(client.scheduler.pbbflow_close, run="bench-rate")
    return {"fake_explorers": explorers, "seconds": seconds, "calls_per_s": round(calls / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 256, 4096, 16384])
    args = parser.parse_args()
    ledger = [ledger_checkpoint_ms(k) for k in args.sizes]
    with LocalCluster(n_workers=1, threads_per_worker=8, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:  # fmt: skip
        client.register_plugin(Coordinator())
        for row in ledger:
            row["rpc_round_trip_ms_median"] = rpc_checkpoint_ms(client, row["intervals"])
        rate = message_rate(client, explorers=8, seconds=5.0)
    needed = 1000 / 10  # 1,000 GPU workers every 10 s
    big = next((r for r in ledger if r["intervals"] == 16384), None)
    print(json.dumps({
        "benchmark": "coordinator",
        "n": N,
        "checkpoint_cost": ledger,
        "message_rate_small_units": rate,
        "goal": {"ms_per_16384_interval_checkpoint": 5.0, "messages_per_s_for_1000_gpu_workers": needed},
        "scheduler_busy_share_at_goal_load_16384_intervals":
            None if big is None else round(needed * big["ledger_ms_median"] / 1e3, 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
