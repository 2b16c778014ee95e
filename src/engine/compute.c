/* Compute op times: GEMM, attention and memory-bound kernels, each at an efficiency that
 * depends on its shape (docs/model.md "Compute").
 *
 * GEMM (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001, sections
 * 2.3 "Typical Tile Dimensions In cuBLAS And Performance", 3.1 "Tile Quantization" and 3.2
 * "Wave Quantization"; CUTLASS's multistage main loop and split-K): cuBLAS computes the
 * output in CTA tiles (256x128 and 128x128 are its most efficient), one tile per SM at a
 * time; a partial tile costs a whole one, and the last wave of tiles leaves SMs idle. A
 * kernel takes fill + max(main loop, HBM traffic): the main loop at plateau x tile x wave,
 * the plateau (`efficiency.gemm`) what a large aligned GEMM reaches; the fill the prologue
 * loads and epilogue stores nothing overlaps; the traffic A, B, the output and any split-K
 * partials. The tile and split are the candidates' fastest (cuBLAS's heuristics pick among
 * such kernels by predicted time); see gemm_plan_make.
 *
 * Attention: efficiency = P x fill(T) x wave / peak, per kernel family:
 *  - P, the family's rate at long sequences and full waves on its GPU, and c, its per
 *    query tile overhead in key-tile iterations (fill(T) = T / (T + c), T = S/128 key
 *    tiles each query tile walks: the pipeline prologue and epilogue of every tile are
 *    amortised over T iterations), both follow from the two end bars (512 and 16K tokens)
 *    of the published figure; the four bars between are a check (tests/test_kernels.c).
 *    Causal masks are in c and P: a query tile walks (T+1)/2 key tiles for T/2 tiles'
 *    worth of counted FLOPs.
 *  - wave: the kernel runs ceil(S/128) query tiles x heads x sequences thread blocks, one
 *    per SM at a time (FlashAttention-2/3 tiles take most of an SM's shared memory);
 *    wave = blocks / (ceil(blocks/SMs) x SMs). The figures ran 16K tokens per batch at
 *    hidden 2048 (2048/d heads), so their own wave factor is divided out of P.
 * FLOPs are counted as FlashAttention's benchmarks count them (4·S²·heads·d forward,
 * halved when causal, backward 2.5x forward), the same count the op program uses. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine/compute.h"
#include "util/intmath.h"

/* ------------------------------------------------------------------ GEMM --- */
#define KSPLIT_MIN 256 /* documented choice: 4 main-loop steps of a 64-deep K tile per split */
/* K depth of one main-loop stage of cuBLAS/CUTLASS bf16 tensor-core kernels (CUTLASS
 * default_gemm_configuration.h, OpClassTensorOp bf16 on Sm80: ThreadblockShape<128, 256, 64>;
 * the Sm90 collective builders use 64-deep bf16 K tiles as well). */
#define GEMM_STAGE_K 64.0
/* K depth a CTA loads before its first MMA: CUTLASS's multistage main loop issues kStages - 1
 * complete stages in its prologue (gemm/threadblock/mma_multistage.h, "Issue several complete
 * stages"), and its Sm80 bf16 tensor-op default is kStages = 3 (default_gemm_configuration.h):
 * two 64-deep stages. A split shallower than that loads all of its K. */
#define GEMM_PROLOGUE_K (2 * GEMM_STAGE_K)
#define BF16 2.0 /* bytes per operand and output element */
/* Bytes per element of a split-K partial: the accumulator type, fp32 (CUTLASS
 * gemm/device/gemm_splitk_parallel.h writes each split's ElementAccumulator tile to a
 * workspace that reduction/kernel/reduce_split_k.h sums into the output). */
#define SPLITK_PARTIAL 4.0

/* ceil and fmax are library calls on baseline x86-64 (no SSE4.1 rounding), and the
 * analytic engine evaluates these for every op of ~10^5 configurations a second: ceil of a
 * non-negative value by truncation instead. */
static inline double pceil(double x)
{
	double t = (double)(long)x;
	return t < x ? t + 1 : t;
}

static double wave_eff(double units, int sms)
{
	if (units <= 0 || sms <= 0)
		return 1.0;
	return units / (pceil(units / sms) * sms);
}

/* How one GEMM kernel runs: the CTA tile and split-K the model picks, as their share of the
 * plateau (tile x wave quantization), the bytes one SM moves in its unoverlapped prologue and
 * epilogue (fill), and the HBM bytes of the whole kernel. */
typedef struct gemm_plan {
	double eff, fill, bytes;
} gemm_plan;

/* Candidate (tile, split) pairs, each timed as fill + max(main loop, HBM traffic), in seconds
 * for a GPU of `sms` SMs running the main loop at `flop_rate` FLOP/s (peak x plateau) and HBM
 * at `byte_rate` B/s (bandwidth x efficiency.memory); the fastest is the plan, the way cuBLAS's
 * heuristics choose among kernels by predicted time. Per pair:
 *  - tile x wave: m·n / (⌈m/Tm⌉·Tm·⌈n/Tn⌉·Tn) x units / (⌈units/SMs⌉·SMs), units = tiles x
 *    split (DU-09799-001 sections 3.1 and 3.2);
 *  - split-K: when the output has fewer tiles than SMs, K may be cut into up to
 *    min(⌊SMs/tiles⌋, ⌊k/KSPLIT_MIN⌋) splits, whose fp32 partials are written and read back
 *    (gemm_splitk_parallel.h): 2 x 4 bytes x split x m x n more HBM traffic;
 *  - fill: before its first MMA a CTA loads its prologue (min(k/split, 2 stages) deep of its A
 *    and B tiles), after its last it stores its output tile; the first wave's loads and the
 *    last wave's stores overlap nothing, and with every SM doing so at once each moves them at
 *    its share of HBM (CUTLASS media/docs/efficient_gemm.md, "Pipelining"). With K no deeper
 *    than the prologue nothing of the main loop hides it: the whole kernel is fill + compute;
 *  - HBM traffic: A, B and the output once each (bf16) — the L2 serves the re-reads of a
 *    row panel by the tiles of its row within a wave — plus the split partials. */
static gemm_plan gemm_plan_make(double m, double n, double k, double sms, double flop_rate, double byte_rate)
{
	/* tile sides and their reciprocals (powers of two: the products are exact) */
	static const double tiles[][4] = {{256, 128, 1.0 / 256, 1.0 / 128},
					  {128, 256, 1.0 / 128, 1.0 / 256},
					  {128, 128, 1.0 / 128, 1.0 / 128}};
	const double flops = 2.0 * m * n * k, unique = BF16 * (m * k + k * n + m * n);
	const double deep = (double)(long)(k / KSPLIT_MIN);
	const double per_byte = byte_rate > 0 ? 1.0 / byte_rate : 0;
	gemm_plan best = {0};
	double best_t = -1;
	for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
		const double tm = tiles[i][0], tn = tiles[i][1];
		double t = pceil(m * tiles[i][2]) * pceil(n * tiles[i][3]), padded = t * tm * tn;
		double splits = 1;
		if (sms > 0 && t < sms) {
			splits = (double)(long)(sms / t);
			splits = splits < deep ? splits : deep;
		}
		for (double s = 1; s == 1 || s <= splits; s++) {
			double units = t * s;
			/* tile x wave = (m·n / padded) x (units / (waves·SMs)) */
			double e = sms > 0 ? m * n * units / (padded * pceil(units / sms) * sms) : m * n / padded;
			double kk = k / s, pro = kk < GEMM_PROLOGUE_K ? kk : GEMM_PROLOGUE_K;
			double fill = BF16 * (pro * (tm + tn) + tm * tn);
			double bytes = unique + (s > 1 ? 2.0 * SPLITK_PARTIAL * s * m * n : 0);
			double tc = flops / (flop_rate * e), tb = bytes * per_byte;
			double time = fill * sms * per_byte + (tc > tb ? tc : tb);
			if (best_t < 0 || time < best_t) {
				best_t = time;
				best = (gemm_plan){.eff = e, .fill = fill, .bytes = bytes};
			}
		}
	}
	return best;
}

/* A plan holds a handful of GEMM shapes and a sweep revisits them configuration after
 * configuration: a small direct-mapped cache per thread keeps the analytic engine's rate. */
#define GEMM_CACHE 512
static gemm_plan gemm_plan_of(const config_platform *p, double m, double n, double k)
{
	static _Thread_local struct {
		double m, n, k, sms, flop_rate, byte_rate;
		gemm_plan plan;
	} cache[GEMM_CACHE];
	if (m < 1 || n < 1 || k < 1)
		return (gemm_plan){.eff = 1.0};
	const double sms = p->gpu.sms, flop_rate = p->gpu.peak_flops * p->eff.gemm,
		     byte_rate = p->gpu.hbm_bandwidth * p->eff.memory;
	/* the shape's bit patterns mixed (a hit compares every field, so any spread will do) */
	uint64_t bm, bn, bk;
	memcpy(&bm, &m, sizeof bm), memcpy(&bn, &n, sizeof bn), memcpy(&bk, &k, sizeof bk);
	uint64_t h = ((bm >> 32) ^ (bn >> 32) * 0x9E3779B1u ^ (bk >> 32) * 0xC2B2AE3Du) * 0x94D049BB133111EBu;
	h = (h >> 40) % GEMM_CACHE;
	if (cache[h].m == m && cache[h].n == n && cache[h].k == k && cache[h].sms == sms &&
	    cache[h].flop_rate == flop_rate && cache[h].byte_rate == byte_rate)
		return cache[h].plan;
	gemm_plan g = gemm_plan_make(m, n, k, sms, flop_rate, byte_rate);
	cache[h].m = m, cache[h].n = n, cache[h].k = k, cache[h].sms = sms;
	cache[h].flop_rate = flop_rate, cache[h].byte_rate = byte_rate, cache[h].plan = g;
	return g;
}

double engine_gemm_shape_eff(const config_platform *p, double m, double n, double k)
{
	return gemm_plan_of(p, m, n, k).eff;
}

double engine_gemm_eff(const config_platform *p, double m, double n, double k)
{
	if (p->eff.gemm_measured) /* a calibration's measured efficiency holds its own quantization */
		return p->eff.gemm;
	return p->eff.gemm * engine_gemm_shape_eff(p, m, n, k);
}

/* Seconds per byte of HBM traffic; 0 when there is none to cost (a calibration measured
 * efficiency.gemm, or the platform gives no bandwidth). */
static double hbm_s_per_byte(const config_platform *p)
{
	if (p->eff.gemm_measured || p->gpu.hbm_bandwidth <= 0 || p->eff.memory <= 0)
		return 0;
	return 1.0 / (p->gpu.hbm_bandwidth * p->eff.memory);
}

/* One GEMM kernel of `flops` FLOPs: its fill, then the main loop at the quantized plateau or
 * its HBM traffic, whichever is longer; one plan lookup. */
static double gemm_kernel_time(const config_platform *p, double flops, double m, double n, double k)
{
	if (p->eff.gemm_measured)
		return flops / (p->gpu.peak_flops * p->eff.gemm);
	gemm_plan g = gemm_plan_of(p, m, n, k);
	double sb = hbm_s_per_byte(p);
	double tc = flops / (p->gpu.peak_flops * p->eff.gemm * g.eff), tb = g.bytes * sb;
	return g.fill * (p->gpu.sms > 0 ? p->gpu.sms : 0) * sb + (tc > tb ? tc : tb);
}

double engine_gemm_time(const config_platform *p, double m, double n, double k)
{
	return gemm_kernel_time(p, 2.0 * m * n * k, m, n, k);
}

double engine_gemm_fill_time(const config_platform *p, double m, double n, double k)
{
	if (p->gpu.sms <= 0)
		return 0;
	return gemm_plan_of(p, m, n, k).fill * p->gpu.sms * hbm_s_per_byte(p);
}

/* ------------------------------------------------------------- attention --- */
/* Published attention throughput, TFLOP/s at 512 and 16K tokens (batch x seq = 16K, hidden
 * 2048, bf16/fp16), on H100 SXM5 (132 SMs): FlashAttention-3 paper, arXiv 2407.08608,
 * Figure 5 (forward; (a)/(b) head dim 64 without/with causal mask, (c)/(d) 128, (e)/(f)
 * 256) and Figure 6 (backward, without causal mask, head dim 64 and 128). The backward
 * with a causal mask is not published there: it is the non-causal backward scaled by the
 * forward's causal/non-causal ratio at the same length (the mask skips the same tiles in
 * both directions); backward at head dim 256 is likewise the forward's ratio applied to
 * head dim 128's backward. */
typedef struct attn_curve {
	unsigned char kernel, hd_log2, bwd, causal;
	float r512, r16k; /* TFLOP/s */
} attn_curve;

#define FWD 0
#define BWD 1
static const attn_curve hopper_curves[] = {
	/* FlashAttention-2 */
	{CONFIG_ATTN_FA2, 6, FWD, 0, 282, 324},
	{CONFIG_ATTN_FA2, 6, FWD, 1, 180, 299},
	{CONFIG_ATTN_FA2, 6, BWD, 0, 198, 291},
	{CONFIG_ATTN_FA2, 7, FWD, 0, 309, 370},
	{CONFIG_ATTN_FA2, 7, FWD, 1, 191, 335},
	{CONFIG_ATTN_FA2, 7, BWD, 0, 214, 322},
	{CONFIG_ATTN_FA2, 8, FWD, 0, 275, 326},
	{CONFIG_ATTN_FA2, 8, FWD, 1, 208, 298},
	/* cuDNN */
	{CONFIG_ATTN_CUDNN, 6, FWD, 0, 335, 413},
	{CONFIG_ATTN_CUDNN, 6, FWD, 1, 225, 388},
	{CONFIG_ATTN_CUDNN, 6, BWD, 0, 266, 433},
	{CONFIG_ATTN_CUDNN, 7, FWD, 0, 497, 595},
	{CONFIG_ATTN_CUDNN, 7, FWD, 1, 315, 539},
	{CONFIG_ATTN_CUDNN, 7, BWD, 0, 305, 516},
	{CONFIG_ATTN_CUDNN, 8, FWD, 0, 470, 581},
	{CONFIG_ATTN_CUDNN, 8, FWD, 1, 308, 509},
	/* FlashAttention-3 */
	{CONFIG_ATTN_FA3, 6, FWD, 0, 333, 497},
	{CONFIG_ATTN_FA3, 6, FWD, 1, 197, 473},
	{CONFIG_ATTN_FA3, 6, BWD, 0, 272, 474},
	{CONFIG_ATTN_FA3, 7, FWD, 0, 467, 648},
	{CONFIG_ATTN_FA3, 7, FWD, 1, 292, 616},
	{CONFIG_ATTN_FA3, 7, BWD, 0, 316, 561},
	{CONFIG_ATTN_FA3, 8, FWD, 0, 482, 756},
	{CONFIG_ATTN_FA3, 8, FWD, 1, 286, 642},
};
#define HOPPER_SMS 132 /* the figures' H100 SXM5 */
#define BENCH_TOKENS 16384.0
#define BENCH_HIDDEN 2048.0
#define TILE 128.0

/* FlashAttention-2 on A100 (Ampere): the FlashAttention-2 paper (arXiv 2307.08691,
 * section 1 and Figures 5-6) reports the kernel at up to 73% of the A100's 312 TFLOP/s
 * forward and 63% backward (head dim 128, long sequences, no mask: its Figures 5 and 6).
 * FlashAttention-2 runs the same Ampere (sm80) kernels on H100, so the shape of its curve
 * over length, head dim and mask is the H100 one above, scaled to those A100 rates. */
#define A100_FA2_FWD (0.73 * 312.0)
#define A100_FA2_BWD (0.63 * 312.0)
#define A100_SMS 108

/* The Triton FlashAttention kernel (flash-attention's flash_attn/flash_attn_triton.py, which
 * requires triton 2.0.0.dev20221202 and which llm-foundry runs for `attn_impl: triton`
 * through its triton-pre-mlir package, llmfoundry/models/layers/attention.py
 * triton_flash_attn_fn) takes as long with a causal mask as without one on that compiler:
 * Dao-AILab/flash-attention issue #142 measures its forward at 4096 tokens (batch 8, 12
 * heads, head dim 64) at 1.862 ms causal and 1.761 ms not, where the CUDA kernel halves
 * (4.945 -> 2.873 ms). So a causal op costs the dense S^2 work: the family is timed on the
 * non-causal curve of FlashAttention-2 on the same GPU, at half the rate for a causal op
 * (whose FLOPs count only the unmasked half). Its own rate per dense FLOP at head dim 128
 * is not published as text; FlashAttention-2's is an upper bound (arXiv 2307.08691,
 * Figures 4-6, finds FlashAttention-2 faster than the Triton kernel), so this family is,
 * if anything, optimistic. */
#define TRITON_CAUSAL_SHARE 0.5

static const attn_curve *curve_find(int kernel, int hd_log2, int bwd, int causal)
{
	for (size_t i = 0; i < sizeof hopper_curves / sizeof hopper_curves[0]; i++) {
		const attn_curve *c = &hopper_curves[i];
		if (c->kernel == kernel && c->hd_log2 == hd_log2 && c->bwd == bwd && c->causal == causal)
			return c;
	}
	return NULL;
}

/* The two end bars of (kernel, head dim 2^hl, direction, mask), filling the unpublished
 * backward ones as the table comment says. */
static void curve_ends(int kernel, int hl, int bwd, int causal, double *r512, double *r16k)
{
	const attn_curve *c = curve_find(kernel, hl, bwd, causal);
	if (c) {
		*r512 = c->r512;
		*r16k = c->r16k;
		return;
	}
	if (bwd && !curve_find(kernel, hl, BWD, 0)) { /* head dim 256 backward: from 128's */
		double f512, f16k, g512, g16k, b512, b16k;
		curve_ends(kernel, hl, FWD, causal, &f512, &f16k);
		curve_ends(kernel, 7, FWD, causal, &g512, &g16k);
		curve_ends(kernel, 7, BWD, causal, &b512, &b16k);
		*r512 = b512 * f512 / g512;
		*r16k = b16k * f16k / g16k;
		return;
	}
	/* backward with a causal mask: the forward's causal / non-causal ratio */
	double n512, n16k, fc512, fc16k, fn512, fn16k;
	curve_ends(kernel, hl, BWD, 0, &n512, &n16k);
	curve_ends(kernel, hl, FWD, 1, &fc512, &fc16k);
	curve_ends(kernel, hl, FWD, 0, &fn512, &fn16k);
	*r512 = n512 * fc512 / fn512;
	*r16k = n16k * fc16k / fn16k;
}

double engine_attention_blocks(double seq, double heads, double seqs)
{
	return pceil(seq / TILE) * heads * seqs;
}

/* Long-sequence full-wave rate P (FLOP/s) and per-tile overhead c of one curve at head dim
 * 2^hl on `sms` SMs: r(T) = P·T/(T+c)·wave_bench from the bars at T = 4 and T = 128. */
static void curve_params(double r1, double r2, double hd, int sms, double *P, double *c)
{
	const double T1 = 512 / TILE, T2 = BENCH_TOKENS / TILE;
	*c = T1 * T2 * (r2 - r1) / (r1 * T2 - r2 * T1);
	if (*c < 0)
		*c = 0;
	double wb = wave_eff(engine_attention_blocks(BENCH_TOKENS, BENCH_HIDDEN / hd, 1), sms);
	*P = r2 * (T2 + *c) / T2 / wb * 1e12;
}

/* P and c of the curve at head dim 2^hl (integer hl in 6..8), memoised per thread (72
 * combinations; the analytic engine asks for them once per attention op). */
static void curve_at(int kernel, config_gpu_arch arch, int hl, int bwd, int causal, double *P, double *c)
{
	static _Thread_local struct {
		bool ok;
		double P, c;
	} memo[CONFIG_ATTN_KERNELS * 2 * 3 * 2 * 2];
	int i = (((kernel * 2 + (int)arch) * 3 + (hl - 6)) * 2 + bwd) * 2 + causal;
	if (memo[i].ok) {
		*P = memo[i].P;
		*c = memo[i].c;
		return;
	}
	double r1, r2;
	int sms = HOPPER_SMS;
	int k = kernel;
	double scale = 1.0;
	if (kernel == CONFIG_ATTN_TRITON) { /* FlashAttention-2's dense curve (see above) */
		k = CONFIG_ATTN_FA2;
		causal = 0;
	}
	if (arch == CONFIG_ARCH_AMPERE) {
		/* only FlashAttention-2 has a published Ampere rate (see above) */
		double n1, n2;
		curve_ends(CONFIG_ATTN_FA2, 7, bwd, 0, &n1, &n2);
		scale = (bwd ? A100_FA2_BWD : A100_FA2_FWD) / n2;
		k = CONFIG_ATTN_FA2;
		sms = A100_SMS;
	}
	curve_ends(k, hl, bwd, causal, &r1, &r2);
	curve_params(r1 * scale, r2 * scale, (double)(1 << hl), sms, P, c);
	memo[i].P = *P;
	memo[i].c = *c;
	memo[i].ok = true;
}

/* Rate of the curve at head dim 2^hl and T key tiles. */
static double curve_rate_hl(int kernel, config_gpu_arch arch, int hl, int bwd, int causal, double T)
{
	double P, c;
	curve_at(kernel, arch, hl, bwd, causal, &P, &c);
	return P * T / (T + c);
}

/* Measured points of the calibration for this shape: log-linear in seq between points of
 * the same (kernel, head_dim, direction, causal), held beyond the ends. 0 when none. */
static double points_rate(const config_platform *p, const engine_attn_shape *s)
{
	const config_attn_point *lo = NULL, *hi = NULL;
	for (int i = 0; i < p->n_attn_points; i++) {
		const config_attn_point *q = &p->attn_points[i];
		if (q->kernel != (int)s->kernel || q->bwd != s->bwd || q->causal != s->causal ||
		    q->head_dim != s->head_dim)
			continue;
		if (q->seq <= s->seq && (!lo || q->seq > lo->seq))
			lo = q;
		if (q->seq >= s->seq && (!hi || q->seq < hi->seq))
			hi = q;
	}
	if (!lo && !hi)
		return 0;
	if (!lo || !hi || lo->seq == hi->seq)
		return (lo ? lo : hi)->flops;
	double f = log(s->seq / lo->seq) / log(hi->seq / lo->seq);
	return lo->flops + f * (hi->flops - lo->flops);
}

double engine_attention_rate(const config_platform *p, const engine_attn_shape *s)
{
	double wave = wave_eff(engine_attention_blocks(s->seq, s->heads, s->seqs), p->gpu.sms);
	double measured = points_rate(p, s);
	if (measured > 0)
		return measured * wave;
	if (!config_attn_kernel_has_curve(s->kernel, p->gpu.arch))
		return 0;
	double T = (s->seq > 1 ? s->seq : 1.0) / TILE;
	/* The Triton kernel runs a head dimension d as BLOCK_HEADDIM = max(next_power_of_2(d),
	 * 16) columns: flash_attn_triton.py (Dao-AILab/flash-attention, _flash_attn_forward and
	 * _flash_attn_backward) sets that block and its kernels load Q, K, V, dO with the
	 * columns past d masked to zero ("mask=offs_d[None, :] < headdim, other=0.0") and take
	 * tl.dot over all BLOCK_HEADDIM of them, so d = 96 does the tensor-core work of 128.
	 * Its time is that of the padded head dim; the op's FLOPs count d, so the rate per
	 * counted FLOP is the padded one's times d / BLOCK_HEADDIM. */
	int hd = s->head_dim;
	double useful = 1.0;
	if (s->kernel == CONFIG_ATTN_TRITON && hd > 0) {
		int block = util_pow2_up(hd < 16 ? 16 : hd);
		useful = (double)hd / block;
		hd = block;
	}
	/* head dims between the published 64, 128 and 256: linear in log2(d), held outside */
	double hl = hd == 128 ? 7.0 : hd == 64 ? 6.0 : log2(fmax(hd, 1));
	hl = fmin(fmax(hl, 6.0), 8.0);
	int h0 = (int)floor(hl);
	if (h0 >= 8)
		h0 = 7;
	double f = hl - h0;
	double r = (1 - f) * curve_rate_hl(s->kernel, p->gpu.arch, h0, s->bwd, s->causal, T) +
		   (f > 0 ? f * curve_rate_hl(s->kernel, p->gpu.arch, h0 + 1, s->bwd, s->causal, T) : 0);
	if (s->kernel == CONFIG_ATTN_TRITON && s->causal)
		r *= TRITON_CAUSAL_SHARE; /* the masked half is computed too */
	return r * useful * wave;
}

double engine_attention_eff(const config_platform *p, const engine_attn_shape *s)
{
	if (p->eff.attention > 0)
		return p->eff.attention;
	double r = engine_attention_rate(p, s) / p->gpu.peak_flops;
	return r > 0 ? fmin(r, 1.0) : 0;
}

/* ----------------------------------------------------------- memory-bound --- */
/* A layout copy reads and writes contiguous runs of `run` bytes; DRAM moves whole 32-byte
 * sectors (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"), so a run
 * uses run / (ceil(run/32)·32) of what it moves. The Ulysses permutes keep one rank's
 * heads x head_dim contiguous (DeepSpeed sequence/layer.py _generate_layout_params:
 * permutes of [bs, P, S/P, heads/P, d]), runs of 128 bytes or more: whole sectors. */
#define SECTOR 32.0
double engine_copy_eff(const config_platform *p, double run_bytes)
{
	double u = run_bytes > 0 ? run_bytes / (pceil(run_bytes / SECTOR) * SECTOR) : 1.0;
	return p->eff.memory * u;
}

/* ------------------------------------------------------------------ ops ---- */
static double gemm_time(const config_platform *p, const workload_op *op)
{
	double m = op->shape.gemm.m, n = op->shape.gemm.n, k = op->shape.gemm.k;
	if (op->phase != WL_PHASE_BWD)
		return gemm_kernel_time(p, op->flops, m, n, k);
	/* backward: activation gradient (m x k, reducing n) and weight gradient (n x k,
	 * reducing m), half the FLOPs each, two kernels */
	return gemm_kernel_time(p, 0.5 * op->flops, m, k, n) + gemm_kernel_time(p, 0.5 * op->flops, n, k, m);
}

engine_attn_shape engine_attn_shape_of(const workload_op *op)
{
	return (engine_attn_shape){.kernel = (config_attn_kernel)op->shape.attn.kernel,
				   .seq = op->shape.attn.seq,
				   .head_dim = op->shape.attn.head_dim,
				   .heads = op->shape.attn.heads,
				   .seqs = op->shape.attn.seqs,
				   .bwd = op->phase == WL_PHASE_BWD,
				   .causal = op->shape.attn.causal};
}

/* The gap between back-to-back kernels on a busy stream, seconds: the GPU's dispatch of
 * the next queued launch. NVIDIA's "Getting Started with CUDA Graphs" (Developer Blog,
 * 2019) times a chain of ~2.9 us kernels at ~3.8 us each when launched without
 * synchronisation: ~1 us per launch beyond the kernel. A tiled op pays it per extra
 * kernel (its launches are queued ahead, so the host's own launch cost is hidden). */
#define ENGINE_KERNEL_GAP 1e-6

double engine_compute_time(const config_platform *p, const workload_op *op)
{
	double t_flops = 0, t_mem = 0;
	if (op->flops > 0) {
		if (op->kernel == WL_KERNEL_ATTENTION) {
			double eff = p->eff.attention;
			if (eff <= 0 && op->shape.attn.seq > 0) {
				engine_attn_shape s = engine_attn_shape_of(op);
				eff = engine_attention_eff(p, &s);
			}
			if (eff <= 0) /* no shape and no override: FlashAttention-2's long-sequence rate */
				eff = engine_attention_eff(p, &(engine_attn_shape){.kernel = CONFIG_ATTN_FA2,
										     .seq = BENCH_TOKENS,
										     .head_dim = 128,
										     .heads = BENCH_HIDDEN / 128,
										     .seqs = 1});
			t_flops = op->flops / (p->gpu.peak_flops * eff);
		} else {
			t_flops = gemm_time(p, op);
		}
	}
	if (op->hbm_bytes > 0) {
		double eff = op->kernel == WL_KERNEL_COPY ? engine_copy_eff(p, op->shape.copy.run_bytes) : p->eff.memory;
		t_mem = op->hbm_bytes / (p->gpu.hbm_bandwidth * eff);
	}
	double t = t_flops > t_mem ? t_flops : t_mem; /* roofline */
	if (t > 0)
		return t + op->extra_launches * ENGINE_KERNEL_GAP; /* 0 extra: t exactly */
	/* A copy to or from host memory (no FLOPs, no HBM pass): the host link's latency and
	 * bandwidth (platform host_link; workload_check refuses offload without one). */
	if (op->kernel == WL_KERNEL_HOST_COPY && p->host.bandwidth > 0)
		return p->host.latency + op->bytes / p->host.bandwidth;
	/* The CPU optimizer step: memory-bound on the node's DRAM (platform host_link
	 * memory_bandwidth; workload_check refuses optimizer offload without one); bytes are
	 * the node's traffic, every GPU's shard stepping at once (docs/model.md "Memory
	 * techniques"). */
	if (op->kernel == WL_KERNEL_HOST_ADAM && p->host.memory_bandwidth > 0)
		return op->bytes / p->host.memory_bandwidth;
	return 0.0;
}
