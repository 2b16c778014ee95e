/* Memory per GPU. Derivations in docs/model.md "Memory per GPU"; sources:
 * - model states: ZeRO paper (Rajbhandari et al. 2020, arXiv 1910.02054 §3.1): bf16
 *   weights 2, bf16 grads 2, fp32 master + Adam m, v 12 bytes per parameter; stage 1 shards
 *   the 12, stage 2 also the grads, stage 3 everything, over all W ranks (ZeRO shards over
 *   the sequence x data-parallel group).
 * - activations: the tensors autograd saves, counted tensor by tensor after Korthikanti et
 *   al. (arXiv 2205.05198 §4.1) for a Llama block with FlashAttention (no s^2 term), for
 *   two implementations (config_impl):
 *     hf: transformers' modeling_llama.py run eagerly (LlamaRMSNorm, LlamaMLP,
 *         LlamaForCausalLM + loss_utils.ForCausalLMLoss), the setting of DeepSpeed-Ulysses
 *         and of the BASP study; hf-trainer: the same in a loop that frees the model output
 *         before backward (logits_bytes);
 *     megatron: Megatron-Core with Transformer Engine (fused RMSNorm inside
 *         LayerNormLinear, bias_swiglu_impl, fused vocab-parallel cross entropy).
 * - communication buffers: DeepSpeed's reduce/allgather buckets (5e8 elements default)
 *   and the all-to-all send/receive buffers.
 * - reserve: see workload_memory_reserve below. */
#include <math.h>
#include <string.h>

#include "workload/workload.h"

#define BF16 2.0
#define FP32 4.0
#define MIB (1024.0 * 1024.0)

/* Bytes one RMSNorm keeps, output included (the next GEMM saves it), for t tokens:
 *   hf: LlamaRMSNorm upcasts: x.to(float32) is saved by pow(2) and by the multiply with
 *       rsqrt (one fp32 tensor, 4·t·h), rsqrt's result (4·t), the normalised tensor cast
 *       back to bf16 (saved by `weight * x` for the weight gradient, 2·t·h) and the
 *       product (the next Linear's input, 2·t·h): 8·t·h + 4·t.
 *   megatron: the fused kernel saves its bf16 input and rsigma (2·t·h + 4·t); the output
 *       is the GEMM input (2·t·h): 4·t·h + 4·t. */
static double norm_bytes(config_impl impl, double t, double h)
{
	return (config_impl_hf(impl) ? (FP32 + 2.0 * BF16) : 2.0 * BF16) * t * h + FP32 * t;
}

/* Bytes one layer saves for backward without recompute, per rank. With t local tokens:
 *   two RMSNorms                          2 × norm_bytes
 *   Q (head layout), attention output,    3·t·a·d   (same element count in either layout)
 *   and the out-projection input
 *   K and V (head layout, replicated)     2·t·kvr·d
 *   FlashAttention's fp32 log-sum-exp     4·t·a bytes (one per token per local head)
 *   MLP, hf: gate (SiLU's input), SiLU output and up (the multiply's operands), the
 *        product (down_proj's input): 4·t·f
 *   MLP, megatron: gate||up (the fused SwiGLU's input) and the product: 3·t·f
 * Attention and rotary embeddings save the same in both: RoPE's multiplies save only cos
 * and sin (shared by every layer), the all-to-alls nothing.
 * The parts the memory techniques act on (docs/model.md "Memory techniques"):
 *   core: what only the core attention saves, FlashAttention's output (2·t·a·d; the
 *     out-projection keeps its own input) and its log-sum-exp (4·t·a). Selective recompute
 *     checkpoints the core attention (Megatron-Core TransformerBlock/Attention
 *     _checkpointed_attention_forward: tensor_parallel.checkpoint around core_attention,
 *     which keeps its inputs Q, K, V and drops what the kernel saved; Korthikanti et al.,
 *     arXiv 2205.05198 §5). Without FlashAttention that part would be the 5·a·s²·b
 *     softmax/dropout term of their §4; FlashAttention never stores it, so what selective
 *     recompute frees here is the kernel's output and statistics.
 *   mlp: the MLP intermediates (4·t·f or 3·t·f), which TiledMLP does not keep.
 *   input: the layer's input 2·t·h, the checkpoint of full recompute. */
typedef struct layer_saved {
	double total, core, mlp, input;
} layer_saved;

static layer_saved layer_saved_of(const config_model *m, const config_job *job, const workload_layout *l)
{
	double t = (double)l->tokens_per_rank, a = m->heads, hd = m->head_dim;
	double mlp = config_impl_hf(job->impl) ? 4.0 : 3.0;
	double elems = t * (3.0 * a * hd + 2.0 * l->kv_replicated * hd + mlp * m->ffn);
	double lse = FP32 * t * a; /* seqs·S·(a/P) = t·a */
	layer_saved s;
	s.total = BF16 * elems + lse + 2.0 * norm_bytes(job->impl, t, m->hidden);
	s.core = BF16 * t * a * hd + lse;
	s.mlp = BF16 * mlp * t * m->ffn;
	s.input = BF16 * t * m->hidden;
	return s;
}

/* Tokens of one tile when t tokens run in n tiles (torch.chunk: the first tiles hold
 * ceil(t/n)). */
static double tile_tokens(double t, int n)
{
	return n > 1 ? ceil(t / n) : t;
}

double workload_layer_saved_bytes(const config_model *m, const config_job *job, const workload_layout *l)
{
	return job->recompute == CONFIG_RECOMPUTE_FULL ? layer_saved_of(m, job, l).input
						       : layer_saved_of(m, job, l).total;
}

/* Bytes of the logits and the loss at their peak, the start of backward:
 *   hf: lm_head's bf16 logits 2·t·V, kept through backward by the CausalLMOutputWithPast a
 *       hand-written loop holds (`outputs = model(**batch); loss = outputs.loss;
 *       engine.backward(loss)`); the loss upcasts (logits.float()) and runs F.cross_entropy
 *       = log_softmax + nll_loss, whose backward holds the saved fp32 log-softmax, the dense
 *       fp32 gradient from nll_loss and log_softmax's fp32 input gradient at once:
 *       2 + 4 + 4 + 4 = 14·t·V.
 *   hf-trainer: the loop drops the model output before backward, and nothing in autograd
 *       keeps the bf16 logits (the .float() copy saves no input, log_softmax saves its
 *       output, the lm_head Linear its input): 4 + 4 + 4 = 12·t·V. transformers'
 *       Trainer.training_step takes only the loss from compute_loss ("loss =
 *       self.compute_loss(model, inputs, ...)", then accelerator.backward(loss);
 *       src/transformers/trainer.py), and TRL's SFTTrainer.compute_loss (its entropy and
 *       token accuracy run on outputs.logits under no_grad before it returns) and ms-swift's
 *       Seq2SeqTrainer.compute_loss return `(loss, outputs) if return_outputs else loss`;
 *       torchtitan's train.py: "pred = model(input_ids); loss = loss_fn(pred, labels);
 *       del pred" ("need to free to before bwd to avoid peaking memory"). The forward's
 *       own peak, inside the loss (bf16 logits, the fp32 copy and log-softmax's output:
 *       10·t·V; TRL's no-grad metrics after it, bf16 logits and log-softmax output plus
 *       at most two bf16 t·V temporaries, the shifted .contiguous() copy for the accuracy
 *       or the entropy's softmax and product: <= 10·t·V), stays below backward's 12.
 *   megatron: bf16 logits and the fp32 copy the fused cross entropy turns into the softmax
 *       in place and reuses for the gradient (megatron/core/fusions/fused_cross_entropy.py,
 *       tensor_parallel/cross_entropy.py): 2 + 4 = 6·t·V.
 * Tiled (--tile-logits n > 1; Liger's fused linear cross entropy, arXiv 2410.10989 §3.3,
 * and ALST's tiled loss, arXiv 2506.13996): the head and the loss run chunk by chunk and
 * the gradient of the head's input is formed as each chunk goes, so the logits of one
 * tile, ceil(t/n) tokens, are live at a time, plus that input gradient, 2·t·h bf16. The
 * model returns no whole logits then, so the loop kind changes nothing: hf-trainer counts
 * as hf. */
static double logits_bytes(const config_model *m, const config_job *job, const workload_layout *l)
{
	double t = (double)l->tokens_per_rank, tv = tile_tokens(t, job->tile_logits) * m->vocab;
	double grad = job->tile_logits > 1 ? BF16 * t * m->hidden : 0.0;
	if (!config_impl_hf(job->impl))
		return (BF16 + FP32) * tv + grad;
	double kept = job->impl == CONFIG_IMPL_HF || job->tile_logits > 1 ? BF16 : 0.0;
	return (kept + 3.0 * FP32) * tv + grad;
}

/* Of logits_bytes, what stays alive through the whole backward: hf's bf16 logits, which the
 * hand-written loop holds in the model output until engine.backward returns. Everything
 * else of the loss (fp32 copy, log-softmax output, gradients, a tile, the head input's
 * gradient) is freed once autograd has run the loss's and lm_head's backward. */
static double logits_kept_bytes(const config_model *m, const config_job *job, const workload_layout *l)
{
	return job->impl == CONFIG_IMPL_HF && job->tile_logits <= 1 ? BF16 * (double)l->tokens_per_rank * m->vocab
								    : 0.0;
}

/* ZeRO-3 (W > 1) gathers the output layer's weight whole, V·h bf16, for the head; spsim's
 * gathered-parameter count (workload_zero3_gathered_elems) covers a layer's submodules only.
 *   deepspeed: the head's weight is gathered for its forward and stays until its backward,
 *     which follows at once: PartitionedParameterCoordinator.__params_to_release
 *     (runtime/zero/partitioned_param_coordinator.py) keeps every parameter the trace uses
 *     again within max_reuse_distance (1e9 elements by default) and releases the rest;
 *     after the head's backward its next use is the next step. Alive in the loss phase only.
 *   layer (PyTorch FSDP2, torchtitan's fully_shard of the root over the embedding, final norm
 *     and output): the root group is not resharded after forward ("For the root, do not
 *     reshard after forward", torch/distributed/fsdp/_fully_shard/_fsdp_state.py
 *     FSDPState._lazy_init: post_forward_mesh_info = None), so embedding and output stay
 *     gathered from the forward's start to the end of backward: whole step, V·h each (once
 *     when tied). */
typedef struct head_gathered {
	double loss_phase, whole_step;
} head_gathered;

static head_gathered zero3_head_gathered(const config_model *m, const config_job *job, const workload_layout *l)
{
	head_gathered g = {0, 0};
	if (job->zero_stage != 3 || l->world <= 1)
		return g;
	const double vh = BF16 * m->vocab * m->hidden;
	if (job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER)
		g.whole_step = m->tied_embeddings ? vh : 2.0 * vh;
	else
		g.loss_phase = vh;
	return g;
}

/* Derived reserve (each default cited; docs/model.md "Reserve"):
 * - CUDA context: 512 MiB. PyTorch's first CUDA call costs 300-800 MB of device memory
 *   depending on CUDA version and GPU (PyTorch forums, discuss.pytorch.org/t/73021 and
 *   /t/81330); with lazy module loading (CUDA 11.7+, the default from CUDA 12.2) Ampere
 *   and Hopper sit at the low end.
 * - cuBLAS workspace: 32 MiB, PyTorch's default per handle and stream on Hopper and later
 *   (aten/src/ATen/cuda/CublasHandlePool.cpp, ":4096:8"; 8.125 MiB before Hopper).
 * - NCCL: every collective channel keeps one FIFO per protocol for each connection:
 *   Simple 4 MiB (DEFAULT_BUFFSIZE), LL128 4.6875 MiB (120 elems x 640 threads x 8 steps
 *   x 8 B) and LL 512 KiB (8 lines x 512 threads x 8 steps x 16 B): src/init.cc. A ring
 *   keeps two connections per channel (NVIDIA/nccl#986: "Ring ... only has 2 connections
 *   regardless of the scale"); NCCL builds 16 channels or more on NVLink systems (INFO
 *   logs of NVIDIA/nccl#1685 show 32 on H100), we take 16 for the ZeRO/data-parallel
 *   communicator. The all-to-all uses NCCL's p2p path: per peer a send and a receive
 *   Simple buffer on each of 2 channels (NCCL_NCHANNELS_PER_NET_PEER default 2).
 * - fragmentation: PyTorch's caching allocator splits cached blocks and cannot move them;
 *   with ZeRO-3, full recompute or offloading the allocations turn irregular (GMLake names
 *   recomputation and offloading), and a stitching allocator
 *   removes 15% (up to 33%) fragmentation on average over eight LLMs on A100-80GB (GMLake,
 *   arXiv 2401.08156, abstract): at least that share of the caching allocator's memory was
 *   unusable; plain training's allocation pattern is regular and even (ibid., motivation)
 *   and is not charged; nor are selective recompute and tiling, which re-allocate one
 *   tensor of one size per layer (the attention output, one tile) in the same order every
 *   layer. Applied to the dynamic memory (activations, logits,
 *   buffers): model states are allocated once, in flat buffers. */
#define RESERVE_CONTEXT (512.0 * MIB)
#define RESERVE_CUBLAS (32.0 * MIB)
#define NCCL_FIFO_SET (4.0 * MIB + 120.0 * 640 * 8 * 8 + 8.0 * 512 * 8 * 16)
#define NCCL_COLL_CHANNELS 16
#define NCCL_P2P_CHANNELS_PER_PEER 2
#define FRAGMENTATION_IRREGULAR 0.15

workload_reserve workload_memory_reserve(const config_platform *p, const config_job *job, const workload_layout *l,
					 double dynamic)
{
	/* memset, not = {0}: the padding too, so that equal reserves compare equal bytewise */
	workload_reserve r;
	memset(&r, 0, sizeof r);
	if (job->memory_reserve_set || p->has_memory_reserve) {
		r.declared = true;
		r.total = job->memory_reserve_set ? job->memory_reserve : p->memory_reserve;
		return r;
	}
	r.context = RESERVE_CONTEXT;
	r.cublas = RESERVE_CUBLAS;
	if (l->world > 1)
		r.nccl += NCCL_COLL_CHANNELS * 2.0 * NCCL_FIFO_SET;
	/* p2p peers: every other rank of the all-to-all group; ring attention only its two
	 * ring neighbours (one when R = 2). */
	int peers = l->ring > 1 ? (l->ring > 2 ? 2 : 1) + (l->ring_stride > 1 ? l->ring_stride - 1 : 0)
				: l->group_size - 1;
	if (l->ring > 1 && config_job_all_gather(job)) {
		/* all-gather context parallelism: a second collective communicator (the CP
		 * group's rings), no p2p peers */
		r.nccl += NCCL_COLL_CHANNELS * 2.0 * NCCL_FIFO_SET;
		peers = 0;
	}
	if (peers > 0)
		r.nccl += peers * NCCL_P2P_CHANNELS_PER_PEER * 2.0 * 4.0 * MIB;
	if (job->zero_stage == 3 || job->recompute == CONFIG_RECOMPUTE_FULL || job->offload_activations)
		r.fragmentation = FRAGMENTATION_IRREGULAR * dynamic;
	r.total = r.context + r.cublas + r.nccl + r.fragmentation;
	return r;
}

void workload_memory_compute(const config_model *m, const config_platform *p, const config_job *job,
			     const workload_layout *l, workload_memory *out)
{
	const double psi = config_model_params(m), W = l->world;
	const int Z = job->zero_stage;
	memset(out, 0, sizeof *out); /* padding included (results are compared bytewise) */
	out->params = Z == 3 ? BF16 * psi / W : BF16 * psi;
	out->grads = Z >= 2 ? BF16 * psi / W : BF16 * psi;
	out->optimizer = Z >= 1 ? 12.0 * psi / W : 12.0 * psi;
	/* Optimizer offload (ZeRO-Offload, arXiv 2101.06840 §4): the fp32 master weights, Adam
	 * m and v leave the GPU for host memory, beside the fp32 gradient buffer the host step
	 * reads (DeepSpeed's fp32_partitioned_groups_flat[i].grad / single_partition_of_fp32_
	 * groups[i].grad, pinned host tensors): 12 + 4 bytes per parameter of the shard. */
	if (job->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU) {
		out->host_optimizer = (12.0 + FP32) * psi / W;
		out->optimizer = 0;
		/* ZeRO-3 keeps the bf16 gradient partition on the optimizer's device, the host when
		 * offloading: stage3.py DeepSpeedZeroOptimizer_Stage3.__init__ sets self.device to
		 * cpu under offload_optimizer, and _setup_for_real_optimizer allocates
		 * grad_partitions_flat_buffer (sum of partition_numel, gradient_accumulation_dtype,
		 * the model's bf16 under ZeRO) on self.device, pinned; partition_grads copies each
		 * reduce-scattered partition into it and drops the GPU copy. The GPU keeps no
		 * gradient shard: 2 bytes per parameter of the shard move to the host. */
		if (Z == 3) {
			out->host_optimizer += out->grads;
			out->grads = 0;
		}
	}

	const double t = (double)l->tokens_per_rank;
	/* Per layer kept until backward, and the largest transient of one layer's backward
	 * (docs/model.md "Memory techniques"):
	 *   none:      keep total;                   transient 0
	 *   selective: keep total - core;            transient core (the attention re-run)
	 *   full:      keep input;                   transient the whole layer, rebuilt
	 * TiledMLP (--tile-mlp n > 1) keeps no MLP intermediates (it saves only its input, the
	 * norm output counted already) and holds one tile's, mlp·ceil(t/n)/t, while it
	 * recomputes a tile in backward: keep - mlp, and the tile in the transient (with full
	 * recompute the rebuilt layer's MLP is that tile).
	 * Offload (needs full): the checkpoints live in host memory; on the device only the one
	 * being copied out while the next layer computes and the one fetched back for the layer
	 * in backward, 2 × input. */
	const layer_saved s = layer_saved_of(m, job, l);
	const bool tiled = job->tile_mlp > 1;
	const double mlp_tile = tiled ? s.mlp * tile_tokens(t, job->tile_mlp) / t : s.mlp;
	const double mlp_drop = tiled ? s.mlp : 0.0;
	double keep = 0, transient = 0;
	switch (job->recompute) {
	case CONFIG_RECOMPUTE_NONE:
		keep = s.total - mlp_drop;
		transient = tiled ? mlp_tile : 0.0;
		break;
	case CONFIG_RECOMPUTE_SELECTIVE:
		keep = s.total - s.core - mlp_drop;
		transient = fmax(s.core, tiled ? mlp_tile : 0.0);
		break;
	case CONFIG_RECOMPUTE_FULL:
		keep = s.input;
		transient = s.total - s.mlp + mlp_tile;
		break;
	}
	out->host = out->host_optimizer;
	if (job->offload_activations && job->recompute == CONFIG_RECOMPUTE_FULL) {
		out->host += m->layers * keep;
		out->activations = 2.0 * keep + transient;
	} else {
		out->activations = m->layers * keep + transient;
	}
	const double final_norm = norm_bytes(job->impl, t, m->hidden); /* lm_head's input */
	out->activations += final_norm;
	out->logits = logits_bytes(m, job, l);
	/* The loss phase and the transient never coexist. Backward runs the loss, lm_head and
	 * the final norm first (the last layer's output gradient comes only through them), and
	 * PyTorch's engine frees a node's saved tensors as soon as its backward has run
	 * (torch/csrc/autograd/engine.cpp, Engine::evaluate_function: `if
	 * (!graph_task->keep_graph_) fn.release_variables();`, keep_graph_ = retain_graph,
	 * False in a training step); the loss's intermediate gradients die as their consumer
	 * runs. The transient comes later, when autograd reaches a layer: torch.utils.checkpoint
	 * rebuilds a layer inside its backward (CheckpointFunction.backward re-runs
	 * ctx.run_function; the non-reentrant variant on the first unpack of a saved tensor,
	 * _checkpoint_hook), Megatron's selective recompute re-runs the core attention in its
	 * CheckpointFunction.backward, TiledMLP recomputes a tile in its backward (DeepSpeed's
	 * runtime/sequence_parallel/ulysses_sp.py, TiledMLP.backward). So the peak
	 * holds the larger of the two groups, and the smaller is counted twice in activations +
	 * logits: not_concurrent. Megatron's loss likewise (its forward_step returns only the
	 * loss; vocab-parallel cross entropy's saved softmax goes with its backward node). */
	const head_gathered head = zero3_head_gathered(m, job, l);
	const double loss_phase = out->logits - logits_kept_bytes(m, job, l) + final_norm + head.loss_phase;
	out->not_concurrent = fmin(loss_phase, transient);

	/* All-to-all: send and receive buffers of the largest (Q/O) exchange. */
	double a2a = 0;
	if (l->ring > 1) {
		/* Ring attention: the KV block being computed and the one being received (double
		 * buffering), bf16; in backward also the fp32 dK, dV accumulator travelling the
		 * ring and the one received, and the fp32 per-step output / log-sum-exp
		 * correction (TE AttnFuncWithCPAndKVP2P keeps out and softmax_lse per step;
		 * ring-flash-attention's out and lse in fp32): backward's peak. */
		int U = l->ring_stride > 1 ? l->ring_stride : 1; /* USP: tokens t·U, heads /U */
		double kvel = t * U * 2.0 * l->kv_heads_per_rank * m->head_dim;
		a2a = 2.0 * BF16 * kvel + 2.0 * FP32 * kvel + FP32 * t * m->heads * (m->head_dim + 1.0);
		if (config_job_all_gather(job)) {
			/* All-gathered KV (TE AttnFuncWithCPAndKVAllGather.backward), F = the whole
			 * sequence's K and V, R·t·2·g·d bf16: the gathered, reordered K and V (F),
			 * the full-length dK, dV accumulators (F), both chunks' per-step dK, dV over
			 * keys c/2 + S = (R + 1/2)·t tokens ((R + 1/2)/R·F) and the reordered dK, dV
			 * before the reduce-scatter (F) are alive together: (4 + 1/(2R))·F. The
			 * forward holds at most the gathered and the reordered copy, 2·F. */
			double F = l->ring * BF16 * kvel, R = l->ring;
			a2a = (4.0 + 1.0 / (2.0 * R)) * F;
		}
		if (U > 1) /* and USP's all-to-all buffers, as Ulysses' */
			a2a += 2.0 * BF16 * t * m->heads * m->head_dim;
	} else if (l->group_size > 1) {
		a2a = 2.0 * BF16 * t * m->heads * m->head_dim;
	}
	/* ZeRO buckets. DeepSpeed allocates its reduce bucket whole, reduce_bucket_size elements,
	 * before any gradient is known, whenever contiguous_gradients is on (its default:
	 * deepspeed/runtime/zero/config.py DeepSpeedZeroConfig, contiguous_gradients: bool = True;
	 * stage 1/2 also forces it under optimizer offload, "CPU-Offload requires contiguous
	 * gradients"), so the bucket is the configured size, not capped by the model or a layer,
	 * and it exists on one GPU too (neither allocation looks at the data-parallel size):
	 * - stage 3: stage3.py DeepSpeedZeroOptimizer_Stage3._setup_for_real_optimizer, "if
	 *   self.contiguous_gradients:" bucket.buffer = torch.empty(self.reduce_bucket_size,
	 *   dtype=dtype) for each communication dtype (ipg_buckets keyed by comm_dtype; releases
	 *   before the per-dtype buckets took self.dtype);
	 * - stages 1-2: stage_1_and_2.py DeepSpeedZeroOptimizer.setup_buckets (backward in older
	 *   releases): buf_0 = torch.empty(int(self.reduce_bucket_size)) and, "if
	 *   self.overlap_comm", buf_1 ("Use double buffers to avoid data access conflict when
	 *   overlap_comm is enabled").
	 * Counted in the gradient communication precision, stage 3's buffer dtype. Stages 1-2
	 * hold self.dtype (bf16: "Buffer's dtype is the same as the dtype of optimizer") and
	 * flatten each reduction's slices into a copy in the communication dtype
	 * (allreduce_bucket); that transient is not counted apart. Stage 0 (DeepSpeed's engine
	 * all-reduce) flattens the gradients it holds into buckets of at most
	 * reduce_bucket_size: never more than Psi. PyTorch FSDP (zero3_prefetch: layer) has no
	 * reduce bucket: it reduce-scatters one FSDP unit's gradients at a time (FSDP2's
	 * foreach_reduce, torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, sizes
	 * reduce_scatter_input to the unit's parameters), at most a layer's. The all-gather
	 * bucket of stages 1-2 is a step-time flatten of the partitions, at most Psi.
	 * contiguous_gradients: false (DeepSpeed ZeRO-1 to 3; stages 1-2 force it back on under
	 * optimizer offload, config_job_contiguous_gradients) allocates no bucket: the pending
	 * gradients stay in their own bf16 tensors until a bucket's worth, e = min(reduce_bucket,
	 * Psi) elements, is reduced, through a flat copy made at reduction time:
	 * - stage 3: stage3.py __add_grad_to_ipg_bucket copies into the buffer only "if
	 *   self.contiguous_gradients"; __avg_scatter_grads takes [p.grad ...], casts each to the
	 *   communication dtype when it differs (g.to(communication_data_type): a second copy), and
	 *   reduce_scatter_coalesced (runtime/comm/coalesced_collectives.py) torch.cat's the padded
	 *   partitions into tensor_partition_flat_buffer: e bf16 gradients + e·gb flat copy (+ e·gb
	 *   cast copies when gb != 2), all alive at the cat;
	 * - stages 1-2: reduce_ipg_grads calls buffered_reduce_fallback(None, grads_in_ipg_bucket)
	 *   when not contiguous, whose allreduce_bucket flattens the bucket (self.flatten, bf16)
	 *   and casts the flat tensor to the communication dtype when it differs: e·2 + (e·gb when
	 *   gb != 2). Stage 2's gradients are not in out->grads (its partition is) and count here,
	 *   two buckets' worth with overlap_comm ("if self.overlap_comm and
	 *   self.contiguous_gradients is False": previous_reduced_grads keeps the reduced bucket's
	 *   gradients until the next reduction); stage 1's full gradients are out->grads. */
	double gb = workload_grad_comm_bytes(job, l);
	const double rb = job->reduce_bucket_elems;
	const bool contiguous = config_job_contiguous_gradients(job);
	/* a bucket's worth at most Psi (stage 0, contiguous_gradients off); the cast copy */
	const double e = rb < psi ? rb : psi, cast = gb != BF16 ? gb : 0.0;
	double ab = job->allgather_bucket_elems < psi ? job->allgather_bucket_elems : psi;
	double zero = 0;
	if (Z == 3 && job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER) {
		if (l->world > 1) {
			double lp = config_model_layer_params(m);
			zero = BF16 * workload_zero3_gathered_elems(m, job) + gb * (rb < lp ? rb : lp);
		}
	} else if (Z == 3) {
		/* The reduce bucket, plus, over several GPUs, the gathered parameters (DeepSpeed's
		 * current submodule and its prefetch window: workload_zero3_gathered_elems). */
		zero = contiguous ? gb * rb : e * (BF16 + gb + cast);
		if (l->world > 1)
			zero += BF16 * workload_zero3_gathered_elems(m, job);
	} else if (Z >= 1) {
		const double buckets = config_job_zero_overlap(job) ? 2.0 : 1.0;
		zero = contiguous ? buckets * gb * rb : (Z == 2 ? buckets * BF16 * e : 0.0) + e * (BF16 + cast);
		zero += l->world > 1 ? BF16 * ab : 0.0;
	} else if (l->world > 1) {
		zero = gb * e;
	}
	zero += head.loss_phase + head.whole_step; /* ZeRO-3 over W > 1: the head's gathered weight */
	out->buffers = a2a + zero;
	/* The buffers stay summed with both phases: the ZeRO reduce bucket is allocated before
	 * backward starts and held through it (DeepSpeed's stage_1_and_2.py
	 * DeepSpeedZeroOptimizer.backward: ipg_buffer = torch.empty(reduce_bucket_size) before
	 * loss.backward; stage3.py allocates its reduce bucket once, in _setup_for_real_optimizer),
	 * ZeRO-3 gathers the parameters of whichever module's backward runs, in either phase
	 * (the head's weight, loss phase only, is in loss_phase above: zero3_head_gathered);
	 * the all-to-all buffers live while a layer's attention runs, beside the
	 * transient (an upper bound by their size when the loss phase is the larger). */
	const double dynamic = out->activations + out->logits + out->buffers - out->not_concurrent;
	out->reserve_of = workload_memory_reserve(p, job, l, dynamic);
	out->reserve = out->reserve_of.total;
	out->peak = out->params + out->grads + out->optimizer + dynamic + out->reserve;
	out->capacity = p->gpu.memory_bytes;
	out->fits = out->peak <= out->capacity;
	/* Host memory: every GPU of a node offloads into the node's memory. */
	if (out->host > 0) {
		int per_node = l->world < p->gpus_per_node ? l->world : p->gpus_per_node;
		out->host_node = out->host * per_node;
		out->host_capacity = p->host.memory;
		out->host_fits = out->host_node <= out->host_capacity;
		out->fits = out->fits && out->host_fits;
	} else {
		out->host_fits = true;
	}
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
