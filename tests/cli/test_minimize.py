"""``pbbflow minimize``: results, exit codes and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from pbbflow.cli.main import main

KEYS = {"problem", "status", "objective", "x", "lower_bound", "gap_abs", "gap_rel", "nodes", "subdomains", "elapsed_s"}


def test_a_built_in_problem_is_proved_as_json(capsys):
    assert main(["minimize", "peaks", "--json", "--subdomains", "64"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert KEYS <= set(out) and out["status"] == "optimal" and out["subdomains"] == 64
    assert out["lower_bound"] <= -6.551133332835842 <= out["objective"] + 1e-12
    assert out["gap_abs"] <= 1e-5 and len(out["x"]) == 2


def test_text_output_and_a_limit_exits_3(capsys, tmp_path):
    problem = tmp_path / "p.json"
    problem.write_text(
        json.dumps(
            {
                "name": "bowl",
                "variables": 2,
                "domain": [[-1, 2], [-3, 1]],
                "objective": "(x[0] - 0.5) ** 2 + sin(x[1]) ** 2 + x[0] * x[1]",
                "inequalities": ["x[0] + x[1] - 1"],
                "equalities": [],
            }
        )
    )
    assert main(["minimize", str(problem), "--node-limit", "1", "--subdomains", "4"]) == 3
    text = capsys.readouterr().out
    assert "status       limit" in text and "problem      bowl (2 variables, 1 inequalities" in text
    assert main(["minimize", str(problem), "--bound", "mvf"]) == 0
    assert "status       optimal" in capsys.readouterr().out


def test_an_infeasible_problem_exits_0_with_no_point(capsys, tmp_path):
    problem = tmp_path / "none.json"
    problem.write_text(
        json.dumps({"variables": 1, "domain": [[0, 1]], "objective": "x[0]", "inequalities": ["2 - x[0]"]})
    )
    assert main(["minimize", str(problem), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "infeasible" and out["objective"] is None and out["lower_bound"] is None


def test_a_search_here_and_a_run_print_the_same_answer(capsys, tmp_path):
    """``minimize`` in this process and ``info`` on a run store of the same problem print its answer
    alike: here an infeasible problem's, whose certified lower bound is inf (null in --json)."""
    from pbbflow.spatial.family import SpatialRun, first_work
    from pbbflow.spatial.load import load_problem
    from pbbflow.spatial.options import MinimizeOptions
    from pbbflow.workflow.run import create_run

    problem = tmp_path / "none.json"
    problem.write_text(
        json.dumps({"variables": 1, "domain": [[0, 1]], "objective": "x[0]", "inequalities": ["2 - x[0]"]})
    )
    answer = ("status ", "objective ", "x ", "lower bound ", "gap ")
    assert main(["minimize", str(problem)]) == 0
    here = [line for line in capsys.readouterr().out.splitlines() if line.startswith(answer)]
    instance = SpatialRun.new(load_problem(str(problem)), MinimizeOptions())
    first = first_work(instance)
    store = tmp_path / "r.zarr"
    create_run(store, instance, work=first.boxes, settled=first.settled, nodes=first.nodes)
    assert main(["info", str(store)]) == 0
    run = [line for line in capsys.readouterr().out.splitlines() if line.startswith(answer)]
    assert here == run
    assert [line.split(maxsplit=1)[0] for line in here] == ["status", "objective", "x", "lower", "gap"]
    assert "status       infeasible" in here and "lower bound  inf" in here


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    hostile = tmp_path / "h.json"
    marker = tmp_path / "pwned"
    hostile.write_text(
        json.dumps({"variables": 1, "domain": [[0, 1]], "objective": f"__import__('os').system('touch {marker}')"})
    )
    bad_power = tmp_path / "p.json"
    bad_power.write_text(json.dumps({"variables": 1, "domain": [[0, 1]], "objective": "x[0] ** 0.5"}))
    twice = tmp_path / "twice.json"  # json keeps the last key: it was solved without the constraint
    twice.write_text('{"domain": [[0, 1]], "objective": "x[0]", "inequalities": ["0.5 - x[0]"], "inequalities": []}')
    cases = [
        (["minimize", str(twice)], "pbbflow: error: twice.json: duplicate key 'inequalities'"),
        (["minimize", str(hostile)], "h.json"),
        (["minimize", str(bad_power)], "exponent"),
        (["minimize", str(tmp_path / "missing.json")], "no such file"),
        (["minimize", "no-such-builtin"], "peaks-ann"),
        (["minimize", "peaks", "--eps-abs", "-1"], "--eps-abs"),
        (["minimize", "peaks", "--bound", "mccormick"], "--bound"),
    ]
    for argv, expected in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "pbbflow.cli.main", *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert proc.returncode == 2, (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and expected in proc.stderr, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert not marker.exists()


def test_a_python_model_file(capsys, tmp_path):
    model = tmp_path / "ring.py"
    model.write_text(
        "from pbbflow.spatial import Model\n\n"
        "def model():\n"
        "    m = Model('ring')\n"
        "    x, y = m.variable(-2, 2), m.variable(-2, 2)\n"
        "    m.minimize(x - 2 * y)\n"
        "    m.subject_to(x**2 + y**2 <= 1)\n"
        "    return m\n"
    )
    assert main(["minimize", str(model), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["problem"] == "ring" and out["status"] == "optimal"
    assert out["lower_bound"] <= -(5**0.5) <= out["objective"] <= -(5**0.5) + 1e-5  # min of x - 2y on the disk


def test_the_help_names_every_built_in_problem():
    from pbbflow.spatial.commands import BUILTIN_NAMES
    from pbbflow.spatial.load import builtin_names

    assert sorted(BUILTIN_NAMES) == builtin_names()


HOSTILE_NAME = "a\x1b[31mRED\nline2\u202e"  # colours the terminal, starts a line, reverses the text
SHOWN_NAME = "a\\x1b[31mRED\\nline2\\u202e"


def test_names_from_files_are_printed_escaped(capsys, tmp_path):
    """minimize's and info's lines, and the error naming a file, show control characters escaped."""
    from pbbflow.spatial.family import SpatialRun, first_work
    from pbbflow.spatial.load import load_problem
    from pbbflow.spatial.options import MinimizeOptions
    from pbbflow.workflow.run import create_run

    problem = tmp_path / "p.json"
    problem.write_text(json.dumps({"name": HOSTILE_NAME, "domain": [[0, 1]], "objective": "(x[0] - 0.25) ** 2"}))
    assert main(["minimize", str(problem)]) == 0
    out = capsys.readouterr().out
    assert f"problem      {SHOWN_NAME} (1 variables" in out
    assert all(line.isprintable() for line in out.splitlines())
    instance = SpatialRun.new(load_problem(str(problem)), MinimizeOptions())
    first = first_work(instance)
    store = tmp_path / "r\x1b[2J.zarr"
    create_run(
        store,
        instance,
        work=first.boxes,
        incumbent=first.value,
        solution=first.x,
        settled=first.settled,
        nodes=first.nodes,
    )
    assert main(["info", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"problem      {SHOWN_NAME} (1 variables)" in out and "r\\x1b[2J.zarr" in out
    assert all(line.isprintable() for line in out.splitlines())
    bad = tmp_path / "bad\x1b[2J.json"
    bad.write_text(json.dumps({"domain": [[0, 1]], "objective": "x[0] +\u202e"}))
    assert main(["minimize", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pbbflow: error: bad\\x1b[2J.json (bad\\x1b[2J): objective") and err.count("\n") == 1
    assert err.rstrip("\n").isprintable()


def test_an_internal_error_of_minimize_is_one_line_and_a_log(capsys, monkeypatch, tmp_path):
    """No bare traceback: one line naming the log that holds it, exit 1."""
    from pbbflow.spatial import commands as minimize

    def broken(args):
        raise RuntimeError("the bounder broke\non two lines")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(minimize, "run", broken)
    assert main(["minimize", "peaks"]) == 1
    out, err = capsys.readouterr()
    log = tmp_path / "pbbflow" / "error.log"
    assert out == "" and err == (
        f"pbbflow: internal error: RuntimeError: the bounder broke\\non two lines; traceback in {log}\n"
    )
    assert "Traceback (most recent call last)" in log.read_text() and "def broken" not in err


def test_a_missing_package_names_itself_and_its_install(capsys, monkeypatch):
    from pbbflow.spatial import commands as minimize

    def without_scipy(args):
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    monkeypatch.setattr(minimize, "run", without_scipy)
    assert main(["minimize", "peaks"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the package 'scipy' is missing" in err and "-m pip install scipy" in err


def test_a_search_in_this_process_draws_its_bounds_on_the_bar(monkeypatch):
    """``minimize`` in this process reports the progress model the bar draws: one explorer, its
    certified lower bound, incumbent and open boxes."""
    import io
    import re

    from pbbflow.cli.progress import ProgressBar
    from pbbflow.spatial.bnb import minimize
    from pbbflow.spatial.load import load_problem
    from pbbflow.spatial.options import MinimizeOptions

    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    bar = ProgressBar(stream, every=0)
    minimize(load_problem("peaks"), MinimizeOptions(subdomains=4), progress=bar, progress_seconds=0.0)
    lines = [line.rstrip() for line in stream.getvalue().split("\r")[1:]]
    line = r"LB \S+  UB \S+  [\d,]+ open +[\d.]+ (?:[kMG] )?boxes/s  0:00:\d\d  1 explorers"
    assert lines and all(re.fullmatch(line, text) for text in lines)


def test_elapsed_s_is_the_searchs_own_as_the_apis(capsys, monkeypatch):
    """The command loads the code (collector off) before ``minimize`` starts its clock, runs the
    search with the collector on, as the API's caller does, and prints the search's own ``elapsed_s``:
    nothing of the command's path is added to it."""
    import gc

    from pbbflow.spatial import bnb

    events, results = [], []
    load_code, minimize = bnb.load_code, bnb.minimize

    def loading(problem, options=None):
        events.append(("load_code", gc.isenabled()))
        return load_code(problem, options)

    def searching(problem, options=None, **kwargs):
        events.append(("minimize", gc.isenabled()))
        results.append(minimize(problem, options, **kwargs))
        return results[-1]

    monkeypatch.setattr(bnb, "load_code", loading)
    monkeypatch.setattr(bnb, "minimize", searching)
    enabled = gc.isenabled()
    try:
        assert main(["minimize", "peaks", "--serial", "--json"]) == 0
    finally:
        gc.unfreeze()  # the command froze what it loaded: this test process keeps collecting it
    out = json.loads(capsys.readouterr().out)
    assert events == [("load_code", False), ("minimize", enabled)]
    assert out["elapsed_s"] == results[0].elapsed_s and out["nodes"] == results[0].nodes
