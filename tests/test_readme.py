"""The README is a page for a fresh machine: every file its ``pbbflow`` commands name is in the
repository, its test command is the one CI runs, and its quick commands run as written."""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbbflow.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FILE_SUFFIXES = (".json", ".txt", ".py", ".csv", ".ipynb", ".onnx", ".fsp")
# README commands run here as written (from the repository's root), with what their output must say;
# a few seconds each once numba's cache is warm
QUICK = {
    "pbbflow minimize examples/B1-branin.json --json": '"status": "optimal"',
    "pbbflow minimize examples/model.py": "status       optimal",
    "pbbflow minimize examples/peaks-ann.onnx --domain -3:3 --maximize": "maximum      8.1057",
    "pbbflow solve examples/VFR20_10_3_Gap.txt": "makespan     1592",
}


def _shell_lines() -> list[str]:
    """The lines of the README's bash code blocks, continuation lines joined."""
    lines, inside = [], False
    for line in README.splitlines():
        if line.startswith("```"):
            inside = not inside and line.strip() == "```bash"
            continue
        if inside:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + line.strip()
            else:
                lines.append(line)
    return lines


def _pbbflow_commands() -> list[list[str]]:
    """Every ``pbbflow ...`` command of the README's bash blocks as its words, comments dropped
    (a line may chain commands with ``&&``)."""
    commands = []
    for line in _shell_lines():
        command: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word != "&&":
                command.append(word)
                continue
            if command[:1] == ["pbbflow"]:
                commands.append(command)
            command = []
    return commands


def test_every_file_a_readme_command_names_is_in_the_repository():
    named = {
        word
        for command in _pbbflow_commands()
        for word in command[1:]
        if word.endswith(FILE_SUFFIXES) and not word.startswith("-")
    }
    assert {"examples/B1-branin.json", "examples/VFR20_10_3_Gap.txt", "examples/model.py"} <= named
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []


def test_every_readme_command_parses():
    parser = build_parser()
    for command in _pbbflow_commands():
        parser.parse_args(command[1:])  # a usage error exits (SystemExit 2) naming the option


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == 'pip install -e ".[test]" && python -m pytest -q'
    assert any(line.split("#")[0].strip() == ci for line in _shell_lines())


def _console() -> list[str]:
    exe = shutil.which("pbbflow")
    return [exe] if exe else [sys.executable, "-m", "pbbflow.cli.main"]


@pytest.mark.parametrize("line", sorted(QUICK))
def test_a_quick_readme_command_runs_as_written(line, tmp_path):
    argv = shlex.split(line)
    assert argv in _pbbflow_commands()
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the README's paths, run stores in tmp_path
    proc = subprocess.run(_console() + argv[1:], check=False, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert QUICK[line] in proc.stdout
    if "--json" in argv:
        out = json.loads(proc.stdout)
        optimum = json.loads((ROOT / argv[2]).read_text())["optimum"]
        assert out["lower_bound"] <= optimum <= out["objective"] + 1e-6
