"""A suite of verification instances as one resumable job: its instance list, its store and the
task that decides one instance on a worker (the driver is ``suite_commands.py``).

An instance list is VNN-COMP's CSV: rows ``onnx_path,vnnlib_path,timeout_seconds``, no header,
paths relative to the CSV's folder (or absolute), blank lines ignored.  ``.gz`` files are read
decompressed.

The suite store (``suite.zarr``) is a Zarr v3 directory, plain data, nothing pickled::

    suite.zarr/                 root attrs: {"pbbflow": {"format": 1, "kind": "pbbflow-suite",
                                                         "family": "spatial"},
                                             "source": "<the CSV as named>",
                                             "instances": [{"network": "<as the row names it>",
                                                            "property": "...", "timeout_s": 116.0,
                                                            "network_sha256": "<hex>",
                                                            "property_sha256": "<hex>"}, ...],
                                             "store_id": "<random hex>", "sha256": "<hex>",
                                             "owner": {"run", "pid", "host", "since"}}
      networks/<sha256>         uint8 (n,): a network's ONNX bytes, one array per distinct content
      properties/<sha256>       uint8 (n,): a property's VNN-LIB bytes, likewise
      results/<index:06d>/      one instance's result, a group with attrs only: {"complete": true,
                                "index", "seq", "answer" (unsat | sat | timeout | unknown | error),
                                "reason" (one line, or null), "seconds", "nodes", "x", "y" (lists
                                of doubles for sat, else null), "committed_at", "run", "sha256"}

The store holds everything an instance needs: a suite resumes where its files have moved.  The
root's ``sha256`` covers the header, the source, the instance list, the store id and every
network's and property's bytes (``storage.runstore``'s digest); a result's covers its attrs and the
root's, which binds it to its store.

Writing: one process at a time, as a run store (``storage.runstore``: the directory's ``flock``,
the root's ``owner``, a second writer refused with the holder's pid and host, a store whose holder
died taken over).  A result is committed once, the moment its instance ends: its group's metadata
(``zarr.json``) is written in one piece, ``complete`` in it; no commit writes another instance's
files.  A process killed at any moment leaves every earlier result as it was; a result it was
writing is either whole or not there (a missing or torn ``zarr.json`` is no result: its instance
runs again).  A complete result that fails its checksum is damage (RunStoreDamaged).  Each commit
re-reads the root's ``owner`` and refuses to write where another run took the store over.
``seq`` numbers the commits of a store from 1; ``run`` is the id of the run that committed it.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import hashlib
import io
import math
import os
import re
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.compiling import CodeLoad
from ..core.errors import RunStoreDamaged, RunStoreError, RunStoreFormatError
from ..core.family import SUITE_KIND
from ..core.files import FileRefused, read_bytes, read_json
from ..core.text import shorten
from ..storage.runstore import (
    checksum,
    claim_directory,
    describe_owner,
    file_errors,
    new_owner,
    open_root,
    plain_json,
    reserve_directory,
    zarr_module,
)
from .network import Network
from .problem import ProblemError
from .vnnlib import Property

FORMAT = 1
FAMILY = "spatial"
ANSWERS = ("unsat", "sat", "timeout", "unknown", "error")  # a result's answer; the first two decide
DECIDED = ANSWERS[:2]
MAX_NETWORK_BYTES = 1 << 30  # the most a network file of a suite may hold (stored whole in the store)
STOP_CHECK_S = 0.25  # a task asks the scheduler whether the suite stops at most this often
RESULT_COLUMNS = ("index", "network", "property", "timeout_s", "answer", "seconds", "nodes", "x", "y")
_SIGNED = ("pbbflow", "source", "instances", "store_id")  # the root attrs its sha256 covers
_RESULTS = "results"
_BLOBS = {"network": "networks", "property": "properties"}  # what a row names -> the group of its bytes
_RESULT_NAME = re.compile(r"\d{6}")


@dataclass(frozen=True)
class Instance:
    """One row of a suite: the names its CSV gives, its time limit and its files' digests."""

    network: str
    property: str
    timeout_s: float
    network_sha256: str
    property_sha256: str

    def to_dict(self) -> dict:
        """The root attrs' entry."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class SuiteResult:
    """A committed result of instance ``index``."""

    index: int
    seq: int
    answer: str
    reason: str | None
    seconds: float
    nodes: int
    x: list[float] | None
    y: list[float] | None
    committed_at: str
    run: str


@dataclass(frozen=True)
class LoadedSuite:
    """An instance list read and checked: its instances and the bytes of their files by sha256."""

    source: str
    instances: list[Instance]
    blobs: dict[str, dict[str, bytes]]  # "networks" | "properties" -> sha256 -> bytes


# ---------------------------------------------------------------------------- instance lists


def read_instances(csv_path: str | os.PathLike[str]) -> LoadedSuite:
    """The suite ``csv_path`` lists, every network and property read and parsed (so that a bad row
    fails here, before anything is written); ProblemError naming the file and line."""
    from .onnx_network import parse_onnx
    from .vnnlib import parse_vnnlib

    path = Path(csv_path)
    try:
        text = read_bytes(path, kind="an instance list").decode("utf-8")
    except FileRefused as error:
        raise ProblemError(f"{path}: cannot read it ({error.reason})") from None
    except UnicodeDecodeError as error:
        raise ProblemError(f"{path}: not UTF-8 text (byte {error.start})") from None
    instances: list[Instance] = []
    blobs: dict[str, dict[str, bytes]] = {group: {} for group in _BLOBS.values()}
    parsed: dict[str, Network | Property] = {}  # sha256 -> the network or property it holds
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        where = f"{path}:{number}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise ProblemError(f"{where}: expected onnx_path,vnnlib_path,timeout_seconds, got {len(row)} fields")
        network_name, property_name, timeout = (cell.strip() for cell in row)
        timeout_s = _timeout(timeout, where)
        digests = {}
        for what, name, parse in (
            ("network", network_name, parse_onnx),
            ("property", property_name, lambda data, label: parse_vnnlib(data.decode("utf-8"), label)),
        ):
            data = _file_bytes(path.parent, name, what, where)
            digest = hashlib.sha256(data).hexdigest()
            if digest not in parsed:
                try:
                    parsed[digest] = parse(data, Path(name).name)
                except UnicodeDecodeError as error:
                    raise ProblemError(f"{where}: {name}: not UTF-8 text (byte {error.start})") from None
                except ProblemError as error:
                    raise ProblemError(f"{where}: {error}") from None
            blobs[_BLOBS[what]][digest] = data
            digests[what] = digest
        network, prop = parsed[digests["network"]], parsed[digests["property"]]
        if (prop.n_inputs, prop.n_outputs) != (network.n_inputs, network.n_outputs):
            raise ProblemError(
                f"{where}: {Path(property_name).name} has {prop.n_inputs} inputs and {prop.n_outputs} outputs; "
                f"{Path(network_name).name} {network.n_inputs} and {network.n_outputs}"
            )
        instances.append(Instance(network_name, property_name, timeout_s, digests["network"], digests["property"]))
    if not instances:
        raise ProblemError(f"{path}: lists no instance")
    return LoadedSuite(str(path), instances, blobs)


def _timeout(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ProblemError(f"{where}: the timeout must be a number of seconds > 0, got {shorten(text)!r}")
    return value


def _file_bytes(folder: Path, name: str, what: str, where: str) -> bytes:
    """The bytes of the ``what`` file a row names (relative to the list's ``folder``), decompressed
    where it ends in ``.gz``."""
    if not name:
        raise ProblemError(f"{where}: the {what} path is empty")
    try:
        data = read_bytes(folder / name, limit=MAX_NETWORK_BYTES, kind=f"a {what} file")
    except FileRefused as error:
        raise ProblemError(f"{where}: {name}: {error.reason}") from None
    if name.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ProblemError(f"{where}: {name}: not gzip data ({error})") from None
    return data


# ---------------------------------------------------------------------------- the store


class SuiteStore:
    """A suite on disk (the module docstring): its instances, their files and their results."""

    def __init__(self, path: Path, attrs: Mapping[str, Any]) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self._path = path
        self._sha256 = attrs["sha256"]
        self.source: str = attrs["source"]
        self.instances = [Instance(**entry) for entry in attrs["instances"]]
        self._lock = None
        self._owner: str | None = None
        self._seq = 0  # the last seq this writer knows of
        self._guard = threading.Lock()

    @classmethod
    def create(cls, path: str | os.PathLike[str], suite: LoadedSuite, *, overwrite: bool = False) -> SuiteStore:
        """A new suite store of ``suite`` at ``path``, held for writing; RunStoreError where ``path``
        holds anything but (with ``overwrite``) a suite store, or is in use."""
        path = Path(path)
        header = {"format": FORMAT, "kind": SUITE_KIND, "family": FAMILY}
        signed = {
            "pbbflow": header,
            "source": suite.source,
            "instances": [instance.to_dict() for instance in suite.instances],
            "store_id": uuid.uuid4().hex,
        }
        arrays = _blob_arrays(suite.blobs)
        sha256 = checksum(arrays, signed)
        lock, owner = _reserve(path, overwrite), new_owner()
        try:
            with file_errors(path, "write it"):
                attrs = {**signed, "sha256": sha256, "owner": owner}
                root = zarr_module().open_group(path, mode="w-", attributes=attrs)
                for group in _BLOBS.values():
                    root.create_group(group)
                for name, data in arrays:
                    root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=(max(1, data.size),))[...] = data
                root.create_group(_RESULTS)
        except BaseException:
            lock.release()
            raise
        store = cls(path, attrs)
        store._lock, store._owner = lock, owner["run"]
        return store

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SuiteStore:
        """An existing suite store, its instance list and files verified; RunStoreError if it is
        missing, not a suite store, of another format or damaged."""
        path = Path(path)
        root = open_root(path)
        attrs = root.attrs.asdict()
        header = attrs.get("pbbflow")
        if not isinstance(header, dict) or header.get("kind") != SUITE_KIND:
            raise RunStoreFormatError(
                path, f"not a pbbflow suite store (no 'pbbflow' attributes of kind {SUITE_KIND!r})"
            )
        if header.get("format") != FORMAT:
            raise RunStoreFormatError(
                path, f"unsupported suite store format {header.get('format')!r} (this pbbflow reads {FORMAT})"
            )
        try:
            signed = {key: attrs[key] for key in _SIGNED}
            needed = {
                f"{group}/{entry[f'{what}_sha256']}" for entry in signed["instances"] for what, group in _BLOBS.items()
            }
            arrays = sorted((name, np.asarray(root[name][...], dtype=np.uint8)) for name in needed)
            intact = checksum(arrays, signed) == attrs["sha256"]
            store = cls(path, attrs)
        except KeyError as e:
            raise RunStoreDamaged(path, f"damaged suite store: missing {e}") from None
        except Exception as e:  # zarr raises assorted errors on corrupt metadata or chunks
            raise RunStoreDamaged(path, f"damaged suite store: {type(e).__name__}: {e}") from None
        if not intact:
            raise RunStoreDamaged(
                path, "fails its sha256 checksum: its instances or their files were changed or damaged"
            )
        return store

    def claim(self) -> SuiteStore:
        """Hold the store for writing (commits need it); RunStoreError if another live run holds it
        or it cannot be written.  Returns ``self``."""
        if self._owner is not None:
            return self
        results = self._path / _RESULTS

        def tidy() -> None:
            for leftover in results.rglob("*.partial"):  # a killed writer's torn files
                leftover.unlink(missing_ok=True)

        self._lock, self._owner = claim_directory(self._path, self._sha256, results, "suite", tidy)
        return self

    def release(self) -> None:
        """Stop writing the store: another run may claim it."""
        if self._lock is not None:
            self._lock.release()
        self._lock = self._owner = None

    @property
    def path(self) -> Path:
        """The store's directory."""
        return self._path

    def network_bytes(self, index: int) -> bytes:
        """The ONNX bytes of instance ``index``'s network."""
        return self._blob("networks", self.instances[index].network_sha256)

    def property_bytes(self, index: int) -> bytes:
        """The VNN-LIB bytes of instance ``index``'s property."""
        return self._blob("properties", self.instances[index].property_sha256)

    def _blob(self, group: str, digest: str) -> bytes:
        root = zarr_module().open_group(self._path, mode="r", use_consolidated=False)
        data = np.asarray(root[f"{group}/{digest}"][...], dtype=np.uint8).tobytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise RunStoreDamaged(self._path, f"{group}/{digest} fails its sha256 checksum")
        return data

    # ------------------------------------------------------------------ results

    def results(self) -> dict[int, SuiteResult]:
        """The committed results by instance index, verified (a torn one is none: its instance runs
        again); RunStoreDamaged for a complete result that fails its checksum or holds nonsense."""
        folder = self._path / _RESULTS
        found: dict[int, SuiteResult] = {}
        try:
            names = sorted(entry.name for entry in folder.iterdir() if _RESULT_NAME.fullmatch(entry.name))
        except FileNotFoundError:
            raise RunStoreDamaged(self._path, f"damaged suite store: no {_RESULTS} folder") from None
        for name in names:
            try:
                attrs = read_json(folder / name / "zarr.json", kind="a metadata file").get("attributes", {})
            except (FileRefused, AttributeError):
                continue  # a torn write, or a group not written yet: no result
            if not isinstance(attrs, dict) or attrs.get("complete") is not True:
                continue
            result = self._result(name, attrs)
            found[result.index] = result
        with self._guard:
            self._seq = max([self._seq, *(r.seq for r in found.values())])
        return found

    def _result(self, name: str, attrs: dict) -> SuiteResult:
        where = f"{_RESULTS}/{name}"
        if checksum([], {**attrs, "store_sha256": self._sha256}) != attrs.get("sha256"):
            raise RunStoreDamaged(self._path, f"{where} fails its sha256 checksum (tampered or damaged)")
        try:
            result = SuiteResult(**{key: attrs[key] for key in SuiteResult.__dataclass_fields__})
        except KeyError as e:
            raise RunStoreDamaged(self._path, f"{where} is damaged: missing {e}") from None
        if result.index != int(name) or not 0 <= result.index < len(self.instances) or result.answer not in ANSWERS:
            raise RunStoreDamaged(self._path, f"{where} holds instance {result.index!r} answering {result.answer!r}")
        return result

    def commit(self, index: int, outcome: Mapping[str, Any]) -> SuiteResult:
        """Commit instance ``index``'s result (``decide``'s dict: answer, reason, seconds, nodes, x,
        y) in one write (the module docstring); RunStoreError unless this object holds the store."""
        if self._owner is None:
            raise RunStoreError(self._path, "opened for reading: claim() it to write")
        if outcome["answer"] not in ANSWERS:
            raise ValueError(f"unknown answer {outcome['answer']!r}")
        owner = _root_attrs(self._path).get("owner")
        if not isinstance(owner, dict) or owner.get("run") != self._owner:
            raise RunStoreError(
                self._path, f"taken over by another run ({describe_owner(owner)}); this run no longer writes to it"
            )
        with self._guard:
            self._seq += 1
            seq = self._seq
        attrs = plain_json(
            {
                "complete": True,
                "index": index,
                "seq": seq,
                "answer": outcome["answer"],
                "reason": outcome.get("reason"),
                "seconds": float(outcome["seconds"]),
                "nodes": int(outcome["nodes"]),
                "x": None if outcome.get("x") is None else [float(v) for v in outcome["x"]],
                "y": None if outcome.get("y") is None else [float(v) for v in outcome["y"]],
                "committed_at": datetime.datetime.now().astimezone().isoformat(timespec="milliseconds"),
                "run": self._owner,
            },
            "a suite result",
        )
        attrs["sha256"] = checksum([], {**attrs, "store_sha256": self._sha256})
        with file_errors(self._path, "write it"):
            root = zarr_module().open_group(self._path, mode="r+", use_consolidated=False)
            root.create_group(f"{_RESULTS}/{index:06d}", overwrite=True, attributes=attrs)  # one zarr.json: the commit
        return SuiteResult(**{key: attrs[key] for key in SuiteResult.__dataclass_fields__})


def _blob_arrays(blobs: Mapping[str, Mapping[str, bytes]]) -> list[tuple[str, np.ndarray]]:
    return sorted(
        (f"{group}/{digest}", np.frombuffer(data, dtype=np.uint8))
        for group, found in blobs.items()
        for digest, data in found.items()
    )


def _root_attrs(path: Path) -> dict:
    try:
        return read_json(path / "zarr.json", kind="a metadata file").get("attributes", {})
    except (FileRefused, AttributeError) as error:
        raise RunStoreDamaged(path, f"damaged suite store: zarr.json: {error}") from None


def is_suite_store(path: Path) -> bool:
    """Whether ``path`` holds a suite store (its root names the kind)."""
    try:
        return read_json(path / "zarr.json")["attributes"]["pbbflow"]["kind"] == SUITE_KIND
    except (FileRefused, KeyError, TypeError):
        return False


def _reserve(path: Path, overwrite: bool):
    """``path`` as an empty directory that this process holds (``RunStore.reserve``'s rules, for
    suite stores: one that holds anything is refused unless it is a suite store and ``overwrite``)."""
    return reserve_directory(path, overwrite, is_suite_store, "suite store")


# ---------------------------------------------------------------------------- the results table


def results_table(store: SuiteStore, results: Mapping[int, SuiteResult]) -> list[dict]:
    """One row per instance (``RESULT_COLUMNS``; an undecided instance's answer is None)."""
    rows = []
    for index, instance in enumerate(store.instances):
        result = results.get(index)
        rows.append(
            {
                "index": index,
                "network": instance.network,
                "property": instance.property,
                "timeout_s": instance.timeout_s,
                "answer": None if result is None else result.answer,
                "seconds": None if result is None else result.seconds,
                "nodes": None if result is None else result.nodes,
                "x": None if result is None else result.x,
                "y": None if result is None else result.y,
                **({} if result is None or result.reason is None else {"reason": result.reason}),
            }
        )
    return rows


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Instances per answer (``ANSWERS``, then ``pending``: no result yet)."""
    found = Counter(row["answer"] or "pending" for row in rows)
    return {answer: found[answer] for answer in (*ANSWERS, "pending")}


def summary_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The counts per answer and the seconds of the results, in one line."""
    total = sum(row["seconds"] or 0.0 for row in rows)
    parts = ", ".join(f"{n} {answer}" for answer, n in counts(rows).items() if n or answer in DECIDED)
    return f"{len(rows)} instances: {parts}; {total:.2f} s in total"


def results_paths(store_path: Path) -> tuple[Path, Path]:
    """Where the results table goes: ``<stem>.results.csv`` and ``.json`` beside the store."""
    stem = store_path.name.removesuffix(".zarr") if store_path.name.endswith(".zarr") else store_path.stem
    return store_path.with_name(f"{stem}.results.csv"), store_path.with_name(f"{stem}.results.json")


def write_results(
    store_path: Path, rows: Sequence[Mapping[str, Any]], document: Mapping[str, Any]
) -> tuple[Path, Path]:
    """Write the results table as CSV (``RESULT_COLUMNS``; x and y space-separated doubles) and
    ``document`` as JSON, each replacing its file in one rename; the two paths."""
    import json

    csv_path, json_path = results_paths(store_path)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(RESULT_COLUMNS)
    for row in rows:
        cells = {**row, **{k: " ".join(repr(v) for v in row[k]) if row[k] is not None else "" for k in ("x", "y")}}
        writer.writerow(["" if cells[c] is None else cells[c] for c in RESULT_COLUMNS])
    _replace(csv_path, text.getvalue())
    _replace(json_path, json.dumps(document, indent=1) + "\n")
    return csv_path, json_path


def _replace(path: Path, text: str) -> None:
    """``path`` holds ``text``, written beside it and renamed over it (a link there is replaced, not followed)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(name, 0o644)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------- on a worker


class _Stopping:
    """``should_stop`` of a task: the Dask event ``name`` is set (asked at most every ``STOP_CHECK_S``)."""

    def __init__(self, name: str | None) -> None:
        self.name, self.asked, self.stopped = name, 0.0, False

    def __call__(self) -> bool:
        if self.name is None or self.stopped:
            return self.stopped
        now = time.monotonic()
        if now - self.asked >= STOP_CHECK_S:
            self.asked = now
            try:
                from distributed import Event

                self.stopped = Event(self.name).is_set()
            except Exception:  # noqa: BLE001 (the scheduler is gone: the suite has stopped)
                self.stopped = True
        return self.stopped


def decide(
    network: bytes, prop: bytes, names: tuple[str, str], timeout_s: float, stop: str | None = None, gpu: bool = False
) -> dict:
    """Decide one instance (a Dask task): the network's ONNX bytes and the property's VNN-LIB bytes
    (``names``: theirs, for messages), within ``timeout_s`` seconds on one core (``gpu``: its boxes
    bounded on the worker's GPU); ``stop`` names the Dask event that stops it undecided.  A JSON-able dict: ``answer``, ``reason`` (one line, for
    ``error``), ``seconds``, ``nodes``, ``x`` and ``y`` (sat), and ``stopped`` (true: it was stopped,
    its answer is no result); an error of pbbflow's own code adds its ``traceback`` (text, for the
    run's error log: the store keeps the one line)."""
    from .onnx_network import parse_onnx
    from .options import MinimizeOptions
    from .verify import verify
    from .vnnlib import parse_vnnlib

    began = time.perf_counter()
    should_stop = _Stopping(stop)
    try:
        verdict = verify(
            parse_onnx(network, Path(names[0]).name),
            parse_vnnlib(prop.decode("utf-8"), Path(names[1]).name),
            MinimizeOptions(time_limit=timeout_s, parallel=False),
            should_stop=should_stop,
            gpu=gpu,
        )
    except Exception as error:  # noqa: BLE001 (one instance's failure is its result, not the suite's)
        seconds = time.perf_counter() - began
        result = {"answer": "error", "seconds": seconds, "nodes": 0, "x": None, "y": None}
        if isinstance(error, ProblemError):  # the instance's files: the user's to mend
            return {**result, "reason": shorten(str(error))}
        reason = shorten(f"{type(error).__name__}: {error}")
        return {**result, "reason": reason, "traceback": traceback.format_exc()}
    stopped = should_stop.stopped and verdict.answer == "timeout"
    reason = "the point found lies within rounding of the property's edge" if verdict.answer == "unknown" else None
    return {
        "answer": verdict.answer,
        "reason": reason,
        "seconds": verdict.elapsed_s,
        "nodes": verdict.nodes,
        "x": verdict.x if verdict.answer == "sat" else None,
        "y": verdict.y if verdict.answer == "sat" else None,
        "stopped": stopped,
    }


def warm_worker(network: bytes, prop: bytes, gpu: bool = False) -> CodeLoad:
    """In a worker: load (or compile) the code ``decide`` runs (a Dask task) for one instance
    (:func:`.verify.load_code`; ``gpu``: the GPU kernel too)."""
    from .onnx_network import parse_onnx
    from .options import MinimizeOptions
    from .verify import load_code, load_gpu_code
    from .vnnlib import parse_vnnlib

    net = parse_onnx(network)
    seconds, compiled = load_code(net, parse_vnnlib(prop.decode("utf-8")), MinimizeOptions(parallel=False))
    return CodeLoad(seconds + (load_gpu_code(net) if gpu else 0.0), compiled)


def stop_event_name() -> str:
    """A new name for the Dask event that stops a suite's tasks."""
    return f"pbbflow-suite-stop-{uuid.uuid4().hex}"
