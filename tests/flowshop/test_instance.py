"""Instances: Taillard generator vs. the shared files, file readers, load_instance, error reporting."""

import pickle
from pathlib import Path

import numpy as np
import pytest

from pbbflow.flowshop.instance import FlowShop, InstanceError, read_taillard_file, read_vfr_file
from pbbflow.flowshop.load import load_instance
from pbbflow.flowshop.taillard import TAILLARD_SEEDS, TAILLARD_SIZES, taillard_instance

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TAILLARD_DIR = DATA / "taillard"
VFR_DIR = DATA / "vfr" / "small"
needs_taillard = pytest.mark.skipif(
    not TAILLARD_DIR.is_dir(), reason=f"shared Taillard data not found at {TAILLARD_DIR}"
)
needs_vfr = pytest.mark.skipif(not VFR_DIR.is_dir(), reason=f"shared VFR data not found at {VFR_DIR}")

# ta001, job 0 and job 19: Taillard's verification file printed in the generator's C port.
TA001_FIRST = [54, 79, 16, 66, 58]
TA001_LAST = [94, 77, 40, 31, 28]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def matrix_text(rows) -> str:
    return "".join(" ".join(map(str, r)) + "\n" for r in rows)


# --- Taillard generator -------------------------------------------------------------------------


def test_taillard_tables():
    assert len(TAILLARD_SIZES) == len(TAILLARD_SEEDS) == 120
    assert TAILLARD_SEEDS[1] == 873654221 and TAILLARD_SEEDS[120] == 28837162
    assert TAILLARD_SIZES[1] == (20, 5) and TAILLARD_SIZES[91] == (200, 10) and TAILLARD_SIZES[120] == (500, 20)


def test_taillard_ta001_known_values():
    ta = taillard_instance(1)
    assert ta.name == "ta001" and (ta.n, ta.m) == (20, 5)
    assert ta.p[0].tolist() == TA001_FIRST and ta.p[-1].tolist() == TA001_LAST


def test_taillard_shapes_and_range():
    for number, (n, m) in TAILLARD_SIZES.items():
        ta = taillard_instance(number)
        assert ta.p.shape == (n, m)
        assert ta.p.min() >= 1 and ta.p.max() <= 99


@needs_taillard
@pytest.mark.parametrize("number", range(1, 121))
def test_taillard_generator_matches_shared_file(number):
    assert taillard_instance(number) == read_taillard_file(TAILLARD_DIR / f"ta{number:03d}.txt")


# --- FlowShop -----------------------------------------------------------------------------------


def test_flowshop_normalizes_and_freezes():
    src = np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    fs = FlowShop("x", src)
    assert fs.p.dtype == np.int32 and fs.p.flags.c_contiguous and not fs.p.flags.writeable
    assert (fs.n, fs.m) == (2, 3)
    src[0, 0] = 99  # the instance holds its own copy
    assert fs.p[0, 0] == 0
    with pytest.raises(ValueError):
        fs.p[0, 0] = 1
    assert FlowShop("x", [[1.0, 2.0]]).p.tolist() == [[1, 2]]


def test_flowshop_equality_hash_pickle():
    a, b = FlowShop("x", [[1, 2], [3, 4]]), FlowShop("x", np.array([[1, 2], [3, 4]]))
    assert a == b and hash(a) == hash(b) and a != FlowShop("y", a.p)
    c = pickle.loads(pickle.dumps(a))
    assert c == a and not c.p.flags.writeable


@pytest.mark.parametrize(
    "p, word",
    [([1, 2], "2-D"), (np.zeros((0, 3)), "at least one"), ([[1.5]], "integer"), ([[1, -1]], "negative")],
)
def test_flowshop_rejects(p, word):
    with pytest.raises(InstanceError, match=word):
        FlowShop("bad", p)


def test_instance_error_pickles():
    err = pickle.loads(pickle.dumps(InstanceError("f.txt", "ragged row", 3)))
    assert str(err) == "f.txt: line 3: ragged row" and err.line == 3


# --- file readers -------------------------------------------------------------------------------


def test_machine_major_equals_job_major(tmp_path):
    ta = taillard_instance(11)  # 20 x 10: not square, so a wrong orientation cannot pass
    job = write(tmp_path / "job.txt", f"{ta.n} {ta.m}\n" + matrix_text(ta.p))
    mach = write(tmp_path / "mach.txt", f"{ta.n} {ta.m}\n\n" + matrix_text(ta.p.T))
    assert np.array_equal(read_taillard_file(job).p, ta.p)
    assert np.array_equal(read_taillard_file(mach, orientation="machine-major").p, ta.p)
    assert np.array_equal(load_instance(str(mach), fmt="taillard", orientation="machine-major").p, ta.p)


@needs_taillard
def test_machine_major_of_shared_file(tmp_path):
    ta = read_taillard_file(TAILLARD_DIR / "ta021.txt")
    mach = write(tmp_path / "ta021.txt", f"{ta.n} {ta.m}\n" + matrix_text(ta.p.T))
    assert read_taillard_file(mach, orientation="machine-major") == ta


@needs_vfr
def test_vfr_known_values():
    fs = read_vfr_file(VFR_DIR / "VFR10_5_1_Gap.txt")
    assert fs.name == "VFR10_5_1_Gap" and (fs.n, fs.m) == (10, 5)
    assert fs.p[0].tolist() == [45, 31, 54, 54, 64]
    assert fs.p[1].tolist() == [44, 7, 52, 66, 57]
    assert fs.p[-1].tolist() == [57, 31, 33, 8, 19]


@needs_vfr
@pytest.mark.parametrize("stem", ["VFR10_5_1_Gap", "VFR30_15_4_Gap", "VFR60_20_10_Gap"])
def test_vfr_matches_text(stem):
    path = VFR_DIR / f"{stem}.txt"
    tokens = np.array(path.read_text().split(), dtype=np.int64)
    n, m = tokens[:2]
    pairs = tokens[2:].reshape(n, 2 * m)
    fs = read_vfr_file(path)
    assert (fs.n, fs.m) == (n, m)
    assert np.array_equal(fs.p, pairs[:, 1::2])
    assert load_instance(str(path)) == fs  # auto-detected as VFR


# --- load_instance ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["ta1", "ta001", "TA001", "Ta01", " ta1 "])
def test_load_taillard_names(spec):
    fs = load_instance(spec)
    assert fs.name == "ta001" and fs.p[0].tolist() == TA001_FIRST


def test_load_taillard_name_uppercase():
    assert load_instance("TA011") == taillard_instance(11) and taillard_instance(11).name == "ta011"


@needs_taillard
def test_load_shared_path():
    path = TAILLARD_DIR / "ta001.txt"
    assert load_instance(str(path)) == load_instance(path) == taillard_instance(1)


def test_load_auto_detects_format(tmp_path):
    p = [[3, 5, 7], [2, 4, 6]]
    plain = write(tmp_path / "plain.txt", "2 3\n" + matrix_text(p))
    vfr = write(tmp_path / "pairs.dat", "2 3\n" + matrix_text([[0, a, 1, b, 2, c] for a, b, c in p]))
    for path in (plain, vfr):
        fs = load_instance(str(path))
        assert fs.name == path.stem and fs.p.tolist() == p
    assert load_instance(vfr, fmt="vfr").p.tolist() == p
    with pytest.raises(InstanceError, match="ragged"):
        load_instance(str(vfr), fmt="taillard")


def test_load_rejects_bad_arguments():
    with pytest.raises(ValueError, match="fmt"):
        load_instance("ta1", fmt="csv")
    with pytest.raises(ValueError, match="orientation"):
        load_instance("ta1", orientation="diagonal")


@pytest.mark.parametrize("spec", ["ta121", "TA000", "ta0"])
def test_unknown_taillard_name(spec):
    with pytest.raises(InstanceError, match=r"ta001\.\.ta120"):
        load_instance(spec)


@pytest.mark.parametrize("spec", ["ta１", "ta٣"])
def test_a_taillard_name_has_ascii_digits(spec):
    with pytest.raises(InstanceError, match="no such file"):
        load_instance(spec)


def test_missing_file(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(InstanceError, match="no such file") as info:
        load_instance(str(path))
    assert "absent.txt" in str(info.value)


# --- one test per error kind --------------------------------------------------------------------

TAILLARD_ERRORS = [
    # (id, file text, line in the message or None, word describing the problem)
    ("empty", "", None, "empty"),
    ("blank-only", "\n  \n\n", None, "empty"),
    ("header-one-number", "3\n1 2 3\n", 1, "bad header"),
    ("header-three-numbers", "2 2 2\n1 2\n3 4\n", 1, "bad header"),
    ("header-non-numeric", "n m\n1 2\n", 1, "bad header"),
    ("n-zero", "0 3\n", 1, "number of jobs"),
    ("m-zero", "2 0\n\n", 1, "number of machines"),
    ("non-numeric", "2 2\n1 2\n3 x\n", 3, "not a number"),
    ("non-integer", "2 2\n1 3.5\n3 4\n", 2, "not an integer"),
    ("negative", "2 2\n1 2\n\n3 -4\n", 4, "negative"),
    ("ragged-short", "2 3\n1 2 3\n4 5\n", 3, "ragged row"),
    ("ragged-long", "2 3\n1 2 3 4\n4 5 6\n", 2, "ragged row"),
    ("too-few-rows", "3 2\n1 2\n3 4\n", 3, "too few rows"),
    ("too-many-rows", "2 2\n1 2\n3 4\n\n5 6\n", 5, "too many rows"),
    ("too-large", "1 1\n99999999999\n", 2, "too large"),
    ("fullwidth-digits", "2 2\n1 2\n３ 4\n", 3, "'３' is not a number (digits must be ASCII 0-9)"),
    ("arabic-indic-digits", "1 2\n٣ 4\n", 2, "'٣' is not a number (digits must be ASCII 0-9)"),
    ("fullwidth-header", "２ 2\n1 2\n3 4\n", 1, "bad header '２ 2': expected two integers 'n m' (digits must"),
]


def assert_reported(path, readers, line, word):
    """Every reader raises one InstanceError naming the file, the line and the problem."""
    for read in readers:
        with pytest.raises(InstanceError) as info:
            read(path)
        message = str(info.value)
        assert Path(path).name in message and word in message
        assert info.value.line == line
        if line is not None:
            assert f"line {line}:" in message


@pytest.mark.parametrize("text, line, word", [e[1:] for e in TAILLARD_ERRORS], ids=[e[0] for e in TAILLARD_ERRORS])
def test_taillard_file_errors(tmp_path, text, line, word):
    path = write(tmp_path / "broken_instance.txt", text)
    assert_reported(path, (read_taillard_file, load_instance), line, word)


VFR_ERRORS = [
    ("machine-out-of-order", "2 2\n0 5 1 6\n1 7 0 8\n", 3, "machine index out of order"),
    ("machine-one-based", "1 2\n1 5 2 6\n", 2, "machine index out of order"),
    ("ragged", "2 2\n0 5 1 6\n0 7 1\n", 3, "ragged row"),
    ("negative", "1 2\n0 5 1 -6\n", 2, "negative"),
    ("non-numeric", "1 2\n0 5 one 6\n", 2, "not a number"),
    ("too-few-rows", "3 1\n0 5\n0 6\n", 3, "too few rows"),
    ("too-many-rows", "1 1\n0 5\n0 6\n", 3, "too many rows"),
    ("bad-header", "2\n0 5\n", 1, "bad header"),
    ("empty", "", None, "empty"),
    ("fullwidth-time", "1 2\n0 5 1 ６\n", 2, "processing time '６' is not a number (digits must be ASCII"),
    ("fullwidth-machine", "1 2\n0 5 １ 6\n", 2, "machine index '１' is not a number (digits must be ASCII"),
]


@pytest.mark.parametrize("text, line, word", [e[1:] for e in VFR_ERRORS], ids=[e[0] for e in VFR_ERRORS])
def test_vfr_file_errors(tmp_path, text, line, word):
    path = write(tmp_path / "broken_vfr.txt", text)
    assert_reported(path, (read_vfr_file, lambda p: load_instance(p, fmt="vfr")), line, word)


@pytest.mark.parametrize("text", [e[1] for e in VFR_ERRORS], ids=[e[0] for e in VFR_ERRORS])
def test_auto_detection_reports_a_vfr_files_error_as_vfr(tmp_path, text):
    path = write(tmp_path / "broken_vfr.txt", text)
    with pytest.raises(InstanceError) as as_vfr:
        load_instance(path, fmt="vfr")
    with pytest.raises(InstanceError) as detected:
        load_instance(path)
    assert str(detected.value) == str(as_vfr.value)


@needs_vfr
@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda row: row[:-1], "ragged row: expected 10 numbers (5 'machine time' pairs), found 9"),
        (lambda row: row[:5] + ["x"] + row[6:], "processing time 'x' is not a number"),
        (lambda row: ["1", row[1], "0"] + row[3:], "machine index out of order: pair 1 names machine 1, expected 0"),
    ],
    ids=["ragged", "time", "index"],
)
def test_a_shared_vfr_file_with_an_error_is_reported_as_vfr(tmp_path, damage, problem):
    lines = (VFR_DIR / "VFR10_5_1_Gap.txt").read_text().splitlines()
    lines[4] = " ".join(damage(lines[4].split()))
    path = write(tmp_path / "VFR10_5_1_Gap.txt", "\n".join(lines) + "\n")
    with pytest.raises(InstanceError) as info:
        load_instance(str(path))
    assert str(info.value) == f"{path}: line 5: {problem}"


def test_directory_is_not_an_instance(tmp_path):
    with pytest.raises(InstanceError, match="directory"):
        read_taillard_file(tmp_path)
