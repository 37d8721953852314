"""Backward linear (CROWN) bounds of a network over many boxes at once on the GPU:
:meth:`pbbflow.spatial.network_bounds.NetworkBounds.lower_bounds` for a batch of boxes.

The method, and every rounding in it, is the CPU module's (its docstring says why each step is
sound). The scalar parts are the CPU's own Python bodies compiled for the device with the device
interval operations of :mod:`.interval` (:func:`~.interval.device_twin`): a unit's interval
through an affine row, an elementwise constant or an activation, its relaxation lines (with the
fallback to constant lines), and a backward row's activation and elementwise steps, the error
term and guard of its affine steps and its minimum over the box. Only the dot products
``lam [W b]`` and ``|lam| [|W| |b|]`` of the affine steps are the kernel's own: a float sum in
its own order (fma or not), which the Higham constants of the CPU's ``_matmul_error_constants``
bound for any order, so a bound differs from the CPU's by roundings only. Every step of a
:class:`~pbbflow.spatial.network.Network` is taken: dense layers, elementwise constants and the
activations relu, leaky_relu, tanh, sigmoid and softplus (the smooth ones' library functions are
the device's, widened as :mod:`.interval` says).

**Kernel** (:func:`bounds_kernel`): one block per box, one thread per backward row (a block-stride
loop over the rows, and over the units in the forward steps). Per box it walks the operations:
each node's interval bounds (one thread per unit), at each activation input beyond the first
affine step the CROWN rows ``+e_j`` and ``-e_j`` (the first affine step exact, as the CPU's
``signed_identity``) carried back to the box and intersected with them, the activation's lines;
then the rows ``c`` with their constants ``d``, max'ed with the direct interval bound of
``c . y + d``. Threads meet at a barrier between the steps; a row's backward pass needs none.

**Scratch** (global device arrays sized by the host, the box index first, the row index last so
adjacent threads touch adjacent addresses): ``nodes`` (boxes, 3, S) the lower and upper bounds and
magnitudes max|y| of every node (S = the nodes' widths plus one each: the bias column's magnitude
1), ``lines`` (boxes, 4, S) the lines ``sl, bl, su, bu`` at each activation's input,
``rows`` (boxes, 3, W + 1, R) two coefficient buffers and the absolute product of each row
(W the widest node, R the most rows at once), ``row_bounds`` (boxes, R). Sizes come from arrays,
so one compiled kernel serves every network. :meth:`DeviceNetworkBounds.lower_bounds` runs the
boxes in chunks of at most :data:`SCRATCH_BYTES` of scratch (inputs and outputs included) each.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
import types as pytypes
from pathlib import Path

import numpy as np
from numba import config, cuda
from numba.cuda import libdevice

from ...spatial import network_bounds as cpu
from ...spatial.network import Network
from ..warp import SIMULATED
from . import interval as spatial_interval
from .interval import device_twin

config.CUDA_LOW_OCCUPANCY_WARNINGS = False  # a search's first launches bound a box or two by design

SCRATCH_BYTES = 256 << 20  # device scratch of one launch at most (a chunk of boxes), 256 MiB
# threads of a box's block: the simulator runs each as a Python thread (few, and fewer than the rows of
# the tests' networks, so the block-stride loops turn); a GPU takes up to 128, whole warps
SIMULATED_THREADS = 4
MAX_THREADS = 128
# points of a region's box at which falsification samples the margin before its descent
# (:func:`pbbflow.spatial.falsify.candidates`); fewer under the simulator, whose threads are Python's
FALSIFY_SAMPLES = 256 if SIMULATED else 1 << 16

AFFINE = 0
ELEMENTWISE = 1
ACTIVATION = 2


def _source_stamp() -> int:
    """A digest of the files whose code the cached kernel compiles besides its own (see
    :func:`pbbflow.gpu.spatial.kernels._source_stamp`): it sits in the kernel's closure, which
    numba's disk cache hashes into the entry's key."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in (
        here.parent.parent / "spatial" / "network_bounds.py",
        here.parent.parent / "spatial" / "interval.py",
        here / "interval.py",
        here / "network_bounds.py",
    ):
        digest.update(path.read_bytes())
    return int(digest.hexdigest()[:15], 16)


def _host_atanh(x: float) -> float:
    """The simulator's device atanh: the host's, +-inf at +-1 as on a device (Python's raises there)."""
    return math.copysign(math.inf, x) if abs(x) == 1.0 else math.atanh(x)


SOURCE_STAMP = _source_stamp()
_NAMESPACE = dict(vars(cpu))
_NAMESPACE["iv"] = spatial_interval
if SIMULATED:
    _NAMESPACE["math"] = pytypes.SimpleNamespace(**{**vars(math), "atanh": _host_atanh})
for _name in (
    "_affine_row_interval",
    "_elementwise_one",
    "_softplus_at",
    "_act_range",
    "_act_derivative",
    "_leaky_at",
    "_act_bounds",
    "_tangent_point",
    "_offset_at",
    "_offset_piece",
    "_relax_one",
    "_relax_unit",
    "_guard_row",
    "_affine_spread",
    "_affine_back_row",
    "_scaled_coefficient",
    "_activation_back_row",
    "_elementwise_back_row",
    "_linear_minimum",
):
    _NAMESPACE[_name] = device_twin(getattr(cpu, _name), _NAMESPACE)
del _name
_affine_row_interval = _NAMESPACE["_affine_row_interval"]
_elementwise_one = _NAMESPACE["_elementwise_one"]
_act_bounds = _NAMESPACE["_act_bounds"]
_relax_unit = _NAMESPACE["_relax_unit"]
_affine_spread = _NAMESPACE["_affine_spread"]
_affine_back_row = _NAMESPACE["_affine_back_row"]
_activation_back_row = _NAMESPACE["_activation_back_row"]
_elementwise_back_row = _NAMESPACE["_elementwise_back_row"]
_linear_minimum = _NAMESPACE["_linear_minimum"]


@cuda.jit(device=True)
def _backward_row(
    r,
    start,
    scaling,
    beta,
    kind,
    n_in,
    n_out,
    w_off,
    v_off,
    k_factor,
    t_term,
    code,
    node_off,
    weights,
    vectors,
    nodes,
    lines,
    rows,
):
    """A lower bound over the box of row ``r`` (its coefficients in ``rows[0, :, r]``, its
    constant ``beta``) carried back from the output of operation ``start`` to the output of the
    ``scaling`` elementwise steps before any other
    (:meth:`pbbflow.spatial.network_bounds.NetworkBounds._backward`, one row)."""
    cur = 0
    for k in range(start, scaling - 1, -1):
        n = n_in[k]
        off = node_off[k]
        lo = nodes[0, off : off + n]
        hi = nodes[1, off : off + n]
        lam = rows[cur]
        if kind[k] == AFFINE:
            dst = rows[1 - cur]
            magnitudes = rows[2]
            base = w_off[k]
            for j in range(n + 1):
                product = 0.0
                magnitude = 0.0
                for i in range(n_out[k]):
                    w = weights[base + i * n + j] if j < n else vectors[v_off[k] + i]
                    product += lam[i, r] * w
                    magnitude += abs(lam[i, r]) * abs(w)
                dst[j, r] = product
                magnitudes[j, r] = magnitude
            mag = nodes[2, off : off + n + 1]
            spread = _affine_spread(mag, t_term[k])
            beta = _affine_back_row(dst, magnitudes, r, n, mag, k_factor[k], spread, beta, dst)
            cur = 1 - cur
        elif kind[k] == ELEMENTWISE:
            constant = vectors[v_off[k] : v_off[k] + n]
            beta = _elementwise_back_row(lam, r, n, code[k], constant, lo, hi, beta, lam)
        else:
            sl = lines[0, off : off + n]
            bl = lines[1, off : off + n]
            su = lines[2, off : off + n]
            bu = lines[3, off : off + n]
            beta = _activation_back_row(lam, r, n, sl, bl, su, bu, lo, hi, beta, lam)
    first = node_off[scaling]
    n = node_off[scaling + 1] - 1 - first  # the inputs' width
    return _linear_minimum(rows[cur, :n, r], beta, nodes[0, first : first + n], nodes[1, first : first + n])


@cuda.jit(device=True)
def _finish_unit(nodes, index, lo, hi):
    """Store a unit's bounds and magnitude max|y|."""
    nodes[0, index] = lo
    nodes[1, index] = hi
    nodes[2, index] = max(abs(lo), abs(hi))


@functools.cache
def bounds_kernel():
    """The kernel: ``out[box, r]`` = a rigorous lower bound of ``c[r] . N(x) + d[r]`` over the box
    ``los[box] <= x <= his[box]``, for boxes < n_boxes (one block each)."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key

    @cuda.jit(cache=True)
    def network_lower_bounds(
        n_boxes,
        scaling,
        kind,
        n_in,
        n_out,
        w_off,
        v_off,
        k_factor,
        t_term,
        code,
        alpha,
        node_off,
        weights,
        vectors,
        c,
        d,
        los,
        his,
        nodes,
        lines,
        rows,
        row_bounds,
        out,
    ):
        box = cuda.blockIdx.x
        if stamp < 0 or box >= n_boxes:
            return
        t = cuda.threadIdx.x
        nt = cuda.blockDim.x
        n_ops = len(kind)
        box_nodes = nodes[box]
        box_lines = lines[box]
        box_rows = rows[box]
        n_inputs = los.shape[1]
        for j in range(t, n_inputs, nt):
            _finish_unit(box_nodes, j, los[box, j], his[box, j])
        if t == 0:
            box_nodes[2, n_inputs] = 1.0  # the bias column's
        cuda.syncthreads()
        for k in range(n_ops):
            off = node_off[k]
            n = n_in[k]
            lo = box_nodes[0, off : off + n]
            hi = box_nodes[1, off : off + n]
            after = node_off[k + 1]
            for i in range(t, n_out[k], nt):
                if kind[k] == AFFINE:
                    row = weights[w_off[k] + i * n : w_off[k] + (i + 1) * n]
                    z_lo, z_hi = _affine_row_interval(row, vectors[v_off[k] + i], lo, hi)
                elif kind[k] == ELEMENTWISE:
                    z_lo, z_hi = _elementwise_one(code[k], vectors[v_off[k] + i], lo[i], hi[i])
                else:
                    sl = box_lines[0, off : off + n]
                    bl = box_lines[1, off : off + n]
                    su = box_lines[2, off : off + n]
                    bu = box_lines[3, off : off + n]
                    _relax_unit(code[k], alpha[k], lo[i], hi[i], sl, bl, su, bu, i)
                    z_lo, z_hi = _act_bounds(code[k], alpha[k], lo[i], hi[i])
                _finish_unit(box_nodes, after + i, z_lo, z_hi)
            if t == 0:
                box_nodes[2, after + n_out[k]] = 1.0
            cuda.syncthreads()
            if k + 1 < n_ops and kind[k + 1] == ACTIVATION and k > scaling:
                width = n_out[k]
                for r in range(t, 2 * width, nt):  # the rows +e_j, then -e_j
                    j = r % width
                    sign = 1.0 if r < width else -1.0
                    if kind[k] == AFFINE:  # the first step exact: the rows +-W_j, constants +-b_j
                        for i in range(n):
                            box_rows[0, i, r] = sign * weights[w_off[k] + j * n + i]
                        beta = sign * vectors[v_off[k] + j]
                        start = k - 1
                    else:
                        for i in range(width):
                            box_rows[0, i, r] = sign if i == j else 0.0
                        beta = 0.0
                        start = k
                    row_bounds[box, r] = _backward_row(
                        r,
                        start,
                        scaling,
                        beta,
                        kind,
                        n_in,
                        n_out,
                        w_off,
                        v_off,
                        k_factor,
                        t_term,
                        code,
                        node_off,
                        weights,
                        vectors,
                        box_nodes,
                        box_lines,
                        box_rows,
                    )
                cuda.syncthreads()
                for j in range(t, width, nt):
                    z_lo = max(box_nodes[0, after + j], row_bounds[box, j])
                    z_hi = min(box_nodes[1, after + j], -row_bounds[box, width + j])
                    _finish_unit(box_nodes, after + j, z_lo, z_hi)
                cuda.syncthreads()
        last = node_off[n_ops]
        n_last = c.shape[1]
        for r in range(t, c.shape[0], nt):
            for i in range(n_last):
                box_rows[0, i, r] = c[r, i]
            crown = _backward_row(
                r,
                n_ops - 1,
                scaling,
                d[r],
                kind,
                n_in,
                n_out,
                w_off,
                v_off,
                k_factor,
                t_term,
                code,
                node_off,
                weights,
                vectors,
                box_nodes,
                box_lines,
                box_rows,
            )
            direct = _linear_minimum(c[r], d[r], box_nodes[0, last : last + n_last], box_nodes[1, last : last + n_last])
            out[box, r] = max(crown, direct)

    return network_lower_bounds


@cuda.jit(device=True)
def _activate(code, alpha, z):
    """An activation's value at ``z`` in floating point (:func:`pbbflow.spatial.network._activate`)."""
    if code == cpu._LEAKY:
        return z if z > 0.0 else alpha * z
    if code == cpu._TANH:
        return math.tanh(z)
    if code == cpu._SIGMOID:
        return 0.5 * (1.0 + math.tanh(0.5 * z))
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))  # softplus


@cuda.jit(device=True)
def _apply_elementwise(code, value, constant):
    """An elementwise constant step at ``value`` in floating point (:data:`pbbflow.spatial.network.ELEMENTWISE`)."""
    if code == cpu._ADD:
        return value + constant
    if code == cpu._SUB:
        return value - constant
    if code == cpu._RSUB:
        return constant - value
    if code == cpu._MUL:
        return value * constant
    return value / constant


@functools.cache
def samples_kernel():
    """The sampling kernel: ``margins[p]`` = ``max_r (c[r] . N(x_p) + d[r])`` in floating point at
    the point ``x_p`` (``points[p]``) of the box ``lo <= x <= hi``, for p < n_points (one thread
    each): ``x_p,j = lo_j + (hi_j - lo_j) frac(0.5 + (first + p) step_j)``, the R_d low-discrepancy
    sequence (``step``: :func:`sequence_steps`), kept in the box."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key

    @cuda.jit(cache=True)
    def network_margins(
        n_points,
        first,
        kind,
        n_in,
        n_out,
        w_off,
        v_off,
        code,
        alpha,
        weights,
        vectors,
        step,
        c,
        d,
        lo,
        hi,
        values,
        points,
        margins,
    ):
        p = cuda.grid(1)
        if stamp < 0 or p >= n_points:
            return
        for j in range(lo.shape[0]):
            t = 0.5 + (first + p) * step[j]
            x = min(lo[j] + (hi[j] - lo[j]) * (t - math.floor(t)), hi[j])
            points[p, j] = x
            values[0, j, p] = x
        cur = 0
        for k in range(len(kind)):
            n = n_in[k]
            if kind[k] == AFFINE:
                for i in range(n_out[k]):
                    total = vectors[v_off[k] + i]
                    for j in range(n):
                        total += weights[w_off[k] + i * n + j] * values[cur, j, p]
                    values[1 - cur, i, p] = total
                cur = 1 - cur
            elif kind[k] == ELEMENTWISE:
                for i in range(n):
                    values[cur, i, p] = _apply_elementwise(code[k], values[cur, i, p], vectors[v_off[k] + i])
            else:
                for i in range(n):
                    values[cur, i, p] = _activate(code[k], alpha[k], values[cur, i, p])
        margin = -math.inf
        for r in range(c.shape[0]):
            total = d[r]
            for i in range(c.shape[1]):
                total += c[r, i] * values[cur, i, p]
            margin = max(margin, total)
        margins[p] = margin

    return network_margins


def sequence_steps(n: int) -> np.ndarray:
    """The R_d sequence's steps in ``n`` dimensions: ``phi ** -(j + 1)`` for j < n, phi the root
    above 1 of ``x ** (n + 1) = x + 1`` (the golden ratio at n = 1)."""
    phi = 2.0
    for _ in range(64):  # a fixed point iteration, converged to the last bit well before
        phi = (1.0 + phi) ** (1.0 / (n + 1))
    return phi ** -np.arange(1.0, n + 1.0)


class DeviceNetworkBounds:
    """A network's operations on the device (flattened once) for the lower bounds of many boxes.

    The operations are the CPU's (:func:`pbbflow.spatial.network_bounds._operations`: linear
    activations dropped, the matmul error constants of each affine step); per operation its
    ``kind`` (:data:`AFFINE`, :data:`ELEMENTWISE`, :data:`ACTIVATION`), sizes, offsets into one
    flat row-major ``weights`` array and one ``vectors`` array (biases and elementwise constants),
    K and T, and the activation's or elementwise constant's code and alpha.
    """

    def __init__(self, network: Network, scratch_bytes: int = SCRATCH_BYTES):
        if SIMULATED and libdevice.dmul_rd(1.0, 3.0) is None:  # its stubs would fill every bound with NaN
            raise RuntimeError(
                "the CUDA simulator's libdevice returns None: install exact stand-ins first (tests/libdevice_shim.py)"
            )
        self.network = network
        self.scratch_bytes = scratch_bytes
        self._sample_scratch: tuple | None = None  # the sampling kernel's device arrays, once allocated
        self._bounds_arrays: tuple | None = None  # the bounding kernel's (:meth:`_bounds_scratch`)
        ops = cpu._operations(network)
        kind, n_in, n_out, w_off, v_off, k_factor, t_term, code, alpha = ([] for _ in range(9))
        weights: list[np.ndarray] = []
        vectors: list[np.ndarray] = []
        size = network.n_inputs
        w_size = v_size = 0
        for op in ops:
            n_in.append(size)
            w_off.append(w_size)
            v_off.append(v_size)
            if isinstance(op, cpu._Affine):
                kind.append(AFFINE)
                weights.append(op.weights.ravel())
                vectors.append(op.bias)
                w_size += op.weights.size
                v_size += len(op.bias)
                size = op.weights.shape[0]
                k_factor.append(op.k_factor)
                t_term.append(op.t_term)
                code.append(0)
            else:
                k_factor.append(0.0)
                t_term.append(0.0)
                code.append(op.code)
                if isinstance(op, cpu._Elementwise):
                    kind.append(ELEMENTWISE)
                    vectors.append(op.constant)
                    v_size += len(op.constant)
                else:
                    kind.append(ACTIVATION)
            alpha.append(op.alpha if isinstance(op, cpu._Activation) else 0.0)
            n_out.append(size)
        widths = [network.n_inputs, *n_out]
        node_off = np.concatenate([[0], np.cumsum(np.array(widths) + 1)])
        self.slots = int(node_off[-1])  # S: every node's width plus one
        self.widest = max(widths)  # W
        # R before the final rows: 2 x the width of each activation input that gets CROWN bounds
        self.scaling_steps = cpu._scaling_steps(ops)
        crown = [2 * n_out[k] for k in range(self.scaling_steps + 1, len(ops) - 1) if kind[k + 1] == ACTIVATION]
        self.crown_rows = max(crown, default=0)

        def ints(values) -> np.ndarray:
            return np.array(values, dtype=np.int64)

        def floats(values) -> np.ndarray:
            return np.array(values, dtype=np.float64)

        def flat(arrays: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(1)

        self.arrays = tuple(
            cuda.to_device(a)
            for a in (
                ints(kind),
                ints(n_in),
                ints(n_out),
                ints(w_off),
                ints(v_off),
                floats(k_factor),
                floats(t_term),
                ints(code),
                floats(alpha),
                node_off.astype(np.int64),
                flat(weights),
                flat(vectors),
            )
        )

    def bytes_per_box(self, n_rows: int) -> int:
        """Device bytes a box takes in a launch with ``n_rows`` rows c: its scratch, box and bounds."""
        rows = max(self.crown_rows, n_rows)
        return 8 * (7 * self.slots + 3 * (self.widest + 1) * rows + rows + 2 * self.network.n_inputs + n_rows)

    def chunk(self, n_rows: int) -> int:
        """Boxes per launch: as many as :attr:`scratch_bytes` holds (at least one)."""
        return max(1, self.scratch_bytes // self.bytes_per_box(n_rows))

    def threads(self, n_rows: int) -> int:
        """Threads of a box's block: one per row of the widest backward pass, whole warps, at most
        :data:`MAX_THREADS` (:data:`SIMULATED_THREADS` under the simulator)."""
        if SIMULATED:
            return SIMULATED_THREADS
        rows = max(self.crown_rows, n_rows, self.widest)
        return min(MAX_THREADS, -(-rows // 32) * 32)

    def lower_bounds(self, los, his, c, d) -> np.ndarray:
        """Rigorous lower bounds (B, rows) of each row ``c[k] . N(x) + d[k]`` over each box
        ``los[b] <= x <= his[b]`` (los, his (B, inputs)): the CPU's
        :meth:`~pbbflow.spatial.network_bounds.NetworkBounds.lower_bounds` of every box."""
        n_inputs, n_outputs = self.network.n_inputs, self.network.n_outputs
        los, his = _launch_layout(los), _launch_layout(his)
        if los.ndim != 2 or los.shape[1] != n_inputs or his.shape != los.shape:
            raise ValueError(f"the boxes must be two (boxes, {n_inputs}) arrays")
        if not (np.all(np.isfinite(los)) and np.all(np.isfinite(his)) and np.all(los <= his)):
            raise ValueError("the boxes must be finite with lo <= hi")
        c, d = _launch_layout(c), _launch_layout(d)
        if c.ndim != 2 or c.shape[1] != n_outputs or d.shape != (len(c),):
            raise ValueError(f"c must be rows of {n_outputs} values and d one value a row")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(d))):
            raise ValueError("c and d must be finite")
        n_boxes, n_rows = len(los), len(c)
        out = np.empty((n_boxes, n_rows))
        if n_boxes == 0 or n_rows == 0:
            return out
        chunk = min(n_boxes, self.chunk(n_rows))
        nodes, lines, scratch, row_bounds, device_out = self._bounds_scratch(chunk, n_rows)
        device_c, device_d = cuda.to_device(c), cuda.to_device(d)
        kernel = bounds_kernel()
        threads = self.threads(n_rows)
        for first in range(0, n_boxes, chunk):
            count = min(chunk, n_boxes - first)
            kernel[count, threads](
                count,
                self.scaling_steps,
                *self.arrays,
                device_c,
                device_d,
                cuda.to_device(los[first : first + count]),
                cuda.to_device(his[first : first + count]),
                nodes,
                lines,
                scratch,
                row_bounds,
                device_out,
            )
            out[first : first + count] = device_out[:count].copy_to_host()
        return out

    def _bounds_scratch(self, chunk: int, n_rows: int) -> tuple:
        """The bounding kernel's device arrays for ``chunk`` boxes of ``n_rows`` rows: those of the
        last call where they hold as many boxes of as many rows (a search bounds its boxes in many
        launches; allocating them each time cost more than some launches), else new ones."""
        kept = self._bounds_arrays
        if kept is None or kept[0] < chunk or kept[1] != n_rows:
            rows = max(self.crown_rows, n_rows)
            arrays = (
                cuda.device_array((chunk, 3, self.slots), np.float64),
                cuda.device_array((chunk, 4, self.slots), np.float64),
                cuda.device_array((chunk, 3, self.widest + 1, rows), np.float64),
                cuda.device_array((chunk, rows), np.float64),
                cuda.device_array((chunk, n_rows), np.float64),
            )
            kept = self._bounds_arrays = (chunk, n_rows, arrays)
        return kept[2]

    def sample_margins(self, lo, hi, c, d, count: int, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The margin ``max_k (c[k] . N(x) + d[k])`` in floating point at ``count`` points of the box
        ``lo <= x <= hi`` (:func:`samples_kernel`'s sequence from index ``first``): the points
        (count, inputs) and their margins (count,). Candidates only: rounding is not accounted for."""
        lo, hi = _launch_layout(lo), _launch_layout(hi)
        c, d = _launch_layout(c), _launch_layout(d)
        n_inputs = self.network.n_inputs
        finite = np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
        if lo.shape != (n_inputs,) or hi.shape != lo.shape or not (finite and np.all(lo <= hi)):
            raise ValueError(f"the box must be two finite vectors of {n_inputs} values with lo <= hi")
        if c.ndim != 2 or c.shape[1] != self.network.n_outputs or d.shape != (len(c),) or len(c) == 0:
            raise ValueError(f"c must be rows of {self.network.n_outputs} values and d one value a row")
        kind, n_in, n_out, w_off, v_off, _, _, code, alpha, _, weights, vectors = self.arrays
        chunk = max(1, min(count, self.scratch_bytes // (8 * (2 * self.widest + n_inputs + 1))))
        if self._sample_scratch is None or len(self._sample_scratch[2]) < chunk:  # kept for the next call
            self._sample_scratch = (
                cuda.device_array((2, self.widest, chunk), np.float64),
                cuda.device_array((chunk, n_inputs), np.float64),
                cuda.device_array(chunk, np.float64),
            )
        values, device_points, device_margins = self._sample_scratch
        arguments = (kind, n_in, n_out, w_off, v_off, code, alpha, weights, vectors)
        step, device_c, device_d = (cuda.to_device(a) for a in (sequence_steps(n_inputs), c, d))
        device_lo, device_hi = cuda.to_device(lo), cuda.to_device(hi)
        threads = SIMULATED_THREADS if SIMULATED else MAX_THREADS
        points, margins = np.empty((count, n_inputs)), np.empty(count)
        for start in range(0, count, chunk):
            size = min(chunk, count - start)
            samples_kernel()[-(-size // threads), threads](
                size,
                first + start,
                *arguments,
                step,
                device_c,
                device_d,
                device_lo,
                device_hi,
                values,
                device_points,
                device_margins,
            )
            points[start : start + size] = device_points[:size].copy_to_host()
            margins[start : start + size] = device_margins[:size].copy_to_host()
        return points, margins


def _launch_layout(array) -> np.ndarray:
    """A float64 copy of ``array`` with C strides along every axis. numpy calls ``x[None, :]``
    (stride 0) C-contiguous, numba-cuda's device arrays do not, and a launch with another layout
    compiles another kernel. The split search's first box is such a view: most likely why one
    verify suite's first instance took 14.3 s for 3 boxes on an H100 (not yet rerun on a GPU)."""
    return np.array(array, dtype=np.float64, order="C", copy=True)


def load_kernel(network: Network) -> float:
    """Load the kernels that bound ``network``'s boxes and sample its margins (compiled on a
    machine's first run, then from numba's cache, in every process): one box and one row, then two
    of each (on an H100 a first launch of two boxes compiled for 10 s more after a warm-up of one;
    an array layout, we think), and a few samples; its seconds."""
    began = time.perf_counter()
    device = DeviceNetworkBounds(network)
    for size in (1, 2):
        zeros = np.zeros((size, network.n_inputs))
        device.lower_bounds(zeros, zeros, np.ones((size, network.n_outputs)), np.zeros(size))
    zeros = np.zeros(network.n_inputs)
    device.sample_margins(zeros, zeros, np.ones((1, network.n_outputs)), np.zeros(1), 2)
    return time.perf_counter() - began
