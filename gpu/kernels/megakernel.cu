// The fused Winograd megakernel (paper section 6, Listing 2).
//
// One launch of num_tasks blocks. Thread 0 draws a logical block index from
// an atomic ticket (blocks start out of blockIdx order on Hopper, so a raw
// blockIdx can leave a child resident and spinning while its parent waits
// for a free slot; MS_USE_TICKET=0 keeps that mode for comparison), reads
// its task row, and spins with acquire loads until every counter it waits on
// reaches zero. The spin is bounded: past MS_SPIN_LIMIT_NS of %globaltimer
// the block records itself in the control words and exits, and every later
// block sees the flag and exits at once, so a bad mapping never hangs the GPU.
// After its work, every thread fences its writes, the block synchronises,
// and thread 0 decrements the counter the task signals.
//
// MS_PERSISTENT=1 builds the persistent mode (megasim.contract.scheduling): the grid is what fits on
// the GPU at once, and each block loops over tickets until they pass MS_NUM_TASKS, so only the first
// wave pays a block launch. The host refuses a grid larger than the co-resident capacity: a block
// waiting on a parent that has no slot to run in would otherwise wait forever.
//
// ctl layout (int32): [0] ticket, [1] error flag, [2] logical block, [3] task,
// [4] counter it waited on, [5] that counter's value, [6..31] spare; then
// dependency counter i at [32 + 32 i]: one 128-byte line per counter, so the
// polls of spinning blocks do not share a line with the ticket or with each
// other (on the H200 this measured within noise of the packed layout).
#include "winograd.cuh"

#ifndef MS_USE_TICKET
#define MS_USE_TICKET 1
#endif
#ifndef MS_TRACE
#define MS_TRACE 0
#endif
#ifndef MS_SPIN_LIMIT_NS
#define MS_SPIN_LIMIT_NS 2000000000ull
#endif
#ifndef MS_PERSISTENT
#define MS_PERSISTENT 0
#endif
#define MS_CTL_COUNTERS 32
#define MS_CTL_STRIDE 32

__device__ __forceinline__ unsigned long long ms_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ int ms_smid() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return (int)s;
}

__device__ __forceinline__ int ms_load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Returns false when the wait timed out or another block already failed.
// The sleep between polls doubles up to 1 us: hundreds of resident blocks can
// be waiting at once (on the filter prefix, say), and each poll is an L2 access.
__device__ __forceinline__ bool ms_wait(int* ctl, int counter, int block, int task) {
    if (counter == MS_NO_COUNTER) return true;
    const int* cnt = ctl + MS_CTL_COUNTERS + MS_CTL_STRIDE * counter;
    const unsigned long long t0 = ms_globaltimer();
    unsigned sleep_ns = 32;
    int v;
    while ((v = ms_load_acquire(cnt)) > 0) {
        if (ms_load_acquire(ctl + 1) != 0) return false;
        if (ms_globaltimer() - t0 > MS_SPIN_LIMIT_NS) {
            if (atomicCAS(ctl + 1, 0, 1) == 0) {
                ctl[2] = block; ctl[3] = task; ctl[4] = counter; ctl[5] = v;
                __threadfence();
            }
            return false;
        }
        __nanosleep(sleep_ns);
        sleep_ns = sleep_ns < 1024 ? 2 * sleep_ns : 1024;
    }
    return true;
}

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_megakernel(const float* __restrict__ x, const float* __restrict__ w, float* U, float* V, float* Mb,
              float* __restrict__ y, const int4* __restrict__ task_map, int* ctl, unsigned long long* trace) {
    __shared__ int s_task[MS_WORDS_PER_TASK];
    __shared__ int s_block, s_go;
#if MS_PERSISTENT
    for (;;) {
#endif
    if (threadIdx.x == 0) {
#if MS_TRACE
        const unsigned long long t_start = ms_globaltimer();
#endif
        const int block = MS_USE_TICKET ? atomicAdd(ctl, 1) : (int)blockIdx.x;
        int go = block < MS_NUM_TASKS && ms_load_acquire(ctl + 1) == 0;
        if (go) {
            const int4 lo = task_map[2 * block], hi = task_map[2 * block + 1];
            const int words[MS_WORDS_PER_TASK] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            go = go && ms_wait(ctl, words[MS_WORD_WAIT0], block, words[MS_WORD_TASK]);
            go = go && ms_wait(ctl, words[MS_WORD_WAIT1], block, words[MS_WORD_TASK]);
            __threadfence();
#pragma unroll
            for (int i = 0; i < MS_WORDS_PER_TASK; ++i) s_task[i] = words[i];
#if MS_TRACE
            trace[4 * block + 0] = ((unsigned long long)ms_smid() << 32) | (unsigned int)words[MS_WORD_TASK];
            trace[4 * block + 1] = t_start;
            trace[4 * block + 2] = ms_globaltimer();
#endif
        }
        s_block = block;
        s_go = go;
    }
    __syncthreads();
    if (!s_go) return;
    const int group = s_task[MS_WORD_GROUP], index = s_task[MS_WORD_INDEX];
    switch (s_task[MS_WORD_OP]) {
        case MS_OP_FILTER_TRANSFORM: ms_filter_task(w, U, index); break;
        case MS_OP_INPUT_TRANSFORM: ms_input_task(x, V, group, index); break;
        case MS_OP_GEMM: ms_gemm_task(U, V, Mb, group, index); break;
        case MS_OP_OUTPUT_TRANSFORM: ms_output_task(Mb, y, group, index); break;
        default: break;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const int signal = s_task[MS_WORD_SIGNAL];
        if (signal != MS_NO_COUNTER) atomicSub(ctl + MS_CTL_COUNTERS + MS_CTL_STRIDE * signal, 1);
#if MS_TRACE
        trace[4 * s_block + 3] = ms_globaltimer();
#endif
    }
#if MS_PERSISTENT
    }
#endif
}
