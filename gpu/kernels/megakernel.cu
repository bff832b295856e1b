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
// ctl layout (int32): [0] ticket (ready queue: FIFO pops), [1] error flag, [2] logical block, [3] task
// (-1: a FIFO slot stayed empty), [4] counter it waited on (or the slot), [5] that counter's value (or
// the push count), [6] blocks that left, [7] FIFO pushes, [8] offset of the FIFO, [9] of the pending counts, [10]
// of the waiter lists in rq (after the per-counter offsets), [11] of the roots in rq, [12] number of
// roots, [13] roots queued, [14] (self-resetting builds, as [6] and [15] are) offset of the initial words,
// [15] number of counters, [16..31] spare; then dependency counter i at [32 + 32 i]: one 128-byte line
// per counter, so the polls of spinning blocks do not share a line with the ticket or with each other
// (on the H200 this measured within noise of the packed layout); then, ready queue only, the FIFO and
// the pending counts.
//
// MS_SELF_RESET=1 builds need no reset copy before each launch: every block counts itself out in [6] as it
// leaves, and the last one restores the header, the counters and the ready queue's words from the initial
// copy kept after them (at offset [14]; [15] counters), unless a block failed: then the words stay as they
// are, for the host to read and reset. One launch per convolution is what a host-bound caller wants.
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
#ifndef MS_READY_QUEUE
#define MS_READY_QUEUE 0
#endif
#ifndef MS_SELF_RESET
#define MS_SELF_RESET 0
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

#if MS_SELF_RESET
// The block leaves: the last block out restores the control words.
__device__ __forceinline__ void ms_leave(int* ctl) {
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        s_last = atomicAdd(ctl + 6, 1) == (int)gridDim.x - 1 && ms_load_acquire(ctl + 1) == 0;
    __syncthreads();
    if (s_last) {
        __threadfence();
        const int base = ctl[14], counters = ctl[15], tail = MS_CTL_COUNTERS + MS_CTL_STRIDE * counters;
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
    const int i = atomicAdd(ctl, 1);
    if (i >= MS_NUM_TASKS) return -1;
    const int* slot = ctl + ctl[8] + i;
    const unsigned long long t0 = ms_globaltimer();
    unsigned sleep_ns = 32;
    int b;
    while ((b = ms_load_acquire(slot)) < 0) {
        if (ms_load_acquire(ctl + 1) != 0) return -2;
        if (ms_globaltimer() - t0 > MS_SPIN_LIMIT_NS) {
            if (atomicCAS(ctl + 1, 0, 1) == 0) {
                ctl[2] = -1; ctl[3] = -1; ctl[4] = i; ctl[5] = ms_load_acquire(ctl + 7);
                __threadfence();
            }
            return -2;
        }
        __nanosleep(sleep_ns);
        sleep_ns = sleep_ns < 256 ? 2 * sleep_ns : 256;
    }
    return b;
}

__device__ __forceinline__ void ms_push(int* ctl, int slot, int block) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(ctl + ctl[8] + slot), "r"(block) : "memory");
}

// A root finished: the next root enters the FIFO.
__device__ __forceinline__ void ms_push_next_root(int* ctl, const int* __restrict__ rq) {
    const int r = atomicAdd(ctl + 13, 1);
    if (r < ctl[12]) ms_push(ctl, atomicAdd(ctl + 7, 1), rq[ctl[11] + r]);
}

// Counter `counter` reached zero: every thread takes a share of its waiters, and those whose pending
// count this zeroes go to the queue. Each ready waiter's slot is published with a release store after
// an acquire fence, so its popper sees every parent's writes.
__device__ __forceinline__ void ms_push_waiters(int* ctl, const int* __restrict__ rq, int counter) {
    const int lo = rq[counter], hi = rq[counter + 1];
    const int* list = rq + ctl[10];
    int* pending = ctl + ctl[9];
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
        if (lane == leader) slot = atomicAdd(ctl + 7, __popc(mask));
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
        int go = block >= 0 && ms_load_acquire(ctl + 1) == 0;
#else
        const int block = MS_USE_TICKET ? atomicAdd(ctl, 1) : (int)blockIdx.x;
        int go = block < MS_NUM_TASKS && ms_load_acquire(ctl + 1) == 0;
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
