// Trace builds of the four non-fused kernels: the task bodies of nonfused.cu,
// with thread 0 of each block writing what the megakernel's trace build writes
// (megakernel.cu, MS_TRACE): word 0 is %smid << 32 | task id, words 1 and 2
// the start (a non-fused block never waits, so ready = start), word 3 the end,
// after every thread of the block is done. `base` is the stage's first task id
// (the TaskGraph numbers tasks stage after stage), so one buffer of
// 4 x num_tasks words holds all four kernels.
//
// Compiled only into the non-fused trace module (gpu/nonfused.py), never into
// a timed build, so kernel_build_hash leaves this file out.
#include "winograd.cuh"
#include "clock.cuh"

__device__ __forceinline__ void mt_record(unsigned long long* trace, int task, unsigned long long t0) {
    __syncthreads();
    if (threadIdx.x == 0) {
        trace[4 * task + 0] = ((unsigned long long)ms_smid() << 32) | (unsigned int)task;
        trace[4 * task + 1] = t0;
        trace[4 * task + 2] = t0;
        trace[4 * task + 3] = ms_globaltimer();
    }
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_filter_kernel_trace(const float* __restrict__ w, float* U, unsigned long long* trace, int base) {
    const unsigned long long t0 = ms_globaltimer();
    ms_filter_task(w, U, blockIdx.x);
    mt_record(trace, base + blockIdx.x, t0);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_input_kernel_trace(const float* __restrict__ x, float* V, unsigned long long* trace, int base) {
    const unsigned long long t0 = ms_globaltimer();
    ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI);
    mt_record(trace, base + blockIdx.x, t0);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_gemm_kernel_trace(const float* U, const float* V, float* Mb, unsigned long long* trace, int base) {
    const unsigned long long t0 = ms_globaltimer();
    ms_gemm_task(U, V, Mb, blockIdx.x / MS_SG, blockIdx.x % MS_SG);
    mt_record(trace, base + blockIdx.x, t0);
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_output_kernel_trace(const float* Mb, float* __restrict__ y, unsigned long long* trace, int base) {
    const unsigned long long t0 = ms_globaltimer();
    ms_output_task(Mb, y, blockIdx.x / MS_SO, blockIdx.x % MS_SO);
    mt_record(trace, base + blockIdx.x, t0);
}
