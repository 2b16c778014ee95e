/* What-ifs in the engines: placement around failed nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

bool engine_whatif_active(const engine_options *opt) { return opt && opt->whatif && opt->whatif->n > 0; }

bool engine_whatif_placement(const config_platform *p, int world, const engine_options *opt, int *gpu_of_rank,
			     config_error *err)
{
	const config_whatif *w = opt ? opt->whatif : NULL;
	int failed = config_whatif_failed_nodes(w, p->nodes);
	if (failed == 0)
		return engine_placement_map(p, world, opt, gpu_of_rank, err);
	int G = p->gpus_per_node;
	config_platform *rest = malloc(sizeof *rest);
	int *alive = malloc((size_t)p->nodes * sizeof *alive);
	bool ok = rest && alive;
	if (!ok)
		config_fail(err, "out of memory");
	if (ok) {
		*rest = *p;
		rest->nodes = p->nodes - failed;
		int k = 0;
		for (int u = 0; u < p->nodes; u++)
			if (!config_whatif_node_failed(w, u))
				alive[k++] = u;
		if (world > config_platform_gpus(rest))
			ok = config_fail(err,
					 "--fail-node: the job no longer fits: it needs %d GPUs, and %d of %d nodes remain "
					 "(%d GPUs)",
					 world, rest->nodes, p->nodes, config_platform_gpus(rest));
		else
			ok = engine_placement_map(rest, world, opt, gpu_of_rank, err);
		for (int r = 0; ok && r < world; r++)
			gpu_of_rank[r] = alive[gpu_of_rank[r] / G] * G + gpu_of_rank[r] % G;
	}
	free(rest);
	free(alive);
	return ok;
}

bool engine_whatif_supported(const char *engine, const engine_options *opt, config_error *err)
{
	if (!engine_whatif_active(opt) || strcmp(engine, "simgrid") == 0)
		return true;
	/* The analytic engine times one schedule for every rank: it runs a slow GPU or node
	 * (engine_whatif_pace) and a degraded NIC or GPU port (engine_whatif_degraded) at the
	 * slowest one's pace and a failed node as the job re-placed (engine_whatif_fail_check);
	 * a mesh pair, a leaf uplink or a neighbour's traffic breaks that schedule. */
	for (int i = 0; i < opt->whatif->n; i++) {
		const config_whatif_item *it = &opt->whatif->item[i];
		if (it->kind == CONFIG_WHATIF_SLOW_GPU || it->kind == CONFIG_WHATIF_SLOW_NODE ||
		    (it->kind == CONFIG_WHATIF_DEGRADE && it->link != CONFIG_LINK_LEAF && it->b < 0))
			continue;
		/* a failed node: the job re-placed on the rest (engine_whatif_fail_check says where
		 * the closed form holds) */
		if (it->kind == CONFIG_WHATIF_FAIL_NODE)
			continue;
		char what[96];
		config_whatif_label(it, what, sizeof what);
		return config_fail(err,
				   "the %s engine cannot run --%s: it times one schedule for every rank, which a mesh pair "
				   "link, a leaf uplink, a failed node on a fat-tree of several leaves or a neighbour's "
				   "traffic breaks (it runs --slow-gpu, --slow-node, --degrade of a NIC or a GPU's port, "
				   "every rank at the slowest one's pace, and --fail-node elsewhere); use --engine simgrid, "
				   "which simulates the whole cluster",
				   engine, what);
	}
	return true;
}

bool engine_whatif_fail_check(const engine_options *opt, const config_platform *p, config_error *err)
{
	const bool leaves = p->inter.topology == CONFIG_TOPO_FAT_TREE && p->inter.nodes_per_leaf > 0 &&
			    p->nodes > p->inter.nodes_per_leaf;
	for (int i = 0; leaves && engine_whatif_active(opt) && i < opt->whatif->n; i++)
		if (opt->whatif->item[i].kind == CONFIG_WHATIF_FAIL_NODE)
			return config_fail(err,
					   "the analytic engine cannot run --fail-node %d on '%s': re-placed around it, the "
					   "job may straddle another of its fat-tree leaves (%d nodes each), which the closed "
					   "form, placed from node 0, does not see; use --engine simgrid",
					   opt->whatif->item[i].node, p->name, p->inter.nodes_per_leaf);
	return true;
}

/* The node of each of the job's ranks, re-placed around failed nodes (contiguous: the
 * analytic engine's placement); NULL when out of memory or the job does not fit (checked
 * before), the caller then takes rank r on node r / G. */
static int *rank_nodes(const engine_options *opt, const config_platform *p, int world)
{
	int *gpu = malloc((size_t)world * sizeof *gpu);
	engine_options o = *opt;
	o.placement = ENGINE_PLACE_CONTIGUOUS;
	if (gpu && !engine_whatif_placement(p, world, &o, gpu, &(config_error){""})) {
		free(gpu);
		return NULL;
	}
	for (int r = 0; gpu && r < world; r++)
		gpu[r] /= p->gpus_per_node;
	return gpu;
}

bool engine_whatif_degraded(const engine_options *opt, const config_platform *p, int world, config_platform *out)
{
	double nic = 1, port = 1;
	const int G = p->gpus_per_node;
	if (!engine_whatif_active(opt))
		return false;
	/* the nodes the job occupies: one outside it (or failed) carries none of its traffic */
	int *node = rank_nodes(opt, p, world);
	bool *used = calloc((size_t)p->nodes, sizeof *used);
	for (int r = 0; used && r < world; r++)
		used[node ? node[r] : r / G] = true;
	free(node);
	for (int i = 0; i < opt->whatif->n; i++) {
		const config_whatif_item *it = &opt->whatif->item[i];
		if (it->kind != CONFIG_WHATIF_DEGRADE || it->node >= p->nodes || (used && !used[it->node]))
			continue;
		/* the slowest of the job's links of that kind (factors on one link multiply) */
		for (int k = 0; it->link == CONFIG_LINK_NIC && k < config_platform_nics_of(p, it->node); k++)
			nic = fmax(nic, config_whatif_link_factor(opt->whatif, CONFIG_LINK_NIC, it->node, k, -1));
		for (int g = 0; it->link == CONFIG_LINK_NVLINK && g < G; g++)
			port = fmax(port, config_whatif_link_factor(opt->whatif, CONFIG_LINK_NVLINK, it->node, g, -1));
	}
	free(used);
	if (nic == 1 && port == 1)
		return false;
	*out = *p;
	/* NCCL chose its algorithms, protocols and channels on the links as declared (a link
	 * that slows after NCCL sized its plan, as in the SimGrid engine): keep that view */
	config_platform_keep_tuner_view(out);
	out->inter.nic_bandwidth /= nic;
	out->intra.bandwidth /= port;
	out->intra.pair_bandwidth /= port;
	return true;
}

double engine_whatif_pace(const engine_options *opt, const config_platform *p, int world)
{
	double f = 1;
	if (!engine_whatif_active(opt))
		return f;
	/* contiguous placement (the analytic engine's only one) around any failed node */
	int *node = rank_nodes(opt, p, world);
	for (int r = 0; r < world; r++) {
		double fr = config_whatif_compute_factor(opt->whatif, r, node ? node[r] : r / p->gpus_per_node);
		if (fr > f)
			f = fr;
	}
	free(node);
	return f;
}

bool engine_placement_supported(const char *engine, const engine_options *opt, config_error *err)
{
	if (opt->placement == ENGINE_PLACE_CONTIGUOUS || strcmp(engine, "analytic") != 0)
		return true;
	return config_fail(err, "the analytic engine models contiguous placement only; use --engine simgrid for "
				"strided or random placement");
}

bool engine_buckets_supported(const char *engine, const config_model *m, const config_job *given, config_error *err)
{
	if (strcmp(engine, "simgrid") != 0)
		return true;
	config_job resolved = *given; /* before workload_check: auto sizes resolved here too */
	config_job_resolve_auto(&resolved, m);
	const config_job *job = &resolved;
	/* the most parameters one bucketed collective moves (workload/program.c): every
	 * gradient or parameter at the step for stages 0-2, one layer's per layer at stage 3
	 * (and stage 2's reduction), the embedding or head for stage 3's outer gathers */
	const int z = job->zero_stage;
	const double all = config_model_params(m), layer = config_model_layer_params(m),
		     outer = all - m->layers * layer;
	const struct {
		const char *flag;
		double bucket, elems;
	} b[] = {
		{"--reduce-bucket", job->reduce_bucket_elems, z <= 1 ? all : layer},
		{"--allgather-bucket", job->allgather_bucket_elems, z == 0 ? 0 : z == 3 ? outer : all},
		{"--prefetch-bucket", job->prefetch_bucket_elems,
		 z == 3 && job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER ? layer : 0},
	};
	for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
		if (b[i].bucket > 0 && b[i].elems / b[i].bucket > ENGINE_MAX_BUCKETS)
			return config_fail(err,
					   "%s %g splits %.4g parameters into %.4g collective calls, and the simgrid engine "
					   "simulates each (at most %d); use %s %.0f or more, or the analytic engine, which "
					   "times any count in closed form",
					   b[i].flag, b[i].bucket, b[i].elems, ceil(b[i].elems / b[i].bucket), ENGINE_MAX_BUCKETS,
					   b[i].flag, ceil(b[i].elems / ENGINE_MAX_BUCKETS));
	return true;
}

bool engine_platform_supported(const char *engine, const config_platform *p, config_error *err)
{
	if (strcmp(engine, "simgrid") != 0 || p->gpus_per_node <= ENGINE_SIMGRID_MAX_GPUS_PER_NODE)
		return true;
	return config_fail(err,
			   "platform '%s' has %d GPUs per node, and the simgrid engine simulates at most %d per node; "
			   "use the analytic engine, or a platform of at most %d GPUs per node",
			   p->name, p->gpus_per_node, ENGINE_SIMGRID_MAX_GPUS_PER_NODE, ENGINE_SIMGRID_MAX_GPUS_PER_NODE);
}

double engine_placed_gpu_memory(const config_platform *p, int world, const engine_options *opt)
{
	if (p->n_node_groups == 0)
		return p->gpu.memory_bytes;
	if (world <= 0)
		world = config_platform_gpus(p);
	int *gpu_of = malloc((size_t)world * sizeof *gpu_of);
	double least = p->gpu.memory_bytes;
	bool any = false;
	if (gpu_of && engine_whatif_placement(p, world, opt, gpu_of, NULL))
		for (int r = 0; r < world; r++) {
			double m = config_platform_gpu_of(p, gpu_of[r] / p->gpus_per_node)->memory_bytes;
			if (!any || m < least)
				least = m;
			any = true;
		}
	free(gpu_of);
	return least;
}
