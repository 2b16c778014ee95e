/* config: strict loaders for models, platforms, jobs and calibration files.
 *
 * Every loader reports user mistakes as "file:line:column: what is wrong, what was
 * expected" in a config_error and returns false; nothing here exits or prints. */
#ifndef SPSIM_CONFIG_CONFIG_H
#define SPSIM_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONFIG_NAME_MAX 64
#define CONFIG_PATH_MAX 1024
#define CONFIG_ERROR_MAX 1024

typedef struct config_error {
	char msg[CONFIG_ERROR_MAX];
} config_error;

/* printf-style helper: fills err->msg (err may be NULL). Always returns false so callers
 * can write `return config_fail(err, ...)`. */
bool config_fail(config_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- units ----- */
typedef enum config_unit_kind {
	CONFIG_UNIT_BANDWIDTH, /* bytes per second: 400Gbps, 400Gb/s, 50GB/s, 25GiB/s */
	CONFIG_UNIT_TIME,      /* seconds: 2us, 1.5ms, 700ns, 1s */
	CONFIG_UNIT_SIZE,      /* bytes: 40GiB, 80GB, 512MiB, 4096B */
	CONFIG_UNIT_FLOPS,     /* FLOP per second: 312TFLOPS, 989 TFLOP/s, 1.2PFLOPS */
} config_unit_kind;

/* Parses "<number><unit>" (a space between is allowed) into SI base units (bytes/s, s,
 * bytes, FLOP/s). Decimal prefixes are powers of 1000, binary (Ki, Mi, Gi, Ti) of 1024;
 * "b"/"bps" are bits. On failure writes "what is wrong, what was expected" (no location)
 * into err and returns false. The value must be finite and > 0. */
bool config_parse_quantity(const char *text, config_unit_kind kind, double *out, config_error *err);
/* The same, where 0 is a value too ("0us", "0 GB/s"): the range table's rows that hold 0. */
bool config_parse_quantity_or_zero(const char *text, config_unit_kind kind, double *out, config_error *err);

/* The SI base unit of a kind: "B/s", "s", "B", "FLOP/s". */
const char *config_unit_name(config_unit_kind kind);
/* The kind in words: "bandwidth", "time", "size", "FLOP rate". */
const char *config_unit_kind_name(config_unit_kind kind);
/* Formats a value with a readable decimal prefix (e.g. "50 GB/s", "2.5 us"), for
 * reports; returns buf. */
char *config_format_quantity(double value, config_unit_kind kind, char *buf, size_t len);

/* A memory size as config_parse_quantity reads it, or "0" (nothing). */
bool config_parse_size_or_zero(const char *text, double *out, config_error *err);

/* Token counts: "16384", "16K" (x1024), "1M" (x1048576), within the seq_len range of
 * config/ranges.h. False when malformed or out of range. */
bool config_parse_tokens(const char *text, long *out);

/* ---------------------------------------------------------------- models ---- */
typedef enum config_mlp { CONFIG_MLP_SWIGLU } config_mlp;
typedef enum config_norm { CONFIG_NORM_RMSNORM, CONFIG_NORM_LAYERNORM } config_norm;
/* How positions enter attention: rotary embeddings applied to q and k (Llama, Qwen),
 * ALiBi biases inside the attention kernel, or learned absolute embeddings added to the
 * input (GPT-2, llm-foundry's MPT by default). */
typedef enum config_position { CONFIG_POSITION_ROPE, CONFIG_POSITION_ALIBI, CONFIG_POSITION_LEARNED } config_position;

typedef struct config_model {
	char name[CONFIG_NAME_MAX];
	char path[CONFIG_PATH_MAX];
	int layers;       /* L */
	int hidden;       /* h */
	int heads;        /* a, query heads */
	int kv_heads;     /* g */
	int head_dim;     /* d */
	int ffn;          /* MLP intermediate size */
	int vocab;        /* V */
	int max_position; /* longest sequence the model was configured for */
	bool tied_embeddings;
	bool qkv_bias;
	config_mlp mlp;
	config_norm norm;
	config_position position; /* model key 'position', default rope */
} config_model;

/* Every dimension against the range table (config/ranges.h). */
bool config_model_check(const config_model *m, config_error *err);
/* Total parameter count (embeddings, a learned position table, attention, MLP, norms,
 * biases, untied head). */
double config_model_params(const config_model *m);
/* The learned position table's parameters: max_position x hidden for position learned
 * (a trained embedding, as GPT-2's wpe, Megatron's --max-position-embeddings table and
 * MPT's learned positions are), 0 for RoPE and ALiBi, which have no weights. */
double config_model_position_params(const config_model *m);
/* Parameters of one transformer layer. */
double config_model_layer_params(const config_model *m);

/* -------------------------------------------------------------- platforms --- */
typedef enum config_fabric {
	CONFIG_FABRIC_NVSWITCH,    /* any-to-any at the per-GPU NVLink bandwidth */
	CONFIG_FABRIC_NVLINK_MESH, /* a direct link of pair_bandwidth between each GPU pair */
	CONFIG_FABRIC_PCIE,        /* per-GPU PCIe link to a host switch */
} config_fabric;

typedef enum config_topology {
	CONFIG_TOPO_SINGLE_SWITCH, /* every NIC on one non-blocking switch */
	CONFIG_TOPO_FAT_TREE,      /* two levels: leaves of nodes_per_leaf nodes, spine oversubscribed */
	CONFIG_TOPO_RAIL,          /* rail-optimized: NIC i of every node on rail switch i */
} config_topology;

/* GPU architectures with kernel-efficiency data (engine/compute.c). */
typedef enum config_gpu_arch { CONFIG_ARCH_AMPERE, CONFIG_ARCH_HOPPER } config_gpu_arch;
/* Attention kernel families (engine/compute.c): FlashAttention-2, FlashAttention-3
 * (Hopper only), cuDNN's fused attention, and the Triton FlashAttention kernel
 * (flash_attn_triton.py as llm-foundry's `attn_impl: triton` runs it), which does not skip
 * the tiles a causal mask removes. */
typedef enum config_attn_kernel {
	CONFIG_ATTN_FA2,
	CONFIG_ATTN_FA3,
	CONFIG_ATTN_CUDNN,
	CONFIG_ATTN_TRITON
} config_attn_kernel;
#define CONFIG_ATTN_KERNELS 4

/* A measured attention throughput (calibration `attention_points`): `flops` FLOP/s of one
 * kernel family at sequence length `seq` and head dimension `head_dim`, forward or
 * backward, causal or not, counted the way FlashAttention's benchmarks count FLOPs
 * (4·S²·heads·d per sequence forward, halved when causal; backward 2.5x forward). */
typedef struct config_attn_point {
	int kernel;   /* config_attn_kernel */
	int bwd;      /* 0 forward, 1 backward */
	int causal;   /* 0 or 1 */
	int head_dim;
	double seq;
	double flops;
} config_attn_point;
#define CONFIG_MAX_ATTN_POINTS 32

typedef struct config_gpu {
	char name[CONFIG_NAME_MAX];
	double peak_flops;   /* dense bf16 FLOP/s */
	double memory_bytes; /* HBM capacity */
	double hbm_bandwidth;/* bytes/s */
	int sms;             /* streaming multiprocessors (`sms:`, default by GPU name) */
	config_gpu_arch arch;/* `arch:`, default by GPU name */
} config_gpu;

/* A heterogeneous platform's nodes, in order (`node_groups:`): `nodes` nodes whose GPUs
 * are `gpu` and which have `nics` NICs (each defaults to the platform's). */
#define CONFIG_MAX_NODE_GROUPS 8
/* NCCL protocols a calibration may name (LL, LL128, Simple: engine/nccl.h nccl_proto). */
#define CONFIG_NCCL_PROTOS 3
/* A calibration's `protocols:` entries: [0, CONFIG_NCCL_PROTOS) one per protocol (ll,
 * ll128, simple: any algorithm), then one per (algorithm, protocol) pair NCCL runs
 * (tree_ll, tree_ll128, tree_simple, ring_ll, ring_ll128, ring_simple, nvls: NVLS runs
 * Simple only), in config_cal_entry's order (config_cal_entry_keys). */
#define CONFIG_CAL_ENTRIES 10
typedef struct config_node_group {
	int nodes;
	int nics;
	config_gpu gpu;
} config_node_group;

/* NCCL releases whose tuner constants engine/nccl.c implements (platform nccl.version). */
enum { CONFIG_NCCL_2_19, CONFIG_NCCL_2_28, CONFIG_NCCL_RELEASES };
extern const char *const config_nccl_release_names[CONFIG_NCCL_RELEASES];
/* How the job's processes hold the GPUs (platform nccl.processes): one process per GPU
 * (torchrun, DeepSpeed, mpirun: the default) or one process driving all GPUs of a node
 * (nccl-tests -g N, or -t N threads). NCCL's P2P transport stages a transfer through the
 * receiver's FIFO between processes and writes through direct pointers within one
 * (src/transport/p2p.cc p2pSendSetup, P2P_SAME_PID; engine/nccl.c p2p_cost). */
enum { CONFIG_NCCL_PROCS_PER_GPU, CONFIG_NCCL_PROCS_PER_NODE, CONFIG_NCCL_PROCS };
extern const char *const config_nccl_processes_names[CONFIG_NCCL_PROCS];

typedef struct config_platform {
	char name[CONFIG_NAME_MAX];
	char path[CONFIG_PATH_MAX];
	int nodes;
	int gpus_per_node;
	config_gpu gpu;
	/* node_groups: 0 for a uniform platform; else groups covering nodes 0.. in order (their
	 * nodes add up to `nodes`). Only the SimGrid engine runs them. */
	int n_node_groups;
	config_node_group node_groups[CONFIG_MAX_NODE_GROUPS];
	/* The attention kernel the platform's software stack runs (`attention_kernel:`);
	 * a job may override it (config_job.attention_kernel). */
	config_attn_kernel attention_kernel;
	/* Measured attention throughputs that replace the published curves (calibration). */
	int n_attn_points;
	config_attn_point attn_points[CONFIG_MAX_ATTN_POINTS];
	struct {
		config_fabric fabric;
		/* Both are always filled: for nvswitch/pcie pair_bandwidth = bandwidth (one pair may use
		 * a GPU's whole link); for nvlink-mesh bandwidth defaults to pair_bandwidth x
		 * (gpus_per_node - 1), the sum of a GPU's pair links. */
		double bandwidth;      /* per GPU, per direction, bytes/s (nvswitch, pcie) */
		double pair_bandwidth; /* per GPU pair, per direction, bytes/s (nvlink-mesh) */
		double latency;        /* seconds */
	} intra;
	struct {
		int nics_per_node;
		double nic_bandwidth; /* per NIC, per direction, bytes/s */
		double latency;       /* seconds, NIC to NIC through the network */
		/* seconds; 0 unless the file declares `message_latency`: the network transport's
		 * own cost per message, paid by every NCCL protocol and algorithm (a TCP transport
		 * such as GPUDirect-TCPX/TCPXO), where NCCL's hwLat gives RDMA's per-protocol
		 * latencies (engine/nccl.c) */
		double message_latency;
		config_topology topology;
		int nodes_per_leaf;      /* fat-tree: nodes under one leaf switch; 0 when not given (other topologies) */
		double oversubscription; /* fat-tree: leaf down / up bandwidth ratio, >= 1; 1 elsewhere */
	} inter;
	/* Fixed cost of one collective call (NCCL launch and synchronisation), seconds; 0 when
	 * the platform file has no `collective_overhead`. */
	double coll_overhead;
	/* Memory a GPU loses before the model's tensors (CUDA context, cuBLAS workspace, NCCL
	 * buffers, allocator fragmentation), bytes, when the platform file declares
	 * `memory_reserve`; otherwise the job's or the derived default applies (see
	 * workload_memory_reserve). */
	bool has_memory_reserve;
	double memory_reserve;
	/* The link from each GPU to its host's memory (optional `host_link:` section): the
	 * bandwidth one GPU's copies reach per direction, the latency of one copy, and the host
	 * memory of one node that offloaded activations may use. host.bandwidth = 0: none
	 * declared (activation offload is refused). */
	struct {
		double bandwidth; /* bytes/s per GPU per direction (achievable) */
		double latency;   /* seconds per copy */
		double memory;    /* bytes of host memory per node */
		/* bytes/s: the node's DRAM bandwidth, which DeepSpeedCPUAdam's memory-bound step
		 * shares among the node's GPUs' shards (optimizer offload); 0: not declared
		 * (optimizer offload is refused) */
		double memory_bandwidth;
	} host;
	/* NCCL's view of the node (optional `nccl:` section; docs/model.md "Collectives"):
	 * the GPU generation selects the per-generation constants of NCCL's tuning model
	 * (src/graph/tuning.cc), channels the collective channels NCCL's ring graph finds,
	 * nvls whether the NVSwitch supports NVLink SHARP (third-generation NVSwitch, H100+). */
	struct {
		int compute_capability; /* 70, 80, 90 or 100; gpu.arch's when not given (0 reads as 80) */
		int channels;           /* ring channels; derived (engine/nccl.c) when 0 */
		bool nvls;              /* NVLS all-reduce / all-gather / reduce-scatter available */
		/* the NCCL release whose tuning.cc tables the model uses (`version:`, "2.19" or
		 * "2.28"; engine/nccl.c): CONFIG_NCCL_2_19 when not given */
		int release;
		/* CONFIG_NCCL_PROCS_*: `processes:` per_gpu (default) or per_node */
		int processes;
		bool links_only;        /* a calibration's `collectives: links`: no NCCL terms */
		/* Forced choices (spsim collective --alg tree|nvls, --proto): 1 + nccl_algo /
		 * nccl_proto (engine/nccl.h), 0 = NCCL's own choice; never read from a file. */
		int force_algo, force_proto;
		/* A calibration's per-protocol links (calibration `protocols:`): [0] intra-node,
		 * [1] inter-node; per entry (CONFIG_CAL_ENTRIES: LL, LL128, Simple in
		 * engine/nccl.h's order, then the (algorithm, protocol) pairs of
		 * config_cal_entry; the pair's entry wins over its protocol's). The latency of one
		 * hop and the bus bandwidth (per GPU intra-node, per NIC inter-node) that protocol
		 * realizes on that path, NCCL's protocol share and per-channel caps included;
		 * 0 = not calibrated (the class's links and NCCL's protocol model apply). They time
		 * the (algorithm, protocol) NCCL's tuner chose; they never change the choice. */
		struct {
			double latency, bandwidth;
		} proto_cal[2][CONFIG_CAL_ENTRIES];
		/* NCCL's own view of the links, which no calibration changes (NCCL does not read
		 * spsim's calibration): the platform's values before the first calibration was
		 * applied (config_apply_calibration snapshots them). The tuner chooses the
		 * algorithm and protocol, and the graph search the channels, on these. */
		struct {
			bool set;
			double intra_bw, pair_bw, intra_lat, eff_intra, nic_bw, inter_lat, eff_inter;
		} tuner;
		/* The platform is a placeholder (spsim calibrate's generic layout without
		 * --platform): the tuner chooses on the calibrated class links; protocol entries
		 * still never change the choice. */
		bool tuner_follows;
	} nccl;
	struct {
		double gemm;      /* share of peak_flops a large, tile-aligned GEMM reaches (the plateau of
				   * the GEMM model: tile and wave quantization scale it down) */
		bool gemm_measured; /* gemm comes from a calibration: a measured whole-GEMM
				     * efficiency that replaces the shape model */
		double attention; /* > 0: attention at this share of peak whatever its shape (the
				   * scalar override of the kernel curves); 0: the curves */
		double memory;    /* achievable fraction of hbm_bandwidth for memory-bound kernels */
		double intra_link;/* achievable fraction of intra-node link bandwidth */
		double inter_link;/* achievable fraction of NIC bandwidth */
	} eff;
} config_platform;

/* Whether spsim has a published efficiency curve for a kernel family on an architecture. */
bool config_attn_kernel_has_curve(config_attn_kernel k, config_gpu_arch arch);
/* NULL when platform p can time attention with kernel family k; otherwise why not, as a
 * phrase ("runs only on hopper GPUs"): FlashAttention-3 needs Hopper, and a family without
 * a published curve on the GPU needs calibration points or the efficiency.attention
 * override. */
const char *config_attn_kernel_unusable(const config_platform *p, config_attn_kernel k);

/* nodes x gpus_per_node; config_platform_check guarantees it fits (<= 2^24). */
static inline int config_platform_gpus(const config_platform *p)
{
	int n;
	return __builtin_mul_overflow(p->nodes, p->gpus_per_node, &n) ? -1 : n;
}
/* Every field against the range table (config/ranges.h) and nodes x gpus_per_node within
 * the GPU count's range, after any override (--nodes, sweep axes, calibration). */
bool config_platform_check(const config_platform *p, config_error *err);
/* Node groups (nodegroups.c): the group of node u (-1 without groups or beyond them), the
 * GPU of node u, its NIC count, and whether the platform mixes node kinds. */
int config_platform_group_of(const config_platform *p, int node);
const config_gpu *config_platform_gpu_of(const config_platform *p, int node);
int config_platform_nics_of(const config_platform *p, int node);
bool config_platform_heterogeneous(const config_platform *p);
/* Effective (efficiency-scaled) bandwidths used by the engines, bytes/s. */
double config_platform_intra_bw(const config_platform *p);      /* per GPU per direction */
double config_platform_intra_pair_bw(const config_platform *p); /* per pair (mesh) */
double config_platform_nic_bw(const config_platform *p);        /* per NIC */

/* ------------------------------------------------------------ calibration --- */
/* A calibration file (written by validate mode and `spsim calibrate`, read by
 * --calibration) overrides a platform's measured quantities:
 *
 *   calibration:
 *     source: validate            # or nccl-tests; free text
 *     platform: a100-2x4-ib400    # optional: the platform it was measured on
 *     intra_node: {latency: 3us, bandwidth: 230GB/s}   # achieved, per GPU per direction
 *     intra_node:                 # or, with per-protocol links (each optional):
 *       latency: 3us
 *       bandwidth: 230GB/s
 *       protocols: {ll128: {latency: 1.2us, bandwidth: 70GB/s}, simple: {latency: 9us, bandwidth: 231GB/s}}
 *       # or per (algorithm, protocol) where one protocol runs several algorithms:
 *       # protocols: {simple: {...}, nvls: {latency: 20us, bandwidth: 380GB/s}, ring_simple: {...}}
 *     inter_node: {latency: 9us, bandwidth: 46GB/s}    # achieved, per NIC
 *     efficiency: {gemm: 0.72, attention: 0.55, memory: 0.8}
 *     collective_overhead: 0      # fixed cost per collective call (a time, or 0)
 *     collectives: nccl           # or links: measured without NCCL (validate's CPU transport)
 *     gpu: H200-SXM-141GB         # optional: the GPU measured, as the platform's gpu.name
 *     attention_kernel: cudnn     # optional: the attention kernel family validate measured
 *     attention_points:           # optional: measured attention rates, one per shape
 *       - {kernel: cudnn, seq: 8192, head_dim: 128, heads: 32, kv_heads: 8, direction: fwd,
 *          causal: true, tflops: 540, p10: 531, p90: 548}
 *       - {kernel: cudnn, seq: 2K, head_dim: 128, direction: fwd, tflops: 480}
 *
 * A calibration naming a gpu is refused for a platform whose gpu.name differs (case
 * aside): efficiencies measured on one GPU do not hold on another
 * (config_calibration_check).
 *
 * A calibration's efficiency.gemm and efficiency.attention are measured whole-kernel
 * efficiencies (validate mode times the layer's own GEMMs and attention): they replace the
 * shape models, every GEMM or attention op then runs at that share of peak. (In a platform
 * file efficiency.gemm is the plateau of the GEMM model, which tile and wave quantization
 * scale down; efficiency.attention there is the same fixed override.)
 *
 * attention_points: kernel is the family measured (flash-attn-2 | flash-attn-3 | cudnn |
 * flash-attn-triton, or another name such as validate's wmma-fallback, kept in the file but not applied);
 * seq the sequence length the kernel saw (16K allowed); head_dim; heads/kv_heads the query
 * and kv heads it held (optional); direction fwd | bwd; causal true | false (default true);
 * tflops the median rate in 1e12 FLOP/s counted as FlashAttention's benchmarks count them
 * (kernels.h), p10/p90 the 10th/90th percentiles (default: tflops). Points of a known
 * family replace that family's published curve for the (head_dim, direction, causal) they
 * name: between points the rate is interpolated linearly in log(seq), beyond the first
 * and last it is held; wave quantization of the op's thread blocks on the GPU's SMs still
 * applies (benchmarks run full waves). Of points that differ only in heads, the one with
 * the most heads (the fullest waves) is applied. At most 64 points are read and 32 applied;
 * a later calibration's points replace earlier ones wholesale.
 *
 * protocols (under intra_node or inter_node; keys ll, ll128, simple, each {latency,
 * bandwidth}, either optional): the latency of one hop and the bus bandwidth that NCCL
 * protocol realizes on that path (per GPU intra-node, per NIC inter-node), its protocol
 * share and channel caps included. They time the (algorithm, protocol) NCCL's tuner
 * chooses; the choice itself stays on the platform's uncalibrated links, as NCCL makes it
 * (config_platform.nccl.tuner). A protocol without an entry uses the class's links.
 * Where one protocol runs several algorithms (Simple: ring, tree and NVLS on NVSwitch-3
 * nodes), an entry may name the pair: tree_ll, tree_ll128, tree_simple, ring_ll,
 * ring_ll128, ring_simple, nvls (NVLS/Simple). The most specific entry wins, per field:
 * the pair's latency or bandwidth where it has one, else the protocol's, else the class's.
 *
 * Every section and key is optional; present bandwidths replace the raw link bandwidth
 * and set that link class's efficiency to 1 (the measurement already includes it). A
 * calibration with any latency also replaces the platform's collective_overhead: by its
 * own value, or by 0 (a fitted latency is an intercept that already holds the per-call
 * cost). */
#define CONFIG_MAX_ATTENTION_POINTS 64
typedef enum config_direction { CONFIG_DIRECTION_FWD, CONFIG_DIRECTION_BWD } config_direction;
typedef struct config_attention_point {
	char kernel[32];
	long seq;
	int head_dim, heads, kv_heads;
	config_direction direction;
	bool causal;
	double tflops, p10, p90; /* TFLOP/s: median, 10th and 90th percentile */
} config_attention_point;

/* One protocol's calibrated link (calibration `protocols: {ll|ll128|simple: {latency,
 * bandwidth}}`). */
typedef struct config_proto_link {
	bool has_latency, has_bw;
	double latency, bandwidth;
} config_proto_link;

typedef struct config_calibration {
	char path[CONFIG_PATH_MAX];
	char source[CONFIG_NAME_MAX];
	char platform[CONFIG_NAME_MAX];
	bool has_intra_latency, has_intra_bw, has_inter_latency, has_inter_bw;
	double intra_latency, intra_bw, inter_latency, inter_bw;
	/* per link class ([0] intra_node, [1] inter_node) and entry (CONFIG_CAL_ENTRIES: the
	 * protocols LL, LL128, Simple, then the (algorithm, protocol) pairs): the `protocols:`
	 * entries (config_platform.nccl.proto_cal) */
	config_proto_link proto[2][CONFIG_CAL_ENTRIES];
	bool has_gemm, has_attention, has_memory;
	double gemm, attention, memory;
	bool has_overhead;
	double overhead; /* collective_overhead: fixed cost per collective call */
	/* `collectives: links`: measured on a transport that is not NCCL (validate's CPU
	 * transport): the engines then cost collectives on the links alone, without NCCL's
	 * tuner, base latencies and p2p channels (docs/nccl-tests.md). Default `nccl`. */
	bool links_only;
	char gpu[CONFIG_NAME_MAX];              /* gpu: the GPU measured; "" when not said */
	char attention_kernel[CONFIG_NAME_MAX]; /* attention_kernel: the family measured */
	int n_attention_points;
	config_attention_point attention_points[CONFIG_MAX_ATTENTION_POINTS];
} config_calibration;

/* false, with both names in err, when the calibration names a GPU other than the
 * platform's gpu.name (compared case-insensitively). */
bool config_calibration_check(const config_calibration *c, const config_platform *p, config_error *err);
/* Copies a calibration's attention points of known kernel families into the platform's
 * curve points (config_apply_calibration calls it). */
void config_calibration_attn_points(const config_calibration *c, config_platform *p);

/* ------------------------------------------------------------------ jobs ---- */
/* RING: ring attention / context parallelism over the SP domain (Megatron-Core's
 * cp_comm_type p2p: TransformerEngine AttnFuncWithCPAndKVP2P; ring-flash-attention). */
/* USP: Ulysses of degree U inside ring attention of degree R (SP = U x R; Fang & Zhao,
 * arXiv 2405.07719, yunchang's LongContextAttention). */
typedef enum config_strategy {
	CONFIG_STRATEGY_ULYSSES,
	CONFIG_STRATEGY_BASP,
	CONFIG_STRATEGY_RING,
	CONFIG_STRATEGY_USP
} config_strategy;
/* How ring attention splits a sequence over R ranks: zigzag (two chunks i and 2R-1-i per
 * rank, causal work balanced: ring-flash-attention zigzag_ring_flash_attn.py, Megatron-CP
 * get_batch_on_this_cp_rank) or naive (one contiguous chunk per rank). */
typedef enum config_cp_split { CONFIG_CP_SPLIT_ZIGZAG, CONFIG_CP_SPLIT_NAIVE } config_cp_split;
/* How ring attention's ranks exchange K and V (Megatron-Core's cp_comm_type for a plain
 * context-parallel group): p2p passes KV blocks around the ring (TransformerEngine
 * AttnFuncWithCPAndKVP2P); all_gather gathers the whole K and V before attention and
 * reduce-scatters dK, dV after it (AttnFuncWithCPAndKVAllGather, transformer_engine/pytorch/
 * attention/dot_product_attention/context_parallel.py). */
typedef enum config_cp_comm { CONFIG_CP_COMM_P2P, CONFIG_CP_COMM_ALL_GATHER } config_cp_comm;
/* Megatron-Core's --cp-comm-type values, each one of spsim's strategies for the SP group
 * (config_job_apply_cp_comm_type): p2p = ring, all_gather = ring:comm=all_gather, a2a =
 * ulysses, a2a+p2p = usp (TransformerEngine's AttnFuncWithCPAndKVP2P on a two-level group:
 * all-to-alls, flash_attn_a2a_communicate, over the inner group, the ring over the outer). */
typedef enum config_cp_comm_type {
	CONFIG_CP_TYPE_P2P,
	CONFIG_CP_TYPE_ALL_GATHER,
	CONFIG_CP_TYPE_A2A,
	CONFIG_CP_TYPE_A2A_P2P
} config_cp_comm_type;
/* Activation recomputation: none; full (each layer keeps only its input and is run again in
 * backward: Megatron-LM --recompute-granularity full, DeepSpeed activation checkpointing);
 * selective (only the core attention is checkpointed and run again: Korthikanti et al.,
 * arXiv 2205.05198 §5, Megatron-LM --recompute-granularity selective, whose default
 * --recompute-modules is core_attn). */
typedef enum config_recompute { CONFIG_RECOMPUTE_NONE, CONFIG_RECOMPUTE_FULL, CONFIG_RECOMPUTE_SELECTIVE } config_recompute;
#define CONFIG_RECOMPUTES 3
typedef enum config_dtype { CONFIG_DTYPE_BF16 } config_dtype;
/* Algorithm of the SP all-to-alls: NCCL's direct exchange (DeepSpeed's default), pairwise
 * rounds, or hierarchical (gather per node over NVLink, exchange between nodes, scatter)
 * for groups that span nodes. */
/* BASP when the micro-batch does not divide the SP size (see workload_compose). */
typedef enum config_basp_uneven {
	CONFIG_BASP_UNEVEN_ERROR,
	CONFIG_BASP_UNEVEN_UNEQUAL,
	CONFIG_BASP_UNEVEN_EXTRA_STEP,
} config_basp_uneven;
typedef enum config_a2a { CONFIG_A2A_DIRECT, CONFIG_A2A_PAIRWISE, CONFIG_A2A_HIERARCHICAL } config_a2a;
/* The training code whose saved tensors the memory model counts (docs/model.md "Memory"):
 * eager PyTorch Hugging Face modules under DeepSpeed (unfused SwiGLU, fp32 RMSNorm copies,
 * fp32 log-softmax loss), or Megatron-Core's fused kernels. hf-trainer: the same modules
 * in a training loop that drops the model output (the bf16 logits) before backward
 * (transformers' Trainer.training_step and the trainers built on it, torchtitan's
 * `del pred`); hf: a hand-written loop that keeps `outputs` through backward. */
typedef enum config_impl { CONFIG_IMPL_HF, CONFIG_IMPL_MEGATRON, CONFIG_IMPL_HF_TRAINER } config_impl;
#define CONFIG_IMPLS 3
/* How ZeRO-3 fetches parameters (docs/model.md "ZeRO-3 parameter fetch"): DeepSpeed's
 * per-submodule gathers with a prefetch window of prefetch_bucket elements
 * (deepspeed/runtime/zero/partitioned_param_coordinator.py, fetch_sub_module), or a whole
 * layer (one block) gathered one layer ahead, as PyTorch FSDP prefetches per FSDP unit. */
typedef enum config_zero3_prefetch { CONFIG_ZERO3_PREFETCH_DEEPSPEED, CONFIG_ZERO3_PREFETCH_LAYER } config_zero3_prefetch;
/* Where the optimizer states live (DeepSpeed zero_optimization.offload_optimizer.device):
 * none = on the GPU; cpu = ZeRO-Offload (arXiv 2101.06840): fp32 master weights, Adam m
 * and v in host memory, Adam run by DeepSpeedCPUAdam on the host. */
typedef enum config_offload_optimizer { CONFIG_OFFLOAD_OPT_NONE, CONFIG_OFFLOAD_OPT_CPU } config_offload_optimizer;

typedef struct config_job {
	config_strategy strategy;
	int gpus;        /* W; 0 = all GPUs of the platform */
	int sp;          /* N; 0 = W */
	int micro_batch; /* B: sequences per SP domain per micro-step */
	long seq_len;    /* S */
	int grad_accum;
	int zero_stage;  /* 0..3 */
	config_recompute recompute;
	config_dtype dtype;
	int zero_overlap;            /* -1: DeepSpeed default for the stage, 0 off, 1 on */
	double reduce_bucket_elems;  /* DeepSpeed reduce_bucket_size */
	double allgather_bucket_elems; /* DeepSpeed allgather_bucket_size */
	double prefetch_bucket_elems;  /* stage3_prefetch_bucket_size */
	/* reduce_bucket / prefetch_bucket given as "auto" (transformers' Trainer fills them
	 * from the model's hidden size, config_job_resolve_auto); the _elems field is 0 until
	 * workload_check resolves it against the model, then h^2 or floor(0.9 h^2). */
	bool reduce_bucket_auto;
	bool prefetch_bucket_auto;
	bool fp32_grad_comm;         /* reduce gradients in fp32 (DeepSpeed default when SP > 1) */
	int fp32_grad_comm_set;      /* 0: derive from SP, 1: explicit */
	bool contiguous_gradients;   /* DeepSpeed ZeRO's contiguous_gradients (default true) */
	config_a2a a2a;              /* SP all-to-all algorithm */
	config_basp_uneven basp_uneven; /* what BASP does when N % B != 0 */
	config_impl impl;            /* what each layer saves for backward (default hf) */
	config_zero3_prefetch zero3_prefetch; /* ZeRO-3 parameter fetch style (default deepspeed) */
	bool memory_reserve_set;     /* memory_reserve given (job key or --memory-reserve) */
	double memory_reserve;       /* bytes; wins over the platform's and the default */
	int attention_kernel;        /* config_attn_kernel, or -1: the platform's attention_kernel */
	config_strategy basp_inner;  /* BASP: what each group of K ranks runs (ulysses, ring or usp) */
	int ulysses_degree;          /* USP: U (0: derived; workload_check fills it in) */
	int ring_degree;             /* USP: R (0: derived; U x R = the SP group) */
	config_cp_split cp_split;    /* ring attention's sequence split (default zigzag) */
	config_cp_comm cp_comm;      /* ring attention's KV exchange (default p2p) */
	/* Memory techniques of long-context training (docs/model.md "Memory techniques"):
	 * offload_activations: the activation checkpoints (each layer's input, with recompute
	 * full) copied to host memory while the next layer computes and fetched back before
	 * backward (DeepSpeed activation_checkpointing.cpu_checkpointing; ALST, arXiv
	 * 2506.13996); needs the platform's host_link.
	 * tile_mlp, tile_logits: the MLP and the LM head + loss run in that many sequence tiles
	 * (ALST's TiledMLP and tiled loss; Liger's fused linear cross entropy, arXiv 2410.10989);
	 * 1 = untiled. */
	bool offload_activations;
	/* offload_optimizer: ZeRO-Offload of the optimizer (config_offload_optimizer; ZeRO >= 1
	 * and the platform's host_link with its memory_bandwidth; docs/model.md "Memory
	 * techniques"). */
	config_offload_optimizer offload_optimizer;
	int tile_mlp;
	int tile_logits;
} config_job;

/* DeepSpeed defaults (docs/sources.md [DS-zero-config], [DS-sp-comm]). seq_len is
 * left 0 (not set): callers must supply one. */
void config_job_defaults(config_job *job);
/* Effective settings after DeepSpeed's defaults: overlap_comm (-1 -> on only for stage 3)
 * and fp32 gradient communication (unset -> on when sp > 1). */
bool config_job_zero_overlap(const config_job *job);
/* Every number of the job against the range table (gpus and sp may be 0: "all"). */
bool config_job_check(const config_job *job, config_error *err);
/* The "auto" bucket sizes against the model, as transformers' Trainer fills them
 * (src/transformers/integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_finalize;
 * docs/sources.md [HF-ds-auto]): reduce_bucket = h^2, prefetch_bucket = int(0.9 * h^2),
 * h the model's hidden size. Sets the _elems fields of the settings given as auto and
 * leaves the others; again with another model, it resolves them again. The one place
 * auto is resolved: workload_check calls it, and engine_buckets_supported on its copy. */
void config_job_resolve_auto(config_job *job, const config_model *m);
/* The ZeRO settings a job moves off their defaults that its stage does not use
 * (prefetch_bucket and zero3_prefetch act at stage 3 only, allgather_bucket at stages
 * 1-3, contiguous_gradients off at DeepSpeed's stages 1-3 without optimizer offload at 1-2), as "--flag value (ZeRO-3 only), ..." into buf; false when there are none. */
bool config_job_unused_zero(const config_job *job, char *buf, size_t n);
bool config_job_fp32_grad_comm(const config_job *job, int sp);
/* contiguous_gradients as DeepSpeed runs it: stages 1-2 force it on under optimizer offload. */
bool config_job_contiguous_gradients(const config_job *job);
/* The attention kernel a job runs: its own choice, else the platform's. */
config_attn_kernel config_job_attention_kernel(const config_job *job, const config_platform *p);

/* The job keys that set plain fields of config_job (recompute, dtype, a2a, basp_uneven,
 * attention_kernel, impl, memory_reserve, zero_overlap, the ZeRO buckets, fp32_grad_comm,
 * contiguous_gradients, offload_activations, tile_mlp, tile_logits): one table (job.c) that job files and sweep
 * specs read through. find: a key's index, -1 when it is not one of them; key: the
 * index's key (NULL past the end); copy: the fields setting i sets, from src to dst. */
int config_job_setting_find(const char *key);
const char *config_job_setting_key(int i);
void config_job_setting_copy(int i, config_job *dst, const config_job *src);
/* Whether setting i holds the same value in a and b (1GiB and 1024MiB, 5e7 and 50000000). */
bool config_job_setting_equal(int i, const config_job *a, const config_job *b);

/* The spellings of the enums in YAML, flags and reports (names.c), indexed by value. */
extern const char *const config_strategy_names[4];
extern const char *const config_cp_split_names[2];
extern const char *const config_cp_comm_names[2];
extern const char *const config_cp_comm_type_names[4];
extern const char *const config_recompute_names[CONFIG_RECOMPUTES];
extern const char *const config_a2a_names[3];
extern const char *const config_basp_uneven_names[3];
extern const char *const config_impl_names[CONFIG_IMPLS];
/* hf or hf-trainer: the eager Hugging Face modules, whatever the loop */
static inline bool config_impl_hf(config_impl impl)
{
	return impl == CONFIG_IMPL_HF || impl == CONFIG_IMPL_HF_TRAINER;
}
extern const char *const config_zero3_prefetch_names[2];
extern const char *const config_offload_optimizer_names[2];
extern const char *const config_fabric_names[3];
extern const char *const config_topology_names[3];
extern const char *const config_gpu_arch_names[2];
extern const char *const config_attn_kernel_names[CONFIG_ATTN_KERNELS];

/* Parses a strategy spec NAME[:key=value]...: NAME ulysses | basp | ring | usp; keys
 * inner=ulysses|ring|usp (basp), split=zigzag|naive (ring attention: ring, usp, or basp
 * with inner=ring|usp), comm=p2p|all_gather (ring, basp:inner=ring), u=U and r=R (usp),
 * and sp=N when sp is non-NULL. Sets job->strategy, basp_inner, cp_split, cp_comm,
 * ulysses_degree, ring_degree (and *sp). On bad input writes a sentence naming the valid
 * choices. */
bool config_strategy_parse(const char *spec, config_job *job, int *sp, config_error *err);
/* The label of a job's strategy: "ulysses", "basp", "ring", "basp:inner=ring",
 * "ring:split=naive" (into buf). */
const char *config_strategy_label(const config_job *job, char *buf, size_t len);
/* True when the job runs ring attention (ring, usp, or basp with inner=ring|usp). */
bool config_job_ring(const config_job *job);
/* True when the job runs USP (usp, or basp with inner=usp). */
bool config_job_usp(const config_job *job);
/* True when the job's ring attention gathers K and V (ring:comm=all_gather, or basp with
 * inner=ring and comm=all_gather). */
bool config_job_all_gather(const config_job *job);
/* Parses a Megatron-Core --cp-comm-type value (p2p, all_gather, a2a, a2a+p2p); -1 if none. */
int config_cp_comm_type_parse(const char *name);
/* Sets what the SP group runs from a --cp-comm-type value: BASP's inner strategy when
 * the job is BASP, else the job's strategy (p2p -> ring, all_gather -> ring with
 * comm=all_gather, a2a -> ulysses, a2a+p2p -> usp, its Ulysses degree derived inside a
 * node unless given). When strategy_given, the job's strategy was named explicitly: a
 * non-BASP strategy that differs from the type's is an error naming both. */
bool config_job_apply_cp_comm_type(config_job *job, config_cp_comm_type type, bool strategy_given, config_error *err);

/* ---------------------------------------------------------------- loaders --- */
/* Directories searched for shipped names, in order: $SPSIM_DATA_DIR, the build tree's
 * source dir (compiled in), the install datadir (compiled in). */
bool config_find_data(const char *kind, const char *name_or_path, char *out, size_t out_len, config_error *err);
/* False with "PATH is a directory, expected WHAT file" when path is a directory (what:
 * "a YAML", "an nccl-tests log"), with "PATH is a device" for a character or block device
 * or a socket (/dev/zero would never end), and for an empty path; true otherwise (opening
 * it reports what else is wrong). */
bool config_check_file(const char *path, const char *what, config_error *err);
/* The directory part of a file's path ("." when none). */
void config_dir_of(const char *path, char *out, size_t len);
/* Opens a new, uniquely named file beside path (path + ".XXXXXX", created, never an
 * existing file: a user's PATH.tmp is not overwritten), with the permissions a new file
 * gets from the umask, for writing a file whole and renaming it over path. tmp (len
 * bytes) receives its name. NULL with err set when it cannot be created. */
FILE *config_open_beside(const char *path, char *tmp, size_t len, config_error *err);
/* A value that names a file (has a '/' or ends in .yaml/.yml) and is relative is taken
 * relative to dir; shipped names and absolute paths are copied as they are. False when
 * the result does not fit in len. */
bool config_resolve_relative(const char *dir, const char *value, char *out, size_t len);
/* Lists shipped names of a kind ("models" or "platforms"), sorted; returns count, fills
 * names (caller frees each and the array). */
int config_list_data(const char *kind, char ***names);

bool config_load_model(const char *name_or_path, config_model *out, config_error *err);
bool config_load_platform(const char *name_or_path, config_platform *out, config_error *err);
bool config_load_calibration(const char *path, config_calibration *out, config_error *err);
/* Reads a job YAML whose keys match the CLI flags (gpus, strategy, sp, micro_batch,
 * seq_len, grad_accum, zero, recompute, dtype, zero_overlap, a2a, basp_uneven, attention_kernel, model, platform, nodes,
 * calibration), under a top-level `job:` key:
 *
 *   job:
 *     model: llama-3.1-8b        # shipped name or path
 *     platform: a100-2x4-ib400
 *     strategy: basp             # ulysses | basp | ring | usp
 *     basp_inner: ring           # ulysses | ring | usp: what each BASP group runs
 *     ulysses_degree: 4          # USP: U (default: derived, inside a node)
 *     ring_degree: 2             # USP: R (U x R = the SP group)
 *     cp_split: zigzag           # zigzag | naive: ring attention's sequence split
 *     cp_comm_type: all_gather   # p2p | all_gather | a2a | a2a+p2p: Megatron-Core's name for
 *                                # ring | ring:comm=all_gather | ulysses | usp (BASP: its inner)
 *     micro_batch: 4
 *     seq_len: 32K               # or 32768
 *     zero: 2                    # 0..3
 *     zero_overlap: default      # true | false | default (DeepSpeed's per-stage default)
 *     reduce_bucket: 5e8         # elements; also allgather_bucket, prefetch_bucket
 *     fp32_grad_comm: true       # default: derived from SP
 *     contiguous_gradients: true # DeepSpeed ZeRO-1..3: the reduce bucket allocated whole
 *     a2a: direct                # direct | pairwise | hierarchical
 *     basp_uneven: error         # error | unequal | extra-step
 *     impl: hf                   # hf | megatron: what each layer saves for backward
 *     zero3_prefetch: deepspeed  # deepspeed | layer: ZeRO-3 per-submodule or per-layer gathers
 *     memory_reserve: 2GiB       # a size or 0: CUDA context, NCCL, allocator (default derived)
 *     attention_kernel: cudnn    # flash-attn-2 | flash-attn-3 | cudnn | flash-attn-triton
 *                                # (default: the platform's)
 *     what_if: {slow_gpu: ["3:2"]}  # asymmetric what-ifs, read by config_load_whatif
 *
 * Keys absent from the file keep their value in *job (call config_job_defaults first),
 * so CLI flags can be applied on top afterwards. String keys it does not store in
 * config_job go to the out-params when non-NULL: model/platform/calibration (buffers of
 * CONFIG_PATH_MAX bytes; left untouched when the key is absent), nodes (0 when absent).
 * Nothing is written unless the whole file is valid. */
bool config_load_job(const char *path, config_job *job, char *model, char *platform, char *calibration,
		     int *nodes, config_error *err);

/* --------------------------------------------------------------- what-ifs --- */
/* Asymmetric changes to a run (docs/simgrid.md "What-ifs"), given as flags or under the
 * job's `what_if:` key, each in the flag's syntax:
 *   slow_gpu  RANK:FACTOR   compute of world rank RANK takes FACTOR times as long
 *   slow_node NODE:FACTOR   compute of every GPU of node NODE takes FACTOR times as long
 *   degrade   LINK:FACTOR   a link's bandwidth divided by FACTOR; LINK is nic:NODE (every
 *                           NIC of the node), nic:NODE.I, nvlink:NODE.GPU (the GPU's port:
 *                           its NVSwitch or PCIe link, or all its pair links on a mesh),
 *                           nvlink:NODE.A-B (the pair link of an nvlink-mesh), leaf:L (the
 *                           uplink of fat-tree leaf L)
 *   fail_node NODE          the node is lost: the job is placed on the remaining nodes by
 *                           the placement policy, as if they were the whole platform
 *   background SIZE:PERIOD:NODES  another job on the shared fabric: a ring all-reduce of
 *                           SIZE bytes started every PERIOD over nodes A-B (at least two),
 *                           one ring per NIC, from time 0 until the step ends
 * FACTOR is a number from 1 to 1000. */
#define CONFIG_MAX_WHATIF 32
typedef enum config_whatif_kind {
	CONFIG_WHATIF_SLOW_GPU,
	CONFIG_WHATIF_SLOW_NODE,
	CONFIG_WHATIF_DEGRADE,
	CONFIG_WHATIF_FAIL_NODE,
	CONFIG_WHATIF_BACKGROUND,
} config_whatif_kind;
#define CONFIG_WHATIF_KINDS 5
typedef enum config_link_kind { CONFIG_LINK_NIC, CONFIG_LINK_NVLINK, CONFIG_LINK_LEAF } config_link_kind;
typedef struct config_whatif_item {
	config_whatif_kind kind;
	config_link_kind link; /* degrade */
	int node;              /* slow_node, fail_node, degrade (nic, nvlink); the leaf for leaf */
	int rank;              /* slow_gpu */
	int a, b;              /* degrade: nic:N.a, nvlink:N.a[-b]; -1 when not given */
	double factor;         /* slow_*, degrade; 1 for fail_node */
	int last;              /* background: nodes node..last */
	double bytes, period;  /* background: all-reduce size (B) and period (s) */
	char text[48];         /* as the user wrote it (messages quote it); "" when built in code */
} config_whatif_item;
typedef struct config_whatif {
	int n;
	config_whatif_item item[CONFIG_MAX_WHATIF];
} config_whatif;
/* Flag spellings ("slow-gpu", "slow-node", "degrade", "fail-node", "background"); the YAML
 * keys use '_'. */
extern const char *const config_whatif_flags[CONFIG_WHATIF_KINDS];

/* Parses one what-if in the flag syntax and appends it to w; err names the flag and the
 * expected form. */
bool config_whatif_add(config_whatif *w, config_whatif_kind kind, const char *text, config_error *err);
/* Writes a what-if back in the flag syntax ("degrade nic:0.1:2"). */
void config_whatif_format(const config_whatif_item *it, char *buf, size_t len);
/* The what-if for a message: its flag and the text as the user wrote it ("background
 * 1GiB:100ms:4-9", not "1073741824B:0.1s:4-9"); config_whatif_format's when no text was kept
 * (built in code, or longer than the field). */
void config_whatif_label(const config_whatif_item *it, char *buf, size_t len);
/* Checks every what-if against the platform and a job of `world` ranks (0: every GPU):
 * ranks, nodes, NICs, GPUs, leaves and links exist, and the job still fits once the
 * failed nodes are gone. */
bool config_whatif_check(const config_whatif *w, const config_platform *p, int world, config_error *err);
/* The factor by which compute of rank `rank` on node `node` slows (1: none). */
double config_whatif_compute_factor(const config_whatif *w, int rank, int node);
/* The factor by which a link's bandwidth drops (1: none): nic (node, index), nvlink
 * (node, gpu a, gpu b or -1 for a GPU's own port), leaf (leaf index in node). */
double config_whatif_link_factor(const config_whatif *w, config_link_kind link, int node, int a, int b);
/* Nodes failed (distinct) and whether node u is one of them. */
int config_whatif_failed_nodes(const config_whatif *w, int nodes);
bool config_whatif_node_failed(const config_whatif *w, int node);
/* Appends the what-ifs of a `compare --what-if` spec: KIND=VALUE joined by '+', KIND a
 * flag spelling (slow-gpu, slow-node, degrade, fail-node) or its YAML key, e.g.
 * "slow-gpu=3:2+degrade=nic:0:2". Nothing is appended unless the whole spec is valid. */
bool config_whatif_parse_spec(config_whatif *w, const char *spec, config_error *err);
/* Reads the `what_if:` mapping of a job file (keys slow_gpu, slow_node, degrade,
 * fail_node; each a string or a list of strings in the flag syntax) and appends to w. */
bool config_load_whatif(const char *path, config_whatif *w, config_error *err);

/* Writes a calibration in the format above (YAML, quantities with units). */
#include <stdio.h>
bool config_write_calibration(FILE *f, const config_calibration *c);
/* The calibration keys under `protocols:`, in entry order: ll, ll128, simple, then the
 * (algorithm, protocol) pairs (CONFIG_CAL_ENTRIES). */
extern const char *const config_proto_keys[CONFIG_CAL_ENTRIES];
/* The entry of NCCL algorithm algo (tree 0, ring 1, NVLS 2: engine/nccl.h nccl_algo) with
 * protocol proto (LL 0, LL128 1, Simple 2), or -1 for a pair without one (NVLS/LL,
 * NVLS/LL128, p2p). */
int config_cal_entry(int algo, int proto);

/* Snapshots the platform's links as NCCL's own view (nccl.tuner), unless one was taken:
 * what NCCL's tuner and graph search choose on when spsim then changes the links (a
 * calibration, a degraded-link what-if), since NCCL sees the hardware as declared. */
void config_platform_keep_tuner_view(config_platform *p);
/* Applies a calibration on top of a platform: latencies and compute efficiencies
 * replace; a bandwidth replaces the link bandwidth and sets that link class's efficiency
 * to 1. For an nvlink-mesh the intra bandwidth is per GPU, so pair_bandwidth becomes
 * bandwidth / (gpus_per_node - 1). */
void config_apply_calibration(config_platform *p, const config_calibration *c);
/* Loads the calibration file at path, checks it against p and applies it (the three steps
 * every command with --calibration takes, in that order); the calibration read goes to
 * *out when out is not NULL. */
bool config_calibrate_platform(const char *path, config_platform *p, config_calibration *out, config_error *err);

#endif
