// The non-fused baseline: the four stage device functions as four kernels,
// launched in order (or captured once into a CUDA graph). Block b of each
// kernel is task b of that stage in the TaskGraph's numbering.
#include "winograd.cuh"

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS) ms_filter_kernel(const float* __restrict__ w, float* U) {
    ms_filter_task(w, U, blockIdx.x);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS) ms_input_kernel(const float* __restrict__ x, float* V) {
    ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS) ms_gemm_kernel(const float* U, const float* V, float* Mb) {
    ms_gemm_task(U, V, Mb, blockIdx.x / MS_SG, blockIdx.x % MS_SG);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS) ms_output_kernel(const float* Mb, float* __restrict__ y) {
    ms_output_task(Mb, y, blockIdx.x / MS_SO, blockIdx.x % MS_SO);
}
