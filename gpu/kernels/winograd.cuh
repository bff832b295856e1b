// The four Winograd stages as device functions, shared by the megakernel and
// the non-fused kernels so both compute bit for bit the same thing.
//
// Everything that shapes the work is a compile-time constant from
// ms_config.cuh (generated per layer, variant and partition by gpu/backend.py):
// MS_N/C/H/W/K, MS_M, MS_ALPHA, the geometry (MS_NUM_TILES, MS_NG, MS_SI, ...),
// the partition (MS_TPG, MS_CPI, MS_EPG, MS_KPG, MS_KPO, MS_KPF, MS_NT), the
// GEMM plan (MS_GE, MS_TM, MS_TN) and the transforms ms_g/ms_bt/ms_at, which
// are written out with explicit rounding intrinsics so no compiler contraction
// can make two builds differ.
//
// Buffers: x NHWC, w [K][3][3][C], U [a2][C][K], V [a2][tiles][C],
// M [a2][tiles][K], y NHWC. U, V and M are produced inside the same launch by
// other blocks, so they are read with ld.global.cg (L2, never a stale L1 line).
// MS_NCHW=1 builds read x and write y as NCHW instead (a torch model's default
// layout, with no transposes around the call); threads still run along the
// channels, so V and M keep their coalesced accesses and x and y do not.
#pragma once
#ifndef MS_CONFIG_INCLUDED
#include "ms_config.cuh"
#endif
#include "encoding.cuh"

#define MS_A2 (MS_ALPHA * MS_ALPHA)
// Blocks per SM the register allocation must allow (launch bounds): 384
// threads' worth, which caps the 8 x 8 GEMM near 168 registers at 128 threads.
// A persistent build sets it to the static build's occupancy, so its loop
// cannot cost a resident block.
#ifndef MS_MIN_BLOCKS
#define MS_MIN_BLOCKS (MS_NT <= 384 ? 384 / MS_NT : 1)
#endif
#ifndef MS_BK
#define MS_BK 8
#endif
#ifndef MS_NCHW
#define MS_NCHW 0
#endif

__device__ __forceinline__ int ms_min(int a, int b) { return a < b ? a : b; }

// ---- filter transform: U[e][c][k] = (G g G^T)[e] for k in this task's block.
// Threads run along k, so a warp's 36 stores per item are runs of the task's
// k block (w's reads along k share L1 lines across the block's warps).
// There are few filter tasks (K / filter_k_per_task) and each one is a long
// chain of items, so a thread loads MS_FILTER_ILP items before transforming
// any of them: that many times more loads in flight.
#ifndef MS_FILTER_ILP
#define MS_FILTER_ILP 4
#endif
__device__ __forceinline__ void ms_filter_task(const float* __restrict__ w, float* U, int f) {
    const int k0 = f * MS_KPF;
    const int nk = ms_min(MS_KPF, MS_K - k0);
    for (int i0 = threadIdx.x; i0 < nk * MS_C; i0 += MS_NT * MS_FILTER_ILP) {
        float g[MS_FILTER_ILP][9];
#pragma unroll
        for (int u = 0; u < MS_FILTER_ILP; ++u) {
            const int i = i0 + u * MS_NT, k = k0 + i % nk, c = i / nk;
#pragma unroll
            for (int r = 0; r < 9; ++r) g[u][r] = i < nk * MS_C ? __ldg(w + ((size_t)k * 9 + r) * MS_C + c) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < MS_FILTER_ILP; ++u) {
            const int i = i0 + u * MS_NT, k = k0 + i % nk, c = i / nk;
            if (i >= nk * MS_C) break;
            float t[MS_ALPHA * 3], v[MS_A2];
#pragma unroll
            for (int s = 0; s < 3; ++s) ms_g<3, 3>(g[u] + s, t + s);
#pragma unroll
            for (int a = 0; a < MS_ALPHA; ++a) ms_g<1, 1>(t + a * 3, v + a * MS_ALPHA);
#pragma unroll
            for (int e = 0; e < MS_A2; ++e) U[((size_t)e * MS_C + c) * MS_K + k] = v[e];
        }
    }
}

// ---- input transform: V[e][tile][c] = (B^T d B)[e], zero padding outside the image
__device__ __forceinline__ void ms_input_task(const float* __restrict__ x, float* V, int g, int cb) {
    const int t0 = g * MS_TPG, nt = ms_min(MS_TPG, MS_NUM_TILES - t0);
    const int c0 = cb * MS_CPI, nc = ms_min(MS_CPI, MS_C - c0);
    for (int i = threadIdx.x; i < nt * nc; i += MS_NT) {
        const int c = c0 + i % nc, tile = t0 + i / nc;
        const int n = tile / (MS_TILES_H * MS_TILES_W), rem = tile % (MS_TILES_H * MS_TILES_W);
        const int r0 = (rem / MS_TILES_W) * MS_M - 1, s0 = (rem % MS_TILES_W) * MS_M - 1;
        float d[MS_A2], t[MS_A2], v[MS_A2];
#pragma unroll
        for (int r = 0; r < MS_ALPHA; ++r) {
#pragma unroll
            for (int s = 0; s < MS_ALPHA; ++s) {
                const int row = r0 + r, col = s0 + s;
                const bool in = row >= 0 && row < MS_H && col >= 0 && col < MS_W;
#if MS_NCHW
                d[r * MS_ALPHA + s] = in ? __ldg(x + (((size_t)n * MS_C + c) * MS_H + row) * MS_W + col) : 0.0f;
#else
                d[r * MS_ALPHA + s] = in ? __ldg(x + (((size_t)n * MS_H + row) * MS_W + col) * MS_C + c) : 0.0f;
#endif
            }
        }
#pragma unroll
        for (int j = 0; j < MS_ALPHA; ++j) ms_bt<MS_ALPHA, MS_ALPHA>(d + j, t + j);
#pragma unroll
        for (int a = 0; a < MS_ALPHA; ++a) ms_bt<1, 1>(t + a * MS_ALPHA, v + a * MS_ALPHA);
#pragma unroll
        for (int e = 0; e < MS_A2; ++e) V[((size_t)e * MS_NUM_TILES + tile) * MS_C + c] = v[e];
    }
}

// ---- output transform: y = A^T M A on this task's channel block, clipped at ragged edges
__device__ __forceinline__ void ms_output_task(const float* Mb, float* __restrict__ y, int g, int ob) {
    const int t0 = g * MS_TPG, nt = ms_min(MS_TPG, MS_NUM_TILES - t0);
    const int k0 = ob * MS_KPO, nk = ms_min(MS_KPO, MS_K - k0);
    for (int i = threadIdx.x; i < nt * nk; i += MS_NT) {
        const int k = k0 + i % nk, tile = t0 + i / nk;
        const int n = tile / (MS_TILES_H * MS_TILES_W), rem = tile % (MS_TILES_H * MS_TILES_W);
        const int r0 = (rem / MS_TILES_W) * MS_M, s0 = (rem % MS_TILES_W) * MS_M;
        float mt[MS_A2], t[MS_M * MS_ALPHA], o[MS_M * MS_M];
#pragma unroll
        for (int e = 0; e < MS_A2; ++e) mt[e] = __ldcg(Mb + ((size_t)e * MS_NUM_TILES + tile) * MS_K + k);
#pragma unroll
        for (int j = 0; j < MS_ALPHA; ++j) ms_at<MS_ALPHA, MS_ALPHA>(mt + j, t + j);
#pragma unroll
        for (int a = 0; a < MS_M; ++a) ms_at<1, 1>(t + a * MS_ALPHA, o + a * MS_M);
#pragma unroll
        for (int r = 0; r < MS_M; ++r) {
#pragma unroll
            for (int s = 0; s < MS_M; ++s) {
                const int row = r0 + r, col = s0 + s;
#if MS_NCHW
                if (row < MS_H && col < MS_W) y[(((size_t)n * MS_K + k) * MS_H + row) * MS_W + col] = o[r * MS_M + s];
#else
                if (row < MS_H && col < MS_W) y[(((size_t)n * MS_H + row) * MS_W + col) * MS_K + k] = o[r * MS_M + s];
#endif
            }
        }
    }
}

// ---- batched GEMM tile: M[e][tile][k] = sum over c ascending of V[e][tile][c] * U[e][c][k]
//
// MS_GE Winograd points are computed at once; each thread holds a TM x TN
// register block of one point (up to 8 x 8, so each shared-memory value feeds
// 8 FFMAs). Channels stream through shared memory MS_BK at a time in an
// MS_STAGES-deep cp.async ring (16-byte global->shared copies, no register
// staging, one barrier per step); the ring runs on across the task's points,
// so a task of several points never drains it. V keeps its global layout in
// shared memory ([tile][c], rows padded by 4 floats): a thread reads 4
// channels of one tile with one 128-bit load, and the rows a warp reads fall
// in different banks. U rows are [c][k]; a thread's columns come in runs of
// 4 spaced 4*TX apart, so a warp's 128-bit loads are contiguous. Operands
// whose rows are not 16-byte multiples (C or K not a multiple of 4) take
// synchronous scalar ld.global.cg loads instead. Every accumulator sums its
// channels in ascending order with one __fmaf_rn each.
#define MS_TY (MS_TPG / MS_TM)
#define MS_TX (MS_KPG / MS_TN)
#define MS_VROW (MS_BK + 4)
#define MS_UROW ((MS_KPG + 3) / 4 * 4)
#ifndef MS_STAGES
#define MS_STAGES 2
#endif
#ifndef MS_GEMM_WARP_4X8
#define MS_GEMM_WARP_4X8 0
#endif

template <int T, int D>
__device__ __forceinline__ int ms_owned(int tid, int q) {  // q-th of the T columns thread tid (of D) owns
    return T >= 4 ? (q / 4) * (4 * D) + tid * 4 + (q % 4) : tid * T + q;
}

// T register values of one row of a shared tile: 128-bit loads when T >= 4.
template <int T, int D>
__device__ __forceinline__ void ms_fragment(const float* row, int tid, float* out) {
    if constexpr (T >= 4) {
#pragma unroll
        for (int s = 0; s < T / 4; ++s) {
            const float4 v = *reinterpret_cast<const float4*>(row + s * 4 * D + tid * 4);
            out[s * 4 + 0] = v.x; out[s * 4 + 1] = v.y; out[s * 4 + 2] = v.z; out[s * 4 + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int q = 0; q < T; ++q) out[q] = row[tid * T + q];
    }
}

// 16 bytes global -> shared, L2 only (.cg: never a stale L1 line); zero-filled when !ok.
__device__ __forceinline__ void ms_cp_async16(float* dst, const float* src, bool ok) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void ms_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void ms_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

#ifndef MS_GEMM_WARP
#define MS_GEMM_WARP 0
#endif
#ifndef MS_GEMM_TF32X3
#define MS_GEMM_TF32X3 0
#endif
#if MS_GEMM_WARP && MS_GEMM_TF32X3
#include "gemm_tf32x3.cuh"
#elif MS_GEMM_WARP
#include "gemm_warp.cuh"
#else
__device__ __forceinline__ void ms_gemm_task(const float* U, const float* V, float* Mb, int g, int j) {
    __shared__ __align__(16) float Vs[MS_STAGES][MS_GE][MS_TPG][MS_VROW];
    __shared__ __align__(16) float Us[MS_STAGES][MS_GE][MS_BK][MS_UROW];
    constexpr int chunks = (MS_C + MS_BK - 1) / MS_BK;
    const int eb = j / MS_NKB, kb = j % MS_NKB;
    const int t0 = g * MS_TPG, nt = ms_min(MS_TPG, MS_NUM_TILES - t0);
    const int k0 = kb * MS_KPG, nk = ms_min(MS_KPG, MS_K - k0);
    const int e0 = eb * MS_EPG, e_end = ms_min(e0 + MS_EPG, MS_A2);
    const int steps = (e_end - e0 + MS_GE - 1) / MS_GE * chunks;
    const int tid = threadIdx.x;
    const int ge = tid / (MS_TX * MS_TY), tr = tid % (MS_TX * MS_TY);
    // A warp is 4 rows x 8 columns of threads where the block allows: its U
    // loads are then 8 distinct float4s (one shared-memory wavefront).
    constexpr bool quad = MS_GEMM_WARP_4X8 && MS_TX % 8 == 0 && MS_TY % 4 == 0;
    const int tx = quad ? (tr / 32) % (MS_TX / 8) * 8 + tr % 8 : tr % MS_TX;
    const int ty = quad ? (tr / 32) / (MS_TX / 8) * 4 + (tr % 32) / 8 : tr / MS_TX;

    // Step s: points eg .. eg+GE-1 with eg = e0 + (s / chunks) * GE, channels (s % chunks) * BK ...
    auto issue = [&](int s) {
        if (s < steps) {
            const int st = s % MS_STAGES, eg = e0 + (s / chunks) * MS_GE, cc = (s % chunks) * MS_BK;
#if MS_VEC_C
            for (int i = tid; i < MS_GE * MS_TPG * (MS_BK / 4); i += MS_NT) {
                const int cq = i % (MS_BK / 4), tl = (i / (MS_BK / 4)) % MS_TPG, gl = i / (MS_BK / 4 * MS_TPG);
                const int c = cc + cq * 4, e = eg + gl;
                const bool ok = tl < nt && e < e_end && c < MS_C;
                ms_cp_async16(&Vs[st][gl][tl][cq * 4], ok ? V + ((size_t)e * MS_NUM_TILES + t0 + tl) * MS_C + c : V, ok);
            }
#else
            for (int i = tid; i < MS_GE * MS_TPG * MS_BK; i += MS_NT) {
                const int cq = i % MS_BK, tl = (i / MS_BK) % MS_TPG, gl = i / (MS_BK * MS_TPG);
                const int c = cc + cq, e = eg + gl;
                const bool ok = tl < nt && e < e_end && c < MS_C;
                Vs[st][gl][tl][cq] = ok ? __ldcg(V + ((size_t)e * MS_NUM_TILES + t0 + tl) * MS_C + c) : 0.0f;
            }
#endif
#if MS_VEC_K
            for (int i = tid; i < MS_GE * MS_BK * (MS_KPG / 4); i += MS_NT) {
                const int kq = i % (MS_KPG / 4), kk = (i / (MS_KPG / 4)) % MS_BK, gl = i / (MS_KPG / 4 * MS_BK);
                const int c = cc + kk, k = kq * 4, e = eg + gl;
                const bool ok = k < nk && e < e_end && c < MS_C;
                ms_cp_async16(&Us[st][gl][kk][k], ok ? U + ((size_t)e * MS_C + c) * MS_K + k0 + k : U, ok);
            }
#else
            for (int i = tid; i < MS_GE * MS_BK * MS_KPG; i += MS_NT) {
                const int k = i % MS_KPG, kk = (i / MS_KPG) % MS_BK, gl = i / (MS_KPG * MS_BK);
                const int c = cc + kk, e = eg + gl;
                const bool ok = k < nk && e < e_end && c < MS_C;
                Us[st][gl][kk][k] = ok ? __ldcg(U + ((size_t)e * MS_C + c) * MS_K + k0 + k) : 0.0f;
            }
#endif
        }
        ms_cp_commit();
    };

    float acc[MS_TM][MS_TN];
#pragma unroll
    for (int a = 0; a < MS_TM; ++a)
#pragma unroll
        for (int b = 0; b < MS_TN; ++b) acc[a][b] = 0.0f;

#pragma unroll
    for (int s = 0; s < MS_STAGES - 1; ++s) issue(s);
    for (int s = 0; s < steps; ++s) {
        ms_cp_wait<MS_STAGES - 2>();
        __syncthreads();
        issue(s + MS_STAGES - 1);  // refills the stage every thread finished reading in step s-1
        const float* vs = &Vs[s % MS_STAGES][ge][0][0];
        const float* us = &Us[s % MS_STAGES][ge][0][0];
#pragma unroll
        for (int k4 = 0; k4 < MS_BK / 4; ++k4) {
            float a[MS_TM][4];
#pragma unroll
            for (int p = 0; p < MS_TM; ++p) {
                const float4 v = *reinterpret_cast<const float4*>(vs + (ty + p * MS_TY) * MS_VROW + k4 * 4);
                a[p][0] = v.x; a[p][1] = v.y; a[p][2] = v.z; a[p][3] = v.w;
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float b[MS_TN];
                ms_fragment<MS_TN, MS_TX>(us + (k4 * 4 + kk) * MS_UROW, tx, b);
#pragma unroll
                for (int p = 0; p < MS_TM; ++p)
#pragma unroll
                    for (int q = 0; q < MS_TN; ++q) acc[p][q] = __fmaf_rn(a[p][kk], b[q], acc[p][q]);
            }
        }
        if (s % chunks != chunks - 1) continue;
        const int e = e0 + (s / chunks) * MS_GE + ge;
        if (e < e_end) {
#pragma unroll
            for (int p = 0; p < MS_TM; ++p) {
                const int tl = ty + p * MS_TY;
                if (tl >= nt) continue;
                float* row = Mb + ((size_t)e * MS_NUM_TILES + t0 + tl) * MS_K + k0;
                if constexpr (MS_VEC_K && MS_TN >= 4) {
#pragma unroll
                    for (int q4 = 0; q4 < MS_TN / 4; ++q4) {
                        const int k = ms_owned<MS_TN, MS_TX>(tx, q4 * 4);
                        if (k < nk)
                            *reinterpret_cast<float4*>(row + k) =
                                make_float4(acc[p][q4 * 4], acc[p][q4 * 4 + 1], acc[p][q4 * 4 + 2], acc[p][q4 * 4 + 3]);
                    }
                } else {
#pragma unroll
                    for (int q = 0; q < MS_TN; ++q) {
                        const int k = ms_owned<MS_TN, MS_TX>(tx, q);
                        if (k < nk) row[k] = acc[p][q];
                    }
                }
            }
        }
#pragma unroll
        for (int a = 0; a < MS_TM; ++a)
#pragma unroll
            for (int b = 0; b < MS_TN; ++b) acc[a][b] = 0.0f;
    }
    ms_cp_wait<0>();
}
#endif  // MS_GEMM_WARP
