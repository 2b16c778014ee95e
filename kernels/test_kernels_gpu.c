/* CUDA kernels against their CPU references (kernels.h): the WMMA attention kernel and,
 * where the build has cuDNN, cuDNN's fused attention (the one validate measures), on
 * sequences up to 8K tokens, GQA ratios that are and are not powers of two, one kv head
 * shared by all (the replicated-kv case), and head_dim 64 and 128. Exit 77 (meson: SKIP)
 * only when there is no NVIDIA device (cudaErrorNoDevice, or zero devices); any other
 * CUDA error — a driver older than this runtime included — fails with CUDA's message.
 * Exit 0: all passed; 1: a mismatch; 2: a CUDA/cuBLAS/cuDNN failure. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"

static char host[256] = "?";

#define CUDA_CHECK(call)                                                                                    \
	do {                                                                                                \
		cudaError_t e_ = (call);                                                                    \
		if (e_ != cudaSuccess) {                                                                    \
			fprintf(stderr, "[rank 0 on %s] %s:%d: %s failed: %s\n", host, __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                                                    \
			return -1;                                                                          \
		}                                                                                           \
	} while (0)
/* For the launchers, which return a cudaError_t as int. */
#define KERNEL_CHECK(call) CUDA_CHECK((cudaError_t)(call))
#define CUBLAS_CHECK(call)                                                                                  \
	do {                                                                                                \
		cublasStatus_t s_ = (call);                                                                 \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
			fprintf(stderr, "[rank 0 on %s] %s:%d: %s failed: %s\n", host, __FILE__, __LINE__, #call, \
				cublasGetStatusString(s_));                                                 \
			return -1;                                                                          \
		}                                                                                           \
	} while (0)

static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) /* [-1, 1) */
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static kernels_bf16 *host_random(size_t n, float scale)
{
	kernels_bf16 *p = malloc(n * sizeof *p);
	if (p)
		for (size_t i = 0; i < n; i++)
			p[i] = kernels_f32_to_bf16(scale * uniform());
	return p;
}

static int upload(void **dev, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMalloc(dev, bytes ? bytes : 1));
	if (src)
		CUDA_CHECK(cudaMemcpy(*dev, src, bytes, cudaMemcpyHostToDevice));
	return 0;
}

static int failures;

static void report(const char *what, int ok, const kernels_compare_result *r)
{
	printf("  %-44s %s  max|err| %.3g  max err/(|ref|+rms) %.3g  rms(ref) %.3g  bad %zu/%zu\n", what,
	       ok ? "ok  " : "FAIL", r->max_abs, r->max_norm, r->rms_want, r->bad, r->n);
	if (!ok)
		failures++;
}

/* -------------------------------------------------------------- attention --- */
static kernels_cudnn *cudnn; /* NULL: this build has no cuDNN */

/* Runs forward then backward with the kernel family asked for. */
static int attention_run(int use_cudnn, const kernels_attn_shape *s, void *q, void *k, void *v, void *o, float *lse,
			 void *dout, void *dq, void *dk, void *dv, void *ws)
{
#if defined(KERNELS_HAVE_CUDNN) && KERNELS_HAVE_CUDNN
	if (use_cudnn) {
		if (kernels_cudnn_attn_fwd(cudnn, s, q, k, v, o, lse) != 0 ||
		    kernels_cudnn_attn_bwd(cudnn, s, q, k, v, o, dout, lse, dq, dk, dv) != 0) {
			fprintf(stderr, "[rank 0 on %s] %s:%d: cuDNN attention failed: %s\n", host, __FILE__, __LINE__,
				kernels_cudnn_error(cudnn));
			return -1;
		}
		return 0;
	}
#endif
	if (kernels_cuda_attn_fwd(s, q, k, v, o, lse, NULL) != 0 ||
	    kernels_cuda_attn_bwd(s, q, k, v, o, dout, lse, dq, dk, dv, ws, NULL) != 0) {
		fprintf(stderr, "[rank 0 on %s] %s:%d: attention launch failed: %s\n", host, __FILE__, __LINE__,
			cudaGetErrorString(cudaGetLastError()));
		return -1;
	}
	return 0;
}

static int attention_case(kernels_attn_shape s)
{
	const size_t nq = kernels_attn_q_elems(&s), nkv = kernels_attn_kv_elems(&s), nl = kernels_attn_lse_elems(&s);
	int rc = -1;
	kernels_bf16 *q = host_random(nq, 2.0f), *k = host_random(nkv, 2.0f), *v = host_random(nkv, 1.0f);
	kernels_bf16 *dout = host_random(nq, 1.0f);
	kernels_bf16 *o_ref = malloc(nq * 2), *o_gpu = malloc(nq * 2), *dq_ref = malloc(nq * 2), *dq_gpu = malloc(nq * 2);
	kernels_bf16 *dk_ref = malloc(nkv * 2), *dk_gpu = malloc(nkv * 2), *dv_ref = malloc(nkv * 2), *dv_gpu = malloc(nkv * 2);
	float *lse_ref = malloc(nl * 4), *lse_gpu = malloc(nl * 4);
	void *dq = NULL, *dk = NULL, *dv = NULL, *dd = NULL, *dl = NULL, *ddo = NULL, *ws = NULL, *ddq = NULL,
	     *ddk = NULL, *ddv = NULL;
	if (!q || !k || !v || !dout || !o_ref || !o_gpu || !dq_ref || !dq_gpu || !dk_ref || !dk_gpu || !dv_ref ||
	    !dv_gpu || !lse_ref || !lse_gpu) {
		fprintf(stderr, "out of host memory\n");
		goto out;
	}
	if (upload(&dq, q, nq * 2) || upload(&dk, k, nkv * 2) || upload(&dv, v, nkv * 2) || upload(&dd, NULL, nq * 2) ||
	    upload(&dl, NULL, nl * 4) || upload(&ddo, dout, nq * 2) || upload(&ws, NULL, kernels_attn_bwd_workspace(&s)) ||
	    upload(&ddq, NULL, nq * 2) || upload(&ddk, NULL, nkv * 2) || upload(&ddv, NULL, nkv * 2))
		goto out;
	/* The reference once (it dominates at 8K tokens), then each kernel family against it. */
	if (kernels_cpu_attn_fwd(&s, q, k, v, o_ref, lse_ref) ||
	    kernels_cpu_attn_bwd(&s, q, k, v, o_ref, dout, lse_ref, dq_ref, dk_ref, dv_ref)) {
		fprintf(stderr, "out of host memory\n");
		goto out;
	}
	for (int use_cudnn = 0; use_cudnn < (cudnn ? 2 : 1); use_cudnn++) {
		if (attention_run(use_cudnn, &s, dq, dk, dv, dd, dl, ddo, ddq, ddk, ddv, ws))
			goto out;
		if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(o_gpu, dd, nq * 2, cudaMemcpyDeviceToHost) ||
		    cudaMemcpy(lse_gpu, dl, nl * 4, cudaMemcpyDeviceToHost) ||
		    cudaMemcpy(dq_gpu, ddq, nq * 2, cudaMemcpyDeviceToHost) ||
		    cudaMemcpy(dk_gpu, ddk, nkv * 2, cudaMemcpyDeviceToHost) ||
		    cudaMemcpy(dv_gpu, ddv, nkv * 2, cudaMemcpyDeviceToHost)) {
			fprintf(stderr, "[rank 0 on %s] %s:%d: attention kernels failed: %s\n", host, __FILE__, __LINE__,
				cudaGetErrorString(cudaGetLastError()));
			goto out;
		}
		char what[128];
		kernels_compare_result r;
		const char *tag = s.causal ? "causal" : "full";
		const char *impl = use_cudnn ? "cudnn" : "wmma";
#define CMP(name, fn, got, want, n, tol)                                                                         \
	snprintf(what, sizeof what, "%s %s %s n%d S%d H%d/%d d%d", impl, name, tag, s.nseq, s.seq, s.heads, s.kv_heads, \
		 s.head_dim);                                                                                     \
	report(what, fn(got, want, n, tol, &r), &r)
		CMP("attn_fwd O  ", kernels_compare_bf16, o_gpu, o_ref, nq, KERNELS_BF16_TOL);
		CMP("attn_fwd lse", kernels_compare_f32, lse_gpu, lse_ref, nl, 1e-3);
		CMP("attn_bwd dQ ", kernels_compare_bf16, dq_gpu, dq_ref, nq, KERNELS_BF16_TOL);
		CMP("attn_bwd dK ", kernels_compare_bf16, dk_gpu, dk_ref, nkv, KERNELS_BF16_TOL);
		CMP("attn_bwd dV ", kernels_compare_bf16, dv_gpu, dv_ref, nkv, KERNELS_BF16_TOL);
#undef CMP
	}
	rc = 0;
out:
	cudaFree(dq);
	cudaFree(dk);
	cudaFree(dv);
	cudaFree(dd);
	cudaFree(dl);
	cudaFree(ddo);
	cudaFree(ws);
	cudaFree(ddq);
	cudaFree(ddk);
	cudaFree(ddv);
	free(q);
	free(k);
	free(v);
	free(dout);
	free(o_ref);
	free(o_gpu);
	free(dq_ref);
	free(dq_gpu);
	free(dk_ref);
	free(dk_gpu);
	free(dv_ref);
	free(dv_gpu);
	free(lse_ref);
	free(lse_gpu);
	return rc;
}

/* ---------------------------------------------------------------- permute --- */
static int permute_case(kernels_permute p)
{
	const long Htok = p.heads / p.rep, ld = p.ld ? p.ld : Htok * p.head_dim;
	const size_t nbuf = kernels_permute_buffer_elems(&p), ntok = (size_t)p.nseq * p.tokens * ld;
	size_t nsrc, ndst;
	switch (p.dir) {
	case KERNELS_TOK_PACK: nsrc = ntok; ndst = nbuf; break;
	case KERNELS_TOK_UNPACK: nsrc = nbuf; ndst = ntok; break;
	default: nsrc = ndst = nbuf; break;
	}
	kernels_bf16 *src = host_random(nsrc, 1.0f), *want = host_random(ndst, 1.0f), *got = malloc(ndst * 2);
	void *ds = NULL, *dd = NULL;
	int rc = -1;
	if (!src || !want || !got)
		goto out;
	/* dst starts with the same contents on both sides: TOK_UNPACK leaves row padding alone. */
	if (upload(&ds, src, nsrc * 2) || upload(&dd, want, ndst * 2))
		goto out;
	kernels_cpu_permute(&p, src, want);
	if (kernels_cuda_permute(&p, ds, dd, NULL) != 0 || cudaMemcpy(got, dd, ndst * 2, cudaMemcpyDeviceToHost)) {
		fprintf(stderr, "[rank 0 on %s] %s:%d: permute failed: %s\n", host, __FILE__, __LINE__,
			cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	static const char *const names[] = {"TOK_PACK", "TOK_UNPACK", "HEAD_UNPACK", "HEAD_PACK"};
	int same = memcmp(got, want, ndst * 2) == 0;
	printf("  permute %-11s P%d n%d t%ld H%d rep%d d%d ld%ld %s (bit-exact)\n", names[p.dir], p.peers, p.nseq,
	       p.tokens, p.heads, p.rep, p.head_dim, ld, same ? "ok  " : "FAIL");
	if (!same)
		failures++;
	rc = 0;
out:
	cudaFree(ds);
	cudaFree(dd);
	free(src);
	free(want);
	free(got);
	return rc;
}

/* ------------------------------------------------------------------- GEMM --- */
static int gemm_case(cublasHandle_t h, kernels_gemm g)
{
	const size_t na = (size_t)(g.trans_a ? g.k : g.m) * g.lda, nb = (size_t)(g.trans_b ? g.n : g.k) * g.ldb;
	const size_t nc = (size_t)g.m * g.ldc;
	kernels_bf16 *a = host_random(na, 1.0f), *b = host_random(nb, 1.0f), *want = host_random(nc, 1.0f);
	kernels_bf16 *got = malloc(nc * 2);
	void *da = NULL, *db = NULL, *dc = NULL;
	int rc = -1;
	if (!a || !b || !want || !got)
		goto out;
	if (upload(&da, a, na * 2) || upload(&db, b, nb * 2) || upload(&dc, want, nc * 2))
		goto out;
	kernels_cpu_gemm(&g, a, b, want);
	CUBLAS_CHECK((cublasStatus_t)kernels_cuda_gemm(h, &g, da, db, dc));
	CUDA_CHECK(cudaMemcpy(got, dc, nc * 2, cudaMemcpyDeviceToHost));
	char what[128];
	snprintf(what, sizeof what, "gemm %c%c m%ld n%ld k%ld beta %g", g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N',
		 g.m, g.n, g.k, (double)g.beta);
	kernels_compare_result r;
	report(what, kernels_compare_bf16(got, want, nc, KERNELS_BF16_TOL, &r), &r);
	rc = 0;
out:
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	free(a);
	free(b);
	free(want);
	free(got);
	return rc;
}

int main(void)
{
	gethostname(host, sizeof host - 1);
	int n = 0;
	char why[256];
	switch (kernels_cuda_probe(&n, why, sizeof why)) {
	case KERNELS_PROBE_NO_DEVICE:
		printf("SKIP: %s on %s; the GPU kernel tests need one\n", why, host);
		return 77;
	case KERNELS_PROBE_ERROR:
		fprintf(stderr, "FAIL: %s on %s\n", why, host);
		return 2;
	}
	struct cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
		return 2;
	printf("GPU 0: %s, sm_%d%d\n", prop.name, prop.major, prop.minor);
	if (prop.major < 8) {
		fprintf(stderr, "FAIL: %s is sm_%d%d; the bf16 tensor-core kernels validate runs need sm_80 or newer\n",
			prop.name, prop.major, prop.minor);
		return 2;
	}
#if defined(KERNELS_HAVE_CUDNN) && KERNELS_HAVE_CUDNN
	if (kernels_cudnn_create(&cudnn, NULL) != 0) {
		fprintf(stderr, "FAIL: cuDNN could not start (cudnnCreate)\n");
		return 2;
	}
	printf("cuDNN %zu\n", kernels_cudnn_version());
#endif

	printf("attention (GPU vs CPU reference, tol %.4g of |ref|+rms):\n", KERNELS_BF16_TOL);
	const kernels_attn_shape shapes[] = {
		{.nseq = 2, .seq = 200, .heads = 8, .kv_heads = 2, .head_dim = 64, .causal = 1},  /* GQA 4:1, ragged tiles */
		{.nseq = 1, .seq = 130, .heads = 4, .kv_heads = 4, .head_dim = 128, .causal = 1}, /* MHA, d = 128 */
		{.nseq = 1, .seq = 96, .heads = 6, .kv_heads = 3, .head_dim = 32, .causal = 0},   /* non-causal */
		{.nseq = 3, .seq = 64, .heads = 2, .kv_heads = 1, .head_dim = 16, .causal = 1},   /* one tile exactly */
		{.nseq = 1, .seq = 1, .heads = 1, .kv_heads = 1, .head_dim = 64, .causal = 1},    /* a single token */
		{.nseq = 1, .seq = 1000, .heads = 12, .kv_heads = 4, .head_dim = 128, .causal = 1}, /* GQA 3:1 */
		{.nseq = 1, .seq = 2048, .heads = 5, .kv_heads = 5, .head_dim = 64, .causal = 1},   /* odd head count */
		{.nseq = 1, .seq = 4096, .heads = 6, .kv_heads = 1, .head_dim = 64, .causal = 1},   /* one kv head for all */
		{.nseq = 1, .seq = 8192, .heads = 2, .kv_heads = 1, .head_dim = 64, .causal = 1},   /* 8K tokens */
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		if (attention_case(shapes[i]))
			return 2;

	printf("layout permutes (GPU vs CPU reference):\n");
	const kernels_permute perms[] = {
		{KERNELS_TOK_PACK, 4, 2, 5, 8, 1, 64, 0},
		{KERNELS_TOK_PACK, 4, 2, 5, 8, 2, 64, 3 * 64 + 8}, /* kv replicated x2, strided rows */
		{KERNELS_TOK_UNPACK, 4, 2, 5, 8, 1, 64, 0},
		{KERNELS_TOK_UNPACK, 4, 2, 5, 8, 4, 64, 2 * 64 + 16}, /* replicas summed */
		{KERNELS_HEAD_UNPACK, 4, 3, 7, 8, 1, 64, 0},
		{KERNELS_HEAD_PACK, 4, 3, 7, 8, 1, 64, 0},
		{KERNELS_TOK_PACK, 2, 1, 9, 6, 1, 12, 0}, /* d = 12: scalar path */
		{KERNELS_TOK_UNPACK, 2, 1, 9, 6, 3, 12, 0},
		{KERNELS_HEAD_UNPACK, 3, 2, 4, 6, 1, 12, 0},
		{KERNELS_HEAD_PACK, 3, 2, 4, 6, 1, 12, 0},
	};
	for (size_t i = 0; i < sizeof perms / sizeof perms[0]; i++)
		if (permute_case(perms[i]))
			return 2;

	printf("GEMM (cuBLAS vs CPU reference):\n");
	cublasHandle_t h;
	CUBLAS_CHECK(cublasCreate(&h));
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int beta = 0; beta < 2; beta++) {
				kernels_gemm g = {.trans_a = ta, .trans_b = tb, .m = 96, .n = 80, .k = 112,
						  .alpha = 1.0f, .beta = (float)beta};
				g.lda = (ta ? g.m : g.k) + 8;
				g.ldb = (tb ? g.k : g.n) + 16;
				g.ldc = g.n + 24;
				if (gemm_case(h, g))
					return 2;
			}
	cublasDestroy(h);

#if defined(KERNELS_HAVE_CUDNN) && KERNELS_HAVE_CUDNN
	kernels_cudnn_destroy(cudnn);
#endif
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
