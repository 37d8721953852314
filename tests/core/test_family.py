"""A third family plugs into the workflow without touching it: a toy family, defined here, whose
work is integer ranges and whose search is an exhaustive minimum of a function on them, runs
through the coordinator's ledger, explorer tasks and a side-heuristic task on a Dask cluster.
Its node count must equal the size of the space: nothing explored twice, nothing lost.  It adds a
command of its own to ``pbbflow``."""

import json
import math
import sys
import threading
import time
import types

import numpy as np
import pytest
from distributed import Client, LocalCluster

from pbbflow.cli.main import build_parser, main
from pbbflow.core import family as family_module
from pbbflow.core.compiling import CodeLoad
from pbbflow.core.family import family, register, work_space
from pbbflow.core.result import Result, Status
from pbbflow.storage.runstore import RunStore
from pbbflow.viz.dashboard import HistoryView, RunPage
from pbbflow.workflow.cluster import connected_workers
from pbbflow.workflow.coordinator import PLUGIN_NAME, Coordinator
from pbbflow.workflow.history import RunHistory
from pbbflow.workflow.ledger import Ledger
from pbbflow.workflow.run import create_run, drive, result_of
from pbbflow.workflow.tasks import explorer_task, heuristic_task

SIZE = 200_000
TOY_FIELDS = ("status", "minimum=value", "k=solution", "nodes", "remaining_fraction", "remaining_log10")


def value(k: np.ndarray) -> np.ndarray:
    """The toy objective on integers: a scrambled parabola with its minimum somewhere inside."""
    return (k * 7919 % 100_003 - 61_234) ** 2 + k % 13


class Ranges:
    """Disjoint half-open integer ranges, as a (k, 2) int64 array (the toy WorkSet)."""

    def __init__(self, bounds: np.ndarray, space: "RangeSpace") -> None:
        self.bounds, self.space = np.asarray(bounds, dtype=np.int64).reshape(-1, 2), space

    def __len__(self) -> int:
        return len(self.bounds)

    def to_bytes(self) -> bytes:
        return self.bounds.astype("<i8").tobytes()

    def weight(self) -> float:
        return float((self.bounds[:, 1] - self.bounds[:, 0]).sum())

    def split_half(self):
        return Ranges(self.bounds[0::2], self.space), Ranges(self.bounds[1::2], self.space)

    def split_piece(self, min_split: int):
        if not len(self):
            return None
        i = int(np.argmax(self.bounds[:, 1] - self.bounds[:, 0]))
        a, b = self.bounds[i]
        if b - a < max(2, min_split):
            return None
        kept = self.bounds.copy()
        kept[i, 1] = (a + b) // 2
        return Ranges(kept, self.space), Ranges([[(a + b) // 2, b]], self.space)

    def pieces(self):
        return [Ranges(row, self.space) for row in self.bounds]

    def accept(self, reported: "Ranges") -> "Ranges":
        return reported


class RangeSpace:
    kind = "toy"

    def __init__(self, size: int) -> None:
        self.size = size

    def params(self) -> dict:
        return {"size": self.size}

    def empty(self) -> Ranges:
        return Ranges(np.zeros((0, 2)), self)

    def decode(self, data: bytes) -> Ranges:
        bounds = np.frombuffer(data, dtype="<i8").reshape(-1, 2)
        if np.any(bounds[:, 0] >= bounds[:, 1]) or np.any(bounds < 0) or np.any(bounds > self.size):
            raise ValueError("toy: malformed ranges")
        return Ranges(bounds, self)

    def union(self, sets) -> Ranges:
        parts = [s.bounds for s in sets]
        return Ranges(np.concatenate(parts) if parts else np.zeros((0, 2)), self)

    def remaining_fraction(self, sets) -> float:
        return sum(s.weight() for s in sets) / self.size

    def remaining_log10(self, sets) -> float | None:
        left = self.remaining_fraction(sets)
        return math.log10(left) if left else None

    def lower_bound(self, sets) -> None:
        return None


class ScanEngine:
    """Scans its ranges in chunks of 1,000 integers, 5 ms each (at least 1 s for the space: a run
    stopped at its first progress report stops in its middle, even on a loaded machine); a node is
    one integer evaluated."""

    capacity = 1

    def __init__(self) -> None:
        self.space, self.left = RangeSpace(SIZE), np.zeros((0, 2), dtype=np.int64)

    def load(self, data: bytes) -> None:
        self.left = self.space.decode(data).bounds.copy()

    def run(self, ub, seconds: float, report, waiting, max_nodes=None):
        nodes, best, ends = 0, None, time.monotonic() + seconds
        while len(self.left) and time.monotonic() < ends and (max_nodes is None or nodes < max_nodes):
            a, b = self.left[0]
            stop = min(b, a + 1000)
            values = value(np.arange(a, stop))
            time.sleep(0.005)  # a search that takes a while (a run can be stopped in its middle)
            nodes += stop - a
            i = int(np.argmin(values))
            if values[i] < ub and (best is None or values[i] < best[0]):
                best = (int(values[i]), int(a + i))
            self.left = self.left[1:] if stop == b else np.vstack([[stop, b], self.left[1:]])
        return int(nodes), 0, best

    def remaining(self) -> bytes:
        return Ranges(self.left, self.space).to_bytes()

    def extras(self) -> dict:
        return {}


def side_heuristic(options: dict, seed: int, improved, stopping) -> dict:
    rng, best, tries = np.random.default_rng(seed), math.inf, 0
    while not stopping():
        k = rng.integers(0, options["size"], 256)
        values = value(k)
        tries += 256
        if values.min() < best:
            best = int(values.min())
            improved(best, int(k[np.argmin(values)]))
    return {"tries": tries}


def load_nothing() -> CodeLoad:
    """The toy's worker code: plain numpy, nothing to load."""
    return CodeLoad(0.0, False)


class ToyRun:
    """The toy's run instance: its size is the instance; its work in the store is the ranges, its
    incumbent the integer ``k`` with its value."""

    kind, work_arrays, solution_array = "toy", ("ranges",), "k"
    side_heuristics_per_gpu = 0

    def __init__(self, size: int, name: str = "toy") -> None:
        self.size, self.name, self.options = size, name, {"size": size}

    @classmethod
    def from_store(cls, name, arrays, options):
        if set(arrays) != {"size"} or options != {"size": int(arrays["size"][0])}:
            raise ValueError("toy: the instance is its size")
        return cls(int(arrays["size"][0]), name)

    def arrays(self):
        return {"size": np.array([self.size], dtype=np.int64)}

    def space(self):
        return RangeSpace(self.size)

    def encode_work(self, work):
        return {"ranges": work.bounds}

    def decode_work(self, arrays=None, data=None):
        return self.space().decode(data if data is not None else arrays["ranges"].astype("<i8").tobytes())

    def encode_solution(self, k):
        return np.zeros(0, np.int64) if k is None else np.array([k], dtype=np.int64)

    def decode_solution(self, array):
        return int(array[0]) if array.size else None

    def incumbent_problem(self, best, k):
        if k is None:
            return None if best is None else "no k"
        return None if best == int(value(np.array([k]))[0]) else "not its value"

    def search_ub(self):
        return math.inf

    def engine_options(self, **settings):
        return dict(self.options)

    def result(self, remaining, incumbent, solution, settled, nodes, leaves, elapsed_s):
        return Result(
            kind="toy",
            name=self.name,
            status=Status.LIMIT if len(remaining) else Status.OPTIMAL,
            value=incumbent,
            solution=solution,
            lower_bound=None,
            nodes=nodes,
            elapsed_s=elapsed_s,
            remaining_fraction=self.space().remaining_fraction([remaining]),
            remaining_log10=None,
            fields=TOY_FIELDS,
        )

    def no_gpu(self):
        return "the toy has no GPU engine"

    def client_code(self):
        return CodeLoad(0.0, False)

    def first_run_code(self, explorers="cpu"):
        return None

    def worker_code(self):
        return load_nothing, ()


def add_toy_commands(commands) -> None:
    """The toy's command: ``toy-start SIZE RUN`` writes a new toy run store (no cluster)."""
    start = commands.add_parser("toy-start", help="a new toy run store")
    start.add_argument("size", type=int)
    start.add_argument("run")
    start.set_defaults(handler=start_toy_run)


def add_toy_run_settings(group, *, any_family: bool) -> None:
    """None: a toy run takes no settings from the command that drives it."""


def start_toy_run(args) -> int:
    whole = RangeSpace(args.size).decode(np.array([[0, args.size]], dtype="<i8").tobytes())
    create_run(args.run, ToyRun(args.size), work=whole).release()
    print(args.run)
    return 0


@pytest.fixture
def toy_family(monkeypatch):
    module = types.ModuleType("pbbflow_toy_family")
    module.Space = RangeSpace
    module.Instance = ToyRun
    module.make_engine = lambda options, *, gpu, threads: ScanEngine()
    module.side_heuristic = side_heuristic
    module.result_fields = TOY_FIELDS
    module.result_lines = lambda result: [
        f"toy          minimum {result.minimum} at k = {result.k}",
        f"status       {result.status}",
    ]
    module.history_text = lambda history, i: f"toy UB {history['incumbent'][i]}"
    monkeypatch.setattr(family_module, "FAMILIES", dict(family_module.FAMILIES))  # registered for this test
    monkeypatch.setattr(family_module, "COMMANDS", dict(family_module.COMMANDS))
    toy_commands = types.SimpleNamespace(add_commands=add_toy_commands, add_run_settings=add_toy_run_settings)
    register("toy", module, commands=toy_commands)
    return module


def test_an_unknown_kind_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"unknown run kind 'toy' \(known: flowshop, spatial\)"):
        family("toy")


def test_a_kind_is_registered_once():
    with pytest.raises(ValueError, match=r"run kind 'spatial' is already registered"):
        register("spatial", types.ModuleType("another_spatial_family"))
    with pytest.raises(ValueError, match=r"run kind 'spatial' is already registered"):
        register("spatial", family("spatial"), commands=types.ModuleType("other_spatial_commands"))


def test_a_third_familys_command_comes_after_the_built_ins_and_writes_its_run(toy_family, tmp_path, capsys):
    """The toy's ``toy-start`` is listed last in the help; the store it writes is one ``info`` reads."""
    (subparsers,) = [a for a in build_parser()._actions if a.dest == "command"]
    assert list(subparsers.choices) == [
        "solve",
        "heuristic",
        "plot",
        "resume",
        "info",
        "minimize",
        "verify",
        "toy-start",
    ]
    path = tmp_path / "toy.zarr"
    assert main(["toy-start", "7", str(path)]) == 0 and capsys.readouterr().out == f"{path}\n"
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["status"] == "limit" and info["nodes"] == 0 and info["options"] == {"size": 7}


def test_a_family_in_another_package_is_found_through_its_entry_point(monkeypatch, tmp_path):
    """An installed package's ``pbbflow.families`` entry point (here a distribution's metadata on
    ``sys.path``) is read the first time its kind is asked for; the module is imported then."""
    module = types.ModuleType("pbbflow_toy_package")
    module.family = types.SimpleNamespace(Space=RangeSpace, Instance=ToyRun)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    info = tmp_path / "pbbflow_toy_package-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pbbflow-toy-package\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pbbflow.families]\ntoy = pbbflow_toy_package:family\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(family_module, "FAMILIES", dict(family_module.FAMILIES))
    assert family("toy") is module.family and work_space("toy", {"size": 5}).size == 5


def test_a_familys_commands_in_another_package_are_found_through_their_entry_point(monkeypatch, tmp_path):
    """An installed package's ``pbbflow.commands`` entry point adds its commands to the parser."""
    module = types.ModuleType("pbbflow_toy_commands")
    module.add_commands, module.add_run_settings = add_toy_commands, add_toy_run_settings
    monkeypatch.setitem(sys.modules, module.__name__, module)
    info = tmp_path / "pbbflow_toy_commands-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pbbflow-toy-commands\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pbbflow.commands]\ntoy = pbbflow_toy_commands\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(family_module, "COMMANDS", dict(family_module.COMMANDS))
    assert build_parser().parse_args(["toy-start", "5", "r.zarr"]).handler is start_toy_run


def test_a_third_family_runs_on_the_workflow_with_exact_counts(toy_family):
    space = work_space("toy", {"size": SIZE})
    whole = space.decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    with (
        LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(Coordinator())
        client.sync(
            client.scheduler.pbbflow_open,
            run="t",
            kind="toy",
            space=space.params(),
            work=whole.to_bytes(),
            ub=math.inf,
            pieces=2,
        )
        workers = list(connected_workers(client))
        futures = [
            client.submit(explorer_task, "t", f"e{i}", "toy", {}, 0.02, workers=[workers[i]], pure=False)
            for i in range(2)
        ]
        futures.append(client.submit(heuristic_task, "t", "toy", {"size": SIZE}, 1, workers=[workers[2]], pure=False))
        deadline = time.monotonic() + 60
        while not (state := client.sync(client.scheduler.pbbflow_state, run="t"))["finished"]:
            assert time.monotonic() < deadline, state
            time.sleep(0.02)
        client.sync(client.scheduler.pbbflow_stop, run="t")
        results = client.gather(futures)
    assert all("error" not in r for r in results), results
    everything = value(np.arange(SIZE))
    assert state["nodes"] == SIZE  # every integer once: nothing lost, nothing twice
    assert state["ub"] == everything.min() and value(np.array([state["solution"]]))[0] == everything.min()
    assert state["remaining_fraction"] == 0.0


def test_a_third_familys_run_store_is_driven_stopped_and_resumed_untouched(toy_family, tmp_path):
    """The same toy through the run store and the driver: stopped after a few nodes, resumed on
    another cluster, ended with every integer counted once and the minimum in the store."""
    path = tmp_path / "toy.zarr"
    create_run(
        path, ToyRun(SIZE), work=ToyRun(SIZE).space().decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    ).release()
    everything = value(np.arange(SIZE))
    results = []
    for workers, stop_at_once in ((2, True), (3, False)):
        stop = threading.Event()
        with (
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            results.append(
                drive(
                    RunStore.open(path),
                    client,
                    budget_s=0.02,
                    checkpoint_every=0.2,
                    heuristics=1,
                    stop=stop,
                    on_progress=lambda p: stop_at_once and p.nodes > 0 and stop.set(),
                )
            )
    stopped, result = results
    assert stopped["status"] == "limit" and 0 < stopped["nodes"] < SIZE and 0 < stopped["remaining_fraction"] < 1
    assert result == result_of(RunStore.open(path))
    assert result["status"] == "optimal" and result["nodes"] == SIZE and result["minimum"] == everything.min()
    assert RunStore.open(path).kind == "toy" and value(np.array([result["k"]]))[0] == everything.min()


def test_a_node_limit_stops_explorers_in_their_budget_and_the_run_near_it(toy_family, tmp_path):
    """Explorers with a budget of a minute stop near the run's node limit (each decomposes at
    most what is left of it, in the toy's chunks of 1,000), and the resumed run counts every
    integer once."""
    path = tmp_path / "toy.zarr"
    create_run(
        path, ToyRun(SIZE), work=ToyRun(SIZE).space().decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    ).release()
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        began = time.monotonic()
        stopped = drive(RunStore.open(path), client, budget_s=60, node_limit=5_000, heuristics=0)
        assert time.monotonic() - began < 30
        result = drive(RunStore.open(path), client, budget_s=0.05, heuristics=0)
    assert stopped["status"] == "limit" and 5_000 <= stopped["nodes"] <= 2 * 5_000
    assert result["status"] == "optimal" and result["nodes"] == SIZE


def test_a_third_familys_run_is_resumed_and_described_by_the_command(toy_family, tmp_path, capsys):
    """``pbbflow resume`` and ``pbbflow info`` (``--json`` and lines) on a toy run stopped in its
    middle: the command drives it on its local cluster (worker threads of this process, where the
    toy is registered) to the minimum, with every integer counted once, and prints the toy's lines."""
    path = tmp_path / "toy.zarr"
    create_run(
        path, ToyRun(SIZE), work=ToyRun(SIZE).space().decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    ).release()
    code = main(
        [
            "resume",
            str(path),
            "--node-limit",
            "1",
            "--workers",
            "2",
            "--threads",
            "1",
            "--heuristic-workers",
            "1",
            "--json",
            "--quiet",
        ]
    )
    stopped = json.loads(capsys.readouterr().out)  # stopped at its first look (or done before: a loaded machine)
    assert (code, stopped["status"]) in ((3, "limit"), (0, "optimal")) and 0 < stopped["nodes"] <= SIZE
    assert main(["resume", str(path), "--workers", "2", "--threads", "1", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    everything = value(np.arange(SIZE))
    assert result["status"] == "optimal" and result["nodes"] == SIZE and result["minimum"] == everything.min()
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nodes"] == SIZE and info["k"] == result["k"] and info["options"] == {"size": SIZE}
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert (
        f"toy          minimum {everything.min()} at k = {result['k']}\nstatus       optimal\nrun          {path}\n"
        in text
    )
    assert "\nhistory      0:00:" in text and "  toy UB " in text


def test_a_third_familys_run_is_plotted_and_shown_on_the_dashboard_page(toy_family, tmp_path, capsys):
    """A family without pictures or a view of its own gets those of the series every run records:
    ``pbbflow plot`` writes its ``history.png``, the dashboard page draws it with the common view."""
    path, whole = tmp_path / "toy.zarr", RangeSpace(SIZE).decode(np.array([[0, SIZE]], dtype="<i8").tobytes())
    create_run(path, ToyRun(SIZE), work=whole).release()
    assert main(["plot", str(path), "--out", str(tmp_path / "plots")]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "plots" / "history.png")]
    assert (tmp_path / "plots" / "history.png").stat().st_size > 10_000
    ledger, history = Ledger(whole, ub=math.inf), RunHistory("toy", kind="toy")
    for step in range(3):
        ledger.nodes = 1000 * step
        history.record(ledger, now=history.opened + step)
    coordinator = type("Coordinator", (), {"latest_history": lambda self: history})()
    page = RunPage(type("Scheduler", (), {"plugins": {PLUGIN_NAME: coordinator}})())
    page.update()
    assert type(page.view) is HistoryView and page.layout.children == [page.header, page.view.layout]
    assert "toy (live)" in page.header.text and "2,000 nodes" in page.header.text
