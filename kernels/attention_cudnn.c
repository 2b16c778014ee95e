/* Attention through cuDNN 9's fused flash attention (kernels.h, kernels_cudnn_*), built
 * with cuDNN's backend (graph) C API: the operation graph that cuDNN's own frontend
 * builds for scaled_dot_product_flash_attention and its backward (NVIDIA/cudnn-frontend,
 * include/cudnn_frontend/node/scaled_dot_product_flash_attention.h), which cuDNN's
 * heuristics map to its fused flash-attention engines (cuDNN developer guide, "Fused
 * Flash Attention Fprop/Bprop" in the graph API's supported patterns).
 *
 * Layout: our tensors are [nseq][S][heads][d] (the Ulysses/BASP head-sharded layout of
 * kernels.h); cuDNN's are 4-D [b][h][s][d] with any strides, so ours are described as
 * dims {nseq, heads, S, d} with strides {S·heads·d, d, heads·d, 1} and no copy. Grouped-
 * query attention is the K/V tensors having fewer heads than Q ({nseq, kv_heads, S, d});
 * replicated kv heads (g < P in Ulysses) arrive here already replicated, so they are
 * ordinary kv heads. K (and in backward V) enters the first matmul transposed by strides.
 *
 * Forward graph (bf16 in and out, fp32 inside):
 *   S = Q·Kᵀ; S *= 1/sqrt(d); causal: S = select(S, -inf, row >= col)
 *   m = rowmax(S); E = exp(S - m); l = rowsum(E); stats = m + log(l); P = E / l; O = P·V
 * stats is our log-sum-exp [nseq][heads][S] fp32 (natural log of the scaled scores).
 * Backward graph:
 *   Dsum = rowsum(dO∘O)           (fp32, written to our workspace)
 *   P = exp(mask(Q·Kᵀ/sqrt(d) - stats));  dV = Pᵀ·dO (summed over the group's query heads)
 *   dS = P∘(dO·Vᵀ - Dsum)/sqrt(d); dK = dSᵀ·Q (summed likewise); dQ = dS·K (fp32 accumulator
 *   in our workspace, zeroed before each call, then rounded to bf16)
 *
 * Plans are built on first use of a shape and cached per context (one context per device
 * and stream). A shape cuDNN has no engine for is reported with cuDNN's own message. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "kernels.h"

enum {
	UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV,
	UID_SCALE, UID_NEGINF, UID_DSUM, UID_DQACC, UID_VIRTUAL = 100,
};
#define MAX_DESC 96
#define MAX_OPS 40
#define MAX_PLANS 24

typedef struct plan {
	kernels_attn_shape shape;
	int bwd;
	cudnnBackendDescriptor_t plan;
	int64_t workspace; /* the engine's own */
	size_t extra;      /* backward: Dsum and the dQ accumulator, ahead of the engine's */
	int failed;        /* no engine: do not try again */
} plan;

struct kernels_cudnn {
	cudnnHandle_t handle;
	cudaStream_t stream;
	void *ws;
	size_t ws_bytes;
	plan plans[MAX_PLANS];
	int n_plans;
	char last_error[512];
};

/* A graph under construction: every descriptor made, to destroy at the end. */
typedef struct builder {
	cudnnHandle_t handle;
	cudnnBackendDescriptor_t made[MAX_DESC];
	int n_made;
	cudnnBackendDescriptor_t ops[MAX_OPS];
	int n_ops;
	int64_t next_uid;
	cudnnStatus_t st;
	const char *where;
} builder;

static cudnnBackendDescriptor_t make(builder *b, cudnnBackendDescriptorType_t type, const char *what)
{
	cudnnBackendDescriptor_t d = NULL;
	if (b->st != CUDNN_STATUS_SUCCESS)
		return NULL;
	if (b->n_made == MAX_DESC) {
		b->st = CUDNN_STATUS_INTERNAL_ERROR;
		b->where = "too many descriptors";
		return NULL;
	}
	if ((b->st = cudnnBackendCreateDescriptor(type, &d)) != CUDNN_STATUS_SUCCESS) {
		b->where = what;
		return NULL;
	}
	b->made[b->n_made++] = d;
	return d;
}

static void set(builder *b, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
		cudnnBackendAttributeType_t type, int64_t n, const void *v, const char *what)
{
	if (b->st != CUDNN_STATUS_SUCCESS)
		return;
	if ((b->st = cudnnBackendSetAttribute(d, name, type, n, v)) != CUDNN_STATUS_SUCCESS)
		b->where = what;
}

static void finalize(builder *b, cudnnBackendDescriptor_t d, const char *what)
{
	if (b->st != CUDNN_STATUS_SUCCESS)
		return;
	if ((b->st = cudnnBackendFinalize(d)) != CUDNN_STATUS_SUCCESS)
		b->where = what;
}

/* A 4-D tensor; uid 0 makes a virtual one with the next free uid. */
static cudnnBackendDescriptor_t tensor(builder *b, int64_t uid, cudnnDataType_t dt, const int64_t dim[4],
				       const int64_t str[4], bool by_value)
{
	cudnnBackendDescriptor_t t = make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
	const bool virt = uid == 0;
	const int64_t id = virt ? b->next_uid++ : uid, align = 16;
	set(b, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor type");
	set(b, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim, "tensor dims");
	set(b, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str, "tensor strides");
	set(b, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "tensor uid");
	set(b, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
	set(b, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual");
	if (by_value)
		set(b, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "tensor by value");
	finalize(b, t, "tensor");
	return t;
}

static void add_op(builder *b, cudnnBackendDescriptor_t op)
{
	if (b->st != CUDNN_STATUS_SUCCESS)
		return;
	if (b->n_ops == MAX_OPS) {
		b->st = CUDNN_STATUS_INTERNAL_ERROR;
		b->where = "too many operations";
		return;
	}
	b->ops[b->n_ops++] = op;
}

/* An operation: its descriptor attributes (each a descriptor, NULL ones skipped),
 * finalized and added to the graph. */
static void op(builder *b, cudnnBackendDescriptorType_t type, const char *what, int n,
	       const cudnnBackendAttributeName_t *names, const cudnnBackendDescriptor_t *descs)
{
	cudnnBackendDescriptor_t o = make(b, type, what);
	for (int i = 0; i < n; i++)
		if (descs[i])
			set(b, o, names[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descs[i], what);
	finalize(b, o, what);
	add_op(b, o);
}

/* A descriptor with one compute type (and a mode or operator) for an operation. */
static cudnnBackendDescriptor_t config(builder *b, cudnnBackendDescriptorType_t type, const char *what,
				       cudnnBackendAttributeName_t mode_attr, cudnnBackendAttributeType_t mode_type,
				       const void *mode, cudnnBackendAttributeName_t ct_attr, cudnnDataType_t ct, int64_t axis)
{
	cudnnBackendDescriptor_t d = make(b, type, what);
	if (mode)
		set(b, d, mode_attr, mode_type, 1, mode, what);
	set(b, d, ct_attr, CUDNN_TYPE_DATA_TYPE, 1, &ct, what);
	if (axis >= 0)
		set(b, d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
	finalize(b, d, what);
	return d;
}

/* y = mode(x [, x2 [, t]]); compute type ct; axis for GEN_INDEX (-1: none). */
static void pw(builder *b, cudnnPointwiseMode_t mode, cudnnDataType_t ct, int64_t axis, cudnnBackendDescriptor_t x,
	       cudnnBackendDescriptor_t x2, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y)
{
	static const cudnnBackendAttributeName_t names[] = {
		CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
		CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
		CUDNN_ATTR_OPERATION_POINTWISE_YDESC};
	const cudnnBackendDescriptor_t d[] = {
		config(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise", CUDNN_ATTR_POINTWISE_MODE,
		       CUDNN_TYPE_POINTWISE_MODE, &mode, CUDNN_ATTR_POINTWISE_MATH_PREC, ct, axis),
		x, x2, t, y};
	op(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op", 5, names, d);
}

static void matmul(builder *b, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t bb, cudnnBackendDescriptor_t c)
{
	static const cudnnBackendAttributeName_t names[] = {
		CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
		CUDNN_ATTR_OPERATION_MATMUL_CDESC};
	const cudnnBackendDescriptor_t d[] = {
		config(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul", CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, NULL,
		       CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT, -1),
		a, bb, c};
	op(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op", 4, names, d);
}

static void reduce(builder *b, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	static const cudnnBackendAttributeName_t names[] = {
		CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
		CUDNN_ATTR_OPERATION_REDUCTION_YDESC};
	const cudnnBackendDescriptor_t d[] = {
		config(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction", CUDNN_ATTR_REDUCTION_OPERATOR,
		       CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &how, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT, -1),
		x, y};
	op(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op", 3, names, d);
}

/* A transposed view of x (same memory, dims and strides given by y). */
static void reshape(builder *b, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	static const cudnnBackendAttributeName_t names[] = {CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
							    CUDNN_ATTR_OPERATION_RESHAPE_YDESC};
	const cudnnBackendDescriptor_t d[] = {x, y};
	op(b, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op", 2, names, d);
}

/* Shapes of the graph's tensors. */
typedef struct dims {
	int64_t q[4], qs[4];   /* Q, O, dO, dQ: {b, hq, s, d} over [b][s][hq][d] */
	int64_t kv[4], kvs[4]; /* K, V, dK, dV: {b, hk, s, d} over [b][s][hk][d] */
	int64_t kt[4], kts[4]; /* Kᵀ (and Vᵀ): {b, hk, d, s}, same memory */
	int64_t sc[4], scs[4]; /* scores {b, hq, s, s} */
	int64_t st[4], sts[4]; /* row statistics {b, hq, s, 1} */
	int64_t one[4];        /* scalars */
	int64_t acc[4], accs[4];   /* dQ accumulator, fp32, {b, hq, s, d} dense */
	int64_t pt[4], pts[4];     /* Pᵀ, dSᵀ: {b, hq, s_kv, s_q} */
	int64_t full[4], fulls[4]; /* dK, dV over all query heads before the group sum */
} dims;

static dims dims_of(const kernels_attn_shape *s)
{
	const int64_t B = s->nseq, H = s->heads, G = s->kv_heads, S = s->seq, D = s->head_dim;
	dims d = {
		.q = {B, H, S, D}, .qs = {S * H * D, D, H * D, 1},
		.kv = {B, G, S, D}, .kvs = {S * G * D, D, G * D, 1},
		.kt = {B, G, D, S}, .kts = {S * G * D, D, 1, G * D},
		.sc = {B, H, S, S}, .scs = {H * S * S, S * S, S, 1},
		.st = {B, H, S, 1}, .sts = {H * S, S, 1, 1},
		.one = {1, 1, 1, 1},
		.acc = {B, H, S, D}, .accs = {H * S * D, S * D, D, 1},
		.pt = {B, H, S, S}, .pts = {H * S * S, S * S, 1, S},
		.full = {B, H, S, D}, .fulls = {H * S * D, S * D, D, 1},
	};
	return d;
}

/* Causal mask: keep x where row >= col, else the lowest float (neginf). */
static cudnnBackendDescriptor_t causal(builder *b, const dims *d, cudnnBackendDescriptor_t x,
				       cudnnBackendDescriptor_t neginf)
{
	cudnnBackendDescriptor_t row = tensor(b, 0, CUDNN_DATA_INT32, d->sc, d->scs, false);
	cudnnBackendDescriptor_t col = tensor(b, 0, CUDNN_DATA_INT32, d->sc, d->scs, false);
	cudnnBackendDescriptor_t keep = tensor(b, 0, CUDNN_DATA_BOOLEAN, d->sc, d->scs, false);
	cudnnBackendDescriptor_t y = tensor(b, 0, CUDNN_DATA_FLOAT, d->sc, d->scs, false);
	pw(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, 2, x, NULL, NULL, row);
	pw(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, 3, x, NULL, NULL, col);
	pw(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL, keep);
	pw(b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, x, neginf, keep, y); /* keep ? x : neginf */
	return y;
}

/* What both directions share: Q, Kᵀ, O, the statistics, the two scalars, and the
 * scaled scores Q·Kᵀ/sqrt(d). */
typedef struct common {
	cudnnBackendDescriptor_t q, kt, o, stats, scale, neginf, scaled;
} common;

static common begin(builder *b, const dims *d)
{
	const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
	common c = {
		.q = tensor(b, UID_Q, BF, d->q, d->qs, false),
		.kt = tensor(b, UID_K, BF, d->kt, d->kts, false),
		.o = tensor(b, UID_O, BF, d->q, d->qs, false),
		.stats = tensor(b, UID_STATS, F, d->st, d->sts, false),
		.scale = tensor(b, UID_SCALE, F, d->one, d->one, true),
		.neginf = tensor(b, UID_NEGINF, F, d->one, d->one, true),
		.scaled = tensor(b, 0, F, d->sc, d->scs, false),
	};
	cudnnBackendDescriptor_t scores = tensor(b, 0, F, d->sc, d->scs, false);
	matmul(b, c.q, c.kt, scores);
	pw(b, CUDNN_POINTWISE_MUL, F, -1, scores, c.scale, NULL, c.scaled);
	return c;
}

static void build_fwd(builder *b, const kernels_attn_shape *s)
{
	const dims d = dims_of(s);
	const cudnnDataType_t F = CUDNN_DATA_FLOAT;
	const common c = begin(b, &d);
	cudnnBackendDescriptor_t v = tensor(b, UID_V, CUDNN_DATA_BFLOAT16, d.kv, d.kvs, false);
	cudnnBackendDescriptor_t x = s->causal ? causal(b, &d, c.scaled, c.neginf) : c.scaled;
	cudnnBackendDescriptor_t m = tensor(b, 0, F, d.st, d.sts, false);
	cudnnBackendDescriptor_t xm = tensor(b, 0, F, d.sc, d.scs, false);
	cudnnBackendDescriptor_t e = tensor(b, 0, F, d.sc, d.scs, false);
	cudnnBackendDescriptor_t l = tensor(b, 0, F, d.st, d.sts, false);
	cudnnBackendDescriptor_t logl = tensor(b, 0, F, d.st, d.sts, false);
	cudnnBackendDescriptor_t p = tensor(b, 0, F, d.sc, d.scs, false);
	reduce(b, CUDNN_REDUCE_TENSOR_MAX, x, m);
	pw(b, CUDNN_POINTWISE_SUB, F, -1, x, m, NULL, xm);
	pw(b, CUDNN_POINTWISE_EXP, F, -1, xm, NULL, NULL, e);
	reduce(b, CUDNN_REDUCE_TENSOR_ADD, e, l);
	pw(b, CUDNN_POINTWISE_LOG, F, -1, l, NULL, NULL, logl);
	pw(b, CUDNN_POINTWISE_ADD, F, -1, m, logl, NULL, c.stats);
	pw(b, CUDNN_POINTWISE_DIV, F, -1, e, l, NULL, p);
	matmul(b, p, v, c.o);
}

/* out = xᵀ·y for scores-shaped x; with GQA out has fewer heads than x, and the query
 * heads of each group are summed into it (a reduction over the head axis). */
static void transposed_times(builder *b, const dims *d, bool gqa, cudnnBackendDescriptor_t x,
			     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t out)
{
	cudnnBackendDescriptor_t xt = tensor(b, 0, CUDNN_DATA_BFLOAT16, d->pt, d->pts, false);
	reshape(b, x, xt);
	if (!gqa) {
		matmul(b, xt, y, out);
		return;
	}
	cudnnBackendDescriptor_t full = tensor(b, 0, CUDNN_DATA_BFLOAT16, d->full, d->fulls, false);
	matmul(b, xt, y, full);
	reduce(b, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

static void build_bwd(builder *b, const kernels_attn_shape *s)
{
	const dims d = dims_of(s);
	const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
	const bool gqa = s->heads != s->kv_heads;
	const common c = begin(b, &d);
	cudnnBackendDescriptor_t q = c.q, kt = c.kt, o = c.o, scale = c.scale;
	cudnnBackendDescriptor_t vt = tensor(b, UID_V, BF, d.kt, d.kts, false);
	cudnnBackendDescriptor_t dout = tensor(b, UID_DO, BF, d.q, d.qs, false);
	cudnnBackendDescriptor_t dq = tensor(b, UID_DQ, BF, d.q, d.qs, false);
	cudnnBackendDescriptor_t dk = tensor(b, UID_DK, BF, d.kv, d.kvs, false);
	cudnnBackendDescriptor_t dv = tensor(b, UID_DV, BF, d.kv, d.kvs, false);
	cudnnBackendDescriptor_t dsum = tensor(b, UID_DSUM, F, d.st, d.sts, false);
	cudnnBackendDescriptor_t acc = tensor(b, UID_DQACC, F, d.acc, d.accs, false);

	/* Dsum = rowsum(dO∘O) */
	cudnnBackendDescriptor_t doo = tensor(b, 0, F, d.q, d.qs, false);
	pw(b, CUDNN_POINTWISE_MUL, F, -1, dout, o, NULL, doo);
	reduce(b, CUDNN_REDUCE_TENSOR_ADD, doo, dsum);
	/* P = exp(mask(scale·Q·Kᵀ) - stats); the mask after the subtraction, as cuDNN's
	 * frontend orders it */
	cudnnBackendDescriptor_t shifted = tensor(b, 0, F, d.sc, d.scs, false);
	pw(b, CUDNN_POINTWISE_SUB, F, -1, c.scaled, c.stats, NULL, shifted);
	cudnnBackendDescriptor_t masked = s->causal ? causal(b, &d, shifted, c.neginf) : shifted;
	cudnnBackendDescriptor_t p = tensor(b, 0, F, d.sc, d.scs, false);
	pw(b, CUDNN_POINTWISE_EXP, F, -1, masked, NULL, NULL, p);
	/* dV = Pᵀ·dO, then the group's query heads summed into their kv head */
	transposed_times(b, &d, gqa, p, dout, dv);
	/* dS = P∘(dO·Vᵀ - Dsum)·scale */
	cudnnBackendDescriptor_t dp = tensor(b, 0, F, d.sc, d.scs, false);
	cudnnBackendDescriptor_t dpc = tensor(b, 0, F, d.sc, d.scs, false);
	cudnnBackendDescriptor_t ds0 = tensor(b, 0, F, d.sc, d.scs, false);
	cudnnBackendDescriptor_t ds = tensor(b, 0, F, d.sc, d.scs, false);
	matmul(b, dout, vt, dp);
	pw(b, CUDNN_POINTWISE_SUB, F, -1, dp, dsum, NULL, dpc);
	pw(b, CUDNN_POINTWISE_MUL, F, -1, dpc, p, NULL, ds0);
	pw(b, CUDNN_POINTWISE_MUL, F, -1, ds0, scale, NULL, ds);
	/* dK = dSᵀ·Q, summed over the group likewise */
	transposed_times(b, &d, gqa, ds, q, dk);
	/* dQ = dS·K through the fp32 accumulator */
	cudnnBackendDescriptor_t k = tensor(b, 0, BF, d.kv, d.kvs, false);
	reshape(b, kt, k);
	matmul(b, ds, k, acc);
	pw(b, CUDNN_POINTWISE_IDENTITY, F, -1, acc, NULL, NULL, dq);
}

static void record_error(kernels_cudnn *c, cudnnStatus_t st, const char *where)
{
	char detail[384] = "";
	cudnnGetLastErrorString(detail, sizeof detail);
	snprintf(c->last_error, sizeof c->last_error, "cuDNN %s at %s%s%s", cudnnGetErrorString(st), where,
		 detail[0] ? ": " : "", detail);
}

/* Builds the graph of one shape and direction and the first plan cuDNN's heuristics
 * offer that finalizes (mode A, then the fallback list). */
static cudnnStatus_t build_plan(kernels_cudnn *c, plan *pl)
{
	builder b = {.handle = c->handle, .next_uid = UID_VIRTUAL, .st = CUDNN_STATUS_SUCCESS, .where = ""};
	if (pl->bwd)
		build_bwd(&b, &pl->shape);
	else
		build_fwd(&b, &pl->shape);
	cudnnBackendDescriptor_t graph = make(&b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
	set(&b, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, b.n_ops, b.ops, "graph ops");
	set(&b, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle, "graph handle");
	finalize(&b, graph, "operation graph (no fused pattern matches)");
	cudnnStatus_t st = b.st;
	const char *where = b.where;
	for (int pass = 0; pass < 2 && st == CUDNN_STATUS_SUCCESS && !pl->plan; pass++) {
		const cudnnBackendHeurMode_t mode = pass == 0 ? CUDNN_HEUR_MODE_A : CUDNN_HEUR_MODE_FALLBACK;
		builder h = {.handle = c->handle, .st = CUDNN_STATUS_SUCCESS, .where = ""};
		cudnnBackendDescriptor_t heur = make(&h, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
		set(&h, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
		set(&h, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
		finalize(&h, heur, "heuristics");
		int64_t n = 0;
		if (h.st == CUDNN_STATUS_SUCCESS)
			h.st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
							NULL);
		if (n > 16)
			n = 16;
		cudnnBackendDescriptor_t cfgs[16];
		int64_t got = 0;
		for (int64_t i = 0; i < n && h.st == CUDNN_STATUS_SUCCESS; i++)
			cfgs[i] = make(&h, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
		if (h.st == CUDNN_STATUS_SUCCESS && n > 0)
			h.st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
							&got, cfgs);
		for (int64_t i = 0; i < got && h.st == CUDNN_STATUS_SUCCESS && !pl->plan; i++) {
			cudnnBackendDescriptor_t p = NULL;
			if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p) != CUDNN_STATUS_SUCCESS)
				break;
			int64_t ws = 0, one = 0;
			if (cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle) ==
				    CUDNN_STATUS_SUCCESS &&
			    cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
						     1, &cfgs[i]) == CUDNN_STATUS_SUCCESS &&
			    cudnnBackendFinalize(p) == CUDNN_STATUS_SUCCESS &&
			    cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &one,
						     &ws) == CUDNN_STATUS_SUCCESS) {
				pl->plan = p;
				pl->workspace = ws;
			} else {
				cudnnBackendDestroyDescriptor(p);
			}
		}
		if (h.st != CUDNN_STATUS_SUCCESS) {
			st = h.st;
			where = h.where[0] ? h.where : "heuristics";
		}
		for (int i = h.n_made - 1; i >= 0; i--)
			cudnnBackendDestroyDescriptor(h.made[i]);
	}
	for (int i = b.n_made - 1; i >= 0; i--)
		cudnnBackendDestroyDescriptor(b.made[i]);
	if (st == CUDNN_STATUS_SUCCESS && !pl->plan) {
		st = CUDNN_STATUS_NOT_SUPPORTED;
		where = "execution plan (no engine finalizes for this shape)";
	}
	if (st != CUDNN_STATUS_SUCCESS)
		record_error(c, st, where);
	if (pl->bwd) {
		const kernels_attn_shape *s = &pl->shape;
		const size_t rows = (size_t)s->nseq * (size_t)s->heads * (size_t)s->seq;
		pl->extra = (rows * 4 + 255) / 256 * 256 + rows * (size_t)s->head_dim * 4;
	}
	return st;
}

static int same_shape(const kernels_attn_shape *a, const kernels_attn_shape *b)
{
	return a->nseq == b->nseq && a->seq == b->seq && a->heads == b->heads && a->kv_heads == b->kv_heads &&
	       a->head_dim == b->head_dim && a->causal == b->causal;
}

static plan *plan_of(kernels_cudnn *c, const kernels_attn_shape *s, int bwd, cudnnStatus_t *st)
{
	*st = CUDNN_STATUS_SUCCESS;
	for (int i = 0; i < c->n_plans; i++)
		if (c->plans[i].bwd == bwd && same_shape(&c->plans[i].shape, s)) {
			if (c->plans[i].failed)
				*st = CUDNN_STATUS_NOT_SUPPORTED;
			return &c->plans[i];
		}
	if (c->n_plans == MAX_PLANS) { /* evict the oldest */
		if (c->plans[0].plan)
			cudnnBackendDestroyDescriptor(c->plans[0].plan);
		memmove(c->plans, c->plans + 1, (MAX_PLANS - 1) * sizeof *c->plans);
		c->n_plans--;
	}
	plan *pl = &c->plans[c->n_plans++];
	memset(pl, 0, sizeof *pl);
	pl->shape = *s;
	pl->bwd = bwd;
	if ((*st = build_plan(c, pl)) != CUDNN_STATUS_SUCCESS)
		pl->failed = 1;
	return pl;
}

static int workspace(kernels_cudnn *c, size_t bytes)
{
	if (bytes <= c->ws_bytes)
		return 0;
	if (c->ws) {
		cudaStreamSynchronize(c->stream);
		cudaFree(c->ws);
		c->ws = NULL;
		c->ws_bytes = 0;
	}
	cudaError_t e = cudaMalloc(&c->ws, bytes);
	if (e != cudaSuccess) {
		snprintf(c->last_error, sizeof c->last_error, "cuDNN workspace of %zu bytes: %s", bytes, cudaGetErrorString(e));
		return -1;
	}
	c->ws_bytes = bytes;
	return 0;
}

static int execute(kernels_cudnn *c, plan *pl, const int64_t *uids, void **ptrs, int n)
{
	builder b = {.handle = c->handle, .st = CUDNN_STATUS_SUCCESS, .where = ""};
	cudnnBackendDescriptor_t vp = make(&b, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
	void *ws = (char *)c->ws + pl->extra;
	set(&b, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids, "variant pack uids");
	set(&b, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs, "variant pack pointers");
	set(&b, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "variant pack workspace");
	finalize(&b, vp, "variant pack");
	if (b.st == CUDNN_STATUS_SUCCESS && (b.st = cudnnBackendExecute(c->handle, pl->plan, vp)) != CUDNN_STATUS_SUCCESS)
		b.where = "execute";
	if (b.st != CUDNN_STATUS_SUCCESS)
		record_error(c, b.st, b.where);
	for (int i = b.n_made - 1; i >= 0; i--)
		cudnnBackendDestroyDescriptor(b.made[i]);
	return b.st == CUDNN_STATUS_SUCCESS ? 0 : (int)b.st;
}

/* ------------------------------------------------------------------- API --- */
int kernels_cudnn_create(kernels_cudnn **out, void *stream)
{
	*out = NULL;
	kernels_cudnn *c = calloc(1, sizeof *c);
	if (!c)
		return (int)CUDNN_STATUS_ALLOC_FAILED;
	cudnnStatus_t st = cudnnCreate(&c->handle);
	if (st == CUDNN_STATUS_SUCCESS && (st = cudnnSetStream(c->handle, (cudaStream_t)stream)) != CUDNN_STATUS_SUCCESS)
		cudnnDestroy(c->handle);
	if (st != CUDNN_STATUS_SUCCESS) {
		free(c);
		return (int)st;
	}
	c->stream = (cudaStream_t)stream;
	*out = c;
	return 0;
}

void kernels_cudnn_destroy(kernels_cudnn *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_plans; i++)
		if (c->plans[i].plan)
			cudnnBackendDestroyDescriptor(c->plans[i].plan);
	if (c->ws) {
		cudaStreamSynchronize(c->stream);
		cudaFree(c->ws);
	}
	cudnnDestroy(c->handle);
	free(c);
}

const char *kernels_cudnn_error(const kernels_cudnn *c) { return c ? c->last_error : "no cuDNN context"; }

size_t kernels_cudnn_version(void) { return cudnnGetVersion(); }

int kernels_cudnn_supported(kernels_cudnn *c, const kernels_attn_shape *s, int bwd)
{
	cudnnStatus_t st;
	plan_of(c, s, bwd, &st);
	return st == CUDNN_STATUS_SUCCESS;
}

/* The plan of a call and a workspace that holds what it needs. */
static int prepare(kernels_cudnn *c, const kernels_attn_shape *s, int bwd, plan **out)
{
	if (kernels_attn_shape_check(s))
		return (int)CUDNN_STATUS_BAD_PARAM;
	cudnnStatus_t st;
	*out = plan_of(c, s, bwd, &st);
	if (st != CUDNN_STATUS_SUCCESS)
		return (int)st;
	return workspace(c, (*out)->extra + (size_t)(*out)->workspace + 1) ? (int)CUDNN_STATUS_ALLOC_FAILED : 0;
}

int kernels_cudnn_attn_fwd(kernels_cudnn *c, const kernels_attn_shape *s, const void *q, const void *k, const void *v,
			   void *o, float *lse)
{
	plan *pl;
	int st = prepare(c, s, 0, &pl);
	if (st)
		return st;
	float scale = 1.0f / sqrtf((float)s->head_dim), neginf = -FLT_MAX; /* as cuDNN's frontend masks: the lowest float */
	const int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF};
	void *ptrs[] = {(void *)q, (void *)k, (void *)v, o, lse, &scale, &neginf};
	return execute(c, pl, uids, ptrs, s->causal ? 7 : 6);
}

int kernels_cudnn_attn_bwd(kernels_cudnn *c, const kernels_attn_shape *s, const void *q, const void *k, const void *v,
			   const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv)
{
	plan *pl;
	int st = prepare(c, s, 1, &pl);
	if (st)
		return st;
	const size_t rows = (size_t)s->nseq * (size_t)s->heads * (size_t)s->seq;
	void *dsum = c->ws, *acc = (char *)c->ws + (rows * 4 + 255) / 256 * 256;
	/* The dQ accumulator sums over key blocks: zero it before every call. */
	cudaError_t e = cudaMemsetAsync(acc, 0, rows * (size_t)s->head_dim * 4, c->stream);
	if (e != cudaSuccess) {
		snprintf(c->last_error, sizeof c->last_error, "zeroing the dQ accumulator: %s", cudaGetErrorString(e));
		return (int)CUDNN_STATUS_EXECUTION_FAILED;
	}
	float scale = 1.0f / sqrtf((float)s->head_dim), neginf = -FLT_MAX; /* as cuDNN's frontend masks: the lowest float */
	const int64_t uids[] = {UID_Q,	UID_K,	UID_V,	  UID_O,     UID_DO,	UID_STATS, UID_DQ,
				UID_DK, UID_DV, UID_DSUM, UID_DQACC, UID_SCALE, UID_NEGINF};
	void *ptrs[] = {(void *)q, (void *)k, (void *)v, (void *)o, (void *)dout, (void *)lse, dq,
			dk,	   dv,	      dsum,	 acc,	    &scale,	  &neginf};
	return execute(c, pl, uids, ptrs, s->causal ? 13 : 12);
}
