"""A suite of verification instances as one resumable job (``pbbflow verify --instances CSV --run
PATH``, ``resume``, ``info``): its instance list's errors, its answers against ``verify()``, its
store (files kept inside, commits that survive a SIGKILL, one writer at a time, checksums)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from runwait import wait_for_handler
from spatial_helpers import affine_net

from pbbflow.cli.main import build_parser, main
from pbbflow.core.errors import RunStoreDamaged
from pbbflow.spatial.onnx_network import read_onnx
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.suite import SuiteStore, read_instances
from pbbflow.spatial.verify import verify
from pbbflow.spatial.vnnlib import read_vnnlib

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CLI = [sys.executable, "-m", "pbbflow.cli.main"]
ACAS = Path(__file__).resolve().parents[2] / "benchmarks" / "networks" / "acas-shaped-5-6x50-5-relu.onnx"
AFFINE_BOX = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"


def relu_onnx(path: Path, sizes=(3, 8, 8, 2), seed: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    """A Gemm + Relu network (linear last layer) in ``path``; its layers (weights, bias)."""
    rng = np.random.default_rng(seed)
    nodes, initializers, layers, value = [], [], [], "x"
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        w, bias = rng.normal(0.0, np.sqrt(2.0 / a), (b, a)), rng.normal(0.0, 0.1, b)
        layers.append((w, bias))
        initializers += [numpy_helper.from_array(w, f"W{k}"), numpy_helper.from_array(bias, f"b{k}")]
        nodes.append(helper.make_node("Gemm", [value, f"W{k}", f"b{k}"], [f"z{k}"], transB=1))
        value = f"z{k}"
        if k < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [value], [f"r{k}"]))
            value = f"r{k}"
    nodes.append(helper.make_node("Identity", [value], ["y"]))
    graph = helper.make_graph(
        nodes,
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, sizes[0]])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, sizes[-1]])],
        initializers,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return layers


def exact(layers, x) -> list[Fraction]:
    """The network at ``x`` in rational arithmetic on its doubles."""
    values = [Fraction(v) for v in x]
    for k, (w, b) in enumerate(layers):
        values = [sum((Fraction(c) * v for c, v in zip(row, values)), Fraction(d)) for row, d in zip(w.tolist(), b)]
        if k < len(layers) - 1:
            values = [max(v, Fraction(0)) for v in values]
    return values


def box_property(box, n_out: int, condition: str) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(len(box))] + [
        f"(declare-const Y_{j} Real)" for j in range(n_out)
    ]
    for i, (lo, hi) in enumerate(box):
        lines += [f"(assert (>= X_{i} {lo}))", f"(assert (<= X_{i} {hi}))"]
    return "\n".join([*lines, f"(assert {condition})"])


def small_suite(folder: Path) -> tuple[Path, list]:
    """Four instances in ``folder/src``: the affine net's unsat and sat, a ReLU net's sat (a planted
    level just below its exact output) and unsat (a level far above it); the CSV and the ReLU layers."""
    src = folder / "src"
    (src / "props").mkdir(parents=True)
    affine_net(src)
    layers = relu_onnx(src / "relu.onnx")
    planted = [0.25, -0.5, 0.125]
    level = float(exact(layers, planted)[1]) - 1e-6
    box = [(p - 0.1, p + 0.1) for p in planted]
    (src / "props" / "a_unsat.vnnlib").write_text(AFFINE_BOX + "(assert (>= Y_0 3.5))")
    (src / "props" / "a_sat.vnnlib").write_text(AFFINE_BOX + "(assert (>= Y_0 2.5))")
    (src / "props" / "r_sat.vnnlib").write_text(box_property(box, 2, f"(>= Y_1 {level!r})"))
    (src / "props" / "r_unsat.vnnlib").write_text(box_property(box, 2, "(>= Y_1 1000)"))
    csv = src / "instances.csv"
    csv.write_text(
        "affine.onnx,props/a_unsat.vnnlib,20\n"
        "affine.onnx, props/a_sat.vnnlib ,20\n"
        "\n"
        f"{src / 'relu.onnx'},props/r_sat.vnnlib,20\n"  # an absolute path
        "relu.onnx,props/r_unsat.vnnlib,20\n"
    )
    return csv, layers


def satisfied(prop, y) -> bool:
    return any(
        all(sum(c * y[j] for j, c in a.coefficients.items()) + a.constant <= 0 for a in region.atoms)
        for region in prop.regions
    )


def test_a_suite_answers_as_verify_writes_its_table_and_info_shows_it(tmp_path, capsys):
    csv, layers = small_suite(tmp_path)
    store = tmp_path / "suite.zarr"
    assert main(["verify", "--instances", str(csv), "--run", str(store), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[4/4] ")
    assert "4 instances: 2 unsat, 2 sat" in out
    document = json.loads((tmp_path / "suite.results.json").read_text())
    rows = document["instances"]
    assert [row["answer"] for row in rows] == ["unsat", "sat", "sat", "unsat"]
    assert document["counts"]["sat"] == 2 and document["counts"]["pending"] == 0
    for row in rows:
        network = csv.parent / row["network"].strip()
        prop = read_vnnlib(csv.parent / row["property"])
        direct = verify(read_onnx(network), prop, MinimizeOptions(time_limit=20.0, parallel=False))
        assert direct.answer == row["answer"]
        if row["answer"] == "sat":  # a real counterexample: inside the box, the condition exactly at x
            region_box = any(
                all(a <= Fraction(v) <= b for a, v, b in zip(r.lower, row["x"], r.upper)) for r in prop.regions
            )
            y = exact(layers, row["x"]) if network.name == "relu.onnx" else [2 * Fraction(row["x"][0]) + 1]
            assert region_box and satisfied(prop, y)
    table = (tmp_path / "suite.results.csv").read_text().splitlines()
    assert table[0] == "index,network,property,timeout_s,answer,seconds,nodes,x,y"
    sat = table[2].split(",")
    assert sat[4] == "sat" and [float(v) for v in sat[7].split()] == rows[1]["x"]
    assert main(["info", str(store)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert re.match(r"index\s+network\s+property\s+answer\s+seconds$", shown[0])
    assert re.match(r"3\s+relu\.onnx\s+props/r_unsat\.vnnlib\s+unsat\s+\d", shown[4])
    assert main(["info", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instances"] == rows
    assert main(["resume", str(store)]) == 0  # finished: answered as info, nothing runs
    assert "[1/4]" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--node-limit", "5"], "--node-limit: a suite's instances stop"),
        (["--checkpoint-every", "5"], "--checkpoint-every: a suite commits"),
        (["--heuristic-workers", "1"], "--heuristic-workers: a suite runs no side heuristic"),
    ],
)
def test_resume_refuses_the_run_options_a_suite_does_not_take(tmp_path, capsys, option, message):
    """``resume`` lists every run option (for runs of any kind); on a suite these three exit 2, one line."""
    csv, _ = small_suite(tmp_path)
    store = tmp_path / "s.zarr"
    SuiteStore.create(store, read_instances(csv)).release()
    assert main(["resume", str(store), *option]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert SuiteStore.open(store).results() == {}  # nothing ran


def test_a_suite_resumes_from_its_store_after_its_files_moved(tmp_path, capsys):
    csv, _ = small_suite(tmp_path)
    store = tmp_path / "s.zarr"
    SuiteStore.create(store, read_instances(csv)).release()  # a suite stopped before its first result
    shutil.rmtree(csv.parent)
    assert main(["resume", str(store), "--workers", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [row["answer"] for row in document["instances"]] == ["unsat", "sat", "sat", "unsat"]
    assert document["stopped"] is False and document["source"] == str(csv)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("rows", "argv", "message"),
    [
        ("affine.onnx,p.vnnlib\n", [], r"i\.csv:1: expected onnx_path,vnnlib_path,timeout_seconds, got 2 fields"),
        ("\naffine.onnx,p.vnnlib,soon\n", [], r"i\.csv:2: the timeout must be a number of seconds > 0, got 'soon'"),
        ("affine.onnx,p.vnnlib,-1\n", [], r"i\.csv:1: the timeout must be"),
        ("affine.onnx,missing.vnnlib,5\n", [], r"i\.csv:1: missing\.vnnlib: no such file"),
        ("p.vnnlib,p.vnnlib,5\n", [], r"i\.csv:1: p\.vnnlib: not an ONNX model"),
        ("affine.onnx,bad.vnnlib,5\n", [], r"i\.csv:1: bad\.vnnlib:3: '<' is not in"),
        ("affine.onnx,two.vnnlib,5\n", [], r"i\.csv:1: two\.vnnlib has 2 inputs and 1 outputs; affine\.onnx 1 and 1"),
        ("\n\n", [], r"i\.csv: lists no instance"),
        ("affine.onnx,p.vnnlib,5\n", ["NET", "PROP"], "verify --instances takes no network or property"),
        ("affine.onnx,p.vnnlib,5\n", ["--no-run"], r"--instances runs a suite as one resumable job: add --run"),
        ("affine.onnx,p.vnnlib,5\n", ["--result", "r.txt"], "--result is one instance's"),
        ("affine.onnx,p.vnnlib,5\n", ["--gpus", "99"], r"99 GPU\(s\) asked for, but \d+ visible"),
    ],
)
def test_instance_list_and_option_errors_are_one_line_exit_2_and_leave_no_store(tmp_path, capsys, rows, argv, message):
    affine_net(tmp_path)
    _write(tmp_path / "p.vnnlib", AFFINE_BOX + "(assert (>= Y_0 3.5))")
    _write(tmp_path / "bad.vnnlib", "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (< X_0 1))")
    _write(
        tmp_path / "two.vnnlib",
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1)))",
    )
    csv = _write(tmp_path / "i.csv", rows)
    store = tmp_path / "s.zarr"
    positional = [a for a in argv if a in ("NET", "PROP")]
    options = [a for a in argv if a not in ("NET", "PROP", "--no-run")]
    run = [] if "--no-run" in argv else ["--run", str(store)]
    assert main(["verify", *positional, "--instances", str(csv), *run, *options]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert err.count("\n") == 1 and "Traceback" not in err and not store.exists()


def test_single_verify_refuses_suite_options_and_wants_its_two_files(tmp_path, capsys):
    net = str(affine_net(tmp_path))
    prop = str(_write(tmp_path / "p.vnnlib", AFFINE_BOX + "(assert (>= Y_0 3.5))"))
    for argv, message in (
        ([net], "verify takes MODEL.onnx PROPERTY.vnnlib, or --instances CSV --run PATH"),
        ([net, prop, "--run", str(tmp_path / "s.zarr")], "--run is for a suite"),
        ([net, prop, "--workers", "2"], "--workers is for a suite"),
        ([net, prop, "--gpus", "2"], "--gpus 2: verify bounds one property's boxes on one GPU (--gpus 1)"),
    ):
        assert main(["verify", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_a_torn_result_runs_again_and_a_tampered_one_is_refused(tmp_path, capsys):
    csv, _ = small_suite(tmp_path)
    path = tmp_path / "t.zarr"
    store = SuiteStore.create(path, read_instances(csv))
    first = store.commit(0, {"answer": "unsat", "seconds": 0.5, "nodes": 3})
    store.commit(1, {"answer": "timeout", "seconds": 20.0, "nodes": 9})
    store.release()
    torn = path / "results" / "000001" / "zarr.json"
    torn.write_text(torn.read_text()[:40])  # a write cut short (zarr writes a temporary file and renames it)
    assert SuiteStore.open(path).results() == {0: first}
    meta = path / "results" / "000000" / "zarr.json"
    document = json.loads(meta.read_text())
    document["attributes"]["answer"] = "sat"
    meta.write_text(json.dumps(document))
    with pytest.raises(RunStoreDamaged, match="fails its sha256 checksum"):
        SuiteStore.open(path).results()
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "results/000000 fails its sha256 checksum" in err and err.count("\n") == 1
    blob = next((path / "properties").iterdir())
    shutil.rmtree(blob)
    assert main(["resume", str(path)]) == 2
    assert "damaged suite store" in capsys.readouterr().err


def test_an_internal_error_is_one_line_in_the_store_and_its_traceback_in_the_log(tmp_path, monkeypatch):
    """decide's result for an error of pbbflow's own code carries its traceback, which the driver
    appends to the log beside the store (the store keeps the one line); a bad file has none."""
    from pbbflow.spatial import suite_commands
    from pbbflow.spatial import verify as verify_module
    from pbbflow.spatial.suite import decide

    csv, _ = small_suite(tmp_path)
    store = SuiteStore.create(tmp_path / "e.zarr", read_instances(csv))
    network, prop = store.network_bytes(0), store.property_bytes(0)
    bad = decide(b"not an onnx file", prop, ("bad.onnx", "p.vnnlib"), 5.0)
    assert bad["answer"] == "error" and "traceback" not in bad

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(verify_module, "verify", broken)
    outcome = decide(network, prop, ("n.onnx", "p.vnnlib"), 5.0)
    assert outcome["reason"] == "RuntimeError: a bug" and "in broken" in outcome["traceback"]
    result = store.commit(0, outcome)
    assert result.answer == "error" and result.reason == "RuntimeError: a bug"
    where = suite_commands.log_error(store, 0, outcome)
    log = tmp_path / "e.zarr.error.log"
    assert where == f"traceback in {log}" and "instance 0 (" in log.read_text() and "in broken" in log.read_text()
    assert suite_commands.log_error(store, 1, bad) is None
    store.release()


def _results(path: Path) -> dict:
    try:
        return SuiteStore.open(path).results()
    except Exception:  # noqa: BLE001 (not written yet)
        return {}


def open_suite(src: Path, timeout_s: float) -> Path:
    """A fast sat instance, then twice a property on the ACAS-shaped network that is still open
    after 8 s (its whole box, Y_0 the largest: 3,225 boxes then), with ``timeout_s``; the CSV."""
    src.mkdir()
    affine_net(src)
    shutil.copy(ACAS, src / "acas.onnx")
    _write(src / "sat.vnnlib", AFFINE_BOX + "(assert (>= Y_0 2.5))")
    declare = [f"(declare-const X_{i} Real)" for i in range(5)] + [f"(declare-const Y_{j} Real)" for j in range(5)]
    box = [f"(assert (>= X_{i} -0.4))\n(assert (<= X_{i} 0.4))" for i in range(5)]
    _write(
        src / "open.vnnlib",
        "\n".join([*declare, *box, "(assert (and (>= Y_0 Y_1) (>= Y_0 Y_2) (>= Y_0 Y_3) (>= Y_0 Y_4)))"]),
    )
    rows = f"affine.onnx,sat.vnnlib,30\nacas.onnx,open.vnnlib,{timeout_s}\nacas.onnx,open.vnnlib,{timeout_s}\n"
    return _write(src / "i.csv", rows)


needs_acas = pytest.mark.skipif(
    not ACAS.is_file(), reason="the ACAS-shaped network is written by benchmarks/network_bounds.py"
)


@needs_acas
def test_sigterm_and_the_time_limit_stop_a_suite_with_its_results_kept(tmp_path, patience, capsys):
    csv = open_suite(tmp_path / "src", 300)
    path = tmp_path / "t.zarr"
    began = time.monotonic()
    assert main(["verify", "--instances", str(csv), "--run", str(path), "--workers", "2", "--time-limit", "1"]) == 3
    assert time.monotonic() - began < patience(30)
    assert "continue with: pbbflow resume" in capsys.readouterr().err
    assert set(SuiteStore.open(path).results()) == {0}
    driver = subprocess.Popen(
        [*CLI, "resume", str(path), "--workers", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_handler(driver, patience(60))
    time.sleep(1.0)  # the open instances running
    driver.send_signal(signal.SIGTERM)
    out, err = driver.communicate(timeout=patience(30))
    assert driver.returncode == 3, err
    document = json.loads(out)
    assert document["stopped"] is True and document["counts"]["pending"] == 2 and "Traceback" not in err


@needs_acas
def test_a_killed_suite_resumes_without_losing_or_rerunning_a_result(tmp_path, patience):
    """SIGKILL to the whole process group of ``verify --instances`` once its first result is
    committed (the second instance, on the ACAS-shaped network, open for seconds, is running): a
    second writer meanwhile is refused naming the holder; after moving the files away, ``resume``
    gives every instance a result and keeps the first one's record as it was."""
    src = tmp_path / "src"
    csv = open_suite(src, 1.5)
    path = tmp_path / "k.zarr"
    driver = subprocess.Popen(
        [*CLI, "verify", "--instances", str(csv), "--run", str(path), "--workers", "1", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + patience(120)
        while not _results(path) and time.monotonic() < deadline:
            assert driver.poll() is None, driver.stderr.read().decode()
            time.sleep(0.05)
        assert driver.poll() is None, "the suite ended before it could be killed"
        assert main(["resume", str(path)]) == 2  # a second writer, while the first holds the store
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    before = SuiteStore.open(path).results()
    assert set(before) == {0} and before[0].answer == "sat" and before[0].seq == 1
    shutil.rmtree(src)
    proc = subprocess.run(
        [*CLI, "resume", str(path), "--workers", "1"], capture_output=True, text=True, timeout=patience(120)
    )
    assert proc.returncode == 3, proc.stderr  # the open instances time out
    progress = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 2 and all("acas.onnx open.vnnlib timeout" in line for line in progress)
    after = SuiteStore.open(path).results()
    assert set(after) == {0, 1, 2} and after[0] == before[0]  # the same record: seq, time, run id
    assert {after[1].run, after[2].run} != {before[0].run} and sorted(r.seq for r in after.values()) == [1, 2, 3]


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path, capsys):
    csv, _ = small_suite(tmp_path)
    path = tmp_path / "h.zarr"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pbbflow.spatial.suite import SuiteStore, read_instances\n"
            f"store = SuiteStore.create({str(path)!r}, read_instances({str(csv)!r}))\nprint('held', flush=True)\ntime.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        assert main(["resume", str(path), "--workers", "1"]) == 2
        err = capsys.readouterr().err
        assert f"in use by another run (pid {holder.pid} on host" in err and err.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()
    assert main(["resume", str(path), "--workers", "1", "--quiet"]) == 0  # its holder died: taken over


def test_the_dashboard_page_shows_a_suite_per_instance(tmp_path):
    """What the driver publishes on the scheduler, drawn by the pbbflow page where no run is."""
    pytest.importorskip("bokeh")
    from pbbflow.spatial.suite_commands import _publish
    from pbbflow.viz.dashboard import RunPage, SuiteView

    csv, _ = small_suite(tmp_path)
    store = SuiteStore.create(tmp_path / "d.zarr", read_instances(csv))
    results = {1: store.commit(1, {"answer": "sat", "seconds": 0.25, "nodes": 0, "x": [1.0], "y": [3.0]})}

    class Scheduler:
        plugins: dict = {}
        task_metadata: dict = {}

    class Client:
        def set_metadata(self, keys, value):
            Scheduler.task_metadata.setdefault(keys[0], {})[keys[1]] = json.loads(json.dumps(value))

    page = RunPage(Scheduler())
    page.update()
    assert "No pbbflow run on this cluster yet" in page.header.text
    _publish(Client(), store, results, "live")
    page.update()
    assert isinstance(page.view, SuiteView) and page.layout.children == [page.header, page.view.layout]
    assert "d.zarr (live)" in page.header.text and "4 instances: 1 sat, 3 pending" in page.header.text
    data = page.view.source.data
    assert list(data["index"]) == [0, 1, 2, 3] and list(data["answer"]) == ["", "sat", "", ""]
    assert data["seconds"][1] == 0.25 and data["property"][3] == "props/r_unsat.vnnlib"


def test_the_suite_takes_gpu_workers_where_the_cluster_has_gpus(monkeypatch):
    """A given scheduler with --gpus, Slurm with --gpus-per-job, a local cluster with the GPUs it
    gets (none visible here: 0, or --gpus 0)."""
    from pbbflow.spatial import suite_commands

    parsed = build_parser().parse_args
    csv = ["verify", "--instances", "i.csv", "--run", "s.zarr"]
    assert suite_commands.gpu_workers(parsed([*csv, "--scheduler", "tcp://h:8786", "--gpus", "1"]))
    assert not suite_commands.gpu_workers(parsed([*csv, "--scheduler", "tcp://h:8786"]))
    assert suite_commands.gpu_workers(parsed([*csv, "--cluster", "slurm", "--gpus-per-job", "1"]))
    assert not suite_commands.gpu_workers(parsed([*csv, "--cluster", "slurm"]))
    monkeypatch.setattr(suite_commands, "local_gpus", lambda args: 0 if args.gpus == 0 else 2)
    assert suite_commands.gpu_workers(parsed(csv)) and not suite_commands.gpu_workers(parsed([*csv, "--gpus", "0"]))
