"""sparserl.io on the shared real matrices, the shared malformed files and small
hand-written files whose expected matrices are written out densely by hand."""

from __future__ import annotations

import csv
import gzip
import pickle

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparserl
from sparserl.io import MatrixFormatError, load_matrix, save_matrix

# What each shared bad input must be rejected for: (words the message must contain, line).
BAD_INPUTS = {
    "bad_dimensions.mtx": (["ends before the size line"], None),
    "bad_header.mtx": (["symmetry", "'bogus'"], 1),
    "bad_matrix_type.mtx": (["complex", "not supported"], 1),
    "c.mtx": (["complex", "not supported"], 1),
    "full_noheader.mtx": (["banner"], 1),
    "fullcrud.mtx": (["array", "not supported"], 1),
    "fullcrud1.mtx": (["banner"], 1),
    "fullcrud2.mtx": (["array", "not supported"], 1),
    "mangle1.mtx": (["object", "'junk'"], 1),
    "mangle2.mtx": (["format", "'junk'"], 1),
    "mangle3.mtx": (["field", "'junk'"], 1),
    "mangle4.mtx": (["symmetry", "'junk'"], 1),
    "mangled1.mtx": (["object", "'mangled'"], 1),
    "mangled2.mtx": (["format", "'mangled'"], 1),
    "mangled3.mtx": (["field", "'mangled'"], 1),
    "mangled4.mtx": (["symmetry", "'mangled'"], 1),
    "mangled5.mtx": (["hermitian", "complex", "'pattern'"], 1),
    "mangled6.mtx": (["hermitian", "complex", "'real'"], 1),
    "mangled7.mtx": (["expected 3 tokens", "got 2"], 5),
    "mangled8.mtx": (["size line", "'3'"], 4),
    "mangled9.mtx": (["square", "3 x 4"], 4),
    "mangled10.mtx": (["2 of the 3 entries", "truncated"], None),
    "mangled11.mtx": (["'zero'", "not an integer"], 5),
    "mangled12.mtx": (["expected 3 tokens", "got 2"], 5),
    "mangled13.mtx": (["column index 9999", "out of range 1..4"], 7),
    "mangled14.mtx": (["duplicate entry (2, 2)", "line 7"], 8),
    "mangled15.mtx": (["array", "not supported"], 1),
    "mangled16.mtx": (["array", "not supported"], 1),
    "mangled_format.mtx": (["pattern", "array"], 1),
    "row0.mtx": (["banner"], 1),
    "west0067_noheader.mtx": (["banner", "'67 67 294'"], 1),
}

BANNER = "%%MatrixMarket matrix coordinate"


def write(path, text: str):
    """Write text to path (gzip-compressed for a .gz name) and return path."""
    data = text.encode("latin-1")
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def assert_identical(A: sp.csr_matrix, B: sp.csr_matrix):
    """Same shape, same CSR arrays, same float32 bits (so -0.0 and 0.0 differ)."""
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data.view(np.uint32), B.data.view(np.uint32))


def assert_canonical(A):
    assert isinstance(A, sp.csr_matrix)
    assert A.data.dtype == np.float32
    assert A.indptr.dtype == np.int32 and A.indices.dtype == np.int32
    assert A.has_sorted_indices and A.has_canonical_format


# --------------------------------------------------------------------------- shared data


def test_every_suitesparse_matrix_matches_index_and_scipy(shared_data):
    """Shape from the manifest; stored entries after symmetric expansion = the collection
    index's `nentries`; same matrix as scipy.io.mmread (an independent parser) in float32."""
    folder = shared_data / "suitesparse"
    manifest = list(csv.DictReader((folder / "manifest.csv").open()))
    index_lines = (shared_data / "suitesparse_index.csv").read_text().splitlines()[2:]
    nentries = {(r[0], r[1]): int(r[12]) for r in csv.reader(index_lines)}
    assert len(manifest) == 140
    for row in manifest:
        A = load_matrix(folder / row["file"])
        assert_canonical(A)
        assert A.shape == (int(row["rows"]), int(row["cols"])), row["file"]
        assert A.nnz == nentries[(row["group"], row["name"])], row["file"]
        stored = int(row["nnz_stored"])
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        diagonal = int(np.count_nonzero(A.indices == rows))
        expanded = {"general": stored, "symmetric": 2 * stored - diagonal}
        assert A.nnz == expanded.get(row["symmetry"], 2 * stored), row["file"]
        reference = sp.csr_matrix(scipy.io.mmread(folder / row["file"]), dtype=np.float32)
        reference.sum_duplicates()
        assert_identical(A, reference)
        if row["symmetry"] == "symmetric":
            assert (A != A.T).nnz == 0
        if row["symmetry"] == "skew-symmetric":
            assert (A != -A.T).nnz == 0


def test_every_dlmc_matrix_matches_dlmc_csv(shared_data):
    folder = shared_data / "dlmc"
    stats = {row["name"]: row for row in csv.DictReader((folder / "dlmc.csv").open())}
    files = sorted(folder.glob("*/*/*/*.smtx.gz"))
    assert len(files) == 216
    for path in files:
        row = stats[str(path.relative_to(folder)).removesuffix(".smtx.gz")]
        A = load_matrix(path)
        assert_canonical(A)
        assert A.shape == (int(row["nrows"]), int(row["ncols"]))
        assert A.nnz == int(float(row["nnz"]))
        assert (A.data == 1.0).all()
        lengths = np.diff(A.indptr)
        assert lengths.mean() == pytest.approx(float(row["mean_nnz_per_row"]), rel=1e-6)
        assert lengths.std() == pytest.approx(float(row["std_nnz_per_row"]), rel=1e-6)


def test_dlmc_random_values_are_seeded_uniform(shared_data):
    path = next((shared_data / "dlmc").glob("*/*/*/*.smtx.gz"))
    A = load_matrix(path, values="random", seed=3)
    ones = load_matrix(path)
    assert_identical(sp.csr_matrix((np.ones_like(A.data), A.indices, A.indptr), A.shape), ones)
    assert (A.data >= 0).all() and (A.data < 1).all()
    assert len(np.unique(A.data)) > A.nnz // 2
    assert_identical(A, load_matrix(path, values="random", seed=3))
    assert not np.array_equal(A.data, load_matrix(path, values="random", seed=4).data)


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_rejected_with_specific_message(shared_data, name):
    words, line = BAD_INPUTS[name]
    path = shared_data / "bad_inputs" / name
    with pytest.raises(MatrixFormatError) as caught:
        load_matrix(path)
    message = str(caught.value)
    assert message.startswith(name)
    for word in words:
        assert word in message
    assert caught.value.line == line
    assert caught.value.path == path


def test_bad_inputs_table_covers_the_folder(shared_data):
    assert {p.name for p in (shared_data / "bad_inputs").glob("*.mtx")} == set(BAD_INPUTS)


def test_zero_based_indices_are_out_of_range(shared_data, tmp_path):
    """row0.mtx with its leading blank line removed: now it fails on its 0-based index."""
    text = (shared_data / "bad_inputs" / "row0.mtx").read_text().lstrip("\n")
    with pytest.raises(MatrixFormatError, match="line 11: row index 0 out of range 1..4"):
        load_matrix(write(tmp_path / "row0.mtx", text))


def test_mangled14_sums_when_asked(shared_data):
    A = load_matrix(shared_data / "bad_inputs" / "mangled14.mtx", duplicates="sum")
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[0, 0] = 3.0
    expected[1, 1] = np.float32(3.4) + np.float32(7.1)
    np.testing.assert_array_equal(A.toarray(), expected)


# --------------------------------------------------------------------------- Matrix Market rules


def test_symmetric_expansion_matches_hand_written_matrix(tmp_path):
    path = write(
        tmp_path / "sym.mtx",
        f"{BANNER} real symmetric\n3 3 4\n1 1 2.5\n2 1 -1\n3 2 4\n3 3 0\n",
    )
    expected = [[2.5, -1, 0], [-1, 0, 4], [0, 4, 0]]
    A = load_matrix(path)
    np.testing.assert_array_equal(A.toarray(), expected)
    assert A.nnz == 2 * 4 - 2  # the explicit zero on the diagonal stays stored
    assert A[2, 2] == 0 and A.indices[A.indptr[2] : A.indptr[3]].tolist() == [1, 2]


def test_skew_symmetric_and_pattern_expansion(tmp_path):
    skew = write(tmp_path / "skew.mtx", f"{BANNER} integer skew-symmetric\n3 3 2\n2 1 5\n3 1 -2\n")
    np.testing.assert_array_equal(load_matrix(skew).toarray(), [[0, -5, 2], [5, 0, 0], [-2, 0, 0]])
    pattern = write(tmp_path / "pat.mtx.gz", f"{BANNER} pattern symmetric\n3 3 3\n1 1\n3 1\n3 2\n")
    np.testing.assert_array_equal(load_matrix(pattern).toarray(), [[1, 0, 1], [0, 0, 1], [1, 1, 0]])
    random = load_matrix(pattern, values="random", seed=1)
    assert (random != random.T).nnz == 0 and random.nnz == 5
    assert ((random.data > 0) & (random.data < 1)).all()


def test_explicit_zeros_are_kept(tmp_path):
    A = load_matrix(
        write(tmp_path / "z.mtx", f"{BANNER} real general\n2 3 3\n1 3 0\n2 1 0.0\n2 2 7\n")
    )
    assert A.nnz == 3
    assert A.indices.tolist() == [2, 0, 1] and A.data.tolist() == [0, 0, 7]


def test_no_entries_and_empty_dimensions(tmp_path):
    A = load_matrix(write(tmp_path / "e.mtx", f"{BANNER} real general\n2 3 0\n% nothing\n"))
    assert_canonical(A)
    assert A.shape == (2, 3) and A.nnz == 0
    assert load_matrix(write(tmp_path / "z.smtx", "0, 4, 0\n0\n\n")).shape == (0, 4)


def test_tolerated_layout_variations(tmp_path):
    """Case-insensitive banner, annotation and comment lines, blank lines, CRLF, tabs,
    entries in any order, value spellings from the SuiteSparse files."""
    text = (
        "%%matrixmarket MATRIX Coordinate REAL General\r\n"
        "%%GraphBLAS type double\r\n% a comment\r\n\r\n"
        "3 3 4 % rows cols entries\r\n"
        "3 3 9.09090909090909E-1\r\n\r\n% between entries\r\n"
        "1\t2 .032088\r\n2 1 -1.7e-01\r\n  1 1 1  \r\n"
    )
    expected = np.array(
        [[1, 0.032088, 0], [-0.17, 0, 0], [0, 0, 9.09090909090909e-1]], dtype=np.float32
    )
    np.testing.assert_array_equal(load_matrix(write(tmp_path / "v.mtx", text)).toarray(), expected)


def test_symmetric_file_repeating_a_mirrored_position_is_a_duplicate(tmp_path):
    path = write(tmp_path / "d.mtx", f"{BANNER} real symmetric\n2 2 2\n2 1 1\n1 2 3\n")
    with pytest.raises(MatrixFormatError, match=r"line 4: duplicate entry \(1, 2\).*line 3"):
        load_matrix(path)
    np.testing.assert_array_equal(load_matrix(path, duplicates="sum").toarray(), [[0, 4], [4, 0]])


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("2 2 3\n1 1 1\n", "after 1 of the 3 entries", None),
        ("2 2 1\n1 1 1\n2 2 2\n", "more entries than the 1 declared", 4),
        ("2 2 1\n1 1 1 1\n", "expected 3 tokens", 3),
        ("2 2 1\n1.5 1 1\n", "row index '1.5' is not an integer", 3),
        ("2 2 1\n1 1 1_0\n", "value '1_0' is not a number", 3),
        ("2 2 1\n1 1 1e40\n", "not a finite float32", 3),
        ("2 2 1\n1 1 nan\n", "not a finite float32", 3),
        ("2 2 1\n1 -1 1\n", "column index -1 out of range 1..2", 3),
        ("2 2 1\n1 99999999999999999999 1\n", "out of range", 3),
        ("2 2\n", "size line", 2),
        ("2 x 1\n", "size line", 2),
    ],
)
def test_malformed_real_general_files(tmp_path, body, message, line):
    with pytest.raises(MatrixFormatError, match=message) as caught:
        load_matrix(write(tmp_path / "bad.mtx.gz", f"{BANNER} real general\n{body}"))
    assert caught.value.line == line


@pytest.mark.parametrize(
    ("banner", "message"),
    [
        (f"{BANNER} pattern skew-symmetric", "'pattern' field is invalid with 'skew-symmetric'"),
        (f"{BANNER} integer general\n1 1 1\n1 1 2.5", "value '2.5' is not an integer"),
        ("%%MatrixMarket matrix coordinate real", "banner must have 5 tokens"),
        ("%%MatrixMarketmatrix coordinate real general", "missing Matrix Market banner"),
    ],
)
def test_malformed_banners_and_fields(tmp_path, banner, message):
    with pytest.raises(MatrixFormatError, match=message):
        load_matrix(write(tmp_path / "bad.mtx", banner + "\n"))


# --------------------------------------------------------------------------- files and errors


def test_missing_empty_corrupt_and_unknown_files(tmp_path, shared_data):
    with pytest.raises(MatrixFormatError, match="absent.mtx: file does not exist"):
        load_matrix(tmp_path / "absent.mtx")
    (tmp_path / "folder.mtx").mkdir()
    with pytest.raises(MatrixFormatError, match="not a regular file"):
        load_matrix(tmp_path / "folder.mtx")
    for name in ["empty.mtx", "empty.mtx.gz", "empty.smtx.gz", "blank.mtx"]:
        with pytest.raises(MatrixFormatError, match="file is empty"):
            load_matrix(write(tmp_path / name, "\n\n" if name == "blank.mtx" else ""))
    (tmp_path / "junk.mtx.gz").write_bytes(b"this is not gzip data")
    with pytest.raises(MatrixFormatError, match="corrupt or truncated gzip"):
        load_matrix(tmp_path / "junk.mtx.gz")
    real = (shared_data / "suitesparse" / "HB__bcsstk01.mtx.gz").read_bytes()
    (tmp_path / "cut.mtx.gz").write_bytes(real[: len(real) // 2])
    with pytest.raises(MatrixFormatError, match="corrupt or truncated gzip"):
        load_matrix(tmp_path / "cut.mtx.gz")
    with pytest.raises(MatrixFormatError, match="unsupported file type"):
        load_matrix(write(tmp_path / "m.txt", "1 2 3"))


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("2, 3, 2\n0 2\n0 2\n", "expected 3 row offsets", 2),
        ("2, 3, 2\n0 2 1\n0 2\n", "without decreasing", 2),
        ("2, 3, 2\n0 1 2\n0 3\n", "column index 3 .* out of range 0..2", 3),
        ("2, 3, 2\n0 1 2\n0 x\n", "'x' is not a non-negative integer", 3),
        ("2, 3, 2\n0 1 2\n0\n", "expected 2 column indices", 3),
        ("2 3 2\n0 1 2\n0 1\n", "'<rows>, <cols>, <nnz>'", 1),
        ("2, 3, 2\n0 1 2\n0 1\n7\n", "3 lines", 4),
        ("2, 3, 2\n0 1 2\n0\x0b1 2.0\n", "'2.0' is not a non-negative integer", 3),
    ],
)
def test_malformed_dlmc_files(tmp_path, text, message, line):
    with pytest.raises(MatrixFormatError, match=message) as caught:
        load_matrix(write(tmp_path / "bad.smtx", text))
    assert caught.value.line == line


def test_dlmc_hand_written_file(tmp_path):
    A = load_matrix(write(tmp_path / "p.smtx.gz", "3, 4, 3 \n0 2 2 3 \n3 1 0 \n"))
    np.testing.assert_array_equal(A.toarray(), [[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])


def test_error_carries_path_and_line_and_pickles(tmp_path):
    path = write(tmp_path / "x.mtx", f"{BANNER} real general\n2 2 1\n1 1\n")
    with pytest.raises(MatrixFormatError) as caught:
        load_matrix(path)
    error = caught.value
    assert isinstance(error, ValueError) and sparserl.MatrixFormatError is MatrixFormatError
    assert (error.path, error.line) == (path, 3)
    assert str(error) == "x.mtx, line 3: expected 3 tokens '<row> <column> <value>', got 2"
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.path, copy.line) == (str(error), error.path, error.line)


def test_bad_arguments_are_plain_value_errors(tmp_path):
    with pytest.raises(ValueError, match="values must be one of"):
        load_matrix(tmp_path / "a.mtx", values="zeros")
    with pytest.raises(ValueError, match="duplicates must be one of"):
        load_matrix(tmp_path / "a.mtx", duplicates="keep")


# --------------------------------------------------------------------------- save, .npz, .mat


def awkward_matrix() -> sp.csr_matrix:
    """Float32 values that stress text round trips: extremes, subnormals, -0.0, zeros,
    plus empty rows and an empty last column."""
    rng = np.random.default_rng(0)
    A = sp.random(60, 50, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    special = np.array(
        [np.finfo(np.float32).max, -np.finfo(np.float32).tiny, 1e-45, -0.0, 0.0, 1 / 3, 16777217],
        dtype=np.float32,
    )
    A.data = rng.standard_normal(A.nnz).astype(np.float32) * np.float32(10.0) ** rng.integers(
        -30, 30, A.nnz
    ).astype(np.float32)
    A.data[: special.size] = special
    A = A.tolil()
    A[5, :] = 0
    A[:, 49] = 0
    return sp.csr_matrix(A)


@pytest.mark.parametrize("name", ["m.mtx", "m.mtx.gz", "m.npz"])
def test_save_load_round_trip_is_exact(tmp_path, name):
    A = awkward_matrix()
    A.sort_indices()
    save_matrix(tmp_path / name, A)
    B = load_matrix(tmp_path / name)
    assert_canonical(B)
    assert_identical(B, A)


def test_save_sums_duplicates_and_rejects_what_cannot_load(tmp_path):
    coo = sp.coo_matrix((np.float32([1, 2, 4]), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    save_matrix(tmp_path / "d.mtx", coo)
    np.testing.assert_array_equal(load_matrix(tmp_path / "d.mtx").toarray(), [[0, 3], [4, 0]])
    with pytest.raises(ValueError, match="non-finite"):
        save_matrix(tmp_path / "n.mtx", sp.csr_matrix(np.array([[np.nan]])))
    with pytest.raises(ValueError, match="complex"):
        save_matrix(tmp_path / "c.npz", sp.csr_matrix(np.array([[1j]])))
    for name in ["m.smtx", "m.txt"]:
        with pytest.raises(ValueError, match="writes .mtx"):
            save_matrix(tmp_path / name, coo)
    save_matrix(tmp_path / "lil.npz", coo.tolil())
    np.testing.assert_array_equal(load_matrix(tmp_path / "lil.npz").toarray(), [[0, 3], [4, 0]])
    with pytest.raises(TypeError, match="scipy sparse"):
        save_matrix(tmp_path / "m.mtx", np.eye(2))


def test_npz_duplicates_are_summed_and_bool_is_a_pattern(tmp_path):
    coo = sp.coo_matrix((np.float64([1, 2]), ([0, 0], [1, 1])), shape=(2, 2))
    sp.save_npz(tmp_path / "dup.npz", coo)
    np.testing.assert_array_equal(load_matrix(tmp_path / "dup.npz").toarray(), [[0, 3], [0, 0]])
    sp.save_npz(tmp_path / "b.npz", sp.csr_matrix(np.array([[True, False], [True, True]])))
    np.testing.assert_array_equal(load_matrix(tmp_path / "b.npz").toarray(), [[1, 0], [1, 1]])
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(MatrixFormatError, match="not a scipy sparse .npz"):
        load_matrix(tmp_path / "junk.npz")


def test_suitesparse_mat_files(tmp_path):
    A = awkward_matrix().astype(np.float64)
    scipy.io.savemat(tmp_path / "p.mat", {"Problem": {"A": A, "name": "test/awkward"}})
    assert_identical(load_matrix(tmp_path / "p.mat"), sp.csr_matrix(A, dtype=np.float32))

    scipy.io.savemat(tmp_path / "noproblem.mat", {"A": A})
    with pytest.raises(MatrixFormatError, match="'Problem' struct"):
        load_matrix(tmp_path / "noproblem.mat")
    scipy.io.savemat(tmp_path / "complex.mat", {"Problem": {"A": sp.csc_matrix(A * 1j)}})
    with pytest.raises(MatrixFormatError, match="complex"):
        load_matrix(tmp_path / "complex.mat")
    # A v7.3 file: a 128-byte MATLAB header announcing version 0x0200, then HDF5 data.
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(116)
    (tmp_path / "v73.mat").write_bytes(header + bytes(8) + b"\x00\x02IM" + bytes(512))
    with pytest.raises(MatrixFormatError, match=r"v7.3 \(HDF5\)"):
        load_matrix(tmp_path / "v73.mat")


@pytest.mark.parametrize("suffix", [".mtx", ".smtx"])
def test_damaged_files_load_or_raise_matrix_format_error(shared_data, tmp_path, suffix):
    """Truncations and byte substitutions of real files never escape as other exceptions."""
    if suffix == ".mtx":
        source = shared_data / "suitesparse" / "HB__bcsstk01.mtx.gz"
    else:
        source = min((shared_data / "dlmc").glob("*/*/*/*.smtx.gz"), key=lambda p: p.stat().st_size)
    original = gzip.decompress(source.read_bytes())
    rng = np.random.default_rng(0)
    path = tmp_path / f"damaged{suffix}"
    for trial in range(300):
        data = bytearray(original)
        if trial % 3 == 0:
            data = data[: rng.integers(0, len(data))]
        else:
            for position in rng.integers(0, len(data), size=1 + trial % 4):
                data[position] = rng.choice(list(b"0 1-.e\n%x\x00\xff,"))
        path.write_bytes(bytes(data))
        try:
            load_matrix(path, duplicates="sum")
        except MatrixFormatError:
            pass
