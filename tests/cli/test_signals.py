"""Stopping a run as users and systems do: a terminal's Ctrl-C (to the whole process group, through
a real pty), a SIGTERM to the group (``timeout``, ``docker stop``, Slurm), a signal during
start-up, a driver that dies, and a ``--scheduler`` that is not a scheduler."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster
from runwait import wait_for_committed_nodes, wait_for_handler

from pbbflow.cli.signals import SIGNALS
from pbbflow.cli.startup import Startup
from pbbflow.flowshop.family import create_flowshop_run, initial_seconds
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.flowshop.warmup import warm_worker
from pbbflow.workflow.coordinator import Coordinator

CLI = [sys.executable, "-m", "pbbflow.cli.main"]


class Terminal:
    """A command run as the foreground process group of a new pseudo-terminal."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.output = ""

    def read(self, seconds: float) -> None:
        """Collect output for ``seconds`` or until the command ends."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    data = b""
                self.output += data.decode(errors="replace")
                if not data and self.process.poll() is not None:
                    return
            elif self.process.poll() is not None:
                return

    def wait_for(self, text: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.output and time.monotonic() < deadline and self.process.poll() is None:
            self.read(0.2)
        assert text in self.output, self.output

    def wait_for_handler(self, seconds: float, signum: int = signal.SIGTERM) -> None:
        """Return once the command handles ``signum`` (``runwait.wait_for_handler``), reading its output meanwhile."""
        wait_for_handler(self.process, seconds, signum, meanwhile=self.read)

    def type_ctrl_c(self) -> None:
        os.write(self.master, b"\x03")  # the line discipline sends SIGINT to the foreground group

    def finish(self, seconds: float) -> int:
        """The exit code, once the command ended within ``seconds``."""
        self.read(seconds)
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            pytest.fail(f"still running {seconds} s after the signal:\n{self.output[-3000:]}")
        os.close(self.master)
        return self.process.returncode


def _info(store: Path) -> dict:
    proc = subprocess.run([*CLI, "info", str(store), "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("how", ["ctrl-c", "group-sigterm"])
def test_a_signal_to_the_whole_group_checkpoints_the_work_and_exits_3(tmp_path, how, patience):
    """The explorers' work since the start is in the store (the periodic checkpoint is 60 s away)."""
    store = tmp_path / "g.zarr"
    if os.environ.get("PBBFLOW_TEST_GPU") == "1":  # the GPU explorer; ta017 would end before the signal
        run = ["ta056", "--ub", "3680", "--gpus", "1"]
    else:
        run = ["ta017", "--ub", "neh", "--workers", "2", "--gpus", "0"]
    terminal = Terminal([*CLI, "solve", *run, "--run", str(store)], tmp_path)
    terminal.wait_for("watch the run at", patience(120))  # printed by the search's progress: it runs
    terminal.read(2.0)  # searching on
    if how == "ctrl-c":
        terminal.type_ctrl_c()
    else:
        os.killpg(terminal.process.pid, signal.SIGTERM)
    code = terminal.finish(patience(30))
    assert code == 3, terminal.output[-3000:]
    assert "Traceback" not in terminal.output and "pbbflow resume" in terminal.output
    info = _info(store)
    assert info["status"] == "limit" and info["nodes"] > 0 and 0 < info["remaining_fraction"] < 1


def test_a_signal_during_the_first_heuristic_leaves_a_resumable_store(tmp_path, patience):
    """ta081's first iterated greedy runs 3 s: Ctrl-C once the run's handlers are in (start-up under
    way: the client's code loading, then that heuristic) ends it early, writes the store with the
    best schedule so far and exits 3 with the resume command, without a traceback."""
    store = tmp_path / "h.zarr"
    terminal = Terminal(
        [*CLI, "solve", "ta081", "--run", str(store), "--workers", "1", "--gpus", "0", "--json"], tmp_path
    )
    terminal.wait_for_handler(patience(120))  # imports done: the cluster opening, the first schedule coming
    terminal.type_ctrl_c()
    code = terminal.finish(patience(60))
    assert code == 3, terminal.output[-3000:]
    assert "Traceback" not in terminal.output and "pbbflow resume" in terminal.output
    result = json.loads(terminal.output[terminal.output.index('{"instance"') :].splitlines()[0])  # after the ^C echo
    assert result["startup"]["initial_heuristic_s"] < initial_seconds(100, 20)  # cut short, or not begun
    info = _info(store)
    assert info["status"] == "limit" and info["remaining_fraction"] == 1.0 and info["makespan"] > 0


@pytest.mark.parametrize("after", [0.0, 0.2])
def test_a_signal_while_python_loads_ends_quietly(tmp_path, after, patience):
    """The console script handles signals before it loads numba and Dask (about half a second on
    an idle machine): Ctrl-C then, at once or a moment later, ends it quietly, having changed nothing."""
    console = shutil.which("pbbflow")
    if console is None:
        pytest.skip("the pbbflow console script is not installed")
    terminal = Terminal([console, "solve", "ta001", "--run", str(tmp_path / "e.zarr")], tmp_path)
    terminal.wait_for_handler(patience(60), signal.SIGHUP)  # cli/__init__.py's, before numba and Dask
    terminal.read(after)
    terminal.type_ctrl_c()
    code = terminal.finish(patience(60))
    assert code == 3 and "Traceback" not in terminal.output, terminal.output[-3000:]
    assert "interrupted while starting; nothing was changed" in terminal.output, terminal.output[-3000:]
    assert not (tmp_path / "e.zarr").exists()


# a console script that sends itself SIGINT when it first imports the module argv[1], then runs the rest
SIGNAL_ON_IMPORT = """
import os, signal, sys

module, sys.argv = sys.argv[1], ["pbbflow", *sys.argv[2:]]

class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, SignalOnImport())
from pbbflow.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("pbbflow.flowshop.warmup", ["solve", "ta001", "--run", "new.zarr"]),
        ("pbbflow.flowshop.iterated_greedy", ["heuristic", "ta001", "--time-limit", "1"]),
        ("pbbflow.spatial.bnb", ["minimize", "peaks"]),
        ("pbbflow.workflow.run", ["minimize", "peaks", "--run", "new.zarr"]),
        ("pbbflow.workflow.run", ["resume", "missing.zarr"]),
        ("pbbflow.workflow.run", ["info", "missing.zarr"]),
        ("pbbflow.viz.plots", ["plot", "missing.zarr", "--out", "plots"]),
    ],
)
def test_a_signal_while_a_command_loads_its_code_ends_quietly(tmp_path, module, argv, patience):
    """Each command imports its engines, Dask or matplotlib in its handler (the parser loads none of
    them), as the console script loads the command line: a signal meanwhile ends it at once, exit 3,
    having changed nothing."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_ON_IMPORT, module, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=patience(120),
    )
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stderr == "pbbflow: interrupted while starting; nothing was changed\n"
    assert list(tmp_path.iterdir()) == []


def test_the_clusters_worker_processes_block_the_stopping_signals(tmp_path, patience):
    """Started from the start-up thread, worker processes inherit its blocked mask: a terminal's
    SIGINT to the group does not kill them before the driver has its checkpoint."""
    instance = taillard_instance(1)

    def cluster():
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)

    def open_client():
        local = cluster()
        client = Client(local)

        class Context:
            def __enter__(self):
                return client

            def __exit__(self, *exc):
                client.close()
                local.close()

        return Context()

    with Startup(open_client, (warm_worker, (instance.p, "lb1", "minmin"))) as startup:
        client = startup.ready()
        pids = client.run(os.getpid)
        for pid in pids.values():
            with open(f"/proc/{pid}/status") as status:
                blocked = int(next(line for line in status if line.startswith("SigBlk:")).split()[1], 16)
            assert all(blocked & (1 << (s - 1)) for s in SIGNALS), hex(blocked)
            os.kill(pid, signal.SIGINT)
        time.sleep(patience(0.5))  # time to die, had the signal been delivered
        assert client.run(os.getpid) == pids  # alive, the same processes


def _listener(banner: bytes | None) -> tuple[int, threading.Event]:
    """A TCP listener on the loopback that never answers (``banner`` None) or sends ``banner``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    done = threading.Event()

    def serve():
        held = []
        server.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if banner:
                conn.sendall(banner)
        for conn in held:
            conn.close()
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], done


@pytest.mark.parametrize("service", ["silent", "banner", "closed"])
def test_a_scheduler_address_that_is_no_scheduler_is_one_line_before_any_store(tmp_path, service, patience):
    if service == "closed":
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        done = threading.Event()
    else:
        port, done = _listener(None if service == "silent" else b"SSH-2.0-OpenSSH_9.6\r\n" * 50)
    store = tmp_path / "s.zarr"
    started = time.monotonic()
    proc = subprocess.run(
        [
            *CLI,
            "solve",
            "ta001",
            "--run",
            str(store),
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
            "--connect-timeout",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=patience(120),
    )
    done.set()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1" in lines[0], proc.stderr
    assert time.monotonic() - started < patience(30)
    assert not store.exists()  # nothing written: the same command works once the address is right


def test_a_departed_driver_closes_its_run_on_the_scheduler(tmp_path, patience):
    """The coordinator closes the runs of a client that leaves (killed driver): their explorers
    stop at their next call instead of exploring on for nobody."""
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as watcher,
    ):
        watcher.register_plugin(Coordinator())
        store = create_flowshop_run(tmp_path / "d.zarr", taillard_instance(1), ub=None, bound="lb1", branch="minmin")
        driver = Client(cluster.scheduler_address)
        driver.sync(
            driver.scheduler.pbbflow_open,
            run="r1",
            kind="flowshop",
            space={"n": store.instance.n},
            work=store.latest().remaining.to_bytes(),
            ub=2000,
            client=driver.id,
        )
        assert not watcher.sync(watcher.scheduler.pbbflow_status, run="r1")["stopping"]
        driver.close()
        deadline = time.monotonic() + patience(10)
        while not watcher.sync(watcher.scheduler.pbbflow_status, run="r1")["stopping"]:
            assert time.monotonic() < deadline, "the run stayed open after its client left"
            time.sleep(0.1)


def test_a_killed_driver_leaves_no_explorer_behind_and_resume_takes_over(tmp_path, patience):
    """SIGKILL to ``solve --scheduler``: its explorers on the external cluster stop at their next
    report, and ``resume`` on the same scheduler explores on and honours its time limit."""
    from pbbflow.viz.page import register_page

    register_page()
    store = tmp_path / "k.zarr"
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as watcher,
    ):
        address = cluster.scheduler_address
        driver = subprocess.Popen(
            [
                *CLI,
                "solve",
                "ta017",
                "--ub",
                "neh",
                "--run",
                str(store),
                "--scheduler",
                address,
                "--checkpoint-every",
                "1",
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + patience(120)
        while not watcher.processing() or not any(watcher.processing().values()):
            assert time.monotonic() < deadline and driver.poll() is None, "the driver never started exploring"
            time.sleep(0.2)
        wait_for_committed_nodes(store, patience(60))  # a periodic checkpoint or two
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + patience(20)
        while executing := sum(w.state.executing_count for w in cluster.workers.values()):
            # the scheduler forgets a departed client's tasks at once, but their threads run on
            assert time.monotonic() < deadline, f"{executing} task(s) still running for a dead driver"
            time.sleep(0.2)
        before = _info(store)
        started = time.monotonic()
        proc = subprocess.run(
            [*CLI, "resume", str(store), "--scheduler", address, "--time-limit", "3", "--json", "--quiet"],
            capture_output=True,
            text=True,
            timeout=patience(120),
        )
        assert proc.returncode == 3, proc.stderr
        assert time.monotonic() - started < patience(45)
        after = json.loads(proc.stdout)
        assert after["nodes"] > before["nodes"] and after["remaining_fraction"] < before["remaining_fraction"]


def test_ctrl_c_stops_minimize_with_its_certified_bounds(tmp_path, patience):
    """pbbflow minimize: the first Ctrl-C ends the search at once with status limit, exit 3."""
    terminal = Terminal(
        [*CLI, "minimize", "peaks-ann", "--eps-abs", "0", "--eps-rel", "0", "--subdomains", "1"], tmp_path
    )
    terminal.wait_for(" open", patience(300))  # the progress line: the search runs (after any compiling)
    terminal.type_ctrl_c()
    code = terminal.finish(patience(30))
    assert code == 3, terminal.output[-3000:]
    assert "status       limit" in terminal.output and "Traceback" not in terminal.output


def test_an_interrupt_while_the_parser_is_built_ends_quietly(capsys, monkeypatch):
    """Ctrl-C after the start-up handler is gone but before a command runs: exit 3, one line."""
    import importlib

    cli_main = importlib.import_module("pbbflow.cli.main")

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "build_parser", interrupted)
    assert cli_main.main(["info", "nothing.zarr"]) == 3
    err = capsys.readouterr().err
    assert err == "pbbflow: interrupted while starting; nothing was changed\n"
