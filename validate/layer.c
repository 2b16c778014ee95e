/* A distributed attention layer under Ulysses or BASP, run for real on a transport:
 *
 *   forward   QKV = X·Wqkv (token-local)
 *             Q, K, V: pack to the all-to-all layout, all-to-all in the SP group, unpack
 *                      to the head-sharded layout (DeepSpeed's three separate calls)
 *             attention on whole sequences for this rank's heads
 *             O: pack, all-to-all back, unpack to the token-sharded layout
 *             Y = O·Wo
 *   backward  dO = dY·Woᵀ, dWo = Oᵀ·dY; dO to heads; attention backward; dQ, dK, dV back
 *             to tokens (kv replicas summed); dX = dQKV·Wqkvᵀ, dWqkv = Xᵀ·dQKV
 *
 * Each phase sits between two timer marks, named as the op program names its op. A group
 * of one rank (K = 1) exchanges nothing: its layout phases are single copies between the
 * fused QKV buffer and the attention layout, and its all-to-all phases are empty.
 *
 * The same code with a group of one rank holding a whole sequence is the unpartitioned
 * reference of validate_layer_check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "validate.h"

const char *const validate_layer_phase_names[VALIDATE_LAYER_PHASES] = {
	"qkv_proj",     "a2a_q_pack",  "a2a_q",  "a2a_q_unpack",  "a2a_k_pack",  "a2a_k",  "a2a_k_unpack",
	"a2a_v_pack",   "a2a_v",       "a2a_v_unpack",  "attn_fwd",     "a2a_o_pack",  "a2a_o",  "a2a_o_unpack",
	"out_proj",     "out_proj_bwd", "a2a_do_pack", "a2a_do", "a2a_do_unpack", "attn_bwd",    "a2a_dq_pack",
	"a2a_dq",       "a2a_dq_unpack", "a2a_dk_pack", "a2a_dk", "a2a_dk_unpack", "a2a_dv_pack", "a2a_dv",
	"a2a_dv_unpack", "qkv_proj_bwd",
};

/* First phase of each step; a layout exchange is three phases: pack, all-to-all, unpack. */
enum {
	PH_QKV = 0, PH_Q = 1, PH_K = 4, PH_V = 7, PH_ATTN = 10, PH_O = 11, PH_OUT = 14,
	PH_OUT_BWD = 15, PH_DO = 16, PH_ATTN_BWD = 19, PH_DQ = 20, PH_DK = 23, PH_DV = 26, PH_QKV_BWD = 29,
};

/* Tensor ids of validate_fill. */
enum { T_X = 1, T_WQKV = 2, T_WO = 3, T_DY = 4 };

#define SETERR(...)                                         \
	do {                                                \
		if (err && errlen)                          \
			snprintf(err, errlen, __VA_ARGS__); \
	} while (0)

typedef struct rank_bufs {
	void *x, *wqkv, *wo, *qkv, *send, *recv, *qh, *kh, *vh, *oh, *lse, *otok, *y;
	void *dy, *dotok, *dwo, *doh, *dqh, *dkh, *dvh, *dqkv, *dx, *dwqkv, *ws;
} rank_bufs;

typedef struct layer_ctx {
	validate_transport *t;
	const validate_layer_cfg *cfg;
	validate_groups g;
	int n;                /* participating local ranks */
	int *locals;          /* their local indices */
	validate_place *place;
	rank_bufs *b;
	validate_comm **sp;   /* per transport local rank; NULL when K == 1 */
	const void **sendv;   /* per transport local rank, for collectives */
	void **recvv;
	double *acc;          /* [participant][phase] summed seconds */
} layer_ctx;

/* ------------------------------------------------------------- dimensions --- */
typedef struct layer_dims {
	size_t T;   /* local tokens, all sequences: nseq·t */
	size_t w;   /* fused QKV width (a + 2g)·d */
	size_t q;   /* Q/O elements on a rank, either layout: T·a·d */
	size_t kv;  /* K/V all-to-all elements: T·g·rep·d */
	size_t lse; /* nseq·(a/K)·S */
} layer_dims;

static layer_dims dims_of(const validate_layer_cfg *cfg, const validate_groups *g)
{
	layer_dims d;
	const size_t a = (size_t)cfg->heads, kv = (size_t)cfg->kv_heads, hd = (size_t)cfg->head_dim;
	d.T = (size_t)g->nseq * (size_t)g->tokens;
	d.w = (a + 2 * kv) * hd;
	d.q = d.T * a * hd;
	d.kv = d.T * kv * (size_t)g->kv_rep * hd;
	d.lse = (size_t)g->nseq * (size_t)g->heads_per_rank * (size_t)g->seq;
	return d;
}

static kernels_attn_shape attn_shape_of(const validate_layer_cfg *cfg, const validate_groups *g)
{
	kernels_attn_shape s = {.nseq = g->nseq, .seq = (int)g->seq, .heads = g->heads_per_rank,
				.kv_heads = g->kv_per_rank, .head_dim = cfg->head_dim, .causal = 1};
	return s;
}

validate_phase_info validate_layer_phase(const validate_layer_cfg *cfg, const validate_groups *g, int i)
{
	validate_phase_info p = {.kind = VALIDATE_PH_MEMORY, .present = true};
	const layer_dims d = dims_of(cfg, g);
	const double h = cfg->hidden, ad = (double)cfg->heads * cfg->head_dim, T = (double)d.T;
	const kernels_attn_shape s = attn_shape_of(cfg, g);
	switch (i) {
	case PH_QKV: p.kind = VALIDATE_PH_GEMM; p.flops = 2.0 * T * h * (double)d.w; return p;
	case PH_OUT: p.kind = VALIDATE_PH_GEMM; p.flops = 2.0 * T * ad * h; return p;
	case PH_OUT_BWD: p.kind = VALIDATE_PH_GEMM; p.flops = 4.0 * T * ad * h; return p;
	case PH_QKV_BWD: p.kind = VALIDATE_PH_GEMM; p.flops = 4.0 * T * h * (double)d.w; return p;
	case PH_ATTN: p.kind = VALIDATE_PH_ATTN; p.flops = kernels_attn_fwd_flops(&s); return p;
	case PH_ATTN_BWD: p.kind = VALIDATE_PH_ATTN; p.flops = kernels_attn_bwd_flops(&s); return p;
	default: break;
	}
	/* A layout exchange: pack, all-to-all, unpack of a Q/O-sized or K/V-sized buffer. */
	const int first = i < PH_ATTN ? PH_Q + (i - PH_Q) / 3 * 3
			: i < PH_OUT ? PH_O
			: i < PH_ATTN_BWD ? PH_DO
					  : PH_DQ + (i - PH_DQ) / 3 * 3;
	const bool kv = first == PH_K || first == PH_V || first == PH_DK || first == PH_DV;
	const double bytes = 2.0 * (double)(kv ? d.kv : d.q);
	p.present = g->K > 1;
	if (i - first == 1) {
		p.kind = VALIDATE_PH_COMM;
		p.bytes = bytes;
	} else {
		p.bytes = 2.0 * bytes; /* read and write the buffer once (the op program's accounting) */
	}
	return p;
}

/* ---------------------------------------------------------------- buffers --- */
typedef struct buf_spec {
	size_t off;   /* offsetof(rank_bufs, ...) */
	size_t bytes;
} buf_spec;

static int buf_specs(const validate_layer_cfg *cfg, const validate_groups *g, buf_spec *out)
{
	const layer_dims d = dims_of(cfg, g);
	const size_t h = (size_t)cfg->hidden, ad = (size_t)cfg->heads * (size_t)cfg->head_dim, e = 2;
	const size_t xfer = g->K > 1 ? d.q * e : 0; /* send/recv: Q is the largest exchange */
	const kernels_attn_shape s = attn_shape_of(cfg, g);
	int n = 0;
#define SPEC(field, nbytes) out[n++] = (buf_spec){offsetof(rank_bufs, field), (nbytes)}
	SPEC(x, d.T * h * e);
	SPEC(wqkv, h * d.w * e);
	SPEC(wo, ad * h * e);
	SPEC(qkv, d.T * d.w * e);
	SPEC(send, xfer);
	SPEC(recv, xfer);
	SPEC(qh, d.q * e);
	SPEC(kh, d.kv * e);
	SPEC(vh, d.kv * e);
	SPEC(oh, d.q * e);
	SPEC(lse, d.lse * 4);
	SPEC(otok, d.q * e);
	SPEC(y, d.T * h * e);
	if (cfg->backward) {
		SPEC(dy, d.T * h * e);
		SPEC(dotok, d.q * e);
		SPEC(dwo, ad * h * e);
		SPEC(doh, d.q * e);
		SPEC(dqh, d.q * e);
		SPEC(dkh, d.kv * e);
		SPEC(dvh, d.kv * e);
		SPEC(dqkv, d.T * d.w * e);
		SPEC(dx, d.T * h * e);
		SPEC(dwqkv, h * d.w * e);
		SPEC(ws, kernels_attn_bwd_workspace(&s));
	}
#undef SPEC
	return n;
}

enum { MAX_BUFS = 32 };

size_t validate_layer_bytes(const validate_layer_cfg *cfg, const validate_groups *g)
{
	buf_spec specs[MAX_BUFS];
	int n = buf_specs(cfg, g, specs);
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += (specs[i].bytes + 511) / 512 * 512; /* allocation granularity */
	return total;
}

static void **slot_of(rank_bufs *b, size_t off) { return (void **)((char *)b + off); }

static void bufs_free(layer_ctx *c)
{
	if (!c->b)
		return;
	buf_spec specs[MAX_BUFS];
	int n = buf_specs(c->cfg, &c->g, specs);
	for (int k = 0; k < c->n; k++)
		for (int i = 0; i < n; i++) {
			void **p = slot_of(&c->b[k], specs[i].off);
			c->t->ops->release(c->t, c->locals[k], *p);
			*p = NULL;
		}
}

static int bufs_alloc(layer_ctx *c, char *err, size_t errlen)
{
	validate_transport *t = c->t;
	buf_spec specs[MAX_BUFS];
	int n = buf_specs(c->cfg, &c->g, specs);
	const size_t need = validate_layer_bytes(c->cfg, &c->g);
	for (int k = 0; k < c->n; k++) {
		size_t avail;
		int rc = t->ops->mem_available(t, c->locals[k], &avail);
		if (rc)
			return rc;
		if (need > avail) {
			SETERR("rank %d on %s needs %.3f GiB of device memory for this layer, %.3f GiB are free: "
			       "use a shorter sequence, more ranks or a smaller model",
			       t->first_rank + c->locals[k], t->host, (double)need / (1 << 30),
			       (double)avail / (1 << 30));
			return VALIDATE_ENOMEM;
		}
	}
	for (int k = 0; k < c->n; k++)
		for (int i = 0; i < n; i++) {
			if (!specs[i].bytes)
				continue;
			int rc = t->ops->alloc(t, c->locals[k], specs[i].bytes, slot_of(&c->b[k], specs[i].off));
			if (rc) {
				SETERR("allocating layer buffers failed");
				return rc;
			}
		}
	return VALIDATE_OK;
}

void validate_layer_input(const validate_layer_cfg *cfg, int which, int seq, long tok0, long n, kernels_bf16 *out)
{
	const uint64_t h = (uint64_t)cfg->hidden;
	/* Rows of one sequence are contiguous in the global [B][S][hidden] index space. */
	validate_fill(out, (size_t)n * h, cfg->seed, which ? T_DY : T_X, ((uint64_t)seq * (uint64_t)cfg->seq + (uint64_t)tok0) * h,
		      1.0f);
}

void validate_layer_weights(const validate_layer_cfg *cfg, kernels_bf16 *wqkv, kernels_bf16 *wo)
{
	const size_t h = (size_t)cfg->hidden, ad = (size_t)cfg->heads * (size_t)cfg->head_dim;
	const size_t w = (size_t)(cfg->heads + 2 * cfg->kv_heads) * (size_t)cfg->head_dim;
	/* Scales keep activations O(1): q·k/sqrt(d) has about unit variance, so softmax is
	 * neither flat nor one-hot. */
	if (wqkv)
		validate_fill(wqkv, h * w, cfg->seed, T_WQKV, 0, 3.0f / sqrtf((float)h));
	if (wo)
		validate_fill(wo, ad * h, cfg->seed, T_WO, 0, 3.0f / sqrtf((float)ad));
}

/* Generates this rank's inputs (its slices of X and dY, the whole weights) and uploads. */
static int bufs_fill(layer_ctx *c)
{
	validate_transport *t = c->t;
	const validate_layer_cfg *cfg = c->cfg;
	const layer_dims d = dims_of(cfg, &c->g);
	const size_t h = (size_t)cfg->hidden, ad = (size_t)cfg->heads * (size_t)cfg->head_dim;
	size_t most = d.T * h;
	if (h * d.w > most)
		most = h * d.w;
	if (ad * h > most)
		most = ad * h;
	kernels_bf16 *host = malloc(most * sizeof *host);
	if (!host) {
		fprintf(stderr, "[rank %d on %s] %s:%d: out of host memory\n", t->first_rank, t->host, __FILE__, __LINE__);
		return VALIDATE_ENOMEM;
	}
	int rc = VALIDATE_OK;
	for (int k = 0; k < c->n && !rc; k++) {
		const int l = c->locals[k];
		const validate_place *pl = &c->place[k];
		for (int which = 0; which < (cfg->backward ? 2 : 1) && !rc; which++) {
			for (int s = 0; s < c->g.nseq; s++)
				validate_layer_input(cfg, which, pl->seq0 + s, pl->tok0, c->g.tokens,
						     host + (size_t)s * (size_t)c->g.tokens * h);
			rc = t->ops->upload(t, l, which ? c->b[k].dy : c->b[k].x, host, d.T * h * 2);
		}
		if (rc)
			break;
		validate_layer_weights(cfg, host, NULL);
		if ((rc = t->ops->upload(t, l, c->b[k].wqkv, host, h * d.w * 2)))
			break;
		validate_layer_weights(cfg, NULL, host);
		rc = t->ops->upload(t, l, c->b[k].wo, host, ad * h * 2);
	}
	free(host);
	return rc;
}

/* ------------------------------------------------------------------ steps --- */
static int mark_all(layer_ctx *c, int slot)
{
	for (int k = 0; k < c->n; k++) {
		int rc = c->t->ops->mark(c->t, c->locals[k], slot);
		if (rc)
			return rc;
	}
	return VALIDATE_OK;
}

static kernels_bf16 *at(void *p, size_t elems) { return (kernels_bf16 *)p + elems; }

static int gemm(layer_ctx *c, int k, int ta, int tb, size_t m, size_t n, size_t kk, const void *a, size_t lda,
		const void *b, size_t ldb, void *out, size_t ldc)
{
	kernels_gemm g = {.trans_a = ta, .trans_b = tb, .m = (long)m, .n = (long)n, .k = (long)kk, .lda = (long)lda,
			  .ldb = (long)ldb, .ldc = (long)ldc, .alpha = 1.0f, .beta = 0.0f};
	return c->t->ops->gemm(c->t, c->locals[k], &g, a, b, out);
}

static int all_to_all(layer_ctx *c, size_t elems)
{
	validate_transport *t = c->t;
	for (int k = 0; k < c->n; k++) {
		c->sendv[c->locals[k]] = c->b[k].send;
		c->recvv[c->locals[k]] = c->b[k].recv;
	}
	return t->ops->coll(t, VALIDATE_ALLTOALL, c->sp, c->sendv, c->recvv, elems / (size_t)c->g.K, VALIDATE_BF16);
}

/* The token-side tensor of an exchange: its columns in a [T][ld] matrix and its heads
 * after replication. */
typedef struct tok_side {
	void *tok; /* first column */
	size_t ld;
	int heads, rep;
	void *head; /* the head-sharded tensor */
} tok_side;

enum { X_Q, X_K, X_V, X_DO, X_O, X_DQ, X_DK, X_DV };

static tok_side side_of(layer_ctx *c, int k, int which)
{
	const validate_layer_cfg *cfg = c->cfg;
	const layer_dims d = dims_of(cfg, &c->g);
	const size_t ad = (size_t)cfg->heads * (size_t)cfg->head_dim, gd = (size_t)cfg->kv_heads * (size_t)cfg->head_dim;
	const int kvh = cfg->kv_heads * c->g.kv_rep;
	rank_bufs *b = &c->b[k];
	switch (which) {
	case X_Q: return (tok_side){b->qkv, d.w, cfg->heads, 1, b->qh};
	case X_K: return (tok_side){at(b->qkv, ad), d.w, kvh, c->g.kv_rep, b->kh};
	case X_V: return (tok_side){at(b->qkv, ad + gd), d.w, kvh, c->g.kv_rep, b->vh};
	case X_DO: return (tok_side){b->dotok, ad, cfg->heads, 1, b->doh};
	case X_O: return (tok_side){b->otok, ad, cfg->heads, 1, b->oh};
	case X_DQ: return (tok_side){b->dqkv, d.w, cfg->heads, 1, b->dqh};
	case X_DK: return (tok_side){at(b->dqkv, ad), d.w, kvh, c->g.kv_rep, b->dkh};
	default: return (tok_side){at(b->dqkv, ad + gd), d.w, kvh, c->g.kv_rep, b->dvh};
	}
}

/* Token-sharded -> head-sharded: pack, all-to-all, unpack; phases first .. first + 2. */
static int to_heads(layer_ctx *c, int which, int first)
{
	validate_transport *t = c->t;
	const int K = c->g.K;
	int rc = VALIDATE_OK;
	size_t elems = 0;
	for (int k = 0; k < c->n && !rc; k++) {
		tok_side s = side_of(c, k, which);
		kernels_permute p = {KERNELS_TOK_PACK, K, c->g.nseq, c->g.tokens, s.heads, s.rep, c->cfg->head_dim,
				     (long)s.ld};
		elems = kernels_permute_buffer_elems(&p);
		/* K = 1: the packed layout is the head-sharded one; copy straight there. */
		rc = t->ops->permute(t, c->locals[k], &p, s.tok, K > 1 ? c->b[k].send : s.head);
	}
	if (rc || (rc = mark_all(c, first + 1)))
		return rc;
	if (K > 1 && (rc = all_to_all(c, elems)))
		return rc;
	if ((rc = mark_all(c, first + 2)))
		return rc;
	for (int k = 0; k < c->n && K > 1 && !rc; k++) {
		tok_side s = side_of(c, k, which);
		kernels_permute p = {KERNELS_HEAD_UNPACK, K, c->g.nseq, c->g.tokens, s.heads, 1, c->cfg->head_dim, 0};
		rc = t->ops->permute(t, c->locals[k], &p, c->b[k].recv, s.head);
	}
	return rc ? rc : mark_all(c, first + 3);
}

/* Head-sharded -> token-sharded: pack, all-to-all, unpack (replicas summed). */
static int to_tokens(layer_ctx *c, int which, int first)
{
	validate_transport *t = c->t;
	const int K = c->g.K;
	int rc = VALIDATE_OK;
	size_t elems = 0;
	for (int k = 0; k < c->n && K > 1 && !rc; k++) {
		tok_side s = side_of(c, k, which);
		kernels_permute p = {KERNELS_HEAD_PACK, K, c->g.nseq, c->g.tokens, s.heads, 1, c->cfg->head_dim, 0};
		elems = kernels_permute_buffer_elems(&p);
		rc = t->ops->permute(t, c->locals[k], &p, s.head, c->b[k].send);
	}
	if (rc || (rc = mark_all(c, first + 1)))
		return rc;
	if (K > 1 && (rc = all_to_all(c, elems)))
		return rc;
	if ((rc = mark_all(c, first + 2)))
		return rc;
	for (int k = 0; k < c->n && !rc; k++) {
		tok_side s = side_of(c, k, which);
		kernels_permute p = {KERNELS_TOK_UNPACK, K, c->g.nseq, c->g.tokens, s.heads, s.rep, c->cfg->head_dim,
				     (long)s.ld};
		/* K = 1: the head-sharded tensor is already in the receive layout. */
		rc = t->ops->permute(t, c->locals[k], &p, K > 1 ? c->b[k].recv : s.head, s.tok);
	}
	return rc ? rc : mark_all(c, first + 3);
}

static int iteration(layer_ctx *c)
{
	validate_transport *t = c->t;
	const validate_layer_cfg *cfg = c->cfg;
	const layer_dims d = dims_of(cfg, &c->g);
	const size_t h = (size_t)cfg->hidden, ad = (size_t)cfg->heads * (size_t)cfg->head_dim;
	const kernels_attn_shape s = attn_shape_of(cfg, &c->g);
	int rc;
#define STEP(expr)                                      \
	for (int k = 0; k < c->n; k++)                  \
		if ((rc = (expr)))                      \
			return rc;
	if ((rc = mark_all(c, 0)))
		return rc;
	STEP(gemm(c, k, 0, 0, d.T, d.w, h, c->b[k].x, h, c->b[k].wqkv, d.w, c->b[k].qkv, d.w));
	if ((rc = mark_all(c, PH_QKV + 1)) || (rc = to_heads(c, X_Q, PH_Q)) || (rc = to_heads(c, X_K, PH_K)) ||
	    (rc = to_heads(c, X_V, PH_V)))
		return rc;
	STEP(t->ops->attn_fwd(t, c->locals[k], &s, c->b[k].qh, c->b[k].kh, c->b[k].vh, c->b[k].oh, c->b[k].lse));
	if ((rc = mark_all(c, PH_ATTN + 1)) || (rc = to_tokens(c, X_O, PH_O)))
		return rc;
	STEP(gemm(c, k, 0, 0, d.T, h, ad, c->b[k].otok, ad, c->b[k].wo, h, c->b[k].y, h));
	if ((rc = mark_all(c, PH_OUT + 1)) || !cfg->backward)
		return rc;

	STEP(gemm(c, k, 0, 1, d.T, ad, h, c->b[k].dy, h, c->b[k].wo, h, c->b[k].dotok, ad));
	STEP(gemm(c, k, 1, 0, ad, h, d.T, c->b[k].otok, ad, c->b[k].dy, h, c->b[k].dwo, h));
	if ((rc = mark_all(c, PH_OUT_BWD + 1)) || (rc = to_heads(c, X_DO, PH_DO)))
		return rc;
	STEP(t->ops->attn_bwd(t, c->locals[k], &s, c->b[k].qh, c->b[k].kh, c->b[k].vh, c->b[k].oh, c->b[k].doh,
			      c->b[k].lse, c->b[k].dqh, c->b[k].dkh, c->b[k].dvh, c->b[k].ws));
	if ((rc = mark_all(c, PH_ATTN_BWD + 1)) || (rc = to_tokens(c, X_DQ, PH_DQ)) || (rc = to_tokens(c, X_DK, PH_DK)) ||
	    (rc = to_tokens(c, X_DV, PH_DV)))
		return rc;
	STEP(gemm(c, k, 0, 1, d.T, h, d.w, c->b[k].dqkv, d.w, c->b[k].wqkv, d.w, c->b[k].dx, h));
	STEP(gemm(c, k, 1, 0, h, d.w, d.T, c->b[k].x, h, c->b[k].dqkv, d.w, c->b[k].dwqkv, d.w));
	return mark_all(c, PH_QKV_BWD + 1);
#undef STEP
}

/* ------------------------------------------------------------------ driver --- */
/* One small all-reduce over the world before anything is timed: every rank leaves it
 * together, whatever ran before on some of them (a reference run on local rank 0, uneven
 * uploads), so the first timed all-to-all does not include that skew. */
static int align(layer_ctx *c)
{
	validate_transport *t = c->t;
	if (t->world < 2)
		return VALIDATE_OK;
	for (int k = 0; k < c->n; k++) {
		c->sendv[c->locals[k]] = c->b[k].lse; /* any device buffer of >= 4 bytes */
		c->recvv[c->locals[k]] = c->b[k].lse;
	}
	int rc = t->ops->coll(t, VALIDATE_ALLREDUCE, t->world_comm, c->sendv, c->recvv, 1, VALIDATE_F32);
	for (int k = 0; k < c->n && !rc; k++)
		rc = t->ops->sync(t, c->locals[k]);
	return rc;
}

static void ctx_finish(layer_ctx *c)
{
	bufs_free(c);
	if (c->sp)
		c->t->ops->comm_free(c->t, c->sp);
	free(c->sp);
	free(c->sendv);
	free(c->recvv);
	free(c->locals);
	free(c->place);
	free(c->b);
	free(c->acc);
}

/* Runs cfg on the participants — every local rank, or for a reference run (seq_base >= 0)
 * local rank 0 alone as rank 0 of a one-rank job on sequence seq_base — timing `iters`
 * iterations after `warmup`, and downloads the outputs into res. */
static int run(validate_transport *t, const validate_layer_cfg *cfg, int n_part, int seq_base,
	       validate_layer_result *res, char *err, size_t errlen)
{
	layer_ctx c;
	memset(&c, 0, sizeof c);
	c.t = t;
	c.cfg = cfg;
	int rc = validate_groups_make(cfg->strategy, cfg->world, cfg->micro_batch, cfg->seq, cfg->heads, cfg->kv_heads,
				      &c.g, err, errlen);
	if (rc)
		return rc;
	if (cfg->hidden < 1 || cfg->head_dim < 1 || cfg->iters < 1 || cfg->warmup < 0) {
		SETERR("hidden size and head dim must be >= 1, iterations >= 1");
		return VALIDATE_EINVAL;
	}
	if (c.g.seq > 0x7fffffffL) {
		SETERR("sequence length %ld is too long for the kernels (int)", c.g.seq);
		return VALIDATE_EINVAL;
	}
	c.n = n_part;
	c.locals = calloc((size_t)n_part, sizeof *c.locals);
	c.place = calloc((size_t)n_part, sizeof *c.place);
	c.b = calloc((size_t)n_part, sizeof *c.b);
	c.acc = calloc((size_t)n_part * VALIDATE_LAYER_PHASES, sizeof *c.acc);
	c.sendv = calloc((size_t)t->n_local, sizeof *c.sendv);
	c.recvv = calloc((size_t)t->n_local, sizeof *c.recvv);
	if (!c.locals || !c.place || !c.b || !c.acc || !c.sendv || !c.recvv) {
		rc = VALIDATE_ENOMEM;
		SETERR("out of host memory");
		goto out;
	}
	for (int k = 0; k < n_part; k++) {
		c.locals[k] = k;
		if (seq_base >= 0) {
			c.place[k] = validate_place_of(&c.g, k);
			c.place[k].seq0 += seq_base;
		} else {
			c.place[k] = validate_place_of(&c.g, t->first_rank + k);
		}
	}
	if (c.g.K > 1) {
		/* The SP groups: contiguous ranks, color = group index. One split even for a
		 * single group (Ulysses), so the layer never uses the world communicator the
		 * ZeRO collectives would share. */
		int *color = calloc((size_t)t->n_local, sizeof *color);
		c.sp = calloc((size_t)t->n_local, sizeof *c.sp);
		if (!color || !c.sp) {
			free(color);
			rc = VALIDATE_ENOMEM;
			SETERR("out of host memory");
			goto out;
		}
		for (int i = 0; i < t->n_local; i++)
			color[i] = (t->first_rank + i) / c.g.K;
		rc = t->ops->comm_split(t, t->world_comm, color, c.sp);
		free(color);
		if (rc) {
			SETERR("splitting the world into groups of %d failed", c.g.K);
			goto out;
		}
	}
	validate_step_begin("layer %s: buffers", validate_strategy_name(cfg->strategy));
	if (!(rc = bufs_alloc(&c, err, errlen)) && !(rc = bufs_fill(&c)) && seq_base < 0)
		rc = align(&c);
	/* Only the partitioned run is collective; the reference (seq_base >= 0) is local. */
	if ((seq_base < 0 && (rc = validate_agree(t->launch, rc))) || rc)
		goto out;
	const int n_phases = cfg->backward ? VALIDATE_LAYER_PHASES : VALIDATE_LAYER_FWD_PHASES;
	for (int it = 0; it < cfg->warmup + cfg->iters; it++) {
		validate_step_begin("layer %s: iteration %d of %d", validate_strategy_name(cfg->strategy), it + 1,
				    cfg->warmup + cfg->iters);
		rc = iteration(&c);
		for (int k = 0; k < c.n && !rc; k++)
			rc = t->ops->sync(t, c.locals[k]);
		if ((seq_base < 0 && (rc = validate_agree(t->launch, rc))) || rc)
			goto out;
		if (it < cfg->warmup)
			continue;
		for (int k = 0; k < c.n; k++)
			for (int p = 0; p < n_phases; p++) {
				double s;
				if ((rc = t->ops->elapsed(t, c.locals[k], p, p + 1, &s)))
					goto out;
				c.acc[k * VALIDATE_LAYER_PHASES + p] += s;
			}
	}
	res->groups = c.g;
	res->n_phases = n_phases;
	res->n_local = n_part;
	for (int p = 0; p < n_phases; p++) {
		double mx = 0, sum = 0;
		for (int k = 0; k < c.n; k++) {
			double v = c.acc[k * VALIDATE_LAYER_PHASES + p] / cfg->iters;
			mx = v > mx ? v : mx;
			sum += v;
		}
		res->time_s[p] = mx;
		res->mean_s[p] = sum; /* summed here; divided by the world after the reduction */
	}
	/* Outputs of the last iteration. */
	{
		const layer_dims d = dims_of(cfg, &c.g);
		const size_t bytes = d.T * (size_t)cfg->hidden * 2;
		res->y = calloc((size_t)n_part, sizeof *res->y);
		res->dx = calloc((size_t)n_part, sizeof *res->dx);
		if (!res->y || !res->dx) {
			rc = VALIDATE_ENOMEM;
			SETERR("out of host memory");
			goto out;
		}
		for (int k = 0; k < c.n; k++) {
			if (!(res->y[k] = malloc(bytes)) || (cfg->backward && !(res->dx[k] = malloc(bytes)))) {
				rc = VALIDATE_ENOMEM;
				SETERR("out of host memory");
				goto out;
			}
			if ((rc = t->ops->download(t, c.locals[k], res->y[k], c.b[k].y, bytes)) ||
			    (cfg->backward && (rc = t->ops->download(t, c.locals[k], res->dx[k], c.b[k].dx, bytes))))
				goto out;
		}
	}
out:
	ctx_finish(&c);
	return rc;
}

void validate_layer_result_finish(validate_layer_result *r)
{
	if (!r)
		return;
	for (int k = 0; k < r->n_local; k++) {
		if (r->y)
			free(r->y[k]);
		if (r->dx)
			free(r->dx[k]);
	}
	free(r->y);
	free(r->dx);
	r->y = r->dx = NULL;
	r->n_local = 0;
}

int validate_layer_run(validate_transport *t, const validate_layer_cfg *cfg, validate_layer_result *out, char *err,
		       size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (cfg->world != t->world) {
		SETERR("the layer wants %d ranks, the transport has %d", cfg->world, t->world);
		return VALIDATE_EINVAL;
	}
	int rc = run(t, cfg, t->n_local, -1, out, err, errlen);
	/* Across processes: the slowest rank's time, and the mean. */
	if ((rc = validate_agree(t->launch, rc)) || (rc = t->launch->allreduce_max(t->launch, out->time_s, out->n_phases)) ||
	    (rc = t->launch->allreduce_sum(t->launch, out->mean_s, out->n_phases))) {
		validate_layer_result_finish(out);
		return rc;
	}
	for (int p = 0; p < out->n_phases; p++)
		out->mean_s[p] /= t->world;
	return VALIDATE_OK;
}

int validate_layer_check(validate_transport *t, const validate_layer_cfg *cfg, validate_layer_result *res,
			 double tol, char *err, size_t errlen)
{
	const validate_groups *g = &res->groups;
	const size_t h = (size_t)cfg->hidden, slice = (size_t)g->tokens * h, per_rank = (size_t)g->nseq * slice;
	const size_t total = per_rank * (size_t)res->n_local;
	kernels_bf16 *want_y = malloc(total * 2), *got_y = malloc(total * 2);
	kernels_bf16 *want_dx = cfg->backward ? malloc(total * 2) : NULL, *got_dx = cfg->backward ? malloc(total * 2) : NULL;
	int rc = VALIDATE_OK;
	if (!want_y || !got_y || (cfg->backward && (!want_dx || !got_dx))) {
		rc = VALIDATE_ENOMEM;
		SETERR("out of host memory for the reference comparison");
		goto out;
	}
	/* The reference: the same layer on one rank holding one whole sequence (K = 1). */
	validate_layer_cfg ref = *cfg;
	ref.world = 1;
	ref.micro_batch = 1;
	ref.warmup = 0;
	ref.iters = 1;
	const int first_seq = validate_place_of(g, t->first_rank).seq0;
	const int last_seq = validate_place_of(g, t->first_rank + res->n_local - 1).seq0 + g->nseq - 1;
	for (int sq = first_seq; sq <= last_seq; sq++) {
		validate_layer_result r;
		memset(&r, 0, sizeof r);
		validate_step_begin("layer check: reference of sequence %d", sq);
		if ((rc = run(t, &ref, 1, sq, &r, err, errlen))) {
			validate_layer_result_finish(&r);
			goto out;
		}
		for (int k = 0; k < res->n_local; k++) {
			validate_place pl = validate_place_of(g, t->first_rank + k);
			if (sq < pl.seq0 || sq >= pl.seq0 + g->nseq)
				continue;
			const size_t at_rank = (size_t)k * per_rank + (size_t)(sq - pl.seq0) * slice;
			const size_t at_ref = (size_t)pl.tok0 * h;
			memcpy(want_y + at_rank, r.y[0] + at_ref, slice * 2);
			memcpy(got_y + at_rank, res->y[k] + (size_t)(sq - pl.seq0) * slice, slice * 2);
			if (cfg->backward) {
				memcpy(want_dx + at_rank, r.dx[0] + at_ref, slice * 2);
				memcpy(got_dx + at_rank, res->dx[k] + (size_t)(sq - pl.seq0) * slice, slice * 2);
			}
		}
		validate_layer_result_finish(&r);
	}
out:
	if ((rc = validate_agree(t->launch, rc)))
		goto done;
	res->checked = true;
	res->pass = kernels_compare_bf16(got_y, want_y, total, tol, &res->cmp_y);
	if (cfg->backward)
		res->pass = kernels_compare_bf16(got_dx, want_dx, total, tol, &res->cmp_dx) && res->pass;
	/* Every process must agree on the verdict, and report the worst error of any. */
	double worst[5] = {res->pass ? 0 : 1, res->cmp_y.max_abs, res->cmp_y.max_norm, res->cmp_dx.max_abs,
			   res->cmp_dx.max_norm};
	if ((rc = t->launch->allreduce_max(t->launch, worst, 5)))
		goto done;
	res->pass = worst[0] == 0;
	res->cmp_y.max_abs = worst[1];
	res->cmp_y.max_norm = worst[2];
	res->cmp_dx.max_abs = worst[3];
	res->cmp_dx.max_norm = worst[4];
done:
	free(want_y);
	free(got_y);
	free(want_dx);
	free(got_dx);
	return rc;
}
