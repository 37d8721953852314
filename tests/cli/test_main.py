"""The ``pbbflow`` command: exit codes, JSON/human output, instance files, options and errors.

Most tests call ``pbbflow.cli.main.main(argv)`` in-process; one group runs the real console
script in a subprocess to check exit codes end to end.  Instances are small: Taillard ta001
(20x5, optimum 1278), ta011 (20x10, optimum 1582), ta021 (only with limits) and tiny
hand-written files whose optimum is computed here by brute force.
"""

import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zarr
from distributed import LocalCluster
from gmpy2 import mpz
from runwait import wait_for_committed_nodes, wait_for_handler

from pbbflow.cli.arguments import parse_duration
from pbbflow.cli.main import main
from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.taillard import taillard_instance

JSON_FIELDS = {
    "instance",
    "n",
    "m",
    "status",
    "makespan",
    "permutation",
    "lower_bound",
    "nodes",
    "leaves",
    "elapsed_s",
    "remaining_fraction",
    "remaining_log10",
    "run",
    "startup",
    "estimate",
}
CLUSTER_OPTIONS = ("--scheduler", "--cluster", "--workers", "--threads", "--dry-run")
_scheduler = {}  # the shared test cluster's address (set by the autouse fixture)
TA001_OPT = 1278
TA011_OPT = 1582
BOUNDS = tuple(BOUND_NAMES)  # every bound: a new one is tested as it is added
BRANCHES = tuple(BRANCH_NAMES)  # every branching rule

# 4 jobs x 3 machines, job-major; NEH gives 39 here, the optimum is 38, so the search
# itself (not the NEH incumbent) has to find the optimal schedule.
TINY = [[9, 7, 9], [4, 5, 5], [8, 9, 7], [1, 8, 4]]

VFR_SMALL = Path(__file__).resolve().parents[3] / "shared" / "data" / "vfr" / "small"


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def shared_cluster():
    """One in-process cluster for the in-process solves (each solve is a separate run on it)."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(autouse=True)
def in_tmp_dir_with_cluster(tmp_path, monkeypatch, shared_cluster):
    monkeypatch.chdir(tmp_path)  # default run stores go to ./pbbflow-runs
    _scheduler["address"] = shared_cluster


def cmax(p, perm) -> int:
    """Makespan of ``perm`` on the job-major matrix ``p``, in plain Python."""
    completion = [0] * len(p[0])
    for job in perm:
        completion[0] += int(p[job][0])
        for k in range(1, len(completion)):
            completion[k] = max(completion[k], completion[k - 1]) + int(p[job][k])
    return completion[-1]


def brute_force(p) -> int:
    return min(cmax(p, perm) for perm in itertools.permutations(range(len(p))))


def taillard_text(p, orientation="job-major") -> str:
    n, m = len(p), len(p[0])
    rows = p if orientation == "job-major" else [[p[j][k] for j in range(n)] for k in range(m)]
    return f"{n} {m}\n" + "".join(" ".join(map(str, row)) + "\n" for row in rows)


def vfr_text(p) -> str:
    n, m = len(p), len(p[0])
    return f"{n} {m}\n" + "".join("  ".join(f"{k} {row[k]}" for k in range(m)) + "\n" for row in p)


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def run(capsys, *argv):
    """Run ``pbbflow`` in-process (solve/resume on the shared cluster); return (code, stdout, stderr)."""
    argv = list(argv)
    if argv and argv[0] in ("solve", "resume") and not any(a in argv for a in CLUSTER_OPTIONS):
        argv += ["--scheduler", _scheduler["address"]]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def solve_json(capsys, *argv, expect_code=0) -> dict:
    code, out, err = run(capsys, "solve", *argv, "--json", "--quiet")
    assert code == expect_code, (code, out, err)
    assert "Traceback" not in err
    lines = out.splitlines()
    assert len(lines) == 1, out  # exactly one JSON document on stdout
    return json.loads(lines[0])


def check_schedule(result: dict, p) -> None:
    """The permutation is a permutation of the jobs and has the reported makespan."""
    perm = result["permutation"]
    assert sorted(perm) == list(range(len(p)))
    assert cmax(p, perm) == result["makespan"]


def check_optimal(result: dict, p, optimum: int) -> None:
    assert result["status"] == "optimal", result
    assert result["makespan"] == optimum
    assert result["lower_bound"] == optimum
    assert result["remaining_fraction"] == 0.0
    check_schedule(result, p)


def assert_input_error(code, out, err) -> None:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pbbflow: error:"), err
    assert out == ""


def assert_usage_error(capsys, *argv, option: str | None = None) -> str:
    """argparse rejects ``argv`` with SystemExit(2) and one 'error:' line naming ``option``."""
    with pytest.raises(SystemExit) as excinfo:
        main(list(argv))
    assert excinfo.value.code == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1, err  # no usage block: the error and where help is
    assert re.fullmatch(r"(pbbflow(?: \w+)?): error: .+ \(\1 --help for usage\)", lines[0]), err
    if option is not None:
        assert option in lines[0], err
    return lines[0]


@pytest.fixture(scope="module")
def ta001():
    return taillard_instance(1).p.tolist()


@pytest.fixture(scope="module")
def ta011():
    return taillard_instance(11).p.tolist()


@pytest.fixture
def tiny_file(tmp_path):
    return write(tmp_path / "tiny.txt", taillard_text(TINY))


# --------------------------------------------------------------------------- Taillard names


def test_tiny_instance_needs_the_search():
    # Sanity of the fixture itself: the brute-force optimum is 38.
    assert brute_force(TINY) == 38


def test_solve_ta001_json(capsys, ta001):
    result = solve_json(capsys, "ta001")
    assert set(result) == JSON_FIELDS
    assert result["instance"] == "ta001"
    assert (result["n"], result["m"]) == (20, 5)
    check_optimal(result, ta001, TA001_OPT)
    assert isinstance(result["nodes"], int) and result["nodes"] >= 1
    assert isinstance(result["leaves"], int) and result["leaves"] >= 0
    assert isinstance(result["elapsed_s"], float) and result["elapsed_s"] >= 0


def test_solve_ta001_human_output(capsys):
    code, out, err = run(capsys, "solve", "ta001", "--quiet")
    assert code == 0
    assert "optimal" in out
    assert "1278" in out
    assert "Traceback" not in err


def test_taillard_name_is_case_insensitive_and_unpadded(capsys, ta001):
    result = solve_json(capsys, "TA1")
    assert result["instance"] == "ta001"
    check_optimal(result, ta001, TA001_OPT)


# --------------------------------------------------------------------------- instance files


def test_job_major_file(capsys, tiny_file):
    result = solve_json(capsys, tiny_file)
    assert result["instance"] == "tiny"
    assert (result["n"], result["m"]) == (4, 3)
    check_optimal(result, TINY, brute_force(TINY))


def test_machine_major_file(capsys, tmp_path):
    path = write(tmp_path / "tiny_mm.txt", taillard_text(TINY, "machine-major"))
    result = solve_json(capsys, path, "--orientation", "machine-major")
    assert (result["n"], result["m"]) == (4, 3)
    check_optimal(result, TINY, brute_force(TINY))
    # Read as job-major (the default), the same 3 rows of 4 numbers are an error, not a guess.
    assert_input_error(*run(capsys, "solve", path, "--quiet"))


@pytest.mark.parametrize("fmt", [None, "vfr"], ids=["auto", "vfr"])
def test_vfr_file(capsys, tmp_path, fmt):
    path = write(tmp_path / "tiny_vfr.txt", vfr_text(TINY))
    extra = [] if fmt is None else ["--format", fmt]
    result = solve_json(capsys, path, *extra)
    assert (result["n"], result["m"]) == (4, 3)
    check_optimal(result, TINY, brute_force(TINY))


@pytest.mark.parametrize("seed", range(3))
def test_random_small_files(capsys, tmp_path, seed):
    import random

    rng = random.Random(seed)
    n, m = 6, 4
    p = [[rng.randint(1, 20) for _ in range(m)] for _ in range(n)]
    result = solve_json(capsys, write(tmp_path / f"r{seed}.txt", taillard_text(p)), "--threads", "1")
    check_optimal(result, p, brute_force(p))


@pytest.mark.skipif(not VFR_SMALL.is_dir(), reason=f"shared VFR data not found at {VFR_SMALL}")
def test_shared_vfr_file_matches_its_matrix(capsys, tmp_path):
    source = VFR_SMALL / "VFR10_5_1_Gap.txt"
    tokens = source.read_text().split()
    n, m = int(tokens[0]), int(tokens[1])
    times = list(map(int, tokens[2:]))[1::2]
    p = [times[j * m : (j + 1) * m] for j in range(n)]
    from_vfr = solve_json(capsys, str(source))
    from_matrix = solve_json(capsys, write(tmp_path / "vfr10_5_1.txt", taillard_text(p)), "--format", "taillard")
    assert from_vfr["status"] == from_matrix["status"] == "optimal"
    assert from_vfr["makespan"] == from_matrix["makespan"]
    check_schedule(from_vfr, p)
    # The VRF authors' published bounds for VFR10_5_1: LB 523, UB 695.
    assert 523 <= from_vfr["makespan"] <= 695


# --------------------------------------------------------------------------- --ub


def test_ub_equal_to_optimum(capsys, ta011):
    result = solve_json(capsys, "ta011", "--ub", str(TA011_OPT))
    assert result["status"] in ("optimal", "bound_proved")
    assert result["lower_bound"] == TA011_OPT
    assert result["remaining_fraction"] == 0.0
    assert result["makespan"] >= TA011_OPT
    if result["status"] == "optimal":
        assert result["makespan"] == TA011_OPT
    check_schedule(result, ta011)


def test_ub_below_optimum(capsys, ta011):
    result = solve_json(capsys, "ta011", "--ub", str(TA011_OPT - 1))
    assert result["status"] == "bound_proved"
    assert result["lower_bound"] == TA011_OPT - 1
    assert result["remaining_fraction"] == 0.0
    assert result["makespan"] >= TA011_OPT  # the best schedule known, never better than optimal
    check_schedule(result, ta011)


def test_ub_above_optimum_still_finds_it(capsys, ta011):
    result = solve_json(capsys, "ta011", "--ub", str(TA011_OPT + 30))
    check_optimal(result, ta011, TA011_OPT)


@pytest.mark.parametrize("ub", ["neh", "NEH", "100000"])
def test_ub_neh_or_loose(capsys, ta001, ub):
    check_optimal(solve_json(capsys, "ta001", "--ub", ub), ta001, TA001_OPT)


# --------------------------------------------------------------------------- --bound / --branch


@pytest.mark.parametrize("branch", BRANCHES)
@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_and_branch_tiny(capsys, tiny_file, bound, branch):
    result = solve_json(capsys, tiny_file, "--bound", bound, "--branch", branch)
    check_optimal(result, TINY, brute_force(TINY))


@pytest.fixture(scope="module")
def ta001_mirror(tmp_path_factory, ta001):
    """ta001 with its machines in reverse order: same optimum, forward and backward swapped."""
    mirrored = [row[::-1] for row in ta001]
    return mirrored, write(tmp_path_factory.mktemp("mirror") / "ta001_mirror.txt", taillard_text(mirrored))


@pytest.mark.parametrize("branch", BRANCHES)
@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_and_branch_ta001(capsys, ta001, ta001_mirror, bound, branch):
    if branch == "forward":
        # Pure forward branching does not finish ta001 in minutes (hundreds of millions of
        # nodes with lb1); on the mirror instance forward is backward on ta001: < 0.2 s.
        p, spec = ta001_mirror
    else:
        p, spec = ta001, "ta001"
    result = solve_json(capsys, spec, "--bound", bound, "--branch", branch)
    check_optimal(result, p, TA001_OPT)


@pytest.mark.parametrize("bound", BOUNDS)
def test_forward_on_ta001_is_sound_when_cut_short(capsys, ta001, bound):
    result = solve_json(
        capsys, "ta001", "--ub", "neh", "--bound", bound, "--branch", "forward", "--node-limit", "200000", expect_code=3
    )
    assert result["status"] == "limit"
    assert result["lower_bound"] <= TA001_OPT <= result["makespan"]
    check_schedule(result, ta001)


# --------------------------------------------------------------------------- --threads


def test_threads_do_not_change_a_fixed_tree(capsys):
    one = solve_json(capsys, "ta011", "--ub", str(TA011_OPT), "--threads", "1")
    two = solve_json(capsys, "ta011", "--ub", str(TA011_OPT), "--threads", "2")
    for key in ("status", "makespan", "lower_bound", "nodes", "leaves", "remaining_fraction"):
        assert one[key] == two[key], key


def test_threads_2_finds_the_optimum(capsys, ta011):
    check_optimal(solve_json(capsys, "ta011", "--threads", "2"), ta011, TA011_OPT)


# --------------------------------------------------------------------------- limits


def check_limit(result: dict) -> None:
    assert set(result) == JSON_FIELDS
    assert result["status"] == "limit"
    assert 0.0 < result["remaining_fraction"] < 1.0
    assert result["makespan"] is not None
    assert 0 < result["lower_bound"] <= result["makespan"]
    check_schedule(result, taillard_instance(21).p.tolist())


def test_node_limit(capsys):
    result = solve_json(capsys, "ta021", "--node-limit", "20000", expect_code=3)
    check_limit(result)
    assert result["nodes"] >= 20000


def test_time_limit(capsys, patience):
    result = solve_json(capsys, "ta021", "--time-limit", "0.5", expect_code=3)
    check_limit(result)
    assert 0.4 <= result["elapsed_s"] < patience(30)
    estimate = result["estimate"]  # of the final work (workflow.eta); the ETA where a rate is known
    assert 0 < estimate["estimated_nodes_low"] <= estimate["estimated_nodes_left"] <= estimate["estimated_nodes_high"]
    assert estimate["eta_s"] is None or estimate["eta_low_s"] <= estimate["eta_s"] <= estimate["eta_high_s"]
    code, out, _ = run(capsys, "info", result["run"], "--json")
    assert code == 0 and json.loads(out)["estimate"] == estimate  # from the run store's series
    code, out, _ = run(capsys, "info", result["run"])
    assert code == 0 and re.search(r"^estimate     ~\S+ nodes left \(\S+-\S+\)", out, re.M), out


def test_limit_human_output(capsys):
    code, out, err = run(capsys, "solve", "ta021", "--node-limit", "5000", "--quiet")
    assert code == 3
    assert "limit" in out
    assert "remaining" in out


def test_generous_limits_do_not_stop_the_search(capsys, ta001):
    result = solve_json(capsys, "ta001", "--node-limit", "100000000", "--time-limit", "1h")
    check_optimal(result, ta001, TA001_OPT)


@pytest.mark.parametrize("text", ["abc", "-1", "0", "0s", "5x", ""])
def test_invalid_time_limit(capsys, text):
    line = assert_usage_error(capsys, "solve", "ta001", "--time-limit", text, option="--time-limit")
    assert "Traceback" not in line


@pytest.mark.parametrize(
    "text, seconds",
    [("90", 90), ("90s", 90), ("5m", 300), ("1.5h", 5400), ("2d", 172800), (" 2M ", 120), ("0.25", 0.25)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


# --------------------------------------------------------------------------- input errors (exit 2)


@pytest.mark.parametrize(
    "name, text",
    [
        ("ragged", "3 3\n1 2 3\n4 5\n6 7 8\n"),
        ("nonnumeric", "2 2\n1 x\n3 4\n"),
        ("negative", "2 2\n1 -2\n3 4\n"),
        ("float", "2 2\n1 2.5\n3 4\n"),
        ("too_few_rows", "3 2\n1 2\n3 4\n"),
        ("too_many_rows", "1 2\n1 2\n3 4\n"),
        ("bad_header", "2\n1 2\n3 4\n"),
        ("zero_jobs", "0 2\n"),
        ("empty", ""),
        ("vfr_bad_machine", "2 2\n0 1 1 2\n1 3 0 4\n"),
    ],
)
def test_bad_file(capsys, tmp_path, name, text):
    path = write(tmp_path / f"{name}.txt", text)
    fmt = ["--format", "vfr"] if name.startswith("vfr") else []
    code, out, err = run(capsys, "solve", path, *fmt, "--quiet")
    assert_input_error(code, out, err)
    assert f"{name}.txt" in err  # the message names the file


@pytest.mark.parametrize("name", ["ta121", "ta0", "ta000"])
def test_unknown_taillard_name(capsys, name):
    code, out, err = run(capsys, "solve", name, "--quiet")
    assert_input_error(code, out, err)
    assert "Taillard" in err


def test_missing_file(capsys, tmp_path):
    code, out, err = run(capsys, "solve", str(tmp_path / "nope.txt"), "--quiet")
    assert_input_error(code, out, err)
    assert "nope.txt" in err


def test_directory_instead_of_file(capsys, tmp_path):
    assert_input_error(*run(capsys, "solve", str(tmp_path), "--quiet"))


def test_non_utf8_file(capsys, tmp_path):
    path = tmp_path / "binary.txt"
    path.write_bytes(b"2 2\n\xff\xfe 1\n1 1\n")
    assert_input_error(*run(capsys, "solve", str(path), "--quiet"))


def test_times_too_large_for_32_bit_makespans_are_rejected(capsys, tmp_path):
    big = 2_000_000_000
    path = write(tmp_path / "big.txt", f"2 2\n{big} {big}\n{big} {big}\n")
    code, out, err = run(capsys, "solve", path, "--json", "--quiet")
    assert_input_error(code, out, err)
    assert "big.txt" in err and "total processing time" in err


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_an_endless_instance_file_is_refused_at_once(tmp_path, kind, patience):
    """``pbbflow solve /dev/zero`` read until memory ran out (a MemoryError traceback); a FIFO
    waited for a writer: neither is a regular file, and neither is opened for reading."""
    path = "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "pipe.txt")
        os.mkfifo(path)
    start = time.monotonic()
    proc = subprocess.run(
        _command() + ["solve", path], capture_output=True, text=True, timeout=patience(60), cwd=tmp_path, check=False
    )
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    assert proc.stderr == f"pbbflow: error: {path}: not a regular file\n"
    assert time.monotonic() - start < patience(30)


def test_an_instance_file_above_the_size_limit_is_refused(capsys, tmp_path):
    from pbbflow.core.files import MAX_FILE_BYTES

    path = tmp_path / "huge.txt"
    with open(path, "wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_FILE_BYTES + 1)
    code, out, err = run(capsys, "solve", str(path), "--quiet")
    assert_input_error(code, out, err)
    assert f"huge.txt: the file has {MAX_FILE_BYTES + 1} bytes, more than the limit of {MAX_FILE_BYTES}" in err


def test_names_from_instance_files_are_printed_escaped(capsys, tmp_path):
    """A file's name is the instance's: printed with its control characters escaped, never raw."""
    path = write(tmp_path / "t\x1b[31m\u202e.txt", taillard_text(TINY))
    code, out, err = run(capsys, "heuristic", path, "--time-limit", "0.1")
    assert code == 0 and "instance     t\\x1b[31m\\u202e (4 jobs x 3 machines)" in out, (out, err)
    assert all(line.isprintable() for line in out.splitlines())
    bad = write(tmp_path / "bad\x1b[2J.txt", "2 2\n1 \x1b[2J\n3 4\n")
    code, out, err = run(capsys, "solve", bad, "--quiet")
    assert_input_error(code, out, err)
    assert "bad\\x1b[2J.txt: line 2: processing time" in err and err.rstrip("\n").isprintable()


# --------------------------------------------------------------------------- usage errors (argparse)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--ub", "0"], "--ub"),
        (["--ub", "x"], "--ub"),
        (["--ub", "-5"], "--ub"),
        (["--threads", "0"], "--threads"),
        (["--threads", "two"], "--threads"),
        (["--node-limit", "0"], "--node-limit"),
        (["--bound", "lb3"], "--bound"),
        (["--branch", "sideways"], "--branch"),
        (["--format", "xml"], "--format"),
        (["--orientation", "diagonal"], "--orientation"),
        (["--no-such-option"], None),
    ],
)
def test_usage_errors(capsys, argv, option):
    assert_usage_error(capsys, "solve", "ta001", *argv, option=option)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["solve", "ta001", "--ub", "１２００"], "--ub"),
        (["solve", "ta001", "--ub", "1_200"], "--ub"),
        (["solve", "ta001", "--node-limit", "١٠٠"], "--node-limit"),
        (["solve", "ta001", "--time-limit", "１０m"], "--time-limit"),
        (["solve", "ta001", "--checkpoint-every", "٣٠"], "--checkpoint-every"),
        (["solve", "ta001", "--threads", "２"], "--threads"),
        (["solve", "ta001", "--gpus", "１"], "--gpus"),
        (["solve", "ta001", "--gpus-per-job", "-1"], "--gpus-per-job"),
        (["resume", "r.zarr", "--workers", "２"], "--workers"),
        (["heuristic", "ta001", "--time-limit", "1", "--seed", "７"], "--seed"),
    ],
)
def test_numbers_are_written_in_ascii_digits(capsys, argv, option):
    # --dry-run: a value wrongly accepted prints a job script (and exits 0) instead of running
    dry_run = ["--dry-run"] if argv[0] != "heuristic" else []
    assert_usage_error(capsys, *argv, *dry_run, option=option)


def test_a_file_with_fullwidth_digits_is_an_input_error(capsys, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("2 2\n1 2\n3 ４\n", encoding="utf-8")
    code, out, err = run(capsys, "solve", str(path), "--quiet")
    assert_input_error(code, out, err)
    assert f"{path}: line 3: processing time '４' is not a number (digits must be ASCII 0-9)" in err


@pytest.mark.parametrize("argv", [[], ["solve"], ["frobnicate", "ta001"]])
def test_missing_command_or_instance(capsys, argv):
    assert_usage_error(capsys, *argv)


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["solve", "ta001", "--no-such-option"],
            "pbbflow solve: error: unrecognized arguments: --no-such-option (pbbflow solve --help for usage)",
        ),
        (["info"], "pbbflow info: error: the following arguments are required: run (pbbflow info --help for usage)"),
        (["--version"], "pbbflow: error: the following arguments are required: command (pbbflow --help for usage)"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command(capsys, argv, line):
    assert assert_usage_error(capsys, *argv) == line


def test_help_exits_0(capsys):
    with pytest.raises(SystemExit) as excinfo:
        main(["solve", "--help"])
    assert excinfo.value.code == 0
    out, _ = capsys.readouterr()
    assert out.startswith("usage: pbbflow solve")
    for option in ("--ub", "--bound", "--branch", "--threads", "--time-limit", "--node-limit", "--json"):
        assert option in out


# --------------------------------------------------------------------------- the real console script


def _command() -> list[str]:
    exe = shutil.which("pbbflow")
    return [exe] if exe else [sys.executable, "-m", "pbbflow.cli.main"]


@pytest.mark.parametrize(
    "argv, code",
    [
        (["solve", "ta001", "--json"], 0),
        (["solve", "ta021", "--time-limit", "LIMIT", "--dashboard-after", "0.5", "--json"], 3),
        (["solve", "ta121"], 2),
        (["solve", "ta001", "--ub", "0"], 2),
    ],
    ids=["optimal", "limit", "input-error", "usage-error"],
)
def test_console_script_exit_codes(argv, code, tmp_path, patience):
    # LIMIT: a search long enough for the dashboard to come during it (about 2.8 s into it on an idle
    # 2-core machine: --dashboard-after's 0.5 s, then 2.3 s of adding it beside the explorers)
    argv = [f"{patience(5):.1f}" if arg == "LIMIT" else arg for arg in argv]
    proc = subprocess.run(_command() + argv, capture_output=True, text=True, timeout=patience(120), cwd=tmp_path)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    watch = re.findall(r"watch the run at (\S+)", proc.stderr)
    if code == 0:  # shorter than --dashboard-after (5 s) after start-up: no dashboard, no link
        result = json.loads(proc.stdout)
        assert result["status"] == "optimal" and result["makespan"] == TA001_OPT
        assert watch == [] and result["startup"].get("dashboard_s") is None
    elif code == 3:  # the dashboard comes during the search: its link once, the pbbflow page
        result = json.loads(proc.stdout)
        assert result["status"] == "limit" and result["startup"]["dashboard_s"] > 0
        assert len(watch) == 1 and re.fullmatch(r"http://127\.0\.0\.1:\d+/pbbflow", watch[0]), proc.stderr
    else:
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        expected = "pbbflow: error:" if argv[1] == "ta121" else "pbbflow solve: error: argument --ub"
        assert proc.stderr.startswith(expected)


def test_module_entry_point(tmp_path, patience):
    proc = subprocess.run(
        [sys.executable, "-m", "pbbflow.cli.main", "solve", "ta001", "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=patience(120),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["makespan"] == TA001_OPT


def test_ctrl_c_stops_with_a_limit_result(tmp_path, patience):
    """SIGINT stops the explorer threads at their next chunk: exit 3 and a valid partial result."""
    path = tmp_path / "c.zarr"
    proc = subprocess.Popen(
        _command() + ["solve", "ta021", "--ub", "neh", "--json", "--run", str(path), "--checkpoint-every", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_for_committed_nodes(path, patience(120))  # the explorers are searching
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=patience(60))
    assert proc.returncode == 3, (out, err)
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "limit" and 0 < result["remaining_fraction"] < 1
    assert result["lower_bound"] <= 2297 <= result["makespan"]  # 2297: ta021's optimum


def test_progress_bar_line(monkeypatch):
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal: every field
    stream = io.StringIO()
    bar = ProgressBar(stream, "http://127.0.0.1:8787/status", every=0)
    bar(
        Progress(
            elapsed_s=3723.0,
            nodes=10,
            nodes_per_s=5e6,
            ub=1484,
            remaining_fraction=0.25,
            remaining_log10=math.log10(0.25),
            active_explorers=2,
        )
    )
    bar.close()
    line = stream.getvalue()
    assert line.startswith("\r[" + "#" * 18 + "." * 6 + "]") and line.endswith("\n")
    assert "25.00% left" in line and "5.00 M nodes/s" in line and "UB 1484" in line and "1:02:03" in line
    assert "http://127.0.0.1:8787/status" in line
    small = io.StringIO()
    ProgressBar(small, every=0)(
        Progress(
            elapsed_s=0.5,
            nodes=10,
            nodes_per_s=20.0,
            ub=1484,
            remaining_fraction=0.25,
            remaining_log10=math.log10(0.25),
            active_explorers=2,
        )
    )
    assert "left      20 nodes/s  UB" in small.getvalue()


def test_a_progress_line_without_a_share_left_shows_no_bar(monkeypatch):
    """A search that does not count its share left (flow shop's ``solve`` in this process)."""
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    ProgressBar(stream, every=0)(Progress(3.0, 10, 20.0, 1484, math.nan, None, 2))
    assert stream.getvalue() == "\r    20 nodes/s  UB 1484  0:00:03  2 explorers"


def test_the_progress_line_is_printable(monkeypatch):
    """What the bar shows (its fields, the link, a line printed in its place) cannot move the
    cursor or colour the terminal: control characters come escaped."""
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    bar = ProgressBar(stream, "http://h:1/\x1b[2J\u202e", every=0)
    progress = Progress(
        elapsed_s=1.0,
        nodes=10,
        nodes_per_s=20.0,
        ub="9\x1b[31m",
        remaining_fraction=0.5,
        remaining_log10=math.log10(0.5),
        active_explorers=1,
    )
    bar(progress)
    bar.print("pbbflow: watch the run at http://h:1/\x1b[2J\nmore")
    bar(progress)
    bar.close()
    text = stream.getvalue()
    assert "http://h:1/\\x1b[2J\\u202e" in text and "UB 9\\x1b[31m" in text and "\\x1b[2J\\nmore" in text
    assert text.replace("\r", "").replace("\n", "").isprintable() and text.count("\n") == 2


BIG_PROGRESS = dict(
    elapsed_s=360000.0,
    nodes=10,
    nodes_per_s=123.4e6,
    ub=123456,
    remaining_fraction=3.16e-15,
    remaining_log10=-14.5,
    active_explorers=1024,
)


@pytest.mark.parametrize(
    ("columns", "fields"),
    [
        (200, ["[####", "3.16e-15 left", "123 M nodes/s", "UB 123456", "100:00:00", "1024 explorers", "http://h:8787"]),
        (80, ["[####", "3.16e-15 left", "123 M nodes/s", "UB 123456", "100:00:00"]),
        (60, ["3.16e-15 left", "123 M nodes/s", "UB 123456", "100:00:00"]),
        (45, ["3.16e-15 left", "123 M nodes/s", "UB 123456"]),
        (30, ["3.16e-15 left", "UB 123456"]),
        (20, ["3.16e-15 left"]),
        (8, ["3.16e-"]),
    ],
)
def test_the_progress_line_fits_the_terminal(monkeypatch, columns, fields):
    """Never wider than the terminal (its last column left blank); the least important fields go first."""
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    monkeypatch.setenv("COLUMNS", str(columns))
    stream = io.StringIO()
    ProgressBar(stream, "http://h:8787/pbbflow", every=0)(Progress(**BIG_PROGRESS))
    line = stream.getvalue()
    assert line.startswith("\r") and len(line) - 1 <= columns - 1
    everything = ["[####", "left", "nodes/s", "UB", "100:00:00", "explorers", "http://"]
    assert [f for f in everything if f in line] == [f for f in everything if any(f in g for g in fields)]
    assert all(field in line for field in fields)


@pytest.mark.parametrize("tty", [True, False])
def test_the_dashboard_link_is_printed_once_when_it_comes(monkeypatch, tty):
    """A link found during the search: one whole line (in place of the bar, drawn again below it
    with the link), and none before it is known."""
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.cli.runs import _Watch
    from pbbflow.core.progress import Progress

    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    startup = type("Startup", (), {"link": None})()
    bar = ProgressBar(stream, every=0) if tty else None
    watch = _Watch(startup, bar)
    watch.announce()
    watch(Progress(**BIG_PROGRESS))
    startup.link = "http://127.0.0.1:8787/pbbflow"
    for _ in range(2):
        watch(Progress(**BIG_PROGRESS))
    if bar is not None:
        bar.close()
    rows = stream.getvalue().split("\n")
    assert stream.getvalue().count("watch the run at") == 1
    if tty:  # what each terminal row shows in the end: the text after its last carriage return
        (bar_drawn, *_), shown = rows[0][1:].split("\r"), [row.rsplit("\r", 1)[-1] for row in rows]
        assert "http://" not in bar_drawn and len(shown[0]) >= len(bar_drawn)  # the bar blanked
        assert shown[0].rstrip() == "pbbflow: watch the run at http://127.0.0.1:8787/pbbflow"
        assert shown[1].startswith("[") and shown[1].rstrip().endswith("http://127.0.0.1:8787/pbbflow")
        assert shown[2:] == [""]
    else:
        assert rows == ["pbbflow: watch the run at http://127.0.0.1:8787/pbbflow", ""]


def test_a_shorter_progress_line_blanks_the_longer_one_before_it(monkeypatch):
    import io

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.core.progress import Progress

    stream = io.StringIO()
    bar = ProgressBar(stream, every=0)
    monkeypatch.setenv("COLUMNS", "200")
    bar(Progress(**BIG_PROGRESS))
    monkeypatch.setenv("COLUMNS", "60")  # the terminal shrank
    bar(Progress(**BIG_PROGRESS))
    second = stream.getvalue().split("\r")[2]
    assert len(second) == 59 and second.rstrip().endswith("100:00:00")


def test_the_terminal_width_is_the_streams_own(monkeypatch):
    import fcntl
    import os
    import pty
    import struct
    import termios

    from pbbflow.cli.progress import terminal_columns

    monkeypatch.setenv("COLUMNS", "200")  # stdout's, say: stderr's terminal wins
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 50, 0, 0))
    with os.fdopen(slave, "w") as stream:
        assert terminal_columns(stream) == 50
    os.close(master)


def test_the_terminal_width_falls_back_to_80(monkeypatch):
    import io
    import os

    from pbbflow.cli.progress import terminal_columns

    def no_terminal(*args):
        raise OSError("not a terminal")

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    assert terminal_columns(io.StringIO()) == 80


@pytest.mark.parametrize(
    ("size", "n", "shown"),
    [
        (mpz(3) * factorial(20) // 8, 20, "37.50%"),  # a percentage down to 0.01 %
        (factorial(20) // 10**6, 20, "1.00e-06"),
        (mpz(96) * 10**48, 50, "3.16e-15"),  # ta056 after 48 G of its 314 G nodes printed 0.0000 % here
        (mpz(1), 200, "10^-374.9"),  # below the smallest float
        (mpz(0), 20, "0"),
    ],
)
def test_remaining_shares_say_something_at_any_size(size, n, shown):
    from pbbflow.cli.progress import format_share
    from pbbflow.flowshop.intervals import share_log10

    log10 = share_log10(size, n)
    fraction = int(size) / int(factorial(n))
    assert format_share(fraction, log10) == shown
    if size:
        assert log10 == pytest.approx(math.log10(int(size)) - math.log10(int(factorial(n))), abs=1e-9)


@pytest.mark.parametrize(
    ("rate", "shown"),
    [
        (0.0, "0 nodes/s"),
        (1.4, "1 nodes/s"),
        (999.4, "999 nodes/s"),
        (999.6, "1.00 k nodes/s"),
        (12_345, "12.3 k nodes/s"),
        (99_960, "100 k nodes/s"),
        (999_700, "1.00 M nodes/s"),
        (5e6, "5.00 M nodes/s"),
        (123.4e6, "123 M nodes/s"),
        (1.2e9, "1.20 G nodes/s"),
        (3.2e12, "3200 G nodes/s"),
    ],
)
def test_rates_have_a_unit_that_fits(rate, shown):
    from pbbflow.cli.progress import format_rate

    assert format_rate(rate) == shown


def test_the_summary_and_info_print_a_small_rate_with_its_unit(capsys, tmp_path, tiny_file):
    from pbbflow.cli.progress import format_rate

    path = str(tmp_path / "r.zarr")
    code, out, _ = run(capsys, "solve", tiny_file, "--run", path, "--quiet")
    result = json.loads(run(capsys, "info", path, "--json")[1])
    rate = format_rate(result["nodes"] / result["elapsed_s"])  # a few nodes: nodes/s or k nodes/s
    assert code == 0 and "M nodes/s" not in rate
    assert f"({rate})" in out and f"({rate})" in run(capsys, "info", path)[1]


def test_info_prints_a_tiny_remaining_share(capsys, tmp_path):
    from pbbflow.flowshop.family import create_flowshop_run
    from pbbflow.flowshop.instance import FlowShop
    from pbbflow.flowshop.intervals import WorkUnit

    p = np.random.default_rng(0).integers(1, 99, size=(50, 5)).astype(np.int32)
    store = create_flowshop_run(tmp_path / "r.zarr", FlowShop("big", p), ub=None, bound="lb1", branch="minmin")
    cp = store.latest()
    store.commit(
        remaining=WorkUnit(50, [(10**30, 10**30 + 10**50)]),
        incumbent=cp.incumbent,
        solution=cp.solution,
        nodes=1,
        leaves=0,
        elapsed_s=1.0,
        series=cp.series,
    )
    code, out, err = run(capsys, "info", str(tmp_path / "r.zarr"))
    assert code == 0 and "remaining    3.29e-15 of the search space (log10 -14.48)" in out, out
    code, out, err = run(capsys, "info", str(tmp_path / "r.zarr"), "--json")
    assert json.loads(out)["remaining_log10"] == pytest.approx(50 - math.log10(int(factorial(50))))


# --------------------------------------------------------------------------- iterated greedy


def test_heuristic_command_json(capsys, ta001):
    code, out, err = run(capsys, "heuristic", "ta001", "--time-limit", "0.5", "--seed", "3", "--json")
    assert code == 0 and "Traceback" not in err
    result = json.loads(out)
    assert set(result) == {"instance", "status", "makespan", "permutation", "elapsed_s"} and result["status"] == "done"
    assert sorted(result["permutation"]) == list(range(20)) and cmax(ta001, result["permutation"]) == result["makespan"]
    assert TA001_OPT <= result["makespan"] and result["elapsed_s"] >= 0.5


def test_heuristic_command_human_output_and_usage_errors(capsys):
    code, out, _ = run(capsys, "heuristic", "ta001", "--time-limit", "0.2")
    assert code == 0 and "iterated greedy" in out and "\nstatus       done\n" in out
    assert_usage_error(capsys, "heuristic", "ta001", option="--time-limit")  # required
    assert_usage_error(capsys, "heuristic", "ta001", "--time-limit", "1", "--seed", "x", option="--seed")


@pytest.mark.parametrize("seed", ["-1", str(2**64), str(2**64 + 7)])  # these wrapped onto other seeds
def test_heuristic_seeds_outside_64_bits_are_usage_errors(capsys, seed):
    assert_usage_error(capsys, "heuristic", "ta001", "--time-limit", "0.1", "--seed", seed, option="--seed")


def test_heuristic_takes_the_largest_seed(capsys):
    code, out, err = run(capsys, "heuristic", "ta001", "--time-limit", "0.1", "--seed", str(2**64 - 1))
    assert code == 0 and f"seed {2**64 - 1})" in out, err


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "human"])
def test_ctrl_c_stops_the_heuristic_with_its_best_schedule(capsys, monkeypatch, as_json, patience):
    import os

    from pbbflow.flowshop import iterated_greedy as ig

    real, chunks = ig._iterate, []

    def iterate(*args):  # Ctrl-C during the fourth chunk of iterations
        chunks.append(1)
        if len(chunks) == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(ig, "_iterate", iterate)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler; SIG_IGN where started in the background
    started = time.monotonic()
    code, out, err = run(capsys, "heuristic", "ta056", "--time-limit", "60", *(["--json"] if as_json else []))
    assert code == 3 and err == "" and time.monotonic() - started < patience(30), (out, err)
    if as_json:
        result = json.loads(out)
        assert result["status"] == "stopped" and sorted(result["permutation"]) == list(range(50))
        assert cmax(taillard_instance(56).p.tolist(), result["permutation"]) == result["makespan"]
    else:
        assert "\nstatus       stopped\n" in out and "\nmakespan     " in out and "\npermutation  " in out
    assert signal.getsignal(signal.SIGINT) == before  # the handler is put back


def test_sigterm_stops_the_heuristic_command_with_its_best_schedule(tmp_path, patience):
    limit = patience(120)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbbflow.cli.main", "heuristic", "ta056", "--time-limit", f"{limit:.0f}", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    wait_for_handler(proc, patience(60))  # the command's handlers are in: iterated greedy starts
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=patience(60))
    assert proc.returncode == 3 and err == "", (out, err)
    result = json.loads(out)
    assert result["status"] == "stopped" and sorted(result["permutation"]) == list(range(50))
    assert result["elapsed_s"] < limit / 2


def test_an_interrupt_with_no_run_to_resume_has_no_resume_hint(capsys, monkeypatch):
    import pbbflow.flowshop.commands as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_instance", interrupted)
    assert run(capsys, "heuristic", "ta001", "--time-limit", "1") == (3, "", "pbbflow: interrupted\n")


@pytest.fixture
def a_run(tmp_path) -> str:
    from pbbflow.flowshop.family import create_flowshop_run

    create_flowshop_run(tmp_path / "r.zarr", taillard_instance(1), ub=None, bound="lb1", branch="minmin")
    return str(tmp_path / "r.zarr")


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", ["info", "info-json", "heuristic", "help"])
def test_a_reader_that_closes_early_ends_the_output_quietly(tmp_path, a_run, command, unbuffered):
    """``pbbflow info RUN | head -1``: no BrokenPipeError traceback; the command's exit code
    when it had finished (its output waiting in stdout's buffer), 1 when cut short mid-way."""
    import os

    argv = {
        "info": ["info", a_run],
        "info-json": ["info", a_run, "--json"],
        "heuristic": ["heuristic", "ta001", "--time-limit", "0.1"],
        "help": ["solve", "--help"],
    }[command]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    read, write = os.pipe()
    os.close(read)  # no reader: every write to stdout fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pbbflow.cli.main", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode == (1 if unbuffered and command != "help" else 0)  # argparse ignores a failed write


@pytest.mark.parametrize(("ub", "initial"), [(None, "ig"), ("neh", "neh"), ("ig", "ig"), ("100000", "neh")])
def test_the_initial_schedule_is_recorded(capsys, tmp_path, ta001, ub, initial):
    argv = ["ta001", "--run", str(tmp_path / "r.zarr")] + ([] if ub is None else ["--ub", ub])
    check_optimal(solve_json(capsys, *argv), ta001, TA001_OPT)
    code, out, _ = run(capsys, "info", str(tmp_path / "r.zarr"), "--json")
    options = json.loads(out)["options"]
    assert code == 0 and options["initial"] == initial and options["initial_makespan"] >= TA001_OPT


def test_an_internal_error_in_an_explorer_checkpoints_and_logs_its_traceback(capsys, monkeypatch, tmp_path):
    """An explorer task that raises (after exploring a little) ends the run with exit 1 and one
    line naming the error, the traceback's log file and the resume command; resuming proves
    the fixed tree with exactly its node count (the failed task's work was in the ledger)."""
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.family import CpuEngine as _CpuEngine
    from pbbflow.flowshop.intervals import WorkUnit

    real_run, calls = _CpuEngine.run, []

    def failing_run(self, ub, seconds, report, waiting, max_nodes=None):
        calls.append(ub)
        if len(calls) > 1:
            raise RuntimeError("injected failure")
        return real_run(self, ub, 0.05, report, waiting, max_nodes)

    monkeypatch.setattr(_CpuEngine, "run", failing_run)
    path = tmp_path / "my run.zarr"
    code, out, err = run(capsys, "solve", "ta030", "--ub", "2178", "--run", str(path), "--json", "--quiet")
    log = Path(str(path) + ".error.log")
    assert code == 1 and out == "", (out, err)
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "internal error in task pbbflow-explorer-" in line and "RuntimeError: injected failure" in line
    assert f"traceback in {log}" in line and line.endswith(f"checkpointed: pbbflow resume '{path}'")  # quoted
    assert "Traceback" in log.read_text() and "injected failure" in log.read_text()
    monkeypatch.setattr(_CpuEngine, "run", real_run)
    result = json.loads(run(capsys, "resume", str(path), "--json", "--quiet")[1])
    whole = explore(taillard_instance(30).p, WorkUnit.full(20), 2178, threads=2)
    assert result["status"] == "bound_proved" and result["nodes"] == whole.nodes


# --------------------------------------------------------------------------- run stores (issue 13)


def forbid_cluster(monkeypatch) -> None:
    """From now on, a command that starts a cluster fails the test (checks must come before)."""
    import pbbflow.cli.main as cli
    import pbbflow.flowshop.commands as flowshop_cli

    def refuse(*args, **kwargs):
        raise AssertionError("the command started a cluster")

    for module in (cli, flowshop_cli):
        monkeypatch.setattr(module, "Startup", refuse)


def edit_root_attributes(path: Path, **options) -> None:
    """Edit the options in a store's root zarr.json, as a text editor would."""
    meta = json.loads((path / "zarr.json").read_text())
    meta["attributes"]["options"].update(options)
    (path / "zarr.json").write_text(json.dumps(meta))


def test_info_and_resume_refuse_a_store_whose_options_were_edited(capsys, monkeypatch, tmp_path):
    """Issue 13: search_ub and root_lower_bound edited in a finished ta001 store made info and
    resume report bound_proved, makespan 1278, lower bound 1500, exit 0."""
    path = tmp_path / "r.zarr"
    solve_json(capsys, "ta001", "--run", str(path))
    edit_root_attributes(path, search_ub=1500, root_lower_bound=1500)
    forbid_cluster(monkeypatch)
    for command in ("info", "resume", "plot"):
        code, out, err = run(capsys, command, str(path), *(["--out", str(tmp_path / "plots")] * (command == "plot")))
        assert_input_error(code, out, err)
        assert "checksum" in err and str(path) in err
    meta = json.loads((path / "zarr.json").read_text())
    del meta["attributes"]["options"]
    (path / "zarr.json").write_text(json.dumps(meta))
    for command in ("info", "resume"):
        code, out, err = run(capsys, command, str(path))
        assert_input_error(code, out, err)
        assert "damaged run store: missing 'options'" in err


def resign_checkpoint(path: Path, change) -> None:
    """Apply ``change`` to the current checkpoint's attributes and recompute its sha256, as a
    deliberate forger would."""
    from pbbflow.storage import runstore

    root = zarr.open_group(path, mode="r+")
    version = root[root.attrs["current"]]
    attrs = version.attrs.asdict()
    change(attrs)
    keys = ["starts", "ends", "end_is_total", "permutation", *(f"series/{c}" for c in attrs["series_columns"])]
    arrays = [(key, version[key][...]) for key in keys]
    attrs["sha256"] = runstore.checksum(arrays, {**attrs, "store_sha256": root.attrs["sha256"]})
    version.update_attributes(attrs)


def test_info_reports_the_recorded_result_only_when_it_agrees_with_its_checkpoint(capsys, tmp_path):
    path = tmp_path / "r.zarr"
    solved = solve_json(capsys, "ta001", "--run", str(path))
    code, out, _ = run(capsys, "info", str(path), "--json")
    info = json.loads(out)
    assert code == 0 and {k: info[k] for k in solved if k != "startup"} == {
        k: v for k, v in solved.items() if k != "startup"
    }
    resign_checkpoint(path, lambda attrs: attrs["result"].update(lower_bound=1500))
    code, out, err = run(capsys, "info", str(path))
    assert_input_error(code, out, err)
    assert "records a result that disagrees with its state" in err


def test_a_live_run_keeps_its_store_from_an_overwrite_and_a_second_resume(capsys, monkeypatch, tmp_path, patience):
    """Issue 13: ``solve --overwrite`` of the store a live run was writing let that run's commits
    land in the new store, judged against its options (ta017 reported optimal 1562; it is 1484)."""
    path = tmp_path / "x.zarr"
    live = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pbbflow.cli.main",
            "solve",
            "ta017",
            "--ub",
            "1484",
            "--run",
            str(path),
            "--json",
            "--quiet",
            "--workers",
            "1",
            "--checkpoint-every",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        wait_for_committed_nodes(path, patience(120))  # the live run has searched and checkpointed
        forbid_cluster(monkeypatch)
        for argv in (
            ["solve", "ta017", "--ub", "neh", "--run", str(path), "--overwrite", "--time-limit", "2"],
            ["resume", str(path)],
        ):
            code, out, err = run(capsys, *argv)
            assert_input_error(code, out, err)
            assert f"in use by another run (pid {live.pid} on host " in err
    finally:
        live.send_signal(signal.SIGTERM)
        out, err = live.communicate(timeout=patience(120))
    assert live.returncode == 3, err
    stopped = json.loads(out)
    code, out, _ = run(capsys, "info", str(path), "--json")
    info = json.loads(out)
    assert code == 0 and info["options"]["user_ub"] == 1484 and info["nodes"] == stopped["nodes"]
    assert info["status"] == "limit" and info["lower_bound"] <= 1484 <= info["makespan"]


@pytest.fixture
def read_only():
    """``make(path)`` makes a directory read-only: ``chattr +i`` as root (which no mode bit binds),
    ``chmod a-w`` otherwise; undone after the test."""
    undo = []

    def make(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o555)
            undo.append(lambda: path.chmod(0o755))
        elif subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:
            undo.append(lambda: subprocess.run(["chattr", "-i", str(path)], check=True))
        else:
            pytest.skip("chattr +i failed: root cannot make a read-only directory here")

    yield make
    for step in undo:
        step()


def test_solve_refuses_a_run_path_it_cannot_write_before_a_cluster_starts(capsys, monkeypatch, tmp_path, read_only):
    """Issue 13: these were tracebacks (exit 1)."""
    (tmp_path / "afile").write_text("")
    store = tmp_path / "store.zarr"
    solve_json(capsys, "ta001", "--run", str(store))
    (tmp_path / "link.zarr").symlink_to(store)
    (tmp_path / "locked").mkdir()
    read_only(tmp_path / "locked")
    forbid_cluster(monkeypatch)
    for run_path, extra, problem in [
        ("afile/x.zarr", [], "cannot create it (" + str(tmp_path / "afile") + " is not a directory)"),
        ("/proc/x.zarr", [], "cannot create it (No such file or directory)"),
        ("afile", ["--overwrite"], "exists and is not a directory"),
        ("link.zarr", ["--overwrite"], "is a symbolic link; refusing to overwrite through it"),
        ("locked/x.zarr", [], "cannot create it ("),
    ]:
        code, out, err = run(capsys, "solve", "ta001", "--run", str(tmp_path / run_path), *extra)
        assert_input_error(code, out, err)
        assert problem in err, err
    code, out, _ = run(capsys, "info", str(store), "--json")
    assert code == 0 and json.loads(out)["status"] == "optimal"  # not emptied through the link


def test_a_read_only_store_is_refused_before_a_cluster_starts(capsys, monkeypatch, tmp_path, read_only):
    """Issue 13: a read-only store was explored, then the final checkpoint failed with a traceback."""
    from pbbflow.flowshop.family import create_flowshop_run

    for victim in ("", "checkpoints"):
        path = tmp_path / f"ro{len(victim)}.zarr"
        create_flowshop_run(path, taillard_instance(21), ub=None, bound="lb1", branch="minmin").release()
        read_only(path / victim)
        forbid_cluster(monkeypatch)
        code, out, err = run(capsys, "resume", str(path))
        assert_input_error(code, out, err)
        assert f"{path}: cannot write it (" in err
        code, out, err = run(capsys, "solve", "ta021", "--run", str(path), "--overwrite")
        assert_input_error(code, out, err)
        monkeypatch.undo()


def test_plot_refuses_an_output_folder_it_cannot_write(capsys, tmp_path, read_only):
    path = tmp_path / "r.zarr"
    solve_json(capsys, "ta001", "--run", str(path))
    (tmp_path / "afile").write_text("")
    (tmp_path / "locked").mkdir()
    read_only(tmp_path / "locked")
    for out_dir, problem in [("afile", "(File exists)"), ("locked/plots", "cannot write the plots there (")]:
        code, out, err = run(capsys, "plot", str(path), "--out", str(tmp_path / out_dir))
        assert_input_error(code, out, err)
        assert problem in err


@pytest.mark.parametrize("kind", ["link", "dangling link", "fifo"])
def test_the_error_log_is_never_written_through_a_link_or_into_a_fifo(capsys, tmp_path, kind):
    """Someone's link at RUN.zarr.error.log: the traceback went to where it pointed (appended, or
    a new file made there); a FIFO there blocked the run's end.  Now: no log, said in the line."""
    from types import SimpleNamespace

    from pbbflow.cli.runs import error_log_path, report_failure
    from pbbflow.workflow.run import RunFailed

    store = SimpleNamespace(path=tmp_path / "r.zarr")
    log, victim = error_log_path(store.path), tmp_path / "victim"
    if kind == "fifo":
        os.mkfifo(log)
    else:
        if kind == "link":
            victim.write_text("precious\n")
        log.symlink_to(victim)
    failure = RunFailed("task x", "RuntimeError: boom", "Traceback (most recent call last): ...", checkpointed=True)

    def blocked(signum, frame):
        raise AssertionError("report_failure blocked opening the log")  # (a TimeoutError is an OSError)

    previous = signal.signal(signal.SIGALRM, blocked)  # a test that fails, not one that hangs
    signal.alarm(10)
    try:
        assert report_failure(store, failure) == 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    reason = "not a regular file" if kind == "fifo" else "a symbolic link, not followed"
    assert err == (
        f"pbbflow: internal error in task x: RuntimeError: boom; no traceback log ({reason}: {log}); "
        f"checkpointed: pbbflow resume {store.path}\n"
    )
    assert victim.read_text() == "precious\n" if kind == "link" else not victim.exists()
    assert log.is_symlink() or kind == "fifo"


def test_plot_never_writes_through_a_link(capsys, tmp_path):
    path = tmp_path / "r.zarr"
    solve_json(capsys, "ta001", "--run", str(path))
    out_dir, victim = tmp_path / "plots", tmp_path / "victim"
    out_dir.mkdir()
    victim.write_text("precious")
    (out_dir / "history.png").symlink_to(victim)
    code, out, err = run(capsys, "plot", str(path), "--out", str(out_dir))
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, (out, err)
    assert "cannot write the plots there (a symbolic link, not followed)" in err
    assert victim.read_text() == "precious"


def test_a_write_failure_during_a_run_is_one_line_and_exit_1(capsys, monkeypatch, tmp_path):
    """Issue 13: a failed final checkpoint (disk full, store made read-only) was a traceback."""
    from pbbflow.storage.runstore import RunStore

    real_commit = RunStore.commit

    def commit(self, **kwargs):
        if kwargs["nodes"] > 0:
            raise OSError(28, "No space left on device")
        return real_commit(self, **kwargs)

    monkeypatch.setattr(RunStore, "commit", commit)
    path = tmp_path / "r.zarr"
    code, out, err = run(capsys, "solve", "ta001", "--run", str(path), "--quiet")
    assert code == 1 and out == "", (out, err)
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "internal error in the final checkpoint: OSError: [Errno 28] No space left on device" in line
    assert "No space left" in Path(str(path) + ".error.log").read_text()


def test_resume_answers_a_finished_or_damaged_store_before_a_cluster_starts(capsys, monkeypatch, tmp_path):
    """Issue 13: resume started a cluster before it looked at the store."""
    path = tmp_path / "r.zarr"
    solve_json(capsys, "ta001", "--run", str(path))
    info = {flag: run(capsys, "info", str(path), *flag)[1] for flag in ((), ("--json",))}
    forbid_cluster(monkeypatch)
    for flag in info:
        code, out, err = run(capsys, "resume", str(path), *flag)
        assert (code, out, err) == (0, info[flag], "")
    root = zarr.open_group(path, mode="r+")
    permutation = root[f"{root.attrs['current']}/permutation"]
    permutation[:2] = permutation[:2][::-1]
    code, out, err = run(capsys, "resume", str(path))
    assert_input_error(code, out, err)
    assert "checksum" in err
