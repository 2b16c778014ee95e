/* FLOPs per step for MFU and HFU (docs/model.md "MFU and HFU").
 *
 * MFU follows the convention papers report (PaLM, arXiv 2204.02311 Appendix B: 6N + the
 * attention term per token, recompute not counted; Korthikanti et al., arXiv 2205.05198
 * §6, the same split into model and hardware FLOPs; backward = 2x forward as in
 * Megatron-LM, arXiv 2104.04473 §5.1, whose 96·B·s·l·h² also counts one recomputed forward,
 * i.e. HFU's accounting), with causal attention counted at half its dense FLOPs (the
 * masked half is never computed; FlashAttention-2, arXiv 2307.08691 §4.1, counts causal
 * FLOPs the same way). PaLM's 12·L·H·Q·T, Megatron-LM's s/6h term and MosaicML's
 * 4·L·d·S count the attention dense; mfu_dense_attention is that count, for comparing
 * with their figures. HFU counts what the program executes: recompute included and
 * FlashAttention's backward at 2.5x its forward (5 GEMMs of the forward's 2 per tile,
 * flash_attn benchmarks' accounting). */
#include "workload/workload.h"

/* Model FLOPs with the causal attention term weighted by `attn_share` (1/2: causal
 * halved; 1: dense, as PaLM and Megatron-LM count it). */
static double model_flops(const config_model *m, const config_job *job, const workload_layout *l, double attn_share)
{
	const double t = (double)l->tokens_per_rank, h = m->hidden, a = m->heads, g = m->kv_heads, d = m->head_dim;
	const double f = m->ffn, S = (double)job->seq_len;
	/* forward GEMMs of one layer on this GPU's t tokens: QKV, output projection, gate and
	 * up, down (2 FLOPs per multiply-add) */
	double gemm = 2.0 * t * h * (a * d + 2.0 * g * d) + 2.0 * t * a * d * h + 2.0 * t * h * 2.0 * f + 2.0 * t * f * h;
	/* attention forward: QK^T and PV, 2·2·S²·d per head and sequence; this GPU holds
	 * heads_per_rank heads of seqs_per_group sequences */
	double attn = (double)l->seqs_per_group * l->heads_per_rank * 4.0 * S * S * d * attn_share;
	double head = 2.0 * t * h * m->vocab; /* logits */
	double fwd = m->layers * (gemm + attn) + head;
	return 3.0 * fwd * job->grad_accum; /* forward + backward (2x) */
}

double workload_model_flops(const config_model *m, const config_job *job, const workload_layout *l)
{
	return model_flops(m, job, l, 0.5);
}

double workload_model_flops_dense(const config_model *m, const config_job *job, const workload_layout *l)
{
	return model_flops(m, job, l, 1.0);
}

double workload_program_flops(const workload_program *prog)
{
	double f = 0;
	for (int i = 0; i < prog->n_micro + prog->n_step; i++) {
		const workload_block *blk = i < prog->n_micro ? &prog->micro[i] : &prog->step[i - prog->n_micro];
		double times = (double)blk->repeat * (i < prog->n_micro ? prog->grad_accum : 1);
		for (int j = 0; j < blk->n_ops; j++)
			if (blk->ops[j].kind == WL_OP_COMPUTE)
				f += blk->ops[j].flops * times;
	}
	return f;
}
