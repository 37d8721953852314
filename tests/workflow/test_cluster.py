"""The cluster factory: Slurm job scripts, a local cluster, an existing scheduler, real Slurm jobs.

The Slurm tests need a running Slurm (``bash .ci/slurm-local.sh up``) and skip without one.
"""

import contextlib
import ipaddress
import os
import subprocess
import sys
import textwrap
import urllib.request

import pytest
from distributed import Client, LocalCluster
from slurm import slurm_idle

from pbbflow.core.devices import gpu_count
from pbbflow.viz.page import register_page
from pbbflow.workflow.cluster import (
    ClusterError,
    SlurmOptions,
    attach_dashboard,
    connected_workers,
    dashboard_link,
    open_cluster,
    slurm_job_script,
)

TA001_NEH = 1286


def test_cpu_job_script():
    script = slurm_job_script(
        SlurmOptions(
            partition="debug",
            account="proj",
            cores=4,
            memory="8GB",
            walltime="00:30:00",
            extra_directives=["--exclusive", "--constraint=skylake"],
            prologue=["module load python", "echo ready"],
        )
    )
    for line in (
        "#SBATCH -p debug",
        "#SBATCH -A proj",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH -t 00:30:00",
        "#SBATCH --exclusive",
        "#SBATCH --constraint=skylake",
        "module load python\necho ready",
    ):
        assert line in script
    assert "distributed.cli.dask_worker" in script and "--gres" not in script and "dask_cuda" not in script
    assert "tcp://127.0.0.1:" in script
    assert "--nworkers 4" in script and "--nthreads 1" in script  # one single-threaded worker per core


def test_gpu_job_script(tmp_path):
    script = slurm_job_script(
        SlurmOptions(
            partition="gpu",
            cores=16,
            memory="240GB",
            walltime="12:00:00",
            gpus_per_job=4,
            prologue=["module load cuda"],
            log_directory=tmp_path,
        )
    )
    for line in (
        "#SBATCH -p gpu",
        "#SBATCH --gres=gpu:4",
        "#SBATCH -t 12:00:00",
        "module load cuda",
        f"#SBATCH -o {tmp_path}/dask-worker-%J.out",
    ):
        assert line in script
    command = script.strip().splitlines()[-1]
    assert "-m dask_cuda.cli" in command
    # the per-worker overrides come after jobqueue's whole-job values (click keeps the last one)
    assert command.endswith(f"--resources GPU=1 --nthreads 2 --memory-limit {240 * 10**9 // 4} --host 127.0.0.1")


def _listening_sockets() -> list[tuple[str, int]]:
    """(IP, port) of the TCP sockets this process listens on (from /proc: no tool needed)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                mine.add(target[8:-1])
    found = []
    for table, width in (("/proc/self/net/tcp", 4), ("/proc/self/net/tcp6", 16)):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in mine:  # LISTEN
                    address, port = fields[1].split(":")
                    raw = bytes.fromhex(address)
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
                    found.append((str(ipaddress.ip_address(words)), int(port, 16)))
    return found


def test_local_cluster_of_worker_processes():
    """``processes``: worker processes (for tasks that hold the GIL), speaking TLS on the loopback."""
    with open_cluster("local", workers=2, threads_per_worker=1, processes=True) as client:
        workers = connected_workers(client)
        assert len(workers) == 2 and all(addr.startswith("tls://127.0.0.1:") for addr in workers)
        pids = client.run(os.getpid)
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
        listening = _listening_sockets()
        assert listening and all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening


def test_connected_workers_after_the_clients_own_refresh():
    """The client's refresh every 2 s caches an identity without workers (the cause of a CI failure:
    ``scheduler_info()`` named none right after a task had run); ``connected_workers`` asks the
    scheduler."""
    with open_cluster("local", workers=2, threads_per_worker=1) as client:
        client.sync(client._update_scheduler_info)  # the periodic refresh's own call
        assert client._scheduler_identity["workers"] == {}
        assert sorted(connected_workers(client)) == sorted(client.run(lambda: None))
        assert len(connected_workers(client)) == 2


def test_local_cluster_two_workers():
    """Worker threads in this process over an in-memory transport: nothing listens for Dask's
    protocol, and the dashboards listen on the loopback only."""
    with open_cluster("local", workers=2, threads_per_worker=1) as client:
        workers = connected_workers(client)
        assert len(workers) == 2
        assert all(addr.startswith("inproc://") for addr in workers)
        assert client.scheduler.address.startswith("inproc://")
        assert all(info["nthreads"] == 1 for info in workers.values())
        listening = _listening_sockets()
        assert listening and all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening
        done = [client.submit(sum, [i, 1], workers=[a], pure=False) for i, a in enumerate(workers)]
        assert client.gather(done) == [1, 2]
        assert dashboard_link(client) is None  # no dashboard until attached
        attach_dashboard(client)
        attach_dashboard(client)  # once is enough
        link = dashboard_link(client)
        assert link.startswith("http://127.0.0.1:") and link.endswith("/pbbflow")
        for url in (link, link.replace("/pbbflow", "/status")):
            with urllib.request.urlopen(url, timeout=30) as response:
                assert response.status == 200
        assert _listening_sockets() == listening  # on the scheduler's loopback HTTP server, no new port
    assert client.status == "closed"


@pytest.mark.parametrize("gpus", [0, 1])
def test_the_in_process_clusters_start_without_bokeh_on_the_loopback(tmp_path, gpus):
    """The CPU cluster and the one-GPU one (no GPU needed to start it): no Bokeh imported, and the
    scheduler's and the workers' HTTP servers on 127.0.0.1 only (a fresh interpreter: this one
    has Bokeh)."""
    code = f"""
        import sys
        from distributed.comm.utils import get_tcp_server_addresses
        from pbbflow.workflow import cluster

        cluster.resolve_gpus = lambda gpus: gpus
        with cluster.open_cluster("local", workers=2, threads_per_worker=1, gpus={gpus}) as client:
            local = client.cluster
            servers = [local.scheduler.http_server] + [w.http_server for w in local.workers.values()]
            print(sorted({{ip for s in servers for ip, *_ in get_tcp_server_addresses(s)}}), len(servers))
            print(sorted({{m.split(".")[0] for m in sys.modules if m.split(".")[0] == "bokeh"
                           or m.startswith("distributed.dashboard")}}))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    addresses, modules = proc.stdout.splitlines()
    assert addresses == f"['127.0.0.1'] {3 - gpus}" and modules == "[]"


def test_existing_scheduler_survives_client():
    register_page()  # an in-process scheduler started after this serves the pbbflow page
    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        with open_cluster("address", scheduler=cluster.scheduler_address) as client:
            assert client.submit(sum, [2, 3]).result() == 5
            assert dashboard_link(client) == cluster.dashboard_link.replace("/status", "/pbbflow")
        assert client.status == "closed"
        with Client(cluster) as again:
            assert again.submit(sum, [3, 4]).result() == 7


@pytest.mark.slurm
def test_slurm_workers_run_tasks(tmp_path):
    reason = slurm_idle()
    if reason:
        pytest.skip(reason)

    def ta001_neh() -> int:  # nested, so cloudpickle ships it by value (tests/ is not importable there)
        from pbbflow.flowshop.evaluation import neh
        from pbbflow.flowshop.taillard import taillard_instance

        return int(neh(taillard_instance(1).p)[0])

    options = SlurmOptions(jobs=2, cores=1, memory="1GB", walltime="00:10:00", log_directory=tmp_path, start_timeout=60)
    with open_cluster("slurm", slurm=options) as client:
        assert client.submit(ta001_neh, pure=False).result(timeout=60) == TA001_NEH
        workers = list(connected_workers(client))
        assert workers and all(addr.startswith("tcp://127.0.0.1:") for addr in workers)
    assert list(tmp_path.glob("dask-worker-*.err"))


@pytest.mark.slurm
def test_slurm_rejected_job():
    reason = slurm_idle()
    if reason:
        pytest.skip(reason)
    with (
        pytest.raises(ClusterError, match="Slurm rejects the worker job: .*invalid partition"),
        open_cluster("slurm", slurm=SlurmOptions(partition="no-such-partition", memory="1GB")),
    ):
        pass


def test_slurm_without_sbatch(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="sbatch not found: is Slurm installed"), open_cluster("slurm"):
        pass


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "cloud"}, "unknown cluster kind"),
        ({"kind": "address"}, "needs one"),
        ({"kind": "local", "scheduler": "tcp://127.0.0.1:8786"}, "kind 'address'"),
        ({"kind": "address", "scheduler": "tcp://127.0.0.1:8786", "workers": 2}, "apply to a local cluster"),
        ({"kind": "local", "slurm": SlurmOptions()}, "Slurm options given"),
        ({"kind": "local", "workers": 0}, "at least 1"),
    ],
)
def test_bad_combinations(kwargs, message):
    with pytest.raises(ClusterError, match=message), open_cluster(**kwargs):
        pass


@pytest.mark.slurm
def test_solve_on_slurm_workers_proves_the_optimum(tmp_path, capsys):
    """`pbbflow solve --cluster slurm`: explorer tasks on SLURMCluster workers prove ta011's optimum."""
    import json

    from pbbflow.cli.main import main

    reason = slurm_idle()
    if reason:
        pytest.skip(reason)
    code = main(
        [
            "solve",
            "ta011",
            "--run",
            str(tmp_path / "run.zarr"),
            "--cluster",
            "slurm",
            "--jobs",
            "2",
            "--cores",
            "1",
            "--memory",
            "1GB",
            "--walltime",
            "00:10:00",
            "--log-directory",
            str(tmp_path),
            "--json",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "optimal" and result["makespan"] == 1582 and result["lower_bound"] == 1582


def test_one_gpu_gets_a_worker_in_this_process():
    """One GPU: its worker (resource GPU=1, two threads) runs in this process over the in-memory
    transport, with nothing listening but the loopback dashboards (the simulator stands in)."""
    from pbbflow.workflow.cluster import _local_gpu_cluster

    with _local_gpu_cluster(1, "127.0.0.1:0") as cluster, Client(cluster) as client:
        ((address, info),) = connected_workers(client).items()
        assert address.startswith("inproc://") and client.scheduler.address.startswith("inproc://")
        assert info["resources"] == {"GPU": 1} and info["nthreads"] == 2
        listening = _listening_sockets()
        assert listening and all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening
        assert client.submit(os.getpid, pure=False).result() == os.getpid()


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() < 2, reason="needs two real GPUs")
def test_a_local_cuda_cluster_admits_only_clients_with_its_credentials():
    """The GPU cluster of several GPUs speaks TLS with credentials made for it: a client without
    them (another local user) cannot connect and run code in the workers."""
    with open_cluster("local", gpus=2) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        with pytest.raises(Exception):  # noqa: B017 (refused or timed out, depending on Dask's comm)
            Client(address.replace("tls://", "tcp://"), timeout=5)


def test_the_local_cuda_cluster_is_asked_for_tls(monkeypatch):
    """Without a GPU: what the factory asks dask-cuda for (TLS, loopback, one worker per GPU)."""
    import dask_cuda

    asked = {}
    monkeypatch.setattr(dask_cuda, "LocalCUDACluster", lambda **kwargs: asked.update(kwargs) or "cluster")
    from pbbflow.workflow.cluster import _local_gpu_cluster

    assert _local_gpu_cluster(2, "127.0.0.1:0") == "cluster"
    assert asked["protocol"] == "tls" and asked["security"].require_encryption
    assert asked["host"] == "127.0.0.1" and asked["n_workers"] == 2


def test_jobqueue_is_imported_in_any_thread_and_leaves_the_sigint_handler_alone():
    """dask_jobqueue's runner installs a SIGINT handler at import (``sys.exit``: no final
    checkpoint on Ctrl-C), which raises outside the main thread where start-up opens clusters."""
    script = textwrap.dedent("""
        import signal, sys, threading
        before = signal.getsignal(signal.SIGINT)  # SIG_IGN where the tests run in the background
        from pbbflow.workflow.cluster import import_jobqueue
        errors = []
        def run():
            try:
                import_jobqueue()
            except Exception as error:
                errors.append(repr(error))
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        assert not errors, errors
        assert "dask_jobqueue" in sys.modules
        assert signal.getsignal(signal.SIGINT) == before
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_the_clusters_pbbflow_starts_are_quiet():
    """Dask's worker profiler (a stack sample of every thread every 10 ms), its event loops' ticks
    (every 20 ms) and the worker's memory monitor (every 100 ms) slow the explorers (README,
    Performance): the clusters pbbflow starts run without the first and with the others every
    second, and only while they are open; Slurm jobs get the same through their environment."""
    import dask

    from pbbflow.workflow.cluster import QUIET_DASK, WORKER_PROFILE, dask_environment

    with dask.config.set({WORKER_PROFILE: True}):
        with open_cluster("local", workers=1, threads_per_worker=1) as client:
            assert list(client.run(lambda: dask.config.get(WORKER_PROFILE)).values()) == [False]
            (worker,) = client.cluster.workers.values()
            assert "profile" not in worker.periodic_callbacks
            for server in (worker, client.cluster.scheduler):
                assert server.periodic_callbacks["tick"].callback_time == 1000
            assert worker.periodic_callbacks["memory_monitor"].callback_time == 1000
        assert dask.config.get(WORKER_PROFILE) is True
    script = slurm_job_script(SlurmOptions())
    exports = dask_environment(QUIET_DASK)
    assert "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in exports
    assert all(f"\n{line}\n" in script for line in exports)
    environment = dict(line.removeprefix("export ").split("=") for line in exports)
    with dask.config.set(dask.config.collect_env(environment)):  # what a job's workers read
        assert all(dask.config.get(key) == value for key, value in QUIET_DASK.items())
