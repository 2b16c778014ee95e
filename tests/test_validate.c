/* validate: the real-run orchestration against the CPU transport.
 *
 * The layer tests hold Ulysses and BASP — group formation, layouts, pack/unpack, the
 * all-to-all exchange, attention, forward and backward — against an unpartitioned
 * reference written here from the CPU kernels alone (one sequence, every head, no
 * exchange). Everything is deterministic: the same bits on every run. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "validate.h"
#include "workload/workload.h"

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	return p;
}

/* ---------------------------------------------------------------- groups --- */
START_TEST(groups_basp_contiguous_and_same_tokens_as_ulysses)
{
	validate_groups b, u;
	char err[256];
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 8, 2, 1024, 32, 8, &b, err, sizeof err), 0);
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 2, 1024, 32, 8, &u, err, sizeof err), 0);
	ck_assert_int_eq(b.K, 4);
	ck_assert_int_eq(b.n_groups, 2);
	ck_assert_int_eq(u.K, 8);
	ck_assert_int_eq(u.n_groups, 1);
	/* basp.md: S/K = B·S/N tokens per GPU, the same as Ulysses-SP. */
	ck_assert_int_eq((long)b.nseq * b.tokens, 2L * 1024 / 8);
	ck_assert_int_eq((long)b.nseq * b.tokens, (long)u.nseq * u.tokens);
	/* ... and the same attention element count: a/K heads of one sequence vs a/N of B. */
	ck_assert_int_eq((long)b.nseq * b.seq * b.heads_per_rank, (long)u.nseq * u.seq * u.heads_per_rank);
	/* Group i = ranks i·K .. i·K+K-1 holds sequence i. */
	for (int r = 0; r < 8; r++) {
		validate_place p = validate_place_of(&b, r);
		ck_assert_int_eq(p.group, r / 4);
		ck_assert_int_eq(p.grank, r % 4);
		ck_assert_int_eq(p.seq0, r / 4);
		ck_assert_int_eq(p.tok0, (long)(r % 4) * b.tokens);
		validate_place q = validate_place_of(&u, r);
		ck_assert_int_eq(q.seq0, 0);
		ck_assert_int_eq(q.tok0, (long)r * u.tokens);
	}
	/* B = 1: BASP is Ulysses. */
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 8, 1, 1024, 32, 8, &b, err, sizeof err), 0);
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 1, 1024, 32, 8, &u, err, sizeof err), 0);
	ck_assert_int_eq(memcmp(&b.K, &u.K, sizeof b - offsetof(validate_groups, K)), 0);
}
END_TEST

START_TEST(groups_kv_heads_replicated_when_fewer_than_group)
{
	validate_groups g;
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 1, 64, 32, 2, &g, NULL, 0), 0);
	ck_assert_int_eq(g.kv_rep, 4); /* g = 2 < P = 8: each kv head sent 4 times */
	ck_assert_int_eq(g.kv_per_rank, 1);
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 8, 4, 64, 32, 8, &g, NULL, 0), 0);
	ck_assert_int_eq(g.K, 2);
	ck_assert_int_eq(g.kv_rep, 1);
	ck_assert_int_eq(g.kv_per_rank, 4);
}
END_TEST

START_TEST(groups_reject_what_the_method_does_not_define)
{
	validate_groups g;
	char err[256] = "";
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 8, 3, 96, 24, 8, &g, err, sizeof err), VALIDATE_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "divisible by B"));
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 4, 8, 96, 24, 8, &g, err, sizeof err), VALIDATE_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "data parallelism"));
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 1, 100, 32, 8, &g, err, sizeof err), VALIDATE_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "sequence length"));
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 1, 96, 20, 4, &g, err, sizeof err), VALIDATE_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "query heads"));
	ck_assert_int_eq(validate_groups_make(VALIDATE_ULYSSES, 8, 1, 96, 24, 3, &g, err, sizeof err), VALIDATE_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "kv heads"));
}
END_TEST

/* --------------------------------------------------------------- layouts --- */
/* An element whose value says where it came from: sequence s, token i, head hd, dim c. */
static kernels_bf16 tag(long s, long i, long hd, long c) { return (kernels_bf16)((s * 31 + i * 7 + hd * 3 + c) & 0x3fff); }

START_TEST(permute_tok_pack_puts_head_block_j_in_chunk_j)
{
	const int P = 4, nseq = 2, H = 8, d = 4, Hp = H / P;
	const long t = 3, ld = H * d + 5; /* a padded row, as in the fused QKV buffer */
	kernels_bf16 *src = xmalloc((size_t)nseq * t * ld * 2), *buf = xmalloc((size_t)nseq * t * H * d * 2);
	for (long s = 0; s < nseq; s++)
		for (long i = 0; i < t; i++)
			for (long hd = 0; hd < H; hd++)
				for (long c = 0; c < d; c++)
					src[(s * t + i) * ld + hd * d + c] = tag(s, i, hd, c);
	kernels_permute p = {KERNELS_TOK_PACK, P, nseq, t, H, 1, d, ld};
	ck_assert_ptr_null(kernels_permute_check(&p));
	kernels_cpu_permute(&p, src, buf);
	for (long j = 0; j < P; j++)
		for (long s = 0; s < nseq; s++)
			for (long i = 0; i < t; i++)
				for (long hh = 0; hh < Hp; hh++)
					for (long c = 0; c < d; c++)
						ck_assert_uint_eq(buf[(((j * nseq + s) * t + i) * Hp + hh) * d + c],
								  tag(s, i, j * Hp + hh, c));
	free(src);
	free(buf);
}
END_TEST

START_TEST(permute_unpack_inverts_pack)
{
	const int P = 3, nseq = 2, H = 6, d = 8;
	const long t = 5, ld = H * d + 16;
	const size_t nbuf = (size_t)nseq * t * H * d, ntok = (size_t)nseq * t * ld;
	kernels_bf16 *tok = xmalloc(ntok * 2), *back = xmalloc(ntok * 2), *buf = xmalloc(nbuf * 2);
	kernels_bf16 *head = xmalloc(nbuf * 2), *buf2 = xmalloc(nbuf * 2);
	validate_fill(tok, ntok, 1, 1, 0, 1.0f);
	kernels_permute pack = {KERNELS_TOK_PACK, P, nseq, t, H, 1, d, ld};
	kernels_permute unpack = {KERNELS_TOK_UNPACK, P, nseq, t, H, 1, d, ld};
	memset(back, 0, ntok * 2);
	kernels_cpu_permute(&pack, tok, buf);
	kernels_cpu_permute(&unpack, buf, back);
	for (size_t r = 0; r < (size_t)nseq * t; r++)
		ck_assert_int_eq(memcmp(tok + r * ld, back + r * ld, (size_t)H * d * 2), 0);
	/* Head side: unpack then pack is the identity on the buffer. */
	kernels_permute hu = {KERNELS_HEAD_UNPACK, P, nseq, t, H, 1, d, 0};
	kernels_permute hp = {KERNELS_HEAD_PACK, P, nseq, t, H, 1, d, 0};
	kernels_cpu_permute(&hu, buf, head);
	kernels_cpu_permute(&hp, head, buf2);
	ck_assert_int_eq(memcmp(buf, buf2, nbuf * 2), 0);
	free(tok);
	free(back);
	free(buf);
	free(head);
	free(buf2);
}
END_TEST

START_TEST(permute_replicated_kv_unpacks_to_the_sum_of_replicas)
{
	/* g = 2 kv heads, P = 8 ranks: each head sent 4 times; the gradient path sums them. */
	const int P = 8, nseq = 1, g = 2, rep = 4, d = 4, H = g * rep;
	const long t = 2;
	const size_t ntok = (size_t)nseq * t * g * d, nbuf = (size_t)nseq * t * H * d;
	kernels_bf16 *tok = xmalloc(ntok * 2), *buf = xmalloc(nbuf * 2), *sum = xmalloc(ntok * 2);
	validate_fill(tok, ntok, 2, 2, 0, 1.0f);
	kernels_permute pack = {KERNELS_TOK_PACK, P, nseq, t, H, rep, d, 0};
	kernels_permute unpack = {KERNELS_TOK_UNPACK, P, nseq, t, H, rep, d, 0};
	kernels_cpu_permute(&pack, tok, buf);
	/* rank j holds replica j % rep of kv head j / rep */
	for (long j = 0; j < P; j++)
		ck_assert_int_eq(memcmp(buf + (size_t)j * t * d, tok + (size_t)(j / rep) * d, (size_t)d * 2), 0);
	kernels_cpu_permute(&unpack, buf, sum);
	for (size_t e = 0; e < ntok; e++) /* x4 is exact in bf16 */
		ck_assert_float_eq(kernels_bf16_to_f32(sum[e]), 4.0f * kernels_bf16_to_f32(tok[e]));
	free(tok);
	free(buf);
	free(sum);
}
END_TEST

/* ------------------------------------------------------------- attention --- */
START_TEST(attn_tiled_online_softmax_matches_reference)
{
	const kernels_attn_shape shapes[] = {
		{2, 100, 4, 2, 16, 1}, /* ragged last tile, GQA 2:1 */
		{1, 64, 2, 2, 8, 1},   /* exactly one tile */
		{1, 37, 6, 1, 16, 0},  /* non-causal, MQA */
	};
	const int tiles[][2] = {{64, 64}, {16, 32}, {32, 16}, {7, 5}};
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
		const kernels_attn_shape *s = &shapes[si];
		const size_t nq = kernels_attn_q_elems(s), nkv = kernels_attn_kv_elems(s), nl = kernels_attn_lse_elems(s);
		kernels_bf16 *q = xmalloc(nq * 2), *k = xmalloc(nkv * 2), *v = xmalloc(nkv * 2);
		kernels_bf16 *o = xmalloc(nq * 2), *ot = xmalloc(nq * 2);
		float *l = xmalloc(nl * 4), *lt = xmalloc(nl * 4);
		validate_fill(q, nq, 3, 1, 0, 2.0f);
		validate_fill(k, nkv, 3, 2, 0, 2.0f);
		validate_fill(v, nkv, 3, 3, 0, 1.0f);
		ck_assert_int_eq(kernels_cpu_attn_fwd(s, q, k, v, o, l), 0);
		for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ti++) {
			ck_assert_int_eq(kernels_cpu_attn_fwd_tiled(s, tiles[ti][0], tiles[ti][1], q, k, v, ot, lt), 0);
			kernels_compare_result r;
			ck_assert_msg(kernels_compare_bf16(ot, o, nq, KERNELS_BF16_TOL, &r),
				      "shape %zu tiles %dx%d: O max err %g", si, tiles[ti][0], tiles[ti][1], r.max_norm);
			ck_assert_msg(kernels_compare_f32(lt, l, nl, 1e-5, &r), "lse max err %g", r.max_norm);
		}
		free(q);
		free(k);
		free(v);
		free(o);
		free(ot);
		free(l);
		free(lt);
	}
}
END_TEST

/* L = sum(dO ∘ attention(q, k, v)) in double, for finite differences. */
static double attn_loss(const kernels_attn_shape *s, const double *q, const double *k, const double *v,
			const double *dout)
{
	const int d = s->head_dim, group = s->heads / s->kv_heads;
	double L = 0, *p = xmalloc((size_t)s->seq * sizeof *p);
	for (int h = 0; h < s->heads; h++)
		for (int i = 0; i < s->seq; i++) {
			const int jn = s->causal ? i + 1 : s->seq;
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < jn; j++) {
				double acc = 0;
				for (int c = 0; c < d; c++)
					acc += q[((size_t)i * s->heads + h) * d + c] * k[((size_t)j * s->kv_heads + h / group) * d + c];
				p[j] = acc / sqrt((double)d);
				mx = fmax(mx, p[j]);
			}
			for (int j = 0; j < jn; j++)
				sum += p[j] = exp(p[j] - mx);
			for (int c = 0; c < d; c++) {
				double o = 0;
				for (int j = 0; j < jn; j++)
					o += p[j] / sum * v[((size_t)j * s->kv_heads + h / group) * d + c];
				L += o * dout[((size_t)i * s->heads + h) * d + c];
			}
		}
	free(p);
	return L;
}

START_TEST(attn_backward_reference_matches_finite_differences)
{
	const kernels_attn_shape s = {1, 7, 4, 2, 4, 1};
	const size_t nq = kernels_attn_q_elems(&s), nkv = kernels_attn_kv_elems(&s);
	kernels_bf16 *q = xmalloc(nq * 2), *k = xmalloc(nkv * 2), *v = xmalloc(nkv * 2), *dout = xmalloc(nq * 2);
	kernels_bf16 *dq = xmalloc(nq * 2), *dk = xmalloc(nkv * 2), *dv = xmalloc(nkv * 2);
	validate_fill(q, nq, 4, 1, 0, 2.0f);
	validate_fill(k, nkv, 4, 2, 0, 2.0f);
	validate_fill(v, nkv, 4, 3, 0, 1.0f);
	validate_fill(dout, nq, 4, 4, 0, 1.0f);
	ck_assert_int_eq(kernels_cpu_attn_bwd(&s, q, k, v, NULL, dout, NULL, dq, dk, dv), 0);
	double *x[3], *dd = xmalloc(nq * sizeof *dd);
	const kernels_bf16 *in[3] = {q, k, v}, *grad[3] = {dq, dk, dv};
	const size_t n[3] = {nq, nkv, nkv};
	for (int a = 0; a < 3; a++) {
		x[a] = xmalloc(n[a] * sizeof *x[a]);
		for (size_t e = 0; e < n[a]; e++)
			x[a][e] = kernels_bf16_to_f32(in[a][e]);
	}
	for (size_t e = 0; e < nq; e++)
		dd[e] = kernels_bf16_to_f32(dout[e]);
	const double eps = 1e-4;
	for (int a = 0; a < 3; a++) {
		kernels_bf16 *fd = xmalloc(n[a] * 2);
		for (size_t e = 0; e < n[a]; e++) {
			const double keep = x[a][e];
			x[a][e] = keep + eps;
			double up = attn_loss(&s, x[0], x[1], x[2], dd);
			x[a][e] = keep - eps;
			double down = attn_loss(&s, x[0], x[1], x[2], dd);
			x[a][e] = keep;
			fd[e] = kernels_f32_to_bf16((float)((up - down) / (2 * eps)));
		}
		kernels_compare_result r;
		ck_assert_msg(kernels_compare_bf16(grad[a], fd, n[a], KERNELS_BF16_TOL, &r),
			      "d%c: max err %g at %zu", "qkv"[a], r.max_norm, r.worst);
		free(fd);
	}
	for (int a = 0; a < 3; a++)
		free(x[a]);
	free(dd);
	free(q);
	free(k);
	free(v);
	free(dout);
	free(dq);
	free(dk);
	free(dv);
}
END_TEST

/* ------------------------------------------------------------------- layer --- */
/* The unpartitioned layer on one whole sequence, from the CPU kernels alone. */
static void ref_layer(const validate_layer_cfg *cfg, int seq, kernels_bf16 *y, kernels_bf16 *dx)
{
	const long S = cfg->seq, h = cfg->hidden, d = cfg->head_dim, ad = (long)cfg->heads * d,
		   gd = (long)cfg->kv_heads * d, w = ad + 2 * gd;
	kernels_bf16 *x = xmalloc((size_t)(S * h) * 2), *dy = xmalloc((size_t)(S * h) * 2);
	kernels_bf16 *wqkv = xmalloc((size_t)(h * w) * 2), *wo = xmalloc((size_t)(ad * h) * 2);
	kernels_bf16 *qkv = xmalloc((size_t)(S * w) * 2), *dqkv = xmalloc((size_t)(S * w) * 2);
	kernels_bf16 *q = xmalloc((size_t)(S * ad) * 2), *k = xmalloc((size_t)(S * gd) * 2), *v = xmalloc((size_t)(S * gd) * 2);
	kernels_bf16 *o = xmalloc((size_t)(S * ad) * 2), *dO = xmalloc((size_t)(S * ad) * 2);
	kernels_bf16 *dq = xmalloc((size_t)(S * ad) * 2), *dk = xmalloc((size_t)(S * gd) * 2), *dv = xmalloc((size_t)(S * gd) * 2);
	float *lse = xmalloc((size_t)(cfg->heads * S) * 4);
	validate_layer_input(cfg, 0, seq, 0, S, x);
	validate_layer_input(cfg, 1, seq, 0, S, dy);
	validate_layer_weights(cfg, wqkv, wo);
	kernels_gemm g1 = {0, 0, S, w, h, h, w, w, 1, 0};
	kernels_cpu_gemm(&g1, x, wqkv, qkv);
	for (long i = 0; i < S; i++) {
		memcpy(q + i * ad, qkv + i * w, (size_t)ad * 2);
		memcpy(k + i * gd, qkv + i * w + ad, (size_t)gd * 2);
		memcpy(v + i * gd, qkv + i * w + ad + gd, (size_t)gd * 2);
	}
	const kernels_attn_shape s = {1, (int)S, cfg->heads, cfg->kv_heads, (int)d, 1};
	ck_assert_int_eq(kernels_cpu_attn_fwd(&s, q, k, v, o, lse), 0);
	kernels_gemm g2 = {0, 0, S, h, ad, ad, h, h, 1, 0};
	kernels_cpu_gemm(&g2, o, wo, y);
	kernels_gemm g3 = {0, 1, S, ad, h, h, h, ad, 1, 0}; /* dO = dY·Woᵀ */
	kernels_cpu_gemm(&g3, dy, wo, dO);
	ck_assert_int_eq(kernels_cpu_attn_bwd(&s, q, k, v, o, dO, lse, dq, dk, dv), 0);
	for (long i = 0; i < S; i++) {
		memcpy(dqkv + i * w, dq + i * ad, (size_t)ad * 2);
		memcpy(dqkv + i * w + ad, dk + i * gd, (size_t)gd * 2);
		memcpy(dqkv + i * w + ad + gd, dv + i * gd, (size_t)gd * 2);
	}
	kernels_gemm g4 = {0, 1, S, h, w, w, w, h, 1, 0}; /* dX = dQKV·Wqkvᵀ */
	kernels_cpu_gemm(&g4, dqkv, wqkv, dx);
	kernels_bf16 *all[] = {x, dy, wqkv, wo, qkv, dqkv, q, k, v, o, dO, dq, dk, dv};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		free(all[i]);
	free(lse);
}

typedef struct layer_case {
	int N, B;
	long S;
	int hidden, heads, kv_heads, head_dim;
} layer_case;

/* Several N, B, S and kv-head ratios: MHA, GQA, MQA; K = 1 (no exchange), kv heads
 * replicated (g < K) or split (g >= K); a group size that is not a power of two. */
static const layer_case layer_cases[] = {
	{2, 1, 16, 64, 4, 4, 16},  /* B = 1: BASP is Ulysses */
	{4, 2, 24, 128, 8, 2, 16}, /* GQA 4:1; BASP K = 2 splits kv, Ulysses K = 4 replicates x2 */
	{4, 4, 16, 32, 4, 1, 8},   /* MQA; BASP K = 1 (whole sequences), Ulysses replicates x4 */
	{8, 2, 32, 96, 8, 4, 16},  /* hidden != a·d */
	{6, 3, 12, 48, 6, 2, 8},   /* K = 2 and 6 */
	{8, 4, 40, 128, 16, 8, 8},
};

static void check_layer(const layer_case *lc, validate_strategy st)
{
	validate_layer_cfg cfg = {.strategy = st, .world = lc->N, .micro_batch = lc->B, .seq = lc->S,
				  .hidden = lc->hidden, .heads = lc->heads, .kv_heads = lc->kv_heads,
				  .head_dim = lc->head_dim, .warmup = 1, .iters = 2, .backward = true, .seed = 77};
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(lc->N, 4, 0, &t), 0);
	validate_layer_result res;
	char err[512] = "";
	int rc = validate_layer_run(t, &cfg, &res, err, sizeof err);
	ck_assert_msg(rc == 0, "%s N%d B%d: %s (%s)", validate_strategy_name(st), lc->N, lc->B, validate_strerror(rc), err);
	ck_assert_int_eq(res.n_phases, VALIDATE_LAYER_PHASES);
	for (int p = 0; p < res.n_phases; p++)
		ck_assert(res.time_s[p] >= 0 && res.time_s[p] >= res.mean_s[p] - 1e-12);
	const validate_groups *g = &res.groups;
	const long h = lc->hidden, t_ = g->tokens;
	kernels_bf16 *y = xmalloc((size_t)(lc->S * h) * 2), *dx = xmalloc((size_t)(lc->S * h) * 2);
	for (int sq = 0; sq < lc->B; sq++) {
		ref_layer(&cfg, sq, y, dx);
		for (int r = 0; r < lc->N; r++) {
			validate_place pl = validate_place_of(g, r);
			if (sq < pl.seq0 || sq >= pl.seq0 + g->nseq)
				continue;
			const size_t mine = (size_t)(sq - pl.seq0) * t_ * h, ref = (size_t)pl.tok0 * h, n = (size_t)(t_ * h);
			/* Forward: the same dot products in the same order: bit-identical. */
			ck_assert_msg(memcmp(res.y[r] + mine, y + ref, n * 2) == 0, "%s N%d B%d S%ld: Y of rank %d differs",
				      validate_strategy_name(st), lc->N, lc->B, lc->S, r);
			/* Backward: identical too unless kv replicas were summed after rounding. */
			kernels_compare_result cr;
			int ok = g->kv_rep == 1 ? memcmp(res.dx[r] + mine, dx + ref, n * 2) == 0
						: kernels_compare_bf16(res.dx[r] + mine, dx + ref, n, KERNELS_BF16_TOL, &cr);
			ck_assert_msg(ok, "%s N%d B%d S%ld: dX of rank %d differs (kv_rep %d)", validate_strategy_name(st),
				      lc->N, lc->B, lc->S, r, g->kv_rep);
		}
	}
	/* The library's own check (what spsim-validate runs) agrees. */
	ck_assert_int_eq(validate_layer_check(t, &cfg, &res, KERNELS_BF16_TOL, err, sizeof err), 0);
	ck_assert_msg(res.checked && res.pass, "validate_layer_check: max err %g / %g", res.cmp_y.max_norm,
		      res.cmp_dx.max_norm);
	free(y);
	free(dx);
	validate_layer_result_finish(&res);
	validate_transport_destroy(t);
}

START_TEST(layer_ulysses_equals_unpartitioned_reference) { check_layer(&layer_cases[_i], VALIDATE_ULYSSES); }
END_TEST

START_TEST(layer_basp_equals_unpartitioned_reference) { check_layer(&layer_cases[_i], VALIDATE_BASP); }
END_TEST

START_TEST(layer_checks_memory_before_allocating)
{
	validate_layer_cfg cfg = {.strategy = VALIDATE_BASP, .world = 4, .micro_batch = 2, .seq = 64, .hidden = 128,
				  .heads = 8, .kv_heads = 2, .head_dim = 16, .warmup = 0, .iters = 1, .backward = true,
				  .seed = 1};
	validate_groups g;
	ck_assert_int_eq(validate_groups_make(cfg.strategy, 4, 2, 64, 8, 2, &g, NULL, 0), 0);
	const size_t need = validate_layer_bytes(&cfg, &g);
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(4, 4, need / 2, &t), 0);
	validate_layer_result res;
	char err[512] = "";
	ck_assert_int_eq(validate_layer_run(t, &cfg, &res, err, sizeof err), VALIDATE_ENOMEM);
	ck_assert_ptr_nonnull(strstr(err, "GiB of device memory"));
	validate_transport_destroy(t);
	/* With enough, it runs. */
	ck_assert_int_eq(validate_transport_cpu(4, 4, need + (1 << 16), &t), 0);
	ck_assert_int_eq(validate_layer_run(t, &cfg, &res, err, sizeof err), 0);
	validate_layer_result_finish(&res);
	validate_transport_destroy(t);
}
END_TEST

static const workload_block *find_block(const workload_plan *plan, const char *name)
{
	for (int i = 0; i < plan->program.n_micro; i++)
		if (!strcmp(plan->program.micro[i].name, name))
			return &plan->program.micro[i];
	return NULL;
}

START_TEST(layer_phases_are_the_op_program_ops)
{
	/* The measured phases must be the ops the engines cost, with the same FLOPs and bytes:
	 * that is what makes measured-vs-predicted a per-phase comparison. */
	config_model m;
	config_platform p;
	config_error e;
	ck_assert_msg(config_load_model("llama-3.1-8b", &m, &e), "%s", e.msg);
	ck_assert_msg(config_load_platform("hgx-h200", &p, &e), "%s", e.msg);
	const struct {
		config_strategy st;
		int B;
	} jobs[] = {{CONFIG_STRATEGY_BASP, 2}, {CONFIG_STRATEGY_ULYSSES, 2}, {CONFIG_STRATEGY_BASP, 8}};
	for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
		config_job job;
		config_job_defaults(&job);
		job.strategy = jobs[j].st;
		job.gpus = 8;
		job.micro_batch = jobs[j].B;
		job.seq_len = 8192;
		ck_assert_msg(workload_check(&m, &p, &job, &e), "%s", e.msg);
		workload_plan plan;
		ck_assert_msg(workload_plan_make(&m, &p, &job, &plan, &e), "%s", e.msg);
		validate_groups g;
		const validate_strategy st = jobs[j].st == CONFIG_STRATEGY_BASP ? VALIDATE_BASP : VALIDATE_ULYSSES;
		ck_assert_int_eq(validate_groups_make(st, 8, jobs[j].B, 8192, m.heads, m.kv_heads, &g, NULL, 0), 0);
		ck_assert_int_eq(g.K, plan.layout.group_size);
		ck_assert_int_eq((long)g.nseq * g.tokens, plan.layout.tokens_per_rank);
		ck_assert_int_eq(g.heads_per_rank, plan.layout.heads_per_rank);
		ck_assert_int_eq(g.kv_per_rank, plan.layout.kv_heads_per_rank);
		ck_assert_int_eq(m.kv_heads * g.kv_rep, plan.layout.kv_replicated);
		validate_layer_cfg cfg = {.strategy = st, .world = 8, .micro_batch = jobs[j].B, .seq = 8192,
					  .hidden = m.hidden, .heads = m.heads, .kv_heads = m.kv_heads,
					  .head_dim = m.head_dim, .backward = true};
		const workload_block *fwd = find_block(&plan, "layer_fwd"), *bwd = find_block(&plan, "layer_bwd");
		ck_assert_ptr_nonnull(fwd);
		ck_assert_ptr_nonnull(bwd);
		for (int i = 0; i < VALIDATE_LAYER_PHASES; i++) {
			const validate_phase_info ph = validate_layer_phase(&cfg, &g, i);
			const workload_block *blk = i < VALIDATE_LAYER_FWD_PHASES ? fwd : bwd;
			const workload_op *op = NULL;
			for (int k = 0; k < blk->n_ops && !op; k++)
				if (!strcmp(blk->ops[k].name, validate_layer_phase_names[i]) &&
				    blk->ops[k].phase != WL_PHASE_RECOMPUTE)
					op = &blk->ops[k];
			if (!ph.present) {
				/* K = 1: validate runs no exchange; the program keeps the one-rank
				 * all-to-all call (launch + local copy) and drops the layout copies. */
				ck_assert_msg(op == NULL || (op->kind == WL_OP_COMM && g.K == 1),
					      "%s: the program has it for K = 1", validate_layer_phase_names[i]);
				continue;
			}
			ck_assert_msg(op != NULL, "%s missing from the op program", validate_layer_phase_names[i]);
			switch (ph.kind) {
			case VALIDATE_PH_GEMM:
			case VALIDATE_PH_ATTN:
				ck_assert_msg(fabs(op->flops - ph.flops) <= 1e-9 * ph.flops, "%s flops %g vs %g",
					      op->name, op->flops, ph.flops);
				break;
			case VALIDATE_PH_MEMORY:
				ck_assert_msg(fabs(op->hbm_bytes - ph.bytes) <= 1e-9 * ph.bytes, "%s bytes", op->name);
				break;
			case VALIDATE_PH_COMM:
				ck_assert_int_eq(op->coll, WL_COLL_ALLTOALL);
				ck_assert_msg(fabs(op->bytes - ph.bytes) <= 1e-9 * ph.bytes, "%s bytes", op->name);
				break;
			}
		}
		workload_plan_finish(&plan);
	}
}
END_TEST

/* -------------------------------------------------------------- transport --- */
START_TEST(cpu_collectives_follow_nccl_semantics)
{
	const int N = 8, K = 4;
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(N, 4, 0, &t), 0);
	validate_comm *grp[8];
	int color[8];
	for (int r = 0; r < N; r++)
		color[r] = r / K;
	ck_assert_int_eq(t->ops->comm_split(t, t->world_comm, color, grp), 0);
	const size_t count = 3;
	float *send[8], *recv[8];
	for (int r = 0; r < N; r++) {
		ck_assert_int_eq(grp[r]->size, K);
		ck_assert_int_eq(grp[r]->rank, r % K);
		send[r] = xmalloc(count * N * sizeof(float));
		recv[r] = xmalloc(count * N * sizeof(float));
		for (size_t e = 0; e < count * N; e++)
			send[r][e] = (float)(1000 * r + (int)e);
	}
	/* All-to-all in groups of K, all groups in one call: block q of rank r's result is
	 * block (r mod K) of group member q's send buffer. */
	ck_assert_int_eq(t->ops->coll(t, VALIDATE_ALLTOALL, grp, (const void *const *)send, (void *const *)recv, count,
				      VALIDATE_F32), 0);
	for (int r = 0; r < N; r++)
		for (int q = 0; q < K; q++)
			for (size_t e = 0; e < count; e++)
				ck_assert_float_eq(recv[r][q * count + e], send[r / K * K + q][(r % K) * count + e]);
	/* All-reduce (in place allowed) and reduce-scatter over the world: sums. */
	ck_assert_int_eq(t->ops->coll(t, VALIDATE_REDUCESCATTER, t->world_comm, (const void *const *)send,
				      (void *const *)recv, count, VALIDATE_F32), 0);
	for (int r = 0; r < N; r++)
		for (size_t e = 0; e < count; e++) {
			float want = 0;
			for (int q = 0; q < N; q++)
				want += send[q][r * count + e];
			ck_assert_float_eq(recv[r][e], want);
		}
	ck_assert_int_eq(t->ops->coll(t, VALIDATE_ALLGATHER, t->world_comm, (const void *const *)send,
				      (void *const *)recv, count, VALIDATE_F32), 0);
	for (int r = 0; r < N; r++)
		for (int q = 0; q < N; q++)
			ck_assert_float_eq(recv[r][q * count], send[q][0]);
	ck_assert_int_eq(t->ops->coll(t, VALIDATE_ALLREDUCE, t->world_comm, (const void *const *)send,
				      (void *const *)send, count, VALIDATE_F32), 0);
	for (int r = 0; r < N; r++)
		ck_assert_float_eq(send[r][1], (float)(1000 * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7) + 8 * 1));
	t->ops->comm_free(t, grp);
	for (int r = 0; r < N; r++) {
		free(send[r]);
		free(recv[r]);
	}
	validate_transport_destroy(t);
}
END_TEST

START_TEST(busbw_factors_are_nccl_tests)
{
	/* doc/PERFORMANCE.md of nccl-tests. */
	ck_assert_double_eq_tol(validate_busbw_factor(VALIDATE_ALLTOALL, 8), 7.0 / 8, 1e-15);
	ck_assert_double_eq_tol(validate_busbw_factor(VALIDATE_ALLGATHER, 4), 3.0 / 4, 1e-15);
	ck_assert_double_eq_tol(validate_busbw_factor(VALIDATE_REDUCESCATTER, 2), 1.0 / 2, 1e-15);
	ck_assert_double_eq_tol(validate_busbw_factor(VALIDATE_ALLREDUCE, 8), 2.0 * 7 / 8, 1e-15);
	ck_assert_double_eq(validate_busbw_factor(VALIDATE_ALLTOALL, 1), 0);
}
END_TEST

typedef struct points {
	validate_comm_point p[256];
	int n;
} points;

static int collect(void *ctx, const validate_comm_point *p)
{
	points *ps = ctx;
	ck_assert_int_lt(ps->n, 256);
	ps->p[ps->n++] = *p;
	return 0;
}

START_TEST(comm_sweep_covers_groups_and_zero_collectives)
{
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(8, 4, 0, &t), 0); /* two "hosts" of 4 */
	const int Ks[] = {2, 4};
	validate_comm_cfg cfg = {.min_bytes = 1024, .max_bytes = 65536, .factor = 4, .warmup = 1, .iters = 2,
				 .group_sizes = Ks, .n_group_sizes = 2, .alltoall_world = true, .zero = true,
				 .dtype = VALIDATE_F32};
	points *ps = calloc(1, sizeof *ps);
	size_t used = 0;
	char err[256];
	ck_assert_int_eq(validate_comm_sweep(t, &cfg, collect, ps, &used, err, sizeof err), 0);
	ck_assert_uint_eq(used, 65536);
	ck_assert_int_eq(ps->n, 6 * 4); /* a2a world, K = 2, K = 4, AG, RS, AR x 4 sizes */
	int seen[VALIDATE_COLL_COUNT][9] = {{0}};
	for (int i = 0; i < ps->n; i++) {
		const validate_comm_point *p = &ps->p[i];
		seen[p->coll][p->group_size]++;
		ck_assert_int_eq(p->n_groups * p->group_size, 8);
		ck_assert_int_eq(p->link, p->group_size <= 4 ? VALIDATE_LINK_INTRA : VALIDATE_LINK_INTER);
		ck_assert(p->bytes <= 65536 && p->bytes > 0 && p->time_s > 0);
		ck_assert_double_eq_tol(p->algbw, (double)p->bytes / p->time_s, 1e-6 * p->algbw);
		ck_assert_double_eq_tol(p->busbw, p->algbw * validate_busbw_factor(p->coll, p->group_size),
					1e-9 * p->algbw);
		/* nccl-tests' size: whole elements per rank. */
		size_t per = p->coll == VALIDATE_ALLREDUCE ? 1 : (size_t)p->group_size;
		ck_assert_uint_eq(p->bytes, p->count * per * 4);
	}
	ck_assert_int_eq(seen[VALIDATE_ALLTOALL][8], 4);
	ck_assert_int_eq(seen[VALIDATE_ALLTOALL][2], 4);
	ck_assert_int_eq(seen[VALIDATE_ALLTOALL][4], 4);
	ck_assert_int_eq(seen[VALIDATE_ALLGATHER][8], 4);
	ck_assert_int_eq(seen[VALIDATE_REDUCESCATTER][8], 4);
	ck_assert_int_eq(seen[VALIDATE_ALLREDUCE][8], 4);
	free(ps);
	validate_transport_destroy(t);
}
END_TEST

START_TEST(comm_fits_recover_the_links_of_a_known_machine)
{
	/* The CPU transport's virtual clock is a machine with known links: two hosts of 4
	 * ranks, intra-node 2 us / 150 GB/s, inter-node 9 us / 40 GB/s per GPU. */
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(8, 4, 0, &t), 0);
	const validate_cpu_clock clk = {2e-6, 150e9, 9e-6, 40e9, 100e12, 2e12};
	ck_assert_int_eq(validate_transport_cpu_clock(t, &clk), 0);
	const int Ks[] = {2, 4};
	validate_comm_cfg cfg = {.min_bytes = 1024, .max_bytes = 1 << 20, .factor = 4, .warmup = 0, .iters = 1,
				 .group_sizes = Ks, .n_group_sizes = 2, .alltoall_world = true, .zero = true,
				 .dtype = VALIDATE_BF16};
	points *ps = calloc(1, sizeof *ps);
	char err[256];
	ck_assert_int_eq(validate_comm_sweep(t, &cfg, collect, ps, NULL, err, sizeof err), 0);
	const validate_coll colls[] = {VALIDATE_ALLTOALL, VALIDATE_ALLTOALL, VALIDATE_ALLTOALL, VALIDATE_ALLGATHER,
				       VALIDATE_REDUCESCATTER, VALIDATE_ALLREDUCE};
	const int sizes[] = {2, 4, 8, 8, 8, 8};
	for (int c = 0; c < 6; c++) {
		double x[32], y[32];
		int n = 0;
		for (int i = 0; i < ps->n; i++)
			if (ps->p[i].coll == colls[c] && ps->p[i].group_size == sizes[c]) {
				x[n] = (double)ps->p[i].bytes * validate_busbw_factor(colls[c], sizes[c]);
				y[n++] = ps->p[i].time_s;
			}
		validate_fit f;
		ck_assert_int_eq(validate_fit_alpha_beta(x, y, n, &f), 0);
		const int P = sizes[c], r = P < 4 ? P : 4; /* ranks of the group on one host */
		double lat, bw;
		if (colls[c] == VALIDATE_ALLTOALL && P == r) {
			lat = clk.intra_latency; /* within a host: latency + size·(P-1)/P / intra */
			bw = clk.intra_bw;
		} else if (colls[c] == VALIDATE_ALLTOALL) {
			/* across hosts the (P-r)/P of the buffer leaving the host sets the pace, so the
			 * bus bandwidth, counted on (P-1)/P, is inter·(P-1)/(P-r) */
			lat = clk.inter_latency;
			bw = clk.inter_bw * (P - 1) / (P - r);
		} else {
			/* ring: steps x (latency + size/P / inter), steps = P-1 (2(P-1) all-reduce) */
			const int steps = colls[c] == VALIDATE_ALLREDUCE ? 2 * (P - 1) : P - 1;
			lat = steps * clk.inter_latency;
			bw = clk.inter_bw;
		}
		ck_assert_msg(fabs(f.latency - lat) <= 1e-6 * lat, "%s K%d latency %g, want %g", validate_coll_name(colls[c]),
			      P, f.latency, lat);
		ck_assert_msg(fabs(f.bandwidth - bw) <= 1e-6 * bw, "%s K%d bandwidth %g, want %g",
			      validate_coll_name(colls[c]), P, f.bandwidth, bw);
	}
	free(ps);
	validate_transport_destroy(t);
}
END_TEST

START_TEST(comm_sweep_caps_sizes_to_device_memory)
{
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(2, 2, 100 * 1024, &t), 0);
	validate_comm_cfg cfg = {.min_bytes = 1024, .max_bytes = 1 << 20, .factor = 2, .warmup = 0, .iters = 1,
				 .alltoall_world = true, .dtype = VALIDATE_BF16};
	size_t used = 0;
	char err[256];
	ck_assert_int_eq(validate_comm_sweep(t, &cfg, NULL, NULL, &used, err, sizeof err), 0);
	ck_assert(used >= 1024 && 2 * used <= 100 * 1024);
	validate_transport_destroy(t);
}
END_TEST

/* ----------------------------------------------------------------- compute --- */
typedef struct cpoints {
	validate_compute_point p[64];
	int n;
} cpoints;

static int ccollect(void *ctx, const validate_compute_point *p)
{
	cpoints *c = ctx;
	c->p[c->n++] = *p;
	return 0;
}

START_TEST(compute_items_follow_the_flop_accounting)
{
	const validate_model_dims m = {.layers = 2, .hidden = 64, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 96,
				       .vocab = 50};
	validate_groups g;
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 2, 1, 32, 4, 2, &g, NULL, 0), 0);
	validate_compute_item items[32];
	int n = validate_compute_items(&m, &g, items, 32);
	ck_assert_int_eq(n, 5 * 3 + 2 + 1);
	const double T = (double)g.nseq * g.tokens;
	ck_assert_double_eq(items[0].flops, 2 * T * m.hidden * (m.heads + 2 * m.kv_heads) * m.head_dim);
	for (int i = 0; i < 15; i += 3) /* backward GEMMs = 2x forward */
		ck_assert_double_eq(items[i + 1].flops + items[i + 2].flops, 2 * items[i].flops);
	const validate_compute_item *af = &items[15], *ab = &items[16];
	ck_assert_int_eq(af->kind, VALIDATE_CK_ATTN_FWD);
	/* FlashAttention: 4·S²·heads·d, halved when causal; backward 2.5x. */
	ck_assert_double_eq(af->flops, 4.0 * 32 * 32 * g.heads_per_rank * m.head_dim / 2);
	ck_assert_double_eq(ab->flops, 2.5 * af->flops);

	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(2, 2, 0, &t), 0);
	/* On the virtual clock the achieved rates are the machine's. */
	const validate_cpu_clock clk = {1e-6, 100e9, 5e-6, 25e9, 123e12, 3.5e12};
	ck_assert_int_eq(validate_transport_cpu_clock(t, &clk), 0);
	cpoints *c = calloc(1, sizeof *c);
	char err[256];
	ck_assert_int_eq(validate_compute_run(t, items, n, 0, 1, ccollect, c, err, sizeof err), 0);
	ck_assert_int_eq(c->n, n);
	for (int i = 0; i < c->n; i++) {
		const validate_compute_item *it = c->p[i].item;
		double work = it->kind == VALIDATE_CK_PERMUTE ? it->bytes : it->flops;
		ck_assert(c->p[i].time_s > 0);
		ck_assert_double_eq_tol(c->p[i].rate * c->p[i].time_s, work, 1e-9 * work);
		const double want = it->kind == VALIDATE_CK_PERMUTE ? clk.hbm : clk.flops;
		ck_assert_double_eq_tol(c->p[i].rate, want, 1e-9 * want);
	}
	free(c);
	validate_transport_destroy(t);
}
END_TEST

/* -------------------------------------------------------------- fit, log --- */
typedef struct median_ctx {
	double (*out)[3];
	int *seen;
} median_ctx;

static int median_collect(void *vctx, const validate_compute_point *p)
{
	median_ctx *c = vctx;
	double *row = c->out[(*c->seen)++];
	row[0] = p->time_s;
	row[1] = p->p10_s;
	row[2] = p->p90_s;
	return p->iters == 25 ? 0 : -1;
}

START_TEST(quantiles_interpolate_between_order_statistics)
{
	/* Hyndman & Fan definition 7: position h = (n-1)q, linear between x[floor h] and the
	 * next. Sorted 1..5: median 3; q 0.1 -> h 0.4 -> 1.4; q 0.9 -> h 3.6 -> 4.6. */
	double x[] = {5, 1, 4, 2, 3};
	ck_assert_double_eq_tol(validate_quantile(x, 5, 0.5), 3.0, 1e-12);
	ck_assert_double_eq_tol(validate_quantile(x, 5, 0.1), 1.4, 1e-12);
	ck_assert_double_eq_tol(validate_quantile(x, 5, 0.9), 4.6, 1e-12);
	ck_assert_double_eq_tol(validate_quantile(x, 5, 0.0), 1.0, 1e-12);
	ck_assert_double_eq_tol(validate_quantile(x, 5, 1.0), 5.0, 1e-12);
	/* Even count: the median is the mean of the middle two; one value is every quantile. */
	double y[] = {10, 40, 20, 30};
	ck_assert_double_eq_tol(validate_quantile(y, 4, 0.5), 25.0, 1e-12);
	double z[] = {7};
	ck_assert_double_eq_tol(validate_quantile(z, 1, 0.9), 7.0, 1e-12);
}
END_TEST

START_TEST(compute_reports_median_and_spread_per_call)
{
	/* On the virtual clock every call of a kernel costs the same, so median = p10 = p90 =
	 * FLOPs / rate exactly; 25 timed calls cross the timer-slot batch of 32 marks / 2. */
	validate_transport *t;
	ck_assert_int_eq(validate_transport_cpu(1, 1, 0, &t), 0);
	const validate_cpu_clock clk = {3e-6, 150e9, 10e-6, 40e9, 100e12, 2e12};
	ck_assert_int_eq(validate_transport_cpu_clock(t, &clk), 0);
	validate_groups g;
	char err[256];
	ck_assert_int_eq(validate_groups_make(VALIDATE_BASP, 1, 1, 16, 4, 2, &g, err, sizeof err), 0);
	const validate_model_dims m = {2, 64, 4, 2, 16, 128, 100};
	validate_compute_item items[32];
	const int n = validate_compute_items(&m, &g, items, 32);
	double got[32][3];
	int seen = 0;
	median_ctx ctx = {got, &seen};
	ck_assert_int_eq(validate_compute_run(t, items, n, 1, 25, median_collect, &ctx, err, sizeof err), 0);
	ck_assert_int_eq(seen, n);
	for (int i = 0; i < n; i++) {
		const double want = items[i].kind == VALIDATE_CK_PERMUTE ? items[i].bytes / 2e12 : items[i].flops / 100e12;
		ck_assert_double_eq_tol(got[i][0], want, want * 1e-9);
		ck_assert_double_eq_tol(got[i][1], want, want * 1e-9);
		ck_assert_double_eq_tol(got[i][2], want, want * 1e-9);
	}
	validate_transport_destroy(t);
}
END_TEST

START_TEST(fault_injection_spec_is_validated)
{
	char err[256];
	setenv("SPSIM_VALIDATE_INJECT", "1:error:3", 1);
	ck_assert(validate_inject_from_env(err, sizeof err));
	static const char *const bad[] = {"x:error", "1:crash", "1", "-1:hang", "1:hang:0", "1:hang:x", "1:errors"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("SPSIM_VALIDATE_INJECT", bad[i], 1);
		err[0] = 0;
		ck_assert_msg(!validate_inject_from_env(err, sizeof err), "'%s' accepted", bad[i]);
		ck_assert_msg(strstr(err, bad[i]) && strstr(err, "want PROC:error or PROC:hang"), "%s", err);
	}
	unsetenv("SPSIM_VALIDATE_INJECT");
	/* Process 0 told to fail its 2nd agreed step: the 1st passes its status through, the
	 * 2nd fails, the 3rd is clean again (once). */
	setenv("SPSIM_VALIDATE_INJECT", "0:error:2", 1);
	ck_assert(validate_inject_from_env(err, sizeof err));
	validate_launch *l = validate_launch_single();
	ck_assert_int_eq(validate_agree(l, VALIDATE_OK), VALIDATE_OK);
	ck_assert_int_eq(validate_agree(l, VALIDATE_OK), VALIDATE_EDEVICE);
	ck_assert_int_eq(validate_agree(l, VALIDATE_ENOMEM), VALIDATE_ENOMEM);
	unsetenv("SPSIM_VALIDATE_INJECT");
}
END_TEST

START_TEST(fit_recovers_alpha_beta)
{
	double x[21], y[21];
	for (int i = 0; i < 21; i++) {
		x[i] = 1024.0 * (1 << i);
		y[i] = 7e-6 + x[i] / 150e9;
	}
	validate_fit f;
	ck_assert_int_eq(validate_fit_alpha_beta(x, y, 21, &f), 0);
	ck_assert_double_eq_tol(f.latency, 7e-6, 1e-12);
	ck_assert_double_eq_tol(f.bandwidth, 150e9, 150e9 * 1e-9);
	ck_assert(f.max_rel < 1e-9);
	/* Times that would fit a negative latency: pinned at 0. */
	for (int i = 0; i < 21; i++)
		y[i] = x[i] / 150e9 * (i < 3 ? 0.5 : 1.0);
	ck_assert_int_eq(validate_fit_alpha_beta(x, y, 21, &f), 0);
	ck_assert_double_eq(f.latency, 0);
	ck_assert(f.bandwidth > 100e9 && f.bandwidth < 300e9);
	/* Too little to fit. */
	ck_assert_int_eq(validate_fit_alpha_beta(x, y, 1, &f), VALIDATE_EINVAL);
}
END_TEST

START_TEST(log_lines_are_json_and_on_disk_at_once)
{
	char path[] = "/tmp/spsim-validate-logXXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	validate_log log;
	ck_assert_int_eq(validate_log_open(&log, path, true), 0);
	ck_assert_int_eq(validate_log_append(&log, "comm", "\"bytes\": %d, \"time_s\": %.9g", 1024, 1.5e-6), 0);
	/* Readable before close: what a crash would leave. */
	FILE *f = fopen(path, "r");
	char line[512];
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	json_error_t je;
	json_t *j = json_loads(line, 0, &je);
	ck_assert_msg(j != NULL, "%s", je.text);
	ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "comm");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "bytes")), 1024);
	json_decref(j);
	fclose(f);
	validate_log_close(&log);
	unlink(path);
}
END_TEST

static Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *tc = tcase_create("groups");
	tcase_add_test(tc, groups_basp_contiguous_and_same_tokens_as_ulysses);
	tcase_add_test(tc, groups_kv_heads_replicated_when_fewer_than_group);
	tcase_add_test(tc, groups_reject_what_the_method_does_not_define);
	suite_add_tcase(s, tc);
	tc = tcase_create("kernels");
	tcase_add_test(tc, permute_tok_pack_puts_head_block_j_in_chunk_j);
	tcase_add_test(tc, permute_unpack_inverts_pack);
	tcase_add_test(tc, permute_replicated_kv_unpacks_to_the_sum_of_replicas);
	tcase_add_test(tc, attn_tiled_online_softmax_matches_reference);
	tcase_add_test(tc, attn_backward_reference_matches_finite_differences);
	suite_add_tcase(s, tc);
	tc = tcase_create("layer");
	const int n_cases = (int)(sizeof layer_cases / sizeof layer_cases[0]);
	tcase_add_loop_test(tc, layer_ulysses_equals_unpartitioned_reference, 0, n_cases);
	tcase_add_loop_test(tc, layer_basp_equals_unpartitioned_reference, 0, n_cases);
	tcase_add_test(tc, layer_checks_memory_before_allocating);
	tcase_add_test(tc, layer_phases_are_the_op_program_ops);
	suite_add_tcase(s, tc);
	tc = tcase_create("comm");
	tcase_add_test(tc, cpu_collectives_follow_nccl_semantics);
	tcase_add_test(tc, busbw_factors_are_nccl_tests);
	tcase_add_test(tc, comm_sweep_covers_groups_and_zero_collectives);
	tcase_add_test(tc, comm_fits_recover_the_links_of_a_known_machine);
	tcase_add_test(tc, comm_sweep_caps_sizes_to_device_memory);
	suite_add_tcase(s, tc);
	tc = tcase_create("compute");
	tcase_add_test(tc, compute_items_follow_the_flop_accounting);
	tcase_add_test(tc, fit_recovers_alpha_beta);
	tcase_add_test(tc, quantiles_interpolate_between_order_statistics);
	tcase_add_test(tc, compute_reports_median_and_spread_per_call);
	tcase_add_test(tc, fault_injection_spec_is_validated);
	tcase_add_test(tc, log_lines_are_json_and_on_disk_at_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(validate_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
