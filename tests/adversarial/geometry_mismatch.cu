// expect: bad_launch
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 256)
block: 256
*/
// Compiled for at most 128 threads per block, launched with 256 by its own header.
extern "C" __global__ void __launch_bounds__(128) sparserl_kernel(const int* row_ptr, const int* col_idx,
                                                                  const float* values, const float* x, float* y,
                                                                  int m, int n, int nnz) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += values[j] * x[col_idx[j]];
    y[row] = sum;
}
