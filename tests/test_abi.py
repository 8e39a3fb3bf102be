"""ABI header parsing, launch expressions and entry-signature checks (docs/kernel_abi.md)."""

from pathlib import Path

import pytest

from sparserl.abi import (
    ABIError,
    check_entry_signature,
    entry_parameter_types,
    evaluate_expression,
    parse_header,
)

CSR_KERNEL = (Path(__file__).parent / "adversarial" / "correct_csr_scalar.cu").read_text()


def header(body: str) -> str:
    return f"/*@sparserl\n{body}\n*/\n"


def test_header_of_a_real_kernel():
    parsed = parse_header(CSR_KERNEL)
    assert (parsed.op, parsed.format, parsed.zero_init) == ("spmv", "csr", False)
    launch = parsed.launch({"m": 1000, "n": 10, "nnz": 5000})
    assert (launch.grid, launch.block, launch.shared_bytes) == (8, 128, 0)
    check_entry_signature(CSR_KERNEL, "spmv", "csr")


def test_defaults_and_params():
    parsed = parse_header(
        header("op: spmm\nformat: sell\nparams: slice=8\ngrid: ceil_div(n_slices, 2)\nblock: 8 * N")
    )
    assert parsed.params == {"slice": "8", "sigma": "256"}
    assert parsed.launch({"m": 64, "n": 64, "nnz": 10, "n_slices": 9, "N": 16}).grid == 5


@pytest.mark.parametrize(
    "body, message",
    [
        ("format: csr\ngrid: 1\nblock: 32", "missing the required key"),
        ("op: spmv\nformat: jds\ngrid: 1\nblock: 32", "unknown format 'jds'"),
        ("op: spgemm\nformat: csr\ngrid: 1\nblock: 32", "unknown op"),
        ("op: spmv\nformat: csr\ngrid: ceil_div(rows, 4)\nblock: 32", "unknown name 'rows'"),
        ("op: spmv\nformat: csr\ngrid: __import__('os')\nblock: 32", "may only use"),
        ("op: spmv\nformat: csr\ngrid: m ** 2\nblock: 32", "may only use"),
        ("op: spmv\nformat: csr\ngrid: N\nblock: 32", "unknown name 'N'"),
        ("op: spmv\nformat: csr\ngrid: 1\nblock: 32\ncolour: red", "unknown key 'colour'"),
        ("op: spmv\nformat: csr\ngrid: 1\ngrid: 2\nblock: 32", "given twice"),
        ("op: spmv\nformat: bsr\nparams: block=4\ngrid: 1\nblock: 32", None),
        ("op: spmv\nformat: csr\ngrid: 1\nblock: 32\ninit: ones", "'init' must be"),
    ],
)
def test_bad_headers(body, message):
    if message is None:  # parses; the bad block shape is caught when the format is built
        parse_header(header(body))
        return
    with pytest.raises(ABIError, match=message):
        parse_header(header(body))


def test_missing_header_and_bad_launch():
    with pytest.raises(ABIError, match="no '/\\*@sparserl"):
        parse_header("__global__ void k() {}")
    parsed = parse_header(header("op: spmv\nformat: csr\ngrid: m - 10\nblock: 2048"))
    with pytest.raises(ABIError, match="must be 1..1024"):
        parsed.launch({"m": 100, "n": 1, "nnz": 1})
    with pytest.raises(ABIError, match="at least 1"):
        parsed.launch({"m": 5, "n": 1, "nnz": 1})


def test_expressions():
    sizes = {"m": 10, "nnz": 33}
    assert (
        evaluate_expression("ceil_div(nnz, 8) + min(m, 4) * max(2, 3) - 7 % 4 // 1", sizes)
        == 5 + 12 - 3
    )
    with pytest.raises(ABIError, match="divides by zero"):
        evaluate_expression("m // (m - 10)", sizes)


def test_signature_checks():
    swapped = (
        CSR_KERNEL.replace("const float* __restrict__ x,", "TMP")
        .replace("float* __restrict__ y,", "const float* __restrict__ x,")
        .replace("TMP", "float* __restrict__ y,")
    )
    with pytest.raises(ABIError, match="must take"):
        check_entry_signature(swapped, "spmv", "csr")
    with pytest.raises(ABIError, match="must take"):
        check_entry_signature(CSR_KERNEL, "spmm", "csr")
    with pytest.raises(ABIError, match="no definition"):
        check_entry_signature(CSR_KERNEL.replace('extern "C" ', ""), "spmv", "csr")
    # Launch attributes may stand on either side of `void`, in any order.
    for attributes in ("__cluster_dims__(4, 1, 1)", "__launch_bounds__(128) __cluster_dims__(2)"):
        for placed in (f"{attributes} void", f"void {attributes}"):
            clustered = CSR_KERNEL.replace("__global__ void", f"__global__ {placed}", 1)
            assert attributes in clustered
            check_entry_signature(clustered, "spmv", "csr")
    assert entry_parameter_types("spmm", "dia") == [
        "const int*", "const float*", "const float*", "float*", "int", "int", "int", "int",
    ]  # fmt: skip
