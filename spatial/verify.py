"""Deciding a VNN-LIB property of a network (:mod:`.vnnlib`) by searches over its input boxes on the CPU.

A region of the counterexample holds inputs ``x`` in its box whose outputs ``y = N(x)`` satisfy
every atom ``c . y + d <= 0``. With the margin ``m(x) = max over atoms of (c . N(x) + d)``, the
region holds a counterexample exactly when ``min m <= 0``: it holds (no counterexample: the
property is ``unsat`` once every region holds) where m > 0 everywhere, or is violated at a point.
Before a region's search, a gradient descent on the margin (:mod:`.falsify`) proposes a few
points, on a GPU after sampling the margin at many points of the box there; the first that passes
the exact check below answers ``sat`` (one that fails it is no answer).

The search splits the input box (:func:`_split_search`) where every coefficient is a double (VNN-LIB's
properties, as far as we have seen): a box holds where one atom's backward linear lower bound
(:mod:`.network_bounds`) is above 0 (m is at least each atom); the lowest box is bisected across
its widest side relative to the region's, and its centre checked, until every box holds. On an
ACAS-Xu-shaped 5-6x50-5 ReLU network a box costs about 2.5 ms, against 70 ms for a box of the
general search; bisecting the side of the largest ``|gradient| x width`` or ``|lambda| x width``
(CROWN's input coefficients) needed more boxes there. A region with a coefficient that no double
is goes to the general search: the threshold question "is m >= the smallest positive double
everywhere?" (``MinimizeOptions.prove_above``) of the spatial B&B, whose tape keeps such a
coefficient as an enclosure.

Rounding: the box is the smallest box of doubles around the region's (rational) one, and a
constant ``d`` that no double is becomes the double below it, so a margin that holds above 0 holds
for the exact property. A point found below 0 is checked again against the exact property: the
rational box, and the atoms over a rigorous enclosure of the outputs there (rational arithmetic).
A point that passes is a counterexample (``sat``); one that does not (it lies within rounding of
the property's edge) answers ``unknown``.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ..core.compiling import in_cache, recording
from .bnb import minimize
from .falsify import candidates
from .model import Model, enclose, maximum
from .network import Network, forms_and_gradient
from .network_bounds import NetworkBounds, output_bounds
from .options import MinimizeOptions
from .vnnlib import Atom, Property, Region

FIRST_RUN = ("the network bounds", "15 s on 2 cores")  # what a machine's first run compiles, and how long
POSITIVE = math.ulp(0.0)  # the smallest positive double: "m > 0" as "m >= POSITIVE"


@dataclass(frozen=True)
class Verdict:
    """``answer``: unsat (no counterexample), sat (``x`` is one, ``y`` the network's outputs there
    as doubles), timeout, or unknown (a point within rounding of the property's edge)."""

    answer: str
    x: list[float] | None
    y: list[float] | None
    nodes: int
    elapsed_s: float


def verify(
    network: Network,
    prop: Property,
    options: MinimizeOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
    falsify: bool = True,
    gpu: bool = False,
) -> Verdict:
    """Decide ``prop`` for ``network`` (the module doc); ``options.time_limit`` is the whole
    question's, shared by its regions in order; ``should_stop()`` true stops it undecided (timeout);
    ``falsify`` False leaves each region to its search alone (no descent first); ``gpu`` samples
    the margin for the descent and bounds the boxes of the input-splitting search on the GPU (the
    general search stays on the CPU)."""
    if (prop.n_inputs, prop.n_outputs) != (network.n_inputs, network.n_outputs):
        raise ValueError(
            f"the property has {prop.n_inputs} inputs and {prop.n_outputs} outputs, the network "
            f"{network.n_inputs} and {network.n_outputs}"
        )
    options = options or MinimizeOptions()
    began = time.perf_counter()
    nodes = 0
    device, sample = None, None
    if gpu:
        from ..gpu.spatial.network_bounds import FALSIFY_SAMPLES, DeviceNetworkBounds

        device = DeviceNetworkBounds(network)
        sample = functools.partial(device.sample_margins, count=FALSIFY_SAMPLES)
    for region in prop.regions:
        left = None if options.time_limit is None else options.time_limit - (time.perf_counter() - began)
        if (left is not None and left <= 0) or (should_stop is not None and should_stop()):
            return Verdict("timeout", None, None, nodes, time.perf_counter() - began)
        if not region.atoms:  # every input of the box is a counterexample
            return checked_verdict(network, region, [enclose(a)[1] for a in region.lower], nodes, began)
        for point in candidates(network, region, sample=sample) if falsify else ():  # a descent costs milliseconds
            verdict = checked_verdict(network, region, point.tolist(), nodes, began)
            if verdict.answer == "sat":
                return verdict
        form = _double_form(region.atoms, network.n_outputs)
        if form is not None:
            verdict = _split_search(network, region, *form, left, should_stop, nodes, began, device)
            nodes = verdict.nodes
            if verdict.answer != "unsat":
                return verdict
            continue
        limited = replace(options, prove_above=POSITIVE, time_limit=left)
        result = minimize(margin_problem(network, region), limited, should_stop=should_stop)
        nodes += result.nodes
        holds = result.threshold["holds"]
        if holds is None:
            return Verdict("timeout", None, None, nodes, time.perf_counter() - began)
        if not holds:
            return checked_verdict(network, region, list(result.x), nodes, began)
    return Verdict("unsat", None, None, nodes, time.perf_counter() - began)


def general_region(network: Network, prop: Property) -> Region | None:
    """The first region that the general search decides (a coefficient that no double is), if any."""
    for region in prop.regions:
        if region.atoms and _double_form(region.atoms, network.n_outputs) is None:
            return region
    return None


def code_cached(network: Network, prop: Property, options: MinimizeOptions) -> bool:
    """Whether numba's on-disk cache holds the code :func:`verify` runs for ``prop`` (False: this
    is the machine's first run, or its first since an upgrade)."""
    from . import bnb, network_bounds

    cached = in_cache(network_bounds._relax, network_bounds._affine_back, network_bounds._activation_back)
    return cached and (general_region(network, prop) is None or bnb.code_cached(options))


def load_code(network: Network, prop: Property, options: MinimizeOptions) -> tuple[float, bool]:
    """Load (or compile, on a machine's first run) the code :func:`verify` runs for ``prop``: the
    network bounds, and the spatial B&B's where a region needs the general search; (seconds,
    whether anything was compiled)."""
    from . import bnb

    with recording() as outcome:
        zeros = np.zeros(network.n_inputs)
        NetworkBounds(network).lower_bounds(zeros, zeros, np.ones((1, network.n_outputs)), np.zeros(1))
        general = general_region(network, prop)
        if general is not None:
            bnb.load_code(margin_problem(network, general), options)
    return outcome["seconds"], outcome["compiled"]


def load_gpu_code(network: Network) -> float:
    """Load the GPU kernels that sample the margin and bound the split boxes
    (:func:`pbbflow.gpu.spatial.network_bounds.load_kernel`); its seconds."""
    from ..gpu.spatial.network_bounds import load_kernel

    return load_kernel(network)


def margin_problem(network: Network, region: Region):
    """Minimize the region's margin over its box of doubles."""
    model = Model("margin")
    x = [model.variable(enclose(a)[0], enclose(b)[1]) for a, b in zip(region.lower, region.upper)]
    y = network(x)
    margins = [_affine(atom, y) for atom in region.atoms]
    model.minimize(margins[0] if len(margins) == 1 else maximum(*margins))
    return model.problem()


def _affine(atom: Atom, y: list):
    """``c . y + d`` with d rounded down where no double is it (a coefficient that no double is
    stays an enclosure: sound, though the network bound then does not see the form)."""
    total = enclose(atom.constant)[0]
    for j, c in atom.coefficients.items():
        lo, hi = enclose(c)
        total = total + (lo if lo == hi else Fraction(c)) * y[j]
    return total


def checked_verdict(network: Network, region: Region, x: list[float], nodes: int, began: float) -> Verdict:
    """``sat`` where ``x`` satisfies the exact property (its rational box; every atom over a
    rigorous enclosure of the outputs at x), else ``unknown``."""
    seconds = time.perf_counter() - began
    inside = all(a <= Fraction(v) <= b for a, v, b in zip(region.lower, x, region.upper))
    point = np.array(x, dtype=np.float64)
    lo, hi = output_bounds(network, point, point)
    enclosure = [(Fraction(a), Fraction(b)) for a, b in zip(lo.tolist(), hi.tolist())]
    satisfied = all(
        sum((c * (enclosure[j][1] if c > 0 else enclosure[j][0]) for j, c in atom.coefficients.items()), Fraction(0))
        + atom.constant
        <= 0
        for atom in region.atoms
    )
    if not (inside and satisfied):
        return Verdict("unknown", x, None, nodes, seconds)
    y = [float((a + b) / 2) for a, b in enclosure]
    return Verdict("sat", x, y, nodes, seconds)


def _double_form(atoms: tuple[Atom, ...], n_outputs: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The atoms as rows ``c`` (n_atoms x n_outputs) and constants ``d`` of doubles, each d rounded
    down where no double is it (``c . y + d`` is then at most the exact form); None where a
    coefficient is no double (the general search takes those)."""
    c = np.zeros((len(atoms), n_outputs))
    for k, atom in enumerate(atoms):
        for j, coefficient in atom.coefficients.items():
            lo, hi = enclose(coefficient)
            if lo != hi:
                return None
            c[k, j] = lo
    return c, np.array([enclose(atom.constant)[0] for atom in atoms])


def _split_search(
    network: Network,
    region: Region,
    c: np.ndarray,
    d: np.ndarray,
    seconds: float | None,
    should_stop: Callable[[], bool] | None,
    nodes: int,
    began: float,
    device=None,
) -> Verdict:
    """Decide one region by input splitting: a box holds where the largest of its atoms' backward
    linear lower bounds is above 0; the lowest boxes are bisected across their widest side
    (relative to the region's) until every box holds (``unsat`` for this region), a box's centre
    passes the exact check (``sat``), the time is up (``timeout``), or a box that cannot be split
    stays open (``unknown``). On the CPU (:class:`.network_bounds.NetworkBounds`) one box at a
    time; on the GPU (``device``: the network's
    :class:`pbbflow.gpu.spatial.network_bounds.DeviceNetworkBounds`) as many of the lowest as make
    one launch of children."""
    if device is not None:
        batch = max(1, device.scratch_bytes // device.bytes_per_box(len(c)) // 2)

        def bound(los: np.ndarray, his: np.ndarray) -> np.ndarray:
            return device.lower_bounds(los, his, c, d).max(axis=1)

    else:
        host, batch = NetworkBounds(network), 1

        def bound(los: np.ndarray, his: np.ndarray) -> np.ndarray:
            return host.box_lower_bounds(los, his, c, d).max(axis=1)

    lo = np.array([enclose(a)[0] for a in region.lower])
    hi = np.array([enclose(b)[1] for b in region.upper])
    scale = np.where(hi > lo, hi - lo, 1.0)
    deadline = None if seconds is None else time.perf_counter() + seconds
    order = itertools.count()
    open_boxes: list = []
    unsplittable = False

    def add(los: np.ndarray, his: np.ndarray) -> None:
        nonlocal nodes
        nodes += len(los)
        for lower, box_lo, box_hi in zip(bound(los, his).tolist(), los, his):
            if not lower > 0:  # NaN never holds
                heapq.heappush(open_boxes, (lower, next(order), box_lo, box_hi))

    add(lo[None, :], hi[None, :])
    while open_boxes:
        if (deadline is not None and time.perf_counter() >= deadline) or (should_stop is not None and should_stop()):
            return Verdict("timeout", None, None, nodes, time.perf_counter() - began)
        lowest = [heapq.heappop(open_boxes) for _ in range(min(batch, len(open_boxes)))]
        los, his = np.array([box[2] for box in lowest]), np.array([box[3] for box in lowest])
        centres = np.minimum(np.maximum(0.5 * los + 0.5 * his, los), his)
        margins = forms_and_gradient(network, c, d, centres)[0]
        for k in np.flatnonzero(margins <= 0)[np.argsort(margins[margins <= 0], kind="stable")]:
            verdict = checked_verdict(network, region, centres[k].tolist(), nodes, began)
            if verdict.answer == "sat":
                return verdict
        rows = np.arange(len(los))
        axes = np.argmax((his - los) / scale, axis=1)
        middles = centres[rows, axes]
        splittable = (los[rows, axes] < middles) & (middles < his[rows, axes])
        unsplittable = unsplittable or not splittable.all()
        rows, axes, middles = rows[splittable], axes[splittable], middles[splittable]
        left_his, right_los = his[rows].copy(), los[rows].copy()
        left_his[np.arange(len(rows)), axes] = middles
        right_los[np.arange(len(rows)), axes] = middles
        if len(rows):
            add(np.concatenate([los[rows], right_los]), np.concatenate([left_his, his[rows]]))
    answer = "unknown" if unsplittable else "unsat"
    return Verdict(answer, None, None, nodes, time.perf_counter() - began)
