"""The JSON problem format, hostile input, the ANN format, load_problem, and the 15 test problems."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from pbbflow.core.files import MAX_FILE_BYTES
from pbbflow.spatial import Op, Problem, ProblemError, builtin_names, evaluate_float, load_problem

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "spatial"
PROBLEM_FILES = sorted(DATA.glob("[BC]*.json"))
ANN_FILE = DATA / "peaks-ann-2-10-8-1.json"
needs_data = pytest.mark.skipif(not PROBLEM_FILES, reason="../shared/data/spatial not present")


def write_json(tmp_path: Path, document, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def one_expression(objective: str, d: int = 2) -> dict:
    return {"name": "hostile", "domain": [[-1, 1]] * d, "objective": objective}


def reference_value(expression: str, x) -> float:
    """The oracle: Python itself evaluating a trusted repository file's expression over math (never
    done by the code under test, which only walks the syntax tree)."""
    names = {
        "sin": math.sin,
        "cos": math.cos,
        "tan": math.tan,
        "exp": math.exp,
        "log": math.log,
        "sqrt": math.sqrt,
        "tanh": math.tanh,
        "abs": abs,
        "atan2": math.atan2,
        "pi": math.pi,
        "e": math.e,
        "x": list(x),
    }
    return eval(expression, {"__builtins__": {}}, names)  # noqa: S307 (test oracle on repository data)


@needs_data
@pytest.mark.parametrize("path", PROBLEM_FILES, ids=lambda p: p.stem)
def test_each_problem_file_loads_and_its_tape_matches_the_expressions(path):
    document = json.loads(path.read_text())
    problem = load_problem(str(path))
    assert problem.name == document["name"] and problem.dimension == document["variables"]
    assert problem.lower.tolist() == [lo for lo, _ in document["domain"]]
    assert problem.upper.tolist() == [hi for _, hi in document["domain"]]
    assert (problem.tape.n_ineq, problem.tape.n_eq) == (len(document["inequalities"]), len(document["equalities"]))
    f, _, _ = evaluate_float(problem.tape, problem.x_optimum)
    assert f == pytest.approx(document["optimum"], rel=1e-9, abs=1e-9)
    rng = np.random.default_rng(3)
    for point in rng.uniform(problem.lower, problem.upper, size=(20, problem.dimension)):
        f, g, h = evaluate_float(problem.tape, point)
        values = [f, *g, *h]
        texts = [document["objective"], *document["inequalities"], *document["equalities"]]
        for value, text in zip(values, texts):
            expected = reference_value(text, point)
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-12 * (1 + abs(expected)))


@needs_data
def test_the_ann_file_matches_a_numpy_forward_pass_and_its_known_minimum():
    document = json.loads(ANN_FILE.read_text())
    problem = load_problem(str(ANN_FILE))
    assert problem.lower.tolist() == [-3.0, -3.0] and problem.upper.tolist() == [3.0, 3.0]
    W = [np.array(w) for w in document["W"]]
    b = [np.array(v) for v in document["b"]]

    def forward(x):  # the README's formula
        a = np.asarray(x) / 3.0
        a = np.tanh(W[0] @ a + b[0])
        a = np.tanh(W[1] @ a + b[1])
        return (W[2] @ a + b[2])[0] * document["y_sd"] + document["y_mu"]

    rng = np.random.default_rng(5)
    for point in rng.uniform(-3, 3, size=(200, 2)):
        assert evaluate_float(problem.tape, point)[0] == pytest.approx(forward(point), rel=1e-12, abs=1e-12)
    assert problem.optimum == document["ann_min_f"]
    assert evaluate_float(problem.tape, document["ann_min_x"])[0] == pytest.approx(document["ann_min_f"], rel=1e-12)


def test_builtin_problems_are_bundled():
    assert builtin_names() == ["peaks", "peaks-ann", "peaks-ann-error-max", "peaks-ann-error-min"]
    peaks = load_problem("peaks")
    assert peaks.name == "peaks" and peaks.lower.tolist() == [-3, -3] and peaks.upper.tolist() == [3, 3]
    assert peaks.origin == "builtin:peaks"
    x = [0.3, -1.2]
    expected = (
        3 * (1 - x[0]) ** 2 * math.exp(-(x[0] ** 2) - (x[1] + 1) ** 2)
        - 10 * (x[0] / 5 - x[0] ** 3 - x[1] ** 5) * math.exp(-(x[0] ** 2) - x[1] ** 2)
        - math.exp(-((x[0] + 1) ** 2) - x[1] ** 2) / 3
    )
    assert evaluate_float(peaks.tape, x)[0] == pytest.approx(expected, rel=1e-13)
    assert peaks.optimum == pytest.approx(-6.551133332835838, rel=1e-12)
    ann = load_problem("peaks-ann")
    assert ann.name == "peaks-ann" and ann.optimum == pytest.approx(-6.513691825781562, rel=1e-15)
    assert evaluate_float(ann.tape, ann.x_optimum)[0] == pytest.approx(ann.optimum, rel=1e-12)
    again = Problem.from_source(json.loads(json.dumps(ann.source)))
    assert np.array_equal(again.tape.op, ann.tape.op) and np.array_equal(again.tape.const_lo, ann.tape.const_lo)


def test_ann_constants_are_tape_operations_on_the_files_doubles(tmp_path):
    """in_hi - in_lo and the scaling are instructions, and every tape constant is a number of the file."""
    document = {
        "layers": [2, 3, 1],
        "W": [[[0.5, -1.0], [2.0, 0.25], [1.5, 1.0]], [[1.0, -2.0, 0.5]]],
        "b": [[0.1, 0.2, 0.3], [0.4]],
        "in_lo": [0.1, -7.0],
        "in_hi": [0.7, 3.0],
        "y_mu": 0.3,
        "y_sd": 1.1,
        "activation": "sigmoid",
        "output_activation": "relu",
        "ann_min_f": 0.0,
        "ann_min_x": [0.2, 0.0],
    }
    problem = load_problem(str(write_json(tmp_path, document, "net.json")))
    numbers = {0.5, -1.0, 2.0, 0.25, 1.5, 1.0, -2.0, 0.1, 0.2, 0.3, 0.4, -7.0, 0.7, 3.0, 1.1}
    assert set(problem.tape.const_lo.tolist()) <= numbers
    assert np.array_equal(problem.tape.const_lo, problem.tape.const_hi)
    lo, hi = np.array(document["in_lo"]), np.array(document["in_hi"])
    W0, W1 = np.array(document["W"][0]), np.array(document["W"][1])
    for point in np.random.default_rng(2).uniform(lo, hi, size=(30, 2)):
        a = 2 * (point - lo) / (hi - lo) - 1
        a = 1 / (1 + np.exp(-(W0 @ a + np.array(document["b"][0]))))
        y = max((W1 @ a)[0] + 0.4, 0.0) * 1.1 + 0.3
        assert evaluate_float(problem.tape, point)[0] == pytest.approx(y, rel=1e-13)


def test_a_key_given_twice_in_an_ann_file_is_refused(tmp_path):
    path = tmp_path / "net.json"
    path.write_text(
        '{"layers": [1, 1], "W": [[[1.0]]], "b": [[0.0]], "in_lo": 0.0, "in_hi": 1.0, "y_mu": 0.0, '
        '"y_sd": 1.0, "in_lo": -1.0}'
    )
    with pytest.raises(ProblemError, match="^net.json: duplicate key 'in_lo'$"):
        load_problem(str(path))
    path.write_text(
        '{"layers": [1, 1], "W": [[[1.0]]], "b": [[0.0]], "in_lo": 0.0, "in_hi": 1.0, "y_mu": 0.0, '
        '"y_sd": 1.0, "meta": [{"seed": 1, "seed": 2}]}'
    )
    with pytest.raises(ProblemError, match="^net.json: duplicate key 'seed'$"):
        load_problem(str(path))


def test_names_and_expressions_in_errors_are_printable(tmp_path):
    """A terminal obeys escape sequences and bidi overrides: messages carry them escaped."""
    cases = [
        ({"name": "a\x1b[31mRED\nline2", "domain": [[0, 1]], "objective": "x[1]"}, "(a\\x1b[31mRED line2)"),
        ({"domain": [[0, 1]], "objective": "x[0] +\u202e x[9]"}, "x[0] +\\u202e x[9]"),
        ({"domain": [[0, 1]], "objective": "x[0] \x1b[2J"}, "\\x1b[2J"),
    ]
    for document, shown in cases:
        with pytest.raises(ProblemError) as error:
            load_problem(str(write_json(tmp_path, document)))
        message = str(error.value)
        assert message.isprintable() and shown in message, message
        assert error.value.reason.isprintable()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"layers": [2, 3, 2]}, "last layer must have 1 output"),
        ({"layers": [2]}, "at least two positive integers"),
        ({"W": [[[1.0, 2.0]] * 3]}, "W and b must be lists of 2 layers"),
        ({"W": [[[1.0, 2.0, 3.0]] * 3, [[1.0, 1.0, 1.0]]]}, r"W\[0\] must have shape \(3, 2\)"),
        ({"b": [[0.0, 0.0], [0.0]]}, r"b\[0\] must be a list of 3 finite numbers"),
        ({"W": [[[1.0, 10**400]] * 3, [[1.0, 1.0, 1.0]]]}, r"W\[0\] must be a list of 2 finite numbers"),
        ({"in_lo": 1.0, "in_hi": 1.0}, "in_lo 1.0 >= in_hi 1.0"),
        ({"in_lo": [0.0, 0.0, 0.0]}, r"in_lo \(a number or 2 numbers\)"),
        ({"activation": "softmax"}, "activation must be one of tanh"),
        ({"y_sd": "1"}, "y_sd must be"),
        ({"ann_min_x": [0.0]}, "ann_min_x must be a list of 2"),
    ],
)
def test_ann_files_are_validated(tmp_path, change, message):
    document = {
        "layers": [2, 3, 1],
        "W": [[[1.0, 2.0]] * 3, [[1.0, 1.0, 1.0]]],
        "b": [[0.0] * 3, [0.0]],
        "in_lo": -1.0,
        "in_hi": 1.0,
        "y_mu": 0.0,
        "y_sd": 1.0,
        **change,
    }
    with pytest.raises(ProblemError, match=message) as error:
        load_problem(str(write_json(tmp_path, document, "net.json")))
    assert str(error.value).startswith("net.json: ") and "\n" not in str(error.value)
    del document["y_mu"]
    with pytest.raises(ProblemError, match="needs the keys y_mu"):
        load_problem(str(write_json(tmp_path, document, "net.json")))


@pytest.mark.parametrize(
    "objective, message",
    [
        ("__import__('os').system('touch MARKER')", "only the listed functions may be called"),
        ("__import__('os')", "unknown function '__import__'"),
        ("open('MARKER', 'w')", "unknown function 'open'"),
        ("x[0].__class__", "attribute access is not allowed"),
        ("().__class__.__bases__[0].__subclasses__()", "only the listed functions may be called"),
        ("(lambda: 1)()", "only the listed functions"),
        ("lambda: 1", "a lambda is not allowed"),
        ("[t for t in (1, 2)]", "a comprehension is not allowed"),
        ("x[0] if x[1] else 2", "a conditional expression is not allowed"),
        ("f'{x[0]}'", "an f-string is not allowed"),
        ("'abc'", "str literals are not allowed"),
        ("True", "bool literals are not allowed"),
        ("x[0] * 1j", "complex literals are not allowed"),
        ("(y := 1)", r"an assignment \(:=\) is not allowed"),
        ("sin(*x)", "plain positional arguments"),
        ("sin(x[0], key=1)", "plain positional arguments"),
        ("sin(x[0], x[1])", r"sin\(\) takes 1 argument"),
        ("min(x[0])", r"min\(\) takes at least 2 arguments"),
        ("x", r"unknown name 'x' \(write x\[i\]\)"),
        ("os", "unknown name 'os'"),
        ("x[-1]", "non-negative integer literal"),
        ("x[2]", "x has indices 0 to 1"),
        ("x[0:1]", "non-negative integer literal"),
        ("x[True]", "non-negative integer literal"),
        ("y[0]", r"only x\[i\] may be indexed"),
        ("x[0] ** 0.5", "the exponent must be an integer literal"),
        ("x[0] ** x[1]", "the exponent must be an integer literal"),
        ("x[0] ** 10**10", "the exponent must be an integer literal"),
        ("x[0] ** 99999999999", "the exponent must be within"),
        ("x[0] ** -True", "the exponent must be an integer literal"),
        ("1e999 * x[0]", "not finite"),
        ("x[0] @ x[1]", "the operator MatMult is not allowed"),
        ("x[0] // 2", "the operator FloorDiv is not allowed"),
        ("~x[0]", "the unary operator Invert is not allowed"),
        ("not x[0]", "the unary operator Not is not allowed"),
        ("x[0] < 1", "a comparison is not allowed"),
        ("x[0] and x[1]", "and/or is not allowed"),
        ("x[0] / 0", "division by zero"),
        ("import os", "not a Python expression"),
        ("x[0]\n; 1", "not a Python expression"),
        ("", "not a Python expression"),
        ("x[0] + 1" + ")" * 5, "not a Python expression"),
        ("(" * 1000 + "x[0]" + ")" * 1000, "not a Python expression"),
        ("-" * 100_000 + "x[0]", "nested too deeply"),
        ("x[0] + " * 10_000 + "x[0]", "nested too deeply"),
        ("1" * 5000, "not a Python expression"),
        ("x[0] + \x00", "null"),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_hostile_expressions_are_refused_by_name_and_nothing_runs(tmp_path, monkeypatch, objective, message):
    monkeypatch.chdir(tmp_path)
    path = write_json(tmp_path, one_expression(objective))
    with pytest.raises(ProblemError, match=message) as error:
        load_problem(str(path))
    text = str(error.value)
    assert text.startswith("p.json (hostile): objective") and "\n" not in text and len(text) < 300
    assert not (tmp_path / "MARKER").exists()


def test_refusals_name_the_part_and_the_offending_subexpression(tmp_path):
    document = {
        "name": "Branin",
        "domain": [[-5, 10], [0, 15]],
        "objective": "x[0] + x[1]",
        "inequalities": ["x[0] - 1", "sin(x[1]) + x[0] ** 0.5"],
    }
    with pytest.raises(ProblemError) as error:
        load_problem(str(write_json(tmp_path, document, "B1.json")))
    assert str(error.value) == (
        'B1.json (Branin): inequalities[1] "x[0] ** 0.5": the exponent must be an integer literal, as in x[0] ** 2'
    )


def test_expressions_accept_the_whole_grammar(tmp_path):
    document = {
        "domain": [[0.5, 2], [0.5, 2]],
        "objective": "-x[0] + +x[1] * 2 / 3 - x[0] ** -2 + sqrt(x[0]) + exp(x[1]) + log(x[0]) + tanh(x[1])"
        " + sin(x[0]) + cos(x[1]) + tan(x[0] / 4) + abs(x[0] - x[1]) + atan2(x[1], x[0])"
        " + min(x[0], x[1], 1) + max(x[0], 1.5) + sigmoid(x[0]) + relu(x[1] - 1) + pi * e"
        " + 9007199254740993 * x[0] ** 0",
        "inequalities": ["  x[0] - 1  "],
        "equalities": [],
    }
    problem = load_problem(str(write_json(tmp_path, document)))
    assert problem.name == "p" and problem.tape.n_ineq == 1
    a, b = 1.25, 0.75
    expected = (
        -a
        + b * 2 / 3
        - a**-2
        + math.sqrt(a)
        + math.exp(b)
        + math.log(a)
        + math.tanh(b)
        + math.sin(a)
        + math.cos(b)
        + math.tan(a / 4)
        + abs(a - b)
        + math.atan2(b, a)
        + min(a, b, 1)
        + max(a, 1.5)
        + 1 / (1 + math.exp(-a))
        + max(b - 1, 0)
        + math.pi * math.e
        + 9007199254740993
    )
    assert evaluate_float(problem.tape, [a, b])[0] == pytest.approx(expected, rel=1e-14)
    # 2**53 + 1 is no double: it is enclosed by its neighbours, as the int literal means itself
    lo, hi = problem.tape.const_lo, problem.tape.const_hi
    assert np.any((lo == 2.0**53) & (hi == 2.0**53 + 2))
    assert Op.POWI in problem.tape.op.tolist() and Op.MIN in problem.tape.op.tolist()


def test_a_long_balanced_sum_parses(tmp_path):
    terms = [f"{k} * x[{k % 3}]" for k in range(2000)]
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2 :]
    problem = load_problem(str(write_json(tmp_path, {"domain": [[0, 1]] * 3, "objective": terms[0]})))
    assert evaluate_float(problem.tape, [1.0, 1.0, 1.0])[0] == sum(range(2000))


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"domain": [[0, 1]], "objective": "x[0]"', "not valid JSON"),
        (b'{"domain": [[0, 1]], "objective": "x[0] \xff"}', r"not UTF-8 text \(byte 40\)"),
        (b"[1, 2]", "expected a JSON object, not list"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"domain": [[NaN, 1]], "objective": "x[0]"}', "NaN is not a number"),
        (b'{"domain": [[0, Infinity]], "objective": "x[0]"}', "Infinity is not a number"),
        (b'{"domain": [[0, 1e999]], "objective": "x[0]"}', r"domain\[0\]: inf is not a finite number"),
        (b'{"domain": [[0, 1' + b"0" * 400 + b']], "objective": "x[0]"}', "is not a finite number"),
        (b'{"domain": [[0, 9007199254740993]], "objective": "x[0]"}', "is not a double"),
        (b'{"domain": [[1, 0]], "objective": "x[0]"}', r"domain\[0\] is empty: lo 1.0 > hi 0.0"),
        (b'{"domain": [], "objective": "x[0]"}', "non-empty list"),
        (b'{"domain": [[0, 1, 2]], "objective": "x[0]"}', r"domain\[0\] must be a pair of numbers"),
        (b'{"domain": [[0, "1"]], "objective": "x[0]"}', r"domain\[0\] must be a pair of numbers"),
        (b'{"domain": [[0, true]], "objective": "x[0]"}', r"domain\[0\] must be a pair of numbers"),
        (b'{"domain": {"a": 1}, "objective": "x[0]"}', "non-empty list"),
        (b'{"variables": 3, "domain": [[0, 1]], "objective": "x[0]"}', "variables is 3 but the domain has 1 pairs"),
        (b'{"variables": "1", "domain": [[0, 1]], "objective": "x[0]"}', "variables is '1'"),
        (b'{"domain": [[0, 1]]}', "no objective"),
        (b'{"domain": [[0, 1]], "objective": 3}', "objective must be an expression string, not int"),
        (b'{"domain": [[0, 1]], "objective": "x[0]", "inequalities": "x[0]"}', "inequalities must be a list"),
        (b'{"domain": [[0, 1]], "objective": "x[0]", "equalities": [null]}', r"equalities\[0\] must be an expression"),
        (b'{"domain": [[0, 1]], "objective": "x[0]", "inequality": ["x[0]"]}', "unknown keys 'inequality'"),
        (b'{"domain": [[0, 1]], "objective": "x[0]", "optimum": "low"}', "optimum must be a number or null"),
        (b'{"domain": [[0, 1]], "objective": "x[0]", "x_optimum": [0, 1]}', "x_optimum must be a list of 1 numbers"),
        (b'{"name": 7, "domain": [[0, 1]], "objective": "x[0]"}', "name must be a non-empty string"),
        (
            b'{"domain": [[0, 1]], "objective": "x[0]", "inequalities": ["0.5 - x[0]"], "inequalities": []}',
            "^bad.json: duplicate key 'inequalities'$",
        ),  # json keeps the last: the constraint went silently
        (
            b'{"domain": [[0, 1]], "objective": "x[0]", "notes": {"by": "a", "by": "b"}}',
            "^bad.json: duplicate key 'by'$",
        ),
    ],
)
def test_hostile_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ProblemError, match=message) as error:
        load_problem(str(path))
    assert str(error.value).startswith("bad.json") and "\n" not in str(error.value)


def test_files_are_size_limited_before_reading(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ProblemError, match=f"more than the limit of {MAX_FILE_BYTES}"):
        load_problem(str(path))


def test_load_problem_errors(tmp_path):
    builtins = r"\(peaks, peaks-ann, peaks-ann-error-max, peaks-ann-error-min\)"
    with pytest.raises(ProblemError, match=rf"nope: not a built-in problem {builtins} nor a .json or .py"):
        load_problem("nope")
    with pytest.raises(ProblemError, match="missing.json: no such file"):
        load_problem(str(tmp_path / "missing.json"))
    with pytest.raises(ProblemError, match="missing.py: no such file"):
        load_problem(str(tmp_path / "missing.py"))
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ProblemError, match="folder.json: is a directory"):
        load_problem(str(tmp_path / "folder.json"))
    unreadable = write_json(tmp_path, one_expression("x[0]"), "locked.json")
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root reads anything
        with pytest.raises(ProblemError, match="locked.json: cannot read the file"):
            load_problem(str(unreadable))


def test_python_model_files(tmp_path):
    (tmp_path / "square.py").write_text(
        "from pbbflow.spatial import Model\n"
        "problem = Model()\n"
        "x = problem.variable(-1, 2)\n"
        "problem.minimize((x - 0.5) ** 2)\n"
    )
    problem = load_problem(str(tmp_path / "square.py"))
    assert problem.name == "square" and problem.origin == str(tmp_path / "square.py")
    assert evaluate_float(problem.tape, [0.5])[0] == 0.0
    (tmp_path / "factory.py").write_text(
        "from pbbflow.spatial import Model, sin\n"
        "def model():\n"
        "    m = Model('wave')\n"
        "    x = m.variable(0, 3)\n"
        "    m.minimize(sin(x))\n"
        "    return m.problem(optimum=-1.0)\n"
    )
    problem = load_problem(str(tmp_path / "factory.py"))
    assert problem.name == "wave" and problem.optimum == -1.0
    (tmp_path / "failing.py").write_text("raise RuntimeError('no licence\\nfor this')\n")
    expected = "failing.py: the model file raised RuntimeError: no licence for this"
    with pytest.raises(ProblemError, match=expected) as error:
        load_problem(str(tmp_path / "failing.py"))
    assert isinstance(error.value.__cause__, RuntimeError)
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ProblemError, match="defines neither `problem`"):
        load_problem(str(tmp_path / "empty.py"))
    (tmp_path / "wrong.py").write_text("problem = 42\n")
    with pytest.raises(ProblemError, match="must be a Problem or Model, not int"):
        load_problem(str(tmp_path / "wrong.py"))
    (tmp_path / "bad_model.py").write_text(
        "from pbbflow.spatial import Model\nm = Model('bad')\nx = m.variable(0, 1)\nproblem = x ** 0.5\n"
    )
    with pytest.raises(ProblemError, match=r'model: power "x\[0\] \*\* 0.5": the exponent must be an integer'):
        load_problem(str(tmp_path / "bad_model.py"))
