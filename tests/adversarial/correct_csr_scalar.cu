// expect: correct
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
// The plain thread-per-row kernel: the control that must pass.
extern "C" __global__ void sparserl_kernel(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                           const float* __restrict__ values, const float* __restrict__ x,
                                           float* __restrict__ y, int m, int n, int nnz) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += values[j] * x[col_idx[j]];
    y[row] = sum;
}
