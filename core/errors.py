"""pbbflow's errors meant for the user: one line each; the command prints it and exits 2.

    PbbflowError
    ├── InputError (also ValueError): an instance or a problem that cannot be used
    │   (``flowshop.instance.InstanceError``, ``spatial.problem.ProblemError``)
    ├── RunStoreError: a run store that cannot be used as asked (in use, already there, not writable)
    │   ├── RunStoreMissing: there is no store at the path
    │   ├── RunStoreFormatError: not a pbbflow run store, another format or an unknown family
    │   └── RunStoreDamaged: a store whose metadata, arrays or checksums do not hold
    ├── ClusterError (also RuntimeError): a cluster that cannot be opened as asked
    └── GpuError (also RuntimeError): no usable GPU, or a request a GPU explorer cannot serve

An internal failure of a run (``workflow.run.RunFailed``) is not one of them: it exits 1 with its log.
"""

from __future__ import annotations

import os

from .text import printable


class PbbflowError(Exception):
    """An error meant for the user, in one line."""


class InputError(PbbflowError, ValueError):
    """An input that cannot be used."""


class RunStoreError(PbbflowError):
    """A run store that cannot be used as asked; ``str()`` reads ``path: problem``."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path, self.problem = os.fspath(path), problem
        super().__init__(self.path, problem)

    def __str__(self) -> str:
        return printable(f"{self.path}: {self.problem}")  # names from the store: nothing a terminal obeys


class RunStoreMissing(RunStoreError):
    """No run store at the path."""


class RunStoreFormatError(RunStoreError):
    """Not a pbbflow run store, one of a format this pbbflow does not read, or of an unknown family."""


class RunStoreDamaged(RunStoreError):
    """A run store whose metadata, arrays or checksums do not hold."""


class ClusterError(PbbflowError, RuntimeError):
    """A cluster cannot be opened as asked."""


class GpuError(PbbflowError, RuntimeError):
    """No usable GPU, or a request a GPU explorer cannot serve."""
