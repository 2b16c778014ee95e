/* compute: the efficiency models behind engine_compute_time (engine/compute.c). Exposed
 * for tests and reports; engines call engine_compute_time only. */
#ifndef SPSIM_ENGINE_COMPUTE_H
#define SPSIM_ENGINE_COMPUTE_H

#include "engine/engine.h"

/* Share of the GEMM plateau an m x n x k GEMM keeps after tile and wave quantization on
 * the platform's SMs, for the tile and split-K the model picks (1 for a large aligned GEMM);
 * engine_gemm_eff multiplies it by efficiency.gemm. */
double engine_gemm_shape_eff(const config_platform *p, double m, double n, double k);
double engine_gemm_eff(const config_platform *p, double m, double n, double k);
/* Pipeline fill and drain of one m x n x k GEMM kernel, s: the prologue (up to two K stages)
 * of the chosen tile's A and B and its output tile at one SM's share of the HBM bandwidth (0
 * when a calibration measured efficiency.gemm). */
double engine_gemm_fill_time(const config_platform *p, double m, double n, double k);
/* Seconds of one m x n x k GEMM kernel (2·m·n·k FLOPs): fill + max(main loop, HBM traffic). */
double engine_gemm_time(const config_platform *p, double m, double n, double k);

typedef struct engine_attn_shape {
	config_attn_kernel kernel;
	double seq;      /* tokens per sequence (queries = keys) */
	int head_dim;
	double heads;    /* query heads on this GPU */
	double seqs;     /* sequences on this GPU */
	int bwd, causal; /* 0 or 1 */
} engine_attn_shape;
engine_attn_shape engine_attn_shape_of(const workload_op *op);

/* Thread blocks of an attention kernel: 128-token query tiles x heads x sequences. */
double engine_attention_blocks(double seq, double heads, double seqs);
/* Attention FLOP/s of a shape (FlashAttention's FLOP count) from the kernel family's
 * published curve or the calibration's measured points, with wave quantization; 0 when
 * the family has neither on this GPU. */
double engine_attention_rate(const config_platform *p, const engine_attn_shape *s);
/* The same as a share of peak, or efficiency.attention when that override is set. */
double engine_attention_eff(const config_platform *p, const engine_attn_shape *s);
/* HBM efficiency of a layout copy moving contiguous runs of run_bytes (0: contiguous). */
double engine_copy_eff(const config_platform *p, double run_bytes);

#endif
