"""Each command's ``--help`` lists only the options that apply to it, in words about its own family,
and every option it lists is read by the command's code; the parser and the help load neither Dask
nor numba."""

import argparse
import importlib
import inspect
import json
import re
import subprocess
import sys

import pytest

from pbbflow.flowshop import commands as flowshop_cli
from pbbflow.flowshop.choices import BOUND_NAMES
from pbbflow.spatial import commands as minimize
from pbbflow.spatial import suite_commands

cli = importlib.import_module("pbbflow.cli.main")  # the module (pbbflow.cli.main is also the function)
COMMANDS = {
    "solve": flowshop_cli.solve,
    "resume": cli._resume,
    "heuristic": flowshop_cli.heuristic,
    "info": cli._info,
    "plot": cli._plot,
    "minimize": minimize.run,
    "verify": minimize.verify_command,
}
CLI_MODULES = (
    "pbbflow.cli",
    flowshop_cli.__name__,
    minimize.__name__,
    suite_commands.__name__,
)  # the commands' modules
FLOWSHOP_ONLY = {"--ub", "--branch", "--ivms", "--format", "--orientation", "--seed"}
SPATIAL_ONLY = {"--eps-abs", "--eps-rel", "--feas-tol", "--subdomains", "--serial"}
RUN_ONLY = {
    "--checkpoint-every",
    "--cluster",
    "--scheduler",
    "--workers",
    "--threads",
    "--heuristic-workers",
    "--jobs",
    "--dry-run",
    "--dashboard-after",
}
# words of the other family's help (searched, ignoring case, in each option's help text and group title)
FLOWSHOP_WORDS = r"\bIVMs?\b|iterated greedy|\bschedules?\b|makespan|Taillard|flow[ -]shop"
SPATIAL_WORDS = r"\bbox(es)?\b|local solve|spatial|subdomain|minimi[sz]e"
FORBIDDEN = {  # command -> options it must not list, and words its help must not use
    "solve": (SPATIAL_ONLY, SPATIAL_WORDS),
    "heuristic": (SPATIAL_ONLY | RUN_ONLY | {"--ivms", "--bound", "--branch", "--ub"}, SPATIAL_WORDS),
    "minimize": (FLOWSHOP_ONLY, FLOWSHOP_WORDS),
    "verify": (  # its cluster options: a suite's, which takes no node limit, checkpoint period or heuristic
        FLOWSHOP_ONLY | SPATIAL_ONLY | {"--bound", "--node-limit", "--checkpoint-every", "--heuristic-workers"},
        FLOWSHOP_WORDS,
    ),
    "resume": ((FLOWSHOP_ONLY - {"--ivms"}) | SPATIAL_ONLY | {"--bound", "--overwrite"}, None),
    "info": (FLOWSHOP_ONLY | SPATIAL_ONLY | RUN_ONLY | {"--time-limit", "--bound"}, None),
    "plot": (FLOWSHOP_ONLY | SPATIAL_ONLY | RUN_ONLY | {"--time-limit", "--bound", "--json"}, None),
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    (subparsers,) = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subparsers.choices)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        name: action
        for action in parser._actions
        for name in action.option_strings
        if name.startswith("--") and name != "--help"
    }


def _texts(parser: argparse.ArgumentParser) -> list[str]:
    """Every help text and group title of ``parser``, whitespace as one space."""
    texts = [a.help for a in parser._actions if a.help] + [g.title for g in parser._action_groups if g.title]
    return [" ".join(text.split()) for text in [*texts, parser.description or ""]]


def _read_by(function) -> set[str]:
    """The ``args`` attributes that ``function`` reads, with the pbbflow.cli functions it calls by
    name (in ``CLI_MODULES``), transitively (``minimize.RUN_ONLY``'s and the run settings through their
    getattr loops)."""
    reads, seen, todo = set(), set(), [function]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        source = inspect.getsource(f)
        reads |= set(re.findall(r"\bargs\.(\w+)", source))
        if "RUN_ONLY" in source:
            reads |= set(minimize.RUN_ONLY)
        if "args.run_settings" in source:  # the families' run settings, read through their names
            reads |= set(cli.build_parser().get_default("run_settings"))
        module = inspect.getmodule(f)
        for name in re.findall(r"\b(\w+)\(", source):
            called = getattr(module, name, None)
            if inspect.isfunction(called) and called.__module__.startswith(CLI_MODULES):
                todo.append(called)
    return reads


def test_every_command_is_checked():
    assert set(_commands()) == set(COMMANDS) == set(FORBIDDEN)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_lists_no_option_or_words_of_the_other_family(command):
    parser = _commands()[command]
    options, words = FORBIDDEN[command]
    assert not set(_options(parser)) & options
    assert not [text for text in _texts(parser) if words and re.search(words, text, re.IGNORECASE)]


def test_the_bound_option_is_each_familys_own():
    commands = _commands()
    assert tuple(_options(commands["solve"])["--bound"].choices) == tuple(BOUND_NAMES)
    assert tuple(_options(commands["minimize"])["--bound"].choices) == ("nie", "mvf", "both")


def test_resume_names_the_family_an_option_applies_to():
    options = _options(_commands()["resume"])
    help_of = {name: " ".join((action.help or "").split()) for name, action in options.items()}
    assert "flow-shop run" in help_of["--ivms"]
    assert "iterated greedy for a flow-shop run" in help_of["--heuristic-workers"]
    assert "local solves from random starts for a spatial run" in help_of["--heuristic-workers"]


@pytest.mark.parametrize("command", ["resume", "info", "plot"])
def test_a_command_on_any_run_names_both_families(command):
    description = " ".join(_commands()[command].description.split())
    assert "a flow-shop run (pbbflow solve)" in description
    assert re.search(r"a continuous (run|one) \(pbbflow minimize --run, the spatial family\)", description)


def test_minimize_has_no_ivms_option_but_its_runs_get_the_default():
    assert cli.build_parser().parse_args(["minimize", "peaks"]).ivms is None  # the engines' default


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_a_command_lists_is_read_by_it(command):
    parser = _commands()[command]
    listed = {action.dest for action in parser._actions if action.dest != "help"}
    assert listed - _read_by(COMMANDS[command]) == set()


# loaded by the commands that start or drive a run (onnx: by one that reads an ONNX file), never by the parser or a command's help
HEAVY = ("distributed", "dask", "numba", "onnx")
PROBE = """
import contextlib, io, json, sys
code, out = None, io.StringIO()
{code}
print(json.dumps({{"code": code, "out": out.getvalue(), "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _probe(code: str, heavy: tuple[str, ...] = HEAVY) -> dict:
    """Run ``code`` in a fresh Python; its exit code and stdout (where it sets them) and which of
    ``heavy`` it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(code=code, heavy=heavy)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_command_line_loads_neither_dask_nor_numba():
    assert _probe("import pbbflow.cli.main")["loaded"] == []


@pytest.mark.parametrize("command", [[], ["solve"], ["minimize"], ["resume"], ["plot"], ["info"], ["heuristic"]])
def test_help_loads_neither_dask_nor_numba(command):
    argv = ["pbbflow", *command, "--help"]
    probe = _probe(
        f"sys.argv = {argv!r}\n"
        "from pbbflow.cli import main  # the console script's entry point\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as done:\n"
        "        code = done.code"
    )
    assert probe["code"] == 0
    assert probe["out"].startswith(f"usage: {' '.join(argv[:-1])} ")
    assert probe["loaded"] == []


def test_minimize_in_this_process_loads_no_cluster_and_no_event_loop():
    """``pbbflow minimize --serial`` opens no cluster: it loads neither Dask nor asyncio, nor the
    dashboard link's urllib.request (with http.client and ssl)."""
    argv = ["pbbflow", "minimize", "peaks", "--serial", "--json"]
    probe = _probe(
        f"sys.argv = {argv!r}\n"
        "from pbbflow.cli import main  # the console script's entry point\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main()",
        heavy=("distributed", "dask", "asyncio", "urllib.request", "ssl", "numba"),
    )
    assert probe["code"] == 0 and json.loads(probe["out"])["status"] == "optimal"
    assert probe["loaded"] == ["numba"]
