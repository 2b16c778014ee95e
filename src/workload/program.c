/* The per-rank op program of one training step (see workload.h for its schedule).
 *
 * Sources for what is emitted:
 * - attention all-to-alls: DeepSpeed sequence/layer.py (DistributedAttention): Q, K, V
 *   scattered separately, output gathered back; backward mirrors; docs/sources.md [DS-ulysses].
 * - FLOPs: Megatron's per-token accounting for projections and MLP (2·m·n·k per GEMM,
 *   backward = 2x forward); FlashAttention's 4·S²·a·d forward, halved when causal, backward
 *   2.5x forward (docs/sources.md [FA-bench]). Every compute op also carries
 *   its shape (GEMM m x n x k, attention lengths, heads and kernel, copy runs): the engines
 *   time it by shape (engine/compute.c).
 * - ZeRO: DeepSpeed runtime/zero/stage_1_and_2.py and stage3.py as summarised in
 *   docs/sources.md [DS-zero-stages], defaults [DS-zero-config]. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/intmath.h"
#include "workload/workload.h"

#define BF16 2.0
#define FP32 4.0

typedef struct builder {
	const config_model *m;
	const config_job *job;
	const config_platform *p;
	const workload_layout *l;
	workload_block *blocks;
	int n, cap;
	bool oom;
} builder;

static workload_block *block_new(builder *b, const char *name, int repeat, bool barrier, int layer_first,
				 int layer_step)
{
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 8;
		workload_block *nb = realloc(b->blocks, (size_t)cap * sizeof *nb);
		if (!nb) {
			b->oom = true;
			return NULL;
		}
		b->blocks = nb;
		b->cap = cap;
	}
	workload_block *blk = &b->blocks[b->n++];
	*blk = (workload_block){.name = name, .repeat = repeat, .barrier = barrier, .layer_first = layer_first,
				.layer_step = layer_step};
	return blk;
}

/* Op arrays freed by workload_plan_finish, kept for the next plan's blocks: a sweep builds
 * and frees a plan per configuration, and a block's ~10 KB array costs more in malloc and
 * free than filling it. Shared by every thread under a try-lock (a thread that finds it
 * taken allocates as before); at most OPS_POOL arrays are kept, the rest freed. */
enum { OPS_FIRST = 96, OPS_POOL = 64 }; /* OPS_FIRST: a layer block with recompute holds ~80 */
static struct {
	workload_op *ops;
	int cap;
} ops_pool[OPS_POOL];
static int ops_pooled;
static atomic_flag ops_pool_busy = ATOMIC_FLAG_INIT;

static workload_op *ops_take(int *cap)
{
	workload_op *ops = NULL;
	if (!atomic_flag_test_and_set_explicit(&ops_pool_busy, memory_order_acquire)) {
		if (ops_pooled > 0) {
			ops_pooled--;
			ops = ops_pool[ops_pooled].ops;
			*cap = ops_pool[ops_pooled].cap;
		}
		atomic_flag_clear_explicit(&ops_pool_busy, memory_order_release);
	}
	return ops;
}

static void ops_give(workload_op *ops, int cap)
{
	if (ops && cap >= OPS_FIRST && !atomic_flag_test_and_set_explicit(&ops_pool_busy, memory_order_acquire)) {
		bool kept = ops_pooled < OPS_POOL;
		if (kept) {
			ops_pool[ops_pooled].ops = ops;
			ops_pool[ops_pooled++].cap = cap;
		}
		atomic_flag_clear_explicit(&ops_pool_busy, memory_order_release);
		if (kept)
			return;
	}
	free(ops);
}

/* Room for one more op in blk (a pooled array first, else twice the room); false (b->oom)
 * when out of memory. Apart from op_add, which then stays a leaf (most ops find room). */
static __attribute__((noinline)) bool op_room(builder *b, workload_block *blk)
{
	if (!blk->ops && (blk->ops = ops_take(&blk->cap_ops)) != NULL && blk->cap_ops > blk->n_ops)
		return true;
	if (!blk->ops)
		blk->cap_ops = 0;
	int cap = blk->cap_ops ? 2 * blk->cap_ops : OPS_FIRST;
	workload_op *ops = realloc(blk->ops, (size_t)cap * sizeof *ops);
	if (!ops) {
		b->oom = true;
		return false;
	}
	blk->ops = ops;
	blk->cap_ops = cap;
	return true;
}

/* A new op at the end of blk, for the caller to fill in place (*o = (workload_op){...},
 * chunks at least 1: a block's ~100 ops are built per configuration, and building each on
 * the stack to copy it costs as much again); NULL when out of memory. */
static inline workload_op *op_slot(builder *b, workload_block *blk)
{
	if (!blk || (blk->n_ops == blk->cap_ops && !op_room(b, blk)))
		return NULL;
	return &blk->ops[blk->n_ops++];
}

/* Index of op o of blk (from op_slot), -1 for none. */
static inline int op_index(const workload_block *blk, const workload_op *o)
{
	return o ? (int)(o - blk->ops) : -1;
}

/* Appends an op; returns its index, -1 when out of memory. */
static int op_add(builder *b, workload_block *blk, const workload_op *op)
{
	workload_op *o = op_slot(b, blk);
	if (!o)
		return -1;
	*o = *op;
	if (o->chunks < 1)
		o->chunks = 1;
	return op_index(blk, o);
}

/* A GEMM of the forward product [m x k] . [k x n]: 2·m·n·k FLOPs forward, twice that in
 * the backward phase (activation and weight gradients). */
static int gemm(builder *b, workload_block *blk, const char *name, workload_phase ph, double m, double n, double k)
{
	workload_op *o = op_slot(b, blk);
	if (o) {
		*o = (workload_op){.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
				   .phase = ph, .kernel = WL_KERNEL_GEMM,
				   .flops = (ph == WL_PHASE_BWD ? 4.0 : 2.0) * m * n * k, .chunks = 1, .dep = -1};
		o->shape.gemm.m = (int)m;
		o->shape.gemm.n = (int)n;
		o->shape.gemm.k = (int)k;
	}
	return op_index(blk, o);
}

/* A tiled op: its kernels run once per tile of `tiles`, the shape (a GEMM's m) that of
 * one tile, the FLOPs and bytes those of all tiles together; `per_tile` kernels per tile
 * (a backward GEMM op is two). Applies to the op at index i. */
static void tile_op(workload_block *blk, int i, int tiles, int per_tile)
{
	if (!blk || i < 0 || tiles <= 1)
		return;
	workload_op *op = &blk->ops[i];
	op->extra_launches = per_tile * tiles - 1;
	if (op->kernel == WL_KERNEL_GEMM)
		op->shape.gemm.m = (int)ceil((double)op->shape.gemm.m / tiles);
}

static int memop(builder *b, workload_block *blk, const char *name, workload_phase ph, double bytes)
{
	workload_op *o = op_slot(b, blk);
	if (o)
		*o = (workload_op){.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
				   .phase = ph, .kernel = WL_KERNEL_MEMORY, .hbm_bytes = bytes, .chunks = 1, .dep = -1};
	return op_index(blk, o);
}

/* Causal attention over this rank's heads of every sequence it holds during attention:
 * FlashAttention's count, 4·S²·heads·d / 2 per sequence forward, 2.5x that backward. */
static int attn(builder *b, workload_block *blk, const char *name, workload_phase ph)
{
	const workload_layout *l = b->l;
	double S = (double)b->job->seq_len, fwd = l->seqs_per_group * 2.0 * S * S * l->heads_per_rank * b->m->head_dim;
	workload_op op = {.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
			  .phase = ph, .kernel = WL_KERNEL_ATTENTION, .flops = ph == WL_PHASE_BWD ? 2.5 * fwd : fwd,
			  .dep = -1};
	op.shape.attn.seq = (int)b->job->seq_len;
	op.shape.attn.head_dim = b->m->head_dim;
	op.shape.attn.heads = l->heads_per_rank;
	op.shape.attn.kv_heads = l->kv_heads_per_rank;
	op.shape.attn.seqs = l->seqs_per_group;
	op.shape.attn.causal = 1;
	op.shape.attn.kernel = (unsigned char)config_job_attention_kernel(b->job, b->p);
	return op_add(b, blk, &op);
}

workload_alg workload_a2a_alg(config_a2a a)
{
	return a == CONFIG_A2A_PAIRWISE ? WL_ALG_PAIRWISE : a == CONFIG_A2A_HIERARCHICAL ? WL_ALG_HIERARCHICAL : WL_ALG_DIRECT;
}

/* One SP all-to-all of a per-rank buffer of `bytes` whose contiguous runs are `run` bytes
 * (one rank's heads x head_dim), with the layout copies around it. DeepSpeed's
 * single_all_to_all (deepspeed/sequence/layer.py) with batch-first inputs permutes the
 * input into the send layout (pre_all2all_fun: permute(...).contiguous()) and the received
 * buffer out of it (post_all2all: permute(...).contiguous(); the reshape after it is a
 * view): one copy before and one after, each reading and writing the buffer. With one rank
 * in the group the permutes only move a size-1 dimension, which PyTorch treats as already
 * contiguous: no copies, but all_to_all_single is still called (see below). */
static void sp_a2a(builder *b, workload_block *blk, const char *pack, const char *name, const char *unpack,
		   workload_phase ph, double bytes, double run)
{
	/* K = 1 (BASP with B = N): DeepSpeed still calls all_to_all_single on the one-rank
	 * group (deepspeed/sequence/layer.py single_all_to_all has no early return), which
	 * launches NCCL's kernel and copies the buffer in HBM: the engines cost that call
	 * (engine/nccl.c, one-rank group). Its permutes only move size-1 dimensions of one
	 * sequence, which .contiguous() leaves in place: no layout copies. An SP domain of one
	 * GPU (--sp 1, plain data parallelism) has no distributed attention at all: Megatron-
	 * DeepSpeed wraps attention in DistributedAttention only when the sequence-parallel world
	 * size exceeds 1 (megatron/model/transformer.py, ParallelAttention:
	 * enable_ds_sequence_parallel), so it emits nothing. */
	if (b->job->sp <= 1)
		return;
	if (b->l->group_size <= 1) {
		op_add(b, blk, &(workload_op){.name = name, .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM,
					     .stream = WL_STREAM_MAIN, .phase = ph, .coll = WL_COLL_ALLTOALL,
					     .alg = workload_a2a_alg(b->job->a2a), .group = WL_GROUP_SP, .bytes = bytes,
					     .dep = -1});
		return;
	}
	for (int i = 0; i < 3; i++) {
		workload_op *o = op_slot(b, blk);
		if (!o)
			return;
		if (i == 1)
			*o = (workload_op){.name = name, .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM, .stream = WL_STREAM_MAIN,
					   .phase = ph, .coll = WL_COLL_ALLTOALL, .alg = workload_a2a_alg(b->job->a2a),
					   .group = WL_GROUP_SP, .bytes = bytes, .chunks = 1, .dep = -1};
		else {
			*o = (workload_op){.name = i ? unpack : pack, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE,
					   .stream = WL_STREAM_MAIN, .phase = ph, .kernel = WL_KERNEL_COPY,
					   .hbm_bytes = 2.0 * bytes, .chunks = 1, .dep = -1};
			o->shape.copy.run_bytes = run;
		}
	}
}

/* USP's all-to-alls over its U ranks (none for a plain ring, whose group is the ring). */
static void sp_a2a_ring(builder *b, workload_block *blk, const char *pack, const char *name, const char *unpack,
			workload_phase ph, double bytes, double run)
{
	if (b->l->ring_stride > 1)
		sp_a2a(b, blk, pack, name, unpack, ph, bytes, run);
}

/* Optimizer offload (ZeRO-Offload, arXiv 2101.06840; docs/model.md "Memory techniques"),
 * bytes per parameter of the rank's shard:
 * - gradient to the host, 4: DeepSpeed casts the reduced bf16 shard to the master dtype on
 *   the GPU and copies it into the host's fp32 gradient buffer (runtime/zero/stage3.py
 *   _offload_grad_partition_at_boundary: fp32_grad_tensor.copy_(grad_buffer.to(
 *   master_weights_and_grads_dtype), non_blocking=True); stage_1_and_2.py
 *   async_inplace_copy_grad_to_fp32_buffer_from_gpu: src_tensor.float()). Stages 2 and 3
 *   copy it as each bucket is reduced in backward, on the reduction stream (overlapped
 *   with backward when overlap_comm is on: the stage-3 default); stage 1 reduces at the
 *   accumulation boundary and copies after it.
 *   Under gradient accumulation (G micro-steps; offload_grad_share below):
 *   stage 2 accumulates through the GPU every micro-step (stage_1_and_2.py
 *   copy_grads_in_partition -> async_accumulate_grad_in_cpu_via_gpu, skipped when the
 *   first micro-step is the boundary, G = 1): the bf16 partial sum comes back
 *   (dest_buffer.copy_(accumulated_grads_in_cpu[...]) when micro_step_id > 0), the GPU adds
 *   it (grad_accum.data.view(-1).add_(dest_buffer): no CPU-side add, no host DRAM pass), and
 *   the sum goes out again in bf16 except at the boundary, which sends the fp32 copy above:
 *   out 2(G-1) + 4, back 2(G-1), 4G bytes per parameter per step, the program's 4 bytes
 *   every micro-step (the host link times a copy by its bytes whatever its direction, and
 *   these run in sequence on one stream, each waiting for the one before: no duplex overlap
 *   to model).
 *   Stage 3 accumulates in the host too: under offload_optimizer its __init__ sets
 *   self.device to the cpu, and _setup_for_real_optimizer allocates grad_partitions_flat_buffer
 *   (which __param_id_to_grad_partition views) there, pinned, in gradient_accumulation_dtype,
 *   the model's bf16 (engine.py get_data_types: grad_accum_dtype None -> the model dtype under
 *   ZeRO). partition_grads, for each reduce-scattered partition, on the reduce-and-partition
 *   stream: micro_step_id 0: grad_buffer.copy_(grad_partition) (out, 2) then
 *   grad_buffer.to(device) (back, 2: the GPU copy the boundary's norm and fp32 copy read);
 *   later micro-steps: cuda_grad_buffer = grad_buffer.to(device) (back, 2), the add on the
 *   GPU, grad_buffer.copy_(cuda_grad_buffer) (out, 2); every micro-step thus 2 out and 2 back
 *   (OFFLOAD_ACCUM_BYTES each), and at the boundary the fp32 copy above (4): 4G + 4 bytes per
 *   parameter per step, 8 at G = 1. The program issues the two bf16 copies after every
 *   reduce-scatter of every micro-step (exact), and the fp32 copy as follows: without overlap
 *   the step's stream runs it in sequence with everything else, so the program issues it
 *   once, at the boundary (the optimizer block); with overlap it rides the last backward on
 *   the reduction stream, which one program for every micro-step cannot single out: each
 *   micro-step's backward carries 1/G of it (bytes per step exact, hidden alike; G-1 more
 *   copy latencies, on the hidden stream).
 * - CPU Adam, 28: DeepSpeedCPUAdam (csrc/adam/cpu_adam_impl.cpp, Step_AVX) streams the
 *   fp32 parameter, gradient, m and v in (16) and the parameter, m and v out (12); a
 *   memory-bound pass over the host's DRAM, which every GPU's process of the node runs on
 *   its shard at once. The step is exposed: DeepSpeed overlaps it with the next forward
 *   only with delayed parameter update (ZeRO-Offload §5, off by default).
 * - updated parameters back, 2: the bf16 shard on the GPU is overwritten from the fp32
 *   master (stage3.py _reassign_or_swap_out_partitioned_parameters, stage_1_and_2.py step:
 *   bit16_partitions[...].data.copy_(fp32_partition.data)), a blocking copy, which PyTorch
 *   converts to the destination dtype on the CPU before the transfer
 *   (aten/src/ATen/native/cuda/Copy.cu copy_kernel_cuda: "For blocking transfers
 *   conversions are performed on CPU"). */
#define OFFLOAD_GRAD_BYTES 4.0
#define OFFLOAD_ACCUM_BYTES BF16
#define CPU_ADAM_BYTES 28.0
#define OFFLOAD_PARAM_BYTES 2.0

/* The share of a step's gradient copies to the host that one micro-step's backward
 * issues (OFFLOAD_* above): all of each micro-step's for stage 2, 1/G of the boundary's
 * for stage 3 with overlap, none for stage 3 without overlap (the optimizer block copies)
 * or stages 0-1. */
static double offload_grad_share(const config_job *job, bool overlap)
{
	if (job->offload_optimizer != CONFIG_OFFLOAD_OPT_CPU)
		return 0;
	if (job->zero_stage == 2 || (job->zero_stage == 3 && job->grad_accum == 1))
		return 1;
	if (job->zero_stage == 3 && overlap)
		return 1.0 / job->grad_accum;
	return 0;
}

/* A copy of `bytes` between this GPU and host memory on stream hs (activation offload). */
static int host_copy(builder *b, workload_block *blk, const char *name, workload_phase ph, workload_stream hs,
		     double bytes)
{
	return op_add(b, blk, &(workload_op){.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_HOST_COMM, .stream = hs,
					    .phase = ph, .kernel = WL_KERNEL_HOST_COPY, .bytes = bytes, .dep = -1});
}

static int zero_op(builder *b, workload_block *blk, const char *name, workload_phase ph, workload_coll c,
		   workload_stream stream, double bytes, int chunks, int dep, int dep_iter)
{
	return op_add(b, blk, &(workload_op){.name = name, .kind = WL_OP_COMM, .cat = WL_CAT_ZERO_COMM, .stream = stream,
					    .phase = ph, .coll = c, .alg = WL_ALG_RING, .group = WL_GROUP_WORLD,
					    .bytes = bytes, .chunks = chunks, .dep = dep, .dep_iter = dep_iter});
}

/* Sizes every layer op needs, per rank. */
typedef struct layer_dims {
	double t;           /* local tokens */
	double h, qkv_out, ffn; /* hidden, fused q/k/v projection outputs, MLP width */
	double q, kv, o;    /* all-to-all buffers, bytes: Q, each of K and V, O */
	double q_run, kv_run; /* contiguous runs of the layout copies: one rank's heads x d, bytes */
	double h_bytes;     /* one [t, h] bf16 activation */
	double th, tf;      /* elements of one [t, h] and one [t, ffn] activation */
	double tqk;         /* elements of q and k: t·(a + g)·d */
} layer_dims;

static layer_dims dims_of(const config_model *m, const workload_layout *l)
{
	layer_dims d;
	double t = (double)l->tokens_per_rank, h = m->hidden, a = m->heads, g = m->kv_heads, hd = m->head_dim;
	d.t = t;
	d.h = h;
	d.qkv_out = a * hd + 2.0 * g * hd;
	d.ffn = m->ffn;
	d.q = t * a * hd * BF16;
	d.kv = t * l->kv_replicated * hd * BF16;
	d.o = d.q;
	d.q_run = (double)l->heads_per_rank * hd * BF16;
	d.kv_run = (double)l->kv_replicated / (l->group_size > 0 ? l->group_size : 1) * hd * BF16;
	d.h_bytes = t * h * BF16;
	d.th = t * h;
	d.tf = t * m->ffn;
	d.tqk = t * (a + g) * hd;
	return d;
}

/* Ring attention (context parallelism, Megatron-Core cp_comm_type "p2p"): R ranks each
 * hold S/R tokens of every sequence (two chunks i and 2R-1-i with the zigzag split, one
 * chunk with the naive split) and all heads. Forward, as TransformerEngine's
 * AttnFuncWithCPAndKVP2P.forward (transformer_engine/pytorch/attention.py) and
 * ring-flash-attention's ring_flash_attn_forward run it: step k = 0..R-1 computes the local
 * queries against KV block k (its own at k = 0) while the send/recv of block k+1 to the
 * next rank runs on a separate stream; step k+1's transfer is issued once step k's block
 * has been computed (the receive buffer is the one step k read: double buffering), and
 * step k+1's block waits for its transfer. So each step costs max(transfer, block) and,
 * since block 0 is local, no transfer is exposed while every transfer is shorter than its
 * block (docs/model.md "Ring attention").
 * Per-block work (one sequence, c = S/R tokens per rank, FlashAttention's 4·q·k·a·d):
 *   zigzag: step 0 is causal over the rank's two chunks of c/2 (2·c²·a·d); each later step
 *     is either both query chunks (c) against the block's early chunk (c/2 keys) or the
 *     late query chunk (c/2) against the whole block (c keys): 4·c·(c/2)·a·d = 2·c²·a·d as
 *     well. Every rank, every step.
 *   naive: rank r sees blocks of ranks r, r-1, ..., of which r are in its past (full,
 *     4·c²·a·d), one diagonal (causal, 2·c²·a·d) and R-1-r in its future (skipped). The
 *     program is the busiest rank's (r = R-1): one diagonal block, R-1 full ones. */
static void ring_block(builder *b, workload_block *blk, const char *name, workload_phase ph, int k, int dep)
{
	const workload_layout *l = b->l;
	const bool zigzag_off_diagonal = k > 0 && b->job->cp_split != CONFIG_CP_SPLIT_NAIVE;
	const bool full = k > 0 && !zigzag_off_diagonal;
	double c = (double)b->job->seq_len / l->ring;
	double fwd = l->seqs_per_group * (full ? 4.0 : 2.0) * c * c * l->heads_per_rank * b->m->head_dim;
	workload_op op = {.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
			  .phase = ph, .kernel = WL_KERNEL_ATTENTION, .flops = ph == WL_PHASE_BWD ? 2.5 * fwd : fwd,
			  .dep = dep};
	/* The kernel's shape, one flash-attention call per step: c queries against c keys,
	 * causal on the diagonal (step 0) and full otherwise (naive split). A zigzag step
	 * k > 0 on the modelled rank R-1 (k <= rank: zigzag_ring_flash_attn_forward's
	 * forward(q, k0, v0, causal=False); TE's AttnFuncWithCPAndKVP2P likewise for i <= rank)
	 * is all c queries against the block's first c/2 keys without a mask: per query tile
	 * the keys of c/2, i.e. the kernel of two non-causal (c/2 x c/2) sequences. That rank's
	 * short key loop is the slowest of the ring (rank 0's steps run c/2 queries against c
	 * keys: the same FLOPs at a longer key loop). */
	op.shape.attn.seq = (int)(zigzag_off_diagonal ? c / 2 : c);
	op.shape.attn.head_dim = b->m->head_dim;
	op.shape.attn.heads = l->heads_per_rank;
	op.shape.attn.kv_heads = l->kv_heads_per_rank;
	op.shape.attn.seqs = zigzag_off_diagonal ? 2 * l->seqs_per_group : l->seqs_per_group;
	op.shape.attn.causal = k == 0 ? 1 : 0;
	op.shape.attn.kernel = (unsigned char)config_job_attention_kernel(b->job, b->p);
	op_add(b, blk, &op);
}

/* One ring step's send/recv of `bytes` to the next rank (and from the previous one). */
static int ring_p2p(builder *b, workload_block *blk, const char *name, workload_phase ph, double bytes, int dep)
{
	return op_add(b, blk, &(workload_op){.name = name, .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM,
					    .stream = WL_STREAM_RING, .phase = ph, .coll = WL_COLL_SENDRECV,
					    .alg = WL_ALG_DIRECT, .group = WL_GROUP_SP, .bytes = bytes, .dep = dep});
}

/* Elements of one KV block: K and V of the rank's tokens during attention (t·U with
 * USP's all-to-all before the ring) and its kv heads: t·2·g·d for a plain ring. */
static double ring_kv_elems(const builder *b)
{
	const workload_layout *l = b->l;
	int U = l->ring_stride > 1 ? l->ring_stride : 1;
	return (double)l->tokens_per_rank * U * 2.0 * l->kv_heads_per_rank * b->m->head_dim;
}

/* Elements of the ring's output on one rank (its queries' t·U tokens x heads x d) and of
 * one of its K, V blocks; rows of its softmax statistics (tokens x heads). */
static double ring_out_elems(const builder *b)
{
	const workload_layout *l = b->l;
	int U = l->ring_stride > 1 ? l->ring_stride : 1;
	return (double)l->tokens_per_rank * U * l->heads_per_rank * b->m->head_dim;
}

static double ring_lse_rows(const builder *b)
{
	return ring_out_elems(b) / b->m->head_dim;
}

/* The memory-bound passes around ring attention's per-step kernels, HBM bytes, as
 * ring-flash-attention runs them (ring_flash_attn/utils.py, ring_flash_attn/
 * zigzag_ring_flash_attn.py) on the modelled rank R-1, whose every step k >= 1 covers all
 * its queries and (zigzag) the first half of the block's keys. O: output elements, G: one
 * of K, V's elements, rows: lse rows.
 * Forward: update_out_and_lse at step 0 casts the block's bf16 output into the fp32
 *   accumulator (block_out.to(torch.float32): read 2, write 4 per element); each later
 *   step's _update_out_and_lse (torch.jit.script: TorchScript's profiling executor runs its
 *   elementwise chain as one kernel with the TensorExpr GPU fuser, PyTorch's "te" fuser of
 *   benchmarks/fastrnns/fuser.py) reads the
 *   fp32 out and the bf16 block_out and writes out (4 + 2 + 4) and reads lse and block_lse
 *   and writes lse per row (4 + 4 + 4); after the loop out.to(q.dtype) reads 4, writes 2.
 * Backward (zigzag_ring_flash_attn_backward / ring_flash_attn_backward): step 0 casts the
 *   block's dq, dk, dv to fp32 accumulators (2 + 4 each); each later step dq += dq_buffer
 *   (fp32 += bf16: 4 + 2 + 4 per element) and, after d_kv_comm.wait() (the previous step's
 *   dK, dV transfer), adds the block's dk, dv into the received fp32 ones (10 bytes per
 *   element; zigzag adds only the block's first c/2 keys on this rank); after the loop
 *   dq, dk, dv are cast back (4 + 2 each).
 * TransformerEngine's AttnFuncWithCPAndKVP2P (transformer_engine/pytorch/attention/
 * dot_product_attention/context_parallel.py) runs the same passes as separate kernels
 * (flash_attn_fwd_softmax_lse_correction per step, flash_attn_fwd_out_correction per step
 * after the loop, "out in torch.float32") with bf16 dq and dkv buffers in backward
 * (dq_buffer = torch.empty_like(q)): fewer bytes per pass, the same count of passes;
 * the program follows ring-flash-attention's fp32 accumulators, as its dK, dV transfers do. */
typedef struct ring_fix_bytes {
	double fwd_first, fwd_step, fwd_last;        /* cast in, per-step correction, cast out */
	double bwd_first, bwd_dq_step, bwd_dkv_step, bwd_last;
} ring_fix_bytes;

static ring_fix_bytes ring_fix_of(const builder *b)
{
	const double O = ring_out_elems(b), G = ring_kv_elems(b) / 2.0, rows = ring_lse_rows(b);
	const double cast_in = BF16 + FP32, acc = FP32 + BF16 + FP32, cast_out = FP32 + BF16;
	const double dkv_share = b->job->cp_split == CONFIG_CP_SPLIT_NAIVE ? 1.0 : 0.5;
	return (ring_fix_bytes){.fwd_first = cast_in * O,
				.fwd_step = acc * O + 3.0 * FP32 * rows,
				.fwd_last = cast_out * O,
				.bwd_first = cast_in * (O + 2.0 * G),
				.bwd_dq_step = acc * O,
				.bwd_dkv_step = acc * 2.0 * G * dkv_share,
				.bwd_last = cast_out * (O + 2.0 * G)};
}

double workload_ring_fix_bytes(const config_model *m, const config_platform *p, const config_job *job,
			       const workload_layout *l, bool bwd)
{
	builder b = {.m = m, .job = job, .p = p, .l = l};
	if (l->ring <= 1 || config_job_all_gather(job))
		return 0;
	ring_fix_bytes f = ring_fix_of(&b);
	const double steps = l->ring - 1;
	return bwd ? f.bwd_first + steps * (f.bwd_dq_step + f.bwd_dkv_step) + f.bwd_last
		   : f.fwd_first + steps * f.fwd_step + f.fwd_last;
}

/* Forward ring attention after the op at index `after` (the QKV projection). KV block:
 * K and V of the rank's t tokens, t·2·g·d bf16 bytes (independent of the query heads). */
static void ring_forward(builder *b, workload_block *blk, workload_phase ph, int after)
{
	const int R = b->l->ring;
	const double kv = ring_kv_elems(b) * BF16;
	const ring_fix_bytes f = ring_fix_of(b);
	int prev_block = after, prev_comm = -1;
	for (int k = 0; k < R; k++) {
		int comm = k + 1 < R ? ring_p2p(b, blk, "ring_kv", ph, kv, prev_block) : -1;
		prev_block = blk ? blk->n_ops : -1;
		ring_block(b, blk, "ring_attn_fwd", ph, k, prev_comm);
		memop(b, blk, k == 0 ? "ring_out_init" : "ring_out_correction", ph, k == 0 ? f.fwd_first : f.fwd_step);
		prev_comm = comm;
	}
	memop(b, blk, "ring_out_cast", ph, f.fwd_last);
}

/* Backward ring attention after the op at index `after` (the out-projection's backward):
 * KV circulates again (R-1 transfers) and each block's dK, dV travel with it to the next
 * rank, accumulated on the way and back at their owner after R transfers
 * (ring_flash_attn_backward: d_kv_comm.send_recv_kv after every block; TE's
 * AttnFuncWithCPAndKVP2P.backward likewise sends dkv with kv). The dK, dV accumulators
 * are fp32 (ring-flash-attention keeps dk, dv in float32). Returns the last transfer's
 * index: the QKV backward needs the owner's dK, dV. */
static int ring_backward(builder *b, workload_block *blk, int after)
{
	const int R = b->l->ring;
	const double kvel = ring_kv_elems(b);
	const ring_fix_bytes f = ring_fix_of(b);
	int prev_block = after, prev_comm = -1, last = -1;
	for (int k = 0; k < R; k++) {
		int comm = k + 1 < R ? ring_p2p(b, blk, "ring_kv_bwd", WL_PHASE_BWD, kvel * BF16, prev_block) : -1;
		prev_block = blk ? blk->n_ops : -1;
		ring_block(b, blk, "ring_attn_bwd", WL_PHASE_BWD, k, prev_comm);
		int acc;
		if (k == 0) {
			acc = memop(b, blk, "ring_grad_init", WL_PHASE_BWD, f.bwd_first);
		} else {
			memop(b, blk, "ring_dq_accumulate", WL_PHASE_BWD, f.bwd_dq_step);
			/* d_kv_comm.wait(): the received dK, dV first */
			acc = memop(b, blk, "ring_dkv_accumulate", WL_PHASE_BWD, f.bwd_dkv_step);
			if (blk && acc >= 0)
				blk->ops[acc].dep = last;
		}
		last = ring_p2p(b, blk, "ring_dkv", WL_PHASE_BWD, kvel * FP32, acc);
		prev_comm = comm;
	}
	/* d_kv_comm.wait(), then the casts back to bf16 */
	int cast = memop(b, blk, "ring_grad_cast", WL_PHASE_BWD, f.bwd_last);
	if (blk && cast >= 0)
		blk->ops[cast].dep = last;
	return cast;
}

/* Ring attention with all-gathered KV (Megatron-Core cp_comm_type "all_gather"),
 * TransformerEngine's AttnFuncWithCPAndKVAllGather (transformer_engine/pytorch/attention/
 * dot_product_attention/context_parallel.py), on the zigzag split (it requires it: "Sequence
 * length per GPU needs to be divisible by 2"), with Megatron-Core's sbhd layout (the
 * movedim calls are then no-ops). Forward: gather_along_first_dim of K, then of V, over the
 * CP group (synchronous: "KV all-gather between CP ranks is exposed"), an index_select
 * that puts the 2R gathered chunks in sequence order, then one attention call per local
 * chunk: chunk i (i = r and 2R-1-r on rank r) of c/2 queries against keys [0, (i+1)·c/2),
 * bottom-right causal (get_kv_seq_info_after_all_gather). Only the local K and V are
 * saved, so backward gathers them again, runs the two backward calls, adds each chunk's
 * dK, dV into full-length bf16 accumulators (dk[range].add_), reorders them and
 * reduce-scatters dK, then dV (reduce_scatter_along_first_dim).
 * Per rank and sequence (c = S/R), with 4·q·(k - q/2)·a·d forward FLOPs for q queries
 * against k keys bottom-right causal: chunk r does (c²/4)(r + 1/2)·4·a·d, chunk 2R-1-r
 * (c²/4)(2R - r - 1/2)·4·a·d, together 2·R·c²·a·d on every rank: the zigzag ring's
 * total, balanced. The program is rank 0's: chunk 0 (c/2 x c/2, causal) and chunk 2R-1
 * (c/2 queries against all S keys). */
static void ag_block(builder *b, workload_block *blk, const char *name, workload_phase ph, double q, double k)
{
	const workload_layout *l = b->l;
	double fwd = l->seqs_per_group * 4.0 * q * (k - q / 2.0) * l->heads_per_rank * b->m->head_dim;
	workload_op op = {.name = name, .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
			  .phase = ph, .kernel = WL_KERNEL_ATTENTION, .flops = ph == WL_PHASE_BWD ? 2.5 * fwd : fwd,
			  .dep = -1};
	/* The kernel's shape: its key length; the mask covers most tiles only when the
	 * queries are the keys (chunk 0), else the block is nearly full (non-causal curve). */
	op.shape.attn.seq = (int)k;
	op.shape.attn.head_dim = b->m->head_dim;
	op.shape.attn.heads = l->heads_per_rank;
	op.shape.attn.kv_heads = l->kv_heads_per_rank;
	op.shape.attn.seqs = l->seqs_per_group;
	op.shape.attn.causal = k <= q ? 1 : 0;
	op.shape.attn.kernel = (unsigned char)config_job_attention_kernel(b->job, b->p);
	op_add(b, blk, &op);
}

/* A ring collective of the CP group (all-gather or reduce-scatter of one of K, V, dK, dV:
 * the full-length buffer, R·t·g·d·e bytes, nccl-tests' size) on the main stream. */
static void ag_coll(builder *b, workload_block *blk, const char *name, workload_phase ph, workload_coll c, double bytes)
{
	op_add(b, blk, &(workload_op){.name = name, .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM, .stream = WL_STREAM_MAIN,
				     .phase = ph, .coll = c, .alg = WL_ALG_RING, .group = WL_GROUP_SP, .bytes = bytes,
				     .dep = -1});
}

/* Bytes of the gathered K (or V): the whole sequence's, R times the rank's t·g·d·e. */
static double ag_full_bytes(const builder *b)
{
	return b->l->ring * ring_kv_elems(b) / 2.0 * BF16;
}

static void ag_attention(builder *b, workload_block *blk, workload_phase ph)
{
	const bool bwd = ph == WL_PHASE_BWD;
	const double full = ag_full_bytes(b), S = (double)b->job->seq_len, c = S / b->l->ring;
	ag_coll(b, blk, "cp_allgather_k", ph, WL_COLL_ALLGATHER, full);
	ag_coll(b, blk, "cp_allgather_v", ph, WL_COLL_ALLGATHER, full);
	memop(b, blk, "cp_kv_reorder", ph, 2.0 * 2.0 * full); /* index_select: read and write K and V */
	ag_block(b, blk, bwd ? "cp_attn_bwd" : "cp_attn_fwd", ph, c / 2, c / 2);
	ag_block(b, blk, bwd ? "cp_attn_bwd" : "cp_attn_fwd", ph, c / 2, S);
	if (!bwd)
		return;
	/* dk[range].add_(dk_per_step) for both chunks, dK and V: read both, write one, over the
	 * chunks' key ranges (c/2 + S tokens); then the index_select back to rank order */
	memop(b, blk, "cp_dkv_accumulate", ph, 3.0 * 2.0 * full * (c / 2 + S) / S);
	memop(b, blk, "cp_dkv_reorder", ph, 2.0 * 2.0 * full);
	ag_coll(b, blk, "cp_reducescatter_dk", ph, WL_COLL_REDUCESCATTER, full);
	ag_coll(b, blk, "cp_reducescatter_dv", ph, WL_COLL_REDUCESCATTER, full);
}

/* HBM bytes per element of the memory-bound chains around the GEMMs, by implementation.
 * Megatron (impl megatron) runs each chain as one fused kernel that reads its inputs and
 * writes its output once (TE/Apex fused RMSNorm/LayerNorm, bias_swiglu_impl, fused RoPE
 * fused_apply_rotary_pos_emb, fused vocab-parallel cross entropy). Hugging Face eager
 * (impl hf) runs them as separate PyTorch kernels, each reading and writing its tensor;
 * counted from transformers/models/llama/modeling_llama.py:
 * - LlamaRMSNorm.forward, per [t, h] element: to(float32) reads 2 writes 4; pow(2) 4+4;
 *   mean(-1) reads 4 (writes a [t, 1] column); add eps and rsqrt act on the column;
 *   hidden * rsqrt 4+4; to(bf16) 4+2; weight * hidden 2+2: 36 bytes in 8 kernels (fused: 2+2).
 *   Backward (autograd of that chain): weight-mul 2+2 for dx and 2+2+2 for dweight's
 *   product and 2 for its sum; to(fp32) of the gradient 2+4; the rsqrt-mul 4+4 for dx and
 *   8+4 plus 4 for the column's product and sum; mean's expand writes 4; pow's 2·x·g
 *   4+4 and 8+4; the two fp32 gradients added 8+4; to(bf16) 4+2: 84 bytes (fused: read x,
 *   dy, write dx, with a per-row reduction: 2+2+2 plus the saved rstd, counted as 8).
 * - LlamaMLP: act_fn(gate_proj(x)) * up_proj(x): silu 2+2, mul 4+2 = 10 bytes per [t, f]
 *   element (fused: 4+2 = 6); backward: mul's two products 4+2 each, silu_backward 4+2 =
 *   18 (fused: read gate, up, dout, write dgate, dup = 10).
 * - The residual add before the second norm is its own kernel, 4+2 (fused into the
 *   norm: one extra read, 2).
 * - LlamaForCausalLM's loss (ForCausalLMLoss, transformers/loss/loss_utils.py): logits.float()
 *   reads 2 writes 4; cross_entropy = log_softmax 4+4 and nll_loss (reads one logit per
 *   row): 14 bytes per logit. Backward: nll_loss_backward zero-fills 4; log_softmax_backward
 *   reads output and gradient 8, writes 4; the cast back 4+2: 22. The fused cross entropy
 *   reads bf16 logits and writes an fp32 copy it re-reads (2+4+4 = 10) and writes the bf16
 *   gradient from it (4+2 = 6).
 * - RoPE (model position rope), per element of q and k (t·(a + g)·d, applied before the
 *   attention call and its all-to-alls): apply_rotary_pos_emb is q * cos 2+2, rotate_half's
 *   -x2 on half the elements 1+1 and cat 2+2, * sin 2+2, the sum 4+2: 20 bytes in 5
 *   kernels. Backward: g * cos 2+2, g * sin 2+2, the negation on half 1+1, the two slices'
 *   gradients zero-filled and copied into full tensors 2 x (2+1+1), two adds accumulating
 *   the three into dq 2 x (4+2): 30. Fused (Transformer Engine's fused RoPE,
 *   Megatron-Core apply_rotary_pos_emb with apply_rope_fusion): 2+2 each way. ALiBi and
 *   learned positions add nothing here (the bias is inside the attention kernel; the
 *   learned embedding is added with the token embedding). */
typedef struct elementwise_bytes {
	double norm_fwd, norm_bwd; /* per [t, h] element */
	double residual_extra;     /* the residual add before the second norm, per [t, h] element */
	double glu_fwd, glu_bwd;   /* per [t, f] element */
	double loss_fwd, loss_bwd; /* per logit */
	double rope_fwd, rope_bwd; /* per element of q and k; 0 without rotary embeddings */
} elementwise_bytes;

static elementwise_bytes elementwise_of(const config_model *m, const config_job *job)
{
	/* HF's LayerNorm is nn.LayerNorm (one F.layer_norm kernel each way): only its RMSNorm
	 * is decomposed. */
	const bool hf = config_impl_hf(job->impl); /* the loop kind moves no bytes */
	const bool hf_rms = hf && m->norm == CONFIG_NORM_RMSNORM;
	const bool rope = m->position == CONFIG_POSITION_ROPE;
	return (elementwise_bytes){.rope_fwd = !rope ? 0.0 : hf ? 20.0 : 4.0, .rope_bwd = !rope ? 0.0 : hf ? 30.0 : 4.0,
				   .norm_fwd = hf_rms ? 36.0 : 4.0, .norm_bwd = hf_rms ? 84.0 : 8.0,
				   .residual_extra = hf ? 6.0 : 2.0, .glu_fwd = hf ? 10.0 : 6.0,
				   .glu_bwd = hf ? 18.0 : 10.0, .loss_fwd = hf ? 14.0 : 10.0,
				   .loss_bwd = hf ? 22.0 : 6.0};
}

/* The MLP's forward: gate and up fused, SwiGLU, down; with --tile-mlp n each runs once per
 * tile of ceil(t/n) tokens (ALST's TiledMLP, arXiv 2506.13996; DeepSpeed
 * runtime/sequence_parallel/ulysses_sp.py TiledMLP: torch.chunk of the sequence, the MLP
 * per shard): the same FLOPs and bytes, n times the kernels. */
static void mlp_forward(builder *b, workload_block *blk, const layer_dims *d, workload_phase ph)
{
	const elementwise_bytes e = elementwise_of(b->m, b->job);
	const int n = b->job->tile_mlp;
	tile_op(blk, gemm(b, blk, "mlp_gate_up", ph, d->t, 2.0 * d->ffn, d->h), n, 1);
	tile_op(blk, memop(b, blk, "swiglu", ph, e.glu_fwd * d->tf), n, 1); /* gate and up in, product out */
	tile_op(blk, gemm(b, blk, "mlp_down", ph, d->t, d->h, d->ffn), n, 1);
}

/* The sequence-parallel attention section of a layer's forward, from the rotated q, k, v to
 * the output the out-projection reads: the SP all-to-alls and the core attention
 * (Ulysses), the ring's blocks, transfers and corrections (ring attention; USP's
 * all-to-alls around them), or the all-gathered KV (comm=all_gather). Shared by the layer
 * block and workload_sp_attention_plan_make. */
static void sp_attention_forward(builder *b, workload_block *blk, const layer_dims *d, workload_phase ph)
{
	if (b->l->ring > 1) {
		/* USP: Ulysses over U first (heads a/U, tokens t·U), then the ring over R */
		sp_a2a_ring(b, blk, "a2a_q_pack", "a2a_q", "a2a_q_unpack", ph, d->q, d->q_run);
		sp_a2a_ring(b, blk, "a2a_k_pack", "a2a_k", "a2a_k_unpack", ph, d->kv, d->kv_run);
		sp_a2a_ring(b, blk, "a2a_v_pack", "a2a_v", "a2a_v_unpack", ph, d->kv, d->kv_run);
		if (config_job_all_gather(b->job))
			ag_attention(b, blk, ph);
		else
			ring_forward(b, blk, ph, blk ? blk->n_ops - 1 : -1);
		sp_a2a_ring(b, blk, "a2a_o_pack", "a2a_o", "a2a_o_unpack", ph, d->o, d->q_run);
	} else {
		sp_a2a(b, blk, "a2a_q_pack", "a2a_q", "a2a_q_unpack", ph, d->q, d->q_run);
		sp_a2a(b, blk, "a2a_k_pack", "a2a_k", "a2a_k_unpack", ph, d->kv, d->kv_run);
		sp_a2a(b, blk, "a2a_v_pack", "a2a_v", "a2a_v_unpack", ph, d->kv, d->kv_run);
		attn(b, blk, "attn_fwd", ph);
		sp_a2a(b, blk, "a2a_o_pack", "a2a_o", "a2a_o_unpack", ph, d->o, d->q_run);
	}
}

/* GEMM shapes (Megatron's per-token accounting, 2·m·n·k FLOPs): q/k/v fused [t, h] x
 * [h, (a + 2g)·d]; out [t, a·d] x [a·d, h]; gate and up fused [t, h] x [h, 2f]; down
 * [t, f] x [f, h]. */
static void layer_forward(builder *b, workload_block *blk, const layer_dims *d, workload_phase ph)
{
	const double ad = (double)b->m->heads * b->m->head_dim;
	const elementwise_bytes e = elementwise_of(b->m, b->job);
	memop(b, blk, "input_norm", ph, e.norm_fwd * d->th);
	gemm(b, blk, "qkv_proj", ph, d->t, d->qkv_out, d->h);
	if (e.rope_fwd > 0)
		memop(b, blk, "rope", ph, e.rope_fwd * d->tqk);
	sp_attention_forward(b, blk, d, ph);
	gemm(b, blk, "out_proj", ph, d->t, d->h, ad);
	memop(b, blk, "residual_norm", ph, (e.residual_extra + e.norm_fwd) * d->th); /* add residual, normalise */
	mlp_forward(b, blk, d, ph);
	memop(b, blk, "residual_add", ph, 3.0 * d->h_bytes);
}

/* The sequence-parallel attention section of a layer's backward, from dO (the
 * out-projection's backward) to dQ, dK, dV in the layout the QKV projection's backward
 * reads; selective recompute's forward of the core attention included. *dkv: the op whose
 * end returns the ring's dK, dV to their owner (-1 without a p2p ring); *after_ring: the
 * index of the first op after the ring, which waits for it (the caller sets that
 * dependency once the op exists). */
static void sp_attention_backward(builder *b, workload_block *blk, const layer_dims *d, int *dkv, int *after_ring)
{
	const workload_phase ph = WL_PHASE_BWD;
	if (b->l->ring > 1 && config_job_all_gather(b->job)) {
		/* selective recompute: the checkpointed attention's forward again, its KV
		 * gathers included */
		if (b->job->recompute == CONFIG_RECOMPUTE_SELECTIVE)
			ag_attention(b, blk, WL_PHASE_RECOMPUTE);
		ag_attention(b, blk, ph); /* a plain CP group: no all-to-alls around it */
	} else if (b->l->ring > 1) {
		sp_a2a_ring(b, blk, "a2a_do_pack", "a2a_do", "a2a_do_unpack", ph, d->o, d->q_run);
		/* selective recompute: the core attention runs again, its ring included (the
		 * checkpointed function is the whole context-parallel attention) */
		if (b->job->recompute == CONFIG_RECOMPUTE_SELECTIVE)
			ring_forward(b, blk, WL_PHASE_RECOMPUTE, blk ? blk->n_ops - 1 : -1);
		*dkv = ring_backward(b, blk, blk ? blk->n_ops - 1 : -1);
		*after_ring = blk ? blk->n_ops : -1;
		/* USP: the gradients back over U; the first op after the ring waits for the
		 * returned dK, dV (dQ's all-to-all could start earlier: a small
		 * over-serialisation) */
		sp_a2a_ring(b, blk, "a2a_dq_pack", "a2a_dq", "a2a_dq_unpack", ph, d->q, d->q_run);
		sp_a2a_ring(b, blk, "a2a_dk_pack", "a2a_dk", "a2a_dk_unpack", ph, d->kv, d->kv_run);
		sp_a2a_ring(b, blk, "a2a_dv_pack", "a2a_dv", "a2a_dv_unpack", ph, d->kv, d->kv_run);
	} else {
		sp_a2a(b, blk, "a2a_do_pack", "a2a_do", "a2a_do_unpack", ph, d->o, d->q_run);
		/* selective recompute: the core attention's forward again, just before its
		 * backward (Megatron-Core CheckpointFunction.backward re-runs it then); the
		 * all-to-alls are outside the checkpointed function */
		if (b->job->recompute == CONFIG_RECOMPUTE_SELECTIVE)
			attn(b, blk, "attn_fwd", WL_PHASE_RECOMPUTE);
		attn(b, blk, "attn_bwd", ph);
		sp_a2a(b, blk, "a2a_dq_pack", "a2a_dq", "a2a_dq_unpack", ph, d->q, d->q_run);
		sp_a2a(b, blk, "a2a_dk_pack", "a2a_dk", "a2a_dk_unpack", ph, d->kv, d->kv_run);
		sp_a2a(b, blk, "a2a_dv_pack", "a2a_dv", "a2a_dv_unpack", ph, d->kv, d->kv_run);
	}
}

/* The first op after the ring (sp_attention_backward's *after_ring), once emitted, waits
 * for the returned dK, dV (op dkv). */
static void ring_wait_dkv(workload_block *blk, int dkv, int after_ring)
{
	if (blk && after_ring >= 0 && after_ring < blk->n_ops)
		blk->ops[after_ring].dep = dkv;
}

static void layer_backward(builder *b, workload_block *blk, const layer_dims *d)
{
	const workload_phase ph = WL_PHASE_BWD;
	const double ad = (double)b->m->heads * b->m->head_dim;
	const elementwise_bytes e = elementwise_of(b->m, b->job);
	const int n = b->job->tile_mlp;
	/* TiledMLP saves only its input and runs each tile's forward again in its backward
	 * (DeepSpeed TiledMLP.backward; Liger's LigerTiledMLPFunction: "the forward occurs twice
	 * each iteration", thrice with activation checkpointing): one more MLP forward per
	 * layer, whatever the recompute setting. */
	if (n > 1)
		mlp_forward(b, blk, d, WL_PHASE_RECOMPUTE);
	/* Backward of a GEMM = activation gradient + weight gradient = 2x forward FLOPs. */
	tile_op(blk, gemm(b, blk, "mlp_down_bwd", ph, d->t, d->h, d->ffn), n, 2);
	tile_op(blk, memop(b, blk, "swiglu_bwd", ph, e.glu_bwd * d->tf), n, 1); /* gate, up, dout in; dgate, dup out */
	tile_op(blk, gemm(b, blk, "mlp_gate_up_bwd", ph, d->t, 2.0 * d->ffn, d->h), n, 2);
	memop(b, blk, "residual_norm_bwd", ph, e.norm_bwd * d->th);
	gemm(b, blk, "out_proj_bwd", ph, d->t, d->h, ad);
	int dkv = -1, after_ring = -1;
	sp_attention_backward(b, blk, d, &dkv, &after_ring);
	if (e.rope_bwd > 0)
		memop(b, blk, "rope_bwd", ph, e.rope_bwd * d->tqk);
	gemm(b, blk, "qkv_proj_bwd", ph, d->t, d->qkv_out, d->h);
	ring_wait_dkv(blk, dkv, after_ring);
	memop(b, blk, "input_norm_bwd", ph, e.norm_bwd * d->th);
}

/* Gradients are communicated in fp32 when SP > 1 (DeepSpeed default; docs/sources.md [DS-sp-comm]). */
double workload_grad_comm_bytes(const config_job *job, const workload_layout *l)
{
	return config_job_fp32_grad_comm(job, l->sp) ? FP32 : BF16;
}

static int chunks_of(double elems, double bucket)
{
	if (bucket <= 0)
		return 1;
	double c = ceil(elems / bucket);
	return c < 1 ? 1 : util_int_of(c);
}

/* The gradient reduction of `elems` parameters after the block's last op so far, during
 * backward: all-reduce for stage 2, reduce-scatter for stage 3, nothing otherwise (stages
 * 0-1 reduce once per step). Bucketed by reduce_bucket_size. */
static void grad_reduce(builder *b, workload_block *blk, const char *name2, const char *name3, workload_stream zs,
			double elems, double gbytes)
{
	int Z = b->job->zero_stage;
	if ((Z != 2 && Z != 3) || elems <= 0 || !blk)
		return;
	zero_op(b, blk, Z == 2 ? name2 : name3, WL_PHASE_BWD, Z == 2 ? WL_COLL_ALLREDUCE : WL_COLL_REDUCESCATTER, zs,
		elems * gbytes, chunks_of(elems, b->job->reduce_bucket_elems), blk->n_ops - 1, 0);
	/* Optimizer offload (OFFLOAD_* above), on the same stream: ZeRO-3's partition out to
	 * its bf16 accumulation buffer on the host and back, every micro-step; then the reduced
	 * shard to the host's fp32 gradient buffer (offload_grad_share above) */
	const double shard = elems / b->l->world;
	if (Z == 3 && b->job->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU) {
		host_copy(b, blk, "opt_grad_accum_d2h", WL_PHASE_BWD, zs, OFFLOAD_ACCUM_BYTES * shard);
		host_copy(b, blk, "opt_grad_accum_h2d", WL_PHASE_BWD, zs, OFFLOAD_ACCUM_BYTES * shard);
	}
	double share = offload_grad_share(b->job, zs != WL_STREAM_MAIN);
	if (share > 0)
		host_copy(b, blk, "opt_grad_d2h", WL_PHASE_BWD, zs, share * OFFLOAD_GRAD_BYTES * shard);
}

/* ---- ZeRO-3 parameter fetch, DeepSpeed style (docs/model.md "ZeRO-3 parameter fetch") ----
 * DeepSpeed's stage 3 gathers parameters per submodule, in the pre-forward and pre-backward
 * hooks of every module (deepspeed/runtime/zero/parameter_offload.py,
 * pre_sub_module_forward_function / pre_sub_module_backward_function ->
 * PartitionedParameterCoordinator.fetch_sub_module in partitioned_param_coordinator.py):
 *   1. one all_gather_coalesced call for the submodule's parameters not yet available or
 *      in flight (__all_gather_params: one flat all-gather per call);
 *   2. the compute stream waits for the all-gather stream
 *      (get_accelerator().current_stream().wait_stream(self.__allgather_stream)): the
 *      submodule's compute waits for every gather issued so far, not only its own;
 *   3. with a recorded trace, one more coalesced call prefetching the next parameters of
 *      the trace while numel_prefetching < stage3_prefetch_bucket_size.
 * The program's fetch units are the layer's projection weights at spsim's GEMMs: q, k, v
 * (fused qkv_proj), o (out_proj), gate and up (fused mlp_gate_up), down (mlp_down); the
 * norm weights and biases are under param_persistence_threshold (1e5 elements: stage 3
 * never partitions them, [DS-zero-config]; the Trainer's auto, 10 h [HF-ds-auto], splits
 * them alike: norms h, biases at most 3h, projections at least h^2). A unit is prefetched at the hook of the first
 * unit whose end lies within the window (prefetch_bucket elements) of its start: at each
 * hook the gathered-ahead parameters reach at most one window beyond the current unit.
 * The hook's gather is issued when the main stream reaches the hook (the host in step
 * with the GPU) and the hook's GEMM waits for the gathers issued at earlier hooks. The
 * window is capped at one layer (the program's dependencies reach one layer back). */
enum { Z3_QKV, Z3_O, Z3_GATE_UP, Z3_DOWN, Z3_UNITS };

static void z3_unit_elems(const config_model *m, double n[Z3_UNITS])
{
	const double h = m->hidden, ad = (double)m->heads * m->head_dim, gd = (double)m->kv_heads * m->head_dim;
	n[Z3_QKV] = h * (ad + 2.0 * gd);
	n[Z3_O] = ad * h;
	n[Z3_GATE_UP] = 2.0 * h * m->ffn;
	n[Z3_DOWN] = (double)m->ffn * h;
}

/* The unit whose parameters the op's GEMM uses, -1 for any other op. */
static int z3_unit_of(const workload_op *op)
{
	static const char *const names[Z3_UNITS][2] = {{"qkv_proj", "qkv_proj_bwd"},
							   {"out_proj", "out_proj_bwd"},
							   {"mlp_gate_up", "mlp_gate_up_bwd"},
							   {"mlp_down", "mlp_down_bwd"}};
	if (op->kind != WL_OP_COMPUTE || op->kernel != WL_KERNEL_GEMM || !op->name)
		return -1;
	for (int u = 0; u < Z3_UNITS; u++)
		if (strcmp(op->name, names[u][0]) == 0 || strcmp(op->name, names[u][1]) == 0)
			return u;
	return -1;
}

/* The per-hook gathers of a layer whose units are used in `order` (n hooks), the layer
 * repeating: batch[k] = elements of the units (this layer's or the next's) whose start lies
 * in [e(k-1) + w, e(k) + w), e(k) the end of hook k's unit in the layer's trace and
 * e(-1) = 0. Every unit falls in exactly one hook's range: one layer's parameters per
 * layer. Returns the most elements gathered and alive at once: the current unit and what
 * is prefetched beyond it (with `whole` the layer's parameters all stay, as after a
 * full recompute, whose backward reuses them). */
static double z3_batches(const double *elems, const int *order, int n, double window, bool whole, double *batch,
			 double *carry)
{
	double P = 0, start[2 * Z3_UNITS];
	for (int k = 0; k < n; k++)
		P += elems[order[k]];
	const double w = window < P ? window : P;
	double acc = 0;
	for (int j = 0; j < 2 * n; j++) { /* the layer's units, then the next layer's */
		start[j] = acc;
		acc += elems[order[j % n]];
	}
	double live = 0, prev_end = 0;
	if (carry) /* the layer's units the previous layer's hooks gathered: those starting before w */
		for (int j = *carry = 0; j < n; j++)
			*carry += start[j] < w ? elems[order[j]] : 0.0;
	for (int k = 0; k < n; k++) {
		const double end = start[k] + elems[order[k]];
		double b = 0, ahead = 0;
		for (int j = 0; j < 2 * n; j++) {
			if (start[j] >= prev_end + w && start[j] < end + w)
				b += elems[order[j % n]];
			if (start[j] >= (whole ? P : start[k]) && start[j] < end + w)
				ahead += elems[order[j % n]];
		}
		if (batch)
			batch[k] = b;
		double alive = (whole ? P : 0) + ahead;
		if (alive > live)
			live = alive;
		prev_end = end;
	}
	return live;
}

/* Where old op index x lands once a gather has been inserted before each of the ns ops
 * at old indices shift_at. */
static int z3_map(int x, const int *shift_at, int ns)
{
	int y = x;
	for (int s = 0; s < ns; s++)
		y += shift_at[s] <= x;
	return y;
}

/* The per-submodule gathers of one layer block, inserted before the GEMMs that first use
 * each unit from op `from` on; gathers on stream ps, named `gname`, in phase ph. Returns
 * the elements of the first layer's units that the block's pattern leaves to the hooks
 * before it (z3_batches' carry), 0 when nothing was inserted. */
static double z3_fetch(builder *b, workload_block *blk, int from, workload_phase ph, const char *gname,
		       workload_stream ps)
{
	double carry = 0;
	if (!blk || b->oom)
		return 0;
	double elems[Z3_UNITS], batch[Z3_UNITS];
	int order[Z3_UNITS], at[Z3_UNITS], n = 0;
	bool seen[Z3_UNITS] = {false};
	z3_unit_elems(b->m, elems);
	for (int i = from; i < blk->n_ops && n < Z3_UNITS; i++) {
		int u = z3_unit_of(&blk->ops[i]);
		if (u >= 0 && !seen[u]) {
			seen[u] = true;
			order[n] = u;
			at[n++] = i;
		}
	}
	if (n == 0)
		return 0;
	z3_batches(elems, order, n, b->job->prefetch_bucket_elems, false, batch, &carry);
	/* the issue point of each hook's gather: the main-stream op before its GEMM (old index,
	 * -1: the block's last main-stream op of the previous layer) */
	int issue[Z3_UNITS], last_main = -1;
	for (int i = 0; i < blk->n_ops; i++)
		if (blk->ops[i].stream == WL_STREAM_MAIN)
			last_main = i;
	for (int k = 0; k < n; k++) {
		issue[k] = -1;
		for (int i = at[k] - 1; i >= 0; i--)
			if (blk->ops[i].stream == WL_STREAM_MAIN) {
				issue[k] = i;
				break;
			}
	}
	int extra = 0;
	for (int k = 0; k < n; k++)
		extra += batch[k] > 0;
	while (blk->cap_ops < blk->n_ops + extra)
		if (!op_room(b, blk))
			return 0;
	/* move the ops up, last hook first, then remap every dependency */
	int shift_at[Z3_UNITS], ns = 0;
	for (int k = n - 1; k >= 0; k--) {
		if (batch[k] <= 0)
			continue;
		int i = at[k];
		memmove(&blk->ops[i + 1], &blk->ops[i], (size_t)(blk->n_ops - i) * sizeof blk->ops[0]);
		blk->n_ops++;
		shift_at[ns++] = i;
	}
#define Z3_MAP(x) z3_map((x), shift_at, ns)
	for (int i = 0; i < blk->n_ops; i++) /* the inserted slots are overwritten below */
		if (blk->ops[i].dep >= 0)
			blk->ops[i].dep = Z3_MAP(blk->ops[i].dep);
	int gat[Z3_UNITS], last_g = -1;
	for (int k = 0; k < n; k++) {
		gat[k] = -1;
		if (batch[k] <= 0)
			continue;
		gat[k] = Z3_MAP(at[k]) - 1;
		last_g = gat[k];
		workload_op g = {.name = gname, .kind = WL_OP_COMM, .cat = WL_CAT_ZERO_COMM, .stream = ps, .phase = ph,
				 .coll = WL_COLL_ALLGATHER, .alg = WL_ALG_RING, .group = WL_GROUP_WORLD,
				 .bytes = batch[k] * BF16, .chunks = 1, .dep = -1};
		if (ps != WL_STREAM_MAIN) {
			g.dep = issue[k] >= 0 ? Z3_MAP(issue[k]) : Z3_MAP(last_main);
			g.dep_iter = issue[k] >= 0 ? 0 : -1;
		}
		blk->ops[gat[k]] = g;
	}
	/* each hook's GEMM waits for the last gather issued at an earlier hook (the previous
	 * layer's last one for the first hooks); a GEMM that already waits for something
	 * else (ring attention's dK, dV) passes the wait to the nearest main-stream op before it */
	int prev_g = -1;
	for (int k = 0; k < n; k++) {
		int c = Z3_MAP(at[k]), dep = prev_g >= 0 ? prev_g : last_g, it = prev_g >= 0 ? 0 : -1;
		for (int i = c; i >= 0; i--) {
			workload_op *op = &blk->ops[i];
			if (op->stream != WL_STREAM_MAIN || (i < c && z3_unit_of(op) >= 0))
				break;
			if (op->dep < 0) {
				if (it < 0 || dep < i) {
					op->dep = dep;
					op->dep_iter = it;
				}
				break;
			}
		}
		if (gat[k] >= 0)
			prev_g = gat[k];
	}
#undef Z3_MAP
	return carry;
}

/* The first layer's carried units (z3_fetch), gathered by the hooks before the layer
 * block: the embedding's in forward, the head's in backward (each hook prefetches the
 * window that follows it). On the main stream at the end of that block: the first layer's
 * GEMM waits for every gather issued before it (fetch_sub_module's wait_stream). */
static void z3_carry(builder *b, int blk_index, workload_phase ph, double elems)
{
	if (elems > 0 && blk_index >= 0 && blk_index < b->n)
		zero_op(b, &b->blocks[blk_index], "zero3_gather_ahead", ph, WL_COLL_ALLGATHER, WL_STREAM_MAIN,
			elems * BF16, 1, -1, 0);
}

double workload_zero3_gathered_elems(const config_model *m, const config_job *job)
{
	const double lp = config_model_layer_params(m);
	if (job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER)
		return 2.0 * lp; /* the current and the prefetched layer */
	double elems[Z3_UNITS];
	z3_unit_elems(m, elems);
	static const int fwd[Z3_UNITS] = {Z3_QKV, Z3_O, Z3_GATE_UP, Z3_DOWN};
	static const int bwd[Z3_UNITS] = {Z3_DOWN, Z3_GATE_UP, Z3_O, Z3_QKV};
	const double w = job->prefetch_bucket_elems;
	double live = z3_batches(elems, fwd, Z3_UNITS, w, false, NULL, NULL);
	double back = job->recompute == CONFIG_RECOMPUTE_FULL ? z3_batches(elems, fwd, Z3_UNITS, w, true, NULL, NULL)
							      : z3_batches(elems, bwd, Z3_UNITS, w, false, NULL, NULL);
	return live > back ? live : back;
}

/* Frees a builder's blocks after a failed build. */
static bool builder_fail(builder *b, config_error *err)
{
	for (int i = 0; i < b->n; i++)
		ops_give(b->blocks[i].ops, b->blocks[i].cap_ops);
	free(b->blocks);
	return config_fail(err, "out of memory building the op program");
}

bool workload_plan_make(const config_model *m, const config_platform *p, const config_job *job, workload_plan *out,
			config_error *err)
{
	workload_layout l;
	if (!workload_layout_make(m, job, &l, err))
		return false;
	return workload_plan_make_layout(m, p, job, &l, out, err);
}

bool workload_plan_make_layout(const config_model *m, const config_platform *p, const config_job *job,
			       const workload_layout *layout, workload_plan *out, config_error *err)
{
	memset(out, 0, sizeof *out);
	out->layout = *layout;
	const workload_layout *l = &out->layout;
	builder b = {.m = m, .job = job, .p = p, .l = l};
	layer_dims d = dims_of(m, l);
	const int L = m->layers, W = l->world, Z = job->zero_stage;
	/* DeepSpeed's overlap_comm: on for stage 3 only unless the job says ([DS-zero-config]) */
	const bool overlap = config_job_zero_overlap(job);
	const workload_stream zs = overlap ? WL_STREAM_ZERO : WL_STREAM_MAIN;
	const workload_stream ps = overlap ? WL_STREAM_PREFETCH : WL_STREAM_MAIN;
	const double gbytes = workload_grad_comm_bytes(job, l);
	const double layer_params = config_model_layer_params(m);
	const double all_params = config_model_params(m);
	const double embed_params = (double)m->vocab * m->hidden + config_model_position_params(m);
	const double head_params = m->tied_embeddings ? 0.0 : (double)m->vocab * m->hidden;
	/* Stage 3 keeps parameters under 1e5 elements unpartitioned ([DS-zero-config]); the
	 * norms are, the embedding and head are not. */
	const double outer_params = all_params - L * layer_params; /* embeddings, head, final norm */

	/* ---- one micro-step ---- */
	workload_block *blk = block_new(&b, "embed_fwd", 1, false, -1, 0);
	if (Z == 3)
		zero_op(&b, blk, "zero3_gather_embed", WL_PHASE_FWD, WL_COLL_ALLGATHER, WL_STREAM_MAIN,
			embed_params * BF16, chunks_of(embed_params, job->allgather_bucket_elems), -1, 0);
	memop(&b, blk, "embedding", WL_PHASE_FWD, 2.0 * d.h_bytes);

	/* Activation offload (docs/model.md "Memory techniques"): the copies run on the zero
	 * stream when ZeRO leaves it empty (no overlap), else on the prefetch stream's slot. */
	const bool offload = job->offload_activations && job->recompute == CONFIG_RECOMPUTE_FULL;
	const workload_stream hs = overlap ? WL_STREAM_HOST : WL_STREAM_ZERO;
	const double ckpt = workload_layer_saved_bytes(m, job, l);
	/* ZeRO-3's fetch: per layer one block ahead (layer), or per submodule (z3_fetch) */
	const bool z3_layer = Z == 3 && job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER;
	const bool z3_sub = Z == 3 && !z3_layer;
	double carry_fwd = 0; /* DeepSpeed style: the first layer's units the embedding's hook gathers */
	blk = block_new(&b, "layer_fwd", L, false, 0, 1);
	{
		/* ZeRO-3 prefetch by layer: layer l's gather may start once layer l-1 has started
		 * (its first compute op ended), and layer l waits for it. */
		int g = -1, h = -1;
		if (z3_layer)
			g = zero_op(&b, blk, "zero3_gather", WL_PHASE_FWD, WL_COLL_ALLGATHER, ps, layer_params * BF16,
				    chunks_of(layer_params, job->prefetch_bucket_elems), -1, 0);
		if (offload)
			h = host_copy(&b, blk, "offload_d2h", WL_PHASE_FWD, hs, ckpt);
		int first = blk ? blk->n_ops : 0;
		layer_forward(&b, blk, &d, WL_PHASE_FWD);
		if (blk && blk->n_ops > first) {
			if (g >= 0) {
				blk->ops[g].dep = first;
				blk->ops[g].dep_iter = -1;
				blk->ops[first].dep = g;
			}
			/* layer l's input is ready when layer l-1's last op ends */
			if (h >= 0) {
				blk->ops[h].dep = blk->n_ops - 1;
				blk->ops[h].dep_iter = -1;
			}
		}
		if (z3_sub)
			carry_fwd = z3_fetch(&b, blk, first, WL_PHASE_FWD, "zero3_gather", ps);
		z3_carry(&b, b.n - 2, WL_PHASE_FWD, carry_fwd);
	}

	blk = block_new(&b, "head", 1, false, -1, 0);
	/* DeepSpeed style: the last layer's hooks prefetched as much as they carried into the
	 * first (the layer's pattern repeats), of the head's weight when it has one */
	const double head_left = head_params - (carry_fwd < head_params ? carry_fwd : head_params);
	if (Z == 3 && head_left > 0)
		zero_op(&b, blk, "zero3_gather_head", WL_PHASE_FWD, WL_COLL_ALLGATHER, WL_STREAM_MAIN,
			head_left * BF16, chunks_of(head_left, job->allgather_bucket_elems), -1, 0);
	const elementwise_bytes e = elementwise_of(m, job);
	memop(&b, blk, "final_norm", WL_PHASE_FWD, e.norm_fwd * d.th);
	/* Cross-entropy in fp32 (elementwise_of). With --tile-logits n the head, the loss and
	 * their backward run per chunk of ceil(t/n) tokens, the gradients formed as each chunk
	 * goes (Liger's fused linear cross entropy, arXiv 2410.10989 §3.3): the same FLOPs and
	 * bytes, n times the kernels. */
	const int nl = job->tile_logits;
	tile_op(blk, gemm(&b, blk, "logits", WL_PHASE_FWD, d.t, m->vocab, m->hidden), nl, 1);
	tile_op(blk, memop(&b, blk, "loss", WL_PHASE_FWD, d.t * m->vocab * e.loss_fwd), nl, 1);
	tile_op(blk, memop(&b, blk, "loss_bwd", WL_PHASE_BWD, d.t * m->vocab * e.loss_bwd), nl, 1);
	tile_op(blk, gemm(&b, blk, "logits_bwd", WL_PHASE_BWD, d.t, m->vocab, m->hidden), nl, 2);
	memop(&b, blk, "final_norm_bwd", WL_PHASE_BWD, e.norm_bwd * d.th);
	grad_reduce(&b, blk, "zero_grad_allreduce_head", "zero3_reduce_scatter_head", zs, head_params, gbytes);

	blk = block_new(&b, "layer_bwd", L, false, L - 1, -1);
	{
		int g = -1, h = -1;
		if (z3_layer)
			g = zero_op(&b, blk, "zero3_gather_bwd", WL_PHASE_BWD, WL_COLL_ALLGATHER, ps,
				    layer_params * BF16, chunks_of(layer_params, job->prefetch_bucket_elems), -1, 0);
		/* offload: layer l's checkpoint is fetched back once layer l+1's backward has
		 * started (one layer ahead), and layer l's backward waits for it; the first fetch
		 * follows the forward's copies on the stream */
		if (offload)
			h = host_copy(&b, blk, "offload_h2d", WL_PHASE_BWD, hs, ckpt);
		int before = blk ? blk->n_ops : 0;
		if (job->recompute == CONFIG_RECOMPUTE_FULL)
			layer_forward(&b, blk, &d, WL_PHASE_RECOMPUTE);
		layer_backward(&b, blk, &d);
		if (blk && blk->n_ops > before) {
			/* layer l's gather may start once layer l+1's backward has started */
			if (g >= 0) {
				blk->ops[g].dep = before;
				blk->ops[g].dep_iter = -1;
			}
			if (h >= 0) {
				blk->ops[h].dep = before;
				blk->ops[h].dep_iter = -1;
			}
			/* the first op waits for the fetch and the gather: with ZeRO overlap both
			 * are on the prefetch stream, the fetch queued behind the gather; without,
			 * the gather is on the main stream, ahead of the first op anyway */
			int wait = h >= 0 ? h : g;
			if (wait >= 0)
				blk->ops[before].dep = wait;
		}
		/* DeepSpeed's backward hooks: with full recompute the recomputed forward gathers
		 * the layer again (its post-forward hooks released it) and the backward that
		 * follows finds it available (released only beyond stage3_max_reuse_distance,
		 * __params_to_release); otherwise the backward gathers in reverse order */
		if (z3_sub)
			z3_carry(&b, b.n - 2, WL_PHASE_BWD, z3_fetch(&b, blk, before, WL_PHASE_BWD, "zero3_gather_bwd", ps));
		grad_reduce(&b, blk, "zero_grad_allreduce", "zero3_reduce_scatter", zs, layer_params, gbytes);
	}

	blk = block_new(&b, "embed_bwd", 1, false, -1, 0);
	memop(&b, blk, "embedding_bwd", WL_PHASE_BWD, 2.0 * d.h_bytes);
	/* The embedding gradient, and the rest of the outer parameters (final norm, tied head). */
	grad_reduce(&b, blk, "zero_grad_allreduce_embed", "zero3_reduce_scatter_embed", zs, outer_params - head_params,
		    gbytes);
	int n_micro = b.n;

	/* ---- once per step ---- */
	if (W > 1 && (Z == 0 || Z == 1)) {
		/* Stage 0 (DDP-style) and stage 1: all-reduce every gradient at the accumulation
		 * boundary, bucketed. */
		blk = block_new(&b, "grad_sync", 1, true, -1, 0);
		zero_op(&b, blk, "zero_grad_allreduce", WL_PHASE_STEP, WL_COLL_ALLREDUCE, WL_STREAM_MAIN,
			all_params * gbytes, chunks_of(all_params, job->reduce_bucket_elems), -1, 0);
	}
	blk = block_new(&b, "optimizer", 1, true, -1, 0);
	{
		double shard = Z >= 1 ? all_params / W : all_params;
		if (job->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU) {
			/* ZeRO-Offload (OFFLOAD_* above): the gradient copy here when backward issues
			 * none of it (stage 1, after the boundary's all-reduce; stage 3 without overlap
			 * under accumulation), the CPU step over the node's shards, the bf16 parameters
			 * back; the step waits for each */
			if (offload_grad_share(job, overlap) == 0)
				host_copy(&b, blk, "opt_grad_d2h", WL_PHASE_STEP, WL_STREAM_MAIN, OFFLOAD_GRAD_BYTES * shard);
			int per_node = W < p->gpus_per_node ? W : p->gpus_per_node;
			op_add(&b, blk, &(workload_op){.name = "cpu_adam", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE,
						      .stream = WL_STREAM_MAIN, .phase = WL_PHASE_STEP,
						      .kernel = WL_KERNEL_HOST_ADAM, .bytes = CPU_ADAM_BYTES * shard * per_node,
						      .dep = -1});
			host_copy(&b, blk, "opt_param_h2d", WL_PHASE_STEP, WL_STREAM_MAIN, OFFLOAD_PARAM_BYTES * shard);
		} else {
			/* Fused Adam on this rank's shard: read fp32 master, m, v and the fp32
			 * gradient, write master, m, v and the bf16 weight: 16 + 14 = 30 bytes per
			 * parameter (DeepSpeed FusedAdam / apex multi_tensor_adam, one pass). */
			op_add(&b, blk, &(workload_op){.name = "adam", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE,
						      .stream = WL_STREAM_MAIN, .phase = WL_PHASE_STEP,
						      .kernel = WL_KERNEL_MEMORY, .hbm_bytes = 30.0 * shard, .dep = -1});
		}
	}
	if (W > 1 && (Z == 1 || Z == 2))
		zero_op(&b, blk, "zero_param_allgather", WL_PHASE_STEP, WL_COLL_ALLGATHER, WL_STREAM_MAIN,
			all_params * BF16, chunks_of(all_params, job->allgather_bucket_elems), -1, 0);

	if (b.oom)
		return builder_fail(&b, err);
	out->program.micro = b.blocks;
	out->program.n_micro = n_micro;
	out->program.step = b.blocks + n_micro;
	out->program.n_step = b.n - n_micro;
	out->program.grad_accum = job->grad_accum;

	out->model_flops_per_step = workload_model_flops(m, job, l);
	out->model_flops_dense_per_step = workload_model_flops_dense(m, job, l);
	out->hardware_flops_per_step = workload_program_flops(&out->program);
	workload_memory_compute(m, p, job, l, &out->memory);
	return true;
}

bool workload_sp_attention_plan_make(const config_model *m, const config_platform *p, const config_job *job,
				     bool backward, workload_plan *out, config_error *err)
{
	memset(out, 0, sizeof *out);
	if (!workload_layout_make(m, job, &out->layout, err))
		return false;
	const workload_layout *l = &out->layout;
	builder b = {.m = m, .job = job, .p = p, .l = l};
	layer_dims d = dims_of(m, l);
	workload_block *blk = block_new(&b, "sp_attention", 1, false, -1, 0);
	sp_attention_forward(&b, blk, &d, WL_PHASE_FWD);
	if (backward) {
		int dkv = -1, after_ring = -1;
		sp_attention_backward(&b, blk, &d, &dkv, &after_ring);
		ring_wait_dkv(blk, dkv, after_ring);
	}
	if (b.oom)
		return builder_fail(&b, err);
	out->program.micro = b.blocks;
	out->program.n_micro = b.n;
	out->program.step = b.blocks + b.n;
	out->program.grad_accum = 1;
	out->hardware_flops_per_step = workload_program_flops(&out->program);
	return true;
}

void workload_plan_finish(workload_plan *plan)
{
	if (!plan)
		return;
	workload_block *all = plan->program.micro;
	int n = plan->program.n_micro + plan->program.n_step;
	for (int i = 0; i < n; i++)
		ops_give(all[i].ops, all[i].cap_ops >= all[i].n_ops ? all[i].cap_ops : 0);
	free(all);
	memset(plan, 0, sizeof *plan);
}
