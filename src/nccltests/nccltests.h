/* nccltests: spsim speaks nccl-tests' language in both directions.
 *
 *   - Output: a predicted collective printed in nccl-tests' exact column format (size,
 *     count, type, redop, root, then time/algbw/busbw/#wrong for out-of-place and in-place),
 *     so a prediction can be held next to a real all_reduce_perf log.
 *   - Input: real nccl-tests logs (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
 *     alltoall_perf, sendrecv_perf, broadcast_perf) parsed into rows and a rank layout.
 *   - Calibration: per link class (intra-node, inter-node) latency and bandwidth fitted by
 *     least squares so that engine_collective_time reproduces the logged times.
 *
 * Sizes and bandwidths follow nccl-tests' definitions (doc/PERFORMANCE.md of nccl-tests):
 * algbw = size / time in GB/s (1e9), busbw = algbw x the collective's factor
 * (engine_busbw_factor). "size" is the per-rank buffer spsim's workload_op.bytes uses: the
 * send buffer for all-to-all, the full output of all-gather, the full input of
 * reduce-scatter and all-reduce, the message of send/recv and broadcast.
 *
 * Nothing here exits or prints to stderr: errors come back in a config_error as
 * "file:line: what is wrong, what was expected". */
#ifndef SPSIM_NCCLTESTS_NCCLTESTS_H
#define SPSIM_NCCLTESTS_NCCLTESTS_H

#include <stdbool.h>
#include <stdio.h>

#include "config/config.h"
#include "engine/engine.h"
#include "workload/workload.h"

/* ---------------------------------------------------------------- names ----- */
/* Accepts nccl-tests' binary names and spsim's: "all_reduce_perf", "all_reduce",
 * "allreduce", "all-reduce", "alltoall", "sendrecv", ... Returns false if unknown. */
bool nccltests_coll_from_name(const char *name, workload_coll *out);
/* "all_reduce_perf", "all_gather_perf", ... */
const char *nccltests_test_name(workload_coll c);
/* Bytes of one element of an nccl-tests datatype name ("float" 4, "bfloat16" 2, "int8" 1,
 * "double" 8, ...); 0 if unknown. */
int nccltests_type_size(const char *type);
/* The redop and root columns nccl-tests prints for a collective run with its defaults. */
const char *nccltests_default_redop(workload_coll c);
/* Whether name is a redop column nccl-tests prints: its test_opnames (sum, prod, max, min,
 * avg, mulsum; src/common.cu) or "none" (a collective that does not reduce). */
bool nccltests_redop_known(const char *name);
#define NCCLTESTS_REDOPS "sum, prod, max, min, avg, mulsum or none"
int nccltests_default_root(workload_coll c);
/* The "count" column for a size: elements per rank for all-gather, reduce-scatter and
 * all-to-all, elements of the whole buffer otherwise. */
double nccltests_count(workload_coll c, double size, int type_size, int ranks);
/* nccl-tests rounds a requested size so that every rank gets whole elements: count =
 * size / type_size, and for per-rank collectives (count / ranks) * ranks. */
double nccltests_round_size(workload_coll c, double size, int type_size, int ranks);
/* nccl-tests' size syntax for -b/-e/-i: an integer with an optional K, M, G or T suffix
 * (powers of 1024; "KB", "KiB" also read). Returns false when malformed or negative. */
bool nccltests_parse_size(const char *text, double *out);
/* An algorithm name ("ring", "direct", "pairwise", "hierarchical") valid for a collective. */
bool nccltests_alg_from_name(workload_coll c, const char *name, workload_alg *out);
/* The algorithm spsim's op program uses for a collective (ring, direct all-to-all). */
workload_alg nccltests_default_alg(workload_coll c);
/* An --alg name as `spsim collective` and the fidelity corpus read it: ring, tree and nvls
 * force NCCL's algorithm on the ring family (*force_algo = 1 + nccl_algo, *alg the
 * default), direct, pairwise and hierarchical are spsim's (nccltests_alg_from_name,
 * *force_algo = 0). False when the name is neither for c; where a forced algorithm can
 * run is nccl_force_check's to say. */
bool nccltests_resolve_alg(workload_coll c, const char *name, workload_alg *alg, int *force_algo);

/* ---------------------------------------------------------------- parser ---- */
enum { NCCLTESTS_OOP = 0, NCCLTESTS_IP = 1 }; /* out-of-place, in-place column groups */

typedef struct nccltests_row {
	int line;          /* 1-based line in the log */
	int count_col;     /* 1-based column of its count field, for messages */
	double size;       /* bytes ("size" column) */
	double count;      /* elements ("count" column) */
	char type[16];
	char redop[16];    /* "" when the table has no redop column */
	int root;          /* -1 when none */
	bool has[2];       /* which column groups hold numbers */
	double time_us[2]; /* microseconds */
	double algbw[2];   /* GB/s */
	double busbw[2];   /* GB/s */
	double wrong[2];   /* #wrong; -1 for N/A */
} nccltests_row;

typedef struct nccltests_parse_opts {
	bool coll_set;      /* force the collective (else: header, command line, file name, columns) */
	workload_coll coll;
	int gpus_per_node;  /* > 0: override the layout read from the rank table */
	int nodes;          /* > 0: override */
} nccltests_parse_opts;

typedef struct nccltests_log {
	char path[CONFIG_PATH_MAX];
	workload_coll coll;
	const char *coll_from; /* "option", "header", "command line", "file name", "columns" */
	int nthreads, ngpus;   /* from "# nThread T nGpus G ..."; 0 when absent */
	int ranks;             /* P: ranks of the communicator */
	int nodes;             /* distinct hosts in the rank table */
	int gpus_per_node;     /* ranks per host */
	int header_line;       /* line of the "#  size  count  type ..." header */
	int groups;            /* column groups in the table: 2 (out-of-place, in-place) or 1 */
	nccltests_row *rows;
	int n_rows;
	bool has_avg_busbw;
	double avg_busbw; /* "# Avg bus bandwidth : X" */
} nccltests_log;

/* Parses a log held in memory; name is used in error messages. On success the log owns
 * its rows (nccltests_log_finish frees them). The layout comes from the "# Using devices"
 * rank table (one line per rank: "#  Rank  3 Group  0 Pid  1234 on host-a device  3 ...");
 * without one, P is inferred from the count column when the collective allows it and
 * opts must give gpus_per_node or nodes. */
bool nccltests_parse_text(const char *name, const char *text, const nccltests_parse_opts *opts, nccltests_log *out,
			  config_error *err);
bool nccltests_parse_file(const char *path, const nccltests_parse_opts *opts, nccltests_log *out, config_error *err);
void nccltests_log_finish(nccltests_log *log);
/* Whether the log's header ("# nThread T nGpus G") puts every GPU of a node in one process
 * (T x G at least its GPUs per node, more than one): NCCL's p2p path then writes through
 * direct pointers, the platform's nccl.processes per_node (engine/nccl.c p2p_staging_drain). */
bool nccltests_log_one_process_per_node(const nccltests_log *log);

/* ------------------------------------------------------------ least squares - */
/* One measured point of a fit, with the model linearised around the current parameters:
 *   time ~= r + s * latency + k * (1 / bandwidth)
 * For an alpha-beta collective s is the number of latency-bound steps, k = bytes x the
 * collective's bandwidth coefficient and r the time of the link class not being fitted. */
typedef struct nccltests_point {
	double time; /* seconds, measured */
	double r, s, k;
} nccltests_point;

/* Weighted linear least squares on relative error, sum(((model - time) / time)^2), for
 * latency >= 0 and bandwidth > 0. When the unconstrained optimum has a negative latency
 * the latency is pinned at 0 and the bandwidth refitted. Fails when the points cannot
 * determine a positive bandwidth (times that do not grow with size, all s and k zero). */
bool nccltests_linfit(const nccltests_point *pts, int n, double *latency, double *bandwidth, config_error *err);

/* A model of time (seconds) for point i given a candidate latency (s) and bandwidth (B/s). */
typedef double (*nccltests_model_fn)(void *ctx, int i, double latency, double bandwidth);

typedef struct nccltests_fit {
	double latency, bandwidth;
	int n_points;
	int iterations;
	double rms_rel; /* root mean square of (model - measured) / measured at the fit */
	double max_rel; /* largest |relative error| */
	/* the latency ended at its lower bound, 0 (the unconstrained optimum is negative, or
	 * the model has no latency term): a bound, not a measurement */
	bool latency_at_bound;
} nccltests_fit;

/* Fits (latency, bandwidth) of a black-box model that is affine in latency and in
 * 1/bandwidth (the alpha-beta form): Gauss-Newton, the Jacobian by probing the model,
 * each step solved by nccltests_linfit; exact in one step when the model is affine
 * everywhere, converging on the active piece when it has max() kinks. */
bool nccltests_fit_model(nccltests_model_fn fn, void *ctx, const double *times, int n, double latency0, double bandwidth0,
			 nccltests_fit *out, config_error *err);

/* The latency alone, the bandwidth held (Gauss-Newton on the latency, >= 0): the fit
 * under a bandwidth fixed at a physical bound. */
bool nccltests_fit_latency(nccltests_model_fn fn, void *ctx, const double *times, int n, double latency0,
			   double bandwidth, nccltests_fit *out, config_error *err);

/* -------------------------------------------------------------- calibration - */
typedef struct nccltests_calib_opts {
	const config_platform *platform; /* NULL: a generic NVSwitch + one-NIC-per-GPU platform */
	bool in_place;                   /* fit the in-place columns instead of out-of-place */
	double min_bytes, max_bytes;     /* sizes fitted; 0 = no bound */
	/* the smallest size the per-protocol fits use (0: none): the user's -b; the default
	 * -b 1M bounds the class's links only, as LL and LL128 run below it */
	double proto_min_bytes;
	bool alg_set;
	workload_alg alg;                /* else nccltests_default_alg */
	/* The logs were not measured through NCCL (validate's CPU transport): fit the links
	 * alone (collectives: links), the latency an intercept holding any per-call cost. */
	bool links_only;
	/* --processes was given (spsim collective, spsim calibrate): every log is fitted with
	 * nccl.processes = processes (CONFIG_NCCL_PROCS_*); else the platform's (or the generic
	 * one's, per_gpu), except that a log whose header runs a node's GPUs in one process is
	 * fitted as per_node. */
	bool processes_set;
	int processes;
} nccltests_calib_opts;

/* What the fit did, for the user. */
typedef struct nccltests_calib_class {
	bool fitted;
	nccltests_fit fit;
	int n_logs;
	/* Per `protocols:` entry (CONFIG_CAL_ENTRIES: LL, LL128, Simple, then the (algorithm,
	 * protocol) pairs): its own (latency, bandwidth) fitted on the sizes where NCCL's tuner
	 * picks it (at least 2), and what of it the never-worse rule kept. */
	bool proto_fitted[CONFIG_CAL_ENTRIES];
	bool proto_kept_latency[CONFIG_CAL_ENTRIES], proto_kept_bw[CONFIG_CAL_ENTRIES];
	nccltests_fit proto_fit[CONFIG_CAL_ENTRIES];
	/* > 0: the fitted bandwidth before it was held to the path's link rate */
	double proto_unclamped_bw[CONFIG_CAL_ENTRIES];
} nccltests_calib_class;

typedef struct nccltests_calib_report {
	nccltests_calib_class intra, inter;
	char notes[2048]; /* newline-separated remarks (skipped logs, fallbacks); "" if none */
} nccltests_calib_report;

/* Fits the intra-node class to the single-node logs and then the inter-node class to the
 * multi-node logs (with the intra-node class held at its fitted or platform values), and
 * fills a calibration (source "nccl-tests"). Each log is modelled on its own layout:
 * the platform with the log's GPUs per node and nodes, one group of all ranks. */
bool nccltests_calibrate(const nccltests_log *logs, int n_logs, const nccltests_calib_opts *opts,
			 config_calibration *out, nccltests_calib_report *rep, config_error *err);

/* A `protocols:` entry's name for the user: "LL", "LL128", "Simple", "ring/Simple",
 * "NVLS/Simple", ... */
const char *nccltests_entry_name(int entry);

/* A fit's latency and bandwidth for the user: "latency 1.47 us" or "latency at its lower
 * bound (0)"; "bandwidth 124.3 GB/s", with the fitted value when it was clamped to the
 * link rate (unclamped_bw > 0). */
void nccltests_fit_text(const nccltests_fit *f, double unclamped_bw, char *lat, size_t lat_len, char *bw,
			size_t bw_len);

/* The per-protocol links a class kept, for the user: "LL128 latency 1.47 us, bandwidth
 * 124.3 GB/s; Simple ..." ("" when none was fitted). */
void nccltests_protocols_text(const nccltests_calib_class *k, char *buf, size_t len);

/* The platform assumed when calibrate gets no --platform: NVSwitch nodes of
 * gpus_per_node GPUs, one NIC per GPU on one switch, all efficiencies 1. The link values
 * are only starting points for the fit. */
void nccltests_generic_platform(config_platform *p, int nodes, int gpus_per_node);

/* ---------------------------------------------------------------- predict --- */
typedef struct nccltests_setup {
	const config_platform *platform; /* calibration already applied */
	workload_coll coll;
	workload_alg alg;
	int gpus;        /* ranks taking part, placed on the platform's GPUs */
	int group_size;  /* K: disjoint groups of K ranks run the collective concurrently; = gpus for one group */
	engine_placement_kind placement;
	unsigned long seed;
} nccltests_setup;

/* Checks a setup against its platform (gpus fit, K divides gpus, ...). */
bool nccltests_setup_check(const nccltests_setup *s, config_error *err);
/* Node of each rank under the placement, the same map as the SimGrid engine's
 * engine_placement_map: contiguous fills node after node; strided deals consecutive ranks
 * to consecutive nodes; random shuffles the job's GPU slots with a seeded splitmix64. */
void nccltests_place(const nccltests_setup *s, int *node_of_rank);
/* Shape of group g (ranks g*K .. g*K+K-1) under a placement: per_node is the largest
 * divisor of K not above the fewest ranks the group has on one node (the worst-placed
 * rank), active_per_node the most GPUs of one of its nodes whose group crosses nodes. */
engine_group_shape nccltests_group_shape(const nccltests_setup *s, const int *node_of_rank, int g);
/* The distinct shapes of a setup's groups (one under contiguous placement); the caller
 * frees *shapes. sendrecv is costed as one message between neighbours: size K (the
 * communicator, which sizes NCCL's p2p channels, as in the SimGrid engine), per_node K
 * inside a node and 1 when the slowest pair crosses nodes. */
bool nccltests_shapes(const nccltests_setup *s, engine_group_shape **shapes, int *n, config_error *err);
/* Analytic time (seconds) of one collective of `bytes` per rank: the slowest group. */
bool nccltests_predict_time(const nccltests_setup *s, double bytes, double *time_s, config_error *err);
/* What NCCL runs for that call in the slowest group, as spsim's model chooses it: the
 * algorithm ("ring", "tree", "nvls", "nvls_tree" for NVLS across nodes, "p2p"), the
 * protocol ("LL", "LL128", "Simple"), the channels launched (p2p: the communicator's p2p
 * channels) and NCCL's latency of the pair (s; p2p: the per-message terms). */
typedef struct nccltests_choice {
	const char *algorithm, *protocol;
	int channels;
	double latency;
	/* the (algorithm, protocol) pairs NCCL's tuner compared, fastest first by its own model
	 * time (s); none outside the ring family */
	struct {
		const char *algorithm, *protocol;
		double model_time;
	} candidates[9];
	int n_candidates;
} nccltests_choice;
bool nccltests_predict_choice(const nccltests_setup *s, double bytes, nccltests_choice *out, config_error *err);

/* ---------------------------------------------------------------- output ---- */
/* nccl-tests' number format for a column of `width`: 2 decimals while they fit, then 1,
 * then 0, then exponent notation. */
void nccltests_format_float(double value, int width, char *buf, size_t len);

typedef struct nccltests_result {
	double size;  /* bytes */
	double count; /* elements */
	double time_us;
	double algbw, busbw; /* GB/s */
} nccltests_result;

/* Fills a result for a time, with nccl-tests' algbw and busbw. */
void nccltests_result_make(workload_coll c, int ranks, int type_size, double size, double time_s, nccltests_result *r);

/* The three "#" header lines of a result table, exactly as nccl-tests prints them. */
void nccltests_print_table_header(FILE *f);
/* One result line; the prediction fills both out-of-place and in-place with #wrong N/A. */
void nccltests_print_row(FILE *f, const nccltests_result *r, const char *type, const char *redop, int root);

#endif
