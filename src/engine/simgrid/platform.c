/* Platform -> SimGrid platform XML (DTD 4.1), derived in docs/simgrid.md "The platform".
 *
 * Zones: one per node (Full routing over its GPU hosts and a gateway router), grouped
 * under leaf zones for a fat-tree, and under plain switch zones of at most FANOUT children
 * so that no zone's route table grows with the square of the cluster. A route between two
 * zones climbs through gateways: node -> leaf (leaf uplink) -> spine -> leaf (downlink)
 * -> node. XML forbids a zone to hold both sub-zones and routers, so the gateway of a zone
 * of zones is the router of a one-router child zone ("<name>s").
 *
 * Links (bandwidths effective: x the platform's efficiency, as the analytic engine uses):
 *   nvswitch / pcie: one SPLITDUPLEX link per GPU (up = GPU to switch, down = back);
 *                    intra route = src link up + dst link down.
 *   nvlink-mesh:     one SPLITDUPLEX link per GPU pair (up = low index to high).
 *   NIC k of a node: SPLITDUPLEX; GPU i is bound to NIC i mod nics (NCCL binds each GPU to
 *                    its nearest NIC, ncclTopoGetLocalNet; one NIC per GPU: [NCCL-topo]).
 *                    On pcie the GPU's own link is crossed too (GPU -> host switch -> NIC).
 *   fat-tree leaf:   uplink of nodes_per_leaf x nics x nic_bw / oversubscription.
 *   switches:        FATPIPE links of unbounded rate (SimGrid forbids empty routes), one
 *                    port per child zone, so that no link is shared by the whole cluster.
 * What-ifs (docs/simgrid.md "What-ifs"): a degraded NIC, GPU port, pair link or leaf
 * uplink has its bandwidth divided by the what-if's factor; nothing else changes.
 * Latencies: intra = 2 x half on the GPU links (or the pair link), inter = 2 x half on the
 * NICs, zero on switches, so every route carries exactly the platform's latency. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/simgrid/sg_internal.h"

#define FANOUT 32
#define SWITCH_BW 1e18 /* FATPIPE: every flow alone at this rate, i.e. never a bottleneck */

void sgx_host_name(char *buf, size_t len, int node, int local) { snprintf(buf, len, "n%dg%d", node, local); }

void sgx_ghost_name(char *buf, size_t len, int local) { snprintf(buf, len, "wrapg%d", local); }

bool sgx_has_leaves(const config_platform *p, int system_nodes)
{
	return p->inter.topology == CONFIG_TOPO_FAT_TREE && p->inter.nodes_per_leaf > 0 &&
	       system_nodes > p->inter.nodes_per_leaf;
}

typedef struct writer {
	FILE *f;
	const config_platform *p;
	int gpn, nics;
	bool pcie, mesh;
	bool gateways; /* nodes need a gateway (more than one node, or ghosts) */
	bool oom;
	const config_whatif *whatif;
} writer;

/* A link's bandwidth after the degrade what-ifs that name it. */
static double degraded(const writer *w, double bw, config_link_kind link, int node, int a, int b)
{
	return bw / config_whatif_link_factor(w->whatif, link, node, a, b);
}

static void link_xml(writer *w, const char *indent, const char *id, double bw, double lat, const char *policy)
{
	fprintf(w->f, "%s<link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"%s\"/>\n", indent, id,
		bw, lat, policy);
}

static void gpu_link_name(char *buf, size_t len, int node, int j) { snprintf(buf, len, "n%dg%d_link", node, j); }

static void nic_name(char *buf, size_t len, int node, int k) { snprintf(buf, len, "n%dnic%d", node, k); }

static void node_zone(writer *w, int u, const char *ind)
{
	const config_platform *p = w->p;
	char a[64], b[64], c[64];
	fprintf(w->f, "%s<zone id=\"n%d\" routing=\"Full\">\n", ind, u);
	for (int j = 0; j < w->gpn; j++) {
		sgx_host_name(a, sizeof a, u, j);
		/* every host runs at the platform's peak: executions carry time x that peak
		 * (executor.c), each rank's time from its own node's GPU */
		fprintf(w->f, "%s  <host id=\"%s\" speed=\"%.17gf\"/>\n", ind, a, p->gpu.peak_flops);
	}
	if (w->gateways)
		fprintf(w->f, "%s  <router id=\"n%dgw\"/>\n", ind, u);
	char in2[64];
	snprintf(in2, sizeof in2, "%s  ", ind);
	if (w->mesh) {
		for (int i = 0; i < w->gpn; i++)
			for (int j = i + 1; j < w->gpn; j++) {
				snprintf(a, sizeof a, "n%dg%d_g%d", u, i, j);
				link_xml(w, in2, a, degraded(w, config_platform_intra_pair_bw(p), CONFIG_LINK_NVLINK, u, i, j),
					 p->intra.latency, "SPLITDUPLEX");
			}
	} else {
		for (int j = 0; j < w->gpn; j++) {
			gpu_link_name(a, sizeof a, u, j);
			link_xml(w, in2, a, degraded(w, config_platform_intra_bw(p), CONFIG_LINK_NVLINK, u, j, -1),
				 p->intra.latency / 2, "SPLITDUPLEX");
		}
	}
	int nics = w->p->n_node_groups > 0 ? config_platform_nics_of(w->p, u) : w->nics; /* node groups */
	if (nics < 1)
		nics = 1;
	if (w->gateways)
		for (int k = 0; k < nics; k++) {
			nic_name(a, sizeof a, u, k);
			link_xml(w, in2, a, degraded(w, config_platform_nic_bw(p), CONFIG_LINK_NIC, u, k, -1),
				 p->inter.latency / 2, "SPLITDUPLEX");
		}
	/* intra-node routes, declared once per pair (symmetric: the reverse uses the other
	 * direction of each SPLITDUPLEX link) */
	for (int i = 0; i < w->gpn; i++)
		for (int j = i + 1; j < w->gpn; j++) {
			sgx_host_name(a, sizeof a, u, i);
			sgx_host_name(b, sizeof b, u, j);
			fprintf(w->f, "%s  <route src=\"%s\" dst=\"%s\">", ind, a, b);
			if (w->mesh) {
				fprintf(w->f, "<link_ctn id=\"n%dg%d_g%d\" direction=\"UP\"/>", u, i, j);
			} else {
				gpu_link_name(c, sizeof c, u, i);
				fprintf(w->f, "<link_ctn id=\"%s\" direction=\"UP\"/>", c);
				gpu_link_name(c, sizeof c, u, j);
				fprintf(w->f, "<link_ctn id=\"%s\" direction=\"DOWN\"/>", c);
			}
			fprintf(w->f, "</route>\n");
		}
	if (w->gateways)
		for (int j = 0; j < w->gpn; j++) {
			sgx_host_name(a, sizeof a, u, j);
			fprintf(w->f, "%s  <route src=\"%s\" dst=\"n%dgw\">", ind, a, u);
			if (w->pcie) {
				gpu_link_name(c, sizeof c, u, j);
				fprintf(w->f, "<link_ctn id=\"%s\" direction=\"UP\"/>", c);
			}
			nic_name(c, sizeof c, u, j % nics);
			fprintf(w->f, "<link_ctn id=\"%s\" direction=\"UP\"/></route>\n", c);
		}
	fprintf(w->f, "%s</zone>\n", ind);
}

/* A child of a zone of zones: its id and the gateway router a route to it ends at. */
typedef struct item {
	char id[48];
	char gw[48];
} item;

/* Switch port i of zone `self` ("<self>sw<i>"): the FATPIPE link of every route between
 * child i and a later child, and of child i's route up to the zone's own gateway when the
 * zone has no real uplink. SimGrid forbids empty routes, so a route through a switch needs
 * a link; one per child (not one per switch) keeps flows of different children out of one
 * sharing constraint. A FATPIPE link of SWITCH_BW never limits a flow, so the rates are
 * those of a single shared switch link (docs/simgrid.md §2, §7), but SimGrid's selective
 * update no longer ties every flow through the switch into one system to re-solve at each
 * event. */
static void port_name(char *buf, size_t len, const char *self, int i) { snprintf(buf, len, "%ssw%d", self, i); }

/* Declares the ports zone_routes uses: every child's but the last, and the last one's too
 * when the route up to the zone's gateway goes through the switch (no real uplink). */
static void switch_ports(writer *w, const char *ind, const char *self, int n, bool up_through_switch)
{
	char port[80];
	for (int i = 0; i < n; i++)
		if (i + 1 < n || up_through_switch) {
			port_name(port, sizeof port, self, i);
			link_xml(w, ind, port, SWITCH_BW, 0, "FATPIPE");
		}
}

/* Writes the routes of a zone of zones: child i <-> child j > i through port i, child i ->
 * the zone's own switch through `up` (direction UP when `up_dir`) or, without it, through
 * port i when `want_up`. */
static void zone_routes(writer *w, const char *ind, const char *self, const item *kids, int n, bool want_up,
			const char *up, bool up_dir)
{
	char port[80];
	for (int i = 0; i < n; i++) {
		port_name(port, sizeof port, self, i);
		for (int j = i + 1; j < n; j++)
			fprintf(w->f,
				"%s  <zoneRoute src=\"%s\" dst=\"%s\" gw_src=\"%s\" gw_dst=\"%s\"><link_ctn id=\"%s\"/></zoneRoute>\n",
				ind, kids[i].id, kids[j].id, kids[i].gw, kids[j].gw, port);
	}
	if (want_up)
		for (int i = 0; i < n; i++) {
			fprintf(w->f, "%s  <zoneRoute src=\"%s\" dst=\"%ss\" gw_src=\"%s\" gw_dst=\"%sgw\">", ind, kids[i].id,
				self, kids[i].gw, self);
			port_name(port, sizeof port, self, i);
			if (up && up_dir)
				fprintf(w->f, "<link_ctn id=\"%s\" direction=\"UP\"/>", up);
			else
				fprintf(w->f, "<link_ctn id=\"%s\"/>", up ? up : port);
			fprintf(w->f, "</zoneRoute>\n");
		}
}

/* The wrap zone: ghost hosts for node 0's GPUs, reached from anywhere through the
 * network and landing on node 0's NIC (and leaf downlink when the system has leaves). */
static void wrap_zone(writer *w, const char *ind, bool leaves)
{
	char a[64], c[64];
	fprintf(w->f, "%s<zone id=\"wrap\" routing=\"Full\">\n", ind);
	for (int j = 0; j < w->gpn; j++) {
		sgx_ghost_name(a, sizeof a, j);
		fprintf(w->f, "%s  <host id=\"%s\" speed=\"1f\"/>\n", ind, a);
	}
	fprintf(w->f, "%s  <router id=\"wrapgw\"/>\n", ind);
	for (int j = 0; j < w->gpn; j++) {
		sgx_ghost_name(a, sizeof a, j);
		fprintf(w->f, "%s  <route src=\"wrapgw\" dst=\"%s\" symmetrical=\"NO\">", ind, a);
		if (leaves)
			fprintf(w->f, "<link_ctn id=\"leaf0up\" direction=\"DOWN\"/>");
		nic_name(c, sizeof c, 0, j % w->nics);
		fprintf(w->f, "<link_ctn id=\"%s\" direction=\"DOWN\"/>", c);
		if (w->pcie) {
			gpu_link_name(c, sizeof c, 0, j);
			fprintf(w->f, "<link_ctn id=\"%s\" direction=\"DOWN\"/>", c);
		}
		fprintf(w->f, "</route>\n");
	}
	fprintf(w->f, "%s</zone>\n", ind);
}

static void indent_of(char *buf, size_t len, int depth)
{
	size_t n = (size_t)depth * 1;
	if (n >= len)
		n = len - 1;
	memset(buf, ' ', n);
	buf[n] = '\0';
}

/* Writes the zones holding nodes [first, first+count) at `depth`, grouped so that no zone
 * has more than FANOUT children. leaf_size > 0: the lowest grouping is the fat-tree's
 * leaves (with uplinks). Fills *out with the written zone's id and gateway. */
static void subtree(writer *w, int first, int count, int leaf_size, int depth, const char *name, item *out,
		    bool want_gw)
{
	char ind[64];
	indent_of(ind, sizeof ind, depth);
	if (count == 1 && leaf_size == 0) {
		node_zone(w, first, ind);
		snprintf(out->id, sizeof out->id, "n%d", first);
		snprintf(out->gw, sizeof out->gw, "n%dgw", first);
		return;
	}
	/* children: nodes (a leaf, or a small enough group), or sub-groups */
	int per_child;
	if (leaf_size > 0 && count == leaf_size)
		per_child = 1; /* this zone is a leaf */
	else if (leaf_size > 0) {
		int leaves = count / leaf_size, per = 1;
		while ((leaves + per - 1) / per > FANOUT)
			per *= FANOUT;
		per_child = per * leaf_size;
	} else {
		int per = 1;
		while ((count + per - 1) / per > FANOUT)
			per *= FANOUT;
		per_child = per;
	}
	bool is_leaf = leaf_size > 0 && count == leaf_size;
	int n = (count + per_child - 1) / per_child;
	item *kids = calloc((size_t)n, sizeof *kids);
	if (!kids) {
		w->oom = true;
		return;
	}
	fprintf(w->f, "%s<zone id=\"%s\" routing=\"Full\">\n", ind, name);
	if (want_gw)
		fprintf(w->f, "%s <zone id=\"%ss\" routing=\"None\"><router id=\"%sgw\"/></zone>\n", ind, name, name);
	for (int i = 0; i < n; i++) {
		int f = first + i * per_child;
		int c = count - i * per_child < per_child ? count - i * per_child : per_child;
		char child[48];
		if (is_leaf || per_child == 1) {
			indent_of(ind, sizeof ind, depth + 1);
			node_zone(w, f, ind);
			snprintf(kids[i].id, sizeof kids[i].id, "n%d", f);
			snprintf(kids[i].gw, sizeof kids[i].gw, "n%dgw", f);
			indent_of(ind, sizeof ind, depth);
		} else if (leaf_size > 0 && c == leaf_size) {
			snprintf(child, sizeof child, "leaf%d", f / leaf_size);
			subtree(w, f, c, leaf_size, depth + 1, child, &kids[i], true);
		} else {
			snprintf(child, sizeof child, "%s_%d", name, i);
			subtree(w, f, c, leaf_size, depth + 1, child, &kids[i], true);
		}
	}
	char up[64];
	const char *uplink = NULL;
	bool up_dir = false;
	if (want_gw && is_leaf) {
		const config_platform *p = w->p;
		double bw = p->inter.nodes_per_leaf * p->inter.nics_per_node * config_platform_nic_bw(p) /
			    p->inter.oversubscription;
		snprintf(up, sizeof up, "%sup", name);
		link_xml(w, ind, up, degraded(w, bw, CONFIG_LINK_LEAF, first / leaf_size, -1, -1), 0, "SPLITDUPLEX");
		uplink = up;
		up_dir = true;
	}
	switch_ports(w, ind, name, n, want_gw && !uplink);
	zone_routes(w, ind, name, kids, n, want_gw, uplink, up_dir);
	fprintf(w->f, "%s</zone>\n", ind);
	snprintf(out->id, sizeof out->id, "%s", name);
	snprintf(out->gw, sizeof out->gw, "%sgw", name);
	free(kids);
}

bool sgx_platform_write(const sgx_spec *s, FILE *out, config_error *err)
{
	const config_platform *p = s->p;
	if (s->nodes < 1 || p->gpus_per_node < 1)
		return config_fail(err, "platform '%s': nothing to generate (%d nodes of %d GPUs)", p->name, s->nodes,
				   p->gpus_per_node);
	if (p->inter.nics_per_node < 1 && (s->nodes > 1 || s->wrap))
		return config_fail(err, "platform '%s': %d nodes but no NIC to join them", p->name, s->nodes);
	bool leaves = sgx_has_leaves(p, s->system_nodes);
	if (leaves && s->nodes % p->inter.nodes_per_leaf != 0)
		return config_fail(err, "internal: %d generated nodes are not whole leaves of %d", s->nodes,
				   p->inter.nodes_per_leaf);
	writer w = {.f = out,
		    .p = p,
		    .gpn = p->gpus_per_node,
		    .nics = p->inter.nics_per_node > 0 ? p->inter.nics_per_node : 1,
		    .pcie = p->intra.fabric == CONFIG_FABRIC_PCIE,
		    .mesh = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH,
		    .gateways = s->nodes > 1 || s->wrap,
		    .whatif = s->whatif};
	/* The name comes from a user file: keep only characters that cannot end a comment. */
	char name[CONFIG_NAME_MAX];
	size_t k = 0;
	for (const char *c = p->name; *c && k + 1 < sizeof name; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		    *c == '_' || (*c == '-' && k > 0 && name[k - 1] != '-'))
			name[k++] = *c;
	name[k] = '\0';
	fprintf(out, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
	fprintf(out, "<!-- spsim platform %s: %d node%s x %d GPUs, %s, %d NIC%s per node, %s", name, s->nodes,
		s->nodes == 1 ? "" : "s", w.gpn, config_fabric_names[p->intra.fabric], p->inter.nics_per_node,
		p->inter.nics_per_node == 1 ? "" : "s", config_topology_names[p->inter.topology]);
	if (p->inter.topology == CONFIG_TOPO_FAT_TREE)
		fprintf(out, " (%d nodes per leaf, oversubscription %g)", p->inter.nodes_per_leaf,
			p->inter.oversubscription);
	if (s->wrap)
		fprintf(out, "; first period of a %d-node system, ghosts stand for the next period", s->system_nodes);
	fprintf(out, ".\n     Bandwidths are effective (x efficiency). Network model: --cfg=network/model:CM02\n"
		     "     --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:0 (pure alpha-beta, max-min). -->\n");
	fprintf(out, "<platform version=\"4.1\">\n");
	int leaf_size = leaves ? p->inter.nodes_per_leaf : 0;
	item top;
	if (!s->wrap) {
		subtree(&w, 0, s->nodes, leaf_size, 0, "spsim", &top, false);
	} else {
		/* root: the period's zones and the wrap zone, joined by the spine switch */
		fprintf(out, "<zone id=\"spsim\" routing=\"Full\">\n");
		item kids[2];
		/* a period of exactly one leaf is that leaf (the ghosts' routes name leaf0up) */
		subtree(&w, 0, s->nodes, leaf_size, 1, leaf_size == s->nodes ? "leaf0" : "period", &kids[0], true);
		wrap_zone(&w, " ", leaves);
		snprintf(kids[1].id, sizeof kids[1].id, "wrap");
		snprintf(kids[1].gw, sizeof kids[1].gw, "wrapgw");
		switch_ports(&w, " ", "spsim", 2, false);
		zone_routes(&w, " ", "spsim", kids, 2, false, NULL, false);
		fprintf(out, "</zone>\n");
	}
	fprintf(out, "</platform>\n");
	if (w.oom)
		return config_fail(err, "out of memory generating the SimGrid platform");
	if (ferror(out))
		return config_fail(err, "cannot write the SimGrid platform (disk full?)");
	return true;
}

bool engine_simgrid_platform_xml(const config_platform *p, FILE *out, config_error *err)
{
	sgx_spec s = {.p = p, .nodes = p->nodes, .system_nodes = p->nodes, .wrap = false};
	return sgx_platform_write(&s, out, err);
}
