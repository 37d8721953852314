"""The run store: a Zarr v3 directory (``run.zarr``) holding a run's instance and crash-safe checkpoints.

Layout (plain Zarr v3, nothing pickled; readable with ``zarr.open_group(path, mode="r")``)::

    run.zarr/                      root attrs: {"pbbflow": {"format": 3, "kind": "pbbflow-run",
                                                            "family": "flowshop" | "spatial" | ...},
                                                "instance": "<name>", "options": {...},
                                                "store_id": "<random hex>", "sha256": "<hex>",
                                                "owner": {"run", "pid", "host", "since"},
                                                "current": "checkpoints/00000007" | None,
                                                "current_seq": 7}
      instance/<array>             the instance, as its family writes it (flow shop: p, int32
                                   (n jobs, m machines); spatial: source, the problem's JSON as
                                   UTF-8 bytes: data, never code)
      checkpoints/<seq:08d>/       one complete version per commit; attrs below
        <work arrays>              the work left (flow shop: starts, ends int16 (k, n) factoradic
                                   digits of intervals [a, b) and end_is_total bool (k,); spatial:
                                   lo, hi float64 (k, d) and lb float64 (k,): open boxes and bounds)
        <solution array>           the incumbent (flow shop: permutation int32 (n,); spatial: x
                                   float64 (d,)), or an empty array when there is none
        series/<column>            int64 or float64 (L,) time series

The family (``core.family``: the store's instance is a ``RunInstance`` of its ``Instance``
class) names and checks every array and the options; this module knows none of them.  Stores of
format 2 (kind ``pfsp-run``, flow shop only, the same layout) are read as flow-shop stores.

The root's ``sha256`` covers everything a result depends on: the instance's arrays, its name, the
options (validated by the family at open) and the store's random ``store_id``.

Version attrs: ``complete`` (True), ``seq``, ``nodes`` and ``leaves`` (decimal strings),
``incumbent`` (the solution's value, or null), ``settled`` (a lower bound of the work discarded
without being explored to its end, or null: none), ``elapsed_s``, ``result`` (JSON or null),
``series_columns`` and ``sha256``: a digest of every array of the version (fixed order, with
dtype and shape), the canonical JSON of the other attrs and the root's ``sha256``, which binds the
version to its store: a version copied from another store fails its checksum.  A sha256 without a
key detects corruption and careless edits, not deliberate forgery: whoever can write the store can
recompute it.

One live run writes a store (``RunStore.create``, or ``RunStore.open(path).claim()``): it holds an
exclusive ``flock`` on the store's directory for as long as it writes (see ``lock.py``; the kernel
drops it when the process dies), and records itself in the root's ``owner`` attribute (a random
run id, pid, host and start time).  A second writer is refused with the holder's pid and host; an
``overwrite`` takes the lock before it empties the directory (the locked inode stays the store).
Every commit re-reads ``owner`` and refuses to write when another run took the store over: the
defence where ``flock`` does not reach (another host on some network file systems, a second
claim in the same process).  Readers take no lock.  Reserving and claiming also check that the
store can be written, so that a run fails before it does any work (RunStoreError, one line).

A commit writes a new version group completely, then flips the root ``current`` pointer (one
atomic key write), then deletes versions older than the previous one: a process killed at any
moment leaves the last committed version readable, and a reader that holds the previous pointer
still finds its version. Durable against a killed process, not a power loss (no fsync).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import hashlib
import json
import math
import operator
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import zarr

from ..core.errors import RunStoreDamaged, RunStoreError, RunStoreFormatError, RunStoreMissing
from ..core.family import RunInstance, StoredWork, family, known_kinds
from ..core.files import FileRefused, read_json
from .lock import DirectoryBusy, DirectoryLock

FORMAT = 3  # 3: the family is named, its instance and checkpoint arrays are its own
KIND = "pbbflow-run"
LEGACY = {(2, "pfsp-run"): "flowshop"}  # older formats still read: (format, kind) -> family

_SIGNED = ("pbbflow", "instance", "options", "store_id")  # the root attrs its sha256 covers
_CKPT = "checkpoints"
_VERSION_NAME = re.compile(r"\d{8}")
_CHUNK_BYTES = 1 << 20
_READ_PATIENCE_S = 10.0  # a reader retries while a writer moves the pointer under it, for this long
_METADATA = ("zarr.json", ".zgroup", ".zattrs", ".zarray")  # the JSON files zarr may read for a node


@dataclass(frozen=True, eq=False)  # eq=False: the numpy fields make == ambiguous
class Checkpoint:
    """One committed version of a run."""

    seq: int
    remaining: StoredWork  # the family's (flow shop: a WorkUnit; spatial: a BoxSet)
    incumbent: Any  # the solution's value, None when there is none
    solution: Any  # the family's (flow shop: a permutation tuple; spatial: a point as a list)
    settled: float  # a lower bound of the work discarded unexplored (inf: none)
    nodes: int
    leaves: int
    elapsed_s: float
    series: dict[str, np.ndarray]
    result: dict | None


def plain_json(value: Any, what: str) -> Any:
    """Return ``value`` as it reads back from JSON; TypeError/ValueError if it is not plain JSON."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what} must be plain finite JSON (no numpy scalars): {e}") from None


def _canonical(attrs: Mapping[str, Any]) -> bytes:
    return json.dumps(attrs, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def checksum(arrays: Iterable[tuple[str, np.ndarray]], attrs: Mapping[str, Any]) -> str:
    """sha256 over named arrays (name, dtype, shape, little-endian bytes) and canonical JSON attrs."""
    h = hashlib.sha256()
    for name, a in arrays:
        le = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        h.update(f"{name}\0{le.dtype.str}\0{le.shape}\0".encode())
        h.update(le.tobytes())
    h.update(_canonical({k: v for k, v in attrs.items() if k != "sha256"}))
    return h.hexdigest()


def _rows_per_chunk(rows: int, row_bytes: int) -> int:
    return max(1, min(rows, _CHUNK_BYTES // max(1, row_bytes)))


def _write_array(group: zarr.Group, name: str, data: np.ndarray) -> None:
    chunks = (_rows_per_chunk(data.shape[0], data[:1].nbytes),) + data.shape[1:]
    group.create_array(name, shape=data.shape, chunks=chunks, dtype=data.dtype)[...] = data


def _series_column(name: str, values: Any) -> np.ndarray:
    if not name or "/" in name:
        raise ValueError(f"series column name {name!r} must be non-empty and contain no '/'")
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"series column {name!r} must be 1-D, got shape {a.shape}")
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    raise ValueError(f"series column {name!r} must be numeric, got dtype {a.dtype}")


def reserve_directory(path: Path, overwrite: bool, is_kind: Callable[[Path], bool], kind: str) -> DirectoryLock:
    """``path`` as an empty directory that this process holds (a missing one is made): one that
    holds anything is refused unless ``is_kind(path)`` (a pbbflow ``kind``: "run store") and
    ``overwrite`` (it is then emptied), as is a symbolic link with ``overwrite``; then a file must
    be writable there. RunStoreError (one line) otherwise."""
    if overwrite and path.is_symlink():
        raise RunStoreError(path, "is a symbolic link; refusing to overwrite through it (name the store itself)")
    _make_directory(path)
    lock = _lock(path)
    try:
        if any(path.iterdir()):
            if not overwrite:
                raise RunStoreError(path, "already exists; pass --overwrite to replace it")
            if not is_kind(path):
                raise RunStoreError(path, f"exists and is not a pbbflow {kind}; refusing to overwrite it")
            with file_errors(path, "empty it"):
                for entry in path.iterdir():  # the directory itself stays: its inode is what is locked
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
        with file_errors(path, "write it"):
            _probe(path)
    except BaseException:
        lock.release()
        raise
    return lock


def claim_directory(
    path: Path, sha256: str, writes: Path, kind: str, tidy: Callable[[], None] | None = None
) -> tuple[DirectoryLock, str]:
    """Hold the store at ``path`` for writing: its lock, then this run as its ``owner`` (the run id
    is returned with the lock), where its root still has the ``sha256`` it was opened with (else
    another ``kind`` replaced it) and a file can be written in ``writes``; ``tidy()`` then runs
    under the lock (a store's leftovers). RunStoreError (one line) otherwise."""
    lock, owner = _lock(path), new_owner()
    try:
        root = open_root(path, mode="r+")
        if root.attrs.get("sha256") != sha256:
            raise RunStoreError(path, f"was replaced by another {kind} since it was opened; open it again")
        with file_errors(path, "write it"):
            root.update_attributes({"owner": owner})
            _probe(writes)  # where commits write
            if tidy is not None:
                tidy()
    except BaseException:
        lock.release()
        raise
    return lock, owner["run"]


class RunStore:
    """A pbbflow run on disk: instance, options and versioned checkpoints (see the module docstring)."""

    def __init__(self, path: Path, instance: RunInstance, sha256: str) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self._path, self._instance, self._sha256 = path, instance, sha256
        self._lock: DirectoryLock | None = None
        self._owner: str | None = None  # this object's run id while it holds the store for writing
        self._partials_cleaned = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def reserve(cls, path: str | os.PathLike[str], *, overwrite: bool = False) -> DirectoryLock:
        """Make ``path`` an empty directory that this process holds, for :meth:`create` (which calls
        this itself; call it first to fail before any work).  A missing directory is made; one that
        holds anything is refused unless it is a run store and ``overwrite`` (it is then emptied),
        as is a symbolic link with ``overwrite``.  Then a file must be writable there."""
        return reserve_directory(Path(path), overwrite, _is_run_store, "run store")

    @classmethod
    def create(cls, path: str | os.PathLike[str], instance: RunInstance, *, overwrite: bool = False) -> RunStore:
        """Create a new run store of ``instance``, held for writing (see :meth:`reserve` for what
        ``path`` may hold)."""
        path = Path(path)
        arrays = sorted(instance.arrays().items())
        options = plain_json(instance.options, "options")
        header = {"format": FORMAT, "kind": KIND, "family": instance.kind}
        signed = {"pbbflow": header, "instance": str(instance.name), "options": options, "store_id": uuid.uuid4().hex}
        sha256 = checksum([(f"instance/{k}", a) for k, a in arrays], signed)
        lock, owner = cls.reserve(path, overwrite=overwrite), new_owner()
        try:
            with file_errors(path, "write it"):
                attributes = {**signed, "sha256": sha256, "owner": owner, "current": None}
                root = zarr_module().open_group(path, mode="w-", attributes=attributes)
                group = root.create_group("instance")
                for key, data in arrays:
                    _write_array(group, key, data)
                root.create_group(_CKPT)
        except BaseException:
            lock.release()
            raise
        store = cls(path, instance, sha256)
        store._lock, store._owner = lock, owner["run"]
        return store

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunStore:
        """Open an existing run store, its instance and options verified (checksum, then validity by
        its family); RunStoreError if it is missing, foreign, of another format or damaged."""
        path = Path(path)
        root = open_root(path)
        attrs = root.attrs.asdict()
        header = attrs.get("pbbflow")
        kind = _family_of(path, header)
        _check_metadata(path, "instance", depth=1)
        try:
            group = root["instance"]
            arrays = {name: np.asarray(_array(group, name)[...]) for name in sorted(group.array_keys())}
            signed = {key: attrs[key] for key in _SIGNED}
            intact = checksum([(f"instance/{k}", a) for k, a in arrays.items()], signed) == attrs["sha256"]
        except KeyError as e:
            raise RunStoreDamaged(path, f"damaged run store: missing {e}") from None
        except Exception as e:  # zarr raises assorted errors on corrupt metadata or chunks; json on NaN
            raise RunStoreDamaged(path, f"damaged run store: {type(e).__name__}: {e}") from None
        if not intact:
            raise RunStoreDamaged(path, "fails its sha256 checksum: its instance or options were changed or damaged")
        try:
            instance = family(kind).Instance.from_store(signed["instance"], arrays, signed["options"])
        except ValueError as e:
            raise RunStoreDamaged(path, f"damaged run store: {e}") from None
        return cls(path, instance, attrs["sha256"])

    def claim(self) -> RunStore:
        """Hold the store for writing, until :meth:`release` or this object's end (commits need it);
        RunStoreError if another live run holds it or it cannot be written.  Returns ``self``; a
        no-op if already held."""
        if self._owner is not None:
            return self
        self._lock, self._owner = claim_directory(self._path, self._sha256, self._path / _CKPT, "run")
        return self

    def release(self) -> None:
        """Stop writing the store: another run may claim it."""
        if self._lock is not None:
            self._lock.release()
        self._lock = self._owner = None

    # --------------------------------------------------------------- properties

    @property
    def path(self) -> Path:
        """The store's directory."""
        return self._path

    @property
    def instance(self) -> RunInstance:
        """What the run solves, with its options (its family's ``RunInstance``)."""
        return self._instance

    @property
    def kind(self) -> str:
        """The run's family (``core.family.register``)."""
        return self._instance.kind

    @property
    def options(self) -> dict:
        """The run's options (a copy)."""
        return copy.deepcopy(self._instance.options)

    # ------------------------------------------------------------------ writing

    def commit(
        self,
        *,
        remaining: StoredWork,
        incumbent: Any,
        solution: Any,
        nodes: int,
        leaves: int,
        elapsed_s: float,
        series: Mapping[str, Any],
        settled: float = math.inf,
        result: dict | None = None,
    ) -> int:
        """Write a new checkpoint version, make it current, drop older spares; return its ``seq``.
        ``remaining`` and ``solution`` are the family's (ValueError when its instance refuses them)."""
        instance = self._instance
        problem = instance.incumbent_problem(incumbent, solution)
        if problem is not None:
            raise ValueError(f"incumbent {incumbent}: {problem}")
        elapsed_s, settled = float(elapsed_s), float(settled)
        if not math.isfinite(elapsed_s):
            raise ValueError(f"elapsed_s must be finite, got {elapsed_s}")
        if math.isnan(settled) or settled == -math.inf:
            raise ValueError(f"settled must be a number or +inf (none), got {settled}")
        cols = {str(k): _series_column(str(k), v) for k, v in series.items()}
        if len({len(c) for c in cols.values()}) > 1:
            raise ValueError(f"series columns differ in length: { {k: len(c) for k, c in cols.items()} }")
        work = instance.encode_work(remaining)
        arrays = [
            *((k, work[k]) for k in instance.work_arrays),
            (instance.solution_array, instance.encode_solution(solution)),
        ]
        arrays += [(f"series/{k}", c) for k, c in cols.items()]

        root = self._owned_root()
        if not self._partials_cleaned:
            for leftover in self._path.rglob("*.partial"):
                leftover.unlink(missing_ok=True)
            self._partials_cleaned = True
        seq = int(root.attrs.get("current_seq", 0)) + 1
        attrs = {
            "complete": True,
            "seq": seq,
            "nodes": str(operator.index(nodes)),
            "leaves": str(operator.index(leaves)),
            "incumbent": plain_json(incumbent, "incumbent"),
            "settled": None if settled == math.inf else settled,
            "elapsed_s": elapsed_s,
            "result": plain_json(result, "result"),
            "series_columns": list(cols),
        }
        attrs["sha256"] = self._version_digest(arrays, attrs)

        name = f"{_CKPT}/{seq:08d}"
        group = root.create_group(name, overwrite=True)  # replaces a version left half-written by a crash
        group.create_group("series")
        for key, data in arrays:
            _write_array(group, key, data)
        # Group.update_attributes writes zarr.json once; attrs.update would write it once per key.
        group.update_attributes(attrs)  # the version is complete
        root = self._owned_root()  # the owner again, just before the commit
        root.update_attributes({"current": name, "current_seq": seq})  # the commit: one atomic write
        for old in (self._path / _CKPT).iterdir():
            if _VERSION_NAME.fullmatch(old.name) and int(old.name) < seq - 1:
                shutil.rmtree(old, ignore_errors=True)
        return seq

    # ------------------------------------------------------------------ reading

    def latest(self) -> Checkpoint:
        """The current checkpoint, verified; RunStoreError if none was committed or it is damaged."""
        pointer, deadline = None, time.monotonic() + _READ_PATIENCE_S
        while True:
            root = open_root(self._path)
            attrs = root.attrs.asdict()
            if attrs.get("sha256") != self._sha256:
                raise RunStoreError(self._path, "was replaced by another run since it was opened; open it again")
            if attrs.get("current") is None:
                raise RunStoreDamaged(self._path, "no committed checkpoint")
            if (attrs["current"], attrs.get("current_seq")) == pointer:
                break  # the pointer did not move: the failure is real
            pointer = (attrs["current"], attrs.get("current_seq"))
            try:
                return self._load(root, *pointer)
            except RunStoreError as e:  # the version may have been dropped by two newer commits
                error = e
            if time.monotonic() > deadline:
                break
        raise error

    def _load(self, root: zarr.Group, name: Any, seq: Any) -> Checkpoint:
        where = f"checkpoint {name!r}"
        folder, _, version = name.partition("/") if isinstance(name, str) else ("", "", "")
        if folder != _CKPT or not _VERSION_NAME.fullmatch(version):  # never a path out of the store
            raise RunStoreDamaged(self._path, f"damaged run store: the current {where} is not a version of it")
        try:
            _check_metadata(self._path, name, depth=2)  # the version, its series and its arrays
            group = root[name]
            attrs = group.attrs.asdict()
            if not isinstance(group, zarr_module().Group) or attrs.get("complete") is not True:
                raise RunStoreDamaged(self._path, f"{where} is incomplete")
            columns = list(attrs["series_columns"])
            instance = self._instance
            names = (*instance.work_arrays, instance.solution_array, *(f"series/{c}" for c in columns))
            arrays = {key: np.asarray(_array(group, key)[...]) for key in names}
            intact = self._version_digest(arrays.items(), attrs) == attrs["sha256"]
        except KeyError as e:
            raise RunStoreDamaged(self._path, f"{where} is damaged: missing {e}") from None
        except RunStoreError:
            raise
        except Exception as e:  # zarr raises assorted errors on corrupt metadata or chunks
            raise RunStoreDamaged(self._path, f"{where} is unreadable: {type(e).__name__}: {e}") from None
        if not intact:
            raise RunStoreDamaged(self._path, f"{where} fails its sha256 checksum (tampered or truncated data)")
        if attrs.get("seq") != seq:
            raise RunStoreDamaged(self._path, f"{where} holds seq {attrs.get('seq')}, the pointer says {seq}")
        try:
            remaining = instance.decode_work({k: arrays[k] for k in instance.work_arrays})
        except ValueError as e:
            raise RunStoreDamaged(self._path, f"{where} holds invalid work: {e}") from None
        try:
            solution = instance.decode_solution(arrays[instance.solution_array])
            problem = instance.incumbent_problem(attrs["incumbent"], solution)
        except ValueError as e:
            problem = str(e)
        if problem is not None:
            raise RunStoreDamaged(self._path, f"{where} holds incumbent {attrs['incumbent']!r}: {problem}")
        settled = attrs.get("settled")  # absent in format 2
        if not (settled is None or type(settled) in (int, float) and settled > -math.inf):
            raise RunStoreDamaged(self._path, f"{where} holds settled {settled!r}, not a number")
        return Checkpoint(
            seq=attrs["seq"],
            remaining=remaining,
            incumbent=attrs["incumbent"],
            solution=solution,
            settled=math.inf if settled is None else float(settled),
            nodes=int(attrs["nodes"]),
            leaves=int(attrs["leaves"]),
            elapsed_s=float(attrs["elapsed_s"]),
            series={c: arrays[f"series/{c}"] for c in columns},
            result=attrs["result"],
        )

    def _owned_root(self) -> zarr.Group:
        """The root group, writable; RunStoreError unless this object holds the store."""
        if self._owner is None:
            raise RunStoreError(self._path, "opened for reading: claim() it to write")
        root = open_root(self._path, mode="r+")
        owner = root.attrs.get("owner")
        if not isinstance(owner, dict) or owner.get("run") != self._owner:
            raise RunStoreError(
                self._path, f"taken over by another run ({describe_owner(owner)}); this run no longer writes to it"
            )
        return root

    def _version_digest(self, arrays: Iterable[tuple[str, np.ndarray]], attrs: Mapping[str, Any]) -> str:
        """A version's sha256, bound to this store by the root's."""
        return checksum(arrays, {**attrs, "store_sha256": self._sha256})


def new_owner() -> dict:
    """A new run id, with where and when it runs, for the root's ``owner``."""
    return {
        "run": uuid.uuid4().hex,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def describe_owner(owner: Any) -> str:
    if not isinstance(owner, dict):
        return "unknown: the store names no owner"
    return f"pid {owner.get('pid')} on host {owner.get('host')}, since {owner.get('since')}"


@contextlib.contextmanager
def file_errors(path: Path, doing: str) -> Iterator[None]:
    """An OSError inside becomes one line: RunStoreError("cannot <doing> (<reason>)")."""
    try:
        yield
    except OSError as e:
        raise RunStoreError(path, f"cannot {doing} ({e.strerror or e})") from None


def _make_directory(path: Path) -> None:
    """``path`` and its missing parents as directories; RunStoreError saying what is in the way."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise RunStoreError(path, "exists and is not a directory") from None
    except OSError as e:
        blocker = next((a for a in path.parents if a.exists()), None)
        reason = f"{blocker} is not a directory" if blocker is not None and not blocker.is_dir() else e.strerror
        raise RunStoreError(path, f"cannot create it ({reason})") from None


def _probe(directory: Path) -> None:
    """OSError unless a file can be created (and removed) in ``directory``."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=".pbbflow-probe-")
    os.close(fd)
    os.unlink(name)


def _lock(path: Path) -> DirectoryLock:
    """This process's lock on the store directory; RunStoreError naming the holder if another has it."""
    try:
        return DirectoryLock(path)
    except DirectoryBusy:
        try:
            owner = read_json(path / "zarr.json")["attributes"].get("owner")
        except (FileRefused, KeyError, TypeError, AttributeError):
            owner = None
        holder = describe_owner(owner) if owner is not None else "a process that is creating it"
        raise RunStoreError(path, f"in use by another run ({holder}); a run store has one writer at a time") from None
    except OSError as e:
        raise RunStoreError(path, f"cannot open it ({e.strerror})") from None


def zarr_module():
    """The ``zarr`` module, imported on first use: Dask workers import this module but never open
    a store (``zarr`` costs them 0.15 s of start-up).  ``pbbflow solve`` imports it on its start-up
    thread, beside the initial heuristic (on an H200 host it took 0.5 s before the search)."""
    import zarr

    return zarr


def open_root(path: Path, mode: str = "r") -> zarr.Group:
    if not path.exists():
        raise RunStoreMissing(path, "does not exist")
    _check_metadata(path)
    try:
        return zarr_module().open_group(path, mode=mode, use_consolidated=False)
    except Exception as e:  # GroupNotFoundError, JSON errors, ...
        raise RunStoreFormatError(path, f"not a pbbflow run store ({type(e).__name__}: {e})") from None


def _array(group: zarr.Group, key: str) -> zarr.Array:
    node = group[key]
    if not isinstance(node, zarr_module().Array):
        raise KeyError(f"array {key!r}")
    return node


def _is_run_store(path: Path) -> bool:
    try:
        meta = read_json(path / "zarr.json")
        return meta["attributes"]["pbbflow"]["kind"] in (KIND, *(kind for _, kind in LEGACY))
    except (FileRefused, KeyError, TypeError):
        return False


def _check_metadata(path: Path, node: str = "", depth: int = 0) -> None:
    """Read the metadata of the store's ``node`` strictly before zarr parses it (zarr's ``json``
    keeps the last of a repeated key, takes NaN and reads any size), and that of the nodes below
    it, ``depth`` groups down; RunStoreError naming the file.  A missing file is left to zarr."""
    directory = path / node
    group = False
    for name in _METADATA:
        file = directory / name
        if not file.exists():
            continue
        try:
            meta = read_json(file, kind="a metadata file")
        except FileRefused as e:
            raise RunStoreDamaged(path, f"damaged run store: {file.relative_to(path)}: {e.reason}") from None
        if name == ".zgroup" or (name == "zarr.json" and isinstance(meta, dict) and meta.get("node_type") == "group"):
            group = True
    if not group or depth == 0:
        return
    try:
        children = [child for child in directory.iterdir() if child.is_dir()]
    except OSError:  # an unlistable group: zarr says so
        return
    for child in children:
        _check_metadata(path, str(child.relative_to(path)), depth - 1)


def _family_of(path: Path, header: Any) -> str:
    """The family a store's ``pbbflow`` header names; RunStoreError for a foreign store, another
    format or an unknown family."""
    kinds = (KIND, *(kind for _, kind in LEGACY))
    if not isinstance(header, dict) or header.get("kind") not in kinds:
        raise RunStoreFormatError(path, f"not a pbbflow run store (no 'pbbflow' attributes of kind {KIND!r})")
    legacy = LEGACY.get((header.get("format"), header.get("kind")))
    if legacy is not None:
        return legacy
    if header.get("format") != FORMAT or header.get("kind") != KIND:
        hint = "; format 1 did not checksum the options: solve again into a new store"
        raise RunStoreFormatError(
            path,
            f"unsupported run store format {header.get('format')!r} "
            f"(this pbbflow reads formats 2 and {FORMAT}{hint * (header.get('format') == 1)})",
        )
    kind = header.get("family")
    try:
        family(kind)
    except (ValueError, TypeError):
        *others, last = known_kinds()
        raise RunStoreFormatError(
            path, f"a run of an unknown family {kind!r} (this pbbflow knows {', '.join(others)} and {last})"
        ) from None
    return kind
