/* nccltests: one collective, alone or in disjoint groups, timed by the analytic engine.
 *
 * `spsim collective` runs what nccl-tests runs: every rank of a group calls the same
 * collective at once, and with --groups K the job's ranks split into G/K disjoint groups
 * of K contiguous ranks (the BASP pattern) that all run it at the same time. The time of
 * the step is the slowest group's. Groups only interact through the links they share,
 * which the group shape carries (active_per_node: how many GPUs of a node cross nodes at
 * once). The cost itself is engine_collective_time, the function that costs collectives
 * inside a training step. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccltests/nccltests.h"
#include "engine/nccl.h"

static int nodes_used(const nccltests_setup *s)
{
	int gpn = s->platform->gpus_per_node;
	return (s->gpus + gpn - 1) / gpn;
}

bool nccltests_setup_check(const nccltests_setup *s, config_error *err)
{
	const config_platform *p = s->platform;
	int total = config_platform_gpus(p);
	if (s->gpus < 1)
		return config_fail(err, "-g must be at least 1 GPU");
	if (s->gpus > total)
		return config_fail(err, "%d GPUs do not fit on %s: %d node%s x %d GPU%s = %d; pass --nodes %d", s->gpus,
				   p->name, p->nodes, p->nodes == 1 ? "" : "s", p->gpus_per_node, p->gpus_per_node == 1 ? "" : "s", total,
				   (s->gpus + p->gpus_per_node - 1) / p->gpus_per_node);
	if (s->group_size < 1 || s->gpus % s->group_size != 0)
		return config_fail(err, "--groups %d must divide the %d GPUs into whole groups", s->group_size, s->gpus);
	if (s->coll == WL_COLL_SENDRECV && s->group_size < 2 && s->gpus > 1)
		return config_fail(err, "sendrecv needs groups of at least 2 ranks");
	return true;
}

void nccltests_place(const nccltests_setup *s, int *node_of_rank)
{
	/* the engines' own map (engine/placement.c), so a seed places ranks the same way here */
	int G = s->platform->gpus_per_node, W = s->gpus;
	engine_options opt = {.placement = s->placement, .placement_seed = (unsigned long)s->seed};
	if (!engine_placement_map(s->platform, W, &opt, node_of_rank, NULL)) {
		for (int r = 0; r < W; r++) /* checked earlier: W fits the platform */
			node_of_rank[r] = r;
	}
	for (int r = 0; r < W; r++)
		node_of_rank[r] /= G;
}

/* Per-node tallies shared by all groups: GPUs used and GPUs whose group crosses nodes. */
typedef struct tally {
	int nodes;
	int *used, *crossing;
	int *count; /* scratch, zero between calls */
} tally;

static bool group_crosses(const nccltests_setup *s, const int *node_of_rank, int g)
{
	int K = s->group_size;
	if (s->coll == WL_COLL_SENDRECV) {
		/* nccl-tests' sendrecv: rank i sends to i+1 within the group */
		for (int i = 0; i < K; i++)
			if (node_of_rank[g * K + i] != node_of_rank[g * K + (i + 1) % K])
				return true;
		return false;
	}
	for (int i = 1; i < K; i++)
		if (node_of_rank[g * K + i] != node_of_rank[g * K])
			return true;
	return false;
}

static bool tally_make(const nccltests_setup *s, const int *node_of_rank, tally *t)
{
	int nodes = nodes_used(s), K = s->group_size;
	t->nodes = nodes;
	t->used = calloc((size_t)nodes, sizeof *t->used);
	t->crossing = calloc((size_t)nodes, sizeof *t->crossing);
	t->count = calloc((size_t)nodes, sizeof *t->count);
	if (!t->used || !t->crossing || !t->count)
		return false;
	for (int g = 0; g < s->gpus / K; g++) {
		bool x = group_crosses(s, node_of_rank, g);
		for (int i = 0; i < K; i++) {
			int r = g * K + i, n = node_of_rank[r];
			t->used[n]++;
			if (!x)
				continue;
			/* sendrecv: only the ranks whose successor is elsewhere touch the network */
			if (s->coll == WL_COLL_SENDRECV && node_of_rank[g * K + (i + 1) % K] == n)
				continue;
			t->crossing[n]++;
		}
	}
	return true;
}

static void tally_free(tally *t)
{
	free(t->used);
	free(t->crossing);
	free(t->count);
}

static engine_group_shape shape_of(const nccltests_setup *s, const int *node_of_rank, tally *t, int g)
{
	int K = s->group_size;
	engine_group_shape sh = {.size = K};
	bool x = group_crosses(s, node_of_rank, g);
	if (s->coll == WL_COLL_SENDRECV) {
		/* the cost of one message between neighbours; the slowest pair sets the pace. The
		 * size stays the communicator's K, as the SimGrid engine's group shape and a ring
		 * attention ring (engine_ring_shape_of) have it: NCCL sizes a p2p message's channels
		 * by the communicator's ranks (src/enqueue.cc: nChannelsMin halved while
		 * nChannelsMin x nRanks exceeds the p2p channels), not by the two ranks that talk.
		 * per_node says where the message goes: K (one node) or 1 (a NIC hop). */
		sh.per_node = x ? 1 : K;
		int act = 0;
		for (int i = 0; i < K; i++) {
			int n = node_of_rank[g * K + i];
			int a = x ? t->crossing[n] : t->used[n];
			act = a > act ? a : act;
		}
		sh.active_per_node = act > 0 ? act : 1;
		return sh;
	}
	int fewest = K, act = 0;
	for (int i = 0; i < K; i++)
		t->count[node_of_rank[g * K + i]]++;
	for (int i = 0; i < K; i++) {
		int n = node_of_rank[g * K + i];
		if (t->count[n] < fewest)
			fewest = t->count[n];
		int a = x ? t->crossing[n] : t->used[n];
		act = a > act ? a : act;
	}
	for (int i = 0; i < K; i++)
		t->count[node_of_rank[g * K + i]] = 0;
	/* the engine's shape is symmetric (nodes = P / per_node): take the largest divisor of
	 * K not above the fewest ranks on one node, the worst-placed rank's view */
	int r = fewest;
	while (r > 1 && K % r != 0)
		r--;
	sh.per_node = r;
	sh.active_per_node = act;
	return sh;
}

engine_group_shape nccltests_group_shape(const nccltests_setup *s, const int *node_of_rank, int g)
{
	tally t = {0};
	engine_group_shape sh = {.size = s->group_size, .per_node = 1, .active_per_node = 1};
	if (tally_make(s, node_of_rank, &t))
		sh = shape_of(s, node_of_rank, &t, g);
	tally_free(&t);
	return sh;
}

static bool same_shape(engine_group_shape a, engine_group_shape b)
{
	return a.size == b.size && a.per_node == b.per_node && a.active_per_node == b.active_per_node;
}

bool nccltests_shapes(const nccltests_setup *s, engine_group_shape **out, int *n_out, config_error *err)
{
	if (!nccltests_setup_check(s, err))
		return false;
	int *node_of_rank = malloc((size_t)s->gpus * sizeof *node_of_rank);
	tally t = {0};
	engine_group_shape *shapes = NULL;
	int n = 0, cap = 0;
	bool ok = node_of_rank != NULL;
	if (ok) {
		nccltests_place(s, node_of_rank);
		ok = tally_make(s, node_of_rank, &t);
	}
	for (int g = 0; ok && g < s->gpus / s->group_size; g++) {
		engine_group_shape sh = shape_of(s, node_of_rank, &t, g);
		int j;
		for (j = 0; j < n; j++)
			if (same_shape(shapes[j], sh))
				break;
		if (j < n)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 4;
			engine_group_shape *bigger = realloc(shapes, (size_t)cap * sizeof *bigger);
			if (!bigger) {
				ok = false;
				break;
			}
			shapes = bigger;
		}
		shapes[n++] = sh;
	}
	tally_free(&t);
	free(node_of_rank);
	if (!ok) {
		free(shapes);
		return config_fail(err, "out of memory");
	}
	*out = shapes;
	*n_out = n;
	return true;
}

/* The slowest group's shape and time for one call of `bytes`. */
static bool slowest_group(const nccltests_setup *s, double bytes, engine_group_shape *g, double *t, config_error *err)
{
	engine_group_shape *shapes;
	int n;
	if (!nccltests_shapes(s, &shapes, &n, err))
		return false;
	*t = 0;
	*g = shapes[0];
	for (int i = 0; i < n; i++) {
		double ti = engine_collective_time(s->platform, s->coll, s->alg, shapes[i], bytes);
		if (ti > *t)
			*t = ti, *g = shapes[i];
	}
	free(shapes);
	return true;
}

/* NCCL's algorithm name, NVLS across nodes being its NVLS-tree. */
static const char *algo_label(nccl_algo a, bool across)
{
	return a == NCCL_ALGO_NVLS && across ? "nvls_tree" : nccl_algo_name(a);
}

bool nccltests_predict_choice(const nccltests_setup *s, double bytes, nccltests_choice *out, config_error *err)
{
	engine_group_shape g;
	double t;
	if (!slowest_group(s, bytes, &g, &t, err))
		return false;
	nccl_cost k = nccl_cost_of(s->platform, s->coll, s->alg, g, bytes);
	const bool across = g.size > g.per_node;
	*out = (nccltests_choice){
		.algorithm = algo_label(k.algo, across),
		.protocol = nccl_proto_name(k.proto),
		.channels = nccl_group_channels(s->platform, k.algo, k.proto, g, bytes),
		.latency = k.latency,
	};
	double mt[NCCL_ALGO_P2P][NCCL_PROTO_COUNT];
	if (s->alg != WL_ALG_RING || nccl_tuner_times(s->platform, s->coll, g, bytes, mt) == 0)
		return true;
	for (int a = 0; a < NCCL_ALGO_P2P; a++) /* insertion by model time: NCCL's order breaks ties */
		for (int p = 0; p < NCCL_PROTO_COUNT; p++) {
			if (mt[a][p] < 0)
				continue;
			int i = out->n_candidates++;
			while (i > 0 && out->candidates[i - 1].model_time > mt[a][p]) {
				out->candidates[i] = out->candidates[i - 1];
				i--;
			}
			out->candidates[i].algorithm = algo_label((nccl_algo)a, across);
			out->candidates[i].protocol = nccl_proto_name((nccl_proto)p);
			out->candidates[i].model_time = mt[a][p];
		}
	return true;
}

bool nccltests_predict_time(const nccltests_setup *s, double bytes, double *time_s, config_error *err)
{
	engine_group_shape g;
	return slowest_group(s, bytes, &g, time_s, err);
}
