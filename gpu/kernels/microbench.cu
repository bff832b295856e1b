// Hardware microbenchmarks for calibration (gpu/microbench.py drives them).
//
// Each kernel isolates one machine property the simulator has a parameter
// for: DRAM and L2 bandwidth, the FP32 FFMA rate and the SM clock under load, the TF32 tensor-core rate,
// global atomics and the cost of polling a counter another block sets,
// launch gaps, and how the block scheduler hands out blocks. Results that
// must not be optimised away are written only under a condition the data
// never meets. Timestamps: clock64() counts one SM's cycles (compare only on
// one SM); %globaltimer is the chip-wide nanosecond clock. Every wait is
// bounded by %globaltimer, so a broken run ends instead of hanging the GPU.
// Compiles on its own, given -I on this folder for clock.cuh (NVRTC through CuPy, or nvcc -arch=sm_90).

#include "clock.cuh"

#define MB_SPIN_LIMIT_NS 200000000ull

__device__ __forceinline__ int mb_load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ int mb_load_volatile(const int* p) {
    int v;
    asm volatile("ld.volatile.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void mb_store_release(int* p, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ float mb_sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// ---- memory bandwidth -------------------------------------------------------

// Four independent 16-byte loads per thread per step keep enough bytes in flight.
extern "C" __global__ void mb_read(const float4* __restrict__ a, unsigned long long n4, float* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 v0 = a[i], v1 = a[i + stride], v2 = a[i + 2 * stride], v3 = a[i + 3 * stride];
        acc += (mb_sum4(v0) + mb_sum4(v1)) + (mb_sum4(v2) + mb_sum4(v3));
    }
    for (; i < n4; i += stride) acc += mb_sum4(a[i]);
    if (acc == -1.2345e30f) out[0] = acc;
}

extern "C" __global__ void mb_write(float4* __restrict__ a, unsigned long long n4, float value) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const float4 v = make_float4(value, value, value, value);
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        a[i] = v;
}

extern "C" __global__ void mb_copy(const float4* __restrict__ a, float4* __restrict__ b, unsigned long long n4) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 v0 = a[i], v1 = a[i + stride], v2 = a[i + 2 * stride], v3 = a[i + 3 * stride];
        b[i] = v0; b[i + stride] = v1; b[i + 2 * stride] = v2; b[i + 3 * stride] = v3;
    }
    for (; i < n4; i += stride) b[i] = a[i];
}

// Repeated passes over one working set with ld.global.cg (L2, never L1): the
// bandwidth is L2's while the set fits and falls to DRAM's beyond it.
extern "C" __global__ void mb_l2_read(const float4* __restrict__ a, unsigned long long n4, int passes, float* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        unsigned long long k = tid;
        for (; k + 3 * stride < n4; k += 4 * stride) {
            const float4 v0 = __ldcg(a + k), v1 = __ldcg(a + k + stride);
            const float4 v2 = __ldcg(a + k + 2 * stride), v3 = __ldcg(a + k + 3 * stride);
            acc += (mb_sum4(v0) + mb_sum4(v1)) + (mb_sum4(v2) + mb_sum4(v3));
        }
        for (; k < n4; k += stride) acc += mb_sum4(__ldcg(a + k));
    }
    if (acc == -1.2345e30f) out[0] = acc;
}

// ---- FP32 -------------------------------------------------------------------

// Eight independent FFMA chains per thread, 16 steps unrolled. Per block,
// thread 0 records smid, clock64 and %globaltimer before and after (between
// barriers), so the host gets FLOP/cycle per SM and the clock under load.
extern "C" __global__ void mb_ffma(float* out, int iters, float b, float c, unsigned long long* rec) {
    float a0 = threadIdx.x * 1e-6f, a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f;
    float a4 = a0 + 0.4f, a5 = a0 + 0.5f, a6 = a0 + 0.6f, a7 = a0 + 0.7f;
    __syncthreads();
    unsigned long long c0 = 0, g0 = 0;
    if (threadIdx.x == 0) { g0 = ms_globaltimer(); c0 = clock64(); }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long c1 = clock64(), g1 = ms_globaltimer();
        unsigned long long* r = rec + 5 * blockIdx.x;
        r[0] = ms_smid(); r[1] = c0; r[2] = c1; r[3] = g0; r[4] = g1;
    }
    const float s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    if (s == -1.2345e30f) out[0] = s;
}

// ---- tensor cores: TF32 mma.sync m16n8k8, FP32 accumulate -------------------
// One mma is 16 x 8 x 8 multiply-adds per warp. `chains` independent accumulators per warp (a compile-time
// choice of the two kernels below): MB_MMA_CHAINS for the throughput, one for the latency (each mma waits on
// the one before). The same records as mb_ffma: SM, clock64 and %globaltimer at start and end of block.
#define MB_MMA_CHAINS 8
__device__ __forceinline__ void mb_mma_tf32(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int CHAINS>
__device__ __forceinline__ void mb_mma_body(float* out, int iters, float seed, unsigned long long* rec) {
    unsigned a[4], b[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(seed * (float)(threadIdx.x + i));
    b[0] = __float_as_uint(seed * 0.5f), b[1] = __float_as_uint(seed * 0.25f);
    float acc[CHAINS][4];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.0f;
    __syncthreads();
    unsigned long long c0 = 0, g0 = 0;
    if (threadIdx.x == 0) { g0 = ms_globaltimer(); c0 = clock64(); }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) mb_mma_tf32(acc[c], a, b);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long c1 = clock64(), g1 = ms_globaltimer();
        unsigned long long* r = rec + 5 * blockIdx.x;
        r[0] = ms_smid(); r[1] = c0; r[2] = c1; r[3] = g0; r[4] = g1;
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += (acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]);
    if (s == -1.2345e30f) out[0] = s;
}

extern "C" __global__ void mb_mma_tf32_rate(float* out, int iters, float seed, unsigned long long* rec) {
    mb_mma_body<MB_MMA_CHAINS>(out, iters, seed, rec);
}

extern "C" __global__ void mb_mma_tf32_latency(float* out, int iters, float seed, unsigned long long* rec) {
    mb_mma_body<1>(out, iters, seed, rec);
}

// Smallest nonzero step of %globaltimer seen by one thread.
extern "C" __global__ void mb_timer_resolution(unsigned long long* out, int samples) {
    unsigned long long best = ~0ull, prev = ms_globaltimer();
    for (int i = 0; i < samples; ++i) {
        const unsigned long long t = ms_globaltimer();
        if (t != prev && t - prev < best) best = t - prev;
        prev = t;
    }
    out[0] = best;
}

// ---- atomics and polling ----------------------------------------------------

// One thread, a dependent chain: the next address depends on the last result
// (mask = 0 keeps it on one word), so each atomic waits for the previous one.
extern "C" __global__ void mb_atomic_latency(int* p, int n, int mask, unsigned long long* out) {
    int idx = 0;
    const unsigned long long t0 = clock64();
    for (int i = 0; i < n; ++i) idx = atomicAdd(p + idx, 1) & mask;
    const unsigned long long t1 = clock64();
    out[0] = t1 - t0;
    out[1] = (unsigned long long)idx;
}

// mode 0: every thread its own word; 1: every thread one word (result unused);
// 2: thread 0 of each block only, result used (the megakernel's ticket).
extern "C" __global__ void mb_atomic_throughput(int* p, int n, int mode, int* out) {
    const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    if (mode == 0) {
        for (int i = 0; i < n; ++i) atomicAdd(p + gtid, 1);
    } else if (mode == 1) {
        for (int i = 0; i < n; ++i) atomicAdd(p, 1);
    } else if (threadIdx.x == 0) {
        int acc = 0;
        for (int i = 0; i < n; ++i) acc += atomicAdd(p, 1);
        if (acc == -7) out[0] = acc;
    }
}

// One thread, a dependent chain of loads of one word (mask = 0): acquire = 1
// uses ld.acquire.gpu (the megakernel's spin), else ld.volatile.
extern "C" __global__ void mb_poll_latency(const int* p, int n, int mask, int acquire, unsigned long long* out) {
    int idx = 0;
    const unsigned long long t0 = clock64();
    if (acquire) {
        for (int i = 0; i < n; ++i) idx = mb_load_acquire(p + idx) & mask;
    } else {
        for (int i = 0; i < n; ++i) idx = mb_load_volatile(p + idx) & mask;
    }
    const unsigned long long t1 = clock64();
    out[0] = t1 - t0;
    out[1] = (unsigned long long)idx;
}

// The megakernel's wait loop (gpu/kernels/megakernel.cu ms_wait) on a counter
// that stays above zero: acquire load of the counter and of the error flag, a
// %globaltimer check, then __nanosleep with the sleep doubling from sleep0 up
// to sleep_cap ns. out[i]: clock64 at the end of iteration i (out[0]: start).
extern "C" __global__ void mb_spin_loop(const int* ctl, int n, unsigned sleep0, unsigned sleep_cap,
                                        unsigned long long* out) {
    const unsigned long long t0 = ms_globaltimer();
    out[0] = clock64();
    unsigned sleep_ns = sleep0;
    for (int i = 1; i <= n; ++i) {
        if (mb_load_acquire(ctl) <= 0) break;
        if (mb_load_acquire(ctl + 1) != 0) break;
        if (ms_globaltimer() - t0 > MB_SPIN_LIMIT_NS) break;
        __nanosleep(sleep_ns);
        sleep_ns = sleep_ns < sleep_cap ? 2 * sleep_ns : sleep_cap;
        out[i] = clock64();
    }
}

// Ping-pong between block 0 and block 1 through two flags (release stores,
// acquire polls, no sleep). out: [0] block 0's cycles for n round trips,
// [1] block 1's polls, [2] block 1's cycles spent polling, [3] failed,
// [4] smid of block 0, [5] smid of block 1.
extern "C" __global__ void mb_pingpong(int* flags, int n, unsigned long long* out) {
    if (threadIdx.x != 0 || blockIdx.x > 1) return;
    const unsigned long long deadline = ms_globaltimer() + MB_SPIN_LIMIT_NS;
    int* ping = flags;
    int* pong = flags + 32;  // another 128-byte line
    out[4 + blockIdx.x] = ms_smid();
    if (blockIdx.x == 0) {
        const unsigned long long t0 = clock64();
        for (int i = 1; i <= n; ++i) {
            mb_store_release(ping, i);
            while (mb_load_acquire(pong) != i) {
                if (ms_globaltimer() > deadline) { out[3] = 1; mb_store_release(ping, -1); return; }
            }
        }
        out[0] = clock64() - t0;
    } else {
        unsigned long long polls = 0, cycles = 0;
        for (int i = 1; i <= n; ++i) {
            const unsigned long long t0 = clock64();
            int v;
            while ((v = mb_load_acquire(ping)) != i) {
                ++polls;
                if (v < 0 || ms_globaltimer() > deadline) { out[3] = 1; return; }
            }
            cycles += clock64() - t0;
            mb_store_release(pong, i);
        }
        out[1] = polls;
        out[2] = cycles;
    }
}

// ---- launches -----------------------------------------------------------------

// Every block folds its start and end time into slot `slot`: [2*slot] min
// start, [2*slot+1] max end (the host initialises them to ~0 and 0).
extern "C" __global__ void mb_stamp(unsigned long long* rec, int slot) {
    if (threadIdx.x == 0) {
        atomicMin(rec + 2 * slot, ms_globaltimer());
        atomicMax(rec + 2 * slot + 1, ms_globaltimer());
    }
}

// One thread spins for `ns`, so launches queued behind it start back to back.
extern "C" __global__ void mb_sleep(unsigned long long ns, unsigned long long* out) {
    const unsigned long long t0 = ms_globaltimer();
    while (ms_globaltimer() - t0 < ns) {}
    out[0] = ms_globaltimer();
}

// ---- block dispatch -----------------------------------------------------------

// Thread 0 takes a ticket (the chip-wide start order), records smid, clock64
// and %globaltimer, holds the block for `work_cycles`, and records the end.
// Dynamic shared memory (unused) sets the occupancy. rec: 6 words per block.
extern "C" __global__ void mb_dispatch(unsigned long long* rec, int* ticket, long long work_cycles) {
    extern __shared__ float mb_pad[];
    if (threadIdx.x == 0) {
        const unsigned long long g0 = ms_globaltimer();
        const long long c0 = clock64();
        const int order = atomicAdd(ticket, 1);
        while (clock64() - c0 < work_cycles) {}
        const long long c1 = clock64();
        unsigned long long* r = rec + 6 * blockIdx.x;
        r[0] = ms_smid(); r[1] = (unsigned long long)order; r[2] = g0; r[3] = (unsigned long long)c0;
        r[4] = ms_globaltimer(); r[5] = (unsigned long long)c1;
        if (work_cycles < 0) mb_pad[0] = 0.0f;
    }
    __syncthreads();
}
