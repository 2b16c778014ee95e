/* kernels: the layer kernels validate mode runs for real, and their CPU references.
 *
 * Usable from C and from CUDA (C++17 under nvcc). Element type in and out is bf16
 * (stored as uint16_t bit patterns on the host side); accumulation is fp32 on the GPU
 * and double in the CPU references.
 *
 * Layouts (row-major, last index fastest):
 *   token-sharded: [nseq][t][H][d]      t = local tokens of each sequence, H = all heads
 *   head-sharded:  [nseq][S][H/P][d]    S = P·t, H/P = this rank's heads
 *   all-to-all buffers (send and receive): [P][nseq][t][H/P][d], chunk j for/from peer j
 * Attention works on the head-sharded layout, [nseq][S][heads][d] with kv heads likewise,
 * plus an fp32 log-sum-exp [nseq][heads][S] saved for backward.
 *
 * The CPU references (cpu_ref.c) are always compiled; the CUDA launchers exist only when
 * the build found nvcc. CPU functions that allocate scratch return 0, or -1 when out of
 * memory. Launchers take a cudaStream_t as void* so this
 * header needs no CUDA include, and return a cudaError_t / cublasStatus_t as int
 * (0 = success). */
#ifndef SPSIM_KERNELS_KERNELS_H
#define SPSIM_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t kernels_bf16;

/* Round-to-nearest-even, as __float2bfloat16_rn; NaN stays NaN. */
kernels_bf16 kernels_f32_to_bf16(float f);
float kernels_bf16_to_f32(kernels_bf16 b);

/* Element-wise comparison of a result with its reference. Element e passes when
 *   |got − want| <= tol · (|want| + rms(want)),
 * a relative bound that does not blow up where the reference crosses zero. bf16 keeps 8
 * significant bits (unit roundoff 2^-8); a result that went through a few bf16 roundings
 * and a different fp32 summation order sits within a few units of it. */
typedef struct kernels_compare_result {
	size_t n, bad, worst; /* elements, failures, index of the largest normalised error */
	double max_abs;       /* largest |got − want| */
	double max_norm;      /* largest |got − want| / (|want| + rms(want)) */
	double rms_want, max_want;
	int nonfinite;        /* got holds NaN or Inf */
} kernels_compare_result;
#define KERNELS_BF16_TOL (1.0 / 32)
int kernels_compare_bf16(const kernels_bf16 *got, const kernels_bf16 *want, size_t n, double tol,
			 kernels_compare_result *r);
int kernels_compare_f32(const float *got, const float *want, size_t n, double tol, kernels_compare_result *r);

/* ------------------------------------------------------------- attention --- */
typedef struct kernels_attn_shape {
	int nseq;     /* sequences */
	int seq;      /* S tokens per sequence */
	int heads;    /* query heads held here */
	int kv_heads; /* kv heads held here; heads % kv_heads == 0 (grouped-query attention) */
	int head_dim; /* d */
	int causal;   /* 1: token i attends to keys 0..i */
} kernels_attn_shape;

/* 0 if the shape is usable, else a static sentence saying what is wrong. The CUDA kernels
 * further need head_dim % 16 == 0 and head_dim <= KERNELS_ATTN_MAX_DIM. */
const char *kernels_attn_shape_check(const kernels_attn_shape *s);
#define KERNELS_ATTN_MAX_DIM 128

/* Element counts of the attention tensors. */
size_t kernels_attn_q_elems(const kernels_attn_shape *s);   /* q, o, dq, do */
size_t kernels_attn_kv_elems(const kernels_attn_shape *s);  /* k, v, dk, dv */
size_t kernels_attn_lse_elems(const kernels_attn_shape *s); /* lse (fp32) */
/* Scratch bytes the CUDA backward needs (an fp32 dQ accumulator and the row sums
 * D = rowsum(dO∘O)); the CPU reference needs none. */
size_t kernels_attn_bwd_workspace(const kernels_attn_shape *s);

/* FLOPs by FlashAttention's own accounting (docs/sources.md [FA-bench]): forward 4·S²·heads·d per
 * sequence, halved when causal; backward 2.5x forward. */
double kernels_attn_fwd_flops(const kernels_attn_shape *s);
double kernels_attn_bwd_flops(const kernels_attn_shape *s);

/* Straightforward reference: scores, softmax and weighted sum row by row in double,
 * outputs rounded to bf16 once. lse = max + log(sum exp(score - max)), natural log of
 * the scaled scores (scale = 1/sqrt(d)). */
int kernels_cpu_attn_fwd(const kernels_attn_shape *s, const kernels_bf16 *q, const kernels_bf16 *k,
			  const kernels_bf16 *v, kernels_bf16 *o, float *lse);
/* Reference backward: P recomputed from q and k, D_i = rowsum(dO∘O) with the exact O,
 *   dV = Pᵀ dO, dP = dO Vᵀ, dS = P∘(dP − D), dQ = scale·dS K, dK = scale·dSᵀ Q,
 * summed over the query heads that share a kv head. o and lse are not read (the
 * reference recomputes them); they are parameters so the signature matches the kernel. */
int kernels_cpu_attn_bwd(const kernels_attn_shape *s, const kernels_bf16 *q, const kernels_bf16 *k,
			  const kernels_bf16 *v, const kernels_bf16 *o, const kernels_bf16 *dout, const float *lse,
			  kernels_bf16 *dq, kernels_bf16 *dk, kernels_bf16 *dv);
/* The CUDA forward kernel's algorithm on the CPU, same tiles and the same roundings:
 * tiles of block_q queries by block_k keys, running max and sum rescaled tile by tile
 * (the online softmax of FlashAttention, Dao et al. 2022, Algorithm 1; FlashAttention-2,
 * Dao 2023, Algorithm 1), fp32 throughout, P rounded to bf16 before P·V. Lets the test
 * suite check the tiling itself where no GPU exists. */
int kernels_cpu_attn_fwd_tiled(const kernels_attn_shape *s, int block_q, int block_k, const kernels_bf16 *q,
				const kernels_bf16 *k, const kernels_bf16 *v, kernels_bf16 *o, float *lse);

/* --------------------------------------------------------------- layouts --- */
typedef enum kernels_permute_dir {
	/* token-sharded [nseq][t][Htok][d] (row stride ld) -> send [P][nseq][t][H/P][d], where
	 * H = Htok·rep: each token-side head is replicated rep times first (kv heads when
	 * g < P; docs/sources.md [DS-ulysses-hf]). */
	KERNELS_TOK_PACK,
	/* receive [P][nseq][t][H/P][d] -> token-sharded [nseq][t][Htok][d] (row stride ld), the
	 * rep replicas of a head summed (fp32, in replica order) into one: the inverse of
	 * TOK_PACK, and the gradient of the replication. */
	KERNELS_TOK_UNPACK,
	/* receive [P][nseq][t][Hp][d] -> head-sharded [nseq][P·t][Hp][d] */
	KERNELS_HEAD_UNPACK,
	/* head-sharded [nseq][P·t][Hp][d] -> send [P][nseq][t][Hp][d]: the inverse of HEAD_UNPACK */
	KERNELS_HEAD_PACK,
} kernels_permute_dir;

typedef struct kernels_permute {
	kernels_permute_dir dir;
	int peers;     /* P */
	int nseq;
	long tokens;   /* t, local tokens per sequence */
	int heads;     /* H: heads across all peers, after replication (a multiple of P) */
	int rep;       /* replicas per token-side head (>= 1); Htok = heads / rep */
	int head_dim;  /* d */
	long ld;       /* token-side row stride in elements (>= Htok·d); 0 = Htok·d. Only TOK_* */
} kernels_permute;

/* 0 if usable, else a static sentence. */
const char *kernels_permute_check(const kernels_permute *p);
/* Elements of the all-to-all buffer (= head-side tensor) the permute reads or writes. */
size_t kernels_permute_buffer_elems(const kernels_permute *p);
/* HBM bytes the permute moves (read + write), for bandwidth figures. */
double kernels_permute_bytes(const kernels_permute *p);
void kernels_cpu_permute(const kernels_permute *p, const kernels_bf16 *src, kernels_bf16 *dst);

/* ------------------------------------------------------------------ GEMM --- */
/* Row-major C[m×n] = alpha·op(A)·op(B) + beta·C, op(X) = X or Xᵀ; A is m×k after op
 * (stored k×m when trans_a), B is k×n after op. bf16 in and out, accumulation in
 * double on the CPU, fp32 on the GPU (cuBLAS CUBLAS_COMPUTE_32F). */
typedef struct kernels_gemm {
	int trans_a, trans_b;
	long m, n, k;
	long lda, ldb, ldc; /* row strides in elements */
	float alpha, beta;
} kernels_gemm;

const char *kernels_gemm_check(const kernels_gemm *g);
static inline double kernels_gemm_flops(const kernels_gemm *g) { return 2.0 * (double)g->m * (double)g->n * (double)g->k; }
void kernels_cpu_gemm(const kernels_gemm *g, const kernels_bf16 *a, const kernels_bf16 *b, kernels_bf16 *c);

/* ---------------------------------------------------------- CUDA launchers --- */
/* Whether this machine has an NVIDIA device (cuda_probe.c). KERNELS_PROBE_NO_DEVICE only
 * when there is none: cudaErrorNoDevice, zero devices, or no NVIDIA driver at all
 * (libcuda.so.1 absent); any other CUDA error — a driver older than the runtime, a
 * broken installation — is KERNELS_PROBE_ERROR with CUDA's own message in msg. */
enum { KERNELS_PROBE_OK = 0, KERNELS_PROBE_NO_DEVICE = 1, KERNELS_PROBE_ERROR = -1 };
int kernels_cuda_probe(int *count, char *msg, size_t len);

/* Present only in CUDA builds (kernels/attention.cu, permute.cu, gemm.c). Every launcher is
 * asynchronous on `stream`; inputs must satisfy the *_check functions above. */
int kernels_cuda_attn_fwd(const kernels_attn_shape *s, const void *q, const void *k, const void *v, void *o,
			  float *lse, void *stream);
/* workspace: kernels_attn_bwd_workspace(s) bytes of device memory. */
int kernels_cuda_attn_bwd(const kernels_attn_shape *s, const void *q, const void *k, const void *v, const void *o,
			  const void *dout, const float *lse, void *dq, void *dk, void *dv, void *workspace,
			  void *stream);
int kernels_cuda_permute(const kernels_permute *p, const void *src, void *dst, void *stream);
/* handle: a cublasHandle_t already bound to the stream. */
int kernels_cuda_gemm(void *cublas_handle, const kernels_gemm *g, const void *a, const void *b, void *c);

/* cuDNN's fused flash attention (attention_cudnn.c), in builds where Meson found cuDNN 9
 * (KERNELS_HAVE_CUDNN). Same tensors and layouts as kernels_cuda_attn_*; no workspace
 * argument (the context owns one). A context serves one device and stream; plans are
 * built per shape on first use. Functions return 0 or a cudnnStatus_t;
 * kernels_cudnn_error() then says what cuDNN said. */
typedef struct kernels_cudnn kernels_cudnn;
int kernels_cudnn_create(kernels_cudnn **out, void *stream);
void kernels_cudnn_destroy(kernels_cudnn *c);
const char *kernels_cudnn_error(const kernels_cudnn *c);
size_t kernels_cudnn_version(void);
/* 1 when cuDNN has an engine for this shape and direction (building the plan), else 0. */
int kernels_cudnn_supported(kernels_cudnn *c, const kernels_attn_shape *s, int bwd);
int kernels_cudnn_attn_fwd(kernels_cudnn *c, const kernels_attn_shape *s, const void *q, const void *k, const void *v,
			   void *o, float *lse);
int kernels_cudnn_attn_bwd(kernels_cudnn *c, const kernels_attn_shape *s, const void *q, const void *k, const void *v,
			   const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv);

#ifdef __cplusplus
}
#endif

#endif
