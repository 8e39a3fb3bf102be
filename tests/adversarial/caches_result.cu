// expect: wrong_result
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
// Computes honestly for its first few launches, then replays a stored answer.
// Passes the first trials; the re-check after timing must catch it.
__device__ unsigned int launches = 0;
__device__ float stored[1 << 20];

extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx, const float* values,
                                           const float* x, float* y, int m, int n, int nnz) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int seen = launches;
    if (row < m) {
        if (seen < 3 || row >= (1 << 20)) {
            float sum = 0.0f;
            for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += values[j] * x[col_idx[j]];
            y[row] = sum;
            if (row < (1 << 20)) stored[row] = sum;
        } else {
            y[row] = stored[row];
        }
    }
    if (row == 0) atomicAdd(&launches, 1u);
}
