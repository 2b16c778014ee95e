/* validate: runs the communication patterns and layer kernels of a job for real, on a
 * transport (transport.h), and reports what it measured.
 *
 *   groups   Ulysses / BASP rank groups and the per-rank layout (basp.md)
 *   layer    a distributed attention layer, forward and backward, timed per phase
 *            and checked against an unpartitioned reference
 *   comm     collective sweeps: all-to-all over the world group and over BASP groups
 *            (all groups at once), all-gather / reduce-scatter / all-reduce over the world
 *   compute  the GEMM and attention shapes of a job, achieved FLOP/s
 *   fit      alpha-beta fits of time against bytes
 *   log      measurements appended as JSON lines the moment they complete
 *
 * This library depends only on kernels/ and the transport: it builds and is tested
 * without CUDA and without the simulator core. */
#ifndef SPSIM_VALIDATE_VALIDATE_H
#define SPSIM_VALIDATE_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels.h"
#include "transport.h"

/* ------------------------------------------------------------------ groups --- */
typedef enum validate_strategy { VALIDATE_ULYSSES, VALIDATE_BASP } validate_strategy;
const char *validate_strategy_name(validate_strategy s);
bool validate_strategy_parse(const char *name, validate_strategy *out);

typedef struct validate_groups {
	validate_strategy strategy;
	int world;          /* N ranks of the SP domain */
	int K;              /* ranks per all-to-all group: N (Ulysses), N / B (BASP) */
	int n_groups;       /* N / K */
	int nseq;           /* sequences each rank holds a slice of: B (Ulysses), 1 (BASP) */
	long seq;           /* S */
	long tokens;        /* t = S / K local tokens of each of those sequences */
	int heads;          /* a */
	int kv_heads;       /* g */
	int heads_per_rank; /* a / K during attention */
	int kv_rep;         /* replicas of each kv head before the all-to-all: K / g when g < K */
	int kv_per_rank;    /* g·kv_rep / K kv heads per rank during attention */
} validate_groups;

/* Forms the groups of a job (basp.md): BASP splits N ranks into B groups of K = N / B
 * contiguous ranks, group i holding sequence i; Ulysses is one group of N holding all B
 * sequences. Checks N % B, S % K, a % K and the kv-head rule (g % K == 0 or K % g == 0);
 * on failure writes a sentence into err and returns VALIDATE_EINVAL. */
int validate_groups_make(validate_strategy st, int N, int B, long S, int heads, int kv_heads, validate_groups *out,
			 char *err, size_t errlen);

typedef struct validate_place {
	int group, grank; /* the rank's group and its index in it */
	int seq0;         /* global index of its first sequence (it holds seq0 .. seq0 + nseq - 1) */
	long tok0;        /* first token of its slice in each of those sequences */
} validate_place;
validate_place validate_place_of(const validate_groups *g, int rank);

/* ---------------------------------------------------------------- test data --- */
/* Deterministic pseudo-random tensors: element i of tensor `tensor` is
 * scale * u(hash(seed, tensor, i)), u uniform in [-1, 1); any slice of a tensor can be
 * generated alone, so ranks fill their shards without communicating. */
void validate_fill(kernels_bf16 *dst, size_t n, uint64_t seed, uint64_t tensor, uint64_t first, float scale);

/* ------------------------------------------------------------------- layer --- */
typedef struct validate_layer_cfg {
	validate_strategy strategy;
	int world;        /* N */
	int micro_batch;  /* B */
	long seq;         /* S */
	int hidden, heads, kv_heads, head_dim;
	int warmup, iters;
	bool backward;
	uint64_t seed;
} validate_layer_cfg;

/* The layer's inputs, as every run generates them: rows tok0 .. tok0 + n - 1 of sequence
 * seq of X (which = 0) or of the output gradient dY (which = 1), [n][hidden]; and the
 * weights, Wqkv [hidden][(a + 2g)·d] (Q, K, V column blocks) and Wo [a·d][hidden]. */
void validate_layer_input(const validate_layer_cfg *cfg, int which, int seq, long tok0, long n, kernels_bf16 *out);
void validate_layer_weights(const validate_layer_cfg *cfg, kernels_bf16 *wqkv, kernels_bf16 *wo);

/* The phases timed, named as the workload's op program names its ops (program.c). */
enum { VALIDATE_LAYER_FWD_PHASES = 15, VALIDATE_LAYER_PHASES = 30 };
extern const char *const validate_layer_phase_names[VALIDATE_LAYER_PHASES];
typedef enum validate_phase_kind { VALIDATE_PH_GEMM, VALIDATE_PH_ATTN, VALIDATE_PH_MEMORY, VALIDATE_PH_COMM } validate_phase_kind;

typedef struct validate_phase_info {
	validate_phase_kind kind;
	double flops; /* GEMM / attention FLOPs on one rank */
	double bytes; /* all-to-all: per-rank send buffer; memory: bytes read + written */
	bool present; /* false for layout phases that a group of one skips in the op program */
} validate_phase_info;
/* What phase i does on one rank of the job (for rates and for the predicted side). */
validate_phase_info validate_layer_phase(const validate_layer_cfg *cfg, const validate_groups *g, int i);

typedef struct validate_layer_result {
	validate_groups groups;
	int n_phases;                          /* 15 forward only, 30 with backward */
	double time_s[VALIDATE_LAYER_PHASES];  /* max over ranks of the mean over timed iterations */
	double mean_s[VALIDATE_LAYER_PHASES];  /* mean over ranks */
	/* The last iteration's outputs on each local rank, host bf16, [nseq·t][hidden]:
	 * y = the layer's output, dx = the gradient of its input (NULL without backward). */
	int n_local;
	kernels_bf16 **y, **dx;
	/* Filled by validate_layer_check. */
	bool checked, pass;
	kernels_compare_result cmp_y, cmp_dx;
} validate_layer_result;

/* Bytes of device memory one rank needs for a partitioned layer run. */
size_t validate_layer_bytes(const validate_layer_cfg *cfg, const validate_groups *g);
/* Runs the layer on every rank of the transport (t->world must equal cfg->world):
 * warmup + iters iterations of forward (and backward), each phase between two timer
 * marks. Checks free device memory first. */
int validate_layer_run(validate_transport *t, const validate_layer_cfg *cfg, validate_layer_result *out, char *err,
		       size_t errlen);
/* Compares each local rank's outputs with an unpartitioned run of the same layer on one
 * device of this process (a group of one rank holding the whole sequence, no
 * all-to-all), sequence by sequence; tol as kernels_compare_*. Returns 0 when it could
 * compare (pass tells the verdict). */
int validate_layer_check(validate_transport *t, const validate_layer_cfg *cfg, validate_layer_result *res,
			 double tol, char *err, size_t errlen);
void validate_layer_result_finish(validate_layer_result *r);

/* -------------------------------------------------------------------- comm --- */
typedef struct validate_comm_cfg {
	size_t min_bytes, max_bytes; /* per-rank buffer as nccl-tests sizes it */
	int factor;                  /* size step (2: powers of two) */
	int warmup, iters;
	const int *group_sizes;      /* BASP group sizes K to run (all groups at once) */
	int n_group_sizes;
	bool alltoall_world;         /* the global all-to-all */
	bool zero;                   /* all-gather, reduce-scatter, all-reduce over the world */
	validate_dtype dtype;
} validate_comm_cfg;

enum { VALIDATE_LINK_INTRA, VALIDATE_LINK_INTER };
const char *validate_link_name(int link);

typedef struct validate_comm_point {
	validate_coll coll;
	int group_size; /* P */
	int n_groups;   /* groups running at once */
	int link;       /* VALIDATE_LINK_*: inter when a group spans hosts */
	size_t bytes;   /* per-rank buffer (nccl-tests' size) */
	size_t count;   /* elements per call as transport.h defines count */
	double time_s;  /* per call: max over ranks of the mean over iters */
	double algbw, busbw; /* bytes/s, nccl-tests' definitions */
} validate_comm_point;

/* nccl-tests doc/PERFORMANCE.md: busbw = algbw x (n-1)/n for all-to-all, all-gather and
 * reduce-scatter, x 2(n-1)/n for all-reduce. */
double validate_busbw_factor(validate_coll c, int n);

typedef int (*validate_comm_emit)(void *ctx, const validate_comm_point *p);
/* Runs the sweep; emit is called on every process for each point as soon as it is
 * measured (a nonzero return stops the sweep and is returned). The largest size is
 * capped to what device memory allows (*capped_bytes gets the size used). */
int validate_comm_sweep(validate_transport *t, const validate_comm_cfg *cfg, validate_comm_emit emit, void *ctx,
			size_t *capped_bytes, char *err, size_t errlen);

/* ----------------------------------------------------------------- compute --- */
typedef struct validate_model_dims {
	int layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
} validate_model_dims;

typedef enum validate_compute_kind { VALIDATE_CK_GEMM, VALIDATE_CK_ATTN_FWD, VALIDATE_CK_ATTN_BWD, VALIDATE_CK_PERMUTE } validate_compute_kind;

typedef struct validate_compute_item {
	char name[32];
	validate_compute_kind kind;
	kernels_gemm gemm;
	kernels_attn_shape attn;
	kernels_permute perm;
	double flops;  /* GEMM / attention: FLOPs by the workload's accounting */
	double bytes;  /* permute: HBM bytes read + written */
	double count;  /* occurrences per layer (per step for the logits) */
} validate_compute_item;

/* The GEMM, attention and layout shapes one rank runs for a job (Megatron's GEMM
 * accounting and FlashAttention's attention FLOPs, as the op program counts them):
 * projections, SwiGLU MLP, logits, each forward and as activation- and weight-gradient
 * GEMMs in backward; attention forward and backward on the rank's heads; the Q pack
 * permute. Returns the number of items written (at most cap). */
int validate_compute_items(const validate_model_dims *m, const validate_groups *g, validate_compute_item *out,
			   int cap);

typedef struct validate_compute_point {
	const validate_compute_item *item;
	double time_s;        /* median per call of the timed iterations (each the slowest rank's) */
	double p10_s, p90_s;  /* 10th and 90th percentile of the same */
	double rate;          /* FLOP/s, or bytes/s for permutes, at the median */
	int iters;            /* timed iterations */
	bool flushed;         /* the cache was flushed before each timed call */
	validate_gpu_state gpu; /* local rank 0's device after the timed calls (zeros: unknown) */
} validate_compute_point;
typedef int (*validate_compute_emit)(void *ctx, const validate_compute_point *p);
/* Times each item on every local rank: warmup calls, then iters calls each between its
 * own two marks, the cache flushed before each (transport flush_cache) when the
 * operands are smaller than it. Every process agrees on each item's status
 * (validate_agree). Items whose buffers do not fit in free device memory on some rank are
 * skipped on all, with a note on stderr. */
int validate_compute_run(validate_transport *t, const validate_compute_item *items, int n, int warmup, int iters,
			 validate_compute_emit emit, void *ctx, char *err, size_t errlen);

/* --------------------------------------------------------------------- fit --- */
/* The q-quantile (0 <= q <= 1) of n > 0 values, linear between order statistics
 * (Hyndman & Fan 1996, definition 7, numpy's default); sorts x in place. */
double validate_quantile(double *x, int n, double q);

typedef struct validate_fit {
	double latency;   /* seconds */
	double bandwidth; /* bytes/s */
	int n;
	double max_rel;   /* largest |model - measured| / measured */
} validate_fit;
/* Fits time = latency + x / bandwidth (the alpha-beta model) by least squares on relative
 * error (weights 1/time², so small and large sizes count alike). A
 * negative latency is pinned at 0. Returns VALIDATE_EINVAL when fewer than two points or
 * no positive bandwidth. */
int validate_fit_alpha_beta(const double *x, const double *time, int n, validate_fit *out);

/* --------------------------------------------------------------------- log --- */
/* Measurements as JSON lines, appended and flushed to disk as each completes, so a crash
 * loses nothing already measured. Only process 0 writes; others hold a NULL file. */
typedef struct validate_log {
	FILE *f;
	char path[1024];
} validate_log;
int validate_log_open(validate_log *log, const char *path, bool writer);
/* Appends one line: {"kind": kind, <fields>} with fields given as printf-formatted JSON
 * members ("\"bytes\": %zu, ..."). */
int validate_log_append(validate_log *log, const char *kind, const char *fields_fmt, ...)
	__attribute__((format(printf, 3, 4)));
void validate_log_close(validate_log *log);

#endif
