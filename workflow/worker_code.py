"""A run's worker code (its family's ``worker_code``, e.g. flow shop's ``warm_worker``) loaded on
every worker of a cluster before the run's clock starts, one Dask task each."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.compiling import CodeLoad
from .cluster import connected_workers

if TYPE_CHECKING:
    from distributed import Client, Future

WARM_SECONDS = 120.0  # the longest wait for the workers' code: one busy with other work loads it later


def submit_warm_workers(client: Client, code: Callable[..., CodeLoad], args: tuple) -> dict[str, Future]:
    """``code(*args)`` (a run's ``worker_code``: flow shop's :func:`warm_worker`) submitted to every
    worker of ``client`` now, one task each."""
    tag = uuid.uuid4().hex
    return {
        w: client.submit(
            code, *args, key=f"pbbflow-warmup-{tag}-{i}", workers=[w], allow_other_workers=True, pure=False
        )
        for i, w in enumerate(sorted(connected_workers(client)))
    }


def loaded_code(futures: dict[str, Future]) -> dict[str, CodeLoad]:
    """The code loads of the warm-up tasks ``futures`` that end within ``WARM_SECONDS`` (a worker
    whose threads are all busy loads its code when it gets to it); a failed one raises."""
    from distributed import wait  # here: start-up imports this module, and the parser imports start-up

    with contextlib.suppress(TimeoutError):  # distributed.wait raises when the timeout passes
        wait(list(futures.values()), timeout=WARM_SECONDS)
    return {worker: future.result() for worker, future in futures.items() if future.done()}


def warm_workers(client: Client, code: Callable[..., CodeLoad], args: tuple) -> dict[str, CodeLoad]:
    """``code(*args)`` on every worker of ``client`` now, waited for as :func:`loaded_code`."""
    return loaded_code(submit_warm_workers(client, code, args))
