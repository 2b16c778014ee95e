/* Internal interfaces of the SimGrid engine (not for other modules). */
#ifndef SPSIM_ENGINE_SIMGRID_SG_INTERNAL_H
#define SPSIM_ENGINE_SIMGRID_SG_INTERNAL_H

#include <stdio.h>

#include "engine/simgrid/simgrid.h"

/* What to generate. A reduced platform (symmetry) has `nodes` < `system_nodes`: the
 * generated nodes are the first period of the system, laid out exactly as there (same leaf
 * boundaries), and `wrap` adds a zone of ghost hosts that stand for the GPUs of the next
 * period's first node: a flow to ghost j crosses the network exactly as a flow into the
 * next period would, and lands on node 0's links (its image under the symmetry). */
typedef struct sgx_spec {
	const config_platform *p;
	int nodes;        /* nodes generated, hosts n0g0 .. */
	int system_nodes; /* nodes of the system they belong to (leaf structure) */
	bool wrap;
	const config_whatif *whatif; /* degraded links (NULL: none) */
} sgx_spec;

/* Writes the platform as SimGrid XML; *bytes (when not NULL) = the bytes written. */
bool sgx_platform_write(const sgx_spec *s, FILE *out, double *bytes, config_error *err);

/* The same platform built in the running SimGrid engine through its C++ interface
 * (platform_s4u.cpp): the zones, hosts, routers and routes sgx_platform_write's XML
 * declares, and its links, created in the root zone rather than where the XML declares
 * them (the same resources and routes; docs/simgrid.md §7 "Platform loading"). */
bool sgx_platform_build(const sgx_spec *s, config_error *err);

/* What the generator declares, in the order it declares it: the XML writer prints each
 * element, the builder creates it. A hop of a route is a link and a direction (0: a
 * plain link, 1: the UP half of a SPLITDUPLEX link, 2: its DOWN half). */
typedef struct sgx_hop {
	const char *link;
	int dir;
} sgx_hop;

typedef struct sgx_sink {
	void *ctx;
	void (*zone_open)(void *ctx, const char *id, bool empty); /* empty: routing None */
	void (*zone_close)(void *ctx);
	void (*host)(void *ctx, const char *id, double speed);
	void (*router)(void *ctx, const char *id);
	void (*link)(void *ctx, const char *id, double bw, double lat, bool fatpipe); /* else SPLITDUPLEX */
	/* gw_src/gw_dst NULL: a route between two hosts or routers of the zone */
	void (*route)(void *ctx, const char *src, const char *dst, const char *gw_src, const char *gw_dst,
		      const sgx_hop *hops, int n, bool symmetrical);
} sgx_sink;

/* Walks the platform of `s` into `k`; false (with err) on what cannot be generated. */
bool sgx_platform_emit(const sgx_spec *s, const sgx_sink *k, config_error *err);

/* Host names, shared by the generator and the executor. */
void sgx_host_name(char *buf, size_t len, int node, int local);
/* The inverse of sgx_host_name: true when name is a GPU host's, with its node and index. */
bool sgx_host_parse(const char *name, int *node, int *local);
void sgx_ghost_name(char *buf, size_t len, int local);

/* True when the fat-tree has more than one leaf in a system of `system_nodes` nodes. */
bool sgx_has_leaves(const config_platform *p, int system_nodes);

/* ------------------------------------------------------------- execution --- */
#include <simgrid/forward.h>

#include "report/trace.h"

/* A collective group: its logical members and the rings NCCL would build over them. */
typedef struct sgx_group {
	int size;
	int *members;     /* logical ranks, group order */
	int n_ch;         /* ring channels (NCCL channels), each carrying 1/n_ch of the bytes */
	int *order;       /* n_ch x size: channel c's ring, as member indices */
	int *pos;         /* n_ch x size: position of member index i in channel c's ring */
	double lat_max;   /* largest latency of any ring edge */
	int nodes;        /* nodes spanned */
	int per_node;     /* members on each node when uniform, else 0 */
	struct sgx_group *intra; /* hierarchical: one subgroup per node (nodes of them) */
	struct sgx_group *inter; /* hierarchical: one subgroup per local index (per_node) */
	int *sub_intra;   /* member index -> index of its intra subgroup / position in it */
	int *sub_inter;
	int sim_members;  /* members that have actors */
	sg_bar_t bar[WL_STREAM_COUNT];
} sgx_group;

typedef struct sgx_acc {
	double compute, gemm, attention, memory_bound, optimizer, sp_comm, zero_comm, host_comm;
	double side[2]; /* engine_side_add */
	double fwd, bwd; /* main stream, summed over micro-steps */
	double end;
} sgx_acc;

typedef struct sgx_run sgx_run;

typedef struct sgx_rank {
	sgx_run *run;
	int rank;       /* logical world rank (== simulated index) */
	int node, local;
	sg_host_t host;
	double slow;    /* what-if: compute takes this many times as long (1: as the platform says) */
	const config_platform *plat; /* the platform as its node's GPU sees it (node groups) */
	long done[WL_STREAM_COUNT];
	/* a stream actor blocked on another stream of this rank: waits until done[on] > seq */
	bool waiting[WL_STREAM_COUNT];
	int wait_on[WL_STREAM_COUNT];
	long wait_seq[WL_STREAM_COUNT];
	sg_sem_t sem[WL_STREAM_COUNT];
	sgx_acc acc;
	/* NCCL's terms for the collective this rank is running (engine/nccl.h), set by
	 * sgx_collective per stream (the streams of a rank run at once): flows pay their link
	 * latency or not, and carry wire[class] x their bytes (0 intra-node, 1 inter-node). */
	bool link_latency[WL_STREAM_COUNT];
	double wire[WL_STREAM_COUNT][2];
} sgx_rank;

/* Receives, on a ghost host, the flows that enter the period from the previous one. */
typedef struct sgx_proxy {
	sg_sem_t ready, done;
	sg_mailbox_t mbox;
	int weight;   /* identical flows the next one stands for (collectives.c) */
	bool *failed; /* set when that flow cannot take its weight (sgx_run.unweighted) */
} sgx_proxy;

/* Bucket calls (workload_op.chunks) of a quiet step block: from this many calls on, the
 * calls after the third are extrapolated (docs/simgrid.md §5.6); at most this many such ops. */
#define SGX_CHUNKS_FROM 4
#define SGX_CHUNK_OPS_MAX 8
/* two call lengths agree when within this relative gap (the windows' tolerance, §5.4) */
#define SGX_CHUNK_TOL 1e-9

typedef struct sgx_block_info {
	const workload_block *blk;
	int cnt[WL_STREAM_COUNT]; /* ops per iteration on each stream */
	int *pre;                 /* index of op j among its stream's ops in one iteration */
	bool *target;             /* op j is a dependency of an op on another stream */
	bool layer;               /* a layer block (layer_first >= 0, ops): the windows of
				     docs/simgrid.md §5.4 change its repeat */
} sgx_block_info;

struct sgx_run {
	const engine_input *in;
	const config_platform *p;
	const workload_program *prog;
	const workload_layout *lay;
	engine_simgrid_options opt;
	int W, Wsim, gpn;
	int nodes;          /* nodes of the system the ranks sit on (the generated platform's, unreduced) */
	int *gpu_of;        /* logical rank -> GPU (node * gpn + local) */
	bool quotient;
	int period_nodes;
	sgx_rank *ranks;    /* Wsim */
	sg_host_t ghost_host[64];
	sgx_proxy *proxy;   /* gpn x WL_STREAM_COUNT when quotient */
	sgx_block_info *blocks; /* n_micro + n_step */
	int n_blocks;
	bool stream_used[WL_STREAM_COUNT];
	bool merge;
	bool exclusive;     /* one stream computes per GPU (and opt.compute_timer): compute is a
			       plain wait (executor.c) */
	bool counting;      /* only count the flows the collectives would start (no SimGrid) */
	sgx_group world;
	sgx_group *sp;      /* n_groups SP groups (NULL entries for groups without actors) */
	int n_sp;
	sgx_group *ring;    /* USP: the rings of R ranks ring_stride apart (NULL otherwise) */
	int n_ring;
	/* mailbox table: open addressing on (src, dst, stream) */
	unsigned long long *mb_key;
	sg_mailbox_t *mb_val;
	size_t mb_cap, mb_n;
	report_trace *trace;
	double *block_max;  /* optional: longest op duration per block, over ranks */
	long flows, execs;
	bool oom;
	bool broken; /* the symmetry reduction met a flow it cannot map (internal error) */
	bool unweighted; /* a merged flow's network action could not take its weight (internal) */
	bool told;   /* a stream actor reports progress (engine_options.progress) */
	int layer_span; /* a copy forked from a run of this many layers (executor.c
			   fork_copy): op instances keep that run's numbers, each layer block
			   leaving the missing iterations' numbers unused (0: not such a copy) */
	int micro_span; /* the same for a copy forked from a run of this many micro-steps */
	void *bg;    /* whatif.c: the background traffic's ring edges */
	/* step-block ops whose bucket calls run in a quiet system (executor.c chunk_ops_find):
	 * after two calls of equal length the rest are one wait (docs/simgrid.md §5.6) */
	const workload_op *chunk_ops[SGX_CHUNK_OPS_MAX];
	int n_chunk_ops;
	config_platform *group_plat; /* per node group: the platform with that group's GPU */
};

/* executor.c: the in-process run; block_max (n_micro + n_step entries, may be NULL)
 * receives each block's longest op duration over ranks and instances. */
bool sgx_run_in_process(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			engine_simgrid_stats *stats, double *block_max, config_error *err);

/* executor.c: the flows one iteration of each block (n_micro + n_step entries) starts
 * over every simulated rank, counted without simulating (the same phases, none posted):
 * a run of the program moves sum over blocks of per_block x its repeats (x grad_accum
 * for a micro-step block) flows, the figure engine_simgrid_stats.flows reports. */
bool sgx_count_flows(const engine_input *in, const engine_simgrid_options *o, long *per_block, config_error *err);

/* whatif.c: the last node background traffic uses (-1: none), and its daemon actors
 * (after the platform is loaded; r->bg is freed by the caller). */
int sgx_background_last_node(const config_whatif *w);
bool sgx_background_start(sgx_run *r, config_error *err);

/* collectives.c */
bool sgx_groups_build(sgx_run *r, config_error *err);
void sgx_groups_free(sgx_run *r);
/* executor.c: whether identical iterations are simulated a few times and extrapolated
 * (engine_simgrid_options.repeat, unless a trace, SPSIM_SIMGRID_FULL or background
 * traffic asks for every op). */
bool sgx_extrapolates(const engine_input *in, const engine_simgrid_options *o);

/* collectives.c: waits until every simulated rank's stream s has called it. */
void sgx_world_barrier(sgx_rank *R, int s);

/* Runs one collective op (all its chunks) for rank R on stream s; blocks in simulated time. */
void sgx_collective(sgx_rank *R, int s, const workload_op *op);
double sgx_latency(const sgx_run *r, int a, int b);
void sgx_proxy_actor(int argc, char **argv);
void sgx_proxy_init(sgx_proxy *px);

#endif
