"""The streaming syntax checker against the real compiler.

Every program of the corpus below compiles with nvcc, and the checker must accept each
one; broken variants that nvcc rejects must be rejected (most of them before their last
character when streamed); nothing nvcc accepts may ever be rejected. Tests that run nvcc
skip without it.
"""

from __future__ import annotations

import random
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from sparserl.harness.nvcc import CompileResult, compile_check
from sparserl.syntax import StreamingChecker, SyntaxVerdict, check, extract_code
from sparserl.syntax.cuda_names import builtin_kinds
from sparserl.syntax.lexer import Lexer

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

# ---------------------------------------------------------------------------- the corpus
# Valid programs: ABI kernels in seven formats, then programs that exercise C++ and CUDA
# syntax the checker must accept (every one compiles with nvcc: test_valid_programs_compile).
ABI_PROGRAMS = {
    "csr_vector": r"""/*@sparserl
op: spmv
format: csr
params: -
grid: ceil_div(m, 4)    # one warp per row, 4 warps per block
block: 128
shared: 0
init: none
*/
// Warp-per-row CSR SpMV.
__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(128)
sparserl_kernel(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                const float* __restrict__ values, const float* __restrict__ x,
                float* __restrict__ y, int m, int n, int nnz)
{
    const int lane = threadIdx.x & 31;
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= m) return;
    float sum = 0.0f;
    for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += 32) {
        sum += values[k] * __ldg(&x[col_idx[k]]);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[row] = sum;
}
""",
    "coo_atomic": r"""/*@sparserl
op: spmv
format: coo
grid: ceil_div(nnz, 256)
block: 256
init: zero
*/
extern "C" __global__ void sparserl_kernel(const int* row_idx, const int* col_idx,
        const float* values, const float* x, float* y, int m, int n, int nnz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nnz) atomicAdd(&y[row_idx[i]], values[i] * x[col_idx[i]]);
}
""",
    "ell_spmm": r"""/*@sparserl
op: spmm
format: ell
grid: ceil_div(m * N, 256)
block: 256
*/
#define TILE 256
extern "C" __global__ void sparserl_kernel(const int* col_idx, const float* values,
    const float* B, float* C, int m, int n, int width, int N)
{
    int t = blockIdx.x * TILE + threadIdx.x;
    int r = t / N, c = t % N;
    if (r >= m) return;
    float acc = 0.f;
    for (int k = 0; k < width; ++k) {
        const int idx = k * m + r;
        acc = fmaf(values[idx], B[(size_t)col_idx[idx] * N + c], acc);
    }
    C[(size_t)r * N + c] = acc;
}
""",
    "sell_shared": r"""/*@sparserl
op: spmv
format: sell
params: slice=32 sigma=256
grid: n_slices
block: 32
*/
struct SliceInfo { int begin; int width; };

__device__ SliceInfo slice_info(const int* slice_ptr, int s) {
    SliceInfo info;
    info.begin = slice_ptr[s];
    info.width = (slice_ptr[s + 1] - slice_ptr[s]) / 32;
    return info;
}

extern "C" __global__ void sparserl_kernel(const int* slice_ptr, const int* row_perm,
        const int* col_idx, const float* values, const float* x, float* y,
        int m, int n, int n_slices) {
    __shared__ float partial[32];
    const int s = blockIdx.x, lane = threadIdx.x;
    const SliceInfo info = slice_info(slice_ptr, s);
    float sum = 0;
    for (int k = 0; k < info.width; k++) {
        int at = info.begin + k * 32 + lane;
        sum += values[at] * x[col_idx[at]];
    }
    partial[lane] = sum;
    __syncwarp();
    const int row = row_perm[s * 32 + lane];
    if (row >= 0) y[row] = partial[lane];
}
""",
    "dia_template": r"""/*@sparserl
op: spmv
format: dia
grid: ceil_div(m, 128)
block: 128
*/
template <int BLOCK, typename T>
__device__ inline T dot_diagonals(const int* offsets, const T* data, const T* x, int m, int n, int n_diags, int r) {
    T acc = T(0);
    for (int d = 0; d < n_diags; ++d) {
        const int c = r + offsets[d];
        if (c >= 0 && c < n) acc += data[d * m + r] * x[c];
    }
    return acc;
}

extern "C" __global__ void sparserl_kernel(const int* offsets, const float* data,
        const float* x, float* y, int m, int n, int n_diags) {
    const int r = blockIdx.x * 128 + threadIdx.x;
    if (r < m) y[r] = dot_diagonals<128, float>(offsets, data, x, m, n, n_diags, r);
}
""",
    "bsr_lambda": r"""/*@sparserl
op: spmv
format: bsr
params: block=2x2
grid: n_block_rows
block: 32
*/
#include <cuda_fp16.h>
extern "C" __global__ void sparserl_kernel(const int* block_row_ptr, const int* block_col_idx,
        const float* values, const float* x, float* y, int m, int n, int n_block_rows)
{
    const int br = blockIdx.x;
    auto load = [&](int b, int i, int j) -> float { return values[b * 4 + i * 2 + j]; };
    if (threadIdx.x < 2) {
        const int i = threadIdx.x;
        float acc = 0.0f;
        for (int b = block_row_ptr[br]; b < block_row_ptr[br + 1]; ++b) {
            const int bc = block_col_idx[b];
            for (int j = 0; j < 2; ++j) acc += load(b, i, j) * x[bc * 2 + j];
        }
        const int row = br * 2 + i;
        if (row < m) y[row] = __half2float(__float2half(acc)) * 0.0f + acc;
    }
}
""",
    "rowblocks_coop": r"""/*@sparserl
op: spmv
format: csr_rowblocks
params: block_nnz=1024
grid: n_row_blocks
block: 256
shared: 1024 * 4
*/
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx,
        const float* values, const int* row_blocks, const float* x, float* y,
        int m, int n, int nnz, int n_row_blocks)
{
    extern __shared__ float products[];
    cg::thread_block block = cg::this_thread_block();
    const int first_row = row_blocks[blockIdx.x], last_row = row_blocks[blockIdx.x + 1];
    const int begin = row_ptr[first_row], end = row_ptr[last_row];
    for (int k = begin + threadIdx.x; k < end; k += blockDim.x)
        products[k - begin] = values[k] * x[col_idx[k]];
    block.sync();
    for (int r = first_row + threadIdx.x; r < last_row; r += blockDim.x) {
        float sum = 0.0f;
        for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) sum += products[k - begin];
        y[r] = sum;
    }
}
""",
}

OTHER_PROGRAMS = {
    "macros_structs": r"""
#define BLOCK 256
#define IDX(r, c, ld) ((r) * (ld) + (c))
#define SQUARE(x) ((x) * (x))
#define CHECK_BOUNDS(i, n) if ((i) >= (n)) return
typedef struct { float x, y; } Point;
typedef float real;
struct Accumulator {
    float total;
    int count;
    __device__ void add(float v) { total += v; ++count; }
    __device__ float mean() const { return count ? total / count : 0.0f; }
};
enum Mode { MODE_SUM = 0, MODE_MAX, MODE_MEAN };
__constant__ float weights[4] = {0.1f, 0.2f, 0.3f, 0.4f};

__global__ void reduce(const real* __restrict__ in, real* out, int n, Mode mode) {
    __shared__ real buffer[BLOCK];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    CHECK_BOUNDS(i, n);
    Accumulator acc = {0.0f, 0};
    acc.add(SQUARE(in[i]) * weights[i & 3]);
    Point p; p.x = acc.mean(); p.y = 0;
    buffer[threadIdx.x] = mode == MODE_MAX ? fmaxf(p.x, p.y) : p.x;
    __syncthreads();
    for (unsigned int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) buffer[threadIdx.x] += buffer[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[IDX(blockIdx.x, 0, 1)] = buffer[0];
}
""",
    "templates_lambdas": r"""
template <typename T>
struct Pair { T first; T second; };

template <typename T, int N>
__device__ T sum_array(const T (&a)[N]) {
    T s = T();
    for (int i = 0; i < N; ++i) s += a[i];
    return s;
}

template <typename F>
__device__ float apply(F f, float v) { return f(v); }

template <class T> __device__ T clamp_value(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void kernel(float* data, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= n) return;
    float local[4] = {data[tid], 1.0f, 2.0f, 3.0f};
    const float scale = 2.0f;
    auto twice = [=](float v) { return v * scale; };
    auto add_one = [](float v) -> float { return v + 1.0f; };
    Pair<float> pr{local[0], local[1]};
    data[tid] = apply(twice, sum_array(local)) + add_one(pr.second) + clamp_value<float>(pr.first, 0.f, 1.f);
}
template __device__ float clamp_value<float>(float, float, float);
""",
    "comments_everywhere": r"""/* leading comment */ __global__ /* between */ void /* a */ k(/* no params? */ float* /* ptr */ y /* name */, int n) // trailing
{   // open
    int /* type */ i /* name */ = /* init */ threadIdx.x; /* after */
    /* multi
       line
       comment with } and { and ; inside */
    if (i < n) // a comment with a ( paren
        y[i] = /* mid-expression */ 1.0f; // done
    const char* s = "a string with /* not a comment */ and // not either and ; and }";
    (void)s;
    char c = '}'; (void)c;
}
""",
    "shared_atomics_asm": r"""
__device__ unsigned int lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}
__device__ int counter;
__global__ void histogram(const int* keys, unsigned int* bins, int n) {
    extern __shared__ unsigned int local_bins[];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local_bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&local_bins[keys[i] & 255], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local_bins[b]);
    if (lane_id() == 0 && threadIdx.x == 0) atomicAdd(&counter, 1);
    unsigned mask = __ballot_sync(0xffffffff, threadIdx.x < 16);
    int leader = __ffs(mask) - 1;
    float f = __int_as_float(leader) + __popc(mask) + rsqrtf(2.0f) + __fdividef(1.0f, 3.0f);
    float4 v = make_float4(f, f, f, f);
    int2 w; w.x = 1; w.y = 2;
    double d = fma(1.0, 2.0, 3.0) + sqrt(4.0) + fabs(-1.0);
    if (v.x + w.x + d < 0) counter = (int)v.y;
    long long t0 = clock64();
    size_t bytes = sizeof(float4) * 2;
    uint3 idx = threadIdx; dim3 grid_dims = gridDim;
    (void)t0; (void)bytes; (void)idx; (void)grid_dims;
}
""",
    "cpp_features": r"""
namespace detail {
    constexpr int kWarp = 32;
    __device__ inline int lane() { return threadIdx.x % kWarp; }
    struct Vec { float a, b; __device__ Vec operator+(const Vec& o) const { return {a + o.a, b + o.b}; } };
}
using detail::Vec;
using real_t = float;
union Bits { float f; unsigned int u; };

__device__ float2 operator*(float2 p, float s) { return make_float2(p.x * s, p.y * s); }

static __device__ __forceinline__ int ceil_div_int(int a, int b) { return (a + b - 1) / b; }

__global__ void features(real_t* out, const int* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) { return; }
    Bits bits; bits.u = 0x3f800000u;
    Vec v = Vec{1.0f, 2.0f} + Vec{bits.f, 0.0f};
    float2 p = make_float2(v.a, v.b) * 0.5f;
    switch (in[i] & 3) {
        case 0: out[i] = p.x; break;
        case 1: { float t = p.y; out[i] = t; break; }
        default:
            out[i] = static_cast<real_t>(ceil_div_int(in[i], detail::kWarp) + detail::lane());
    }
    int j = 0;
    do { j++; } while (j < 3);
    while (j > 0) --j;
    for (auto k : {1, 2, 3}) j += k;
    const auto* ptr = reinterpret_cast<const float4*>(out);
    (void)ptr;
    int arr[3] = {1, 2, 3};
    auto [a0, a1] = make_int2(arr[0], arr[1]);
    out[i] += a0 + a1 + j;
    bool flag = true and not false;
    if (flag) goto done;
    out[i] = 0;
done:
    return;
}
""",
    "host_code": r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void fill(float* y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}
int main() {
    float* d = nullptr;
    const int n = 1024;
    cudaMalloc(&d, n * sizeof(float));
    fill<<<(n + 255) / 256, 256>>>(d, 1.0f, n);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) { printf("error %s\n", cudaGetErrorString(err)); return 1; }
    cudaFree(d);
    return 0;
}
""",
    "fp16_vectorized": r"""
#include <cuda_fp16.h>
__global__ void axpy_half(const __half* x, __half* y, __half a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) {
        const half2* x2 = reinterpret_cast<const half2*>(x);
        half2* y2 = reinterpret_cast<half2*>(y);
        half2 a2 = __halves2half2(a, a);
        y2[i] = __hfma2(a2, x2[i], y2[i]);
    }
}
__global__ void vec4(const float* __restrict__ in, float* __restrict__ out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
        reinterpret_cast<float4*>(out)[i] = v;
    }
}
""",
    "conditional_compilation": r"""
#define USE_FAST 1
#if USE_FAST
__device__ float f(float x) { return __expf(x); }
#else
__device__ float f(float x) { return expf(x); }
#endif
#ifdef __CUDA_ARCH__
#endif
__global__ void k(float* y) { y[threadIdx.x] = f(y[threadIdx.x]); }
""",
    "warp_reduce_templates": r"""
template <int WIDTH = 32>
__device__ __forceinline__ float reduce_sum(float v) {
    #pragma unroll
    for (int o = WIDTH / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o, WIDTH);
    return v;
}
template <int ROWS_PER_BLOCK, int THREADS_PER_ROW>
__global__ void __launch_bounds__(ROWS_PER_BLOCK * THREADS_PER_ROW)
csr_vector(const int* row_ptr, const int* col, const float* val, const float* x, float* y, int m) {
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / THREADS_PER_ROW;
    const int lane = threadIdx.x % THREADS_PER_ROW;
    if (row >= m) return;
    float s = 0;
    for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += THREADS_PER_ROW) s += val[k] * x[col[k]];
    s = reduce_sum<THREADS_PER_ROW>(s);
    if (lane == 0) y[row] = s;
}
template __global__ void csr_vector<4, 32>(const int*, const int*, const float*, const float*, float*, int);
template __global__ void csr_vector<8, 16>(const int*, const int*, const float*, const float*, float*, int);
""",
    "odd_but_valid": r"""
struct S { int v; };
__device__ int g_values[8];
__device__ int twice(int);
__device__ int twice(int a) { return 2 * a; }
__global__ void k(int* out) {
    int x = 1, *p = &x, arr[2] = {3, 4};
    int (*fp)(int) = twice;
    struct S s = {5};
    int y = (x > 0) ? arr[1] : *p;
    { int x = 7; y += x; }
    for (int i = 0, j = 10; i < j; ++i, --j) y += i * j;
    if (int z = y - 1) y = z;
    int q = ({ int t = y * 2; t + 1; });
    unsigned long long big = 1ull << 40;
    float e = 1e-3f, h = 0x1.8p1f;
    int sep = 1'000'000;
    out[0] = y + s.v + fp(x) + g_values[0] + q + (int)(big >> 40) + (int)e + (int)h + sep;
    out[1] = sizeof(S) + alignof(float4) + __LINE__;
    [[maybe_unused]] int unused = 0;
    label: ;
}
""",
    "control_flow": r"""
__global__ void k(float* a, int n) {
    float sum = 0;
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) sum += a[i * n + j];
    if (sum > 0) a[0] = 1; else if (sum < 0) a[0] = 2; else { a[0] = 3; }
    int i, j;
    for (i = 0, j = n; i < j; ++i, --j) sum += i;
    do { sum -= 1; } while (0);
    while (sum > 100) sum /= 2;
    switch ((int)sum) {
        case 0: case 1: a[1] = sum > 0 ? 1 : 2; break;
        case 2: { int t = 3; a[1] = t; } break;
        default: break;
    }
    ;;
    if (n) {} else {}
    for (;;) { break; }
    goto end;
end:
    a[2] = sum;
}
""",
    "typedefs_aliases": r"""
typedef float (*BinOp)(float, float);
using Fn = float (*)(float);
typedef unsigned int uint_t, *uint_ptr;
__device__ float add(float a, float b) { return a + b; }
__device__ float neg(float a) { return -a; }
__device__ BinOp ops[1] = {add};
__global__ void k(float* y) {
    BinOp op = add;
    Fn f = neg;
    uint_t u = 3; uint_ptr pu = &u;
    typedef int local_int;
    using local_float = float;
    local_int li = 2; local_float lf = 1.5f;
    float (*arr_of_fp[2])(float) = {neg, neg};
    y[0] = op(1, 2) + f(3) + *pu + li + lf + arr_of_fp[1](2.0f) + ops[0](1, 1);
}
""",
    "anonymous_unions_enums": r"""
enum class Color : int { Red, Green, Blue };
enum Plain { A = 1, B = A + 1, C };
struct Flags { unsigned a : 1; unsigned b : 3; };
typedef struct Node { struct Node* next; int v; } Node;
__global__ void k(int* out) {
    union { float f; int i; } u;
    u.f = 1.0f;
    union { float f2; int i2; };
    f2 = 2.0f;
    Color c = Color::Green;
    Flags fl = {1, 5};
    Node n1 = {nullptr, 3};
    Node* head = &n1;
    switch (c) { case Color::Red: out[0] = 1; break; default: out[0] = i2 + u.i + fl.b + head->v + B + C; }
    enum { LOCAL_X = 7 };
    out[1] = LOCAL_X;
}
""",
    "templates_adv": r"""
template <typename T> struct Box { T value; __device__ T get() const { return value; } };
template <typename T, int N = 4> struct Arr { T data[N]; };
template <template <typename> class W, typename T> __device__ T unwrap(const W<T>& w) { return w.get(); }
template <typename... Ts> __device__ int count_args(Ts... ts) { return sizeof...(Ts); }
template <typename... Ts> __device__ float sum_all(Ts... ts) { return (ts + ... + 0.0f); }
template <typename T> __device__ T twice(T x) { return x * 2; }
template <> __device__ float twice<float>(float x) { return x + x; }
template <typename T> struct Traits { using value_type = T; static constexpr int size = sizeof(T); };
template <typename T> __device__ typename Traits<T>::value_type first(const T* p) { return p[0]; }
__device__ auto square(float x) { return x * x; }
__device__ auto cube(float x) -> float { return x * x * x; }
template <bool B> __device__ int pick() { if constexpr (B) return 1; else return 2; }
__global__ void k(float* y) {
    Box<float> b{2.0f};
    Arr<int> a{};
    Box<Box<int>> nested{};
    Arr<float, (3 > 1) ? 2 : 1> small{};
    y[0] = unwrap(b) + count_args(1, 2, 3) + sum_all(1.0f, 2.0f) + twice(1.0f) + twice<int>(2)
         + first(y) + square(2) + cube(2) + pick<true>() + a.data[0] + nested.value.value + small.data[0]
         + Traits<double>::size;
}
""",
    "lambdas_adv": r"""
__global__ void k(float* y, int n) {
    const float scale = 2.0f;
    auto by_value = [=](float v) { return v * scale; };
    auto by_ref = [&](int i) mutable { y[i] *= scale; };
    auto init_capture = [s = scale, t{3}](float v) { return v * s + t; };
    auto generic = [](auto v) { return v + v; };
    auto no_params = [] { return 1; };
    auto nested = [&](int i) { auto inner = [i](int j) { return i + j; }; return inner(1); };
    float r = [&]{ return y[0]; }();
    by_ref(0);
    int total = 0;
    auto acc = [&total](int v) -> void { total += v; };
    acc(nested(2));
    y[1] = by_value(1) + init_capture(2) + generic(3) + no_params() + r + total;
}
""",
    "macro_tricks": r"""
#define FOR(i, n) for (int i = 0; i < (n); ++i)
#define SWAP(a, b) do { auto tmp_ = (a); (a) = (b); (b) = tmp_; } while (0)
#define STR(x) #x
#define N 4 // a comment after a macro
#define LONG_MACRO(x) \
    ((x) * 2 + \
     1)
#define DECLARE_ACC(name) float name = 0.0f
#define UNROLL _Pragma("unroll")
__global__ void k(float* y) {
    DECLARE_ACC(acc);
    FOR(k, N) { acc += k; }
    float a = 1, b = 2;
    SWAP(a, b);
    UNROLL
    for (int i = 0; i < 4; ++i) acc += i;
#define LOCAL_SCALE 3.0f
    const char* s = STR(hello world);
    y[0] = acc * LOCAL_SCALE + LONG_MACRO(a) + b + s[0];
#undef LOCAL_SCALE
}
""",
    "token_paste": r"""
#define CAT(a, b) a##b
#define MAKE_VAR(n) float CAT(var_, n) = n
__global__ void k(float* y) {
    MAKE_VAR(1);
    y[0] = var_1;
}
""",
    "classes": r"""
struct Vec2 {
    float x, y;
    __device__ Vec2() : x(0), y{0} {}
    __device__ Vec2(float a, float b) : x(a), y(b) {}
    __device__ Vec2 operator+(const Vec2& o) const { return Vec2(x + o.x, y + o.y); }
    __device__ float operator[](int i) const { return i ? y : x; }
    __device__ float norm() const;
    __device__ explicit operator float() const { return x + y; }
    static __device__ Vec2 zero() { return Vec2(); }
    friend __device__ float dot(const Vec2& a, const Vec2& b) { return a.x * b.x + a.y * b.y; }
    __device__ float later() const { return helper_value; }
    float helper_value = 1.0f;
};
__device__ float Vec2::norm() const { return sqrtf(x * x + y * y); }
struct Counter { static constexpr int start = 5; int v = start; __device__ void bump() { this->v++; } };
class Scaler {
  public:
    __device__ explicit Scaler(float s) : s_(s) {}
    __device__ float operator()(float v) const { return v * s_; }
  private:
    float s_;
};
struct Base { int b = 1; };
struct Derived : public Base { __device__ int get() { return b + 1; } };
__global__ void k(float* out) {
    Vec2 a(1, 2), b = Vec2::zero();
    Vec2 c = a + b;
    Counter cnt; cnt.bump();
    Scaler sc(2.0f);
    Derived d;
    out[0] = c[1] + c.norm() + dot(a, b) + (float)c + cnt.v + sc(3.0f) + d.get() + a.later();
}
""",
    "statements_odd": r"""
__device__ int g;
__global__ void k(int* p, float* f) {
    *p = 1;
    ++*p;
    (*p)++;
    --p[0];
    ::atomicAdd(p, 1);
    p[0] and_eq 3;
    if (auto q = p; q != nullptr) *q += 1;
    switch (int z = *p; z) { case 1: break; default: g = z; }
    int* heap = new int[4];
    delete[] heap;
    float arr[3] = {1, 2, 3};
    for (float v : arr) f[0] += v;
    for (auto& v : arr) v = 0;
    int x = 1;
    { int x = 2; f[1] = x; }
    { float x = 3; f[2] = x; }
    (x > 0 ? f[0] : f[1]) = 5;
    f[3] = (float)(x) / 2;
    f[4] = (int)floorf(1.5f);
    static_assert(sizeof(float) == 4, "float must be 4 bytes; really");
    __threadfence();
    int old = atomicCAS(p, 0, 1);
    asm volatile("" ::: "memory");
    asm("membar.gl;");
    volatile float* vf = f;
    vf[0] += vf[1];
    f[5] = old + __syncthreads_or(x);
    alignas(16) float buf[4];
    [[maybe_unused]] int unused = 0;
    int attr_var __attribute__((unused)) = 0;
    buf[0] = 1;
    f[6] = buf[0];
}
""",
    "extern_c_block": r"""
extern "C" {
__device__ float helper(float x) { return x * 2; }
__global__ void k1(float* y) { y[0] = helper(1); }
}
namespace outer::inner { __device__ int value() { return 3; } }
namespace outer { namespace more { constexpr float pi = 3.14f; } }
namespace cg_alias = outer::inner;
using namespace outer;
__global__ void k2(float* y) { y[0] = cg_alias::value() + more::pi + outer::inner::value(); }
""",
    "printf_strings": r"""
#include <cstdio>
__global__ void k(const float* x) {
    printf("thread %d: value %f; brace } paren ) bracket ] quote \" done\n", threadIdx.x, x[threadIdx.x]);
    printf(R"(raw "string" with ; and })" "\n");
    printf("%s\n", "concatenated " "strings");
    const char* u = u8"unicode \u00e9 é";
    printf("%c %s\n", 'x', u);
}
""",
    "compound_literal": r"""
__global__ void k(float2* out) {
    out[0] = (float2){1.0f, 2.0f};
    float2 v = (float2){3.0f, 4.0f};
    out[1] = v;
}
""",
    "fp_bf16_coop": r"""
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdint>
#include <cfloat>
#include <climits>
#include <math_constants.h>
namespace cg = cooperative_groups;
__global__ void k(const __nv_bfloat16* x, float* y) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float v = __bfloat162float(x[block.thread_rank()]);
    v = cg::reduce(warp, v, cg::plus<float>());
    uint32_t u = 0; int64_t w = INT64_MAX; uint8_t small = UINT8_MAX;
    nv_bfloat16 b = __float2bfloat16(1.0f);
    if (warp.thread_rank() == 0) y[blockIdx.x] = v + FLT_MAX * 0 + u + (w > 0) + small + CUDART_PI_F + INT_MAX * 0 + __bfloat162float(b);
}
""",
    "wmma": r"""
#include <mma.h>
using namespace nvcuda;
__global__ void k(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
""",
    "cub": r"""
#include <cub/cub.cuh>
__global__ void k(const float* in, float* out) {
    using BlockReduce = cub::BlockReduce<float, 128>;
    __shared__ typename BlockReduce::TempStorage temp;
    float v = in[threadIdx.x];
    float total = BlockReduce(temp).Sum(v);
    if (threadIdx.x == 0) out[0] = total;
}
""",
    "lexical": r"""
// a comment ending with a backslash continues \
   onto this line, which is still a comment { ( [
#define A_MACRO 1 /* a block comment in a directive
   spanning lines */ + 1
__global__ void k(float* y /* param comment */, int n) // trailing
{
    const char* s = "line \
continued";
    int big = 1'000;
    float h = 0x1.8p3f;
    char c1 = '"', c2 = '\\', c3 = '\x41';
    y[0] = s[0] + big + h + c1 + c2 + c3 + A_MACRO; /* } */ // }
    y[1] = n ? 1 : 0; y[2] = 3;
}
""",
    "pointer_forms": r"""
__device__ float load(int const* p, float* __restrict__ const q, const float* const* pp) { return *p + *q + **pp; }
__global__ void k(float* y) {
    int v = 1;
    int const* p = &v;
    float f = 2;
    float* const q = &f;
    const float* arr[1] = {&f};
    y[0] = load(p, q, arr);
    unsigned lane = threadIdx.x & 31u;
    auto w = lane * 2u;
    auto* yp = y;
    decltype(w) w2 = w;
    yp[1] = w + w2 + __shfl_sync(0xffffffffu, f, 0) + min(1, 2) + max(3.0f, 4.0f) + umin(lane, 3u);
}
""",
    "struct_methods_kernel": r"""
struct RowRange {
    int begin, end;
    __device__ int length() const { return end - begin; }
    __device__ bool empty() const { return length() == 0; }
};
__device__ RowRange range_of(const int* row_ptr, int r) { return {row_ptr[r], row_ptr[r + 1]}; }
__global__ void k(const int* row_ptr, float* y, int m) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= m) return;
    RowRange range = range_of(row_ptr, r);
    y[r] = range.empty() ? 0.0f : (float)range.length();
}
""",
    "static_locals_and_const": r"""
__device__ const float kTable[4] = {1, 2, 3, 4};
constexpr int kWarp = 32;
static constexpr float kScale = 0.5f;
__device__ __constant__ int kOffsets[2];
__global__ void k(float* y) {
    constexpr int kLocal = kWarp / 2;
    const int lane = threadIdx.x % kWarp;
    y[lane] = kTable[lane & 3] * kScale + kLocal + kOffsets[0];
}
""",
    "goto_cleanup": r"""
__global__ void k(int* out, int n) {
    int i = 0;
retry:
    if (i < n) { i++; goto retry; }
    out[0] = i;
    if (n < 0) goto fail;
    return;
fail:
    out[0] = -1;
}
""",
    "sizeof_alignof_casts": r"""
__global__ void k(char* buf, int n) {
    float* f = (float*)buf;
    const float4* v4 = (const float4*)(buf + 16);
    double d = (double)f[0] / (double)sizeof(float4);
    long long ll = (long long)n << 3;
    unsigned int u = static_cast<unsigned int>(ll);
    size_t s = sizeof(int) * n + alignof(double) + sizeof f + sizeof(*v4);
    f[1] = d + u + s + reinterpret_cast<const float*>(v4)[0] + (int)'a';
}
""",
    "bitwise_ops": r"""
__global__ void k(unsigned* y, unsigned mask) {
    unsigned v = y[0];
    v ^= mask; v |= 1u << 3; v &= ~0xFu; v <<= 1; v >>= 2;
    y[0] = (v & mask) | (~v ^ mask) + (v % 7) - (v / 3) + __popc(v) + __clz(v) + __brev(v) + __ffs(v);
    bool z = !v && (mask || v != 0) && v >= 1 && v <= 2 && v < 3 && v > 0;
    y[1] = z;
}
""",
    "dynamic_smem_template": r"""
template <typename T>
__device__ T* shared_memory() { extern __shared__ unsigned char raw[]; return reinterpret_cast<T*>(raw); }
__global__ void k(float* y) {
    float* s = shared_memory<float>();
    s[threadIdx.x] = y[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}
""",
    "vector_types": r"""
__global__ void k(float4* out, const int2* idx, const double2* d, const uchar4* c) {
    int t = threadIdx.x;
    int2 i2 = idx[t];
    double2 dd = d[t];
    uchar4 cc = c[t];
    short2 s2 = make_short2(1, 2);
    longlong2 l2 = make_longlong2(3, 4);
    ulong1 u1 = make_ulong1(5);
    char3 c3 = make_char3(1, 2, 3);
    out[t] = make_float4(i2.x, dd.y, cc.z, s2.x + l2.y + u1.x + c3.z);
}
""",
    "atomics_and_sync": r"""
__global__ void k(int* c, float* f, unsigned long long* u, double* d) {
    atomicAdd(c, 1); atomicSub(c, 1); atomicExch(c, 2); atomicMin(c, 0); atomicMax(c, 5);
    atomicInc((unsigned*)c, 10u); atomicDec((unsigned*)c, 10u); atomicCAS(c, 1, 2); atomicAnd(c, 3); atomicOr(c, 4); atomicXor(c, 5);
    atomicAdd(f, 1.0f); atomicAdd(u, 1ull); atomicAdd(d, 1.0); atomicAdd_block(c, 1); atomicAdd_system(c, 1);
    __syncthreads(); __syncwarp(); __threadfence(); __threadfence_block(); __threadfence_system();
    unsigned m = __activemask();
    int all = __all_sync(m, 1), any = __any_sync(m, 0);
    unsigned b = __ballot_sync(m, 1);
    float v = __shfl_up_sync(m, 1.0f, 1) + __shfl_down_sync(m, 1.0f, 1) + __shfl_xor_sync(m, 1.0f, 1) + __shfl_sync(m, 1.0f, 0, 16);
    int r = __reduce_add_sync(m, 1) + __match_any_sync(m, 3);
    f[0] = v + all + any + b + r + __ldg(f) + __ldcg(f) + __ldcs(f) + __ldlu(f) + __ldca(f);
    __stcg(f, 1.0f); __stcs(f, 1.0f); __stwb(f, 1.0f); __stwt(f, 1.0f);
    long long t = clock64(); unsigned t2 = clock();
    __nanosleep(10);
    f[1] = t + t2;
}
""",
    "template_comma_split": r"""
template <typename A, typename B> __device__ A convert(B b) { return (A)b; }
__global__ void k(float* y, int n) {
    const int a = static_cast<int>(y[0]), b = a + 1;
    float c = convert<float, int>(n), d = c * 2;
    bool lt = a < b, gt = a > b;
    y[0] = a + b + c + d + lt + gt;
}
""",
    "macro_head_init": r"""
#define ARR(name, n) float name[n] =
#define LOOP(i, n) for (int i = 0; i < (n); ++i)
__global__ void k(float* y) {
    ARR(values, 3) {1.0f, 2.0f, 3.0f};
    LOOP(j, 3) { y[j] = values[j]; }
    LOOP(q, 2) y[q] += 1;
}
""",
    "decltype_lambda": r"""
__global__ void k(int* y) {
    auto id = [](int a) -> decltype(a) { int b = a; return b; };
    auto tr = [](int a) -> int { return a; };
    y[0] = id(1) + tr(2);
}
""",
    "adl_namespace": r"""
namespace ns {
    struct T { int v; };
    __device__ int f(T t) { return t.v; }
}
__global__ void k(int* y) { ns::T t{3}; y[0] = f(t); }
""",
    "operator_keywords_vars": r"""
__global__ void k(int* y) {
    int final = 1, override = 2, module = 3, import = 4, concept_x = 5;
    y[0] = final + override + module + import + concept_x;
}
""",
    "struct_init_lambda_in_init": r"""
struct Op { int (*fn)(int); int arg; };
__device__ int inc(int a) { return a + 1; }
__global__ void k(int* y) {
    Op ops[2] = {{inc, 1}, {inc, 2}};
    int r = [&]() { int s = 0; for (auto& o : ops) s += o.fn(o.arg); return s; }();
    y[0] = r;
}
""",
    "while_with_decl_and_do": r"""
__global__ void k(int* y, int n) {
    int i = 0;
    do i++; while (i < n);
    while (int j = i--) { y[0] += j; if (j < 2) break; }
    switch (n) { case 1: { y[0] = 1; } case 2: y[0] = 2; break; }
}
""",
}

VALID_PROGRAMS = {
    **{f"abi_{name}": source for name, source in ABI_PROGRAMS.items()},
    **OTHER_PROGRAMS,
}


# ---------------------------------------------------------------------------- broken programs

CSR = ABI_PROGRAMS["csr_vector"]


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


# Broken variants of CSR that nvcc rejects: (source, whether streaming must stop it early).
BROKEN = {
    "deleted_semicolon": (edit(CSR, "float sum = 0.0f;", "float sum = 0.0f"), True),
    "deleted_loop_brace": (
        edit(CSR, "__ldg(&x[col_idx[k]]);\n    }", "__ldg(&x[col_idx[k]]);\n"),
        False,
    ),
    "extra_closing_brace": (edit(CSR, "if (row >= m) return;", "if (row >= m) return; }"), True),
    "unbalanced_paren": (edit(CSR, "if (row >= m) return;", "if (row >= m return;"), True),
    "misspelled_name": (edit(CSR, "sum += values[k]", "sum += valeus[k]"), True),
    "undeclared_name": (edit(CSR, "y[row] = sum;", "y[row] = sum * scale;"), True),
    "used_out_of_scope": (edit(CSR, "y[row] = sum;", "y[row] = sum + k;"), True),
    "conflicting_redeclaration": (
        edit(CSR, "float sum = 0.0f;", "float sum = 0.0f; int sum = 0;"),
        True,
    ),
    "missing_operator": (edit(CSR, "threadIdx.x & 31;", "threadIdx.x 31;"), True),
    "misspelled_builtin": (edit(CSR, "__shfl_down_sync(", "__shfl_dwn_sync("), True),
    "unknown_type": (edit(CSR, "float sum = 0.0f;", "flaot sum = 0.0f;"), True),
}

# Variants that compile but break the ABI: (source, whether streaming must stop it early).
ABI_BROKEN = {
    "bad_header_format": (edit(CSR, "format: csr", "format: csc"), True),
    "entry_parameter_type": (edit(CSR, "int m, int n, int nnz", "int m, int n, float nnz"), True),
    "entry_missing_parameter": (edit(CSR, "int m, int n, int nnz", "int m, int n"), True),
    "entry_without_c_linkage": (edit(CSR, 'extern "C" __global__', "__global__"), True),
    "entry_renamed": (edit(CSR, "sparserl_kernel(", "sparserl_kernal("), False),
}


def random_mutants(count: int, seed: int) -> list[str]:
    """Seeded random damage to the ABI programs' code: delete one bracket or ';', swap two
    letters of a word, or delete a whole line. Some of these still compile; none of those
    may be rejected."""
    rng = random.Random(seed)
    mutants = []
    while len(mutants) < count:
        source = rng.choice(list(ABI_PROGRAMS.values()))
        code = source.index("*/") + 2
        damage = rng.randrange(3)
        if damage == 0:
            spot = code + rng.choice([m.start() for m in re.finditer(r"[;{}()]", source[code:])])
            mutants.append(source[:spot] + source[spot + 1 :])
        elif damage == 1:
            word = rng.choice(list(re.finditer(r"\b[a-z_]\w{3,}\b", source[code:])))
            at = code + word.start() + 1
            mutants.append(source[:at] + source[at + 1] + source[at] + source[at + 2 :])
        else:
            lines = source[code:].split("\n")
            del lines[rng.randrange(len(lines))]
            mutants.append(source[:code] + "\n".join(lines))
    return mutants


RANDOM_MUTANTS = random_mutants(24, seed=1234)


@pytest.fixture(scope="module")
def compiled() -> dict[str, CompileResult]:
    """nvcc's verdict on every program the tests use, compiled once, two at a time."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    sources = list(VALID_PROGRAMS.values())
    sources += [source for source, _ in BROKEN.values()] + [
        source for source, _ in ABI_BROKEN.values()
    ]
    sources += RANDOM_MUTANTS
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(sources, pool.map(compile_check, sources), strict=True))


# ---------------------------------------------------------------------------- valid programs


@needs_nvcc
@pytest.mark.parametrize("name", list(VALID_PROGRAMS))
def test_valid_programs_compile(compiled, name):
    result = compiled[VALID_PROGRAMS[name]]
    assert result.ok, result.log


@pytest.mark.parametrize("name", list(VALID_PROGRAMS))
def test_checker_accepts_valid_programs(name):
    verdict = check(VALID_PROGRAMS[name], require_abi=False)
    assert verdict.ok, verdict


@pytest.mark.parametrize("name", list(ABI_PROGRAMS))
def test_abi_programs_meet_the_abi(name):
    assert check(ABI_PROGRAMS[name], require_abi=True).ok


def test_require_abi_rejects_a_program_without_header():
    verdict = check(OTHER_PROGRAMS["control_flow"], require_abi=True)
    assert not verdict.ok and "header" in verdict.reason


# ---------------------------------------------------------------------------- broken programs


@needs_nvcc
@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_programs_are_rejected(compiled, name):
    source, stops_early = BROKEN[name]
    assert not compiled[source].ok  # the variant is really broken
    verdict = check(source, require_abi=False)
    assert not verdict.ok
    if stops_early:
        assert verdict.stopped_at < len(source)


@needs_nvcc
@pytest.mark.parametrize("name", list(ABI_BROKEN))
def test_abi_breaks_are_rejected_only_with_require_abi(compiled, name):
    source, stops_early = ABI_BROKEN[name]
    assert compiled[source].ok  # valid CUDA ...
    assert check(source, require_abi=False).ok
    verdict = check(source, require_abi=True)  # ... but not a valid sparserl kernel
    assert not verdict.ok and "ABI" in verdict.reason
    if stops_early:
        assert verdict.stopped_at < len(source)


@needs_nvcc
def test_random_mutants_never_rejected_when_nvcc_accepts(compiled):
    accepted_by_nvcc = 0
    for source in RANDOM_MUTANTS:
        verdict = check(source, require_abi=False)
        if compiled[source].ok:
            accepted_by_nvcc += 1
            assert verdict.ok, verdict
    assert 0 < accepted_by_nvcc < len(RANDOM_MUTANTS)  # the sample holds both kinds


def test_reason_points_at_the_offending_token():
    source, _ = BROKEN["misspelled_name"]
    verdict = check(source, require_abi=False)
    assert "valeus" in verdict.reason
    assert source[verdict.position : verdict.position + len("valeus")] == "valeus"
    assert verdict.line == source[: verdict.position].count("\n") + 1


# ---------------------------------------------------------------------------- streaming


def feed_in_chunks(source: str, require_abi: bool, rng: random.Random | None) -> SyntaxVerdict:
    """Feed `source` one character at a time (rng None) or in random chunks; finish."""
    checker = StreamingChecker(require_abi=require_abi)
    position = 0
    while position < len(source):
        step = 1 if rng is None else rng.randint(1, 9)
        checker.feed(source[position : position + step])
        position += step
    return checker.finish()


STREAMED = {
    **VALID_PROGRAMS,
    **{name: source for name, (source, _) in {**BROKEN, **ABI_BROKEN}.items()},
}


@pytest.mark.parametrize("name", list(STREAMED))
def test_streaming_gives_the_verdict_of_the_whole_text(name):
    source = STREAMED[name]
    for require_abi in (False, True):
        whole = check(source, require_abi=require_abi)
        assert feed_in_chunks(source, require_abi, None) == whole
        assert feed_in_chunks(source, require_abi, random.Random(name)) == whole


def test_doomed_stream_stops_before_its_end_and_stays_doomed():
    source, _ = BROKEN["deleted_semicolon"]
    checker = StreamingChecker(require_abi=True)
    fed = 0
    verdict = None
    while verdict is None and fed < len(source):
        verdict = checker.feed(source[fed])
        fed += 1
    assert verdict is not None and not verdict.ok
    assert verdict.stopped_at <= fed < len(source)
    assert "for" in verdict.reason  # 'float sum = 0.0f for (...)'
    assert checker.feed("more text") is verdict
    assert checker.finish() is verdict


def test_header_error_is_found_when_the_header_closes():
    source, _ = ABI_BROKEN["bad_header_format"]
    header_end = source.index("*/") + 2
    checker = StreamingChecker(require_abi=True)
    assert checker.feed(source[: header_end - 1]) is None
    verdict = checker.feed(source[header_end - 1 : header_end])
    assert verdict is not None and "csc" in verdict.reason and verdict.stopped_at == header_end


def test_entry_signature_error_is_found_at_the_kernel_body():
    source, _ = ABI_BROKEN["entry_parameter_type"]
    body = source.index("{", source.index("sparserl_kernel("))
    checker = StreamingChecker(require_abi=True)
    assert checker.feed(source[:body]) is None
    verdict = checker.feed(source[body:])
    assert verdict is not None and verdict.stopped_at == body + 1


def test_unfinished_program_is_not_doomed_until_finished():
    prefix = CSR[: CSR.index("sum = warp_sum(sum);")]
    checker = StreamingChecker(require_abi=True)
    assert checker.feed(prefix) is None
    verdict = checker.finish()
    assert not verdict.ok and "never closed" in verdict.reason


def test_lexer_tokens_do_not_depend_on_chunking():
    text = CSR + OTHER_PROGRAMS["lexical"] + OTHER_PROGRAMS["printf_strings"] + "/* open"

    def tokens(chunks):
        lexer = Lexer()
        return [t for chunk in chunks for t in lexer.feed(chunk)] + lexer.finish()

    whole = tokens([text])
    assert tokens(list(text)) == whole
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(text)), 200))
    assert tokens([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]) == whole
    assert whole[-1].kind == "bad"  # the unterminated comment


# ---------------------------------------------------------------------------- names and headers


@needs_nvcc
def test_stored_builtin_names_are_declared_by_nvcc():
    """A seeded sample of the stored always-present names: nvcc must know every one."""
    names = sorted(name for name, kind in builtin_kinds().items() if kind != "macro")
    sample = random.Random(3).sample(names, 300) + [
        "threadIdx",
        "__shfl_down_sync",
        "float4",
        "atomicAdd",
    ]
    probe = "void probe() {\n" + "".join(f"{name};\n" for name in sample) + "}\n"
    result = compile_check(probe)
    assert not re.findall(r'identifier "(\w+)" is undefined', result.log)


@needs_nvcc
def test_a_header_name_needs_its_header():
    without = "__global__ void k(float* y) { half h = 1.0f; y[0] = h; }\n"
    with_header = "#include <cuda_fp16.h>\n" + without
    assert not compile_check(without).ok and not check(without, require_abi=False).ok
    assert compile_check(with_header).ok and check(with_header, require_abi=False).ok


# ---------------------------------------------------------------------------- extraction


def test_extract_code_takes_the_fenced_kernel():
    answer = (
        f"Here is a kernel:\n```cpp\nint helper;\n```\nand the real one:\n```cuda\n{CSR}```\nDone."
    )
    assert extract_code(answer) == CSR.strip()


def test_extract_code_takes_the_first_block_without_the_entry():
    assert extract_code("text\n```\nint a;\n```\n```\nint b;\n```") == "int a;"


def test_extract_code_without_fences_starts_at_the_header():
    assert extract_code(f"Sure! {CSR}\n") == CSR.strip()
    assert extract_code("  int x;  \n") == "int x;"


def test_extract_code_keeps_a_block_cut_off_by_the_length_limit():
    assert extract_code(f"```cuda\n{CSR[:200]}") == CSR[:200].strip()
