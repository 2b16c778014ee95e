/* Causal attention with grouped-query attention, forward and backward, bf16 in, fp32
 * accumulation on tensor cores (WMMA 16x16x16), tiled with an online softmax.
 *
 * Algorithms: FlashAttention (Dao et al., NeurIPS 2022) Algorithm 1 for the forward's
 * running max/sum, with FlashAttention-2's (Dao, 2023) loop order: one thread block owns a
 * tile of queries and walks the key tiles, normalising by the running sum once at the end.
 * The backward is FlashAttention-2's Algorithm 2: one block owns a tile of keys, walks the
 * query tiles, keeps dK and dV on chip and adds its share of dQ into an fp32 accumulator
 * with atomics. Every block of a GQA group's query heads shares the kv tile, so dK and dV
 * of a kv head come out of one block (no atomics, deterministic).
 *
 * Tiles live in shared memory and the matrix products go through mma_smem(), which the
 * block's warps share 16x16 output tile by tile. This keeps the element <-> thread mapping
 * of WMMA fragments out of the softmax code (the fragment layout is opaque), at the cost of
 * some shared-memory traffic: a correctness-first kernel, not a FlashAttention-3 rival.
 * kernels_cpu_attn_fwd_tiled() is this forward's algorithm on the CPU, tested in CI.
 *
 * Kept to the C/C++ common subset apart from the WMMA templates themselves. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "bf16 tensor-core attention needs sm_80 or newer: set -gencode for arch 80+"
#endif

namespace wmma = nvcuda::wmma;
typedef __nv_bfloat16 bf16;

#define NWARPS 4
#define NTHREADS (NWARPS * 32)
#define FWD_BQ 64 /* queries per forward block */
#define BK 64     /* keys per tile (both passes) */
#define BWD_BQ 32 /* queries per backward step: keeps shared memory under A100's 163 KiB */

/* ------------------------------------------------------------ tile products --- */
/* One 16x16x16 step: acc += A(m0.., k0..) · B(k0.., n0..). LA/LB: wmma::row_major for an
 * operand stored as is, wmma::col_major for one stored transposed. */
template <typename LA, typename LB>
__device__ static void mma_step(wmma::fragment<wmma::accumulator, 16, 16, 16, float> &acc, const bf16 *a, int lda,
				const bf16 *b, int ldb)
{
	wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, LA> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, LB> fb;
	wmma::load_matrix_sync(fa, a, lda);
	wmma::load_matrix_sync(fb, b, ldb);
	wmma::mma_sync(acc, fa, fb, acc);
}

/* C[MxN] (fp32, row-major, ldc) = (accumulate ? C : 0) + A[MxK] · B[KxN], all in shared
 * memory. a_t: A stored transposed (element (m,k) at A[k*lda + m]); b_t: B stored
 * transposed (element (k,n) at B[n*ldb + k]). M, N, K multiples of 16. Callers
 * synchronise the block before reading C. */
__device__ static void mma_smem(const bf16 *A, int lda, bool a_t, const bf16 *B, int ldb, bool b_t, float *C,
				int ldc, int M, int N, int K, bool accumulate)
{
	const int warp = threadIdx.x / 32, tiles_n = N / 16, tiles = (M / 16) * tiles_n;
	for (int tile = warp; tile < tiles; tile += NWARPS) {
		const int m0 = (tile / tiles_n) * 16, n0 = (tile % tiles_n) * 16;
		wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
		if (accumulate)
			wmma::load_matrix_sync(acc, C + m0 * ldc + n0, ldc, wmma::mem_row_major);
		else
			wmma::fill_fragment(acc, 0.0f);
		for (int k0 = 0; k0 < K; k0 += 16) {
			const bf16 *a = a_t ? A + k0 * lda + m0 : A + m0 * lda + k0;
			const bf16 *b = b_t ? B + n0 * ldb + k0 : B + k0 * ldb + n0;
			if (!a_t && !b_t)
				mma_step<wmma::row_major, wmma::row_major>(acc, a, lda, b, ldb);
			else if (!a_t && b_t)
				mma_step<wmma::row_major, wmma::col_major>(acc, a, lda, b, ldb);
			else if (a_t && !b_t)
				mma_step<wmma::col_major, wmma::row_major>(acc, a, lda, b, ldb);
			else
				mma_step<wmma::col_major, wmma::col_major>(acc, a, lda, b, ldb);
		}
		wmma::store_matrix_sync(C + m0 * ldc + n0, acc, ldc, wmma::mem_row_major);
	}
}

/* Rows r0..r0+rows-1 of head hx of sequence n of a [nseq][S][Hx][D] tensor into a dense
 * [rows][D] tile, rows past S zero-filled. 16-byte vectors (D % 16 == 0). */
__device__ static void load_rows(bf16 *dst, const bf16 *src, int n, int r0, int rows, int S, int Hx, int hx, int D)
{
	const int vec = D / 8;
	for (int idx = threadIdx.x; idx < rows * vec; idx += NTHREADS) {
		const int r = idx / vec, c = (idx % vec) * 8;
		uint4 val = make_uint4(0, 0, 0, 0);
		if (r0 + r < S)
			val = *(const uint4 *)(src + (((size_t)n * S + r0 + r) * Hx + hx) * D + c);
		*(uint4 *)(dst + r * D + c) = val;
	}
}

__device__ static float warp_max(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

__device__ static float warp_sum(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

typedef struct attn_params {
	const bf16 *q, *k, *v, *o, *dout;
	bf16 *out, *dq, *dk, *dv;
	float *lse, *dq_acc, *drow;
	int S, H, Hkv, D, causal;
	float scale;
} attn_params;

/* ---------------------------------------------------------------- forward --- */
static size_t fwd_smem_bytes(int D)
{
	return (size_t)(FWD_BQ * D + 2 * BK * D + FWD_BQ * BK) * sizeof(bf16) +
	       (size_t)(FWD_BQ * BK + FWD_BQ * D + 3 * FWD_BQ) * sizeof(float);
}

__global__ void __launch_bounds__(NTHREADS) attn_fwd_kernel(attn_params p)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const int D = p.D, n = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * FWD_BQ;
	const int kvh = h / (p.H / p.Hkv);
	bf16 *Qs = (bf16 *)smem;          /* FWD_BQ x D */
	bf16 *Ks = Qs + FWD_BQ * D;       /* BK x D */
	bf16 *Vs = Ks + BK * D;           /* BK x D */
	bf16 *Ps = Vs + BK * D;           /* FWD_BQ x BK, probabilities in bf16 for P·V */
	float *Ss = (float *)(Ps + FWD_BQ * BK); /* FWD_BQ x BK scores */
	float *Os = Ss + FWD_BQ * BK;     /* FWD_BQ x D unnormalised output */
	float *row_m = Os + FWD_BQ * D, *row_l = row_m + FWD_BQ, *row_a = row_l + FWD_BQ;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

	load_rows(Qs, p.q, n, i0, FWD_BQ, p.S, p.H, h, D);
	for (int r = threadIdx.x; r < FWD_BQ; r += NTHREADS) {
		row_m[r] = -INFINITY;
		row_l[r] = 0.0f;
	}
	for (int e = threadIdx.x; e < FWD_BQ * D; e += NTHREADS)
		Os[e] = 0.0f;
	const int q_end = min(i0 + FWD_BQ, p.S); /* one past the tile's last query */
	const int k_end = p.causal ? q_end : p.S; /* causal: later key tiles are all masked */
	for (int j0 = 0; j0 < k_end; j0 += BK) {
		__syncthreads(); /* the previous tile's Ks, Vs, Ps are no longer read */
		load_rows(Ks, p.k, n, j0, BK, p.S, p.Hkv, kvh, D);
		load_rows(Vs, p.v, n, j0, BK, p.S, p.Hkv, kvh, D);
		__syncthreads();
		mma_smem(Qs, D, false, Ks, D, true, Ss, BK, FWD_BQ, BK, D, false); /* S = Q Kᵀ */
		__syncthreads();
		/* Online softmax, one warp per row, two columns per lane (BK = 64). */
		for (int r = warp; r < FWD_BQ; r += NWARPS) {
			const int i = i0 + r, ja = j0 + lane, jb = j0 + lane + 32;
			float sa = Ss[r * BK + lane] * p.scale, sb = Ss[r * BK + lane + 32] * p.scale;
			if (i >= p.S || ja >= p.S || (p.causal && ja > i))
				sa = -INFINITY;
			if (i >= p.S || jb >= p.S || (p.causal && jb > i))
				sb = -INFINITY;
			const float m_old = row_m[r];
			const float m_new = fmaxf(m_old, warp_max(fmaxf(sa, sb)));
			const float pa = sa == -INFINITY ? 0.0f : expf(sa - m_new);
			const float pb = sb == -INFINITY ? 0.0f : expf(sb - m_new);
			const float sum = warp_sum(pa + pb);
			Ps[r * BK + lane] = __float2bfloat16_rn(pa);
			Ps[r * BK + lane + 32] = __float2bfloat16_rn(pb);
			if (lane == 0) {
				const float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
				row_a[r] = alpha;
				row_l[r] = row_l[r] * alpha + sum;
				row_m[r] = m_new;
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < FWD_BQ * D; e += NTHREADS)
			Os[e] *= row_a[e / D];
		__syncthreads();
		mma_smem(Ps, BK, false, Vs, D, false, Os, D, FWD_BQ, D, BK, true); /* O += P V */
	}
	__syncthreads();
	for (int e = threadIdx.x; e < FWD_BQ * D; e += NTHREADS) {
		const int r = e / D, c = e % D, i = i0 + r;
		if (i < p.S)
			p.out[(((size_t)n * p.S + i) * p.H + h) * D + c] = __float2bfloat16_rn(Os[e] / row_l[r]);
	}
	for (int r = threadIdx.x; r < FWD_BQ; r += NTHREADS)
		if (i0 + r < p.S)
			p.lse[((size_t)n * p.H + h) * p.S + i0 + r] = row_m[r] + logf(row_l[r]);
}

/* --------------------------------------------------------------- backward --- */
/* D_i = rowsum(dO_i ∘ O_i) per query row and head (FlashAttention-2, Algorithm 2 line 4);
 * one warp per row. drow is [nseq][H][S]. */
__global__ void attn_bwd_rowsum_kernel(attn_params p, int nseq)
{
	const size_t rows = (size_t)nseq * p.S * p.H;
	const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	const int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	/* row enumerates [nseq][S][H], matching the q layout */
	const size_t h = row % p.H, i = (row / p.H) % p.S, n = row / ((size_t)p.H * p.S);
	const bf16 *o = p.o + row * p.D, *dout = p.dout + row * p.D;
	float acc = 0.0f;
	for (int c = lane; c < p.D; c += 32)
		acc += __bfloat162float(o[c]) * __bfloat162float(dout[c]);
	acc = warp_sum(acc);
	if (lane == 0)
		p.drow[(n * p.H + h) * p.S + i] = acc;
}

static size_t bwd_smem_bytes(int D)
{
	return (size_t)(2 * BK * D + 2 * BWD_BQ * D + BWD_BQ * BK) * sizeof(bf16) +
	       (size_t)(2 * BWD_BQ * BK + 2 * BK * D + BWD_BQ * D + 2 * BWD_BQ) * sizeof(float);
}

__global__ void __launch_bounds__(NTHREADS) attn_bwd_kernel(attn_params p)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const int D = p.D, n = blockIdx.z, kvh = blockIdx.y, j0 = blockIdx.x * BK;
	const int group = p.H / p.Hkv;
	bf16 *Ks = (bf16 *)smem;           /* BK x D */
	bf16 *Vs = Ks + BK * D;            /* BK x D */
	bf16 *Qs = Vs + BK * D;            /* BWD_BQ x D */
	bf16 *dOs = Qs + BWD_BQ * D;       /* BWD_BQ x D */
	bf16 *Ps = dOs + BWD_BQ * D;       /* BWD_BQ x BK: P in bf16, then dS in bf16 */
	float *Ss = (float *)(Ps + BWD_BQ * BK); /* BWD_BQ x BK: P in fp32 */
	float *dPs = Ss + BWD_BQ * BK;     /* BWD_BQ x BK: dP = dO Vᵀ */
	float *dKs = dPs + BWD_BQ * BK;    /* BK x D, unscaled */
	float *dVs = dKs + BK * D;         /* BK x D */
	float *dQs = dVs + BK * D;         /* BWD_BQ x D, this step's dS K */
	float *lse_r = dQs + BWD_BQ * D, *d_r = lse_r + BWD_BQ;

	load_rows(Ks, p.k, n, j0, BK, p.S, p.Hkv, kvh, D);
	load_rows(Vs, p.v, n, j0, BK, p.S, p.Hkv, kvh, D);
	for (int e = threadIdx.x; e < BK * D; e += NTHREADS) {
		dKs[e] = 0.0f;
		dVs[e] = 0.0f;
	}
	/* Causal: queries before j0 see none of these keys. */
	const int q_first = p.causal ? (j0 / BWD_BQ) * BWD_BQ : 0;
	for (int h = kvh * group; h < (kvh + 1) * group; h++)
		for (int i0 = q_first; i0 < p.S; i0 += BWD_BQ) {
			__syncthreads(); /* previous step done with Qs, dOs, Ps, dQs */
			load_rows(Qs, p.q, n, i0, BWD_BQ, p.S, p.H, h, D);
			load_rows(dOs, p.dout, n, i0, BWD_BQ, p.S, p.H, h, D);
			for (int r = threadIdx.x; r < BWD_BQ; r += NTHREADS) {
				const int i = i0 + r;
				lse_r[r] = i < p.S ? p.lse[((size_t)n * p.H + h) * p.S + i] : 0.0f;
				d_r[r] = i < p.S ? p.drow[((size_t)n * p.H + h) * p.S + i] : 0.0f;
			}
			__syncthreads();
			mma_smem(Qs, D, false, Ks, D, true, Ss, BK, BWD_BQ, BK, D, false); /* S = Q Kᵀ */
			__syncthreads();
			for (int e = threadIdx.x; e < BWD_BQ * BK; e += NTHREADS) {
				const int r = e / BK, c = e % BK, i = i0 + r, j = j0 + c;
				const bool live = i < p.S && j < p.S && (!p.causal || j <= i);
				const float pr = live ? expf(Ss[e] * p.scale - lse_r[r]) : 0.0f;
				Ss[e] = pr;
				Ps[e] = __float2bfloat16_rn(pr);
			}
			__syncthreads();
			mma_smem(Ps, BK, true, dOs, D, false, dVs, D, BK, D, BWD_BQ, true);   /* dV += Pᵀ dO */
			mma_smem(dOs, D, false, Vs, D, true, dPs, BK, BWD_BQ, BK, D, false); /* dP = dO Vᵀ */
			__syncthreads();
			for (int e = threadIdx.x; e < BWD_BQ * BK; e += NTHREADS)
				Ps[e] = __float2bfloat16_rn(Ss[e] * (dPs[e] - d_r[e / BK])); /* dS = P∘(dP − D) */
			__syncthreads();
			mma_smem(Ps, BK, true, Qs, D, false, dKs, D, BK, D, BWD_BQ, true);   /* dK += dSᵀ Q */
			mma_smem(Ps, BK, false, Ks, D, false, dQs, D, BWD_BQ, D, BK, false); /* dQ_i += dS K */
			__syncthreads();
			for (int e = threadIdx.x; e < BWD_BQ * D; e += NTHREADS) {
				const int r = e / D, c = e % D, i = i0 + r;
				if (i < p.S)
					atomicAdd(p.dq_acc + (((size_t)n * p.S + i) * p.H + h) * D + c, dQs[e]);
			}
		}
	__syncthreads();
	for (int e = threadIdx.x; e < BK * D; e += NTHREADS) {
		const int r = e / D, c = e % D, j = j0 + r;
		if (j < p.S) {
			const size_t at = (((size_t)n * p.S + j) * p.Hkv + kvh) * D + c;
			p.dk[at] = __float2bfloat16_rn(dKs[e] * p.scale);
			p.dv[at] = __float2bfloat16_rn(dVs[e]);
		}
	}
}

__global__ void attn_bwd_dq_kernel(const float *acc, bf16 *dq, size_t n, float scale)
{
	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (size_t)gridDim.x * blockDim.x)
		dq[e] = __float2bfloat16_rn(acc[e] * scale);
}

/* ---------------------------------------------------------------- launchers --- */
static int check_shape(const kernels_attn_shape *s, const void *const *ptrs, int n_ptrs)
{
	if (kernels_attn_shape_check(s) || s->head_dim % 16 != 0 || s->head_dim > KERNELS_ATTN_MAX_DIM ||
	    s->nseq > 65535 || s->heads > 65535)
		return (int)cudaErrorInvalidValue;
	for (int i = 0; i < n_ptrs; i++)
		if ((uintptr_t)ptrs[i] % 16 != 0)
			return (int)cudaErrorMisalignedAddress;
	return 0;
}

static attn_params params_of(const kernels_attn_shape *s)
{
	attn_params p;
	memset(&p, 0, sizeof p);
	p.S = s->seq;
	p.H = s->heads;
	p.Hkv = s->kv_heads;
	p.D = s->head_dim;
	p.causal = s->causal;
	p.scale = 1.0f / sqrtf((float)s->head_dim);
	return p;
}

extern "C" int kernels_cuda_attn_fwd(const kernels_attn_shape *s, const void *q, const void *k, const void *v,
				     void *o, float *lse, void *stream)
{
	const void *ptrs[] = {q, k, v, o};
	int rc = check_shape(s, ptrs, 4);
	if (rc)
		return rc;
	attn_params p = params_of(s);
	p.q = (const bf16 *)q;
	p.k = (const bf16 *)k;
	p.v = (const bf16 *)v;
	p.out = (bf16 *)o;
	p.lse = lse;
	const size_t smem = fwd_smem_bytes(s->head_dim);
	cudaError_t e = cudaFuncSetAttribute(attn_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
	if (e != cudaSuccess)
		return (int)e;
	dim3 grid((unsigned)((s->seq + FWD_BQ - 1) / FWD_BQ), (unsigned)s->heads, (unsigned)s->nseq);
	attn_fwd_kernel<<<grid, NTHREADS, smem, (cudaStream_t)stream>>>(p);
	return (int)cudaGetLastError();
}

extern "C" int kernels_cuda_attn_bwd(const kernels_attn_shape *s, const void *q, const void *k, const void *v,
				     const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv,
				     void *workspace, void *stream)
{
	const void *ptrs[] = {q, k, v, o, dout, dq, dk, dv, workspace};
	int rc = check_shape(s, ptrs, 9);
	if (rc)
		return rc;
	cudaStream_t st = (cudaStream_t)stream;
	attn_params p = params_of(s);
	p.q = (const bf16 *)q;
	p.k = (const bf16 *)k;
	p.v = (const bf16 *)v;
	p.o = (const bf16 *)o;
	p.dout = (const bf16 *)dout;
	p.lse = (float *)lse;
	p.dq = (bf16 *)dq;
	p.dk = (bf16 *)dk;
	p.dv = (bf16 *)dv;
	const size_t nq = kernels_attn_q_elems(s);
	p.dq_acc = (float *)workspace;
	p.drow = (float *)((char *)workspace + (nq * sizeof(float) + 255) / 256 * 256);

	cudaError_t e = cudaMemsetAsync(p.dq_acc, 0, nq * sizeof(float), st);
	if (e != cudaSuccess)
		return (int)e;
	const size_t rows = (size_t)s->nseq * s->seq * s->heads;
	attn_bwd_rowsum_kernel<<<(unsigned)((rows * 32 + 255) / 256), 256, 0, st>>>(p, s->nseq);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return (int)e;
	const size_t smem = bwd_smem_bytes(s->head_dim);
	if ((e = cudaFuncSetAttribute(attn_bwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) !=
	    cudaSuccess)
		return (int)e;
	dim3 grid((unsigned)((s->seq + BK - 1) / BK), (unsigned)s->kv_heads, (unsigned)s->nseq);
	attn_bwd_kernel<<<grid, NTHREADS, smem, st>>>(p);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return (int)e;
	const unsigned blocks = (unsigned)(nq / 256 + 1 < 65535 ? nq / 256 + 1 : 65535);
	attn_bwd_dq_kernel<<<blocks, 256, 0, st>>>(p.dq_acc, p.dq, nq, p.scale);
	return (int)cudaGetLastError();
}
