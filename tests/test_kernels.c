/* kernels: shape-dependent compute efficiency (engine/compute.c), the shapes the op
 * program hands it, the layout copies around the SP all-to-alls, and the keys and flags
 * that select kernels (gpu.sms/arch, attention_kernel, --attention-kernel, calibration
 * attention_points). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/compute.h"
#include "testutil.h"

static config_platform shipped(const char *name)
{
	config_platform p;
	config_error err;
	ck_assert_msg(config_load_platform(name, &p, &err), "%s", err.msg);
	return p;
}

/* Writes text to a temporary YAML file; path in buf. */
static void write_tmp(char *buf, size_t len, const char *text)
{
	snprintf(buf, len, "/tmp/spsim-kernels-XXXXXX");
	int fd = mkstemp(buf);
	ck_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* A minimal platform file around a gpu section and optional top-level extras; the gpu
 * section starts at line 5. */
static void platform_text(char *out, size_t len, const char *gpu, const char *extra, const char *eff_extra)
{
	snprintf(out, len,
		 "platform:\n"
		 "  name: t\n"
		 "  nodes: 1\n"
		 "  gpus_per_node: 8\n"
		 "  gpu:\n%s"
		 "  intra_node: {fabric: nvswitch, bandwidth: 300GB/s, latency: 2us}\n"
		 "  inter_node: {nics: 8, nic_bandwidth: 200Gbps, latency: 5us, topology: rail-optimized}\n"
		 "%s"
		 "  efficiency: {gemm: 0.7, memory: 0.8, intra_link: 0.8, inter_link: 0.9%s}\n",
		 gpu, extra, eff_extra);
}

#define A100_GPU "    name: A100-SXM4-80GB\n    peak_bf16: 312TFLOPS\n    memory: 80GiB\n    hbm_bandwidth: 2039GB/s\n"

static void expect_platform_error(const char *gpu, const char *extra, const char *want)
{
	char text[2048], path[64];
	platform_text(text, sizeof text, gpu, extra, "");
	write_tmp(path, sizeof path, text);
	config_platform p;
	config_error err;
	ck_assert(!config_load_platform(path, &p, &err));
	ck_assert_msg(strstr(err.msg, want) && strncmp(err.msg, path, strlen(path)) == 0, "got: %s\nwant: %s",
		      err.msg, want);
	unlink(path);
}

static config_platform load_text(const char *gpu, const char *extra, const char *eff_extra)
{
	char text[2048], path[64];
	platform_text(text, sizeof text, gpu, extra, eff_extra);
	write_tmp(path, sizeof path, text);
	config_platform p;
	config_error err;
	ck_assert_msg(config_load_platform(path, &p, &err), "%s", err.msg);
	unlink(path);
	return p;
}

/* The published benchmark's shape (arXiv 2407.08608 section 4.1): 16K tokens per batch,
 * hidden 2048, so 16 heads of 128 and 16384/S sequences. */
static engine_attn_shape bench_shape(config_attn_kernel k, double S, int bwd, int causal)
{
	return (engine_attn_shape){.kernel = k, .seq = S, .head_dim = 128, .heads = 16, .seqs = 16384.0 / S,
				   .bwd = bwd, .causal = causal};
}

static double tflops(const config_platform *p, engine_attn_shape s) { return engine_attention_rate(p, &s) / 1e12; }

/* ------------------------------------------------------------ attention --- */
START_TEST(attention_follows_the_published_h100_bars)
{
	/* Bars of arXiv 2407.08608, H100 SXM5, head dim 128: Figure 5(c) forward without mask,
	 * 5(d) with causal mask, Figure 6(b) backward; 512, 1K, 2K, 4K, 8K, 16K tokens. The
	 * model takes P and c from the 512 and 16K bars (exact) and predicts the four between:
	 * each within 8% of the bar. */
	static const struct {
		config_attn_kernel k;
		int bwd, causal;
		double bars[6];
	} cases[] = {
		{CONFIG_ATTN_FA2, 0, 0, {309, 350, 362, 368, 370, 370}},
		{CONFIG_ATTN_FA2, 0, 1, {191, 260, 298, 319, 333, 335}},
		{CONFIG_ATTN_FA2, 1, 0, {214, 260, 291, 310, 318, 322}},
		{CONFIG_ATTN_FA3, 0, 0, {467, 565, 625, 638, 646, 648}},
		{CONFIG_ATTN_FA3, 0, 1, {292, 423, 521, 579, 602, 616}},
		{CONFIG_ATTN_FA3, 1, 0, {316, 424, 501, 542, 559, 561}},
		{CONFIG_ATTN_CUDNN, 0, 0, {497, 574, 617, 609, 600, 595}},
		{CONFIG_ATTN_CUDNN, 0, 1, {315, 410, 484, 518, 529, 539}},
		{CONFIG_ATTN_CUDNN, 1, 0, {305, 408, 465, 499, 518, 516}},
	};
	config_platform p = shipped("dgx-h100");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int j = 0; j < 6; j++) {
			double S = 512 << j;
			double got = tflops(&p, bench_shape(cases[i].k, S, cases[i].bwd, cases[i].causal));
			double want = cases[i].bars[j];
			double tol = (j == 0 || j == 5) ? 1e-6 : 0.08;
			ck_assert_msg(fabs(got - want) <= tol * want, "%s bwd=%d causal=%d S=%.0f: %.1f vs published %.0f",
				      config_attn_kernel_names[cases[i].k], cases[i].bwd, cases[i].causal, S, got, want);
		}
}
END_TEST

START_TEST(attention_monotone_in_length_where_the_source_is)
{
	/* FlashAttention-2 and -3 rise with length in every published bar series (the cuDNN
	 * forward without mask peaks at 2K and is left out); so must the model, on both GPUs
	 * and for every head dim it knows. */
	const char *names[] = {"a100-2x4-ib400", "dgx-h100"};
	for (int n = 0; n < 2; n++) {
		config_platform p = shipped(names[n]);
		for (int k = 0; k < 2; k++) {
			config_attn_kernel kern = k ? CONFIG_ATTN_FA3 : CONFIG_ATTN_FA2;
			if (config_attn_kernel_unusable(&p, kern))
				continue;
			for (int hd = 64; hd <= 256; hd *= 2)
				for (int bwd = 0; bwd < 2; bwd++)
					for (int causal = 0; causal < 2; causal++) {
						double last = 0;
						for (double S = 256; S <= 131072; S *= 2) {
							engine_attn_shape s = bench_shape(kern, S, bwd, causal);
							s.head_dim = hd;
							s.heads = 2048.0 / hd;
							double r = engine_attention_rate(&p, &s);
							ck_assert_msg(r >= last, "%s hd %d bwd %d causal %d: %.0f < %.0f at S=%.0f",
								      names[n], hd, bwd, causal, r, last, S);
							last = r;
						}
					}
		}
	}
}
END_TEST

START_TEST(attention_backward_slower_than_forward)
{
	/* Published FlashAttention-2: backward below forward at every bar (H100: 214 < 309 ...
	 * 322 < 370; A100: 63% vs 73% of peak). Same for FA3 and with a causal mask. */
	const char *names[] = {"a100-2x4-ib400", "dgx-h100"};
	for (int n = 0; n < 2; n++) {
		config_platform p = shipped(names[n]);
		for (int causal = 0; causal < 2; causal++)
			for (double S = 512; S <= 65536; S *= 2) {
				double f = tflops(&p, bench_shape(CONFIG_ATTN_FA2, S, 0, causal));
				double b = tflops(&p, bench_shape(CONFIG_ATTN_FA2, S, 1, causal));
				ck_assert_msg(b < f, "%s S=%.0f causal=%d: bwd %.0f >= fwd %.0f", names[n], S, causal, b, f);
			}
	}
	/* A100 long-sequence rates: 73% and 63% of 312 TFLOP/s (arXiv 2307.08691), reached at
	 * 16K with full waves (2048 blocks on 108 SMs: 2048/2052 of a wave short). */
	config_platform a = shipped("a100-2x4-ib400");
	engine_attn_shape s = bench_shape(CONFIG_ATTN_FA2, 16384, 0, 0);
	ck_assert_close(tflops(&a, s), 0.73 * 312, 1e-9);
	s.bwd = 1;
	ck_assert_close(tflops(&a, s), 0.63 * 312, 1e-9);
}
END_TEST

START_TEST(attention_triton_computes_the_masked_half)
{
	/* flash-attn-triton (engine/compute.c: flash-attention issue #142, the Triton kernel as
	 * long with a causal mask as without) is FlashAttention-2's non-causal curve on the same
	 * GPU: without a mask the two rates are equal; with one, the op's FLOPs count the
	 * unmasked half while the kernel does the whole S^2, so its rate is half the dense one,
	 * i.e. below FlashAttention-2's causal rate by causal / (dense / 2): on the H100 bars,
	 * 16K forward, 335 causal against 370 / 2 = 185. Both GPUs, both directions, 1K-64K. */
	const char *names[] = {"a100-2x4-ib400", "dgx-h100"};
	for (int n = 0; n < 2; n++) {
		config_platform p = shipped(names[n]);
		ck_assert_ptr_null(config_attn_kernel_unusable(&p, CONFIG_ATTN_TRITON));
		for (int bwd = 0; bwd < 2; bwd++)
			for (double S = 1024; S <= 65536; S *= 4) {
				double dense = tflops(&p, bench_shape(CONFIG_ATTN_FA2, S, bwd, 0));
				ck_assert_double_eq_tol(tflops(&p, bench_shape(CONFIG_ATTN_TRITON, S, bwd, 0)), dense, 1e-9);
				ck_assert_double_eq_tol(tflops(&p, bench_shape(CONFIG_ATTN_TRITON, S, bwd, 1)), 0.5 * dense,
							1e-9);
				ck_assert_double_lt(tflops(&p, bench_shape(CONFIG_ATTN_TRITON, S, bwd, 1)),
						    tflops(&p, bench_shape(CONFIG_ATTN_FA2, S, bwd, 1)));
			}
	}
	config_platform h = shipped("dgx-h100");
	ck_assert_double_eq_tol(tflops(&h, bench_shape(CONFIG_ATTN_TRITON, 16384, 0, 1)), 370.0 / 2, 1e-6);
}
END_TEST

START_TEST(attention_triton_pads_the_head_dim)
{
	/* flash_attn_triton.py runs a head dim d as BLOCK_HEADDIM = max(next_power_of_2(d), 16)
	 * columns, the ones past d loaded as zeros and multiplied all the same: d = 96 and 80
	 * take the time of 128 and d = 40 that of 64. The op counts d, so per counted FLOP the
	 * rate is the padded dim's times 96/128 = 0.75, 80/128 = 0.625 and 40/64 = 0.625, on
	 * both GPUs, both directions, with and without the mask. Heads and sequences are held,
	 * so the waves are the same. A power of two is unchanged: at 64 the Triton rate is
	 * FlashAttention-2's dense one, as at 128 (attention_triton_computes_the_masked_half). */
	const char *names[] = {"a100-2x4-ib400", "dgx-h100"};
	const int hd[] = {96, 80, 40};
	const int padded[] = {128, 128, 64};
	for (int n = 0; n < 2; n++) {
		config_platform p = shipped(names[n]);
		for (int bwd = 0; bwd < 2; bwd++)
			for (int causal = 0; causal < 2; causal++)
				for (int i = 0; i < 3; i++) {
					engine_attn_shape s = bench_shape(CONFIG_ATTN_TRITON, 8192, bwd, causal);
					engine_attn_shape full = s;
					s.head_dim = hd[i];
					full.head_dim = padded[i];
					ck_assert_close(tflops(&p, s) / tflops(&p, full), (double)hd[i] / padded[i], 1e-12);
				}
		engine_attn_shape t = bench_shape(CONFIG_ATTN_TRITON, 8192, 0, 0), f = bench_shape(CONFIG_ATTN_FA2, 8192, 0, 0);
		t.head_dim = f.head_dim = 64;
		ck_assert_close(tflops(&p, t), tflops(&p, f), 1e-12);
	}
}
END_TEST

START_TEST(attention_wave_quantization_by_hand)
{
	/* 132 SMs. One 128-token query tile per sequence and head: 132 blocks fill one wave,
	 * 133 blocks need two waves of which the second holds one block: 133 / 264 of the
	 * rate per block. */
	config_platform p = shipped("dgx-h100");
	engine_attn_shape s = {.kernel = CONFIG_ATTN_FA2, .seq = 128, .head_dim = 128, .heads = 132, .seqs = 1};
	double full = engine_attention_rate(&p, &s);
	s.heads = 133;
	ck_assert_close(engine_attention_rate(&p, &s) / full, 133.0 / 264.0, 1e-12);
	ck_assert_double_eq(engine_attention_blocks(16384, 4, 2), 128 * 4 * 2);
}
END_TEST

START_TEST(attention_scalar_override_and_kernel_choice)
{
	config_platform p = shipped("dgx-h100");
	engine_attn_shape s = bench_shape(CONFIG_ATTN_FA2, 8192, 0, 1);
	double fa2 = engine_attention_eff(&p, &s);
	s.kernel = CONFIG_ATTN_FA3;
	ck_assert(engine_attention_eff(&p, &s) > 1.5 * fa2); /* FA3 602 vs FA2 333 at 8K causal */
	p.eff.attention = 0.42; /* the scalar replaces every curve */
	ck_assert_double_eq(engine_attention_eff(&p, &s), 0.42);
	/* the op path: attention op time = FLOPs / (peak x efficiency) with the op's shape */
	p.eff.attention = 0;
	workload_op op = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_ATTENTION, .phase = WL_PHASE_FWD, .flops = 1e12};
	op.shape.attn.seq = 8192;
	op.shape.attn.head_dim = 128;
	op.shape.attn.heads = 16;
	op.shape.attn.seqs = 2;
	op.shape.attn.causal = 1;
	op.shape.attn.kernel = CONFIG_ATTN_FA2;
	s = engine_attn_shape_of(&op);
	ck_assert_close(engine_compute_time(&p, &op), 1e12 / engine_attention_rate(&p, &s), 1e-12);
}
END_TEST

START_TEST(attention_points_interpolate_log_linearly)
{
	/* cuDNN fwd causal hd 128 measured at 2K = 400 and 8K = 600 TFLOP/s: 4K sits halfway in
	 * log(seq): 500; beyond the ends the rate is held. Shapes with full waves (16 heads x
	 * 16384/S sequences x S/128 tiles = 2048 blocks on 128 SMs = 16 waves). */
	config_platform p = shipped("dgx-h100");
	p.gpu.sms = 128;
	p.n_attn_points = 2;
	p.attn_points[0] = (config_attn_point){.kernel = CONFIG_ATTN_CUDNN, .causal = 1, .head_dim = 128, .seq = 2048,
					       .flops = 400e12};
	p.attn_points[1] = (config_attn_point){.kernel = CONFIG_ATTN_CUDNN, .causal = 1, .head_dim = 128, .seq = 8192,
					       .flops = 600e12};
	ck_assert_close(tflops(&p, bench_shape(CONFIG_ATTN_CUDNN, 4096, 0, 1)), 500, 1e-12);
	ck_assert_close(tflops(&p, bench_shape(CONFIG_ATTN_CUDNN, 1024, 0, 1)), 400, 1e-12);
	ck_assert_close(tflops(&p, bench_shape(CONFIG_ATTN_CUDNN, 16384, 0, 1)), 600, 1e-12);
	/* other directions keep the published curve */
	double bwd = tflops(&p, bench_shape(CONFIG_ATTN_CUDNN, 4096, 1, 1));
	p.n_attn_points = 0;
	ck_assert_double_eq(bwd, tflops(&p, bench_shape(CONFIG_ATTN_CUDNN, 4096, 1, 1)));
}
END_TEST

/* ----------------------------------------------------------------- GEMM --- */
START_TEST(gemm_tile_and_wave_quantization_by_hand)
{
	config_platform p = shipped("dgx-h100"); /* 132 SMs, plateau 0.81 */
	/* m = 128, n = 132 x 128: 132 tiles of 128x128, one full wave: no loss. */
	ck_assert_close(engine_gemm_shape_eff(&p, 128, 132 * 128, 4096), 1.0, 1e-12);
	/* n = 133 x 128: 133 tiles (128x128), two waves, 133/264. 256x128 tiles waste half of
	 * each (m = 128); 128x256 tiles: 67 tiles of which the last is half empty, one wave of
	 * 67 on 132 SMs: 133·128/(67·256) x 67/132 = 133/264 as well. */
	ck_assert_close(engine_gemm_shape_eff(&p, 128, 133 * 128, 4096), 133.0 / 264.0, 1e-12);
	ck_assert_close(engine_gemm_eff(&p, 128, 133 * 128, 4096), 0.81 * 133.0 / 264.0, 1e-12);
}
END_TEST

START_TEST(gemm_large_vs_small_shape)
{
	config_platform p = shipped("a100-2x4-ib400"); /* 108 SMs, 1555 GB/s, memory 0.80 */
	/* 4096 x 14336 x 4096: 32 x 56 = 1792 tiles of 128x256 (or 256x128) in 17 waves of 108,
	 * 1792/1836; 128x128: 3584 tiles in 34 waves, 3584/3672, the same share with a smaller
	 * fill, so it is the plan. */
	ck_assert_close(engine_gemm_shape_eff(&p, 4096, 14336, 4096), 1792.0 / 1836.0, 1e-12);
	/* 512 x 128 x 4096 (536.9 MFLOP, 2.0009 us at the plateau 312e12 x 0.86): 4 tiles of
	 * 128x128; split s (s <= min(108/4, 4096/256) = 16) keeps 4s/108, so the main loop takes
	 * 2.0009 x 27/s us, while HBM moves A, B and C (5373952 B) plus the fp32 partials
	 * (8 x s x 512 x 128 = 524288·s B) at 1244 GB/s: 4.320 + 0.4215·s us. The fill (98304 B
	 * per SM) does not depend on s. s = 8: max(6.753, 7.692) = 7.692; s = 7: max(7.718, 7.270)
	 * = 7.718; s = 9: max(6.002, 8.113): s = 8, 32/108. (256x128 and 128x256 tiles carry a
	 * 163840 B fill, 5.7 us more, and no better main loop.) */
	ck_assert_close(engine_gemm_shape_eff(&p, 512, 128, 4096), 32.0 / 108.0, 1e-12);
	double bw = 1555e9 * 0.80, fill = 98304.0 * 108 / bw;
	ck_assert_close(engine_gemm_time(&p, 512, 128, 4096), fill + (5373952.0 + 8 * 524288.0) / bw, 1e-12);
	/* a shapeless op keeps the plateau */
	workload_op op = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_GEMM, .flops = 1e12};
	ck_assert_close(engine_compute_time(&p, &op), 1e12 / (312e12 * 0.86), 1e-12);
}
END_TEST

START_TEST(gemm_backward_is_two_gradient_gemms)
{
	/* m = 512 tokens, n = 128 out, k = 4096 in; backward FLOPs 4·m·n·k split in halves of
	 * 536.9 MFLOP (2.0009 us at the plateau):
	 * dX = dY[512x128]·W[128x4096]: output 512 x 4096, K = 128 (too shallow to split). 128x128:
	 * 128 tiles in 2 waves (128/216): main loop 2.0009 x 216/128 = 3.377 us, HBM 2 x (512·128 +
	 * 128·4096 + 512·4096) = 5373952 B at 1244 GB/s = 4.320 us, fill 98304 B per SM at 1244/108
	 * GB/s = 8.534 us: 12.854 us. 256x128 and 128x256 (64 tiles, 64/108: the same 3.377 us)
	 * carry a 163840 B fill (14.22 us): 128x128, memory-bound.
	 * dW = dY^T[128x512]·X[512x4096]: output 128 x 4096, 32 tiles of 128x128; split 1 (32/108:
	 * 6.753 us, HBM 5373952 B: 4.320 us) + fill 8.534 = 15.287 us; split 2 (64/108: 3.377 us but
	 * 8388608 B of fp32 partials: 11.06 us of HBM) 19.6 us; 128x256 (16 tiles, split 2 for
	 * 32/108 as well, with a 14.22 us fill and the partials): 128x128 unsplit, compute-bound. */
	config_platform p = shipped("a100-2x4-ib400");
	workload_op op = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_GEMM, .phase = WL_PHASE_BWD,
			  .flops = 4.0 * 512 * 128 * 4096};
	op.shape.gemm.m = 512;
	op.shape.gemm.n = 128;
	op.shape.gemm.k = 4096;
	double bw = 1555e9 * 0.80, fill = 98304.0 * 108 / bw;
	double dx = fill + 5373952.0 / bw, dw = fill + 0.5 * op.flops / (312e12 * 0.86 * 32.0 / 108.0);
	ck_assert_close(engine_compute_time(&p, &op), dx + dw, 1e-12);
	ck_assert_close(engine_gemm_shape_eff(&p, 512, 4096, 128), 128.0 / 216.0, 1e-12);
	ck_assert_close(engine_gemm_shape_eff(&p, 128, 4096, 512), 32.0 / 108.0, 1e-12);
}
END_TEST

START_TEST(gemm_pipeline_fill_by_hand)
{
	config_platform p = shipped("dgx-h100"); /* 132 SMs, 3350 GB/s, efficiency.memory 0.80 */
	/* 1536 x 1408 x 4096: 12 x 11 = 132 tiles of 128x128, one full wave (1.0); 256x128: 66
	 * tiles, split 2 for a full wave with a larger fill and fp32 partials; 128x256: 72 tiles
	 * with the last column half empty. Main loop 2·1536·1408·4096 / (989e12 x 0.81) = 22.12 us,
	 * HBM 2 x (1536·4096 + 4096·1408 + 1536·1408) = 28442624 B: 10.61 us, compute-bound. Fill
	 * of a 128x128 tile: two 64-deep stages of A and B (128 + 128) x 128 and the 128 x 128
	 * output, bf16: 2 x (32768 + 16384) = 98304 B per SM at 3350e9 x 0.8 / 132 B/s: 4.84 us. */
	double bw = 3350e9 * 0.80, fill = 98304.0 * 132 / bw;
	ck_assert_close(engine_gemm_fill_time(&p, 1536, 1408, 4096), fill, 1e-12);
	workload_op op = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_GEMM, .flops = 2.0 * 1536 * 1408 * 4096};
	op.shape.gemm.m = 1536;
	op.shape.gemm.n = 1408;
	op.shape.gemm.k = 4096;
	ck_assert_close(engine_compute_time(&p, &op), op.flops / (989e12 * 0.81) + fill, 1e-12);
	/* the fill does not grow with K: a GEMM 4x deeper adds 4x the main loop, not the fill */
	op.shape.gemm.k = 4 * 4096;
	op.flops *= 4;
	ck_assert_close(engine_compute_time(&p, &op), op.flops / (989e12 * 0.81) + fill, 1e-12);
	/* K = 64, shallower than the two-stage prologue: the CTA loads all of its K first,
	 * 2 x (64 x 256 + 16384) = 65536 B per SM */
	ck_assert_close(engine_gemm_fill_time(&p, 1536, 1408, 64), 65536.0 * 132 / bw, 1e-12);
	/* a calibration's measured efficiency.gemm holds the whole kernel: no fill on top */
	p.eff.gemm_measured = true;
	ck_assert_double_eq(engine_gemm_fill_time(&p, 1536, 1408, 4096), 0);
}
END_TEST

START_TEST(gemm_small_k_by_hand)
{
	/* xla-h100-gemm-1024x2048x256 (bench/corpus/openxla-matmul-table.yaml: 139.5 TFLOP/s).
	 * 128x128: 8 x 16 = 128 tiles, one wave on 132 SMs (128/132); K = 256 is too shallow to
	 * split (256/256 = 1 split at most) and only two stages deeper than the prologue. Main
	 * loop 1.0737e9 / (801.09e12 x 128/132) = 1.382 us; HBM 2 x (1024·256 + 256·2048 +
	 * 1024·2048) = 5767168 B at 2680 GB/s = 2.152 us; fill 98304 B per SM at 2680/132 GB/s =
	 * 4.842 us: 6.994 us, 153.5 TFLOP/s, 0.155 of peak (0.19 of the plateau). 256x128 or 128x256:
	 * 64 tiles (64/132: 2.76 us) and a 163840 B fill (8.07 us): slower. */
	config_platform p = shipped("dgx-h100");
	double bw = 3350e9 * 0.80;
	double t = 98304.0 * 132 / bw + 5767168.0 / bw;
	ck_assert_close(engine_gemm_time(&p, 1024, 2048, 256), t, 1e-12);
	ck_assert_close(engine_gemm_shape_eff(&p, 1024, 2048, 256), 128.0 / 132.0, 1e-12);
	ck_assert(2.0 * 1024 * 2048 * 256 / t / 989e12 < 0.16);
}
END_TEST

START_TEST(gemm_skinny_is_memory_bound_by_hand)
{
	/* 128 x 16896 x 4096 on H100 (one row of 132 tiles of 128x128, a full wave: 1.0). B alone is
	 * 4096 x 16896 bf16 = 138 MB for 128 rows of output: HBM 2 x (128·4096 + 4096·16896 +
	 * 128·16896) = 143785984 B at 2680 GB/s = 53.65 us against a 22.12 us main loop. Every
	 * candidate moves the same bytes (no split: a split adds partials), so the smallest fill,
	 * 128x128's 98304 B (4.84 us), is the plan. */
	config_platform p = shipped("dgx-h100");
	double bw = 3350e9 * 0.80;
	ck_assert_close(engine_gemm_time(&p, 128, 132 * 128, 4096), 98304.0 * 132 / bw + 143785984.0 / bw, 1e-12);
	ck_assert_close(engine_gemm_shape_eff(&p, 128, 132 * 128, 4096), 1.0, 1e-12);
}
END_TEST

/* Efficiency never falls as K grows at fixed m, n (every (m, n) of OpenXLA's sm_90 table,
 * bench/corpus/openxla-matmul-table.yaml, rises with k = 256..4096), and never exceeds the
 * plateau: over K = 1..2^17 on both GPU generations, for square, skinny and small shapes. */
START_TEST(gemm_monotone_in_k_and_bounded)
{
	static const char *const plats[] = {"dgx-h100", "dgx-a100", "a100-2x4-ib400"};
	static const double mn[][2] = {{1024, 2048}, {4096, 4096}, {256, 2048}, {802816, 192}, {128, 16896},
				       {1, 1},       {8, 8},       {512, 128},  {100000, 100000}, {3000, 5000}};
	for (size_t i = 0; i < sizeof plats / sizeof plats[0]; i++) {
		config_platform p = shipped(plats[i]);
		double plateau = p.gpu.peak_flops * p.eff.gemm;
		for (size_t j = 0; j < sizeof mn / sizeof mn[0]; j++) {
			double prev = 0;
			for (double k = 1; k <= 131072; k *= 2) {
				double rate = 2.0 * mn[j][0] * mn[j][1] * k / engine_gemm_time(&p, mn[j][0], mn[j][1], k);
				ck_assert_msg(rate >= prev * (1 - 1e-12), "%s %gx%gx%g: %g after %g", plats[i], mn[j][0],
					      mn[j][1], k, rate, prev);
				ck_assert_msg(rate <= plateau, "%s %gx%gx%g above the plateau", plats[i], mn[j][0], mn[j][1], k);
				ck_assert(engine_gemm_shape_eff(&p, mn[j][0], mn[j][1], k) <= 1.0);
				prev = rate;
			}
		}
	}
}
END_TEST

/* ---------------------------------------------------------- op program ---- */
START_TEST(program_carries_shapes_and_layout_copies_by_hand)
{
	/* tiny model (h 64, a 4, g 2, d 16, f 128, V 100), Ulysses over 4 GPUs, S = 64, B = 1:
	 * t = 16 tokens per GPU, 1 head and 1 kv head (g = 2 < P = 4: kv replicated to 4) per
	 * GPU during attention. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 1);
	config_error err;
	ck_assert(workload_check(&m, &p, &job, &err));
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&m, &p, &job, &plan, &err), "%s", err.msg);
	const workload_op *qkv = tu_find(&plan, "layer_fwd", "qkv_proj");
	ck_assert_int_eq(qkv->shape.gemm.m, 16);
	ck_assert_int_eq(qkv->shape.gemm.n, 4 * 16 + 2 * 2 * 16); /* (a + 2g)·d = 128 */
	ck_assert_int_eq(qkv->shape.gemm.k, 64);
	ck_assert_double_eq(qkv->flops, 2.0 * 16 * 128 * 64);
	const workload_op *dn = tu_find(&plan, "layer_bwd", "mlp_down_bwd");
	ck_assert_double_eq(dn->flops, 4.0 * 16 * 64 * 128); /* m = t, n = h, k = f */
	const workload_op *at = tu_find(&plan, "layer_fwd", "attn_fwd");
	ck_assert_int_eq(at->shape.attn.seq, 64);
	ck_assert_int_eq(at->shape.attn.heads, 1);
	ck_assert_int_eq(at->shape.attn.kv_heads, 1);
	ck_assert_int_eq(at->shape.attn.seqs, 1);
	ck_assert_int_eq(at->shape.attn.head_dim, 16);
	ck_assert_int_eq(at->shape.attn.causal, 1);
	ck_assert_int_eq(at->shape.attn.kernel, CONFIG_ATTN_FA2);
	ck_assert_double_eq(at->flops, 2.0 * 64 * 64 * 1 * 16); /* 4·S²·heads·d / 2 */
	ck_assert_double_eq(tu_find(&plan, "layer_bwd", "attn_bwd")->flops, 2.5 * at->flops);
	/* Q buffer t·a·d·2 = 16·4·16·2 = 2048 bytes: each copy reads and writes it (4096 bytes)
	 * in runs of one rank's heads x d x 2 = 32 bytes; K: t·4·16·2 = 2048 bytes as well
	 * (4 replicated kv heads), runs 1·16·2 = 32 bytes. */
	const char *copies[] = {"a2a_q_pack", "a2a_q_unpack", "a2a_k_pack", "a2a_v_unpack", "a2a_o_pack"};
	for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
		const workload_op *c = tu_find(&plan, "layer_fwd", copies[i]);
		ck_assert_ptr_nonnull(c);
		ck_assert_int_eq(c->kernel, WL_KERNEL_COPY);
		ck_assert_double_eq(c->hbm_bytes, 4096);
		ck_assert_double_eq(c->shape.copy.run_bytes, 32);
	}
	ck_assert_double_eq(tu_find(&plan, "layer_fwd", "a2a_q")->bytes, 2048);
	/* a 32-byte run fills a DRAM sector: copies run at the memory efficiency; a 2-byte run
	 * uses 2 of every 32 bytes moved */
	ck_assert_double_eq(engine_copy_eff(&p, 32), p.eff.memory);
	ck_assert_double_eq(engine_copy_eff(&p, 2), p.eff.memory / 16);
	ck_assert_close(engine_compute_time(&p, tu_find(&plan, "layer_fwd", "a2a_q_pack")), 4096 / 1000e9, 1e-12);
	workload_plan_finish(&plan);
	/* the job's kernel wins over the platform's */
	job.attention_kernel = CONFIG_ATTN_CUDNN;
	p.eff.attention = 0.5;
	ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "attn_fwd")->shape.attn.kernel, CONFIG_ATTN_CUDNN);
	workload_plan_finish(&plan);
}
END_TEST

/* ------------------------------------------------------------ bad input --- */
START_TEST(platform_keys_validated)
{
	/* gpu section at line 5, its keys at line 6 on */
	expect_platform_error("    name: B200\n    peak_bf16: 2PFLOPS\n    memory: 180GB\n    hbm_bandwidth: 8TB/s\n", "",
			      ":6:5: gpu 'B200' is not one spsim knows (A100, H100, H200): give its 'sms'");
	expect_platform_error(A100_GPU "    sms: 0\n", "", ":10:10: 'sms' must be an integer from 1 to 100000, got '0'");
	expect_platform_error(A100_GPU "    sms: many\n", "", ":10:10: 'sms' must be an integer");
	expect_platform_error(A100_GPU "    arch: volta\n", "", ":10:11: 'arch' must be one of: ampere, hopper, got 'volta'");
	expect_platform_error(A100_GPU, "  attention_kernel: flash-attn-9\n",
			      ":12:21: 'attention_kernel' must be one of: flash-attn-2, flash-attn-3, cudnn, flash-attn-triton");
	expect_platform_error(A100_GPU, "  attention_kernel: flash-attn-3\n",
			      ":12:21: 'attention_kernel' flash-attn-3 runs only on hopper GPUs");
	expect_platform_error(A100_GPU, "  attention_kernel: cudnn\n",
			      ":12:21: 'attention_kernel' cudnn has no published efficiency curve");
	/* an unknown GPU with both keys loads; a known one takes its datasheet SM count */
	config_platform p = load_text("    name: B200\n    peak_bf16: 2PFLOPS\n    memory: 180GB\n    hbm_bandwidth: 8TB/s\n"
				      "    sms: 148\n    arch: hopper\n",
				      "  attention_kernel: cudnn\n", "");
	ck_assert_int_eq(p.gpu.sms, 148);
	ck_assert_int_eq(p.attention_kernel, CONFIG_ATTN_CUDNN);
	p = load_text(A100_GPU, "", ", attention: 0.6");
	ck_assert_int_eq(p.gpu.sms, 108);
	ck_assert_int_eq(p.gpu.arch, CONFIG_ARCH_AMPERE);
	ck_assert_int_eq(p.attention_kernel, CONFIG_ATTN_FA2); /* the default */
	ck_assert_double_eq(p.eff.attention, 0.6);
	ck_assert_int_eq(shipped("hgx-h200").gpu.sms, 132);
}
END_TEST

static void expect_calibration_error(const char *text, const char *want)
{
	char path[64];
	write_tmp(path, sizeof path, text);
	config_calibration c;
	config_error err;
	ck_assert(!config_load_calibration(path, &c, &err));
	ck_assert_msg(strstr(err.msg, want) && strncmp(err.msg, path, strlen(path)) == 0, "got: %s\nwant: %s",
		      err.msg, want);
	unlink(path);
}

START_TEST(calibration_points_validated_and_round_trip)
{
	expect_calibration_error("calibration:\n  attention_points: 5\n",
				 ":2:21: 'attention_points' must be a non-empty list");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8K, head_dim: 128, "
				 "direction: fwd, tflops: 600, p10: 610}\n",
				 "attention point 1: want p10 <= tflops <= p90, got 610, 600, 600");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8q, head_dim: 128, "
				 "direction: fwd, tflops: 600}\n",
				 ":3:28: 'seq' must be a positive token count such as 8192 or 8K, got '8q'");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8K, head_dim: 128, "
				 "direction: sideways, tflops: 600}\n",
				 ":3:58: 'direction' must be one of: fwd, bwd, got 'sideways'");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8K, head_dim: 128, "
				 "direction: fwd, tflops: -1}\n",
				 ":3:71: 'tflops' must be a number");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8K, head_dim: 128, "
				 "direction: fwd, tflops: 600}\n    - {kernel: cudnn, seq: 8192, head_dim: 128, "
				 "direction: fwd, tflops: 610}\n",
				 ":4:7: attention point 2 repeats point 1");
	expect_calibration_error("calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8K, head_dim: 128, "
				 "direction: fwd, tflops: 600, batch: 2}\n",
				 "unknown key 'batch'");
	/* a good file: written back and read again, the same points; applied to an A100
	 * platform they make cuDNN usable there */
	char path[64], out[64];
	write_tmp(path, sizeof path,
		  "calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 16K, head_dim: 128, direction: bwd, "
		  "causal: false, tflops: 250}\n    - {kernel: cudnn, seq: 2048, head_dim: 128, direction: fwd, "
		  "tflops: 180.5}\n");
	config_calibration c, back;
	config_error err;
	ck_assert_msg(config_load_calibration(path, &c, &err), "%s", err.msg);
	ck_assert_int_eq(c.n_attention_points, 2);
	ck_assert_int_eq(c.attention_points[0].seq, 16384);
	ck_assert_int_eq(c.attention_points[0].direction, CONFIG_DIRECTION_BWD);
	ck_assert_int_eq(c.attention_points[0].causal, 0);
	ck_assert_int_eq(c.attention_points[1].causal, 1); /* the default */
	ck_assert_double_eq(c.attention_points[1].tflops, 180.5);
	ck_assert_double_eq(c.attention_points[1].p10, 180.5); /* p10, p90 default to the median */
	write_tmp(out, sizeof out, "");
	FILE *f = fopen(out, "w");
	ck_assert(config_write_calibration(f, &c));
	fclose(f);
	ck_assert_msg(config_load_calibration(out, &back, &err), "%s", err.msg);
	ck_assert_int_eq(back.n_attention_points, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_str_eq(back.attention_points[i].kernel, c.attention_points[i].kernel);
		ck_assert_int_eq(back.attention_points[i].seq, c.attention_points[i].seq);
		ck_assert_int_eq(back.attention_points[i].causal, c.attention_points[i].causal);
		ck_assert_double_eq(back.attention_points[i].tflops, c.attention_points[i].tflops);
	}
	config_platform a = shipped("a100-2x4-ib400");
	ck_assert_ptr_nonnull(config_attn_kernel_unusable(&a, CONFIG_ATTN_CUDNN));
	/* a family spsim has no curve for (validate's fallback kernel) is read, not applied */
	config_calibration fb = c;
	snprintf(fb.attention_points[0].kernel, sizeof fb.attention_points[0].kernel, "wmma-fallback");
	snprintf(fb.attention_points[1].kernel, sizeof fb.attention_points[1].kernel, "wmma-fallback");
	config_apply_calibration(&a, &fb);
	ck_assert_int_eq(a.n_attn_points, 0);
	config_apply_calibration(&a, &c);
	ck_assert_int_eq(a.n_attn_points, 2);
	ck_assert_int_eq(a.attn_points[0].bwd, 1);
	ck_assert_double_eq(a.attn_points[1].flops, 180.5e12);
	ck_assert_ptr_null(config_attn_kernel_unusable(&a, CONFIG_ATTN_CUDNN));
	/* a measured efficiency.gemm replaces the shape model: the small GEMM that keeps 32/108
	 * of the plateau uncalibrated (gemm_large_vs_small_shape) runs at the measured 0.5 */
	ck_assert_close(engine_gemm_eff(&a, 512, 128, 4096), 0.86 * 32.0 / 108.0, 1e-12);
	config_calibration g = {.has_gemm = true, .gemm = 0.5};
	config_apply_calibration(&a, &g);
	ck_assert_double_eq(engine_gemm_eff(&a, 512, 128, 4096), 0.5);
	unlink(path);
	unlink(out);
}
END_TEST

/* Runs spsim with arguments (a shell word list), returns its exit code; stdout and
 * stderr land in out/err (truncated). */
static int run_spsim(const char *args, char *out, size_t olen, char *err, size_t elen)
{
	const char *exe = getenv("SPSIM_EXE");
	ck_assert_ptr_nonnull(exe);
	char po[] = "/tmp/spsim-kout-XXXXXX", pe[] = "/tmp/spsim-kerr-XXXXXX";
	int fo = mkstemp(po), fe = mkstemp(pe);
	ck_assert(fo >= 0 && fe >= 0);
	close(fo);
	close(fe);
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "'%s' %s >%s 2>%s", exe, args, po, pe);
	int st = system(cmd);
	const char *paths[] = {po, pe};
	char *bufs[] = {out, err};
	size_t lens[] = {olen, elen};
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "r");
		size_t n = f ? fread(bufs[i], 1, lens[i] - 1, f) : 0;
		bufs[i][n] = '\0';
		if (f)
			fclose(f);
		unlink(paths[i]);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(cli_flag_job_key_and_report)
{
	static char out[1 << 16], err[4096];
	const char *base = "run --model llama-3.1-8b --platform dgx-h100 --seq-len 16K --engine analytic";
	char args[512];
	snprintf(args, sizeof args, "%s --attention-kernel flash-attn-9", base);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 2);
	ck_assert_msg(strstr(err, "--attention-kernel expects flash-attn-2, flash-attn-3, cudnn or flash-attn-triton, got 'flash-attn-9'"),
		      "%s", err);
	ck_assert_int_eq(run_spsim("run --model llama-3.1-8b --platform dgx-a100 --seq-len 16K --attention-kernel "
				   "flash-attn-3",
				   out, sizeof out, err, sizeof err),
			 2);
	ck_assert_msg(strstr(err, "--attention-kernel flash-attn-3 runs only on hopper GPUs"), "%s", err);
	/* the report says which kernel ran; FA3 is faster than FA2 on H100 */
	snprintf(args, sizeof args, "%s --format json --attention-kernel flash-attn-3", base);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 0);
	ck_assert_msg(strstr(out, "\"attention_kernel\": \"flash-attn-3\""), "%s", out);
	char *s3 = strstr(out, "\"attention\": ");
	ck_assert_ptr_nonnull(s3);
	double fa3 = atof(s3 + 13);
	snprintf(args, sizeof args, "%s --format json", base);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 0);
	ck_assert_msg(strstr(out, "\"attention_kernel\": \"flash-attn-2\""), "%s", out);
	char *s2 = strstr(out, "\"attention\": ");
	ck_assert_ptr_nonnull(s2);
	ck_assert(atof(s2 + 13) > 1.3 * fa3);
	ck_assert_int_eq(run_spsim(base, out, sizeof out, err, sizeof err), 0);
	ck_assert_msg(strstr(out, "attention flash-attn-2"), "%s", out);
	/* the job file key: validated, and the flag wins over it */
	char job[64];
	write_tmp(job, sizeof job, "job:\n  attention_kernel: cudnn\n");
	snprintf(args, sizeof args, "%s --format json --job %s", base, job);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 0);
	ck_assert_msg(strstr(out, "\"attention_kernel\": \"cudnn\""), "%s", out);
	snprintf(args, sizeof args, "%s --format json --job %s --attention-kernel flash-attn-3", base, job);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 0);
	ck_assert_msg(strstr(out, "\"attention_kernel\": \"flash-attn-3\""), "%s", out);
	unlink(job);
	write_tmp(job, sizeof job, "job:\n  attention_kernel: xformers\n");
	snprintf(args, sizeof args, "%s --job %s", base, job);
	ck_assert_int_eq(run_spsim(args, out, sizeof out, err, sizeof err), 2);
	ck_assert_msg(strstr(err, ":2:21: 'attention_kernel' must be one of: flash-attn-2, flash-attn-3, cudnn, "
				  "flash-attn-triton"),
		      "%s", err);
	unlink(job);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("kernels");
	tcase_add_test(tc, attention_follows_the_published_h100_bars);
	tcase_add_test(tc, attention_monotone_in_length_where_the_source_is);
	tcase_add_test(tc, attention_backward_slower_than_forward);
	tcase_add_test(tc, attention_triton_computes_the_masked_half);
	tcase_add_test(tc, attention_triton_pads_the_head_dim);
	tcase_add_test(tc, attention_wave_quantization_by_hand);
	tcase_add_test(tc, attention_scalar_override_and_kernel_choice);
	tcase_add_test(tc, attention_points_interpolate_log_linearly);
	tcase_add_test(tc, gemm_tile_and_wave_quantization_by_hand);
	tcase_add_test(tc, gemm_large_vs_small_shape);
	tcase_add_test(tc, gemm_backward_is_two_gradient_gemms);
	tcase_add_test(tc, gemm_pipeline_fill_by_hand);
	tcase_add_test(tc, gemm_small_k_by_hand);
	tcase_add_test(tc, gemm_skinny_is_memory_bound_by_hand);
	tcase_add_test(tc, gemm_monotone_in_k_and_bounded);
	tcase_add_test(tc, program_carries_shapes_and_layout_copies_by_hand);
	tcase_add_test(tc, platform_keys_validated);
	tcase_add_test(tc, calibration_points_validated_and_round_trip);
	tcase_add_test(tc, cli_flag_job_key_and_report);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
