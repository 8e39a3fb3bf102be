// expect: timeout
/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx, const float* values,
                                           const float* x, float* y, int m, int n, int nnz) {
    // __nanosleep has a side effect, so the compiler cannot delete the loop.
    for (;;) __nanosleep(1000);
}
