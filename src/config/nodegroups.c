/* Heterogeneous platforms: `node_groups:` lists the nodes in order as groups, each with its
 * own GPU and NIC count (docs/simgrid.md §10):
 *
 *   platform:
 *     nodes: 6
 *     gpu: {...}                 # the default, and the GPU MFU is counted against
 *     node_groups:
 *       - {nodes: 4}             # the platform's gpu and NICs
 *       - {nodes: 2, nics: 4, gpu: {name: A100-SXM4-80GB, peak_bf16: 312TFLOPS, memory: 80GiB,
 *                                     hbm_bandwidth: 2039GB/s}}
 *
 * The groups' nodes add up to the platform's `nodes`. */
#include <string.h>

#include "config/config.h"
#include "config/yamltree.h"

bool config_read_node_groups(const yt_node *t, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"nodes", "nics", "gpu", NULL};
	p->n_node_groups = 0;
	const yt_node *l = yt_find(t, "node_groups");
	if (!l)
		return true;
	if (l->kind != YT_SEQ || l->n == 0)
		return yt_fail(err, l, "'node_groups' must be a non-empty list of {nodes, nics, gpu} mappings");
	if (l->n > CONFIG_MAX_NODE_GROUPS)
		return yt_fail(err, l, "'node_groups' has %zu groups, expected at most %d", l->n, CONFIG_MAX_NODE_GROUPS);
	int total = 0;
	for (size_t i = 0; i < l->n; i++) {
		const yt_node *g = l->items[i];
		config_node_group *ng = &p->node_groups[i];
		ng->nics = p->inter.nics_per_node;
		ng->gpu = p->gpu;
		if (g->kind != YT_MAP)
			return yt_fail(err, g, "'node_groups' entries must be mappings with keys nodes, nics, gpu");
		if (!yt_check_keys(g, keys, err) || !yt_range_int(g, CONFIG_R_NODES, true, &ng->nodes, NULL, err) ||
		    !yt_range_int(g, CONFIG_R_NICS, false, &ng->nics, NULL, err) ||
		    (yt_find(g, "gpu") && !config_read_gpu(g, &ng->gpu, err)))
			return false;
		if (ng->nodes > (1 << 20) - total)
			return yt_fail(err, g, "'node_groups' hold too many nodes, expected at most %d", 1 << 20);
		total += ng->nodes;
	}
	if (total != p->nodes)
		return yt_fail(err, l, "'node_groups' hold %d nodes, expected the platform's nodes (%d)", total, p->nodes);
	p->n_node_groups = (int)l->n;
	return true;
}

int config_platform_group_of(const config_platform *p, int node)
{
	int first = 0;
	for (int i = 0; i < p->n_node_groups; i++) {
		if (node >= first && node < first + p->node_groups[i].nodes)
			return i;
		first += p->node_groups[i].nodes;
	}
	return -1;
}

const config_gpu *config_platform_gpu_of(const config_platform *p, int node)
{
	int g = config_platform_group_of(p, node);
	return g < 0 ? &p->gpu : &p->node_groups[g].gpu;
}

int config_platform_nics_of(const config_platform *p, int node)
{
	int g = config_platform_group_of(p, node);
	return g < 0 ? p->inter.nics_per_node : p->node_groups[g].nics;
}

bool config_platform_heterogeneous(const config_platform *p)
{
	for (int i = 0; i < p->n_node_groups; i++)
		if (p->node_groups[i].nics != p->inter.nics_per_node ||
		    memcmp(&p->node_groups[i].gpu, &p->gpu, sizeof p->gpu) != 0)
			return true;
	return false;
}
