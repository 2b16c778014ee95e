/* engine: executes a workload plan on a platform and reports time.
 *
 * Engines plug in through one table of function pointers (engine_ops); adding an engine is
 * one new file plus one line in engine_registry. Nothing in an engine knows what Ulysses or
 * BASP is: it sees an op program, a rank layout and a platform. */
#ifndef SPSIM_ENGINE_ENGINE_H
#define SPSIM_ENGINE_ENGINE_H

#include "config/config.h"
#include "workload/workload.h"

typedef struct engine_breakdown {
	double compute;           /* time of compute ops on the main stream */
	double sp_comm;           /* time of SP all-to-alls */
	double sp_comm_exposed;   /* part of sp_comm not hidden behind compute */
	double zero_comm;         /* time of ZeRO collectives (wherever they run) */
	double zero_comm_exposed; /* part of step time the main stream waits on ZeRO */
	/* detail of compute */
	double gemm, attention, memory_bound, optimizer;
	/* for the exposed split (engine_breakdown_expose): SP communication on side streams
	 * (ring attention's transfers), ZeRO collectives on the main stream */
	double sp_comm_side, zero_comm_main;
	/* activation offload's copies over the host link (side stream) and the part of the
	 * step the main stream waits on them */
	double host_comm, host_comm_exposed;
} engine_breakdown;

/* Adds an op's time t to *sp_side or *zero_main when it is one of those. */
void engine_side_add(const workload_op *op, double t, double *sp_side, double *zero_main);
/* Sets sp_comm_exposed, host_comm_exposed and zero_comm_exposed from the step time: the
 * main stream runs compute, SP all-to-alls and (without overlap) ZeRO collectives back to
 * back; whatever else the step takes is waiting on a side stream, charged to ZeRO
 * collectives on the main stream first (they block it), then to side-stream SP transfers
 * (up to their total), then to host copies (up to theirs), the rest to ZeRO on side
 * streams. Without side-stream SP transfers: every SP
 * all-to-all exposed, the rest ZeRO. Shared by every engine. */
void engine_breakdown_expose(engine_breakdown *b, double step);

typedef struct engine_result {
	const char *engine;
	double step_time;
	engine_breakdown breakdown;
	double fwd_time, bwd_time; /* main-stream time of one micro-step's forward and backward */
	double tokens_per_s;
	double mfu; /* model FLOPs (published convention) / (peak x step) */
	double hfu; /* FLOPs the GPU executes (recompute, attention backward 2.5x) / (peak x step) */
	double mfu_dense; /* MFU with attention counted dense, as PaLM and Megatron-LM do */
} engine_result;

typedef enum engine_placement_kind {
	ENGINE_PLACE_CONTIGUOUS,
	ENGINE_PLACE_STRIDED,
	ENGINE_PLACE_RANDOM,
} engine_placement_kind;

typedef struct engine_options {
	const char *trace_path;        /* Chrome/Perfetto trace, NULL for none */
	engine_placement_kind placement;
	unsigned long placement_seed;
	/* Asymmetric what-ifs (slow GPUs, degraded links, failed nodes), NULL or empty for
	 * none; the SimGrid engine runs them all, the analytic engine the compute ones
	 * (engine_whatif_supported). */
	const config_whatif *whatif;
	/* Progress of a long run, NULL for none: the SimGrid engine calls it from the
	 * simulation (which may run in a child process) after each block of the program that
	 * the first GPU stream has walked, done of total; only observes, never changes a result. */
	void (*progress)(void *ctx, long done, long total);
	void *progress_ctx;
} engine_options;

/* Parses "contiguous", "strided" or "random:SEED" into opt->placement/placement_seed. */
bool engine_placement_parse(const char *text, engine_options *opt, config_error *err);

/* World rank -> GPU index (node * gpus_per_node + local) for `world` ranks on platform p:
 * contiguous fills node after node; strided deals consecutive ranks to consecutive nodes;
 * random permutes the contiguous slots with a seeded generator (same seed, same map).
 * Shared by every engine and by `spsim collective`. */
bool engine_placement_map(const config_platform *p, int world, const engine_options *opt, int *gpu_of_rank,
			  config_error *err);

/* engine_placement_map on the nodes that remain once opt->whatif's failed nodes are gone
 * (the policy sees them as the whole platform, node indices renumbered), mapped back to
 * the platform's GPU indices. Without failed nodes it is engine_placement_map. */
bool engine_whatif_placement(const config_platform *p, int world, const engine_options *opt, int *gpu_of_rank,
			     config_error *err);
/* The memory of the smallest GPU that holds a rank of a `world`-rank job placed by opt on
 * p (node groups may mix GPUs; the memory check is against it). p->gpu's without groups. */
double engine_placed_gpu_memory(const config_platform *p, int world, const engine_options *opt);
/* Whether opt carries any what-if. */
bool engine_whatif_active(const engine_options *opt);
/* False, saying why, when `engine` cannot run opt's what-ifs. The SimGrid engine runs them
 * all. The analytic engine, which times one schedule for every rank, runs the compute
 * what-ifs (--slow-gpu, --slow-node) as every rank at the slowest rank's pace
 * (engine_whatif_pace) and a degraded NIC or GPU port as every link of its kind degraded
 * alike (engine_whatif_degraded), and a failed node as the job re-placed on the rest
 * (engine_whatif_fail_check); docs/simgrid.md "What-ifs" says when that is exact and when
 * it is an upper bound. It refuses the others. */
bool engine_whatif_supported(const char *engine, const engine_options *opt, config_error *err);
/* The analytic engine's platform under opt's --degrade what-ifs on the nodes the job's
 * world ranks occupy (around failed nodes): every NIC at the rate of the slowest NIC degraded, every GPU port
 * (and mesh pair) at the slowest degraded port's, NCCL's view of the links (its choices)
 * kept as declared. False (out untouched) when no such what-if applies. */
bool engine_whatif_degraded(const engine_options *opt, const config_platform *p, int world, config_platform *out);
/* False, saying why, when the analytic engine cannot run opt's --fail-node on p: re-placed
 * contiguously on the remaining nodes, the job runs the same schedule on identical nodes
 * behind the same switches, except on a fat-tree of several leaves, where it may straddle
 * another leaf boundary. */
bool engine_whatif_fail_check(const engine_options *opt, const config_platform *p, config_error *err);
/* The factor by which the slowest of ranks 0..world-1 computes, placed contiguously on p
 * (rank r on node r / gpus_per_node): 1 without compute what-ifs. */
double engine_whatif_pace(const engine_options *opt, const config_platform *p, int world);
/* False, saying why, when the engine cannot place ranks as opt asks (the analytic engine
 * models contiguous placement only). */
bool engine_placement_supported(const char *engine, const engine_options *opt, config_error *err);
/* False, saying why, when a ZeRO bucket splits one collective into more calls than the
 * engine simulates (ENGINE_MAX_BUCKETS for the SimGrid engine, which runs each call; the
 * analytic engine times any count in closed form). */
#define ENGINE_MAX_BUCKETS 10000
bool engine_buckets_supported(const char *engine, const config_model *m, const config_job *job, config_error *err);
/* False, saying why, when the engine cannot run on platform p: the SimGrid engine builds at
 * most ENGINE_SIMGRID_MAX_GPUS_PER_NODE GPUs per node (its per-node tables have that many
 * slots; the platform file's bound is CONFIG_R_GPUS_PER_NODE's, 1024). Checked before a run,
 * so a platform the engine refuses is bad input, not a failed run. */
#define ENGINE_SIMGRID_MAX_GPUS_PER_NODE 64
bool engine_platform_supported(const char *engine, const config_platform *p, config_error *err);

typedef struct engine_input {
	const config_model *model;
	const config_platform *platform;
	const config_job *job;
	const workload_plan *plan;
	engine_options opt;
} engine_input;

typedef struct engine_ops {
	const char *name;
	const char *summary;
	bool (*run)(const engine_input *in, engine_result *out, config_error *err);
} engine_ops;

/* NULL-terminated; the first is the default for run/compare. */
extern const engine_ops *const engine_registry[];
const engine_ops *engine_find(const char *name);

/* ------------------------------------------------------- collective costs --- */
/* Where a collective's ranks sit, as the analytic model needs it. */
typedef struct engine_group_shape {
	int size;              /* P ranks in the group */
	int per_node;          /* ranks of the group on each node it spans (r); nodes = P / r */
	int active_per_node;   /* GPUs of a node sending inter-node at the same time (all groups) */
	/* Fat-tree with oversubscription: the most rank pairs (i in a leaf, j outside it, same
	 * group) that any one leaf uplink carries, over every group running at once; 0 when
	 * not computed (then the spine is averaged over the group's nodes). */
	double leaf_pairs;
} engine_group_shape;

/* The shape of a group kind under a layout with contiguous placement on platform p. */
engine_group_shape engine_group_shape_of(const config_platform *p, const workload_layout *l, workload_group_kind g);

/* The shape of ring attention's rings (layout ring, ring_stride). */
engine_group_shape engine_ring_shape_of(const config_platform *p, const workload_layout *l);

/* The shape of an op's group: its group kind, or its own SP group size when set; ring
 * attention's send/recv: its ring. */
engine_group_shape engine_op_shape(const config_platform *p, const workload_layout *l, const workload_op *op);
/* Whether op's shape (engine_op_shape) differs from the layout's SP or world group: an SP op
 * on a group of its own size, or ring attention's send/recv, which goes round the ring. Such
 * an op's time and link loads are its own, not those memoised per group. */
bool engine_op_own_shape(const workload_layout *l, const workload_op *op);

/* The invariant every reported result holds: each time, rate and MFU finite and >= 0,
 * the step time > 0. A result that breaks it is an engine error (message names the
 * field). engine_run_composite applies it to every run. */
bool engine_result_check(const engine_result *r, config_error *err);

/* One engine run of in->plan whose result is checked (engine_result_check): an engine
 * never hands back a non-finite one. */
bool engine_run_checked(const engine_ops *e, const engine_input *in, engine_result *out, config_error *err);

/* Runs a composite (workload_compose) through an engine: each part of a PARALLEL
 * composite on its own, the slowest setting the step; the merged program of a SEQUENTIAL
 * one; the job of a SINGLE one. Fills out (the step) and, when non-NULL, part_out[i] per
 * part (PARALLEL only). *primary is the plan whose result `out` is. */
bool engine_run_composite(const engine_ops *e, const config_model *m, const config_platform *p, const config_job *job,
			  const workload_composite *c, engine_options opt, engine_result *out, engine_result *part_out,
			  const workload_plan **primary, config_error *err);

/* Time of one collective (seconds) under NCCL's cost model (engine/nccl.h) on the link
 * physics of the shape; bytes as in workload_op. A one-rank group costs a launch and a copy. */
double engine_collective_time(const config_platform *p, workload_coll c, workload_alg a, engine_group_shape s,
			      double bytes);
/* The physical ring bus bandwidth of a group (bytes/s): the rate a ring step's chunk
 * crosses the slowest hop, contention of the group's own shape included. */
double engine_ring_busbw(const config_platform *p, engine_group_shape s);
/* Time of a compute op under the platform's peak and efficiencies (roofline max). */
double engine_compute_time(const config_platform *p, const workload_op *op);
/* nccl-tests' bus bandwidth factor for a collective on P ranks (doc/PERFORMANCE.md). */
double engine_busbw_factor(workload_coll c, int P);

/* Shared final accounting: tokens/s, MFU and HFU from step time. */
void engine_result_finish(const engine_input *in, engine_result *r);

#endif
