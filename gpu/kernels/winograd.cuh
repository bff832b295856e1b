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
#pragma once
#ifndef MS_CONFIG_INCLUDED
#include "ms_config.cuh"
#endif
#include "encoding.cuh"

#define MS_A2 (MS_ALPHA * MS_ALPHA)
#ifndef MS_BK
#define MS_BK 8
#endif

__device__ __forceinline__ int ms_min(int a, int b) { return a < b ? a : b; }

// ---- filter transform: U[e][c][k] = (G g G^T)[e] for k in this task's block
__device__ __forceinline__ void ms_filter_task(const float* __restrict__ w, float* U, int f) {
    const int k0 = f * MS_KPF;
    const int nk = ms_min(MS_KPF, MS_K - k0);
    for (int i = threadIdx.x; i < nk * MS_C; i += MS_NT) {
        const int c = i % MS_C, k = k0 + i / MS_C;
        float g[9], t[MS_ALPHA * 3], u[MS_A2];
#pragma unroll
        for (int r = 0; r < 9; ++r) g[r] = __ldg(w + ((size_t)k * 9 + r) * MS_C + c);
#pragma unroll
        for (int s = 0; s < 3; ++s) ms_g<3, 3>(g + s, t + s);
#pragma unroll
        for (int a = 0; a < MS_ALPHA; ++a) ms_g<1, 1>(t + a * 3, u + a * MS_ALPHA);
#pragma unroll
        for (int e = 0; e < MS_A2; ++e) U[((size_t)e * MS_C + c) * MS_K + k] = u[e];
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
                d[r * MS_ALPHA + s] = in ? __ldg(x + (((size_t)n * MS_H + row) * MS_W + col) * MS_C + c) : 0.0f;
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
                if (row < MS_H && col < MS_W) y[(((size_t)n * MS_H + row) * MS_W + col) * MS_K + k] = o[r * MS_M + s];
            }
        }
    }
}

// ---- batched GEMM tile: M[e][tile][k] = sum over c ascending of V[e][tile][c] * U[e][c][k]
//
// MS_GE Winograd points are computed at once; each thread holds a TM x TN
// register block of one point. Channels stream through shared memory MS_BK
// at a time, double-buffered: the next chunk's global loads are in flight
// while the current one is multiplied. A thread's rows (cols) come in runs
// of 4 spaced 4*threads apart, so its 128-bit shared loads do not collide.
#define MS_TY (MS_TPG / MS_TM)
#define MS_TX (MS_KPG / MS_TN)
#define MS_VW (MS_VEC_C ? 4 : 1)
#define MS_UW (MS_VEC_K ? 4 : 1)
#define MS_V_ITEMS (MS_GE * MS_TPG * (MS_BK / MS_VW))
#define MS_U_ITEMS (MS_GE * MS_BK * (MS_KPG / MS_UW))
#define MS_V_LOADS ((MS_V_ITEMS + MS_NT - 1) / MS_NT)
#define MS_U_LOADS ((MS_U_ITEMS + MS_NT - 1) / MS_NT)
#define MS_VPAD (MS_TPG + 4)
#define MS_UPAD (MS_KPG + 4)

template <int T, int D>
__device__ __forceinline__ int ms_owned(int tid, int q) {  // q-th of the T indices thread tid (of D) owns
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

__device__ __forceinline__ void ms_gemm_task(const float* U, const float* V, float* Mb, int g, int j) {
    __shared__ __align__(16) float Vs[2][MS_GE][MS_BK][MS_VPAD];
    __shared__ __align__(16) float Us[2][MS_GE][MS_BK][MS_UPAD];
    const int eb = j / MS_NKB, kb = j % MS_NKB;
    const int t0 = g * MS_TPG, nt = ms_min(MS_TPG, MS_NUM_TILES - t0);
    const int k0 = kb * MS_KPG, nk = ms_min(MS_KPG, MS_K - k0);
    const int e0 = eb * MS_EPG, e_end = ms_min(e0 + MS_EPG, MS_A2);
    const int tid = threadIdx.x;
    const int ge = tid / (MS_TX * MS_TY), tr = tid % (MS_TX * MS_TY);
    const int tx = tr % MS_TX, ty = tr / MS_TX;
    float vreg[MS_V_LOADS][MS_VW], ureg[MS_U_LOADS][MS_UW];

    for (int eg = e0; eg < e_end; eg += MS_GE) {
        auto load = [&](int cc) {
#pragma unroll
            for (int l = 0; l < MS_V_LOADS; ++l) {
                const int i = tid + l * MS_NT;
                const int cq = i % (MS_BK / MS_VW), tl = (i / (MS_BK / MS_VW)) % MS_TPG, gl = i / (MS_BK / MS_VW * MS_TPG);
                const int c = cc + cq * MS_VW, e = eg + gl;
                const bool ok = i < MS_V_ITEMS && tl < nt && e < e_end && c < MS_C;
                const float* p = V + ((size_t)e * MS_NUM_TILES + t0 + tl) * MS_C + c;
#if MS_VEC_C
                const float4 v = ok ? __ldcg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
                vreg[l][0] = v.x; vreg[l][1] = v.y; vreg[l][2] = v.z; vreg[l][3] = v.w;
#else
                vreg[l][0] = ok ? __ldcg(p) : 0.0f;
#endif
            }
#pragma unroll
            for (int l = 0; l < MS_U_LOADS; ++l) {
                const int i = tid + l * MS_NT;
                const int kq = i % (MS_KPG / MS_UW), kk = (i / (MS_KPG / MS_UW)) % MS_BK, gl = i / (MS_KPG / MS_UW * MS_BK);
                const int c = cc + kk, k = kq * MS_UW, e = eg + gl;
                const bool ok = i < MS_U_ITEMS && k < nk && e < e_end && c < MS_C;
                const float* p = U + ((size_t)e * MS_C + c) * MS_K + k0 + k;
#if MS_VEC_K
                const float4 v = ok ? __ldcg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
                ureg[l][0] = v.x; ureg[l][1] = v.y; ureg[l][2] = v.z; ureg[l][3] = v.w;
#else
                ureg[l][0] = ok ? __ldcg(p) : 0.0f;
#endif
            }
        };
        auto store = [&](int buf) {
#pragma unroll
            for (int l = 0; l < MS_V_LOADS; ++l) {
                const int i = tid + l * MS_NT;
                const int cq = i % (MS_BK / MS_VW), tl = (i / (MS_BK / MS_VW)) % MS_TPG, gl = i / (MS_BK / MS_VW * MS_TPG);
                if (i < MS_V_ITEMS) {
#pragma unroll
                    for (int q = 0; q < MS_VW; ++q) Vs[buf][gl][cq * MS_VW + q][tl] = vreg[l][q];
                }
            }
#pragma unroll
            for (int l = 0; l < MS_U_LOADS; ++l) {
                const int i = tid + l * MS_NT;
                const int kq = i % (MS_KPG / MS_UW), kk = (i / (MS_KPG / MS_UW)) % MS_BK, gl = i / (MS_KPG / MS_UW * MS_BK);
                if (i < MS_U_ITEMS) {
#pragma unroll
                    for (int q = 0; q < MS_UW; ++q) Us[buf][gl][kk][kq * MS_UW + q] = ureg[l][q];
                }
            }
        };

        float acc[MS_TM][MS_TN];
#pragma unroll
        for (int a = 0; a < MS_TM; ++a)
#pragma unroll
            for (int b = 0; b < MS_TN; ++b) acc[a][b] = 0.0f;

        load(0);
        store(0);
        __syncthreads();
        constexpr int chunks = (MS_C + MS_BK - 1) / MS_BK;
        for (int ch = 0; ch < chunks; ++ch) {
            const int buf = ch & 1;
            if (ch + 1 < chunks) load((ch + 1) * MS_BK);
#pragma unroll
            for (int kk = 0; kk < MS_BK; ++kk) {
                float a[MS_TM], b[MS_TN];
                ms_fragment<MS_TM, MS_TY>(Vs[buf][ge][kk], ty, a);
                ms_fragment<MS_TN, MS_TX>(Us[buf][ge][kk], tx, b);
#pragma unroll
                for (int p = 0; p < MS_TM; ++p)
#pragma unroll
                    for (int q = 0; q < MS_TN; ++q) acc[p][q] = __fmaf_rn(a[p], b[q], acc[p][q]);
            }
            if (ch + 1 < chunks) store(buf ^ 1);
            __syncthreads();
        }

        const int e = eg + ge;
        if (e < e_end) {
#pragma unroll
            for (int p = 0; p < MS_TM; ++p) {
                const int tl = ms_owned<MS_TM, MS_TY>(ty, p);
                if (tl >= nt) continue;
                float* row = Mb + ((size_t)e * MS_NUM_TILES + t0 + tl) * MS_K + k0;
                if constexpr (MS_VEC_K && MS_TN >= 4) {
#pragma unroll
                    for (int s = 0; s < MS_TN / 4; ++s) {
                        const int k = ms_owned<MS_TN, MS_TX>(tx, s * 4);
                        if (k < nk)
                            *reinterpret_cast<float4*>(row + k) =
                                make_float4(acc[p][s * 4], acc[p][s * 4 + 1], acc[p][s * 4 + 2], acc[p][s * 4 + 3]);
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
    }
}
