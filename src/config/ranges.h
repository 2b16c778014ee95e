/* ranges: the one table of valid ranges for every numeric input (command-line flags, job
 * YAML, sweep specs, platforms, models, calibration files, nccl-tests logs), read by one
 * parser and checker so that the entry points can never disagree.
 *
 * Why bounds at all: every product the program forms from inputs (nodes x GPUs per node,
 * sequence x micro-batch, parameter counts, bytes / bandwidth) must stay representable
 * (int for counts, exact doubles for tokens) and every time finite. The bounds are
 * physical: each is far beyond any machine or model built so far, but close enough that
 * products of bounded inputs cannot overflow; the comment on each row says why.
 *
 * Adding a key is one line in CONFIG_RANGES below:
 *     X(ID, "yaml_key", "--flag" or NULL, TYPE, lo, hi)
 * (lo, hi may be one of the shared CONFIG_RANGE_* pairs below.)
 * TYPE is INT (integer), TOKENS (integer with K/M suffixes, 16K = 16384), NUMBER (a plain
 * decimal number), COUNT (a whole number, exponent form allowed: 5e8) or a unit kind BANDWIDTH, TIME, SIZE, FLOPS (a number with a unit, see
 * config_parse_quantity). Bounds are inclusive. Then read it with yt_range_* (YAML),
 * cli_parse_range (flags) or config_range_parse (anything else). */
#ifndef SPSIM_CONFIG_RANGES_H
#define SPSIM_CONFIG_RANGES_H

#include "config/config.h"

/* Shared physical ranges (SI base units). */
/* Links: 1 MB/s is 100x below 1 Gb Ethernet; 1 PB/s is 500x NVLink 5's 1.8 TB/s per GPU
 * (NVIDIA Blackwell datasheet). Bytes / bandwidth then stays finite for any size. */
#define CONFIG_RANGE_LINK_BW 1e6, 1e15
/* Latencies: 0 is an ideal link, and what spsim calibrate writes for a fitted latency pinned
 * at its lower bound (the engines add a latency, never divide by it); 1 s is 5x a round trip
 * around the Earth. */
#define CONFIG_RANGE_LATENCY 0, 1.0
/* Achievable fractions of a peak: below 0.1% a kernel or link is not modelled, it is a
 * typo (measured GEMM/FlashAttention/NCCL efficiencies sit at 0.3-0.9). */
#define CONFIG_RANGE_EFFICIENCY 1e-3, 1.0
/* Sequence lengths: 2^32 tokens is 400x the longest context announced (10M tokens), and
 * keeps seq_len x micro_batch (<= 2^20) below 2^53, exact in a double. */
#define CONFIG_RANGE_SEQ 1, 4294967296.0

#define CONFIG_RANGES(X)                                                                                  \
	/* cluster: 2^20 nodes x 1024 GPUs per node = 2^30 GPUs still fits an int */                      \
	X(NODES, "nodes", "--nodes", INT, 1, 1048576)                                                      \
	X(GPUS_PER_NODE, "gpus_per_node", "--gpus-per-node", INT, 1, 1024) /* NVL72 racks: 72 GPUs in one domain */     \
	X(GPUS, "gpus", "--gpus", INT, 1, 16777216)                                                        \
	X(SP, "sp", "--sp", INT, 1, 16777216)                                                              \
	X(NICS, "nics", NULL, INT, 1, 1024) /* DGX nodes carry 8 compute NICs */                           \
	X(NODES_PER_LEAF, "nodes_per_leaf", NULL, INT, 1, 1048576)                                         \
	X(OVERSUBSCRIPTION, "oversubscription", NULL, NUMBER, 1, 1024)                                     \
	X(PEAK_FLOPS, "peak_bf16", NULL, FLOPS, 1e9, 1e18) /* B200 dense bf16: 2.25e15 (datasheet) */     \
	X(GPU_MEMORY, "memory", NULL, SIZE, 1e6, 1e15)     /* B200: 192 GB HBM3e */                        \
	X(HBM_BANDWIDTH, "hbm_bandwidth", NULL, BANDWIDTH, 1e9, 1e15) /* B200: 8 TB/s */                 \
	X(SMS, "sms", NULL, INT, 1, 100000) /* streaming multiprocessors: B200 has 148 */                  \
	X(NCCL_CC, "compute_capability", NULL, INT, 70, 100) /* NCCL tuning tables: Volta (70) on */       \
	X(NCCL_CHANNELS, "channels", NULL, INT, 1, 64)       /* NCCL's MAXCHANNELS (src/include/device.h) */ \
	X(INTRA_BANDWIDTH, "bandwidth", NULL, BANDWIDTH, CONFIG_RANGE_LINK_BW)                             \
	X(PAIR_BANDWIDTH, "pair_bandwidth", NULL, BANDWIDTH, CONFIG_RANGE_LINK_BW)                         \
	X(NIC_BANDWIDTH, "nic_bandwidth", NULL, BANDWIDTH, CONFIG_RANGE_LINK_BW)                           \
	X(INTRA_LATENCY, "latency", NULL, TIME, CONFIG_RANGE_LATENCY)                                      \
	X(INTER_LATENCY, "latency", NULL, TIME, CONFIG_RANGE_LATENCY)                                      \
	X(MESSAGE_LATENCY, "message_latency", NULL, TIME, 0, 1.0)                                    \
	X(COLL_OVERHEAD, "collective_overhead", NULL, TIME, 0, 1.0)                                  \
	X(EFF_GEMM, "gemm", NULL, NUMBER, CONFIG_RANGE_EFFICIENCY)                                         \
	X(EFF_ATTENTION, "attention", NULL, NUMBER, CONFIG_RANGE_EFFICIENCY)                               \
	X(EFF_MEMORY, "memory", NULL, NUMBER, CONFIG_RANGE_EFFICIENCY)                                     \
	X(EFF_INTRA_LINK, "intra_link", NULL, NUMBER, CONFIG_RANGE_EFFICIENCY)                             \
	X(EFF_INTER_LINK, "inter_link", NULL, NUMBER, CONFIG_RANGE_EFFICIENCY)                             \
	/* calibration files: measured values, same physics as the platform's */                         \
	X(CAL_BANDWIDTH, "bandwidth", NULL, BANDWIDTH, CONFIG_RANGE_LINK_BW)                               \
	X(CAL_LATENCY, "latency", NULL, TIME, CONFIG_RANGE_LATENCY)                                        \
	/* measured attention points, TFLOP/s: 1 GFLOP/s to 1 EFLOP/s as peak_bf16 */                   \
	X(POINT_TFLOPS, "tflops", NULL, NUMBER, 1e-3, 1e6)                                                 \
	X(POINT_P10, "p10", NULL, NUMBER, 1e-3, 1e6)                                                       \
	X(POINT_P90, "p90", NULL, NUMBER, 1e-3, 1e6)                                                       \
	/* models: largest published dense models have L = 126, h = 16384, ffn = 53248 (Llama 3.1      \
	 * 405B, arXiv 2407.21783 Table 3), V = 256000 (Gemma); the bounds keep every parameter        \
	 * count below 2^53 and head/layer sums in int */                                                \
	X(LAYERS, "layers", NULL, INT, 1, 4096)                                                            \
	X(HIDDEN, "hidden", NULL, INT, 1, 131072)                                                          \
	X(HEADS, "heads", NULL, INT, 1, 8192)                                                              \
	X(KV_HEADS, "kv_heads", NULL, INT, 1, 8192)                                                        \
	X(HEAD_DIM, "head_dim", NULL, INT, 1, 8192)                                                        \
	X(FFN, "ffn", NULL, INT, 1, 524288)                                                                \
	X(VOCAB, "vocab", NULL, INT, 1, 8388608)                                                           \
	X(MAX_POSITION, "max_position", NULL, TOKENS, 1, 2147483647)                                    \
	/* jobs: micro-batch and gradient accumulation as the command line always capped them */          \
	X(MICRO_BATCH, "micro_batch", "--micro-batch", INT, 1, 1048576)                                    \
	X(SEQ_LEN, "seq_len", "--seq-len", TOKENS, CONFIG_RANGE_SEQ)                                       \
	X(GRANULE, "granule", "--granule", TOKENS, CONFIG_RANGE_SEQ)                                       \
	X(GRAD_ACCUM, "grad_accum", "--grad-accum", INT, 1, 1048576)                                       \
	X(ZERO, "zero", "--zero", INT, 0, 3)                                                               \
	/* --tile-mlp/--tile-logits: sequence tiles of the MLP and the LM head; 2^20 tiles is one token  \
	 * per tile of a 1M-token shard (a tile count above the rank's tokens is refused by the job    \
	 * check) */                                                                                     \
	X(TILE_MLP, "tile_mlp", "--tile-mlp", INT, 1, 1048576)                                             \
	X(TILE_LOGITS, "tile_logits", "--tile-logits", INT, 1, 1048576)                                    \
	/* host link (platform host_link:): PCIe Gen3 x1 (~1 GB/s) is below any training box; latency as  \
	 * other links; host memory from 1 MB to 1 PB per node (a DGX H100 has 2 TB) */                  \
	X(HOST_BANDWIDTH, "bandwidth", NULL, BANDWIDTH, CONFIG_RANGE_LINK_BW)                              \
	X(HOST_LATENCY, "latency", NULL, TIME, CONFIG_RANGE_LATENCY)                                       \
	X(HOST_MEMORY, "memory", NULL, SIZE, 1e6, 1e15)                                                    \
	/* host DRAM bandwidth per node (host_link memory_bandwidth): one DDR4-1600 channel (12.8 GB/s) \
	 * to 100 TB/s, far above any CPU socket's DRAM (2x 12-channel DDR5-6400: 1.2 TB/s) */          \
	X(HOST_MEMORY_BW, "memory_bandwidth", NULL, BANDWIDTH, 1e10, 1e14)                                 \
	/* DeepSpeed buckets (default 5e8 elements): 1e15 elements is 2 PB of bf16 */                    \
	X(REDUCE_BUCKET, "reduce_bucket", "--reduce-bucket", COUNT, 1, 1e15)                               \
	X(ALLGATHER_BUCKET, "allgather_bucket", "--allgather-bucket", COUNT, 1, 1e15)                      \
	X(PREFETCH_BUCKET, "prefetch_bucket", "--prefetch-bucket", COUNT, 1, 1e15)                         \
	/* collective sizes (spsim collective -b/-e/-i, nccl-tests logs): 1 TB per rank is 5x a         \
	 * B200's memory */                                                                              \
	X(COLL_BYTES, "size", "-b/-e/-i", SIZE, 0, 1e12)                                                   \
	X(GLOBAL_BATCH, "global_batch", "--global-batch", TOKENS, 1, 4503599627370496.0) /* 2^52 */        \
	/* nccl-tests logs: rank numbers below the --gpus bound */                                        \
	X(LOG_RANK, "rank", NULL, INT, 0, 16777215)                                                        \
	/* collective -f: nccl-tests' size step factor; 2 is the least that grows the size, 2^20 steps  \
	 * 1 B to 1 MiB at once (and keeps size x factor far below DBL_MAX) */                          \
	X(COLL_FACTOR, "factor", "-f", INT, 2, 1048576)                                                    \
	/* collective -g/--groups: ranks in a group, within the --gpus bound */                          \
	X(COLL_GROUP, "group_size", "--groups", INT, 1, 16777216)                                          \
	/* sweep/plan --jobs: worker processes on one host; 4096 is 5x the hardware threads of the      \
	 * largest two-socket servers (2 x 192 cores x 2 threads) */                                     \
	X(JOBS, "jobs", "--jobs", INT, 1, 4096)                                                            \
	/* plan --top: rows shown, each re-run by the verifying engine; past 1000 nobody reads them */   \
	X(PLAN_TOP, "top", "--top", INT, 1, 1000)                                                          \
	/* plan --price per GPU-hour: from a billionth of a currency unit to a billion, so cost =       \
	 * price x GPUs x hours stays finite */                                                          \
	X(PRICE, "price", "--price", NUMBER, 1e-9, 1e9)                                                    \
	/* plan --timeout, sweep --point-timeout (seconds): 1 ms is below one process start, 1e9 s is   \
	 * 30 years */                                                                                   \
	X(TIMEOUT, "timeout", "--timeout", NUMBER, 0.001, 1e9)                                             \
	/* what-ifs (--slow-gpu/--slow-node/--degrade and the job's what_if: key): 1 is no change (a    \
	 * faster part is another platform); 1000x slower is beyond any throttled GPU or degraded link  \
	 * (thermal throttling halves clocks, a link falling back to a lower rate loses under 100x) */   \
	X(WHATIF_FACTOR, "factor", NULL, NUMBER, 1, 1000)                                                  \
	/* --background SIZE: the other job's all-reduce per rank, bounded as collective sizes */        \
	X(BACKGROUND_SIZE, "size", NULL, SIZE, 1, 1e12)                                                    \
	/* --background PERIOD: 1 us is below one collective's launch latency (NCCL's ~5 us base       \
	 * latency, src/graph/tuning.cc); 1e6 s (11 days) is longer than any simulated step */          \
	X(BACKGROUND_PERIOD, "period", NULL, TIME, 1e-6, 1e6)

typedef enum config_range_id {
#define CONFIG_RANGE_ENUM(id, ...) CONFIG_R_##id,
	CONFIG_RANGES(CONFIG_RANGE_ENUM)
#undef CONFIG_RANGE_ENUM
	CONFIG_R_COUNT
} config_range_id;

typedef enum config_range_type {
	CONFIG_RANGE_BANDWIDTH = CONFIG_UNIT_BANDWIDTH,
	CONFIG_RANGE_TIME = CONFIG_UNIT_TIME,
	CONFIG_RANGE_SIZE = CONFIG_UNIT_SIZE,
	CONFIG_RANGE_FLOPS = CONFIG_UNIT_FLOPS,
	CONFIG_RANGE_INT = 100,
	CONFIG_RANGE_TOKENS,
	CONFIG_RANGE_NUMBER,
	/* A whole number written as a decimal integer or in exponent form (5e8), as DeepSpeed's
	 * configuration writes bucket sizes in elements; 1.5 is refused. */
	CONFIG_RANGE_COUNT,
} config_range_type;

typedef struct config_range {
	const char *key;  /* YAML key */
	const char *flag; /* command-line flag, or NULL */
	config_range_type type;
	double lo, hi;    /* inclusive, SI base units */
} config_range;

const config_range *config_range_get(config_range_id id);
/* Whether v is in the range (finite, and whole for INT and TOKENS). */
bool config_range_ok(config_range_id id, double v);
/* A plain decimal number as the table's NUMBER and INT rows read it: an optional sign, then
 * digits (integer) or digits, '.' and an exponent; finite. No hex (0x10), inf, nan or
 * spaces, which strtod alone would take. */
bool config_parse_plain_number(const char *s, bool integer, double *out);
/* What the range expects, e.g. "an integer from 1 to 1048576" or "a bandwidth from
 * 1 MB/s to 1 PB/s"; returns buf. */
const char *config_range_expect(config_range_id id, char *buf, size_t len);
/* Parses text by the row's type and checks the range. On failure err reads "'key' must be
 * EXPECT, got 'text'" with key the caller's name for it (NULL: the row's key). */
bool config_range_parse(config_range_id id, const char *key, const char *text, double *out, config_error *err);
/* A ZeRO bucket size (config/job.c) (id: CONFIG_R_REDUCE_BUCKET, _ALLGATHER_BUCKET or _PREFETCH_BUCKET)
 * from text: a whole number in the range table, or auto (reduce and prefetch only: *is_auto
 * set, *elems 0). Otherwise false with err naming `name` and what it accepts, as a flag
 * ("--reduce-bucket expects ...") or as a key ("'reduce_bucket' must be ..."). */
bool config_job_bucket_parse(config_range_id id, const char *name, bool flag, const char *text, double *elems,
			     bool *is_auto, config_error *err);
/* Checks a value already held (what a program set, or an override): "'key' is V, expected
 * EXPECT". */
bool config_range_check(config_range_id id, const char *key, double v, config_error *err);

/* Checks values already held against their rows: "kind 'name': 'key' is V, expected
 * EXPECT" (name may be NULL) for the first outside its range. */
typedef struct config_range_value {
	config_range_id id;
	double v;
} config_range_value;
bool config_range_check_all(const char *kind, const char *name, const config_range_value *vals, size_t n,
			    config_error *err);

#endif
