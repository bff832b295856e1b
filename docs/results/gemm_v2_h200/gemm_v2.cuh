// GEMM v2: a drop-in candidate for ms_gemm_task (gpu/kernels/winograd.cuh), kept here for the study.
//
// Same signature and task decomposition: task (g, j) computes, for the Winograd points
// e0 .. e_end-1 of point block eb = j / MS_NKB and the output channels k0 .. k0+MS_KPG-1 of
// channel block kb = j % MS_NKB, the MS_TPG tiles of group g:
//     M[e][tile][k] = sum over c ascending of V[e][tile][c] * U[e][c][k]
// with one __fmaf_rn per channel into an accumulator that starts at 0.0f, so the result is
// bit for bit the current kernel's (and any other kernel's that keeps that chain).
//
// What differs from ms_gemm_task (the reasons are in README.md):
//  * warp tiling: a warp owns a WM x WN sub-tile (tiles x k), its lanes a WTY x WTX grid
//    (default 4 x 8); a thread's TM x TN block is split in runs of 4 so that every LDS.128
//    of a warp touches at most 8 distinct 16-byte words (one shared-memory wavefront,
//    broadcast to the other lanes);
//  * V2_VT=1: V is transposed into shared memory as [c][tile] (register-staged: LDG.128 along
//    c, four STS.32 into four rows), so both operands of a channel are read along the output
//    dims: per channel TM/4 + TN/4 LDS.128 and TM*TN FFMA; a 2-stage ring (V via registers,
//    U via cp.async), one barrier per step;
//    V2_VT=0: V keeps [tile][c] (cp.async, rows padded by 4 floats), read 4 channels at a
//    time along c (thread rows interleaved by WTY so a warp's 4 rows hit 4 bank groups);
//    a V2_STAGES-deep cp.async ring like the current kernel;
//  * no integer division, modulo or bounds test in the main loop: every per-thread address is
//    computed once per point and advanced by a constant per step; ragged tiles / channels
//    are clamped to a valid address (their rows/columns are computed but never stored);
//  * the step loop is `#pragma unroll 1`, the channel loop of a step fully unrolled, all
//    shared-memory offsets inside a step are immediates.
//  * V2_PF=1: explicit register double buffer of the fragments; V2_ORDER: FFMA order (1 = snake).
// Requires MS_C % V2_BK == 0 and MS_K % 4 == 0 (static_assert); the ResNet/VGG layers qualify.
// Measured best on the H200 (README.md): V2_VT=0, V2_BK=16, V2_STAGES=3, V2_PF=1, V2_ORDER=1, 8 x 8 per
// thread; the defaults below are the first run's (VT, no double buffer, p-major order) so that the
// study's earlier variant sets keep their meaning.
#pragma once
#ifndef MS_CONFIG_INCLUDED
#include "ms_config.cuh"
#endif

#ifndef MS_A2
#define MS_A2 (MS_ALPHA * MS_ALPHA)
#endif
#ifndef V2_BK
#define V2_BK 16
#endif
#ifndef V2_VT
#define V2_VT 1
#endif
#ifndef V2_STAGES
#define V2_STAGES 3
#endif
#ifndef V2_TM
#define V2_TM 8
#endif
#ifndef V2_TN
#define V2_TN 8
#endif
#ifndef V2_WTY
#define V2_WTY 4
#endif
#ifndef V2_DYN
#define V2_DYN 0  // 1: the ring lives in dynamic shared memory (needed past 48 KiB: BK 32, 4 stages)
#endif
#ifndef V2_PF
#define V2_PF 0  // 1: explicit register double buffer of the fragments (ring: V per 4-channel group, U per channel; VT: both per channel)
#endif

#ifndef V2_ORDER
#define V2_ORDER 0  // FFMA order of the outer product: 0 p-major, 1 p-major snake (q reversed on odd p), 2 q-major
#endif

__device__ __forceinline__ int v2_min(int a, int b) { return a < b ? a : b; }

// acc[p][q] += a[p] * b[q] for one channel, in the V2_ORDER sequence (each accumulator once: the
// channel order of every accumulator, hence its bits, is the same for any order).
template <int TM, int TN, class A, class B>
__device__ __forceinline__ void v2_outer(float (&acc)[TM][TN], const A& a, const B& b) {
    if constexpr (V2_ORDER == 2) {
#pragma unroll
        for (int q = 0; q < TN; ++q)
#pragma unroll
            for (int p = 0; p < TM; ++p) acc[p][q] = __fmaf_rn(a(p), b(q), acc[p][q]);
    } else {
#pragma unroll
        for (int p = 0; p < TM; ++p)
#pragma unroll
            for (int q0 = 0; q0 < TN; ++q0) {
                const int q = (V2_ORDER == 1 && (p & 1)) ? TN - 1 - q0 : q0;
                acc[p][q] = __fmaf_rn(a(p), b(q), acc[p][q]);
            }
    }
}

__device__ __forceinline__ void v2_cp_async16(float* dst, const float* src) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void v2_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void v2_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

template <int BM, int BN, int BK, int NT, int TM, int TN, int WTY, int STAGES, bool VT>
struct GemmV2 {
    static constexpr int WTX = 32 / WTY;
    static constexpr int WM = WTY * TM, WN = WTX * TN;
    static constexpr int WARPS_N = BN / WN, WARPS_M = BM / WM;
    static_assert(32 % WTY == 0, "lanes");
    static_assert(BM % WM == 0 && BN % WN == 0 && WARPS_M * WARPS_N * 32 == NT, "warp tiling must cover the tile");
    static_assert(TN % 4 == 0 && TN <= 8, "TN: 4 or 8");
    static_assert(!VT || (TM % 4 == 0 && TM <= 8), "TM: 4 or 8 when V is transposed");
    static_assert(MS_C % BK == 0 && BK % 4 == 0, "channels must be a multiple of the step");
    static_assert(MS_K % 4 == 0 && BN % 4 == 0, "16-byte rows of U and M");
    static constexpr int NS = VT ? 2 : STAGES;                       // stages of the ring
    static constexpr int VSTRIDE = VT ? BM : BK + 4;                 // floats per smem row of V
    static constexpr int VSTAGE = VT ? BK * BM : BM * (BK + 4);      // floats per stage
    static constexpr int USTAGE = BK * BN;
    // U: BK x BN floats per step in float4s; thread tid copies rows tid/(BN/4) + l*UROWS_L
    static constexpr int UQ = BN / 4;
    static_assert(NT % UQ == 0, "U copy layout: threads must cover whole rows of U");
    static constexpr int UROWS_L = NT / UQ;                          // rows per copy round
    static constexpr int UL = BK * UQ / NT;                          // float4 copies per thread per step
    static_assert(UL >= 1 && BK * UQ % NT == 0, "U copy count");
    // V (VT): BM tiles x BK/4 float4s; thread: tile tid % BM, float4 column tid / BM + l * (NT / BM)
    // V (!VT): thread: tile tid / (BK/4) + l * (NT / (BK/4)), float4 column tid % (BK/4)
    static constexpr int VL = BM * (BK / 4) / NT;
    static_assert(VL >= 1 && BM * (BK / 4) % NT == 0, "V copy count");
    static_assert(!VT || NT % BM == 0, "VT copy layout needs NT % BM == 0");
    static_assert(VT || NT % (BK / 4) == 0, "V copy layout");
    static constexpr int SMEM_FLOATS = NS * (VSTAGE + USTAGE);
};

template <int BM, int BN, int BK, int NT, int TM, int TN, int WTY, int STAGES, bool VT>
__device__ __forceinline__ void ms_gemm_task_v2_impl(const float* U, const float* V, float* Mb, int g, int j) {
    using P = GemmV2<BM, BN, BK, NT, TM, TN, WTY, STAGES, VT>;
    constexpr int NS = P::NS, WTX = P::WTX, WM = P::WM, WN = P::WN;
#if V2_DYN
    extern __shared__ __align__(16) float smem[];  // P::SMEM_FLOATS floats, given at launch
#else
    __shared__ __align__(16) float smem[P::SMEM_FLOATS];
#endif
    float* const Vs = smem;                   // [NS][VSTAGE]
    float* const Us = smem + NS * P::VSTAGE;  // [NS][BK][BN]
    constexpr int steps = MS_C / BK;

    const int eb = j / MS_NKB, kb = j % MS_NKB;
    const int t0 = g * BM, nt = v2_min(BM, MS_NUM_TILES - t0);
    const int k0 = kb * BN, nk = v2_min(BN, MS_K - k0);
    const int e0 = eb * MS_EPG, e_end = v2_min(e0 + MS_EPG, MS_A2);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wy = warp / P::WARPS_N, wx = warp % P::WARPS_N;
    const int ty = lane / WTX, tx = lane % WTX;

    // --- copy assignments (fixed per thread), clamped into the valid range
    const int u_row = tid / P::UQ;
    const int u_col = v2_min((tid % P::UQ) * 4, nk - 4);  // nk is a multiple of 4
    float* const us_w = Us + u_row * BN + (tid % P::UQ) * 4;
    int v_tile, v_cq;
    if constexpr (VT) {
        v_tile = tid % BM;
        v_cq = tid / BM;
    } else {
        v_tile = tid / (BK / 4);
        v_cq = tid % (BK / 4);
    }
    // --- fragment read offsets (floats inside a stage)
    const int col0 = wx * WN + tx * 4;  // + h * (WN / 2) for the second run when TN == 8
    int row0;                           // VT: + h * (WM / 2); !VT: rows row0 + WTY * p
    if constexpr (VT) row0 = wy * WM + ty * 4;
    else row0 = wy * WM + ty;

    for (int e = e0; e < e_end; ++e) {
        const float* ug = U + ((size_t)e * MS_C + u_row) * MS_K + k0 + u_col;
        const float* vg[P::VL];
#pragma unroll
        for (int l = 0; l < P::VL; ++l) {
            int tile, cq;
            if constexpr (VT) { tile = v_tile; cq = v_cq + l * (NT / BM); }
            else { tile = v_tile + l * (NT / (BK / 4)); cq = v_cq; }
            vg[l] = V + ((size_t)e * MS_NUM_TILES + t0 + v2_min(tile, nt - 1)) * MS_C + cq * 4;
        }
        auto issue_u = [&](int st) {
#pragma unroll
            for (int l = 0; l < P::UL; ++l)
                v2_cp_async16(us_w + st * P::USTAGE + l * P::UROWS_L * BN, ug + (size_t)l * P::UROWS_L * MS_K);
            ug += (size_t)BK * MS_K;
        };

        float acc[TM][TN];
#pragma unroll
        for (int p = 0; p < TM; ++p)
#pragma unroll
            for (int q = 0; q < TN; ++q) acc[p][q] = 0.0f;

        if constexpr (VT) {
            float4 vr[P::VL];
            auto ldg_v = [&]() {
#pragma unroll
                for (int l = 0; l < P::VL; ++l) { vr[l] = __ldcg(reinterpret_cast<const float4*>(vg[l])); vg[l] += BK; }
            };
            auto sts_v = [&](int st) {
#pragma unroll
                for (int l = 0; l < P::VL; ++l) {
                    float* d = Vs + st * P::VSTAGE + (v_cq + l * (NT / BM)) * 4 * BM + v_tile;
                    d[0] = vr[l].x; d[BM] = vr[l].y; d[2 * BM] = vr[l].z; d[3 * BM] = vr[l].w;
                }
            };
            ldg_v();
            issue_u(0);
            v2_commit();
            sts_v(0);
            if (steps > 1) ldg_v();
#pragma unroll 1
            for (int s = 0; s < steps; ++s) {
                const int st = s & 1;
                v2_wait<0>();
                __syncthreads();
                if (s + 1 < steps) { issue_u(st ^ 1); v2_commit(); }
                const float* vs = Vs + st * P::VSTAGE + row0;
                const float* us = Us + st * P::USTAGE + col0;
                float a[2][TM], b[2][TN];
                auto ldf = [&](int buf, int c) {
#pragma unroll
                    for (int h = 0; h < TM / 4; ++h) {
                        const float4 v = *reinterpret_cast<const float4*>(vs + c * BM + h * (WM / 2));
                        a[buf][h * 4 + 0] = v.x; a[buf][h * 4 + 1] = v.y; a[buf][h * 4 + 2] = v.z; a[buf][h * 4 + 3] = v.w;
                    }
#pragma unroll
                    for (int h = 0; h < TN / 4; ++h) {
                        const float4 u = *reinterpret_cast<const float4*>(us + c * BN + h * (WN / 2));
                        b[buf][h * 4 + 0] = u.x; b[buf][h * 4 + 1] = u.y; b[buf][h * 4 + 2] = u.z; b[buf][h * 4 + 3] = u.w;
                    }
                };
                if constexpr (V2_PF) ldf(0, 0);
#pragma unroll
                for (int c = 0; c < BK; ++c) {
                    const int cb = V2_PF ? (c & 1) : 0;
                    if constexpr (V2_PF) { if (c + 1 < BK) ldf((c + 1) & 1, c + 1); }
                    else ldf(0, c);
                    v2_outer<TM, TN>(acc, [&](int p) { return a[cb][p]; }, [&](int q) { return b[cb][q]; });
                }
                if (s + 1 < steps) {
                    sts_v(st ^ 1);
                    if (s + 2 < steps) ldg_v();
                }
            }
        } else {
            auto issue_v = [&](int st) {
#pragma unroll
                for (int l = 0; l < P::VL; ++l) {
                    v2_cp_async16(Vs + st * P::VSTAGE + (v_tile + l * (NT / (BK / 4))) * P::VSTRIDE + v_cq * 4, vg[l]);
                    vg[l] += BK;
                }
            };
#pragma unroll
            for (int s = 0; s < NS - 1; ++s) {
                if (s < steps) { issue_v(s); issue_u(s); }
                v2_commit();
            }
            int st = 0, st_in = NS - 1;
#pragma unroll 1
            for (int s = 0; s < steps; ++s) {
                v2_wait<NS - 2>();
                __syncthreads();
                if (s + NS - 1 < steps) { issue_v(st_in); issue_u(st_in); }
                v2_commit();
                const float* vs = Vs + st * P::VSTAGE + row0 * P::VSTRIDE;
                const float* us = Us + st * P::USTAGE + col0;
                if constexpr (V2_PF) {
                    float a[2][TM][4];
                    auto lda = [&](int buf, int k4) {
#pragma unroll
                        for (int p = 0; p < TM; ++p) {
                            const float4 v = *reinterpret_cast<const float4*>(vs + p * WTY * P::VSTRIDE + k4 * 4);
                            a[buf][p][0] = v.x; a[buf][p][1] = v.y; a[buf][p][2] = v.z; a[buf][p][3] = v.w;
                        }
                    };
                    lda(0, 0);
#pragma unroll
                    for (int k4 = 0; k4 < BK / 4; ++k4) {
                        if (k4 + 1 < BK / 4) lda((k4 + 1) & 1, k4 + 1);
                        float b[2][TN];
                        auto ldb = [&](int buf, int c) {
#pragma unroll
                            for (int h = 0; h < TN / 4; ++h) {
                                const float4 u = *reinterpret_cast<const float4*>(us + c * BN + h * (WN / 2));
                                b[buf][h * 4 + 0] = u.x; b[buf][h * 4 + 1] = u.y; b[buf][h * 4 + 2] = u.z; b[buf][h * 4 + 3] = u.w;
                            }
                        };
                        ldb(0, k4 * 4);
#pragma unroll
                        for (int kk = 0; kk < 4; ++kk) {
                            if (kk + 1 < 4) ldb((kk + 1) & 1, k4 * 4 + kk + 1);
                            v2_outer<TM, TN>(acc, [&](int p) { return a[k4 & 1][p][kk]; }, [&](int q) { return b[kk & 1][q]; });
                        }
                    }
                } else {
#pragma unroll
                    for (int k4 = 0; k4 < BK / 4; ++k4) {
                        float a[TM][4];
#pragma unroll
                        for (int p = 0; p < TM; ++p) {
                            const float4 v = *reinterpret_cast<const float4*>(vs + p * WTY * P::VSTRIDE + k4 * 4);
                            a[p][0] = v.x; a[p][1] = v.y; a[p][2] = v.z; a[p][3] = v.w;
                        }
#pragma unroll
                        for (int kk = 0; kk < 4; ++kk) {
                            float b[TN];
#pragma unroll
                            for (int h = 0; h < TN / 4; ++h) {
                                const float4 u = *reinterpret_cast<const float4*>(us + (k4 * 4 + kk) * BN + h * (WN / 2));
                                b[h * 4 + 0] = u.x; b[h * 4 + 1] = u.y; b[h * 4 + 2] = u.z; b[h * 4 + 3] = u.w;
                            }
                            v2_outer<TM, TN>(acc, [&](int p) { return a[p][kk]; }, [&](int q) { return b[q]; });
                        }
                    }
                }
                st = st + 1 == NS ? 0 : st + 1;
                st_in = st_in + 1 == NS ? 0 : st_in + 1;
            }
            v2_wait<0>();
        }
        // --- epilogue: float4 stores straight from the accumulators
#pragma unroll
        for (int p = 0; p < TM; ++p) {
            const int r = VT ? row0 + (p / 4) * (WM / 2) + (p % 4) : row0 + p * WTY;
            if (r >= nt) continue;
            float* row = Mb + ((size_t)e * MS_NUM_TILES + t0 + r) * MS_K + k0;
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) {
                const int k = col0 + h * (WN / 2);
                if (k < nk)
                    __stcg(reinterpret_cast<float4*>(row + k),
                           make_float4(acc[p][h * 4], acc[p][h * 4 + 1], acc[p][h * 4 + 2], acc[p][h * 4 + 3]));
            }
        }
        if (e + 1 < e_end) __syncthreads();  // the next point's prologue rewrites the ring
    }
}

__device__ __forceinline__ void ms_gemm_task_v2(const float* U, const float* V, float* Mb, int g, int j) {
    ms_gemm_task_v2_impl<MS_TPG, MS_KPG, V2_BK, MS_NT, V2_TM, V2_TN, V2_WTY, V2_STAGES, (bool)V2_VT>(U, V, Mb, g, j);
}

#ifndef V2_MIN_BLOCKS
#define V2_MIN_BLOCKS (MS_NT <= 384 ? 384 / MS_NT : 1)
#endif
extern "C" __global__ void __launch_bounds__(MS_NT, V2_MIN_BLOCKS) ms_gemm_v2_kernel(const float* U, const float* V, float* Mb) {
    ms_gemm_task_v2(U, V, Mb, blockIdx.x / MS_SG, blockIdx.x % MS_SG);
}
