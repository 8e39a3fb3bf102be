"""The cuSPARSE baseline through CuPy's low-level bindings (`cusparseSpMV` / `cusparseSpMM`).

Descriptors and work buffers are built once per (matrix, op, width); every applicable
algorithm over the CSR and the COO descriptor is tried, checked against the float64
reference, and kept if it works. The fastest one per matrix is "cuSPARSE-best".
Dense operands are row-major, the same layout the generated kernels get.
GPU only: imported inside the harness worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cupy
import numpy as np
from cupy_backends.cuda.libs import cusparse as lib

from sparserl.harness.check import compare

CUDA_R_32F = 0  # cudaDataType for float32

# Algorithm enums of cusparse.h (CuPy's bindings do not export the SpMV/SpMM ones),
# grouped by the storage descriptor they run on.
SPMV_ALGORITHMS = {
    "csr": {
        "CUSPARSE_SPMV_ALG_DEFAULT": 0,
        "CUSPARSE_SPMV_CSR_ALG1": 2,
        "CUSPARSE_SPMV_CSR_ALG2": 3,
    },
    "coo": {"CUSPARSE_SPMV_COO_ALG1": 1, "CUSPARSE_SPMV_COO_ALG2": 4},
}
SPMM_ALGORITHMS = {
    "csr": {
        "CUSPARSE_SPMM_ALG_DEFAULT": 0,
        "CUSPARSE_SPMM_CSR_ALG1": 4,
        "CUSPARSE_SPMM_CSR_ALG2": 6,
        "CUSPARSE_SPMM_CSR_ALG3": 12,
    },
    "coo": {"CUSPARSE_SPMM_COO_ALG4": 5},
}


@dataclass
class BaselineCall:
    """One working cuSPARSE configuration: `call()` computes the output into its buffer."""

    name: str  # e.g. "csr/CUSPARSE_SPMV_CSR_ALG2"
    call: Callable[[], None]


class CusparseBaseline:
    """cuSPARSE SpMV/SpMM for one matrix on the device.

    trial: the matrix (scipy CSR, float32/int32, canonical), the dense input (n,) or
    (n, N), and the float64 answer each algorithm is checked against. Holds every
    descriptor, buffer and scalar alive for as long as it lives.
    """

    def __init__(self, trial):
        A, dense = trial.matrix, trial.dense
        self.op = "spmv" if dense.ndim == 1 else "spmm"
        self.handle = cupy.cuda.device.get_cusparse_handle()
        self.alpha = np.array(1.0, np.float32)
        self.beta = np.array(0.0, np.float32)
        self._keep = []  # device arrays the descriptors point into
        m, n = A.shape
        self.dense = cupy.asarray(dense)
        shape_out = (m,) if self.op == "spmv" else (m, dense.shape[1])
        self.output = cupy.empty(shape_out, dtype=cupy.float32)
        matrices = {"csr": self._csr_descriptor(A), "coo": self._coo_descriptor(A)}
        dense_desc, out_desc = (
            self._dense_descriptor(self.dense),
            self._dense_descriptor(self.output),
        )
        table = SPMV_ALGORITHMS if self.op == "spmv" else SPMM_ALGORITHMS
        self.calls: list[BaselineCall] = []
        self.rejected: dict[str, str] = {}
        for storage, algorithms in table.items():
            for name, algorithm in algorithms.items():
                label = f"{storage}/{name}"
                try:
                    call = self._make_call(matrices[storage], dense_desc, out_desc, algorithm)
                    self.output.fill(cupy.nan)
                    call()
                    problem = compare(self.output, trial.expected, trial.tolerance)
                except Exception as error:  # an algorithm this cuSPARSE does not support here
                    problem = f"{type(error).__name__}: {error}"
                if problem:
                    self.rejected[label] = problem
                else:
                    self.calls.append(BaselineCall(label, call))

    def _csr_descriptor(self, A):
        indptr, indices, data = (cupy.asarray(a) for a in (A.indptr, A.indices, A.data))
        self._keep += [indptr, indices, data]
        i32 = lib.CUSPARSE_INDEX_32I
        return lib.createCsr(
            A.shape[0], A.shape[1], A.nnz, indptr.data.ptr, indices.data.ptr, data.data.ptr,
            i32, i32, lib.CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F,
        )  # fmt: skip

    def _coo_descriptor(self, A):
        rows = cupy.asarray(np.repeat(np.arange(A.shape[0], dtype=np.int32), np.diff(A.indptr)))
        cols, data = cupy.asarray(A.indices), cupy.asarray(A.data)
        self._keep += [rows, cols, data]
        return lib.createCoo(
            A.shape[0], A.shape[1], A.nnz, rows.data.ptr, cols.data.ptr, data.data.ptr,
            lib.CUSPARSE_INDEX_32I, lib.CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F,
        )  # fmt: skip

    def _dense_descriptor(self, array):
        if array.ndim == 1:
            return lib.createDnVec(array.size, array.data.ptr, CUDA_R_32F)
        rows, cols = array.shape
        return lib.createDnMat(rows, cols, cols, array.data.ptr, CUDA_R_32F, lib.CUSPARSE_ORDER_ROW)

    def _make_call(self, matrix, dense_desc, out_desc, algorithm) -> Callable[[], None]:
        alpha, beta = self.alpha.ctypes.data, self.beta.ctypes.data
        no_op = lib.CUSPARSE_OPERATION_NON_TRANSPOSE
        if self.op == "spmv":
            args = (
                self.handle,
                no_op,
                alpha,
                matrix,
                dense_desc,
                beta,
                out_desc,
                CUDA_R_32F,
                algorithm,
            )
            size = lib.spMV_bufferSize(*args)
            buffer = cupy.empty(max(size, 1), dtype=cupy.int8)
            self._keep.append(buffer)
            return lambda: lib.spMV(*args, buffer.data.ptr)
        args = (
            self.handle, no_op, no_op, alpha, matrix, dense_desc, beta, out_desc, CUDA_R_32F,
            algorithm,
        )  # fmt: skip
        size = lib.spMM_bufferSize(*args)
        buffer = cupy.empty(max(size, 1), dtype=cupy.int8)
        self._keep.append(buffer)
        preprocess = getattr(lib, "spMM_preprocess", None)
        if preprocess is not None:
            preprocess(*args, buffer.data.ptr)
        return lambda: lib.spMM(*args, buffer.data.ptr)
