"""ONNX networks in (``spatial/onnx_network.py``): files built with ``onnx.helper`` against
``onnx.reference`` at random points and arb's exact values, the shared fixtures against their JSON
twins, networks inside larger models and problem files, and ``pbbflow minimize MODEL.onnx``."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from spatial_helpers import Undecidable, arb_outputs, encloses

import pbbflow
import pbbflow.spatial
from pbbflow.cli.main import build_parser, main
from pbbflow.spatial import Model, ProblemError, evaluate_float, load_problem, maximum, read_onnx
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import Mode, bound_boxes, evaluate_point
from pbbflow.spatial.network import Layer
from pbbflow.spatial.onnx_network import onnx_problem
from pbbflow.spatial.options import MinimizeOptions

# ../shared/data/ann beside the repository (or beside a folder of worktrees above it)
DATA = next(
    (p / "shared/data/ann" for p in Path(__file__).resolve().parents if (p / "shared/data/ann").is_dir()),
    Path("shared/data/ann-missing"),
)
TORCH = DATA / "torch-export"
FIXTURES = [
    "ann01-peaks-2-8-8-1-tanh",
    "ann02-branin-2-16-1-tanh",
    "ann04-camel-2-16-1-sigmoid",
    "ann05-branin-2-16-16-1-relu",
    "ann08-gauss3-3-8-8-8-1-tanh",
]
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the shared ANN fixtures are not here")
F64 = TensorProto.DOUBLE


def constant(name: str, values, dtype=np.float64) -> TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def save(tmp_path: Path, nodes, initializers, in_shape, out_shape, name="net", elem=F64, opset=17) -> Path:
    """An ONNX model of ``nodes`` from input ``x`` to output ``y``, checked by onnx.checker."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", elem, in_shape)],
        [helper.make_tensor_value_info("y", elem, out_shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def compare(path: Path, lo: float, hi: float, seed: int = 0, count: int = 40, rtol: float = 1e-12, shape=None) -> int:
    """At random points of [lo, hi]^n, every output: the tape's float value equals onnx.reference's
    (within ``rtol``), and the tape's rigorous point enclosure holds arb's exact value. The number of
    enclosures checked against arb."""
    network = read_onnx(path)
    model = Model("compare")
    x = model.variables(network.n_inputs, lo, hi)
    outputs = network(x)
    model.minimize(outputs[0])
    for extra in outputs[1:]:
        model.inequality(extra)  # each output is a tape output
    tape = model.problem().tape
    reference = ReferenceEvaluator(str(path))
    feed = reference.input_names[0]
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(count):
        point = rng.uniform(lo, hi, network.n_inputs)
        dtype = np.float32 if rtol > 1e-9 else np.float64
        expected = np.asarray(reference.run(None, {feed: point.astype(dtype).reshape(shape or (1, -1))})[0]).ravel()
        f, g, _ = evaluate_float(tape, point.astype(dtype).astype(np.float64))
        got = np.array([f, *g])
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)
        try:
            exact = arb_outputs(tape, point.astype(dtype).astype(np.float64))
        except Undecidable:
            continue
        value = evaluate_point(tape, point.astype(dtype).astype(np.float64))
        bounds = [(value.f_lo, value.f_hi), *zip(value.g_lo, value.g_hi)]
        for (low, high), arb in zip(bounds, exact):
            assert encloses(low, high, arb) is not False
            checked += 1
    return checked


def dense_net(tmp_path: Path, activations: list[tuple[str, dict]], sizes=(3, 5, 4, 2), seed: int = 1, **save_args):
    """A network of Gemm (transB=1) and MatMul + Add layers, alternately, each followed by the
    named activation operator ("" for none)."""
    rng = np.random.default_rng(seed)
    nodes, inits, current = [], [], "x"
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = rng.normal(size=(n_out, n_in))
        b = rng.normal(size=n_out)
        if k % 2 == 0:
            inits += [constant(f"W{k}", w), constant(f"b{k}", b)]
            nodes.append(helper.make_node("Gemm", ["x" if k == 0 else current, f"W{k}", f"b{k}"], [f"z{k}"], transB=1))
        else:
            inits += [constant(f"W{k}", w.T), constant(f"b{k}", b)]
            nodes.append(helper.make_node("MatMul", [current, f"W{k}"], [f"m{k}"]))
            nodes.append(helper.make_node("Add", [f"m{k}", f"b{k}"], [f"z{k}"]))
        current = f"z{k}"
        op, attributes = activations[k]
        if op:
            nodes.append(helper.make_node(op, [current], [f"a{k}"], **attributes))
            current = f"a{k}"
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    return save(tmp_path, nodes, inits, [1, sizes[0]], [1, sizes[-1]], **save_args)


ACTIVATION_OPS = [
    ("Relu", {}),
    ("LeakyRelu", {"alpha": 0.2}),
    ("LeakyRelu", {"alpha": 1.5}),
    ("LeakyRelu", {}),
    ("Tanh", {}),
    ("Sigmoid", {}),
    ("Softplus", {}),
    ("Identity", {}),
]


@pytest.mark.parametrize("op", ACTIVATION_OPS, ids=lambda op: f"{op[0]}{op[1].get('alpha', '')}")
def test_every_activation_matches_the_reference_and_arb(tmp_path, op):
    path = dense_net(tmp_path, [op, op, ("", {})])
    assert compare(path, -2.0, 2.0) > 40
    network = read_onnx(path)
    assert [type(step) for step in network.steps] == [Layer, Layer, Layer]
    expected = {"Relu": "relu", "LeakyRelu": "leaky_relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Softplus": "softplus"}
    assert [step.activation for step in network.steps] == [expected.get(op[0], "linear")] * 2 + ["linear"]
    if op[0] == "LeakyRelu":  # the attribute is a float32: its double, exactly (the schema's 0.01 when absent)
        assert network.steps[0].alpha == float(np.float32(op[1].get("alpha", 0.01)))


def test_mixed_activations_and_two_outputs(tmp_path):
    path = dense_net(tmp_path, [("Tanh", {}), ("Relu", {}), ("Sigmoid", {})], sizes=(2, 6, 5, 2))
    network = read_onnx(path)
    assert [s.activation for s in network.steps] == ["tanh", "relu", "sigmoid"]
    assert (network.n_inputs, network.n_outputs) == (2, 2)
    assert compare(path, -3.0, 3.0, seed=5) > 40


def test_scalings_are_exact_tape_operations_on_the_stored_constants(tmp_path):
    """Sub, Mul and Div by constants (scalar, vector, on either side), a Gemm with alpha, beta and
    transA on a column input, and an activation no layer takes."""
    rng = np.random.default_rng(3)
    w, c = rng.normal(size=(3, 4)), rng.normal(size=4)
    inits = [
        constant("lo", [[-1.0], [0.5], [2.0]]),
        constant("tenth", 0.1),
        constant("three", 3.0),
        constant("W", w),
        constant("C", c),
        constant("shift", [0.25, -0.5, 1.0, 2.0]),
    ]
    nodes = [
        helper.make_node("Sub", ["x", "lo"], ["s"]),
        helper.make_node("Div", ["s", "tenth"], ["d"]),
        helper.make_node("Mul", ["three", "d"], ["m"]),
        helper.make_node("Gemm", ["m", "W", "C"], ["g"], transA=1, alpha=0.5, beta=2.0),
        helper.make_node("Sub", ["shift", "g"], ["r"]),
        helper.make_node("Tanh", ["r"], ["y"]),
    ]
    path = save(tmp_path, nodes, inits, [3, 1], [1, 4])
    network = read_onnx(path)
    kinds = [(type(s).__name__, getattr(s, "op", None)) for s in network.steps]
    assert kinds == [
        ("Elementwise", "sub"),
        ("Elementwise", "div"),
        ("Elementwise", "mul"),
        ("Layer", None),
        ("Elementwise", "mul"),
        ("Elementwise", "add"),
        ("Elementwise", "rsub"),
        ("Activation", None),
    ]
    div, gemm, add = network.steps[1], network.steps[3], network.steps[5]
    assert div.constant.tolist() == [0.1] * 3  # divided by 0.1, never multiplied by a rounded 10
    assert np.array_equal(gemm.weights, w.T) and gemm.bias is None
    assert network.steps[4].constant.tolist() == [0.5] * 4 and np.array_equal(add.constant, 2.0 * c)
    assert compare(path, -1.0, 1.0, shape=(3, 1)) > 40


def test_shape_operators_and_constant_nodes_around_the_layers(tmp_path):
    rng = np.random.default_rng(4)
    inits = [constant("W1", rng.normal(size=(4, 6))), constant("b1", rng.normal(size=6))]
    inits += [constant("W2", rng.normal(size=(3, 6))), constant("b2", rng.normal(size=3))]
    inits += [constant("axes", [0, 2], np.int64)]
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], axis=1),  # (1, 1, 2, 2) -> (1, 4)
        helper.make_node("MatMul", ["f", "W1"], ["h"]),
        helper.make_node("Add", ["b1", "h"], ["z"]),
        helper.make_node("Constant", [], ["shape"], value=constant("s", [6], np.int64)),
        helper.make_node("Reshape", ["z", "shape"], ["v"]),  # (1, 6) -> (6,)
        helper.make_node("Unsqueeze", ["v", "axes"], ["u"]),  # (6,) -> (1, 6, 1)
        helper.make_node("Squeeze", ["u"], ["q"]),  # -> (6,)
        helper.make_node("Relu", ["q"], ["a"]),
        helper.make_node("Constant", [], ["row"], value=constant("r", [1, -1], np.int64)),
        helper.make_node("Reshape", ["a", "row"], ["a2"]),
        helper.make_node("Gemm", ["a2", "W2", "b2"], ["y"], transB=1),
    ]
    path = save(tmp_path, nodes, inits, [1, 1, 2, 2], [1, 3])
    network = read_onnx(path)
    assert [type(s) for s in network.steps] == [Layer, Layer] and network.steps[0].activation == "relu"
    assert (network.n_inputs, network.n_outputs) == (4, 3)
    assert compare(path, -2.0, 2.0, shape=(1, 1, 2, 2)) > 40


def test_float32_weights_are_read_as_the_doubles_they_are(tmp_path):
    path = dense_net(tmp_path, [("Tanh", {}), ("Relu", {}), ("", {})], seed=7)
    model = onnx.load(path)
    for tensor in model.graph.initializer:
        tensor.CopyFrom(constant(tensor.name, numpy_helper.to_array(tensor), np.float32))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT
    onnx.checker.check_model(model)
    onnx.save(model, path)
    stored = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    network = read_onnx(path)
    assert np.array_equal(network.steps[0].weights, stored["W0"].astype(np.float64))
    assert np.array_equal(network.steps[1].weights, stored["W1"].T.astype(np.float64))
    # the reference computes in float32: the tape (float64 on the same float32 numbers) agrees to its precision
    assert compare(path, -2.0, 2.0, rtol=2e-5) > 40


def test_external_data_loads_from_the_models_folder_only(tmp_path):
    path = dense_net(tmp_path, [("Tanh", {}), ("", {}), ("", {})], sizes=(2, 40, 3, 1))
    model = onnx.load(path)
    onnx.save_model(model, path, save_as_external_data=True, location="net.onnx.data", size_threshold=64)
    assert (tmp_path / "net.onnx.data").is_file()
    assert compare(path, -1.0, 1.0) > 20
    moved = tmp_path / "inner"
    moved.mkdir()
    escaping = onnx.load(path, load_external_data=False)
    for tensor in escaping.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../net.onnx.data"
    onnx.save(escaping, moved / "net.onnx")
    with pytest.raises(ProblemError, match=r"net\.onnx: tensor 'W0' refers to '\.\./net\.onnx\.data', outside"):
        read_onnx(moved / "net.onnx")


def test_an_unsupported_operator_is_named_with_its_node(tmp_path):
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="head/softmax")]
    path = save(tmp_path, nodes, [], [1, 3], [1, 3])
    with pytest.raises(ProblemError, match=r"^net\.onnx: node 'head/softmax': Softmax: the operator Softmax is not"):
        read_onnx(path)
    nodes = [helper.make_node("Exp", ["x"], ["y"])]  # unnamed: its index and output
    with pytest.raises(ProblemError, match=r"node 0 \(output y\): Exp: the operator Exp is not supported"):
        read_onnx(save(tmp_path, nodes, [], [1, 3], [1, 3]))


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([helper.make_node("Add", ["x", "x"], ["y"])], "takes the chain's value twice"),
        ([helper.make_node("Div", ["one", "x"], ["y"])], "divides by the chain's value"),
        ([helper.make_node("Div", ["x", "zero"], ["y"])], "divides by zero"),
        ([helper.make_node("Mul", ["x", "row"], ["y"])], r"does not broadcast to the value's shape \(1, 3\)"),
    ],
)
def test_what_is_not_a_chain_of_dense_layers_is_refused(tmp_path, nodes, message):
    inits = [constant("one", 1.0), constant("zero", 0.0), constant("row", np.ones((2, 3)))]
    with pytest.raises(ProblemError, match=message):
        read_onnx(save(tmp_path, nodes, inits, [1, 3], [1, 3]))


@needs_data
@pytest.mark.parametrize("name", FIXTURES)
def test_the_shared_onnx_fixtures_equal_their_json_twins(name):
    twin = load_problem(str(DATA / f"{name}.json"))
    problem = onnx_problem(DATA / f"{name}.onnx", list(zip(twin.lower.tolist(), twin.upper.tolist())))
    rng = np.random.default_rng(11)
    for _ in range(60):
        x = twin.lower + rng.random(twin.dimension) * (twin.upper - twin.lower)
        a, b = evaluate_float(twin.tape, x)[0], evaluate_float(problem.tape, x)[0]
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (x, a, b)  # the same real function, rounded apart
    assert compare(DATA / f"{name}.onnx", -1.0, 1.0, count=15) > 0  # the reference on the graph's own input


@needs_data
def test_the_camel_fixture_proves_the_same_optimum_from_onnx_as_from_json():
    twin = load_problem(str(DATA / "ann04-camel-2-16-1-sigmoid.json"))
    problem = onnx_problem(DATA / "ann04-camel-2-16-1-sigmoid.onnx", [(-3.0, 3.0), (-2.0, 2.0)])
    results = [minimize(p) for p in (twin, problem)]
    assert all(r.status == "optimal" for r in results)
    for result in results:
        assert result.lower_bound <= twin.optimum <= result.value + 1e-12
        assert abs(result.value - twin.optimum) <= 1e-6 * max(1.0, abs(twin.optimum))


@needs_data
@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_both_torch_exports_load_unchanged(exporter):
    twin = json.loads((TORCH / "torch_sequential_tanh_relu.json").read_text())
    network = read_onnx(TORCH / f"torch_sequential_tanh_relu_{exporter}.onnx")
    assert [s.activation for s in network.steps] == ["tanh", "relu", "linear"]
    for step, w, b in zip(network.steps, twin["W"], twin["b"]):
        assert np.array_equal(step.weights, np.array(w)) and np.array_equal(step.bias, np.array(b))
    assert compare(TORCH / f"torch_sequential_tanh_relu_{exporter}.onnx", -1.0, 1.0, rtol=2e-5) > 20
    x = np.array(twin["grid_min_input"])
    problem = onnx_problem(TORCH / f"torch_sequential_tanh_relu_{exporter}.onnx", [(-1.0, 1.0)])
    assert math.isclose(evaluate_float(problem.tape, x)[0], twin["grid_min_f"], rel_tol=1e-12)


def peaks_ann_onnx() -> onnx.ModelProto:
    """The built-in peaks-ann as an ONNX graph, float64, the ANN format's formula node by node:
    ``examples/peaks-ann.onnx`` (write it again with ``onnx.save(peaks_ann_onnx(), path)``)."""
    document = json.loads((Path(pbbflow.spatial.__file__).parent / "data" / "peaks-ann-2-10-8-1.json").read_text())
    inits = [constant(n, v) for n, v in [("in_lo", [[document["in_lo"]] * 2]), ("two", 2.0)]]
    inits += [constant("range", [[document["in_hi"] - document["in_lo"]] * 2]), constant("one", 1.0)]
    inits += [constant("y_sd", document["y_sd"]), constant("y_mu", document["y_mu"])]
    nodes = [
        helper.make_node("Sub", ["x", "in_lo"], ["s"]),
        helper.make_node("Mul", ["two", "s"], ["m"]),
        helper.make_node("Div", ["m", "range"], ["d"]),
        helper.make_node("Sub", ["d", "one"], ["a0"]),
    ]
    depth = len(document["W"])
    for k, (w, b) in enumerate(zip(document["W"], document["b"])):
        inits += [constant(f"W{k}", w), constant(f"b{k}", b)]
        nodes.append(helper.make_node("Gemm", [f"a{k}", f"W{k}", f"b{k}"], [f"z{k}"], transB=1))
        nodes.append(helper.make_node("Tanh" if k < depth - 1 else "Identity", [f"z{k}"], [f"a{k + 1}"]))
    nodes += [helper.make_node("Mul", [f"a{depth}", "y_sd"], ["ys"]), helper.make_node("Add", ["ys", "y_mu"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "peaks-ann",
        [helper.make_tensor_value_info("x", F64, ["N", 2])],
        [helper.make_tensor_value_info("y", F64, ["N", 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pbbflow tests")
    onnx.checker.check_model(model)
    return model


def test_the_example_onnx_file_is_the_builtin_peaks_ann():
    path = Path(pbbflow.__file__).parent / "examples" / "peaks-ann.onnx"
    assert path.read_bytes() == peaks_ann_onnx().SerializeToString()
    twin = load_problem("peaks-ann")
    problem = onnx_problem(path, [(-3.0, 3.0)])
    for x in np.random.default_rng(8).uniform(-3, 3, (50, 2)):
        assert math.isclose(evaluate_float(problem.tape, x)[0], evaluate_float(twin.tape, x)[0], rel_tol=1e-12)
    assert compare(path, -3.0, 3.0, count=10) > 0


def test_a_network_inside_a_larger_model(tmp_path):
    """minimize cost s.t. ANN(x) >= level, with the error ANN - f and the largest of two outputs in
    the cost: the tape against the reference, and a proof whose point meets the constraint and
    whose bound is below every sampled feasible point."""
    path = dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 4, 2))
    network = read_onnx(path)
    reference = ReferenceEvaluator(str(path))
    rng = np.random.default_rng(2)
    samples = rng.uniform(-1, 1, (4000, 2))
    ys = reference.run(None, {"x": samples})[0]
    level = float(np.median(ys[:, 1]))  # half the box meets it
    model = Model("cost")
    x = model.variables(2, -1.0, 1.0)
    out = network(x)
    model.minimize(x[0] ** 2 + x[1] ** 2 + maximum(out[0], out[1]) - (out[0] - x[0] * x[1]))
    model.subject_to(out[1] >= level)
    problem = model.problem()
    costs = (samples**2).sum(1) + ys.max(1) - (ys[:, 0] - samples[:, 0] * samples[:, 1])
    for point, y, cost in zip(samples[:20], ys, costs):
        f, g, _ = evaluate_float(problem.tape, point)
        assert math.isclose(f, cost, rel_tol=1e-12, abs_tol=1e-12) and math.isclose(g[0], level - y[1], abs_tol=1e-12)
    result = minimize(problem)
    assert result.status == "optimal"
    y = reference.run(None, {"x": np.array(result.solution)[None]})[0][0]
    assert y[1] >= level - 1e-9
    assert result.lower_bound <= costs[ys[:, 1] >= level].min() + 1e-12


def test_bounds_on_boxes_hold_the_reference(tmp_path):
    path = dense_net(tmp_path, [("Softplus", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {})], sizes=(2, 5, 4, 1))
    problem = onnx_problem(path, [(-2.0, 2.0)])
    negated = onnx_problem(path, [(-2.0, 2.0)], maximize=True)
    reference = ReferenceEvaluator(str(path))
    rng = np.random.default_rng(9)
    for _ in range(10):
        centre, half = rng.uniform(-1.5, 1.5, 2), 10.0 ** rng.uniform(-4, -0.5, 2)
        lo, hi = centre - half, centre + half
        samples = lo + rng.random((200, 2)) * (hi - lo)
        values = reference.run(None, {"x": samples})[0][:, 0]
        for mode in (Mode.NIE, Mode.MVF, Mode.BOTH):
            low = bound_boxes(problem.tape, lo[None], hi[None], 2, mode, parallel=False).lb[0]
            high = -bound_boxes(negated.tape, lo[None], hi[None], 2, mode, parallel=False).lb[0]
            assert low <= values.min() + 1e-12 and values.max() - 1e-12 <= high


@pytest.mark.gpu
@pytest.mark.usefixtures("simulated_libdevice")
def test_an_onnx_problem_runs_on_the_gpu_as_on_the_cpu(tmp_path):
    from pbbflow.gpu.spatial.bnb import minimize_gpu

    path = dense_net(tmp_path, [("LeakyRelu", {"alpha": 0.1}), ("", {})], sizes=(2, 3, 1))
    problem = onnx_problem(path, [(-1.0, 1.0)], maximize=True)
    options = MinimizeOptions(subdomains=4, eps_abs=1e-4, eps_rel=1e-4)
    gpu = minimize_gpu(problem, options, phase_subdomains=16, capacity=64)
    cpu = minimize(problem, options)
    assert gpu.status == cpu.status == "optimal" and gpu.to_dict()["backend"] == "gpu"
    assert abs(gpu.value - cpu.value) <= 1e-4 * max(1.0, abs(cpu.value))
    samples = np.random.default_rng(0).uniform(-1, 1, (5000, 2))
    sampled_max = ReferenceEvaluator(str(path)).run(None, {"x": samples})[0].max()
    assert -gpu.lower_bound >= sampled_max and -cpu.lower_bound >= sampled_max  # certified maxima above every sample


@pytest.mark.parametrize("activation", ["leaky_relu", "softplus"])
def test_an_ann_file_takes_the_new_activations(tmp_path, activation):
    rng = np.random.default_rng(6)
    w1, b1, w2, b2 = rng.normal(size=(4, 2)), rng.normal(size=4), rng.normal(size=(1, 4)), rng.normal(size=1)
    document = {"layers": [2, 4, 1], "W": [w1.tolist(), w2.tolist()], "b": [b1.tolist(), b2.tolist()]}
    document |= {"in_lo": -1.0, "in_hi": 1.0, "y_mu": 0.5, "y_sd": 2.0, "activation": activation}
    path = tmp_path / "ann.json"
    path.write_text(json.dumps(document))
    problem = load_problem(str(path))
    act = (lambda z: np.maximum(z, 0.01 * z)) if activation == "leaky_relu" else (lambda z: np.log1p(np.exp(z)))
    for x in rng.uniform(-1, 1, (20, 2)):
        expected = (w2 @ act(w1 @ x + b1) + b2)[0] * 2.0 + 0.5  # in [-1, 1] already: the scaling is the identity
        assert math.isclose(evaluate_float(problem.tape, x)[0], expected, rel_tol=1e-12, abs_tol=1e-12)


def write_problem(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    return path


def test_a_problem_file_calls_a_network_beside_it(tmp_path):
    dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 3, 2), name="surrogate")
    document = {
        "domain": [[-1, 1], [-2, 2]],
        "networks": {"net": "surrogate.onnx"},
        "objective": "net(x[0], x[1])[1] - x[0] ** 2",
        "inequalities": ["net(x[1] / 2, x[0])[0] - 1"],
    }
    problem = load_problem(str(write_problem(tmp_path, document)))
    reference = ReferenceEvaluator(str(tmp_path / "surrogate.onnx"))
    for point in np.random.default_rng(1).uniform([-1, -2], [1, 2], (20, 2)):
        f, g, _ = evaluate_float(problem.tape, point)
        y = reference.run(None, {"x": point[None]})[0][0]
        z = reference.run(None, {"x": np.array([[point[1] / 2, point[0]]])})[0][0]
        assert math.isclose(f, y[1] - point[0] ** 2, abs_tol=1e-12) and math.isclose(g[0], z[0] - 1, abs_tol=1e-12)


@pytest.mark.parametrize(
    ("networks", "objective", "message"),
    [
        ({"net": "../surrogate.onnx"}, "x[0]", "net must name an .onnx file in the problem file's folder"),
        ({"net": "surrogate.json"}, "x[0]", "net must name an .onnx file"),
        ({"sin": "surrogate.onnx"}, "x[0]", "'sin' is not a free name for a network"),
        ({"net": "surrogate.onnx"}, "net(x[0], x[1])", r"net\(\.\.\.\) is a vector: pick one output"),
        ({"net": "surrogate.onnx"}, "net(x[0])[0]", "net\\(\\) takes 2 arguments, one per network input"),
        ({"net": "surrogate.onnx"}, "net(x[0], x[1])[2]", "net has outputs 0 to 1"),
        ({"net": "surrogate.onnx"}, "net(x[0], x[1])[x[0]]", "the output must be an integer literal"),
        ({"net": "missing.onnx"}, "x[0]", r"p\.json \(p\): networks: net: missing\.onnx: no such file"),
    ],
)
def test_a_problem_files_networks_are_checked(tmp_path, networks, objective, message):
    dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 3, 2), name="surrogate")
    document = {"domain": [[-1, 1], [-2, 2]], "networks": networks, "objective": objective}
    with pytest.raises(ProblemError, match=message):
        load_problem(str(write_problem(tmp_path, document)))


def test_networks_need_a_files_folder():
    from pbbflow.spatial.parse import problem_from_dict

    with pytest.raises(ProblemError, match="networks are read from a problem file's folder"):
        problem_from_dict({"domain": [[0, 1]], "objective": "x[0]", "networks": {"n": "n.onnx"}}, "doc")
    with pytest.raises(
        ProblemError, match=r"^n\.onnx: an ONNX network needs its input box: onnx_problem\(path, domain\)"
    ):
        load_problem("n.onnx")


def test_domain_with_a_leading_minus_is_taken_as_typed():
    args = build_parser().parse_args(["minimize", "n.onnx", "--domain", "-3:3,-2:2", "--maximize", "--output", "1"])
    assert args.domain == [(-3.0, 3.0), (-2.0, 2.0)] and args.maximize and args.output == 1
    assert build_parser().parse_args(["minimize", "n.onnx", "--domain", "-.5:1e1"]).domain == [(-0.5, 10.0)]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "net.onnx: an ONNX network needs its input box: add --domain"),
        (["--domain", "-1:1,-1:1,0:1"], "net.onnx: the network has 2 inputs: give 1 or 2 intervals"),
        (["--domain", "1:-1"], "argument --domain: '1:-1': the interval must have lo < hi"),
        (["--domain", "-1:x"], "argument --domain: expected LO:HI"),
        (["--domain", "-1:1", "--output", "1"], "net.onnx: output 1 does not exist: the network has 1 outputs"),
    ],
)
def test_minimize_onnx_errors_are_one_line(capsys, tmp_path, arguments, message):
    path = dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 3, 1))
    try:
        code = main(["minimize", str(path), *arguments])
    except SystemExit as usage:  # argparse's, for a value it cannot take
        code = usage.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_onnx_options_on_another_problem_and_a_missing_onnx_are_one_line(capsys, tmp_path, monkeypatch):
    assert main(["minimize", "peaks", "--maximize"]) == 2
    assert "--maximize is for ONNX networks (.onnx); peaks states its own problem" in capsys.readouterr().err
    path = dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 3, 1))
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    assert main(["minimize", str(path), "--domain", "-1:1"]) == 2
    assert "reading ONNX files needs the onnx package: install pbbflow[onnx]" in capsys.readouterr().err


def test_minimize_and_maximize_an_output_on_the_cpu(capsys, tmp_path):
    path = dense_net(tmp_path, [("Tanh", {}), ("", {})], sizes=(2, 4, 2))
    samples = np.random.default_rng(0).uniform(-1, 1, (20000, 2)) * [3, 2]
    y = ReferenceEvaluator(str(path)).run(None, {"x": samples})[0]
    answers = {}
    for sense in ([], ["--maximize"]):
        assert main(["minimize", str(path), "--domain", "-3:3,-2:2", "--output", "1", *sense, "--gpus", "0"]) == 0
        out = capsys.readouterr().out
        answers[bool(sense)] = out
        assert "status       optimal" in out
    low = float(answers[False].split("lower bound  ")[1].split()[0])
    assert low <= y[:, 1].min() and "problem      net output 1 (" in answers[False]
    assert "problem      net output 1, maximized: minus the output (" in answers[True]
    maximum_line = answers[True].split("maximum      ")[1].split("\n")[0]
    best, certified = float(maximum_line.split()[0]), float(maximum_line.split("<= ")[1].rstrip(")"))
    assert y[:, 1].max() <= certified and best <= certified and best >= y[:, 1].max() - 1e-6


def test_minimize_onnx_run_stores_the_tape_and_info_reads_it(capsys, tmp_path):
    shutil.copy(dense_net(tmp_path, [("Relu", {}), ("", {})], sizes=(2, 4, 1)), tmp_path / "relu.onnx")
    store = tmp_path / "r.zarr"
    argv = ["minimize", str(tmp_path / "relu.onnx"), "--domain", "-1:1", "--run", str(store), "--json"]
    assert main([*argv, "--gpus", "0", "--workers", "1", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "optimal" and result["problem"] == "relu"
    (tmp_path / "relu.onnx").unlink()  # the store holds the tape: info and resume never read the file
    assert main(["info", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lower_bound"] == result["lower_bound"]
