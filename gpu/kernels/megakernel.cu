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
// MS_READY_QUEUE=1 (with MS_PERSISTENT=1) builds the ready-queue mode: no block ever waits on a counter.
// A block pops the next slot of a device FIFO (one atomic, so no two blocks contend for a slot) and
// waits, bounded, until a task is in it. The block that brings a counter to zero pushes, with all its
// threads, each waiter whose last unmet wait that was (a pending count per task), a warp's pushes in one
// atomic and in the waiters' order. Tasks that wait on nothing (roots) enter through a window: the host
// queues the first grid-size of them in mapping order, and each finishing root pushes the next one
// (megasim.contract.scheduling).
//
// The control words (ticket, error record, dependency counters, the ready queue's words) are laid out
// by megasim.contract.control, generated into ctl_layout.cuh.
//
// MS_SELF_RESET=1 builds need no reset copy before each launch: every block counts itself out in
// MS_CTL_LEFT as it leaves, and the last one restores the header, the counters and the ready queue's words
// from the initial copy kept after them (at offset MS_CTL_INIT_AT), unless a block failed: then the words
// stay as they are, for the host to read and reset. One launch per convolution is what a host-bound caller wants.
#include "winograd.cuh"
#include "clock.cuh"
#include "ctl_layout.cuh"

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
#ifndef MS_READY_QUEUE
#define MS_READY_QUEUE 0
#endif
#ifndef MS_SELF_RESET
#define MS_SELF_RESET 0
#endif

__device__ __forceinline__ int ms_load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// The bounded wait, on a dependency counter (until it reaches zero) or, kSlot, on a FIFO slot (until a
// task is in it). Returns false when the wait timed out or another block already failed; the first
// block to time out raises the error flag and records the block, the task, what it waited on (`at`) and
// the counter's value, or for a slot the pushes so far. The sleep between polls doubles up to 1 us on a
// counter (hundreds of resident blocks can be waiting at once, on the filter prefix say, and each poll
// is an L2 access) and up to 256 ns on a slot.
template <bool kSlot>
__device__ __forceinline__ bool ms_bounded_wait(int* ctl, const int* p, int& v, int block, int task, int at) {
    const unsigned long long t0 = ms_globaltimer();
    unsigned sleep_ns = 32;
    while (v = ms_load_acquire(p), kSlot ? v < 0 : v > 0) {
        if (ms_load_acquire(ctl + MS_CTL_ERROR) != 0) return false;
        if (ms_globaltimer() - t0 > MS_SPIN_LIMIT_NS) {
            if (atomicCAS(ctl + MS_CTL_ERROR, 0, 1) == 0) {
                ctl[MS_CTL_ERROR_BLOCK] = block; ctl[MS_CTL_ERROR_TASK] = task; ctl[MS_CTL_ERROR_COUNTER] = at;
                ctl[MS_CTL_ERROR_VALUE] = kSlot ? ms_load_acquire(ctl + MS_CTL_PUSHED) : v;
                __threadfence();
            }
            return false;
        }
        __nanosleep(sleep_ns);
        const unsigned max_sleep_ns = kSlot ? 256 : 1024;
        sleep_ns = sleep_ns < max_sleep_ns ? 2 * sleep_ns : max_sleep_ns;
    }
    return true;
}

__device__ __forceinline__ bool ms_wait(int* ctl, int counter, int block, int task) {
    if (counter == MS_NO_COUNTER) return true;
    int v;
    return ms_bounded_wait<false>(ctl, ctl + MS_CTL_COUNTERS + MS_CTL_STRIDE * counter, v, block, task, counter);
}

#if MS_SELF_RESET
// The block leaves: the last block out restores the control words.
__device__ __forceinline__ void ms_leave(int* ctl) {
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        s_last = atomicAdd(ctl + MS_CTL_LEFT, 1) == (int)gridDim.x - 1 && ms_load_acquire(ctl + MS_CTL_ERROR) == 0;
    __syncthreads();
    if (s_last) {
        __threadfence();
        const int base = ctl[MS_CTL_INIT_AT], counters = ctl[MS_CTL_NUM_COUNTERS];
        const int tail = MS_CTL_COUNTERS + MS_CTL_STRIDE * counters;
        for (int i = threadIdx.x; i < MS_CTL_COUNTERS; i += MS_NT) ctl[i] = ctl[base + i];
        for (int i = threadIdx.x; i < counters; i += MS_NT)
            ctl[MS_CTL_COUNTERS + MS_CTL_STRIDE * i] = ctl[base + MS_CTL_COUNTERS + MS_CTL_STRIDE * i];
        for (int i = tail + threadIdx.x; i < base; i += MS_NT) ctl[i] = ctl[base + i];
    }
}
#endif

#if MS_READY_QUEUE
// The next FIFO slot's task, -1 when every task has been popped, -2 on a timeout or another block's error.
__device__ __forceinline__ int ms_pop(int* ctl) {
    const int i = atomicAdd(ctl + MS_CTL_TICKET, 1);
    if (i >= MS_NUM_TASKS) return -1;
    int b;
    return ms_bounded_wait<true>(ctl, ctl + ctl[MS_CTL_FIFO] + i, b, -1, -1, i) ? b : -2;
}

__device__ __forceinline__ void ms_push(int* ctl, int slot, int block) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(ctl + ctl[MS_CTL_FIFO] + slot), "r"(block) : "memory");
}

// A root finished: the next root enters the FIFO.
__device__ __forceinline__ void ms_push_next_root(int* ctl, const int* __restrict__ rq) {
    const int r = atomicAdd(ctl + MS_CTL_ROOTS_QUEUED, 1);
    if (r < ctl[MS_CTL_NUM_ROOTS]) ms_push(ctl, atomicAdd(ctl + MS_CTL_PUSHED, 1), rq[ctl[MS_CTL_ROOTS] + r]);
}

// Counter `counter` reached zero: every thread takes a share of its waiters, and those whose pending
// count this zeroes go to the queue. Each ready waiter's slot is published with a release store after
// an acquire fence, so its popper sees every parent's writes.
__device__ __forceinline__ void ms_push_waiters(int* ctl, const int* __restrict__ rq, int counter) {
    const int lo = rq[counter], hi = rq[counter + 1];
    const int* list = rq + ctl[MS_CTL_WAITERS];
    int* pending = ctl + ctl[MS_CTL_PENDING];
    const int lane = threadIdx.x & 31;
    for (int base = lo; base < hi; base += MS_NT) {
        const int i = base + threadIdx.x;
        int w = -1;
        bool ready = false;
        if (i < hi) {
            w = list[i];
            ready = atomicSub(pending + w, 1) == 1;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, ready);
        if (!mask) continue;
        const int leader = __ffs(mask) - 1;
        int slot = 0;
        if (lane == leader) slot = atomicAdd(ctl + MS_CTL_PUSHED, __popc(mask));
        slot = __shfl_sync(0xffffffffu, slot, leader) + __popc(mask & ((1u << lane) - 1));
        if (ready) {
            __threadfence();
            ms_push(ctl, slot, w);
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
ms_megakernel(const float* __restrict__ x, const float* __restrict__ w, float* U, float* V, float* Mb,
              float* __restrict__ y, const int4* __restrict__ task_map, int* ctl, unsigned long long* trace,
              const int* __restrict__ rq) {
    __shared__ int s_task[MS_WORDS_PER_TASK];
    __shared__ int s_block, s_go;
#if MS_READY_QUEUE
    __shared__ int s_zeroed;
#endif
#if MS_PERSISTENT
    for (;;) {
#endif
    if (threadIdx.x == 0) {
#if MS_TRACE
        const unsigned long long t_start = ms_globaltimer();
#endif
#if MS_READY_QUEUE
        const int block = ms_pop(ctl);
        int go = block >= 0 && ms_load_acquire(ctl + MS_CTL_ERROR) == 0;
#else
        const int block = MS_USE_TICKET ? atomicAdd(ctl + MS_CTL_TICKET, 1) : (int)blockIdx.x;
        int go = block < MS_NUM_TASKS && ms_load_acquire(ctl + MS_CTL_ERROR) == 0;
#endif
        if (go) {
            const int4 lo = task_map[2 * block], hi = task_map[2 * block + 1];
            const int words[MS_WORDS_PER_TASK] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#if !MS_READY_QUEUE
            go = go && ms_wait(ctl, words[MS_WORD_WAIT0], block, words[MS_WORD_TASK]);
            go = go && ms_wait(ctl, words[MS_WORD_WAIT1], block, words[MS_WORD_TASK]);
#endif
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
#if MS_SELF_RESET
    if (!s_go) {
        ms_leave(ctl);
        return;
    }
#else
    if (!s_go) return;
#endif
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
#if MS_READY_QUEUE
        int zeroed = -1;
        if (signal != MS_NO_COUNTER && atomicSub(ctl + MS_CTL_COUNTERS + MS_CTL_STRIDE * signal, 1) == 1) {
            __threadfence();
            zeroed = signal;
        }
        s_zeroed = zeroed;
#else
        if (signal != MS_NO_COUNTER) atomicSub(ctl + MS_CTL_COUNTERS + MS_CTL_STRIDE * signal, 1);
#endif
#if MS_TRACE
        trace[4 * s_block + 3] = ms_globaltimer();
#endif
    }
#if MS_READY_QUEUE
    __syncthreads();
    if (s_zeroed >= 0) ms_push_waiters(ctl, rq, s_zeroed);
    if (threadIdx.x == 0 && s_task[MS_WORD_WAIT0] == MS_NO_COUNTER && s_task[MS_WORD_WAIT1] == MS_NO_COUNTER)
        ms_push_next_root(ctl, rq);
#endif
#if MS_PERSISTENT
    }
#elif MS_SELF_RESET
    ms_leave(ctl);
#endif
}
