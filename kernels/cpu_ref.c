/* CPU references of the layer kernels (kernels.h). Plain loops, written for clarity: the
 * test suites hold the CUDA kernels and the partitioned layer against these. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

kernels_bf16 kernels_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (kernels_bf16)((u >> 16) | 0x40u); /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1u);               /* round to nearest, ties to even */
	return (kernels_bf16)(u >> 16);
}

float kernels_bf16_to_f32(kernels_bf16 b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* ------------------------------------------------------------- attention --- */
const char *kernels_attn_shape_check(const kernels_attn_shape *s)
{
	if (s->nseq < 1 || s->seq < 1 || s->heads < 1 || s->kv_heads < 1 || s->head_dim < 1)
		return "every attention dimension must be >= 1";
	if (s->heads % s->kv_heads != 0)
		return "query heads must be a multiple of kv heads";
	return NULL;
}

size_t kernels_attn_q_elems(const kernels_attn_shape *s)
{
	return (size_t)s->nseq * (size_t)s->seq * (size_t)s->heads * (size_t)s->head_dim;
}

size_t kernels_attn_kv_elems(const kernels_attn_shape *s)
{
	return (size_t)s->nseq * (size_t)s->seq * (size_t)s->kv_heads * (size_t)s->head_dim;
}

size_t kernels_attn_lse_elems(const kernels_attn_shape *s)
{
	return (size_t)s->nseq * (size_t)s->heads * (size_t)s->seq;
}

size_t kernels_attn_bwd_workspace(const kernels_attn_shape *s)
{
	/* fp32 dQ accumulator + fp32 D, each rounded up to 256 bytes. */
	size_t dq = (kernels_attn_q_elems(s) * 4 + 255) / 256 * 256;
	size_t d = (kernels_attn_lse_elems(s) * 4 + 255) / 256 * 256;
	return dq + d;
}

double kernels_attn_fwd_flops(const kernels_attn_shape *s)
{
	double f = 4.0 * (double)s->seq * (double)s->seq * s->heads * s->head_dim * s->nseq;
	return s->causal ? f / 2 : f;
}

double kernels_attn_bwd_flops(const kernels_attn_shape *s) { return 2.5 * kernels_attn_fwd_flops(s); }

static inline size_t qidx(const kernels_attn_shape *s, int n, int i, int h)
{
	return (((size_t)n * s->seq + i) * s->heads + h) * s->head_dim;
}

static inline size_t kvidx(const kernels_attn_shape *s, int n, int j, int h)
{
	return (((size_t)n * s->seq + j) * s->kv_heads + h) * s->head_dim;
}

static inline size_t lseidx(const kernels_attn_shape *s, int n, int h, int i)
{
	return ((size_t)n * s->heads + h) * s->seq + i;
}

static double dot_bf16(const kernels_bf16 *a, const kernels_bf16 *b, int d)
{
	double acc = 0;
	for (int c = 0; c < d; c++)
		acc += (double)kernels_bf16_to_f32(a[c]) * kernels_bf16_to_f32(b[c]);
	return acc;
}

/* Softmax row i of (n, h): fills p[0..jn) (probabilities) and returns jn, the number of
 * keys the row sees; *lse gets max + log(sum). */
static int softmax_row(const kernels_attn_shape *s, const kernels_bf16 *q, const kernels_bf16 *k, int n, int h,
		       int i, double *p, double *lse)
{
	const int d = s->head_dim, kvh = h / (s->heads / s->kv_heads);
	const double scale = 1.0 / sqrt((double)d);
	const int jn = s->causal ? i + 1 : s->seq;
	double mx = -DBL_MAX;
	for (int j = 0; j < jn; j++) {
		p[j] = scale * dot_bf16(q + qidx(s, n, i, h), k + kvidx(s, n, j, kvh), d);
		if (p[j] > mx)
			mx = p[j];
	}
	double sum = 0;
	for (int j = 0; j < jn; j++) {
		p[j] = exp(p[j] - mx);
		sum += p[j];
	}
	for (int j = 0; j < jn; j++)
		p[j] /= sum;
	*lse = mx + log(sum);
	return jn;
}

int kernels_cpu_attn_fwd(const kernels_attn_shape *s, const kernels_bf16 *q, const kernels_bf16 *k,
			  const kernels_bf16 *v, kernels_bf16 *o, float *lse)
{
	const int d = s->head_dim, group = s->heads / s->kv_heads;
	double *p = malloc((size_t)s->seq * sizeof *p);
	double *acc = malloc((size_t)d * sizeof *acc);
	if (!p || !acc) {
		free(p);
		free(acc);
		return -1;
	}
	for (int n = 0; n < s->nseq; n++)
		for (int h = 0; h < s->heads; h++)
			for (int i = 0; i < s->seq; i++) {
				double l;
				int jn = softmax_row(s, q, k, n, h, i, p, &l);
				memset(acc, 0, (size_t)d * sizeof *acc);
				for (int j = 0; j < jn; j++) {
					const kernels_bf16 *vj = v + kvidx(s, n, j, h / group);
					for (int c = 0; c < d; c++)
						acc[c] += p[j] * kernels_bf16_to_f32(vj[c]);
				}
				kernels_bf16 *oi = o + qidx(s, n, i, h);
				for (int c = 0; c < d; c++)
					oi[c] = kernels_f32_to_bf16((float)acc[c]);
				lse[lseidx(s, n, h, i)] = (float)l;
			}
	free(p);
	free(acc);
	return 0;
}

int kernels_cpu_attn_bwd(const kernels_attn_shape *s, const kernels_bf16 *q, const kernels_bf16 *k,
			  const kernels_bf16 *v, const kernels_bf16 *o, const kernels_bf16 *dout, const float *lse,
			  kernels_bf16 *dq, kernels_bf16 *dk, kernels_bf16 *dv)
{
	(void)o;
	(void)lse;
	const int d = s->head_dim, group = s->heads / s->kv_heads;
	const double scale = 1.0 / sqrt((double)d);
	const size_t kvn = (size_t)s->seq * s->kv_heads * d; /* kv elements of one sequence */
	double *p = malloc((size_t)s->seq * sizeof *p);
	double *ds = malloc((size_t)s->seq * sizeof *ds);
	double *oi = malloc((size_t)d * sizeof *oi);
	double *dqi = malloc((size_t)d * sizeof *dqi);
	double *dka = calloc(kvn, sizeof *dka);
	double *dva = calloc(kvn, sizeof *dva);
	int rc = -1;
	if (!p || !ds || !oi || !dqi || !dka || !dva)
		goto out;
	for (int n = 0; n < s->nseq; n++) {
		memset(dka, 0, kvn * sizeof *dka);
		memset(dva, 0, kvn * sizeof *dva);
		for (int h = 0; h < s->heads; h++) {
			const int kvh = h / group;
			for (int i = 0; i < s->seq; i++) {
				double l;
				int jn = softmax_row(s, q, k, n, h, i, p, &l);
				const kernels_bf16 *doi = dout + qidx(s, n, i, h), *qi = q + qidx(s, n, i, h);
				memset(oi, 0, (size_t)d * sizeof *oi);
				for (int j = 0; j < jn; j++) {
					const kernels_bf16 *vj = v + kvidx(s, n, j, kvh);
					for (int c = 0; c < d; c++)
						oi[c] += p[j] * kernels_bf16_to_f32(vj[c]);
				}
				double D = 0;
				for (int c = 0; c < d; c++)
					D += (double)kernels_bf16_to_f32(doi[c]) * oi[c];
				memset(dqi, 0, (size_t)d * sizeof *dqi);
				for (int j = 0; j < jn; j++) {
					const kernels_bf16 *vj = v + kvidx(s, n, j, kvh), *kj = k + kvidx(s, n, j, kvh);
					ds[j] = p[j] * (dot_bf16(doi, vj, d) - D);
					double *dkj = dka + kvidx(s, 0, j, kvh), *dvj = dva + kvidx(s, 0, j, kvh);
					for (int c = 0; c < d; c++) {
						dqi[c] += ds[j] * kernels_bf16_to_f32(kj[c]);
						dkj[c] += scale * ds[j] * kernels_bf16_to_f32(qi[c]);
						dvj[c] += p[j] * kernels_bf16_to_f32(doi[c]);
					}
				}
				kernels_bf16 *dqo = dq + qidx(s, n, i, h);
				for (int c = 0; c < d; c++)
					dqo[c] = kernels_f32_to_bf16((float)(scale * dqi[c]));
			}
		}
		for (size_t e = 0; e < kvn; e++) {
			dk[(size_t)n * kvn + e] = kernels_f32_to_bf16((float)dka[e]);
			dv[(size_t)n * kvn + e] = kernels_f32_to_bf16((float)dva[e]);
		}
	}
	rc = 0;
out:
	free(p);
	free(ds);
	free(oi);
	free(dqi);
	free(dka);
	free(dva);
	return rc;
}

int kernels_cpu_attn_fwd_tiled(const kernels_attn_shape *s, int block_q, int block_k, const kernels_bf16 *q,
				const kernels_bf16 *k, const kernels_bf16 *v, kernels_bf16 *o, float *lse)
{
	const int d = s->head_dim, group = s->heads / s->kv_heads, S = s->seq;
	const float scale = 1.0f / sqrtf((float)d);
	float *m = malloc((size_t)block_q * sizeof *m), *l = malloc((size_t)block_q * sizeof *l);
	float *acc = malloc((size_t)block_q * d * sizeof *acc), *st = malloc((size_t)block_q * block_k * sizeof *st);
	int rc = -1;
	if (!m || !l || !acc || !st)
		goto out;
	for (int n = 0; n < s->nseq; n++)
		for (int h = 0; h < s->heads; h++)
			for (int i0 = 0; i0 < S; i0 += block_q) {
				const int rows = S - i0 < block_q ? S - i0 : block_q;
				for (int r = 0; r < rows; r++) {
					m[r] = -INFINITY;
					l[r] = 0;
				}
				memset(acc, 0, (size_t)block_q * d * sizeof *acc);
				/* Causal: key tiles past the tile's last query are all masked. */
				const int jend = s->causal ? i0 + rows : S;
				for (int j0 = 0; j0 < jend; j0 += block_k) {
					for (int r = 0; r < rows; r++) {
						const int i = i0 + r;
						float mx = -INFINITY;
						for (int c = 0; c < block_k; c++) {
							const int j = j0 + c;
							float sc = -INFINITY;
							if (j < S && (!s->causal || j <= i)) {
								const kernels_bf16 *qi = q + qidx(s, n, i, h);
								const kernels_bf16 *kj = k + kvidx(s, n, j, h / group);
								float dotf = 0;
								for (int e = 0; e < d; e++)
									dotf += kernels_bf16_to_f32(qi[e]) *
										kernels_bf16_to_f32(kj[e]);
								sc = dotf * scale;
							}
							st[r * block_k + c] = sc;
							mx = fmaxf(mx, sc);
						}
						/* Online softmax: rescale what was accumulated under the old
						 * max by exp(m_old - m_new). */
						const float mnew = fmaxf(m[r], mx);
						const float alpha = m[r] == -INFINITY ? 0.0f : expf(m[r] - mnew);
						float rowsum = 0;
						for (int e = 0; e < d; e++)
							acc[r * d + e] *= alpha;
						for (int c = 0; c < block_k; c++) {
							const float sc = st[r * block_k + c];
							const float pf = sc == -INFINITY ? 0.0f : expf(sc - mnew);
							rowsum += pf;
							const float pb = kernels_bf16_to_f32(kernels_f32_to_bf16(pf));
							if (pb == 0.0f)
								continue;
							const kernels_bf16 *vj = v + kvidx(s, n, j0 + c, h / group);
							for (int e = 0; e < d; e++)
								acc[r * d + e] += pb * kernels_bf16_to_f32(vj[e]);
						}
						l[r] = l[r] * alpha + rowsum;
						m[r] = mnew;
					}
				}
				for (int r = 0; r < rows; r++) {
					kernels_bf16 *oi = o + qidx(s, n, i0 + r, h);
					for (int e = 0; e < d; e++)
						oi[e] = kernels_f32_to_bf16(acc[r * d + e] / l[r]);
					lse[lseidx(s, n, h, i0 + r)] = m[r] + logf(l[r]);
				}
			}
	rc = 0;
out:
	free(m);
	free(l);
	free(acc);
	free(st);
	return rc;
}

/* --------------------------------------------------------------- layouts --- */
const char *kernels_permute_check(const kernels_permute *p)
{
	if (p->peers < 1 || p->nseq < 1 || p->tokens < 1 || p->heads < 1 || p->head_dim < 1 || p->rep < 1)
		return "every permute dimension must be >= 1";
	if (p->heads % p->peers != 0)
		return "heads must divide evenly among the peers";
	if (p->heads % p->rep != 0)
		return "heads must be a multiple of the replication factor";
	if ((p->dir == KERNELS_HEAD_PACK || p->dir == KERNELS_HEAD_UNPACK) && p->rep != 1)
		return "head-side permutes take rep = 1";
	if (p->ld != 0 && p->ld < (long)(p->heads / p->rep) * p->head_dim)
		return "token-side row stride is shorter than a row";
	return NULL;
}

size_t kernels_permute_buffer_elems(const kernels_permute *p)
{
	return (size_t)p->nseq * (size_t)p->tokens * (size_t)p->heads * (size_t)p->head_dim;
}

double kernels_permute_bytes(const kernels_permute *p)
{
	double buf = (double)kernels_permute_buffer_elems(p) * 2.0;
	if (p->dir == KERNELS_TOK_PACK || p->dir == KERNELS_TOK_UNPACK)
		return buf + buf / p->rep;
	return 2.0 * buf;
}

void kernels_cpu_permute(const kernels_permute *p, const kernels_bf16 *src, kernels_bf16 *dst)
{
	const long t = p->tokens, P = p->peers, nseq = p->nseq, d = p->head_dim;
	const long H = p->heads, Hp = H / P, rep = p->rep, Htok = H / rep;
	const long ld = p->ld ? p->ld : Htok * d;
#define BUF(j, s, i, hh) ((((size_t)(j) * nseq + (s)) * t + (i)) * Hp + (hh)) * d
#define TOK(s, i, ht) ((size_t)(s) * t + (i)) * ld + (size_t)(ht) * d
#define HEAD(s, tok, hh) (((size_t)(s) * P * t + (tok)) * Hp + (hh)) * d
	for (long s = 0; s < nseq; s++)
		for (long i = 0; i < t; i++) {
			switch (p->dir) {
			case KERNELS_TOK_PACK:
				for (long j = 0; j < P; j++)
					for (long hh = 0; hh < Hp; hh++)
						memcpy(dst + BUF(j, s, i, hh), src + TOK(s, i, (j * Hp + hh) / rep),
						       (size_t)d * sizeof *dst);
				break;
			case KERNELS_TOK_UNPACK:
				for (long ht = 0; ht < Htok; ht++)
					for (long c = 0; c < d; c++) {
						float acc = 0;
						for (long r = 0; r < rep; r++) {
							long hg = ht * rep + r;
							acc += kernels_bf16_to_f32(src[BUF(hg / Hp, s, i, hg % Hp) + c]);
						}
						dst[TOK(s, i, ht) + c] = kernels_f32_to_bf16(acc);
					}
				break;
			case KERNELS_HEAD_UNPACK:
				for (long j = 0; j < P; j++)
					memcpy(dst + HEAD(s, j * t + i, 0), src + BUF(j, s, i, 0),
					       (size_t)(Hp * d) * sizeof *dst);
				break;
			case KERNELS_HEAD_PACK:
				for (long j = 0; j < P; j++)
					memcpy(dst + BUF(j, s, i, 0), src + HEAD(s, j * t + i, 0),
					       (size_t)(Hp * d) * sizeof *dst);
				break;
			}
		}
#undef BUF
#undef TOK
#undef HEAD
}

/* ------------------------------------------------------------------ GEMM --- */
const char *kernels_gemm_check(const kernels_gemm *g)
{
	if (g->m < 1 || g->n < 1 || g->k < 1)
		return "GEMM dimensions must be >= 1";
	if (g->lda < (g->trans_a ? g->m : g->k) || g->ldb < (g->trans_b ? g->k : g->n) || g->ldc < g->n)
		return "a GEMM leading dimension is shorter than its row";
	if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->lda > INT_MAX || g->ldb > INT_MAX ||
	    g->ldc > INT_MAX)
		return "a GEMM dimension exceeds INT_MAX";
	return NULL;
}

void kernels_cpu_gemm(const kernels_gemm *g, const kernels_bf16 *a, const kernels_bf16 *b, kernels_bf16 *c)
{
	/* Row by row, a block of columns at a time, the k loop outside the column loop for
	 * contiguous access to B; every element still sums l = 0 .. k-1 in order. */
	enum { JB = 256 };
	double acc[JB];
	for (long i = 0; i < g->m; i++)
		for (long j0 = 0; j0 < g->n; j0 += JB) {
			const long jn = g->n - j0 < JB ? g->n - j0 : JB;
			for (long j = 0; j < jn; j++)
				acc[j] = 0;
			for (long l = 0; l < g->k; l++) {
				const double av = kernels_bf16_to_f32(g->trans_a ? a[l * g->lda + i] : a[i * g->lda + l]);
				if (g->trans_b)
					for (long j = 0; j < jn; j++)
						acc[j] += av * kernels_bf16_to_f32(b[(j0 + j) * g->ldb + l]);
				else
					for (long j = 0; j < jn; j++)
						acc[j] += av * kernels_bf16_to_f32(b[l * g->ldb + j0 + j]);
			}
			for (long j = 0; j < jn; j++) {
				double v = acc[j] * g->alpha;
				if (g->beta != 0.0f)
					v += (double)g->beta * kernels_bf16_to_f32(c[i * g->ldc + j0 + j]);
				c[i * g->ldc + j0 + j] = kernels_f32_to_bf16((float)v);
			}
		}
}

/* ------------------------------------------------------------ comparison --- */
static int compare(const void *got, const void *want, size_t n, int bf16, double tol, kernels_compare_result *r)
{
#define AT(p, e) (bf16 ? (double)kernels_bf16_to_f32(((const kernels_bf16 *)(p))[e]) : (double)((const float *)(p))[e])
	memset(r, 0, sizeof *r);
	r->n = n;
	double ss = 0;
	for (size_t e = 0; e < n; e++) {
		double w = AT(want, e);
		ss += w * w;
		if (fabs(w) > r->max_want)
			r->max_want = fabs(w);
	}
	r->rms_want = n ? sqrt(ss / (double)n) : 0;
	for (size_t e = 0; e < n; e++) {
		double g = AT(got, e), w = AT(want, e);
		if (!isfinite(g)) {
			r->nonfinite = 1;
			r->bad++;
			r->worst = e;
			r->max_norm = INFINITY;
			r->max_abs = INFINITY;
			continue;
		}
		double err = fabs(g - w), den = fabs(w) + r->rms_want;
		double norm = den > 0 ? err / den : (err > 0 ? INFINITY : 0);
		if (err > r->max_abs)
			r->max_abs = err;
		if (norm > r->max_norm) {
			r->max_norm = norm;
			r->worst = e;
		}
		if (norm > tol)
			r->bad++;
	}
	return r->bad == 0;
#undef AT
}

int kernels_compare_bf16(const kernels_bf16 *got, const kernels_bf16 *want, size_t n, double tol,
			 kernels_compare_result *r)
{
	return compare(got, want, n, 1, tol, r);
}

int kernels_compare_f32(const float *got, const float *want, size_t n, double tol, kernels_compare_result *r)
{
	return compare(got, want, n, 0, tol, r);
}
