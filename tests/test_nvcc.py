"""`compile_check` against the installed nvcc: diagnostics on the right line, resources read
from ptxas, and a clear error when there is no compiler."""

from __future__ import annotations

import shutil

import pytest

from sparserl.harness.nvcc import compile_check

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

KERNEL = """\
__device__ float pick(const float* y, int i) {
    float prefix[256];  // indexed at run time: too big for registers, it lives on the stack
    float running = 0.0f;
    for (int k = 0; k < 256; ++k) { running += y[k]; prefix[k] = running; }
    return prefix[(int)y[i] & 255];
}

extern "C" __global__ void scale(float* y, int n) {
    __shared__ float tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? y[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = tile[127 - threadIdx.x] + pick(y, i);
}
"""


def line_of(source: str, text: str) -> int:
    """1-based line of the only occurrence of `text` in `source`."""
    assert source.count(text) == 1
    return source[: source.index(text)].count("\n") + 1


def test_valid_kernel_compiles_with_its_resources():
    result = compile_check(KERNEL)
    assert result.ok and not result.errors, result.log
    resources = result.resources["scale"]
    assert resources.shared_bytes == 128 * 4  # the __shared__ tile
    assert resources.local_bytes >= 256 * 4  # prefix[]
    assert resources.registers > 0 and resources.barriers == 1
    assert result.seconds > 0


def test_syntax_error_is_a_diagnostic_on_its_line():
    source = KERNEL.replace(
        "tile[threadIdx.x] = i < n ? y[i] : 0.0f;", "tile[threadIdx.x] = i < n ? y[i] : ;"
    )
    result = compile_check(source)
    assert not result.ok and result.resources == {}
    error = result.errors[0]
    assert error.line == line_of(source, ": ;")
    assert error.message == "expected an expression"


def test_undeclared_identifier_has_line_column_and_name():
    source = KERNEL.replace("+ pick(y, i)", "+ bias * pick(y, i)")
    result = compile_check(source)
    assert not result.ok
    (error,) = result.errors
    assert error.line == line_of(source, "bias")
    line_text = source.splitlines()[error.line - 1]
    assert error.column == line_text.index("bias") + 1
    assert '"bias"' in error.message and "undefined" in error.message


def test_warnings_do_not_fail_the_compile():
    source = KERNEL.replace("int i = blockIdx.x", "int unused = 3;\n    int i = blockIdx.x")
    result = compile_check(source)
    assert result.ok
    assert any(d.severity == "warning" and '"unused"' in d.message for d in result.diagnostics)


def test_timeout_is_a_diagnostic_not_an_exception():
    result = compile_check(KERNEL, timeout_s=0.001)
    assert not result.ok and "did not finish" in result.errors[0].message


def test_missing_nvcc_raises(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="nvcc was not found"):
        compile_check(KERNEL)
