"""The Zarr run store: exact round trips, versioning, refusal of damaged stores, crash safety."""

import errno
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

from pbbflow import WorkUnit
from pbbflow.core.errors import PbbflowError, RunStoreDamaged, RunStoreFormatError, RunStoreMissing
from pbbflow.flowshop.evaluation import makespan, neh
from pbbflow.flowshop.factoradic import factorial
from pbbflow.flowshop.family import FlowShopRun
from pbbflow.flowshop.run_options import check_options, run_options
from pbbflow.storage import runstore
from pbbflow.storage.runstore import Checkpoint, RunStore, RunStoreError

N = 50
P = np.arange(N * 5, dtype=np.int32).reshape(N, 5) % 97 + 1
OPTIONS = run_options(P, bound="lb1", branch="minmin", user_ub=None, initial="neh", initial_makespan=neh(P)[0])


def expected(seq: int, n: int = N) -> dict:
    """Commit arguments as a deterministic function of ``seq`` (shared with the writer subprocess)."""
    rng = random.Random(seq)
    total = int(factorial(n))
    cuts = sorted({rng.randrange(1, total) for _ in range(2 * (seq % 40))})
    ivs = list(zip(cuts[::2], cuts[1::2]))
    if seq % 3 == 0:
        ivs.append((total - rng.randrange(1, 10**6), total))  # an interval ending at n!
    length = seq % 17
    permutation = None if seq % 4 == 0 else tuple(rng.sample(range(n), n))
    return {
        "remaining": WorkUnit(n, ivs),
        "incumbent": None if permutation is None else makespan(P[:n], np.array(permutation)),
        "solution": permutation,
        "nodes": 2**70 + seq,
        "leaves": seq * 7,
        "elapsed_s": seq / 3,
        "series": {
            "t": np.arange(length) / 7,
            "nodes": np.arange(length) * 2**40,
            "leaves": np.arange(length),
            "remaining_fraction": np.linspace(1, 0, length),
            "incumbent": np.full(length, -1),
            "active_explorers": np.arange(length) % 5,
        },
        "result": {"status": "optimal", "makespan": 1000 + seq} if seq % 5 == 0 else None,
    }


def assert_matches(cp: Checkpoint, want: dict) -> None:
    assert cp.remaining == want["remaining"]
    assert cp.incumbent == want["incumbent"]
    assert cp.solution == want["solution"]
    assert (cp.nodes, cp.leaves, cp.elapsed_s, cp.result) == (
        want["nodes"],
        want["leaves"],
        want["elapsed_s"],
        want["result"],
    )
    assert list(cp.series) == list(want["series"])
    for name, col in want["series"].items():
        assert cp.series[name].dtype == (np.float64 if col.dtype.kind == "f" else np.int64)
        np.testing.assert_array_equal(cp.series[name], col)


def make_store(path, options=OPTIONS, **kw) -> RunStore:
    return RunStore.create(path, FlowShopRun("toy50", P, options), **kw)


def edit_root(path, change) -> None:
    """Apply ``change`` to the root attributes in ``path``'s zarr.json, as a text editor would."""
    meta = json.loads((path / "zarr.json").read_text())
    change(meta["attributes"])
    (path / "zarr.json").write_text(json.dumps(meta))


def current_dir(path) -> str:
    return os.path.join(path, zarr.open_group(path, mode="r").attrs["current"])


def test_round_trip_exact(tmp_path):
    path = tmp_path / "run.zarr"
    store = make_store(path)
    total = factorial(N)
    want = expected(1)
    want["remaining"] = WorkUnit(N, [(0, 1), (10**40, 10**40 + 3), (total // 3, total // 2), (total - 5, total)])
    assert store.commit(**want) == 1
    opened = RunStore.open(path)
    assert (opened.kind, opened.instance.name, opened.instance.n, opened.options) == ("flowshop", "toy50", N, OPTIONS)
    assert opened.instance.p.dtype == np.int32 and not opened.instance.p.flags.writeable
    np.testing.assert_array_equal(opened.instance.p, P)
    cp = opened.latest()
    assert cp.seq == 1 and len(cp.remaining) == 4 and cp.remaining.intervals[-1][1] == total
    assert_matches(cp, want)
    assert set(cp.series) == set(want["series"]) and cp.settled == math.inf


def test_none_incumbent_empty_remaining_and_result(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    want = expected(20)  # seq % 4 == 0: no incumbent, no permutation
    want.update(remaining=WorkUnit.empty(N), result={"status": "optimal", "makespan": None, "proof": True})
    store.commit(**want)
    cp = RunStore.open(store.path).latest()
    assert cp.incumbent is None and cp.solution is None and cp.remaining.is_empty()
    assert_matches(cp, want)


def test_versions_seq_and_garbage_collection(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    leftover = store.path / "checkpoints" / "zarr.json.0123abcd.partial"  # as a killed write leaves it
    leftover.write_text("{")
    seqs = [store.commit(**expected(seq)) for seq in range(1, 6)]
    assert not leftover.exists()
    assert seqs == [1, 2, 3, 4, 5]
    assert sorted(os.listdir(store.path / "checkpoints")) == ["00000004", "00000005", "zarr.json"]
    assert_matches(store.latest(), expected(5))
    root = zarr.open_group(store.path, mode="r")
    assert (root.attrs["current"], root.attrs["current_seq"]) == ("checkpoints/00000005", 5)


def test_plain_zarr_reads_the_store(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    want = expected(3)
    store.commit(**want)
    root = zarr.open_group(store.path, mode="r")
    version = root[root.attrs["current"]]
    starts = version["starts"][...]
    assert starts.dtype == np.int16 and starts.shape == (len(want["remaining"]), N)
    np.testing.assert_array_equal(starts, want["remaining"].to_digit_arrays()[0])
    assert version.attrs["nodes"] == str(2**70 + 3) and version.attrs["complete"] is True
    np.testing.assert_array_equal(root["instance/p"][...], P)


def test_create_refuses_existing_path_unless_overwrite(tmp_path):
    path = tmp_path / "run.zarr"
    make_store(path).commit(**expected(1))
    with pytest.raises(RunStoreError, match="--overwrite"):
        make_store(path)
    store = make_store(path, overwrite=True)
    with pytest.raises(RunStoreError, match="no committed checkpoint"):
        store.latest()
    assert store.commit(**expected(1)) == 1
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(RunStoreError, match="not a pbbflow run store"):
        make_store(other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"


def test_open_missing_foreign_or_newer_format(tmp_path):
    with pytest.raises(RunStoreError, match="does not exist"):
        RunStore.open(tmp_path / "nope.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(RunStoreError, match="not a pbbflow run store"):
        RunStore.open(tmp_path / "plain")
    zarr.open_group(tmp_path / "other.zarr", mode="w", attributes={"something": 1})
    with pytest.raises(RunStoreError, match="not a pbbflow run store"):
        RunStore.open(tmp_path / "other.zarr")
    path = tmp_path / "run.zarr"
    make_store(path)
    zarr.open_group(path, mode="r+").attrs["pbbflow"] = {"format": 4, "kind": "pbbflow-run", "family": "flowshop"}
    with pytest.raises(RunStoreError, match="unsupported run store format 4"):
        RunStore.open(path)
    zarr.open_group(path, mode="r+").attrs["pbbflow"] = {"format": 3, "kind": "pbbflow-run", "family": "knapsack"}
    with pytest.raises(RunStoreError, match="unknown family 'knapsack'"):
        RunStore.open(path)
    zarr.open_group(path, mode="r+").attrs["pbbflow"] = {"format": 1, "kind": "pfsp-run"}
    with pytest.raises(RunStoreError, match="format 1 did not checksum the options: solve again"):
        RunStore.open(path)


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("search_ub", lambda a: a["options"].update(search_ub=1)),
        ("root_lower_bound", lambda a: a["options"].update(root_lower_bound=a["options"]["root_lower_bound"] + 1)),
        ("user_ub", lambda a: a["options"].update(user_ub=5)),
        ("bound", lambda a: a["options"].update(bound="lb2")),
        ("instance", lambda a: a.update(instance="ta001")),
        ("options deleted", lambda a: a.pop("options")),
        ("options not an object", lambda a: a.update(options=[1, 2])),
        ("checksum deleted", lambda a: a.pop("sha256", None)),
    ],
)
def test_an_edited_instance_name_or_options_are_refused_at_open(tmp_path, what, change):
    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    edit_root(store.path, change)
    with pytest.raises(RunStoreError, match="checksum|damaged run store"):
        RunStore.open(store.path)


def test_edited_processing_times_are_refused_at_open(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    zarr.open_group(store.path, mode="r+")["instance/p"][0, 0] = int(P[0, 0]) + 1
    with pytest.raises(RunStoreError, match="checksum"):
        RunStore.open(store.path)


def resign_root(path) -> None:
    """Recompute the root's sha256 after an edit: what a deliberate forger would do."""
    root = zarr.open_group(path, mode="r+")
    attrs = root.attrs.asdict()
    root.attrs["sha256"] = runstore.checksum(
        [("instance/p", root["instance/p"][...])], {k: attrs[k] for k in runstore._SIGNED}
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"root_lower_bound": 1}, "root_lower_bound is 1, the instance's root bound"),
        ({"search_ub": 10**9}, "search_ub 1000000000 is not the smaller"),
        ({"initial_makespan": 10**9, "search_ub": 10**9}, "initial_makespan 1000000000 is not a makespan"),
        ({"bound": "lb9"}, "bound must be one of"),
        ({"branch": None}, "branch must be one of"),
        ({"initial": "random"}, "initial must be one of"),
        ({"user_ub": "1484"}, "user_ub must be an integer >= 0 or null"),
        ({"search_ub": True}, "search_ub must be an integer"),
        ({"workers": 2}, "options must hold exactly"),
    ],
)
def test_options_are_validated_even_when_their_checksum_was_recomputed(tmp_path, change, message):
    bad = {**OPTIONS, **change}
    with pytest.raises(ValueError, match=message):
        check_options(bad, P)
    with pytest.raises(ValueError, match=message):
        make_store(tmp_path / "new.zarr", options=bad)
    store = make_store(tmp_path / "run.zarr")
    edit_root(store.path, lambda a: a["options"].update(change))
    resign_root(store.path)
    with pytest.raises(RunStoreError, match=f"damaged run store: .*{message}"):
        RunStore.open(store.path)


def test_a_user_bound_below_the_root_bound_is_valid():
    check_options(run_options(P, bound="lb1", branch="minmin", user_ub=1, initial="neh", initial_makespan=neh(P)[0]), P)


@pytest.mark.parametrize(
    "other_options",
    [OPTIONS, {**OPTIONS, "user_ub": OPTIONS["search_ub"] - 1, "search_ub": OPTIONS["search_ub"] - 1}],
    ids=["same-options", "other-options"],
)
def test_a_checkpoint_copied_from_another_store_fails_its_checksum(tmp_path, other_options):
    mine, other = make_store(tmp_path / "mine.zarr"), make_store(tmp_path / "other.zarr", options=other_options)
    mine.commit(**expected(1))
    other.commit(**expected(1))
    target = mine.path / "checkpoints" / "00000001"
    shutil.rmtree(target)
    shutil.copytree(other.path / "checkpoints" / "00000001", target)
    with pytest.raises(RunStoreError, match="checkpoints/00000001.*checksum"):
        RunStore.open(mine.path).latest()


def test_an_incumbent_must_be_its_permutations_makespan(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    want = expected(1)
    with pytest.raises(ValueError, match="its permutation's makespan is"):
        store.commit(**{**want, "incumbent": want["incumbent"] - 1})
    with pytest.raises(ValueError, match="it has no permutation"):
        store.commit(**{**want, "solution": None})


def test_a_stores_errors_say_whether_it_is_missing_foreign_or_damaged(tmp_path):
    """The three kinds of a store that cannot be opened, each a RunStoreError (and a PbbflowError:
    the CLI's one line, exit 2)."""
    with pytest.raises(RunStoreMissing, match="does not exist"):
        RunStore.open(tmp_path / "nope.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(RunStoreFormatError, match="not a pbbflow run store"):
        RunStore.open(tmp_path / "plain")
    path = tmp_path / "run.zarr"
    make_store(path).commit(**expected(1))
    zarr.open_group(path, mode="r+").attrs["pbbflow"] = {"format": 3, "kind": "pbbflow-run", "family": "knapsack"}
    with pytest.raises(
        RunStoreFormatError, match=r"unknown family 'knapsack' \(this pbbflow knows flowshop and spatial\)"
    ):
        RunStore.open(path)
    edit_root(path, lambda attrs: attrs["pbbflow"].update(family="flowshop"))
    root = zarr.open_group(path, mode="r+")
    root[root.attrs["current"]].attrs["nodes"] = 7
    with pytest.raises(RunStoreDamaged, match="checksum") as err:
        RunStore.open(path).latest()
    assert isinstance(err.value, RunStoreError) and isinstance(err.value, PbbflowError)


def test_tampered_chunk_fails_checksum(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    store.commit(**expected(2))
    root = zarr.open_group(store.path, mode="r+")
    starts = root[root.attrs["current"]]["starts"]
    starts[0, 5] = (int(starts[0, 5]) + 1) % (N - 5)
    with pytest.raises(RunStoreError, match="checksum") as err:
        RunStore.open(store.path).latest()
    assert str(store.path) in str(err.value) and "00000002" in str(err.value)


def test_tampered_attribute_fails_checksum(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    root = zarr.open_group(store.path, mode="r+")
    root[root.attrs["current"]].attrs["nodes"] = "1"
    with pytest.raises(RunStoreError, match="checksum"):
        store.latest()


@pytest.mark.parametrize("victim", ["starts", "series/t", "zarr.json"])
def test_truncated_version_is_reported(tmp_path, victim):
    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    store.commit(**expected(2))
    target = os.path.join(current_dir(store.path), victim)
    shutil.rmtree(target) if os.path.isdir(target) else os.remove(target)
    with pytest.raises(RunStoreError, match="checkpoints/00000002"):
        RunStore.open(store.path).latest()


def test_missing_instance_is_reported(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    shutil.rmtree(store.path / "instance" / "p")
    with pytest.raises(RunStoreError, match="damaged"):
        RunStore.open(store.path)


def test_commit_rejects_bad_arguments(tmp_path):
    store = make_store(tmp_path / "run.zarr")
    want = expected(1)
    with pytest.raises(ValueError, match="WorkUnit over n=50"):
        store.commit(**{**want, "remaining": WorkUnit.full(10)})
    with pytest.raises(ValueError, match="differ in length"):
        store.commit(**{**want, "series": {"t": np.zeros(3), "nodes": np.zeros(2, np.int64)}})
    with pytest.raises(ValueError, match="no '/'"):
        store.commit(**{**want, "series": {"a/b": np.zeros(3)}})
    with pytest.raises(TypeError, match="plain finite JSON"):
        store.commit(**{**want, "result": {"makespan": np.int64(3)}})
    with pytest.raises(RunStoreError, match="no committed checkpoint"):
        store.latest()


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from test_runstore import expected
    from pbbflow.storage.runstore import RunStore, RunStoreError
    store = RunStore.open(sys.argv[1]).claim()
    try:
        seq = store.latest().seq
    except RunStoreError:
        seq = 0
    while True:
        seq += 1
        assert store.commit(**expected(seq)) == seq
        print(seq, flush=True)
""")


def test_sigkill_during_commits_leaves_a_consistent_store(tmp_path):
    path = tmp_path / "run.zarr"
    make_store(path)
    rng = random.Random(12345)
    kills, last_seq, interrupted = 20, 0, 0
    started = time.monotonic()
    for _ in range(kills):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip(), "writer did not commit"
        time.sleep(rng.uniform(0, 0.25))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        cp = RunStore.open(path).latest()
        assert cp.seq > last_seq
        assert_matches(cp, expected(cp.seq))
        versions = [v for v in os.listdir(path / "checkpoints") if v.isdigit()]
        assert f"{cp.seq:08d}" in versions and len(versions) <= 3
        interrupted += len(versions) == 3 or any(path.rglob("*.partial"))
        last_seq = cp.seq
    elapsed = time.monotonic() - started
    print(
        f"{kills} SIGKILLs, {last_seq} commits, {interrupted} kills left a half-written or half-deleted "
        f"version, all consistent, {elapsed:.1f} s"
    )
    assert interrupted > 0, "no kill landed inside a commit"


def test_reader_during_writer_sees_only_verified_versions(tmp_path, patience):
    path = tmp_path / "run.zarr"
    make_store(path)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True
    )
    try:
        writer.stdout.readline()
        store, seen = RunStore.open(path), set()
        deadline = time.monotonic() + patience(2.0)
        while time.monotonic() < deadline:
            cp = store.latest()
            assert_matches(cp, expected(cp.seq))
            seen.add(cp.seq)
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    assert len(seen) > 5


HOLDER = textwrap.dedent("""
    import sys, time
    from pbbflow.storage.runstore import RunStore
    store = RunStore.open(sys.argv[1]).claim()
    print("held", flush=True)
    time.sleep(600)
""")


def hold(path) -> subprocess.Popen:
    """Another process that holds the store at ``path`` for writing (until killed)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_store_has_one_writing_process(tmp_path):
    """Issue 13: a second writer (an overwrite, a second resume) is refused, naming the holder;
    the holder's death frees the store (no stale lock)."""
    path = tmp_path / "run.zarr"
    make_store(path).commit(**expected(1))
    holder = hold(path)
    try:
        busy = rf"in use by another run \(pid {holder.pid} on host {socket.gethostname()}, since "
        with pytest.raises(RunStoreError, match=busy):
            RunStore.open(path).claim()
        with pytest.raises(RunStoreError, match=busy):
            make_store(path, overwrite=True)
        assert_matches(RunStore.open(path).latest(), expected(1))  # untouched
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    store = RunStore.open(path).claim()
    assert store.commit(**expected(2)) == 2


def test_a_run_whose_store_was_taken_over_commits_nothing(tmp_path):
    """The owner token, where flock does not reach (here: a second claim in this process; across
    hosts: some network file systems): the first writer's commits are refused."""
    first = make_store(tmp_path / "run.zarr")
    first.commit(**expected(1))
    second = RunStore.open(first.path).claim()
    with pytest.raises(RunStoreError, match=rf"taken over by another run \(pid {os.getpid()} on host "):
        first.commit(**expected(2))
    assert second.commit(**expected(2)) == 2
    replacement = make_store(first.path, overwrite=True)  # an overwrite takes it over too
    with pytest.raises(RunStoreError, match="taken over"):
        second.commit(**expected(3))
    assert replacement.commit(**expected(1)) == 1
    with pytest.raises(RunStoreError, match="replaced by another run since it was opened"):
        second.latest()


def test_reading_needs_no_claim_and_writing_does(tmp_path):
    make_store(tmp_path / "run.zarr").release()
    reader = RunStore.open(tmp_path / "run.zarr")
    with pytest.raises(RunStoreError, match=r"claim\(\) it to write"):
        reader.commit(**expected(1))
    holder = hold(tmp_path / "run.zarr")
    try:
        assert RunStore.open(tmp_path / "run.zarr").latest  # readers take no lock
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_without_flock_support_the_store_is_still_claimed(tmp_path, monkeypatch):
    """File systems without flock (Lustre without its flock option): no lock, the owner token guards."""
    from pbbflow.storage import lock

    def unsupported(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(lock.fcntl, "flock", unsupported)
    first = make_store(tmp_path / "run.zarr")
    second = RunStore.open(first.path).claim()
    with pytest.raises(RunStoreError, match="taken over"):
        first.commit(**expected(1))
    assert second.commit(**expected(1)) == 1


FORMAT_2 = Path(__file__).parents[1] / "data" / "format2-ta021-stopped.zarr"


def test_a_format_2_store_of_the_previous_release_is_read_as_a_flow_shop_run(tmp_path):
    """Written by pbbflow d5a1c1c (``solve ta021 --ub 2298 --time-limit 1``): read, verified, and
    continued into format-3 versions of the same store."""
    path = tmp_path / "old.zarr"
    shutil.copytree(FORMAT_2, path)
    store = RunStore.open(path)
    assert store.kind == "flowshop" and store.instance.name == "ta021" and store.options["search_ub"] == 2298
    cp = store.latest()
    assert cp.incumbent == makespan(store.instance.p, np.array(cp.solution)) and cp.settled == math.inf
    assert 0 < cp.remaining.fraction_of_space() < 1 and cp.nodes > 0
    store.claim().commit(
        remaining=cp.remaining,
        incumbent=cp.incumbent,
        solution=cp.solution,
        nodes=cp.nodes + 1,
        leaves=cp.leaves,
        elapsed_s=cp.elapsed_s,
        series=cp.series,
    )
    again = RunStore.open(path).latest()
    assert again.seq == cp.seq + 1 and again.remaining == cp.remaining and again.nodes == cp.nodes + 1


def repeat_key(file: Path, key: str) -> None:
    """Write ``key`` twice into a zarr.json, the first time with null, as a careless edit could."""
    text = file.read_text()
    assert f'"{key}": ' in text
    file.write_text(text.replace(f'"{key}": ', f'"{key}": null, "{key}": ', 1))


@pytest.mark.parametrize(
    ("node", "key"),
    [
        (".", "current"),
        (".", "owner"),
        ("instance", "node_type"),
        ("instance/p", "fill_value"),
        ("checkpoints/00000001", "seq"),
        ("checkpoints/00000001/starts", "shape"),
        ("checkpoints/00000001/series/t", "data_type"),
    ],
)
def test_a_key_given_twice_in_the_stores_metadata_is_refused(tmp_path, capsys, node, key):
    """zarr's json keeps the last of a repeated key silently: the store is damaged, in one line, exit 2."""
    from pbbflow.cli.main import main

    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    store.release()
    repeat_key(store.path / node / "zarr.json", key)
    shown = os.path.normpath(f"{node}/zarr.json")
    with pytest.raises(RunStoreError, match=f"damaged run store: {shown}: duplicate key '{key}'"):
        RunStore.open(store.path).latest()
    assert main(["info", str(store.path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"pbbflow: error: {store.path}: damaged run store: {shown}: duplicate key '{key}'\n"


@pytest.mark.parametrize("pointer", ["../../outside", "checkpoints/../../outside", "/tmp", "checkpoints/1", 7])
def test_the_current_pointer_never_leads_out_of_the_store(tmp_path, pointer):
    """A ``current`` attribute edited to a path outside the store (or any other non-version) is damage."""
    import zarr

    store = make_store(tmp_path / "run.zarr")
    store.commit(**expected(1))
    store.release()
    zarr.open_group(store.path, mode="r+", use_consolidated=False).update_attributes({"current": pointer})
    with pytest.raises(RunStoreError, match="damaged run store: the current checkpoint .* is not a version of it"):
        RunStore.open(store.path).latest()
