// The 3xTF32 GEMM task: M[e][tile][k] = sum over c of V[e][tile][c] * U[e][c][k] on the tensor cores, with
// FP32 accuracy. Each operand x is split once per fragment into a TF32 big part, rounded to nearest
// (cvt.rna.tf32.f32), and the FP32 remainder x - big, which the tensor cores read as TF32 by dropping its low
// 13 bits; small*big + big*small + big*big run on the tensor cores (mma.sync.m16n8k8, FP32 accumulation) from
// zero over MS_TF32X3_CHUNK 8-channel steps, and that partial sum is added to an FP32 accumulator with IEEE
// round-to-nearest; small*small is dropped (below FP32's rounding). One body per precision: its bits are the
// same for every mapping, mode and tile shape, and differ from the FFMA bodies'.
//
// Chosen by measurement on the H200 (docs/results/tensor_core/body_variants.json, 2026-11-29, 12 paper layers):
// summing two steps before the FP32 add (half the adds, no spills at 168 registers), the remainder left unrounded
// (one conversion less per element) and A fragments through ldmatrix made the GEMM 1.04-1.14x faster than the
// first body (one step, both parts rounded), with a convolution error still at or below the FFMA body's.
// MS_TF32X3_CHUNK=1 and MS_TF32X3_ROUND_SMALL=1 give those choices back for comparison.
//
// It runs on the warp body's tiling (gemm_warp_tiled: one point per block at a time, a warp owning 32 tiles
// x WN = 8 * TN output channels) and its cp.async ring, with the same shared memory:
//  * a warp's sub-tile is 2 x WN/8 mma tiles of 16 x 8; its accumulators, WN floats a thread, are the
//    FFMA body's TM x TN;
//  * A fragments (V, rows = tiles) come from V rows padded by 4 floats through ldmatrix: the eight 16-byte rows
//    of one matrix start at banks 4 (r * VROW / 4) mod 32, all different for VROW = 12, 20 or 36;
//  * B fragments (U, rows = channels) would put the four t of one column in one bank (a U row is a multiple
//    of 32 floats), so U's 16-byte chunks are stored XOR-swizzled by the row: chunk q of row c lands at
//    q ^ 2 (c mod 4), which spreads them over all 32 banks;
//  * the channel step is 8 (one mma k), so the ring's channels per step must be a multiple of 8.
// The ring's setup and loop repeat gemm_warp.cuh's lines. Moving them into one header changes the FFMA builds'
// source, which the calibrated profiles were re-validated on, so that waits for the next re-measurement of them.
#pragma once

#define MS_WM 32
#define MS_WN (8 * MS_TN)
#define MS_WARPS_N (MS_KPG / MS_WN)
#define MS_NT8 (MS_WN / 8)
#ifndef MS_TF32X3_CHUNK
#define MS_TF32X3_CHUNK 2
#endif
#ifndef MS_TF32X3_ROUND_SMALL
#define MS_TF32X3_ROUND_SMALL 0
#endif
#ifndef MS_TF32X3_SPLIT_CVT
#define MS_TF32X3_SPLIT_CVT 0
#endif
static_assert(MS_GE == 1 && MS_TM == 8 && (MS_TN == 8 || MS_TN == 4), "3xTF32 GEMM: the warp body's tiling");
static_assert(MS_TPG % MS_WM == 0 && MS_KPG % MS_WN == 0 && (MS_TPG / MS_WM) * MS_WARPS_N * 32 == MS_NT,
              "3xTF32 GEMM: the warps must cover the tile");
static_assert(MS_C % MS_BK == 0 && MS_BK % 8 == 0 && MS_K % 4 == 0 && MS_KPG % 32 == 0,
              "3xTF32 GEMM: whole 8-channel steps, 16-byte rows, U rows of whole bank cycles");

__device__ __forceinline__ void ms_cp_async16_always(float* dst, const float* src) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}

// x rounded to TF32, to nearest with ties away from zero. cvt.rna.tf32.f32 compiles to four instructions (add
// half a TF32 ulp to the bits, test for Inf/NaN, select, mask); the bit arithmetic alone is two and gives the
// same bits for every finite x. A NaN may come out as another NaN, an infinity or a zero, and then its
// remainder x - big is NaN, so a NaN or Inf operand still makes its products' sum non-finite.
__device__ __forceinline__ unsigned ms_tf32_round(float x) {
#if MS_TF32X3_SPLIT_CVT
    unsigned big;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(x));
    return big;
#else
    return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
#endif
}

__device__ __forceinline__ void ms_tf32_split(float x, unsigned& big, unsigned& small) {
    big = ms_tf32_round(x);
#if MS_TF32X3_ROUND_SMALL
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(x - __uint_as_float(big)));
#else
    small = __float_as_uint(x - __uint_as_float(big));
#endif
}

// One m16 x k8 A fragment from shared memory in one instruction: four 8 x 4 float matrices (rows 0-7 and
// 8-15, channels 0-3 and 4-7), lane l addressing row l mod 8 of matrix l / 8, land as a0..a3 of mma.m16n8k8.
__device__ __forceinline__ void ms_ldmatrix_x4(float (&a)[4], const float* row) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=f"(a[0]), "=f"(a[1]), "=f"(a[2]), "=f"(a[3]) : "r"(s));
}

__device__ __forceinline__ void ms_mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// t = A B over one 8-channel step in 3xTF32: the three passes summed from zero on the tensor cores, small
// products first. The caller adds t to its FP32 accumulator with IEEE round-to-nearest once every
// MS_TF32X3_CHUNK steps (ms_mma_3xtf32_onto sums the steps between). Accumulating straight into the
// accumulator across all the channels measured 3-9x the FFMA body's GEMM error on C = 64-512 (the tensor
// cores' adds truncate, so their error grows with the reduction) and exceeded the FP32 bound at C = 1024
// (docs/results/tensor_core/).
__device__ __forceinline__ void ms_mma_3xtf32_from_zero(float (&t)[4], const unsigned (&a_big)[4],
                                                        const unsigned (&a_small)[4], const unsigned (&b_big)[2],
                                                        const unsigned (&b_small)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%10,%10,%10};\n"
                 : "=f"(t[0]), "=f"(t[1]), "=f"(t[2]), "=f"(t[3])
                 : "r"(a_small[0]), "r"(a_small[1]), "r"(a_small[2]), "r"(a_small[3]), "r"(b_big[0]), "r"(b_big[1]),
                   "f"(0.0f));
    ms_mma_tf32(t, a_big, b_small);
    ms_mma_tf32(t, a_big, b_big);
}

__device__ __forceinline__ void ms_mma_3xtf32_onto(float (&t)[4], const unsigned (&a_big)[4], const unsigned (&a_small)[4],
                                                   const unsigned (&b_big)[2], const unsigned (&b_small)[2]) {
    ms_mma_tf32(t, a_small, b_big);
    ms_mma_tf32(t, a_big, b_small);
    ms_mma_tf32(t, a_big, b_big);
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
    constexpr int steps = MS_C / BK, KC = (BK / 8) % MS_TF32X3_CHUNK == 0 ? MS_TF32X3_CHUNK : 1;

    const int eb = j / MS_NKB, kb = j % MS_NKB;
    const int t0 = g * BM, nt = ms_min(BM, MS_NUM_TILES - t0);
    const int k0 = kb * BN, nk = ms_min(BN, MS_K - k0);
    const int e0 = eb * MS_EPG, e_end = ms_min(e0 + MS_EPG, MS_A2);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wy = warp / MS_WARPS_N, wx = warp % MS_WARPS_N;
    const int gq = lane >> 2, tq = lane & 3;
    const int u_row = tid / UQ, u_q = tid % UQ, u_col = ms_min(u_q * 4, nk - 4);
    const int v_tile = tid / (BK / 4), v_cq = tid % (BK / 4);
    const int row_a = wy * MS_WM + gq;
    // Column n = wx WN + 8 n8 + gq of U row c (c mod 4 = tq) sits at chunk (n / 4) ^ 2 tq, which is
    // 32 (wx WN / 32 + n8 / 4) + ((8 (n8 mod 4)) ^ 8 tq) + gq floats into the row.
    const int b_base = tq * BN + wx * MS_WN + gq, b_swz = tq << 3;

    for (int e = e0; e < e_end; ++e) {
        const float* ug = U + ((size_t)e * MS_C + u_row) * MS_K + k0 + u_col;
        const float* vg[VL];
#pragma unroll
        for (int l = 0; l < VL; ++l)
            vg[l] = V + ((size_t)e * MS_NUM_TILES + t0 + ms_min(v_tile + l * (NT / (BK / 4)), nt - 1)) * MS_C + v_cq * 4;
        auto issue = [&](int st) {
#pragma unroll
            for (int l = 0; l < UL; ++l) {
                const int c = u_row + l * UROWS;
                ms_cp_async16_always(Us + st * USTAGE + c * BN + ((u_q ^ ((c & 3) << 1)) << 2),
                                     ug + (size_t)l * UROWS * MS_K);
            }
            ug += (size_t)BK * MS_K;
#pragma unroll
            for (int l = 0; l < VL; ++l) {
                ms_cp_async16_always(Vs + st * VSTAGE + (v_tile + l * (NT / (BK / 4))) * VROW + v_cq * 4, vg[l]);
                vg[l] += BK;
            }
        };
        float acc[2][MS_NT8][4];
#pragma unroll
        for (int m16 = 0; m16 < 2; ++m16)
#pragma unroll
            for (int n8 = 0; n8 < MS_NT8; ++n8)
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[m16][n8][i] = 0.0f;
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
            const float* us = Us + st * USTAGE;
            const float* va = Vs + st * VSTAGE + (wy * MS_WM + (lane & 7) + (lane & 8)) * VROW + (lane >> 4) * 4;
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; k8 += KC) {
                unsigned a_big[KC][2][4], a_small[KC][2][4];
#pragma unroll
                for (int q = 0; q < KC; ++q)
#pragma unroll
                    for (int m16 = 0; m16 < 2; ++m16) {
                        float a[4];
                        ms_ldmatrix_x4(a, va + m16 * 16 * VROW + (k8 + q) * 8);
#pragma unroll
                        for (int i = 0; i < 4; ++i) ms_tf32_split(a[i], a_big[q][m16][i], a_small[q][m16][i]);
                    }
#pragma unroll
                for (int n8 = 0; n8 < MS_NT8; ++n8) {
                    unsigned b_big[KC][2], b_small[KC][2];
#pragma unroll
                    for (int q = 0; q < KC; ++q)
#pragma unroll
                        for (int i = 0; i < 2; ++i)
                            ms_tf32_split(us[((k8 + q) * 8 + i * 4) * BN + b_base + 32 * (n8 >> 2) + ((8 * (n8 & 3)) ^ b_swz)],
                                          b_big[q][i], b_small[q][i]);
#pragma unroll
                    for (int m16 = 0; m16 < 2; ++m16) {
                        float t[4];
                        ms_mma_3xtf32_from_zero(t, a_big[0][m16], a_small[0][m16], b_big[0], b_small[0]);
#pragma unroll
                        for (int q = 1; q < KC; ++q) ms_mma_3xtf32_onto(t, a_big[q][m16], a_small[q][m16], b_big[q], b_small[q]);
#pragma unroll
                        for (int i = 0; i < 4; ++i) acc[m16][n8][i] = __fadd_rn(acc[m16][n8][i], t[i]);
                    }
                }
            }
            st = st + 1 == NS ? 0 : st + 1;
            st_in = st_in + 1 == NS ? 0 : st_in + 1;
        }
        ms_cp_wait<0>();
#pragma unroll
        for (int m16 = 0; m16 < 2; ++m16)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row_a + m16 * 16 + h * 8;
                if (r >= nt) continue;
                float* row = Mb + ((size_t)e * MS_NUM_TILES + t0 + r) * MS_K + k0;
#pragma unroll
                for (int n8 = 0; n8 < MS_NT8; ++n8) {
                    const int k = wx * MS_WN + n8 * 8 + 2 * tq;
                    if (k < nk)
                        __stcg(reinterpret_cast<float2*>(row + k), make_float2(acc[m16][n8][2 * h], acc[m16][n8][2 * h + 1]));
                }
            }
        if (e + 1 < e_end) __syncthreads();
    }
}
