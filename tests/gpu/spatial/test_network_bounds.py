"""CROWN bounds of networks over many boxes on the GPU (``gpu/spatial/network_bounds.py``) against
exact values (rational arithmetic on the stored doubles, arb for smooth activations) and the
CPU's :class:`pbbflow.spatial.network_bounds.NetworkBounds`.

Under numba's CUDA simulator (CI) libdevice's directed rounding is ``libdevice_shim``'s exact
stand-in and a block has 4 threads, fewer than the rows, so the kernel's block-stride loops turn.
The GPU sums its dot products in its own order, so its bounds equal the CPU's to rounding only.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import flint
import numpy as np
import pytest

from pbbflow.gpu.spatial.network_bounds import DeviceNetworkBounds
from pbbflow.spatial import network_bounds as cpu
from pbbflow.spatial.network import Activation, Elementwise, Layer, Network

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("simulated_libdevice")]

RELATIVE = 1e-12  # GPU vs CPU: the dot products' summation order differs
ABSOLUTE = 1e-300
# GPU vs CPU on random_network's, either way: a GPU's tanh, exp and log1p (libdevice) are widened by other
# ulps than the CPU's, a relaxation built on other ulps is another valid one, and weights of up to 1e5 that
# cancel carry that to about 1e-10 of a bound (on an H100, seed 4: 1.2e-10 above the CPU, 2026-12-07);
# arb's values below each bound are the soundness check there
DEVICE_MATH = 1e-9
ELEMENTWISE = {
    "add": lambda v, c: v + c,
    "sub": lambda v, c: v - c,
    "rsub": lambda v, c: c - v,
    "mul": lambda v, c: v * c,
    "div": lambda v, c: v / c,
}


def dense_network(seed: int, widths, activation: str = "relu", alpha: float = 0.1) -> Network:
    """Layers of ``activation`` between the widths, the last one linear."""
    rng = np.random.default_rng(seed)
    layers = [
        Layer(rng.normal(0.0, np.sqrt(2.0 / a), (b, a)), rng.normal(0.0, 0.2, b), activation, alpha)
        for a, b in zip(widths[:-2], widths[1:-1])
    ]
    layers.append(Layer(rng.normal(0.0, 1.0, (widths[-1], widths[-2])), rng.normal(0.0, 0.1, widths[-1])))
    return Network(widths[0], tuple(layers))


def scaled_network() -> Network:
    """Inputs scaled as exporters write it (minus a mean, over a spread), an activation step of its
    own after a linear layer, and the outputs scaled back."""
    rng = np.random.default_rng(7)
    steps = (
        Elementwise("sub", np.array([0.5, -1.25, 3.0])),
        Elementwise("div", np.array([3.0, 0.7, 1.5])),
        Layer(rng.normal(0.0, 0.8, (5, 3)), rng.normal(0.0, 0.2, 5), "relu"),
        Layer(rng.normal(0.0, 0.6, (5, 5)), rng.normal(0.0, 0.2, 5)),
        Activation("leaky_relu", 0.2),
        Layer(rng.normal(0.0, 0.6, (2, 5)), None),
        Elementwise("mul", np.array([10.0, -0.3])),
        Elementwise("rsub", np.array([1.0, 2.0])),
    )
    return Network(3, steps)


NETWORKS = {
    "relu-2-4-4-2": dense_network(1, (2, 4, 4, 2)),
    "relu-3-6-6-6-3": dense_network(2, (3, 6, 6, 6, 3)),
    "leaky-3-6-6-6-3": dense_network(3, (3, 6, 6, 6, 3), "leaky_relu", 0.1),
    "concave-leaky-2-4-4-2": dense_network(4, (2, 4, 4, 2), "leaky_relu", 2.0),
    "scaled-3-5-5-2": scaled_network(),
}


def exact_outputs(network: Network, x) -> list[Fraction]:
    """The network at the doubles ``x`` in rational arithmetic on its stored doubles (piecewise
    linear activations)."""
    values = [Fraction(float(v)) for v in x]

    def activate(name: str, alpha: float, v: Fraction) -> Fraction:
        if name == "linear" or v >= 0:
            return v
        return Fraction(0) if name == "relu" else Fraction(alpha) * v

    for step in network.steps:
        if isinstance(step, Layer):
            bias = [0.0] * step.sizes[1] if step.bias is None else step.bias.tolist()
            values = [
                activate(step.activation, step.alpha, sum((Fraction(w) * v for w, v in zip(row, values)), Fraction(b)))
                for row, b in zip(step.weights.tolist(), bias)
            ]
        elif isinstance(step, Elementwise):
            values = [ELEMENTWISE[step.op](v, Fraction(c)) for v, c in zip(values, step.constant.tolist())]
        else:
            values = [activate(step.activation, step.alpha, v) for v in values]
    return values


def arb_outputs(network: Network, x) -> list[flint.arb]:
    """The network at the doubles ``x`` in arb (smooth activations too)."""

    def activate(name: str, alpha: float, a: flint.arb) -> flint.arb:
        if name == "tanh":
            return a.tanh()
        if name == "sigmoid":
            return 1 / (1 + (-a).exp())
        if name == "softplus":
            return (1 + a.exp()).log()
        if name == "linear" or a >= 0:
            return a
        if a <= 0:
            return a * (0.0 if name == "relu" else alpha)
        return a.union(a * (0.0 if name == "relu" else alpha))

    values = [flint.arb(float(v)) for v in x]
    for step in network.steps:
        if isinstance(step, Layer):
            bias = [0.0] * step.sizes[1] if step.bias is None else step.bias.tolist()
            values = [
                activate(step.activation, step.alpha, sum((w * v for w, v in zip(row, values)), flint.arb(b)))
                for row, b in zip(step.weights.tolist(), bias)
            ]
        elif isinstance(step, Elementwise):
            values = [ELEMENTWISE[step.op](v, flint.arb(c)) for v, c in zip(values, step.constant.tolist())]
        else:
            values = [activate(step.activation, step.alpha, v) for v in values]
    return values


def grid(lo: np.ndarray, hi: np.ndarray, per_dim: int) -> list[np.ndarray]:
    """``per_dim`` points per axis (the ends included; one where the box is flat)."""
    axes = [np.unique(np.linspace(a, b, per_dim)) if a < b else np.array([a]) for a, b in zip(lo, hi)]
    return [np.array(p) for p in itertools.product(*axes)]


def exact_minima(network: Network, lo, hi, c, d, per_dim: int) -> list[Fraction]:
    """Per row, the exact minimum of ``c[k] . N(x) + d[k]`` over a grid of the box."""
    outputs = [exact_outputs(network, x) for x in grid(lo, hi, per_dim)]
    return [
        min(sum((Fraction(cj) * y for cj, y in zip(row, out)), Fraction(dk)) for out in outputs)
        for row, dk in zip(c.tolist(), d.tolist())
    ]


def interval_bounds(network: Network, lo, hi, c, d) -> np.ndarray:
    """The plain interval bound of each row: interval arithmetic through every step, then the
    minimum of ``c . y + d`` over the outputs' intervals."""
    for op in cpu._operations(network):
        if isinstance(op, cpu._Affine):
            lo, hi = cpu._affine_interval(op.weights, op.bias, lo, hi)
        elif isinstance(op, cpu._Elementwise):
            lo, hi = cpu._elementwise_interval(op.code, op.constant, lo, hi)
        else:
            lo, hi = cpu._activation_interval(op.code, op.alpha, lo, hi)
    return np.array([cpu._linear_minimum(row, dk, lo, hi) for row, dk in zip(c, d)])


def box_of_kind(network: Network, rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """A box of width 0 ("point"), one where no activation input straddles 0 ("stable"; halved
    until it is), or one where some does ("unstable")."""
    centre = rng.uniform(-1.0, 1.0, network.n_inputs)
    width = {"point": 0.0, "stable": 0.05, "unstable": 2.0}[kind] * rng.uniform(0.5, 1.0, network.n_inputs)
    bounds = cpu.NetworkBounds(network)
    while True:
        lo, hi = centre - width / 2, centre + width / 2
        node_bounds, relaxations = bounds.propagate(lo, hi)
        straddling = sum(int(np.sum((node_bounds[k][0] < 0) & (node_bounds[k][1] > 0))) for k in relaxations)
        if kind != "stable" or straddling == 0:
            break
        width = width / 2
    assert (straddling > 0) == (kind == "unstable"), f"no {kind} box"
    return lo, hi


def batch(network: Network, seed: int, kinds) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boxes of the kinds (B, inputs) and two random rows c, d."""
    rng = np.random.default_rng(seed)
    boxes = [box_of_kind(network, rng, kind) for kind in kinds]
    c = rng.normal(0.0, 1.0, (2, network.n_outputs))
    return np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes]), c, rng.normal(0.0, 1.0, 2)


def assert_matches_cpu(network: Network, los, his, c, d, gpu: np.ndarray, tolerance: float = RELATIVE) -> None:
    """Each GPU bound is the CPU's to ``tolerance`` (relative), and at least the plain interval bound."""
    bounds = cpu.NetworkBounds(network)
    for b in range(len(los)):
        expected = bounds.lower_bounds(los[b], his[b], c, d)
        above = gpu[b] - expected  # the differences, signed, in the message
        assert np.all(np.abs(above) <= tolerance * np.abs(expected) + ABSOLUTE), (b, gpu[b].tolist(), above.tolist())
        assert np.all(gpu[b] >= interval_bounds(network, los[b], his[b], c, d)), b


@pytest.mark.parametrize("kind", ["point", "stable", "unstable"])
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_bounds_are_the_cpus_and_below_the_exact_minimum(name, kind):
    """Boxes of width 0, with every activation stable and with unstable ones: each GPU bound is below
    the exact minimum over a grid of the box, equals the CPU's and beats plain intervals."""
    network = NETWORKS[name]
    los, his, c, d = batch(network, 11, [kind] * 2)
    gpu = DeviceNetworkBounds(network).lower_bounds(los, his, c, d)
    assert gpu.shape == (2, 2) and np.all(np.isfinite(gpu))
    assert_matches_cpu(network, los, his, c, d, gpu)
    per_dim = 7 if network.n_inputs == 2 else 4
    for b in range(len(los)):
        for bound, minimum in zip(gpu[b], exact_minima(network, los[b], his[b], c, d, per_dim)):
            assert Fraction(float(bound)) <= minimum, (b, bound, float(minimum))


@pytest.mark.usefixtures("arb_precision")
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_point_boxes_are_tight_against_arb(name):
    """At a point the bound is below arb's value of the network there, within 1e-12 relative."""
    network = NETWORKS[name]
    los, his, c, d = batch(network, 12, ["point"] * 3)
    gpu = DeviceNetworkBounds(network).lower_bounds(los, his, c, d)
    for b in range(len(los)):
        outputs = arb_outputs(network, los[b])
        for k, bound in enumerate(gpu[b]):
            value = sum((flint.arb(float(cj)) * y for cj, y in zip(c[k], outputs)), flint.arb(float(d[k])))
            assert value >= bound, (b, k, bound, value)
            assert float(value.mid()) - bound <= 1e-12 * (1.0 + abs(bound)), (b, k, bound, value)


@pytest.mark.usefixtures("arb_precision")
@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "softplus"])
def test_smooth_activations_are_bounded_as_on_the_cpu(activation):
    """tanh, sigmoid and softplus (device twins of the CPU's relaxations): the CPU's bound, below
    arb's values at the corners and centre of each box."""
    network = dense_network(5, (2, 4, 4, 2), activation)
    rng = np.random.default_rng(13)
    centre = rng.uniform(-1.0, 1.0, (3, 2))
    width = np.array([[0.0], [0.1], [2.0]]) * rng.uniform(0.5, 1.0, (3, 2))
    los, his = centre - width / 2, centre + width / 2
    c, d = rng.normal(0.0, 1.0, (2, 2)), rng.normal(0.0, 1.0, 2)
    gpu = DeviceNetworkBounds(network).lower_bounds(los, his, c, d)
    assert_matches_cpu(network, los, his, c, d, gpu)
    for b in range(len(los)):
        for x in grid(los[b], his[b], 2) + [0.5 * los[b] + 0.5 * his[b]]:
            outputs = arb_outputs(network, x)
            for k, bound in enumerate(gpu[b]):
                value = sum((flint.arb(float(cj)) * y for cj, y in zip(c[k], outputs)), flint.arb(float(d[k])))
                assert value >= bound, (b, k, bound, value)


def random_network(rng: np.random.Generator) -> Network:
    """A small random network of every kind of step: dense layers with any activation, weights of
    any scale (huge ones cancelling), elementwise constants and activation steps."""
    size = n_inputs = int(rng.integers(1, 4))
    steps = []
    names = ("relu", "leaky_relu", "linear", "tanh", "sigmoid", "softplus")
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.3:
            op = str(rng.choice(list(ELEMENTWISE)))
            steps.append(Elementwise(op, rng.uniform(0.25, 3.0, size) * rng.choice([-1.0, 1.0], size)))
        out = int(rng.integers(1, 7))
        weights = rng.normal(0.0, 1.0, (out, size)) * 10.0 ** rng.integers(-3, 6, (out, size))
        bias = None if rng.random() < 0.2 else rng.normal(0.0, 1.0, out)
        steps.append(Layer(weights, bias, str(rng.choice(names)), float(rng.choice([0.01, -0.5, 2.0]))))
        size = out
        if rng.random() < 0.2:
            steps.append(Activation(str(rng.choice(names)), 0.1))
    steps.append(Layer(rng.normal(0.0, 1.0, (2, size)), rng.normal(0.0, 1.0, 2)))
    return Network(n_inputs, tuple(steps))


@pytest.mark.usefixtures("arb_precision")
@pytest.mark.parametrize("seed", range(6))
def test_random_networks_are_bounded_as_on_the_cpu(seed):
    rng = np.random.default_rng(100 + seed)
    network = random_network(rng)
    centre = rng.uniform(-2.0, 2.0, (3, network.n_inputs))
    width = rng.uniform(0.0, 2.0, (3, network.n_inputs)) * np.array([[0.0], [0.1], [1.0]])
    los, his = centre - width / 2, centre + width / 2
    c, d = rng.normal(0.0, 1.0, (3, 2)), rng.normal(0.0, 1.0, 3)
    gpu = DeviceNetworkBounds(network).lower_bounds(los, his, c, d)
    assert_matches_cpu(network, los, his, c, d, gpu, DEVICE_MATH)
    for b in range(len(los)):  # and below arb's values at the corners and the centre
        for x in grid(los[b], his[b], 2) + [0.5 * los[b] + 0.5 * his[b]]:
            outputs = arb_outputs(network, x)
            for k, bound in enumerate(gpu[b]):
                value = sum((flint.arb(float(cj)) * y for cj, y in zip(c[k], outputs)), flint.arb(float(d[k])))
                assert value >= bound, (b, k, bound, value)


def odd_networks() -> dict[str, Network]:
    rng = np.random.default_rng(15)
    layer = Layer(rng.normal(0.0, 1.0, (4, 2)), rng.normal(0.0, 0.5, 4))
    last = Layer(rng.normal(0.0, 1.0, (2, 4)), None)
    return {
        "no steps": Network(2, ()),
        "an activation first": Network(2, (Activation("relu"), layer, Activation("leaky_relu", 0.3), last)),
        "two activations in a row": Network(2, (Layer(layer.weights, layer.bias, "tanh"), Activation("relu"), last)),
        "a constant before an activation": Network(
            2, (layer, Elementwise("mul", np.array([2.0, -1.0, 0.5, 3.0])), Activation("relu"), last)
        ),
    }


@pytest.mark.parametrize("name", sorted(odd_networks()))
def test_networks_of_any_shape_are_bounded_as_on_the_cpu(name):
    """No steps at all; an activation on the inputs; an activation step after an activation (its
    CROWN rows start as +-e_j, not +-W_j); an elementwise constant between a layer and an activation."""
    network = odd_networks()[name]
    rng = np.random.default_rng(16)
    centre, width = rng.uniform(-1.0, 1.0, (3, 2)), rng.uniform(0.0, 2.0, (3, 2)) * np.array([[0.0], [1.0], [1.0]])
    los, his = centre - width / 2, centre + width / 2
    c, d = rng.normal(0.0, 1.0, (2, 2)), rng.normal(0.0, 1.0, 2)
    assert_matches_cpu(network, los, his, c, d, DeviceNetworkBounds(network).lower_bounds(los, his, c, d))


def test_chunks_give_the_same_bounds():
    """A scratch budget of two boxes runs a batch of five in three launches, with the bounds of one."""
    network = NETWORKS["relu-3-6-6-6-3"]
    los, his, c, d = batch(network, 14, ["unstable", "point", "stable", "unstable", "unstable"])
    whole = DeviceNetworkBounds(network)
    assert whole.chunk(len(c)) >= 5
    small = DeviceNetworkBounds(network, scratch_bytes=2 * whole.bytes_per_box(len(c)))
    assert small.chunk(len(c)) == 2
    assert np.array_equal(small.lower_bounds(los, his, c, d), whole.lower_bounds(los, his, c, d))
    assert whole.lower_bounds(los[:0], his[:0], c, d).shape == (0, 2)


def test_long_contractions_get_their_error_term():
    """``lam @ [W b]`` sums over a layer's 64 outputs: summed in order, 1 + 63 terms just above half
    an ulp of 1 each round up (the float sum 63 * 2^-53 above the exact one), which the error
    constants of a contraction of length 64 cover (not those of [W b]'s 2 columns)."""
    n = 64
    c = np.full(n, 2.0**-53 * (1.0 + 2.0**-50))
    c[0] = 1.0
    network = Network(1, (Layer(np.ones((n, 1)), None, "relu"),))
    exact = sum(Fraction(v) for v in c.tolist())
    one = np.ones((1, 1))
    gpu = DeviceNetworkBounds(network).lower_bounds(one, one, c[None, :], np.zeros(1))[0, 0]
    assert Fraction(float(gpu)) <= exact
    assert Fraction(cpu.lower_bound(network, one[0], one[0], c)) <= exact


def test_a_box_with_a_zero_stride_launches_the_usual_kernel():
    """A box given as ``lo[None, :]`` (numpy: stride 0, C-contiguous) reaches the device with C
    strides, as numba-cuda counts them (else the launch compiles a kernel of its own), and gets
    the bounds of the same box given as a fresh array."""
    import importlib.util
    from pathlib import Path

    import numba_cuda

    from pbbflow.gpu.spatial.network_bounds import _launch_layout

    # numba-cuda's own layout rule (its module, not the simulator's stand-in: numpy alone)
    path = Path(numba_cuda.__file__).parent / "numba" / "cuda" / "cudadrv" / "dummyarray.py"
    spec = importlib.util.spec_from_file_location("numba_cuda_dummyarray", path)
    dummyarray = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dummyarray)

    lo, hi = np.array([-0.5, 0.25]), np.array([0.5, 0.75])
    view = lo[None, :]
    assert view.strides[0] == 0 and view.flags.c_contiguous
    assert not dummyarray.Array.from_desc(0, view.shape, view.strides, 8).is_c_contig
    copied = _launch_layout(view)
    assert dummyarray.Array.from_desc(0, copied.shape, copied.strides, 8).is_c_contig
    np.testing.assert_array_equal(copied, view)
    network = dense_network(3, [2, 4, 1])
    device = DeviceNetworkBounds(network)
    c, d = np.ones((1, 1)), np.zeros(1)
    np.testing.assert_array_equal(
        device.lower_bounds(lo[None, :], hi[None, :], c, d),
        device.lower_bounds(lo.reshape(1, 2), hi.reshape(1, 2), c, d),
    )


def test_bad_requests_are_refused():
    network = NETWORKS["relu-2-4-4-2"]
    bounds = DeviceNetworkBounds(network)
    lo, hi, c, d = np.zeros((1, 2)), np.ones((1, 2)), np.ones((1, 2)), np.zeros(1)
    with pytest.raises(ValueError, match="two"):
        bounds.lower_bounds(lo[:, :1], hi, c, d)
    with pytest.raises(ValueError, match="lo <= hi"):
        bounds.lower_bounds(hi, lo, c, d)
    with pytest.raises(ValueError, match="finite"):
        bounds.lower_bounds(lo, np.full((1, 2), np.inf), c, d)
    with pytest.raises(ValueError, match="rows of 2"):
        bounds.lower_bounds(lo, hi, np.ones((1, 3)), d)
    with pytest.raises(ValueError, match="finite"):
        bounds.lower_bounds(lo, hi, np.full((1, 2), np.nan), d)


def test_kernel_compiles_to_directed_rounding_instructions(sm90_ptx):
    """Where NVVM is installed: numba-cuda types the kernel, whose sm_90 PTX rounds outward."""
    ptx = (sm90_ptx / "network_lower_bounds.ptx").read_text()
    for instruction in ("add.rm.f64", "add.rp.f64", "mul.rm.f64", "mul.rp.f64", "div.rm.f64", "div.rp.f64"):
        assert instruction in ptx, instruction


def exact_relu_outputs(network: Network, x) -> list[Fraction]:
    """A ReLU/linear network at ``x`` in rational arithmetic on its stored doubles."""
    values = [Fraction(v) for v in x]
    for layer in network.steps:
        bias = [0.0] * layer.sizes[1] if layer.bias is None else layer.bias.tolist()
        rows = zip(layer.weights.tolist(), bias)
        values = [sum((Fraction(w) * v for w, v in zip(row, values)), Fraction(b)) for row, b in rows]
        if layer.activation == "relu":
            values = [max(v, Fraction(0)) for v in values]
    return values


def test_verify_splits_boxes_on_the_gpu_as_on_the_cpu():
    """``verify(..., gpu=True)`` bounds the split boxes in batches on the device: the same answers
    as the CPU's search, every sat point a counterexample exactly, proofs of many boxes."""
    from pbbflow.spatial.options import MinimizeOptions
    from pbbflow.spatial.verify import verify
    from pbbflow.spatial.vnnlib import parse_vnnlib

    header = "(declare-const X_0 Real) (declare-const X_1 Real) (declare-const Y_0 Real) (declare-const Y_1 Real)"
    box = "(assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 -1)) (assert (<= X_1 1))"
    options = MinimizeOptions(time_limit=60.0)
    answers = []
    for seed, margin in itertools.product(range(3), (0, 2)):
        network = dense_network(40 + seed, [2, 6, 6, 2])
        prop = parse_vnnlib(f"{header} {box} (assert (>= Y_0 (+ Y_1 {margin})))")
        on_cpu = verify(network, prop, options, falsify=False)
        on_gpu = verify(network, prop, options, falsify=False, gpu=True)
        assert on_gpu.answer == on_cpu.answer
        answers.append((on_gpu.answer, on_gpu.nodes))
        if on_gpu.answer == "sat":
            y = exact_relu_outputs(network, on_gpu.x)
            assert y[0] >= y[1] + margin and all(-1 <= v <= 1 for v in on_gpu.x)
    assert {answer for answer, _ in answers} == {"sat", "unsat"}
    assert max(nodes for answer, nodes in answers if answer == "unsat") > 10


def test_a_suite_task_decides_on_its_workers_gpu(tmp_path):
    """``suite.decide(..., gpu=True)`` (a suite's task on a GPU worker): y = 2x + 1 on [-1, 1] never
    reaches 3.5 (unsat after splitting) and reaches 2.5 (sat, checked), as on the CPU."""
    from spatial_helpers import affine_net

    from pbbflow.spatial.suite import decide

    network = affine_net(tmp_path).read_bytes()
    box = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"
    for level, answer in ((3.5, "unsat"), (2.5, "sat")):
        prop = (box + f"(assert (>= Y_0 {level}))").encode()
        on_gpu = decide(network, prop, ("affine.onnx", "p.vnnlib"), 30.0, None, True)
        on_cpu = decide(network, prop, ("affine.onnx", "p.vnnlib"), 30.0, None, False)
        assert on_gpu["answer"] == on_cpu["answer"] == answer
        if answer == "sat":
            assert 2 * Fraction(on_gpu["x"][0]) + 1 >= Fraction(level)


def test_the_gpu_code_loads_before_a_search():
    from pbbflow.spatial.verify import load_gpu_code

    assert load_gpu_code(NETWORKS["relu-2-4-4-2"]) >= 0.0


def sampled_networks() -> dict[str, Network]:
    rng = np.random.default_rng(17)
    mixed = {f"random {seed}": random_network(np.random.default_rng(200 + seed)) for seed in range(4)}
    return {"scaled": scaled_network(), **odd_networks(), **mixed, "relu-3-6-6-6-3": NETWORKS["relu-3-6-6-6-3"]} | {
        "tanh": dense_network(int(rng.integers(100)), [3, 5, 5, 2], "tanh")
    }


@pytest.mark.parametrize("name", sorted(sampled_networks()))
def test_sampled_margins_are_the_hosts_at_the_sampled_points(name):
    """The sampling kernel's points lie in the box and follow the R_d sequence from ``first``; its
    margins are numpy's forward pass at those points (up to the sums' order)."""
    from pbbflow.spatial.network import forms_and_gradient

    network = sampled_networks()[name]
    rng = np.random.default_rng(18)
    n = network.n_inputs
    lo = rng.uniform(-2.0, 0.0, n)
    hi = lo + rng.uniform(0.0, 2.0, n) * (np.arange(n) != 0)  # the first side a point
    c, d = rng.normal(0.0, 1.0, (3, network.n_outputs)), rng.normal(0.0, 1.0, 3)
    device = DeviceNetworkBounds(network)
    points, margins = device.sample_margins(lo, hi, c, d, 40, first=3)
    assert points.shape == (40, n) and np.all(lo <= points) and np.all(points <= hi)
    assert np.all(points[:, 0] == lo[0])
    assert len({tuple(p) for p in points}) == (40 if n > 1 else 1)
    with np.errstate(all="ignore"):
        expected = forms_and_gradient(network, c, d, points)[0]
    scale = np.abs(expected) + np.abs(c).sum() * max(1.0, np.abs(points).max())
    assert np.all(np.abs(margins - expected) <= 1e-9 * scale), (margins, expected)
    later, _ = device.sample_margins(lo, hi, c, d, 10, first=33)
    assert np.array_equal(later, points[30:])
    small = DeviceNetworkBounds(network, scratch_bytes=8 * (2 * device.widest + n + 1) * 7)
    assert np.array_equal(small.sample_margins(lo, hi, c, d, 40, first=3)[1], margins)


def test_the_sequence_fills_the_box_evenly():
    """R_d in 2 dimensions: 1,024 points leave no empty cell of a 16 x 16 grid (random points leave
    about 4 % of them empty), and the steps solve x^(d+1) = x + 1."""
    from pbbflow.gpu.spatial.network_bounds import sequence_steps

    assert sequence_steps(1)[0] == pytest.approx(2.0 / (1.0 + 5.0**0.5), rel=1e-15)
    phi = 1.0 / sequence_steps(2)[0]
    assert phi**3 == pytest.approx(phi + 1.0, rel=1e-15)
    network = Network(2, (Layer(np.eye(2), None),))
    points, _ = DeviceNetworkBounds(network).sample_margins(np.zeros(2), np.ones(2), np.ones((1, 2)), np.zeros(1), 1024)
    cells = {tuple(cell) for cell in np.floor(points * 16).astype(int)}
    assert len(cells) == 256


def test_bad_sample_requests_are_refused():
    device = DeviceNetworkBounds(NETWORKS["relu-2-4-4-2"])
    c, d = np.ones((1, 2)), np.zeros(1)
    boxes = (np.zeros(3), np.ones(3)), (np.ones(2), np.zeros(2)), (np.full(2, -np.inf), np.ones(2))
    for lo, hi in (*boxes, (np.zeros(2), np.full(2, np.inf)), (np.full(2, np.nan), np.ones(2))):
        with pytest.raises(ValueError, match="box"):
            device.sample_margins(lo, hi, c, d, 4)
    with pytest.raises(ValueError, match="rows"):
        device.sample_margins(np.zeros(2), np.ones(2), np.ones((1, 3)), d, 4)


def test_samples_find_a_narrow_counterexample_that_the_descent_misses():
    """A planted counterexample: y = relu(r - |x0 - a| - |x1 - b|) >= r / 2 only in a small diamond of
    [-1, 1]^2, the margin flat (no gradient) outside a diamond twice its size. The descent from 64
    random starts finds nothing; from the best of 2,048 samples it does, and verify answers sat at a
    point that is a counterexample exactly."""
    import functools

    from pbbflow.spatial.falsify import candidates
    from pbbflow.spatial.options import MinimizeOptions
    from pbbflow.spatial.verify import verify
    from pbbflow.spatial.vnnlib import parse_vnnlib

    a, b, r = 0.6171875, -0.3671875, 0.046875
    steps = (
        Layer(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]), np.array([-a, a, -b, b]), "relu"),
        Layer(-np.ones((1, 4)), np.array([r]), "relu"),
        Layer(np.ones((1, 1)), None),
    )
    network = Network(2, steps)
    text = (
        "(declare-const X_0 Real) (declare-const X_1 Real) (declare-const Y_0 Real) "
        "(assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 -1)) (assert (<= X_1 1)) "
        f"(assert (>= Y_0 {r / 2}))"
    )
    prop = parse_vnnlib(text)
    region = prop.regions[0]
    assert len(candidates(network, region)) == 0
    device = DeviceNetworkBounds(network)
    found = candidates(network, region, sample=functools.partial(device.sample_margins, count=2048))
    assert len(found) > 0
    for x in found:
        assert abs(Fraction(x[0]) - Fraction(a)) + abs(Fraction(x[1]) - Fraction(b)) <= Fraction(r) / 2
    verdict = verify(network, prop, MinimizeOptions(time_limit=60.0), gpu=True)
    assert verdict.answer == "sat"
    distance = abs(Fraction(verdict.x[0]) - Fraction(a)) + abs(Fraction(verdict.x[1]) - Fraction(b))
    assert distance <= Fraction(r) / 2 and all(-1 <= v <= 1 for v in verdict.x)
