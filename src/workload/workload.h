/* workload: a job on a model and platform -> rank groups, the per-rank op program and
 * the memory model. Engine-agnostic: nothing here knows how ops are timed.
 *
 * The op program is a max-plus schedule, defined once here and executed the same way by
 * every engine:
 *   - A program is a list of blocks; a block is a list of ops executed `repeat` times
 *     (once per layer for the layer blocks). The micro-step blocks run grad_accum times,
 *     then the step blocks run once.
 *   - Each op runs on a stream. An op starts when (a) the previous op on its stream has
 *     ended and (b) its dependency, if any, has ended. Streams carry over from block to
 *     block and from iteration to iteration.
 *   - dep names an op of the same block by index, dep_iter iterations back (0: this
 *     iteration; -1: the previous one). A dependency on an iteration before the first is
 *     satisfied (prefetch before the block starts).
 *   - A block with barrier set starts only when every stream has drained.
 *   - SP collectives run on the main stream (DeepSpeed's all-to-alls are synchronous and
 *     on the critical path; docs/sources.md [DS-ulysses]). ZeRO collectives run on the zero stream when
 *     overlap is on, otherwise on the main stream.
 * Ranks of one class run identical programs; for Ulysses and divisible BASP every rank is
 * of one class, so programs are built per class, never per GPU. */
#ifndef SPSIM_WORKLOAD_WORKLOAD_H
#define SPSIM_WORKLOAD_WORKLOAD_H

#include "config/config.h"

typedef enum workload_op_kind { WL_OP_COMPUTE, WL_OP_COMM } workload_op_kind;
/* MEMORY: a memory-bound pass (norms, activations, optimizer); COPY: a layout copy
 * (permute + .contiguous()) around an SP all-to-all, memory-bound too. */
/* HOST_COPY: a copy between this GPU's memory and its host's over the platform's host link
 * (activation offload), `bytes` long, timed by the link (engine_compute_time); it runs on
 * the GPU's copy engine, beside the kernels, and loads no GPU-to-GPU link. */
/* HOST_ADAM: the optimizer step on the host's CPU (optimizer offload, DeepSpeedCPUAdam),
 * `bytes` the DRAM traffic of the whole node while it runs (every GPU's process steps its
 * shard at once), timed by the host's memory bandwidth (engine_compute_time); the GPU
 * waits, idle. Both host kernels run off the GPU's SMs (workload_kernel_on_host). */
typedef enum workload_kernel {
	WL_KERNEL_GEMM,
	WL_KERNEL_ATTENTION,
	WL_KERNEL_MEMORY,
	WL_KERNEL_COPY,
	WL_KERNEL_HOST_COPY,
	WL_KERNEL_HOST_ADAM
} workload_kernel;
static inline bool workload_kernel_on_host(workload_kernel k)
{
	return k == WL_KERNEL_HOST_COPY || k == WL_KERNEL_HOST_ADAM;
}
typedef enum workload_coll {
	WL_COLL_ALLTOALL,
	WL_COLL_ALLGATHER,
	WL_COLL_REDUCESCATTER,
	WL_COLL_ALLREDUCE,
	WL_COLL_SENDRECV,
	WL_COLL_BROADCAST,
	WL_COLL_COUNT
} workload_coll;
typedef enum workload_alg {
	WL_ALG_DIRECT,       /* all-to-all: every peer at once (NCCL's) */
	WL_ALG_PAIRWISE,     /* all-to-all: P-1 rounds of one peer each */
	WL_ALG_RING,         /* ring all-gather / reduce-scatter / all-reduce */
	WL_ALG_HIERARCHICAL, /* intra-node phase, then inter-node, then intra-node */
	WL_ALG_COUNT
} workload_alg;
typedef enum workload_group_kind {
	WL_GROUP_SP,    /* the rank's all-to-all group: K ranks for BASP, N for Ulysses */
	WL_GROUP_WORLD, /* every rank of the job: the ZeRO / data-parallel group */
} workload_group_kind;
/* MAIN: compute and SP all-to-alls (and ZeRO collectives when overlap is off).
 * ZERO: gradient reductions when overlap is on. PREFETCH: ZeRO-3 parameter all-gathers
 * when overlap is on (DeepSpeed runs gathers and reductions on separate CUDA streams:
 * stage3 allgather stream vs reduce_and_partition_stream, runtime/zero/stage3.py). */
/* RING: ring attention's KV / dKV send/recv, beside the attention kernels (TE's
 * AttnFuncWithCPAndKVP2P issues the next step's P2P before computing the current block).
 * It is the prefetch stream's slot: a fourth stream slows the link-sharing schedule
 * several-fold (bench/plan), so with ZeRO-3 overlap the ring's transfers queue with the
 * layer gathers (docs/model.md §7a); without it the prefetch stream is unused. */
/* HOST: activation offload's device-to-host and host-to-device copies (DeepSpeed and
 * ALST copy on their own CUDA stream). The prefetch stream's slot again, for the same
 * reason as the ring's: the copies queue behind that stream's ZeRO-3 gathers and ring
 * transfers (docs/model.md "Memory techniques"). */
typedef enum workload_stream {
	WL_STREAM_MAIN,
	WL_STREAM_ZERO,
	WL_STREAM_PREFETCH,
	WL_STREAM_COUNT,
	WL_STREAM_RING = WL_STREAM_PREFETCH,
	WL_STREAM_HOST = WL_STREAM_PREFETCH
} workload_stream;
/* HOST_COMM: the copies over the host link (compute-kind ops of kernel WL_KERNEL_HOST_COPY):
 * activation offload's, never on the main stream, and optimizer offload's gradient and
 * parameter copies, on the ZeRO stream or, where the step waits for them, the main one. */
typedef enum workload_category {
	WL_CAT_COMPUTE,
	WL_CAT_SP_COMM,
	WL_CAT_ZERO_COMM,
	WL_CAT_HOST_COMM,
	WL_CAT_COUNT
} workload_category;
typedef enum workload_phase { WL_PHASE_FWD, WL_PHASE_BWD, WL_PHASE_RECOMPUTE, WL_PHASE_STEP } workload_phase;

typedef struct workload_op {
	const char *name; /* static string, e.g. "qkv_proj", "a2a_q" */
	workload_op_kind kind;
	workload_category cat;
	workload_stream stream;
	workload_phase phase;
	/* compute */
	workload_kernel kernel;
	/* Kernels the op launches beyond its first (a tiled op runs one set per tile): each
	 * costs the launch gap between back-to-back kernels (engine_compute_time). Placed
	 * here, it fills the padding before `flops`: the op stays the same size. */
	int extra_launches;
	double flops;     /* FLOPs on this GPU */
	double hbm_bytes; /* HBM bytes moved (memory-bound kernels) */
	/* The kernel's shape, which sets its efficiency (engine/compute.c); all zero when
	 * unknown (the op then runs at the platform's plateau efficiency). */
	union {
		/* GEMM: the forward product [m x k] . [k x n] (m tokens, n outputs, k inputs); in
		 * the backward phase the op is its two gradient GEMMs, m x k x n and n x k x m. */
		struct { int m, n, k; } gemm;
		/* attention on this GPU: `seqs` sequences of `seq` tokens (queries and keys),
		 * `heads` query and `kv_heads` kv heads of `head_dim`; the phase says forward or
		 * backward. kernel: config_attn_kernel. */
		struct { int seq, head_dim, heads, kv_heads, seqs; unsigned char causal, kernel; } attn;
		/* layout copy: bytes of each contiguous run it reads or writes */
		struct { double run_bytes; } copy;
	} shape;
	/* comm: bytes is the per-rank buffer as nccl-tests sizes it: the send buffer for
	 * all-to-all, the full output for all-gather, the full input for reduce-scatter and
	 * all-reduce, the message for send/recv. */
	workload_coll coll;
	workload_alg alg;
	workload_group_kind group;
	double bytes;
	int chunks; /* the op is `chunks` back-to-back calls of bytes/chunks each (buckets) */
	int group_size; /* WL_GROUP_SP only: contiguous groups of this many ranks; 0 = the
			 * layout's group_size (differs in merged programs: see workload_compose) */
	/* dependency (see the schedule above) */
	int dep;
	int dep_iter;
} workload_op;

typedef struct workload_block {
	const char *name; /* "embed_fwd", "layer_fwd", "head", "layer_bwd", "grad_sync", "optimizer" */
	int repeat;
	bool barrier;
	int layer_first; /* layer index of iteration 0, -1 if not a layer block */
	int layer_step;  /* +1 forward, -1 backward */
	workload_op *ops;
	int n_ops;
	int cap_ops;
} workload_block;

typedef struct workload_program {
	workload_block *micro; /* run grad_accum times */
	int n_micro;
	workload_block *step; /* run once after the micro-steps */
	int n_step;
	int grad_accum;
} workload_program;

/* Rank layout: world ranks 0..W-1 in job order; SP groups are contiguous rank ranges.
 * Placement of ranks onto GPUs is the engine's business (contiguous by default). */
typedef struct workload_layout {
	int world;           /* W */
	int sp;              /* N: SP domain size; W / N data-parallel replicas */
	int group_size;      /* ranks per all-to-all group (K for BASP, N for Ulysses) */
	int n_groups;        /* all-to-all groups in the world */
	int seqs_per_group;  /* sequences each group processes per micro-step */
	long tokens_per_rank;/* local tokens t per micro-step */
	int heads_per_rank;  /* query heads per rank during attention */
	int kv_heads_per_rank; /* kv heads per rank during attention (after replication) */
	int kv_replicated;   /* kv heads sent per rank group: g, or P when g < P */
	int straddle_per_node; /* > 0: some group of this layout straddles a node boundary with
				* only this many of its ranks on one side (unequal BASP groups) */
	int ring;            /* ring attention: R ranks in each ring; 0 otherwise */
	int ring_stride;     /* ring members' spacing: 1 (a ring is the group) or U for USP, whose
			      * group_size is the all-to-all's U and whose rings take ranks
			      * i, i+U, ... within blocks of U x R */
} workload_layout;

/* Memory a GPU loses before the job's tensors (workload_memory_reserve). */
typedef struct workload_reserve {
	double context;       /* CUDA context */
	double cublas;        /* cuBLAS workspace */
	double nccl;          /* NCCL communicator buffers */
	double fragmentation; /* caching-allocator fragmentation */
	double total;         /* the sum, or the declared value */
	bool declared;        /* total given by the job or platform (the parts are then 0) */
} workload_reserve;

typedef struct workload_memory {
	double params, grads, optimizer; /* model states per GPU, bytes */
	double activations;               /* saved for backward, all layers */
	double logits;                    /* logits and the loss's fp32 tensors at their peak */
	double buffers;                   /* all-to-all + ZeRO communication buffers */
	/* Of activations, logits and buffers, the bytes never alive together: the smaller of
	 * what the loss phase frees before backward reaches the last layer (the logits and loss
	 * tensors no loop keeps, the final norm's, ZeRO-3's gathered head weight) and one
	 * layer's backward transient (the rebuilt layer, the re-run attention, an MLP tile).
	 * peak = the other fields summed minus this. */
	double not_concurrent;
	double reserve;                   /* CUDA context, cuBLAS, NCCL, fragmentation: reserve_of.total */
	workload_reserve reserve_of;
	double peak;                      /* everything above, reserve included */
	double capacity;
	/* Activation offload (--offload-activations): the checkpoints this GPU keeps in host
	 * memory, the node's total (every GPU of the node), the node's host memory, and whether
	 * they fit; fits includes host_fits. 0 and true without offload. */
	double host, host_node, host_capacity;
	/* Optimizer offload (--offload-optimizer cpu): of host, the bytes of this GPU's shard
	 * of fp32 master weights, Adam m and v and the fp32 gradient (16 per parameter; 18 with
	 * ZeRO-3, whose bf16 gradient partition lives on the host too); the GPU's optimizer
	 * (and with ZeRO-3 its grads) is then 0. */
	double host_optimizer;
	bool host_fits;
	bool fits;
} workload_memory;

typedef struct workload_plan {
	workload_layout layout;
	workload_program program;
	workload_memory memory;
	double model_flops_per_step;    /* this GPU's model FLOPs per step, published convention (MFU) */
	double hardware_flops_per_step; /* FLOPs of every compute op it runs, recompute included (HFU) */
	double model_flops_dense_per_step; /* model FLOPs with attention dense (mfu_dense_attention) */
} workload_plan;

/* BASP when B does not divide N (docs/model.md "BASP beyond divisibility"). A composite
 * is one or more equal sub-jobs ("parts"):
 *  - SINGLE: the job itself (every divisible job).
 *  - PARALLEL (--basp-uneven unequal): groups of floor(N/B) and ceil(N/B) ranks run side
 *    by side, one sequence each; a part per group size, each run as an equal BASP job
 *    over the world; the slowest part sets the pace, memory is the largest part's.
 *  - SEQUENTIAL (--basp-uneven extra-step): micro-steps of d_i sequences, d_i the
 *    largest divisor of N not above what is left of B, greedily, run one after another
 *    before one optimizer step; merged into one program (`merged`). */
typedef enum workload_compose_kind { WL_COMPOSE_SINGLE, WL_COMPOSE_PARALLEL, WL_COMPOSE_SEQUENTIAL } workload_compose_kind;
#define WORKLOAD_MAX_PARTS 16
typedef struct workload_part {
	config_job job;    /* an equal (divisible) job */
	workload_plan plan;
	int ranks;         /* ranks that run this part (PARALLEL); W otherwise */
} workload_part;
typedef struct workload_composite {
	workload_compose_kind kind;
	int n_parts;
	workload_part parts[WORKLOAD_MAX_PARTS];
	workload_plan merged; /* SEQUENTIAL: all parts' micro-steps then one optimizer step */
} workload_composite;

/* A sequence padded to a multiple of the group size (unequal BASP groups whose size does
 * not divide it); parts[i].job.seq_len holds it, the padding is that minus job->seq_len. */
long workload_padded_seq_len(long seq_len, int group_size);
/* Builds the composite of a checked job (workload_check passed). */
bool workload_compose(const config_model *m, const config_platform *p, const config_job *job,
		      workload_composite *out, config_error *err);
void workload_compose_finish(workload_composite *c);
/* Memory per GPU of a run whose result is `primary`'s (engine_run_composite): for unequal
 * BASP groups (PARALLEL), the part with the highest peak (the GPUs that must fit), not
 * necessarily the slowest part whose time is reported; primary's otherwise. c may be NULL. */
const workload_memory *workload_composite_memory(const workload_composite *c, const workload_plan *primary);

/* Validates the job against model and platform and fills job defaults (gpus, sp). On
 * failure writes a sentence that says what to change. */
bool workload_check(const config_model *m, const config_platform *p, config_job *job, config_error *err);
/* The memory techniques of a job against the platform (part of workload_check, which
 * fills gpus and sp first): offload needs a host link and full recompute; tile counts
 * from 1 to the tokens a GPU holds. */
bool workload_check_techniques(const config_platform *p, const config_job *job, config_error *err);
bool workload_layout_make(const config_model *m, const config_job *job, workload_layout *out, config_error *err);
/* Ranks that hold one sequence: the SP domain, or a BASP group of K = N/B. Under USP the
 * layout's group_size is the all-to-all's U and each sequence spans U x R ranks. */
int workload_layout_seq_ranks(const workload_layout *l);
/* Builds the whole plan: layout, program, memory. workload_check must have passed. */
bool workload_plan_make(const config_model *m, const config_platform *p, const config_job *job, workload_plan *out,
			config_error *err);
/* The same with a given layout (parts of a composite). */
bool workload_plan_make_layout(const config_model *m, const config_platform *p, const config_job *job,
			       const workload_layout *layout, workload_plan *out, config_error *err);
void workload_plan_finish(workload_plan *plan);
/* The sequence-parallel attention section of one layer alone, as the layer block emits it
 * (the same builder functions): from the rotated q, k, v to the attention output, i.e. the
 * SP all-to-alls and core attention (Ulysses), the ring's blocks, KV transfers on the ring
 * stream and output corrections (ring attention; USP's all-to-alls around them); with
 * `backward`, the layer's backward section after it (dO to dQ, dK, dV: the backward ring
 * and the dK, dV returns). One micro-step block, repeated once, grad_accum 1; no
 * projections, norms, ZeRO, optimizer or embedding; no memory model (out->memory zero),
 * model FLOPs 0. The job must have passed workload_check against m and p. What the
 * fidelity corpus's sp_attention cases time (src/fidelity/predict.c). Free with
 * workload_plan_finish. */
bool workload_sp_attention_plan_make(const config_model *m, const config_platform *p, const config_job *job,
				     bool backward, workload_plan *out, config_error *err);
/* Largest divisor of n not above x. */
int workload_divisor_at_most(int n, int x);

/* Bytes one layer keeps for its backward, per rank: its input with full recompute (the
 * checkpoint, what --offload-activations moves to the host), else everything it saves. */
double workload_layer_saved_bytes(const config_model *m, const config_job *job, const workload_layout *l);
void workload_memory_compute(const config_model *m, const config_platform *p, const config_job *job,
			     const workload_layout *l, workload_memory *out);
/* The reserve of a job: the job's memory_reserve, else the platform's, else the derived
 * default (docs/model.md "Memory"); `dynamic` is the activation, logit and buffer bytes
 * the fragmentation share applies to. */
workload_reserve workload_memory_reserve(const config_platform *p, const config_job *job, const workload_layout *l,
					 double dynamic);
/* Longest sequence length (a multiple of `granule`) that fits; 0 if none does. */
long workload_max_seq(const config_model *m, const config_platform *p, const config_job *job, long granule);

/* Parameter elements ZeRO-3 holds gathered at once, per GPU: the current and the prefetched
 * layer (zero3_prefetch layer), or DeepSpeed's current submodule with its prefetch window
 * (and, with full recompute, the whole layer its backward reuses); docs/model.md. */
double workload_zero3_gathered_elems(const config_model *m, const config_job *job);
/* Bytes per gradient element on the wire: 4 when SP > 1 (DeepSpeed's fp32 reduction
 * with sequence parallelism; docs/sources.md [DS-sp-comm]) unless the job says otherwise. */
double workload_grad_comm_bytes(const config_job *job, const workload_layout *l);
/* HBM bytes per layer of ring attention's memory-bound passes around its per-step kernels
 * (output and log-sum-exp correction forward, bwd false; dQ and dK, dV accumulation and
 * the fp32 casts backward, bwd true) on one rank; 0 without a p2p ring (docs/model.md
 * "Ring attention"). */
double workload_ring_fix_bytes(const config_model *m, const config_platform *p, const config_job *job,
			       const workload_layout *l, bool bwd);

/* Model FLOPs of one step on this GPU by the published convention (PaLM, arXiv 2204.02311
 * App. B; Korthikanti et al., arXiv 2205.05198 §6): every GEMM 2·m·n·k forward, attention
 * 4·S²·d per head and sequence forward halved for causal masking, backward = 2x forward,
 * recompute excluded; norms and element-wise ops not counted. docs/model.md "MFU and HFU". */
double workload_model_flops(const config_model *m, const config_job *job, const workload_layout *l);
/* The same with the attention term dense (not halved for causal masking), as PaLM
 * (12·L·H·Q·T per token), Megatron-LM and MosaicML's llm-foundry count it. */
double workload_model_flops_dense(const config_model *m, const config_job *job, const workload_layout *l);
/* FLOPs of every compute op of a program per step (recompute and FlashAttention's 2.5x
 * backward included): what the GPU really executes (HFU). */
double workload_program_flops(const workload_program *prog);

/* Communication volume of one step for one rank, bytes. Buffers as the program hands them
 * to NCCL (sp_bytes, zero_bytes: nccl-tests' sizes, see workload_op.bytes), and wire bytes:
 * what this GPU sends to other GPUs (off_gpu) and to other nodes (off_node) as NCCL's
 * algorithm moves them (workload_wire_bytes). sp_off_gpu is kept for old readers: the
 * all-to-all's (P-1)/P of the buffer and a ring's whole message, = sp_wire_off_gpu for
 * direct and pairwise all-to-alls and for ring attention's send/recv. */
typedef struct workload_volume {
	double sp_bytes, sp_off_gpu, zero_bytes;
	double sp_wire_off_gpu, sp_wire_off_node, zero_wire_off_gpu, zero_wire_off_node;
	long long sp_collectives, zero_collectives; /* calls: a 1-element bucket makes billions */
} workload_volume;
/* Ranks per node of one attention ring of a layout (l->ring > 1), placed contiguously on
 * nodes of gpus_per_node: all R on one node when the ring's span R x stride fits, else
 * gpus_per_node / stride (one per node when stride >= gpus_per_node). */
int workload_ring_per_node(const workload_layout *l, int gpus_per_node);
/* gpus_per_node places ranks contiguously; 0 leaves the off-node fields 0. */
void workload_volume_on(const workload_plan *plan, int gpus_per_node, workload_volume *out);
void workload_volume_of(const workload_plan *plan, workload_volume *out); /* gpus_per_node 0 */
/* Bytes one rank sends per call of a collective of `bytes` (as workload_op.bytes) on P
 * ranks, r of them per node (contiguous; nodes = P / r), averaged over the ranks:
 *   all-to-all direct/pairwise: (P-1)/P off-GPU, (P-r)/P off-node;
 *   ring all-gather/reduce-scatter: (P-1)/P off-GPU; the ring crosses each of the nodes'
 *     boundaries once, (P-1) chunks of bytes/P each: (P-1)/P / r off-node (0 on one node);
 *   ring all-reduce: twice the ring's;
 *   hierarchical: the sum of its phases (intra-node on r, inter-node on P/r ranks);
 *   broadcast (pipelined chain): (P-1)/P off-GPU, (nodes-1)/P off-node; send/recv (one
 *     message to the next rank of a ring of P): all of it off-GPU, and off-node 1/r of it
 *     (the ring leaves each of its P/r nodes once; all of it when r = 1). */
void workload_wire_bytes(workload_coll c, workload_alg a, int P, int r, double bytes, double *off_gpu,
			 double *off_node);

/* The collective algorithm of a job's SP all-to-alls. */
workload_alg workload_a2a_alg(config_a2a a);

const char *workload_coll_name(workload_coll c);
const char *workload_alg_name(workload_alg a);
const char *workload_strategy_name(config_strategy s);

#endif
