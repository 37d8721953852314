"""The ``pbbflow`` command: the commands on any run store (``plot``, ``resume``, ``info``) and each
family's own (``core.family.Commands``: flow shop's ``solve`` and ``heuristic``, spatial's ``minimize``).

Exit codes: 0 the search finished, 3 it stopped at a limit or on a signal (resumable),
2 usage or input error (one line on stderr), 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from ..core.errors import PbbflowError
from ..core.family import Commands, StoreCommands, family_commands, store_commands
from ..core.files import FileRefused, read_json
from ..core.text import printable
from ..storage.runstore import RunStore
from ..workflow.cluster import slurm_job_script
from ..workflow.fastexit import exit_without_final_gc
from .arguments import RunHelp, add_run_options
from .results import history_summary, print_history, print_json, print_result
from .runs import (
    EXIT_DONE,
    EXIT_INTERNAL,
    EXIT_LIMIT,
    EXIT_USAGE,
    drive_run,
    explorers_here,
    first_run_notice,
    prepare_cluster,
    report_internal_error,
    resume_command,
    run_cluster,
    slurm_options,
)
from .signals import StopSignals, starting
from .startup import Startup

# the shared run options' help for resume, which continues a run of any family
RESUME_RUNS = RunHelp(
    nodes="decomposed this many nodes (a spatial run: explored this many boxes)",
    gpus="local GPUs, one explorer each, of --ivms IVMs for a flow-shop run (default: all GPUs present, "
    "CPU workers otherwise; 0: CPU only)",
    heuristic_workers="side-heuristic tasks beside the search: iterated greedy for a flow-shop run (default: one "
    "beside each GPU worker), local solves from random starts for a spatial run (default: none); on CPU "
    "workers they replace explorers; 0: none",
)


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line: the error and where the help is, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} ({self.prog} --help for usage)\n")


class _CommandParser(_Parser):
    """A command's parser: it reports unknown arguments itself, under the command's name; the
    options named by :meth:`take_dash_values` take their next argument even where it starts with -."""

    dash_values: frozenset[str] = frozenset()

    def take_dash_values(self, *options: str) -> None:
        """``OPTION VALUE`` is ``OPTION=VALUE`` for these options (argparse reads ``--domain -3:3``
        as two options otherwise)."""
        self.dash_values = frozenset(options)

    def parse_known_args(self, args=None, namespace=None):
        if self.dash_values:
            args = list(sys.argv[1:] if args is None else args)
            for i in range(len(args) - 1, 0, -1):
                if args[i - 1] in self.dash_values and args[i][:1] == "-" and args[i][1:2] in tuple("0123456789."):
                    args[i - 1 : i + 1] = [f"{args[i - 1]}={args[i]}"]
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command.  The help lists them by one rule: the first family's commands
    (flow shop's, the family pbbflow began with), then the commands on a run store of any family,
    then every other family's, in the order their kinds were made known
    (``core.family.family_commands``): a family added later appends its commands and never
    reorders the ones a user knows."""
    parser = _Parser(
        prog="pbbflow",
        description="Exact parallel branch-and-bound: permutation flow shops "
        "(solve) and continuous global optimization (minimize).",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    families = family_commands()
    first, *others = families
    first.add_commands(commands)
    _add_store_commands(commands, families)
    for family in others:
        family.add_commands(commands)
    # every family's run settings hold, with their defaults, for every command: drive_run passes them to any run
    settings = argparse.ArgumentParser(add_help=False)
    _add_settings(families, settings)
    defaults = vars(settings.parse_args([]))
    parser.set_defaults(interrupted="pbbflow: interrupted", run_settings=tuple(defaults), **defaults)
    return parser


def _add_settings(families: list[Commands], group: argparse._ActionsContainer) -> None:
    """Every family's run settings (``Commands.add_run_settings``), as options of a run of any family."""
    for family in families:
        family.add_run_settings(group, any_family=True)


def _add_store_commands(commands: argparse._SubParsersAction, families: list[Commands]) -> None:
    """``plot``, ``resume`` and ``info``: the commands on a run store of any family."""
    g = commands.add_parser(
        "plot",
        help="PNGs of a run: the search history, and the best schedule's Gantt chart "
        "(flow shop) or the open boxes of a problem of two variables (spatial)",
        description="PNGs of a run of either family, live or finished: the search history "
        "(history.png), and the best schedule's Gantt chart (gantt.png) of a flow-shop run (pbbflow "
        "solve) or the open boxes (boxes.png) of a continuous run (pbbflow minimize --run, the spatial "
        "family) of a problem of two variables.",
    )
    g.add_argument("run", type=Path, help="the run store (run.zarr), live or finished")
    g.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder for the PNGs (gantt.png or boxes.png, and history.png)",
    )
    g.set_defaults(handler=_plot)
    r = commands.add_parser(
        "resume",
        help="continue a run from its last checkpoint, on any cluster",
        description="Continue a run from its last checkpoint, on any cluster: a flow-shop run (pbbflow "
        "solve) or a continuous one (pbbflow minimize --run, the spatial family), as its run store "
        "says.  A finished run is answered at once, as by info.  An option that names one family's "
        "runs applies to those only.  A verification suite's store (pbbflow verify --instances) runs "
        "the instances without a result.",
    )
    r.add_argument("run", type=Path, help="the run store (run.zarr)")
    add_run_options(r, RESUME_RUNS, lambda group: _add_settings(families, group))
    r.set_defaults(handler=_resume)
    i = commands.add_parser(
        "info",
        help="show a run's state as of its last checkpoint",
        description="Show a run's state as of its last checkpoint (its result, the checkpoint, its "
        "options and a few rows of its history): a flow-shop run (pbbflow solve) or a continuous one "
        "(pbbflow minimize --run, the spatial family), each as its family writes it; a verification "
        "suite's store (pbbflow verify --instances): its answer and seconds per instance, with the counts.",
    )
    i.add_argument("run", type=Path, help="the run store (run.zarr)")
    i.add_argument("--json", action="store_true", help="print the state as JSON")
    i.set_defaults(handler=_info)


def _other_store(path: Path) -> StoreCommands | None:
    """The commands on the store at ``path`` where its root names a kind other than the run
    store's (a verification suite's); None otherwise (a run store, or none: ``RunStore.open`` says)."""
    try:
        header = read_json(path / "zarr.json", kind="a metadata file")["attributes"]["pbbflow"]
        return store_commands(header["kind"])
    except (FileRefused, KeyError, TypeError):
        return None


def _resume(args: argparse.Namespace) -> int:
    other = _other_store(args.run)
    if other is not None:
        return other.resume(args)
    if args.dry_run:
        print(slurm_job_script(slurm_options(args)))
        return EXIT_DONE
    with starting():  # Dask, with the driver: loaded by this command, not by the parser
        from ..workflow.run import finished

    store = RunStore.open(args.run)
    if finished(store):  # (or damaged: RunStoreError): answered without a cluster
        return _info(args)
    instance = store.instance
    refusal = instance.no_gpu()
    explorers = explorers_here(args, refusal)  # refuses a bad GPU request before the store is claimed
    store.claim()  # refused here when another run holds it or it cannot be written
    args.store_written = True
    prepare_cluster(args)  # in this thread: start-up's opens the cluster
    first_run = instance.first_run_code(explorers)
    with (
        StopSignals() as signals,
        Startup(
            lambda: run_cluster(args, refusal),
            instance.worker_code(),
            dashboard_after=args.dashboard_after,
            notice=first_run_notice(args, first_run),
        ) as startup,
    ):
        startup.load_client_code(instance.client_code)
        return drive_run(store, args, startup, signals)


def _plot(args: argparse.Namespace) -> int:
    with starting():  # matplotlib loads only for this command
        from ..viz.plots import plot_run

    store = RunStore.open(args.run)
    try:
        written = plot_run(store, args.out)
    except OSError as error:  # the output folder cannot be made or written
        message = f"pbbflow: error: {args.out}: cannot write the plots there ({error.strerror})"
        print(printable(message), file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(printable(str(path)))
    return EXIT_DONE


def _info(args: argparse.Namespace) -> int:
    other = _other_store(args.run)
    if other is not None:
        return other.info(args)
    with starting():  # Dask, with the driver: loaded by this command, not by the parser
        from ..workflow.run import result_of

    store = RunStore.open(args.run)
    result = result_of(store)
    latest = store.latest()
    history = history_summary(latest.series)
    if args.json:
        print_json(result, options=store.options, checkpoint=latest.seq, history=history)
    else:
        print_result(result)
        print(f"checkpoint   {latest.seq}")
        print(f"options      {json.dumps(store.options)}")
        print_history(history, store.kind)
    return EXIT_DONE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pbbflow`` console script.

    Where stdout's reader goes away early (``pbbflow info RUN | head -1``), the output left is
    dropped quietly: the exit code is the command's if it had finished, else 1.
    """
    code = EXIT_INTERNAL
    try:
        try:
            code = _main(argv)
        except SystemExit as done:  # argparse's, after --help or a usage error
            code = int(done.code or 0)
            raise
        finally:
            sys.stdout.flush()  # here, where a reader that has gone can still be handled
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit writes nowhere
    return code


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # after the start-up handler (cli/__init__.py), before any command ran
        print("pbbflow: interrupted while starting; nothing was changed", file=sys.stderr)
        return EXIT_LIMIT
    exit_without_final_gc()
    try:
        return args.handler(args)
    except PbbflowError as error:  # one line meant for the user (core.errors)
        print(f"pbbflow: error: {printable(str(error))}", file=sys.stderr)  # names and paths from files
        return EXIT_USAGE
    except KeyboardInterrupt:
        if getattr(args, "store_written", False):
            print(f"pbbflow: interrupted; the last checkpoint stands: {resume_command(args.run)}", file=sys.stderr)
        else:  # a command's parser may say more (its default ``interrupted``)
            print(args.interrupted, file=sys.stderr)
        return EXIT_LIMIT
    except BrokenPipeError:  # stdout's reader went away: main() ends quietly
        raise
    except Exception as error:  # noqa: BLE001 (pbbflow's own fault, or a missing package: one line, exit 1)
        return report_internal_error(error, args.run if getattr(args, "store_written", False) else None)


if __name__ == "__main__":
    sys.exit(main())
