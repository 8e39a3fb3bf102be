// expect: wrong_result
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
// Reads one element past the end of x in every row (x[n] is outside the input).
extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx, const float* values,
                                           const float* x, float* y, int m, int n, int nnz) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += values[j] * x[col_idx[j]];
    y[row] = sum + 0.0f * x[n];
}
