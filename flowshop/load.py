"""``load_instance(spec)``: a Taillard benchmark by name or an instance file (the loader above
:mod:`.instance`, which reads files, and :mod:`.taillard`, which generates the benchmarks)."""

from __future__ import annotations

import os
import re

from .instance import FlowShop, check_options, read_instance_file
from .taillard import taillard_instance

_TAILLARD_NAME = re.compile(r"ta([0-9]+)", re.IGNORECASE)


def load_instance(spec: str | os.PathLike[str], fmt: str = "auto", orientation: str = "job-major") -> FlowShop:
    """Load a Taillard benchmark by name (``ta1``, ``TA001`` … ``ta120``) or an instance file.

    A spec matching ``ta<digits>`` (case-insensitive) is always a Taillard name, never a path.
    Files are read as :func:`.instance.read_instance_file` (``fmt="auto"`` tells VFR from
    Taillard files).
    """
    if isinstance(spec, str) and (match := _TAILLARD_NAME.fullmatch(spec.strip())):
        check_options(fmt, orientation)
        return taillard_instance(int(match.group(1)))
    return read_instance_file(spec, fmt, orientation)
