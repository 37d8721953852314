"""``pbbflow verify --instances CSV --run PATH``: a suite of verification instances decided on a
Dask cluster as one resumable job (its store: ``suite.py``); ``resume`` and ``info`` of a suite
store (``core.family.STORE_COMMANDS``).

One task per instance without a result, each on one core of a worker within its row's time limit;
each result is committed to the store as its task ends, with a progress line.  The first Ctrl-C or
SIGTERM (or ``--time-limit``) stops the tasks (their instances stay without a result; a second
signal does not wait for them to end) and leaves every committed one.  At the end the results table goes beside the store as
``<stem>.results.csv`` and ``<stem>.results.json``.

Exit codes: 0 every instance decided (sat or unsat); 3 stopped (``pbbflow resume`` continues) or
some instance undecided (timeout, unknown, error); 2 bad input or options (one line); 1 internal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import uuid
from typing import TYPE_CHECKING, Any, TextIO

from ..cli.runs import (
    EXIT_DONE,
    EXIT_LIMIT,
    error_log_path,
    first_run_notice,
    local_gpus,
    log_traceback,
    prepare_cluster,
    resume_command,
    run_cluster,
    slurm_options,
)
from ..cli.signals import StopSignals, starting
from ..cli.startup import Startup
from ..core.defaults import CHECKPOINT_EVERY_S
from ..core.text import printable
from ..workflow.cluster import SUITE_METADATA, slurm_job_script
from .problem import ProblemError
from .suite import (
    DECIDED,
    SuiteResult,
    SuiteStore,
    counts,
    decide,
    read_instances,
    results_table,
    stop_event_name,
    summary_line,
    warm_worker,
    write_results,
)

if TYPE_CHECKING:
    from distributed import Client

POLL_S = 0.05  # how often the driver looks for ended tasks and for a stop
STOP_GRACE_S = 10.0  # once stopped, how long the driver waits for the running tasks to end


def suite_command(args: argparse.Namespace) -> int:
    """``verify --instances CSV --run PATH``: read every instance, create the store, run the suite."""
    if args.network is not None or args.property is not None:
        raise ProblemError("verify --instances takes no network or property: the instance list names them")
    if args.run is None:
        raise ProblemError("--instances runs a suite as one resumable job: add --run PATH (its store)")
    if args.result is not None:
        raise ProblemError("--result is one instance's; a suite writes its results table beside its store")
    check_options(args)
    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    suite = read_instances(args.instances)  # every row read and parsed before the store exists
    store = SuiteStore.create(args.run, suite, overwrite=args.overwrite)
    args.store_written = True
    return drive_suite(store, args)


def check_options(args: argparse.Namespace) -> None:
    """ProblemError (exit 2) for a run option that a suite does not take (``resume`` has them all;
    ``verify`` lists none of the first three)."""
    if getattr(args, "node_limit", None) is not None:
        raise ProblemError("--node-limit: a suite's instances stop at their rows' time limits")
    if getattr(args, "checkpoint_every", CHECKPOINT_EVERY_S) != CHECKPOINT_EVERY_S:
        raise ProblemError("--checkpoint-every: a suite commits each instance's result as it ends")
    if getattr(args, "heuristic_workers", None) is not None:
        raise ProblemError("--heuristic-workers: a suite runs no side heuristic")
    gpu_workers(args)  # a --gpus the machine cannot serve: ClusterError (exit 2)


def gpu_workers(args: argparse.Namespace) -> bool:
    """Whether the suite's workers bound their boxes on a GPU each: on a local cluster where it has
    GPUs (``--gpus``; by default every visible one), on Slurm with ``--gpus-per-job``, on a given
    scheduler with ``--gpus`` of 1 or more."""
    if args.scheduler:
        return args.gpus not in (None, 0)
    if args.cluster == "slurm":
        return bool(args.gpus_per_job)
    return local_gpus(args) > 0


def resume(args: argparse.Namespace) -> int:
    """``resume SUITE``: run the instances without a result; a finished suite is answered as ``info``
    (exit 0 where every instance is decided, else 3)."""
    check_options(args)
    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    store = SuiteStore.open(args.run)
    results = store.results()
    if len(results) == len(store.instances):  # finished: shown, with the exit code of its answers
        info(args)
        return EXIT_DONE if all(r.answer in DECIDED for r in results.values()) else EXIT_LIMIT
    store.claim()  # refused here when another run holds it
    args.store_written = True
    return drive_suite(store, args)


def info(args: argparse.Namespace) -> int:
    """``info SUITE``: its results per instance and their counts (and the results table's files)."""
    store = SuiteStore.open(args.run)
    rows = results_table(store, store.results())
    document = _document(store, rows)
    written = _write(store, rows, document)
    if args.json:
        print(json.dumps(document))
        return EXIT_DONE
    table = [list(_TABLE)] + [["-" if row[key] is None else _cell(key, row[key]) for key in _TABLE] for row in rows]
    widths = [max(len(line[k]) for line in table) for k in range(len(_TABLE))]
    for line in table:
        print(printable("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()))
    print(printable(summary_line(rows)))
    if written:
        print(printable(f"results      {written[0]} {written[1]}"))
    return EXIT_DONE


_TABLE = ("index", "network", "property", "answer", "seconds")  # info's columns


def _cell(key: str, value: Any) -> str:
    return f"{value:.3f}" if key == "seconds" else str(value)


def drive_suite(store: SuiteStore, args: argparse.Namespace) -> int:
    """Run the store's instances without a result on the cluster the options name, committing each
    result as it ends; then the results table and the exit code (the module doc)."""
    try:
        results = store.results()
        todo = [i for i in range(len(store.instances)) if i not in results]
        out = sys.stderr if args.json else sys.stdout  # --json: stdout holds the JSON alone
        stopped = _run(store, args, todo, results, out)
        rows = results_table(store, store.results())
    finally:
        store.release()
    document = {**_document(store, rows), "stopped": stopped}
    written = _write(store, rows, document)
    if args.json:
        print(json.dumps(document))
    else:
        print(printable(summary_line(rows)))
        if written:
            print(printable(f"results      {written[0]} {written[1]}"))
    if stopped:
        print(f"pbbflow: stopped; continue with: {resume_command(store.path)}", file=sys.stderr)
    return EXIT_LIMIT if stopped or any(row["answer"] not in DECIDED for row in rows) else EXIT_DONE


def _run(
    store: SuiteStore, args: argparse.Namespace, todo: list[int], results: dict[int, SuiteResult], out: TextIO
) -> bool:
    """Decide the instances ``todo`` (``results``: the others', added to as results come); whether
    the suite was stopped.  The table goes to the dashboard page at the start and after each result."""
    if not todo:
        return False
    with starting():  # Dask and the engine load here, not with the parser
        from distributed import Event

        from .onnx_network import parse_onnx
        from .options import MinimizeOptions
        from .verify import FIRST_RUN, code_cached
        from .vnnlib import parse_vnnlib
    prepare_cluster(args)
    gpu = gpu_workers(args)
    first = (store.network_bytes(todo[0]), store.property_bytes(todo[0]))
    cached = code_cached(parse_onnx(first[0]), parse_vnnlib(first[1].decode("utf-8")), MinimizeOptions(parallel=False))
    notice = first_run_notice(args, None if cached else FIRST_RUN)
    with (
        StopSignals() as signals,
        Startup(
            lambda: run_cluster(args, processes=True),  # its tasks hold the GIL between kernels
            (warm_worker, (*first, gpu)),
            dashboard_after=args.dashboard_after,
            notice=notice,
        ) as startup,
    ):
        client = startup.ready()
        if not args.quiet:
            startup.tell_compile(sys.stderr)
        name = stop_event_name()
        event = Event(name, client=client)
        futures = _submit(client, store, todo, name, gpu)
        _publish(client, store, results, "live")
        deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
        pending, stopped_at, link = dict(futures), None, None
        while pending:
            if link is None and startup.link is not None and not args.quiet:
                link = startup.link  # the dashboard's page, once it is served
                print(f"pbbflow: watch the suite at {link}", file=sys.stderr)
            if stopped_at is None and (
                signals.stop.is_set() or (deadline is not None and time.monotonic() >= deadline)
            ):
                event.set()  # the tasks end undecided at once; their instances keep no result
                stopped_at = time.monotonic()
            for future in [f for f in pending if f.done()]:
                index = pending.pop(future)
                outcome = _outcome(future)
                if outcome.get("stopped"):
                    continue
                results[index] = result = store.commit(index, outcome)
                where = log_error(store, index, outcome)
                _publish(client, store, results, "live")
                if not args.quiet:
                    _progress(out, store, result, len(results), where)
            if stopped_at is not None and (signals.hurry.is_set() or time.monotonic() - stopped_at > STOP_GRACE_S):
                client.cancel(list(pending))  # a second signal: no wait for the tasks to end
                break
            time.sleep(POLL_S)
        _publish(client, store, results, "finished" if stopped_at is None else "stopped")
    return stopped_at is not None


def _publish(client: Client, store: SuiteStore, results: dict[int, SuiteResult], state: str) -> None:
    """The suite's table on the scheduler, for the dashboard page (``viz.dashboard.SuiteView``)."""
    rows = results_table(store, results)
    table = [[row["index"], row["network"], row["property"], row["answer"] or "", row["seconds"]] for row in rows]
    document = {"store": str(store.path), "state": state, "version": len(results), "counts": counts(rows)}
    client.set_metadata(list(SUITE_METADATA), {**document, "rows": table})


def _submit(client: Client, store: SuiteStore, todo: list[int], stop: str, gpu: bool) -> dict:
    """One ``decide`` task per instance of ``todo`` (``gpu``: its boxes bounded on its worker's GPU),
    each file's bytes sent to the cluster once."""
    files: dict[tuple[str, str], Any] = {}

    def scattered(kind: str, digest: str, read) -> Any:
        if (kind, digest) not in files:
            files[kind, digest] = client.scatter(read(), hash=False)
        return files[kind, digest]

    tag = uuid.uuid4().hex
    futures = {}
    for index in todo:
        instance = store.instances[index]
        network = scattered("network", instance.network_sha256, lambda: store.network_bytes(index))  # noqa: B023
        prop = scattered("property", instance.property_sha256, lambda: store.property_bytes(index))  # noqa: B023
        names = (instance.network, instance.property)
        future = client.submit(
            decide, network, prop, names, instance.timeout_s, stop, gpu, key=f"pbbflow-suite-{tag}-{index}", pure=False
        )
        futures[future] = index
    return futures


def _outcome(future) -> dict:
    """A task's dict, or an ``error`` result where the task itself failed (a worker lost, ...)."""
    error = future.exception()
    if error is None:
        return future.result()
    reason = printable(" ".join(f"the task failed: {type(error).__name__}: {error}".split()))
    details = "".join(traceback.format_exception(type(error), error, future.traceback()))
    return {"answer": "error", "reason": reason, "seconds": 0.0, "nodes": 0, "x": None, "y": None, "traceback": details}


def log_error(store: SuiteStore, index: int, outcome: dict) -> str | None:
    """Append the traceback of an instance's internal error, if any, to the log beside the suite's
    store (:func:`pbbflow.cli.runs.error_log_path`); where it went, in words, or None."""
    details = outcome.get("traceback")
    if not details:
        return None
    instance = store.instances[index]
    return log_traceback(
        error_log_path(store.path), f"instance {index} ({instance.network}, {instance.property})\n{details}"
    )


def _progress(out: TextIO, store: SuiteStore, result: SuiteResult, done: int, where: str | None = None) -> None:
    instance = store.instances[result.index]
    line = (
        f"[{done}/{len(store.instances)}] {instance.network} {instance.property} {result.answer} {result.seconds:.2f} s"
    )
    print(printable(line if where is None else f"{line} ({where})"), file=out, flush=True)


def _document(store: SuiteStore, rows: list[dict]) -> dict:
    """The suite as JSON: its store, source, counts, total seconds and one row per instance."""
    return {
        "store": str(store.path),
        "source": store.source,
        "counts": counts(rows),
        "total_s": round(sum(row["seconds"] or 0.0 for row in rows), 6),
        "instances": rows,
    }


def _write(store: SuiteStore, rows: list[dict], document: dict) -> tuple | None:
    """The results table's two files, written; None (with a line on stderr) where they cannot be."""
    try:
        return write_results(store.path, rows, document)
    except OSError as error:
        print(printable(f"pbbflow: cannot write the results table beside {store.path} ({error})"), file=sys.stderr)
        return None
