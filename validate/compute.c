/* Compute calibration (validate.h): the GEMM, attention and layout kernels one rank of a
 * job runs, each timed alone; achieved FLOP/s (bytes/s for the layout permute) against
 * the GPU's peak gives the efficiencies a calibration file carries. */
#include <stdlib.h>
#include <string.h>

#include "validate.h"

#define SETERR(...)                                         \
	do {                                                \
		if (err && errlen)                          \
			snprintf(err, errlen, __VA_ARGS__); \
	} while (0)

static int add_gemm(validate_compute_item *out, int n, int cap, const char *name, int ta, int tb, long m, long nn,
		    long k, double count)
{
	if (n >= cap)
		return n;
	validate_compute_item *it = &out[n];
	memset(it, 0, sizeof *it);
	snprintf(it->name, sizeof it->name, "%s", name);
	it->kind = VALIDATE_CK_GEMM;
	it->gemm = (kernels_gemm){.trans_a = ta, .trans_b = tb, .m = m, .n = nn, .k = k, .alpha = 1.0f, .beta = 0.0f};
	it->gemm.lda = ta ? m : k;
	it->gemm.ldb = tb ? k : nn;
	it->gemm.ldc = nn;
	it->flops = kernels_gemm_flops(&it->gemm);
	it->count = count;
	return n + 1;
}

/* A forward GEMM [T x k]·[k x n] and its two backward GEMMs: the activation gradient
 * dX = dY·Wᵀ [T x k] and the weight gradient dW = Xᵀ·dY [k x n] (Megatron's accounting:
 * backward = 2x forward FLOPs). */
static int add_linear(validate_compute_item *out, int n, int cap, const char *name, long T, long k, long nn,
		      double count)
{
	char buf[32];
	n = add_gemm(out, n, cap, name, 0, 0, T, nn, k, count);
	snprintf(buf, sizeof buf, "%s_dgrad", name);
	n = add_gemm(out, n, cap, buf, 0, 1, T, k, nn, count);
	snprintf(buf, sizeof buf, "%s_wgrad", name);
	return add_gemm(out, n, cap, buf, 1, 0, k, nn, T, count);
}

int validate_compute_items(const validate_model_dims *m, const validate_groups *g, validate_compute_item *out, int cap)
{
	const long T = (long)g->nseq * g->tokens, h = m->hidden, ad = (long)m->heads * m->head_dim;
	const long w = (long)(m->heads + 2 * m->kv_heads) * m->head_dim;
	int n = 0;
	n = add_linear(out, n, cap, "qkv_proj", T, h, w, 1);
	n = add_linear(out, n, cap, "out_proj", T, ad, h, 1);
	n = add_linear(out, n, cap, "mlp_gate_up", T, h, 2L * m->ffn, 1);
	n = add_linear(out, n, cap, "mlp_down", T, m->ffn, h, 1);
	n = add_linear(out, n, cap, "logits", T, h, m->vocab, 1.0 / (m->layers > 0 ? m->layers : 1));
	const kernels_attn_shape s = {.nseq = g->nseq, .seq = (int)g->seq, .heads = g->heads_per_rank,
				      .kv_heads = g->kv_per_rank, .head_dim = m->head_dim, .causal = 1};
	for (int bwd = 0; bwd < 2 && n < cap; bwd++) {
		validate_compute_item *it = &out[n++];
		memset(it, 0, sizeof *it);
		snprintf(it->name, sizeof it->name, bwd ? "attn_bwd" : "attn_fwd");
		it->kind = bwd ? VALIDATE_CK_ATTN_BWD : VALIDATE_CK_ATTN_FWD;
		it->attn = s;
		it->flops = bwd ? kernels_attn_bwd_flops(&s) : kernels_attn_fwd_flops(&s);
		it->count = 1;
	}
	if (n < cap) {
		/* The Q pack from the fused QKV output (the largest layout copy). */
		validate_compute_item *it = &out[n++];
		memset(it, 0, sizeof *it);
		snprintf(it->name, sizeof it->name, "a2a_q_pack");
		it->kind = VALIDATE_CK_PERMUTE;
		it->perm = (kernels_permute){KERNELS_TOK_PACK, g->K, g->nseq, g->tokens, m->heads, 1, m->head_dim, w};
		it->bytes = kernels_permute_bytes(&it->perm);
		it->count = 1;
	}
	return n;
}

/* Device buffers of one item. */
typedef struct item_bufs {
	void *p[10];
	size_t bytes[10];
	int n;
} item_bufs;

static void item_layout(const validate_compute_item *it, item_bufs *b)
{
	memset(b, 0, sizeof *b);
	switch (it->kind) {
	case VALIDATE_CK_GEMM: {
		const kernels_gemm *g = &it->gemm;
		b->bytes[0] = (size_t)(g->trans_a ? g->k : g->m) * (size_t)g->lda * 2;
		b->bytes[1] = (size_t)(g->trans_b ? g->n : g->k) * (size_t)g->ldb * 2;
		b->bytes[2] = (size_t)g->m * (size_t)g->ldc * 2;
		b->n = 3;
		break;
	}
	case VALIDATE_CK_ATTN_FWD:
	case VALIDATE_CK_ATTN_BWD: {
		const size_t q = kernels_attn_q_elems(&it->attn) * 2, kv = kernels_attn_kv_elems(&it->attn) * 2;
		/* q, k, v, o, lse, then for backward do, dq, dk, dv, workspace */
		const size_t sizes[10] = {q, kv, kv, q, kernels_attn_lse_elems(&it->attn) * 4,
					  q, q, kv, kv, kernels_attn_bwd_workspace(&it->attn)};
		b->n = it->kind == VALIDATE_CK_ATTN_BWD ? 10 : 5;
		memcpy(b->bytes, sizes, sizeof sizes);
		break;
	}
	case VALIDATE_CK_PERMUTE: {
		const kernels_permute *p = &it->perm;
		const long ld = p->ld ? p->ld : (long)(p->heads / p->rep) * p->head_dim;
		b->bytes[0] = (size_t)p->nseq * (size_t)p->tokens * (size_t)ld * 2;
		b->bytes[1] = kernels_permute_buffer_elems(p) * 2;
		b->n = 2;
		break;
	}
	}
}

/* Inputs get pseudo-random bf16 (a repeated block: the values only need to be finite and
 * not all zero for the timing). */
static int fill(validate_transport *t, int local, void *dst, size_t bytes, const kernels_bf16 *block, size_t block_bytes)
{
	for (size_t off = 0; off < bytes; off += block_bytes) {
		size_t n = bytes - off < block_bytes ? bytes - off : block_bytes;
		int rc = t->ops->upload(t, local, (char *)dst + off, block, n);
		if (rc)
			return rc;
	}
	return VALIDATE_OK;
}

static int launch(validate_transport *t, int local, const validate_compute_item *it, void *const *p)
{
	switch (it->kind) {
	case VALIDATE_CK_GEMM:
		return t->ops->gemm(t, local, &it->gemm, p[0], p[1], p[2]);
	case VALIDATE_CK_ATTN_FWD:
		return t->ops->attn_fwd(t, local, &it->attn, p[0], p[1], p[2], p[3], p[4]);
	case VALIDATE_CK_ATTN_BWD:
		return t->ops->attn_bwd(t, local, &it->attn, p[0], p[1], p[2], p[3], p[5], p[4], p[6], p[7], p[8], p[9]);
	case VALIDATE_CK_PERMUTE:
		return t->ops->permute(t, local, &it->perm, p[0], p[1]);
	}
	return VALIDATE_EINVAL;
}

/* Timed calls per batch: two marks each, within the transport's timer slots. */
#define BATCH (VALIDATE_MAX_MARKS / 2)

/* Sets up one item's buffers on every local rank, warms up, and times iters calls,
 * each between its own marks (times[i * iters + k]: local rank i, call k). */
static int time_item(validate_transport *t, const validate_compute_item *it, const item_bufs *lay, item_bufs *bufs,
		     const kernels_bf16 *block, size_t block_bytes, int warmup, int iters, size_t operand_bytes,
		     double *times)
{
	int rc = VALIDATE_OK;
	for (int i = 0; i < t->n_local && !rc; i++) {
		bufs[i] = *lay;
		for (int j = 0; j < lay->n; j++)
			bufs[i].p[j] = NULL;
		for (int j = 0; j < lay->n && !rc; j++)
			if (!(rc = t->ops->alloc(t, i, lay->bytes[j], &bufs[i].p[j])))
				rc = fill(t, i, bufs[i].p[j], lay->bytes[j], block, block_bytes);
		/* Backward needs the forward's O and log-sum-exp. */
		if (!rc && it->kind == VALIDATE_CK_ATTN_BWD)
			rc = t->ops->attn_fwd(t, i, &it->attn, bufs[i].p[0], bufs[i].p[1], bufs[i].p[2], bufs[i].p[3],
					      bufs[i].p[4]);
	}
	for (int k = 0; k < warmup && !rc; k++)
		for (int i = 0; i < t->n_local && !rc; i++)
			rc = launch(t, i, it, bufs[i].p);
	for (int k0 = 0; k0 < iters && !rc; k0 += BATCH) {
		const int nb = iters - k0 < BATCH ? iters - k0 : BATCH;
		for (int k = 0; k < nb && !rc; k++)
			for (int i = 0; i < t->n_local && !rc; i++) {
				if (t->ops->flush_cache && (rc = t->ops->flush_cache(t, i, operand_bytes)))
					break;
				if (!(rc = t->ops->mark(t, i, 2 * k)) && !(rc = launch(t, i, it, bufs[i].p)))
					rc = t->ops->mark(t, i, 2 * k + 1);
			}
		for (int i = 0; i < t->n_local && !rc; i++) {
			if ((rc = t->ops->sync(t, i)))
				break;
			for (int k = 0; k < nb && !rc; k++)
				rc = t->ops->elapsed(t, i, 2 * k, 2 * k + 1, &times[(size_t)i * iters + k0 + k]);
		}
	}
	return rc;
}

int validate_compute_run(validate_transport *t, const validate_compute_item *items, int n, int warmup, int iters,
			 validate_compute_emit emit, void *ctx, char *err, size_t errlen)
{
	if (iters < 1 || warmup < 0) {
		SETERR("at least one timed iteration");
		return VALIDATE_EINVAL;
	}
	const size_t block_elems = (size_t)1 << 20;
	kernels_bf16 *block = malloc(block_elems * sizeof *block);
	item_bufs *bufs = calloc((size_t)t->n_local, sizeof *bufs);
	double *times = calloc((size_t)t->n_local * (size_t)iters, sizeof *times);
	double *slowest = calloc((size_t)iters, sizeof *slowest);
	int rc = VALIDATE_OK;
	if (!block || !bufs || !times || !slowest) {
		SETERR("out of host memory");
		rc = VALIDATE_ENOMEM;
		goto out;
	}
	validate_fill(block, block_elems, 12345, 99, 0, 1.0f);
	for (int k = 0; k < n && !rc; k++) {
		const validate_compute_item *it = &items[k];
		item_bufs lay;
		item_layout(it, &lay);
		size_t need = 0, operands = 0;
		for (int j = 0; j < lay.n; j++) {
			need += (lay.bytes[j] + 511) / 512 * 512;
			operands += lay.bytes[j];
		}
		/* Every process decides the same: skip when any rank lacks the memory. */
		validate_step_begin("compute %s: free device memory", it->name);
		double short_of = 0;
		for (int i = 0; i < t->n_local && !rc; i++) {
			size_t avail;
			if ((rc = t->ops->mem_available(t, i, &avail)))
				break;
			if ((double)need > 0.95 * (double)avail && (double)need - 0.95 * (double)avail > short_of)
				short_of = (double)need - 0.95 * (double)avail;
		}
		if ((rc = validate_agree(t->launch, rc)) || (rc = t->launch->allreduce_max(t->launch, &short_of, 1)))
			break;
		if (short_of > 0) {
			if (t->launch->proc == 0)
				fprintf(stderr, "spsim-validate: skipping %s: needs %.2f GiB of device memory, %.2f GiB short\n",
					it->name, (double)need / (1 << 30), short_of / (1 << 30));
			continue;
		}
		validate_step_begin("compute %s: %d warm-up and %d timed calls", it->name, warmup, iters);
		rc = time_item(t, it, &lay, bufs, block, block_elems * sizeof *block, warmup, iters, operands, times);
		validate_compute_point pt = {.item = it, .iters = iters, .flushed = t->ops->flush_cache != NULL};
		if (!rc && t->ops->probe)
			rc = t->ops->probe(t, 0, &pt.gpu);
		for (int i = 0; i < t->n_local; i++)
			for (int j = 0; j < bufs[i].n; j++) {
				t->ops->release(t, i, bufs[i].p[j]);
				bufs[i].p[j] = NULL;
			}
		/* Call k's time is the slowest rank's: the job waits for it. */
		for (int c = 0; c < iters; c++) {
			slowest[c] = 0;
			for (int i = 0; i < t->n_local; i++)
				slowest[c] = times[(size_t)i * iters + c] > slowest[c] ? times[(size_t)i * iters + c] : slowest[c];
		}
		if ((rc = validate_agree(t->launch, rc)) || (rc = t->launch->allreduce_max(t->launch, slowest, iters)))
			break;
		pt.time_s = validate_quantile(slowest, iters, 0.5);
		pt.p10_s = validate_quantile(slowest, iters, 0.1);
		pt.p90_s = validate_quantile(slowest, iters, 0.9);
		pt.rate = pt.time_s > 0 ? (it->kind == VALIDATE_CK_PERMUTE ? it->bytes : it->flops) / pt.time_s : 0;
		/* A failure to record (process 0 writes) stops every process. */
		if ((rc = validate_agree(t->launch, emit ? emit(ctx, &pt) : VALIDATE_OK)))
			break;
	}
out:
	free(block);
	free(bufs);
	free(times);
	free(slowest);
	return rc;
}
