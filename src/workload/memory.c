/* Memory per GPU. Derivations in docs/model.md "Memory"; sources:
 * - model states: ZeRO paper (Rajbhandari et al. 2020) and DeepSpeed's accounting in
 *   modeling.md: bf16 weights 2, bf16 grads 2, fp32 master + Adam m, v 12 bytes per
 *   parameter; stage 1 shards the 12, stage 2 also the grads, stage 3 everything, over all
 *   W ranks (ZeRO shards over the sequence x data-parallel group).
 * - activations: Korthikanti et al. 2022 ("Reducing Activation Recomputation"), counted
 *   tensor by tensor for a Llama-style block with FlashAttention (no s^2 term).
 * - communication buffers: DeepSpeed's reduce/allgather buckets (5e8 elements default)
 *   and the all-to-all send/receive buffers. */
#include "workload/workload.h"

#define BF16 2.0
#define FP32 4.0


/* Bytes one layer saves for backward without recompute, per rank. With t local tokens:
 *   norm input and output                 2·t·h
 *   Q (head layout), attention output,    3·t·a·d   (same element count in either layout)
 *   and the out-projection input
 *   K and V (head layout, replicated)     2·t·kvr·d
 *   post-attention norm input and output  2·t·h
 *   gate, up, SwiGLU output               3·t·ffn
 * all bf16, plus FlashAttention's fp32 log-sum-exp: one per token per local head. */
static double layer_activation_bytes(const config_model *m, const workload_layout *l)
{
	double t = (double)l->tokens_per_rank, h = m->hidden, a = m->heads, hd = m->head_dim;
	double elems = t * (4.0 * h + 3.0 * a * hd + 2.0 * l->kv_replicated * hd + 3.0 * m->ffn);
	double lse = FP32 * t * a; /* seqs·S·(a/P) = t·a */
	return BF16 * elems + lse;
}

void workload_memory_compute(const config_model *m, const config_platform *p, const config_job *job,
			     const workload_layout *l, workload_memory *out)
{
	const double psi = config_model_params(m), W = l->world;
	const int Z = job->zero_stage;
	*out = (workload_memory){0};
	out->params = Z == 3 ? BF16 * psi / W : BF16 * psi;
	out->grads = Z >= 2 ? BF16 * psi / W : BF16 * psi;
	out->optimizer = Z >= 1 ? 12.0 * psi / W : 12.0 * psi;

	const double t = (double)l->tokens_per_rank;
	const double layer = layer_activation_bytes(m, l);
	if (job->recompute == CONFIG_RECOMPUTE_FULL) {
		/* Only each layer's input is kept; backward rebuilds one layer at a time. */
		out->activations = m->layers * BF16 * t * m->hidden + layer;
	} else {
		out->activations = m->layers * layer;
	}
	out->activations += 2.0 * BF16 * t * m->hidden; /* embedding output, final norm */
	/* bf16 logits plus the fp32 copy the loss keeps (HF/Megatron upcast before softmax). */
	out->logits = t * m->vocab * (BF16 + FP32);

	/* All-to-all: send and receive buffers of the largest (Q/O) exchange. */
	double a2a = 0;
	if (l->group_size > 1)
		a2a = 2.0 * BF16 * t * m->heads * m->head_dim;
	/* ZeRO buckets, capped by what they can hold (DeepSpeed allocates the bucket as it
	 * fills: never more than the parameters). */
	double gb = workload_grad_comm_bytes(job, l);
	double rb = job->reduce_bucket_elems < psi ? job->reduce_bucket_elems : psi;
	double ab = job->allgather_bucket_elems < psi ? job->allgather_bucket_elems : psi;
	double zero = 0;
	if (l->world > 1) {
		if (Z == 3) {
			/* Gathered parameters of the current and the prefetched layer, plus the
			 * reduce-scatter bucket. */
			double lp = config_model_layer_params(m);
			zero = 2.0 * BF16 * lp + gb * (rb < lp ? rb : lp);
		} else {
			zero = gb * rb + (Z >= 1 ? BF16 * ab : 0.0);
		}
	}
	out->buffers = a2a + zero;
	out->peak = out->params + out->grads + out->optimizer + out->activations + out->logits + out->buffers;
	out->capacity = p->gpu.memory_bytes;
	out->fits = out->peak <= out->capacity;
}

long workload_max_seq(const config_model *m, const config_platform *p, const config_job *job, long granule)
{
	config_job j = *job;
	if (granule <= 0)
		granule = 1;
	workload_layout l;
	workload_memory mem;
	long lo = 0, hi = granule;
	/* Grow until it no longer fits (or a hard cap of 2^30 tokens), then bisect. */
	for (;;) {
		j.seq_len = hi;
		if (!workload_layout_make(m, &j, &l, NULL))
			return 0;
		workload_memory_compute(m, p, &j, &l, &mem);
		if (!mem.fits)
			break;
		lo = hi;
		if (hi > (1L << 30) / 2)
			return lo;
		hi *= 2;
	}
	while (hi - lo > granule) {
		long mid = lo + ((hi - lo) / 2 / granule) * granule;
		if (mid <= lo)
			break;
		j.seq_len = mid;
		workload_layout_make(m, &j, &l, NULL);
		workload_memory_compute(m, p, &j, &l, &mem);
		if (mem.fits)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}
