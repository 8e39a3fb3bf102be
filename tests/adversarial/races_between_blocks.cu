// expect: wrong_result
/*@sparserl
op: spmv
format: csr
grid: 2 * ceil_div(m, 128)
block: 128
*/
// The second half of the grid computes the second half of each row into a global
// scratch array that the first half reads with no synchronisation between blocks:
// it sees zeros or a stale value from an earlier launch.
__device__ float scratch[1 << 20];

extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx, const float* values,
                                           const float* x, float* y, int m, int n, int nnz) {
    int half_grid = gridDim.x / 2;
    bool second = blockIdx.x >= half_grid;
    int row = (blockIdx.x % half_grid) * blockDim.x + threadIdx.x;
    if (row >= m || row >= (1 << 20)) return;
    int start = row_ptr[row], end = row_ptr[row + 1], middle = (start + end) / 2;
    float sum = 0.0f;
    for (int j = second ? middle : start; j < (second ? end : middle); ++j) sum += values[j] * x[col_idx[j]];
    if (second) {
        scratch[row] = sum;
    } else {
        y[row] = sum + scratch[row];
    }
}
