// The warp-tiled GEMM task: M[e][tile][k] = sum over c ascending of V[e][tile][c] * U[e][c][k], one
// __fmaf_rn per channel into an accumulator that starts at 0.0f, so its output is bit for bit that of
// the generic ms_gemm_task (winograd.cuh) and of every other build.
//
// Why it is faster (docs/results/gemm_v2_h200/: 1.35-1.46x the generic body, 1.05-1.18x cuBLAS on the
// ResNet GEMMs): Nsight Compute showed the generic body issue-bound, with 31% of its instructions not
// FFMA. Here
//  * a warp owns a WM x WN sub-tile (tiles x k) with its lanes in a WTY x WTX grid, and a thread's
//    TN columns come in runs of 4 spaced WN/2 apart, so each LDS.128 of a warp is one wavefront;
//  * the fragments are double-buffered in registers: the loads of channel c+1 are issued before the
//    FFMAs of channel c;
//  * every per-thread address is computed once per point and advanced by a constant per step: no
//    integer division, modulo or bounds test in the main loop (ragged tiles and channels read a
//    clamped valid address and are never stored);
//  * the epilogue stores float4s; the FFMAs run in a snake order (odd rows reversed).
// It needs one Winograd point per thread block at a time (GE = 1), TM = 8, TN = 4 or 8, C a multiple of
// the ring's channels per step and K a multiple of 4; megasim.contract.resources.gemm_warp_tiled
// decides that, and config_header sets MS_GEMM_WARP. The ring (MS_BK channels, MS_STAGES stages,
// V rows padded by 4 floats) has the generic body's shape, so the resource plan is the same.
#pragma once

#define MS_WTY 4
#define MS_WTX (32 / MS_WTY)
#define MS_WM (MS_WTY * MS_TM)
#define MS_WN (MS_WTX * MS_TN)
#define MS_WARPS_N (MS_KPG / MS_WN)
static_assert(MS_GE == 1 && MS_TM == 8 && (MS_TN == 8 || MS_TN == 4), "warp-tiled GEMM: one point, 8 x 4 or 8 x 8");
static_assert(MS_TPG % MS_WM == 0 && MS_KPG % MS_WN == 0 && (MS_TPG / MS_WM) * MS_WARPS_N * 32 == MS_NT,
              "warp-tiled GEMM: the warps must cover the tile");
static_assert(MS_C % MS_BK == 0 && MS_K % 4 == 0, "warp-tiled GEMM: whole channel steps, 16-byte rows");

__device__ __forceinline__ void ms_cp_async16_always(float* dst, const float* src) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}

__device__ __forceinline__ void ms_gemm_outer(float (&acc)[MS_TM][MS_TN], const float (&a)[MS_TM], const float (&b)[MS_TN]) {
#pragma unroll
    for (int p = 0; p < MS_TM; ++p)
#pragma unroll
        for (int q0 = 0; q0 < MS_TN; ++q0) {
            const int q = (p & 1) ? MS_TN - 1 - q0 : q0;
            acc[p][q] = __fmaf_rn(a[p], b[q], acc[p][q]);
        }
}

__device__ __forceinline__ void ms_gemm_task(const float* U, const float* V, float* Mb, int g, int j) {
    constexpr int BM = MS_TPG, BN = MS_KPG, BK = MS_BK, NT = MS_NT, NS = MS_STAGES;
    constexpr int VROW = BK + 4, VSTAGE = BM * VROW, USTAGE = BK * BN;
    constexpr int UQ = BN / 4, UROWS = NT / UQ, UL = BK * UQ / NT, VL = BM * (BK / 4) / NT;
    static_assert(NT % UQ == 0 && UL >= 1 && BK * UQ % NT == 0, "U copy layout");
    static_assert(VL >= 1 && BM * (BK / 4) % NT == 0 && NT % (BK / 4) == 0, "V copy layout");
    __shared__ __align__(16) float smem[NS * (VSTAGE + USTAGE)];
    float* const Vs = smem;
    float* const Us = smem + NS * VSTAGE;
    constexpr int steps = MS_C / BK;

    const int eb = j / MS_NKB, kb = j % MS_NKB;
    const int t0 = g * BM, nt = ms_min(BM, MS_NUM_TILES - t0);
    const int k0 = kb * BN, nk = ms_min(BN, MS_K - k0);
    const int e0 = eb * MS_EPG, e_end = ms_min(e0 + MS_EPG, MS_A2);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wy = warp / MS_WARPS_N, wx = warp % MS_WARPS_N;
    const int ty = lane / MS_WTX, tx = lane % MS_WTX;
    const int u_row = tid / UQ, u_col = ms_min((tid % UQ) * 4, nk - 4);
    float* const us_w = Us + u_row * BN + (tid % UQ) * 4;
    const int v_tile = tid / (BK / 4), v_cq = tid % (BK / 4);
    const int col0 = wx * MS_WN + tx * 4, row0 = wy * MS_WM + ty;

    for (int e = e0; e < e_end; ++e) {
        const float* ug = U + ((size_t)e * MS_C + u_row) * MS_K + k0 + u_col;
        const float* vg[VL];
#pragma unroll
        for (int l = 0; l < VL; ++l)
            vg[l] = V + ((size_t)e * MS_NUM_TILES + t0 + ms_min(v_tile + l * (NT / (BK / 4)), nt - 1)) * MS_C + v_cq * 4;
        auto issue = [&](int st) {
#pragma unroll
            for (int l = 0; l < UL; ++l)
                ms_cp_async16_always(us_w + st * USTAGE + l * UROWS * BN, ug + (size_t)l * UROWS * MS_K);
            ug += (size_t)BK * MS_K;
#pragma unroll
            for (int l = 0; l < VL; ++l) {
                ms_cp_async16_always(Vs + st * VSTAGE + (v_tile + l * (NT / (BK / 4))) * VROW + v_cq * 4, vg[l]);
                vg[l] += BK;
            }
        };
        float acc[MS_TM][MS_TN];
#pragma unroll
        for (int p = 0; p < MS_TM; ++p)
#pragma unroll
            for (int q = 0; q < MS_TN; ++q) acc[p][q] = 0.0f;
#pragma unroll
        for (int s = 0; s < NS - 1; ++s) {
            if (s < steps) issue(s);
            ms_cp_commit();
        }
        int st = 0, st_in = NS - 1;
#pragma unroll 1
        for (int s = 0; s < steps; ++s) {
            ms_cp_wait<NS - 2>();
            __syncthreads();
            if (s + NS - 1 < steps) issue(st_in);
            ms_cp_commit();
            const float* vs = Vs + st * VSTAGE + row0 * VROW;
            const float* us = Us + st * USTAGE + col0;
            float a[2][MS_TM][4];
            auto lda = [&](int buf, int k4) {
#pragma unroll
                for (int p = 0; p < MS_TM; ++p) {
                    const float4 v = *reinterpret_cast<const float4*>(vs + p * MS_WTY * VROW + k4 * 4);
                    a[buf][p][0] = v.x; a[buf][p][1] = v.y; a[buf][p][2] = v.z; a[buf][p][3] = v.w;
                }
            };
            lda(0, 0);
#pragma unroll
            for (int k4 = 0; k4 < BK / 4; ++k4) {
                if (k4 + 1 < BK / 4) lda((k4 + 1) & 1, k4 + 1);
                float b[2][MS_TN];
                auto ldb = [&](int buf, int c) {
#pragma unroll
                    for (int h = 0; h < MS_TN / 4; ++h) {
                        const float4 u = *reinterpret_cast<const float4*>(us + c * BN + h * (MS_WN / 2));
                        b[buf][h * 4 + 0] = u.x; b[buf][h * 4 + 1] = u.y; b[buf][h * 4 + 2] = u.z; b[buf][h * 4 + 3] = u.w;
                    }
                };
                ldb(0, k4 * 4);
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    if (kk + 1 < 4) ldb((kk + 1) & 1, k4 * 4 + kk + 1);
                    float ap[MS_TM];
#pragma unroll
                    for (int p = 0; p < MS_TM; ++p) ap[p] = a[k4 & 1][p][kk];
                    ms_gemm_outer(acc, ap, b[kk & 1]);
                }
            }
            st = st + 1 == NS ? 0 : st + 1;
            st_in = st_in + 1 == NS ? 0 : st_in + 1;
        }
        ms_cp_wait<0>();
#pragma unroll
        for (int p = 0; p < MS_TM; ++p) {
            const int r = row0 + p * MS_WTY;
            if (r >= nt) continue;
            float* row = Mb + ((size_t)e * MS_NUM_TILES + t0 + r) * MS_K + k0;
#pragma unroll
            for (int h = 0; h < MS_TN / 4; ++h) {
                const int k = col0 + h * (MS_WN / 2);
                if (k < nk)
                    __stcg(reinterpret_cast<float4*>(row + k),
                           make_float4(acc[p][h * 4], acc[p][h * 4 + 1], acc[p][h * 4 + 2], acc[p][h * 4 + 3]));
            }
        }
        if (e + 1 < e_end) __syncthreads();
    }
}
