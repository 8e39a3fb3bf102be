// expect: abi_error
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
// x and y swapped in the parameter list: the harness would pass them the other way.
extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx, const float* values,
                                           float* y, const float* x, int m, int n, int nnz) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) y[row] = x[row];
}
