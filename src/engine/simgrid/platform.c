/* Platform -> SimGrid platform, derived in docs/simgrid.md "The platform": one generator
 * (sgx_platform_emit) declares the zones, hosts, links and routes in order, and a sink either
 * writes them as XML (DTD 4.1, sgx_platform_write: `spsim platform --xml`) or creates them
 * in the running engine (platform_s4u.cpp, what the engine simulates on).
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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/simgrid/sg_internal.h"

#define FANOUT 32
#define SWITCH_BW 1e18 /* FATPIPE: every flow alone at this rate, i.e. never a bottleneck */

void sgx_host_name(char *buf, size_t len, int node, int local) { snprintf(buf, len, "n%dg%d", node, local); }

bool sgx_host_parse(const char *name, int *node, int *local)
{
	int end = 0;
	return sscanf(name, "n%dg%d%n", node, local, &end) == 2 && name[end] == '\0' && *node >= 0 && *local >= 0;
}

void sgx_ghost_name(char *buf, size_t len, int local) { snprintf(buf, len, "wrapg%d", local); }

bool sgx_has_leaves(const config_platform *p, int system_nodes)
{
	return p->inter.topology == CONFIG_TOPO_FAT_TREE && p->inter.nodes_per_leaf > 0 &&
	       system_nodes > p->inter.nodes_per_leaf;
}

typedef struct writer {
	const sgx_sink *k;
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

#define UP 1
#define DOWN 2

static void link_of(writer *w, const char *id, double bw, double lat, bool fatpipe)
{
	w->k->link(w->k->ctx, id, bw, lat, fatpipe);
}

static void route_of(writer *w, const char *src, const char *dst, const sgx_hop *h, int n)
{
	w->k->route(w->k->ctx, src, dst, NULL, NULL, h, n, true);
}

static void gpu_link_name(char *buf, size_t len, int node, int j) { snprintf(buf, len, "n%dg%d_link", node, j); }

static void nic_name(char *buf, size_t len, int node, int k) { snprintf(buf, len, "n%dnic%d", node, k); }

static void node_zone(writer *w, int u)
{
	const config_platform *p = w->p;
	char a[64], b[64], c[64], d[64];
	snprintf(a, sizeof a, "n%d", u);
	w->k->zone_open(w->k->ctx, a, false);
	for (int j = 0; j < w->gpn; j++) {
		sgx_host_name(a, sizeof a, u, j);
		/* every host runs at the platform's peak: executions carry time x that peak
		 * (executor.c), each rank's time from its own node's GPU */
		w->k->host(w->k->ctx, a, p->gpu.peak_flops);
	}
	char gw[64];
	snprintf(gw, sizeof gw, "n%dgw", u);
	if (w->gateways)
		w->k->router(w->k->ctx, gw);
	if (w->mesh) {
		for (int i = 0; i < w->gpn; i++)
			for (int j = i + 1; j < w->gpn; j++) {
				snprintf(a, sizeof a, "n%dg%d_g%d", u, i, j);
				link_of(w, a, degraded(w, config_platform_intra_pair_bw(p), CONFIG_LINK_NVLINK, u, i, j),
					p->intra.latency, false);
			}
	} else {
		for (int j = 0; j < w->gpn; j++) {
			gpu_link_name(a, sizeof a, u, j);
			link_of(w, a, degraded(w, config_platform_intra_bw(p), CONFIG_LINK_NVLINK, u, j, -1),
				p->intra.latency / 2, false);
		}
	}
	int nics = w->p->n_node_groups > 0 ? config_platform_nics_of(w->p, u) : w->nics; /* node groups */
	if (nics < 1)
		nics = 1;
	if (w->gateways)
		for (int k = 0; k < nics; k++) {
			nic_name(a, sizeof a, u, k);
			link_of(w, a, degraded(w, config_platform_nic_bw(p), CONFIG_LINK_NIC, u, k, -1),
				p->inter.latency / 2, false);
		}
	/* intra-node routes, declared once per pair (symmetric: the reverse uses the other
	 * direction of each SPLITDUPLEX link) */
	for (int i = 0; i < w->gpn; i++)
		for (int j = i + 1; j < w->gpn; j++) {
			sgx_host_name(a, sizeof a, u, i);
			sgx_host_name(b, sizeof b, u, j);
			if (w->mesh) {
				snprintf(c, sizeof c, "n%dg%d_g%d", u, i, j);
				route_of(w, a, b, (sgx_hop[]){{c, UP}}, 1);
			} else {
				gpu_link_name(c, sizeof c, u, i);
				gpu_link_name(d, sizeof d, u, j);
				route_of(w, a, b, (sgx_hop[]){{c, UP}, {d, DOWN}}, 2);
			}
		}
	if (w->gateways)
		for (int j = 0; j < w->gpn; j++) {
			sgx_host_name(a, sizeof a, u, j);
			gpu_link_name(c, sizeof c, u, j);
			nic_name(d, sizeof d, u, j % nics);
			if (w->pcie)
				route_of(w, a, gw, (sgx_hop[]){{c, UP}, {d, UP}}, 2);
			else
				route_of(w, a, gw, (sgx_hop[]){{d, UP}}, 1);
		}
	w->k->zone_close(w->k->ctx);
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
static void switch_ports(writer *w, const char *self, int n, bool up_through_switch)
{
	char port[80];
	for (int i = 0; i < n; i++)
		if (i + 1 < n || up_through_switch) {
			port_name(port, sizeof port, self, i);
			link_of(w, port, SWITCH_BW, 0, true);
		}
}

/* Declares the routes of a zone of zones: child i <-> child j > i through port i, child i
 * -> the zone's own switch through `up` (direction UP when `up_dir`) or, without it,
 * through port i when `want_up`. */
static void zone_routes(writer *w, const char *self, const item *kids, int n, bool want_up, const char *up,
			bool up_dir)
{
	char port[80], sw[64], gw[64];
	for (int i = 0; i < n; i++) {
		port_name(port, sizeof port, self, i);
		for (int j = i + 1; j < n; j++)
			w->k->route(w->k->ctx, kids[i].id, kids[j].id, kids[i].gw, kids[j].gw, (sgx_hop[]){{port, 0}}, 1,
				    true);
	}
	if (want_up) {
		snprintf(sw, sizeof sw, "%ss", self);
		snprintf(gw, sizeof gw, "%sgw", self);
		for (int i = 0; i < n; i++) {
			port_name(port, sizeof port, self, i);
			sgx_hop h = {up ? up : port, up && up_dir ? UP : 0};
			w->k->route(w->k->ctx, kids[i].id, sw, kids[i].gw, gw, &h, 1, true);
		}
	}
}

/* The wrap zone: ghost hosts for node 0's GPUs, reached from anywhere through the
 * network and landing on node 0's NIC (and leaf downlink when the system has leaves). */
static void wrap_zone(writer *w, bool leaves)
{
	char a[64], c[64], d[64];
	w->k->zone_open(w->k->ctx, "wrap", false);
	for (int j = 0; j < w->gpn; j++) {
		sgx_ghost_name(a, sizeof a, j);
		w->k->host(w->k->ctx, a, 1);
	}
	w->k->router(w->k->ctx, "wrapgw");
	for (int j = 0; j < w->gpn; j++) {
		sgx_ghost_name(a, sizeof a, j);
		sgx_hop h[3];
		int n = 0;
		if (leaves)
			h[n++] = (sgx_hop){"leaf0up", DOWN};
		nic_name(c, sizeof c, 0, j % w->nics);
		h[n++] = (sgx_hop){c, DOWN};
		if (w->pcie) {
			gpu_link_name(d, sizeof d, 0, j);
			h[n++] = (sgx_hop){d, DOWN};
		}
		w->k->route(w->k->ctx, "wrapgw", a, NULL, NULL, h, n, false);
	}
	w->k->zone_close(w->k->ctx);
}

/* Declares the zones holding nodes [first, first+count), grouped so that no zone has more
 * than FANOUT children. leaf_size > 0: the lowest grouping is the fat-tree's leaves (with
 * uplinks). Fills *out with the declared zone's id and gateway. */
static void subtree(writer *w, int first, int count, int leaf_size, const char *name, item *out, bool want_gw)
{
	if (count == 1 && leaf_size == 0) {
		node_zone(w, first);
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
	char buf[64];
	w->k->zone_open(w->k->ctx, name, false);
	if (want_gw) {
		snprintf(buf, sizeof buf, "%ss", name);
		w->k->zone_open(w->k->ctx, buf, true);
		snprintf(buf, sizeof buf, "%sgw", name);
		w->k->router(w->k->ctx, buf);
		w->k->zone_close(w->k->ctx);
	}
	for (int i = 0; i < n; i++) {
		int f = first + i * per_child;
		int c = count - i * per_child < per_child ? count - i * per_child : per_child;
		char child[48];
		if (is_leaf || per_child == 1) {
			node_zone(w, f);
			snprintf(kids[i].id, sizeof kids[i].id, "n%d", f);
			snprintf(kids[i].gw, sizeof kids[i].gw, "n%dgw", f);
		} else if (leaf_size > 0 && c == leaf_size) {
			snprintf(child, sizeof child, "leaf%d", f / leaf_size);
			subtree(w, f, c, leaf_size, child, &kids[i], true);
		} else {
			snprintf(child, sizeof child, "%s_%d", name, i);
			subtree(w, f, c, leaf_size, child, &kids[i], true);
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
		link_of(w, up, degraded(w, bw, CONFIG_LINK_LEAF, first / leaf_size, -1, -1), 0, false);
		uplink = up;
		up_dir = true;
	}
	switch_ports(w, name, n, want_gw && !uplink);
	zone_routes(w, name, kids, n, want_gw, uplink, up_dir);
	w->k->zone_close(w->k->ctx);
	snprintf(out->id, sizeof out->id, "%s", name);
	snprintf(out->gw, sizeof out->gw, "%sgw", name);
	free(kids);
}

static bool spec_check(const sgx_spec *s, config_error *err)
{
	const config_platform *p = s->p;
	if (s->nodes < 1 || p->gpus_per_node < 1)
		return config_fail(err, "platform '%s': nothing to generate (%d nodes of %d GPUs)", p->name, s->nodes,
				   p->gpus_per_node);
	if (p->inter.nics_per_node < 1 && (s->nodes > 1 || s->wrap))
		return config_fail(err, "platform '%s': %d nodes but no NIC to join them", p->name, s->nodes);
	if (sgx_has_leaves(p, s->system_nodes) && s->nodes % p->inter.nodes_per_leaf != 0)
		return config_fail(err, "internal: %d generated nodes are not whole leaves of %d", s->nodes,
				   p->inter.nodes_per_leaf);
	return true;
}

bool sgx_platform_emit(const sgx_spec *s, const sgx_sink *k, config_error *err)
{
	if (!spec_check(s, err))
		return false;
	const config_platform *p = s->p;
	bool leaves = sgx_has_leaves(p, s->system_nodes);
	writer w = {.k = k,
		    .p = p,
		    .gpn = p->gpus_per_node,
		    .nics = p->inter.nics_per_node > 0 ? p->inter.nics_per_node : 1,
		    .pcie = p->intra.fabric == CONFIG_FABRIC_PCIE,
		    .mesh = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH,
		    .gateways = s->nodes > 1 || s->wrap,
		    .whatif = s->whatif};
	int leaf_size = leaves ? p->inter.nodes_per_leaf : 0;
	item top;
	if (!s->wrap) {
		subtree(&w, 0, s->nodes, leaf_size, "spsim", &top, false);
	} else {
		/* root: the period's zones and the wrap zone, joined by the spine switch */
		k->zone_open(k->ctx, "spsim", false);
		item kids[2];
		/* a period of exactly one leaf is that leaf (the ghosts' routes name leaf0up) */
		subtree(&w, 0, s->nodes, leaf_size, leaf_size == s->nodes ? "leaf0" : "period", &kids[0], true);
		wrap_zone(&w, leaves);
		snprintf(kids[1].id, sizeof kids[1].id, "wrap");
		snprintf(kids[1].gw, sizeof kids[1].gw, "wrapgw");
		switch_ports(&w, "spsim", 2, false);
		zone_routes(&w, "spsim", kids, 2, false, NULL, false);
		k->zone_close(k->ctx);
	}
	if (w.oom)
		return config_fail(err, "out of memory generating the SimGrid platform");
	return true;
}

/* ------------------------------------------------------------------- XML --- */

typedef struct xml_out {
	FILE *f;
	int depth;
	double bytes; /* written so far */
} xml_out;

static void xp(xml_out *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void xp(xml_out *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(x->f, fmt, ap);
	va_end(ap);
	if (n > 0)
		x->bytes += n;
}

static void xml_indent(xml_out *x) { xp(x, "%*s", x->depth, ""); }

static void xml_zone_open(void *ctx, const char *id, bool empty)
{
	xml_out *x = ctx;
	xml_indent(x);
	xp(x, "<zone id=\"%s\" routing=\"%s\">\n", id, empty ? "None" : "Full");
	x->depth++;
}

static void xml_zone_close(void *ctx)
{
	xml_out *x = ctx;
	x->depth--;
	xml_indent(x);
	xp(x, "</zone>\n");
}

static void xml_host(void *ctx, const char *id, double speed)
{
	xml_out *x = ctx;
	xml_indent(x);
	xp(x, "<host id=\"%s\" speed=\"%.17gf\"/>\n", id, speed);
}

static void xml_router(void *ctx, const char *id)
{
	xml_out *x = ctx;
	xml_indent(x);
	xp(x, "<router id=\"%s\"/>\n", id);
}

static void xml_link(void *ctx, const char *id, double bw, double lat, bool fatpipe)
{
	xml_out *x = ctx;
	xml_indent(x);
	xp(x, "<link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"%s\"/>\n", id, bw, lat,
		fatpipe ? "FATPIPE" : "SPLITDUPLEX");
}

static void xml_route(void *ctx, const char *src, const char *dst, const char *gw_src, const char *gw_dst,
		      const sgx_hop *h, int n, bool symmetrical)
{
	xml_out *x = ctx;
	xml_indent(x);
	if (gw_src)
		xp(x, "<zoneRoute src=\"%s\" dst=\"%s\" gw_src=\"%s\" gw_dst=\"%s\"%s>", src, dst, gw_src, gw_dst,
			symmetrical ? "" : " symmetrical=\"NO\"");
	else
		xp(x, "<route src=\"%s\" dst=\"%s\"%s>", src, dst, symmetrical ? "" : " symmetrical=\"NO\"");
	for (int i = 0; i < n; i++)
		xp(x, "<link_ctn id=\"%s\"%s/>", h[i].link,
			h[i].dir == UP ? " direction=\"UP\"" : h[i].dir == DOWN ? " direction=\"DOWN\"" : "");
	xp(x, "</%s>\n", gw_src ? "zoneRoute" : "route");
}

bool sgx_platform_write(const sgx_spec *s, FILE *out, double *bytes, config_error *err)
{
	const config_platform *p = s->p;
	if (bytes)
		*bytes = 0;
	if (!spec_check(s, err))
		return false;
	xml_out x = {.f = out, .depth = 0};
	/* The name comes from a user file: keep only characters that cannot end a comment. */
	char name[CONFIG_NAME_MAX];
	size_t k = 0;
	for (const char *c = p->name; *c && k + 1 < sizeof name; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		    *c == '_' || (*c == '-' && k > 0 && name[k - 1] != '-'))
			name[k++] = *c;
	name[k] = '\0';
	xp(&x, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
	xp(&x, "<!-- spsim platform %s: %d node%s x %d GPUs, %s, %d NIC%s per node, %s", name, s->nodes,
		s->nodes == 1 ? "" : "s", p->gpus_per_node, config_fabric_names[p->intra.fabric],
		p->inter.nics_per_node, p->inter.nics_per_node == 1 ? "" : "s", config_topology_names[p->inter.topology]);
	if (p->inter.topology == CONFIG_TOPO_FAT_TREE)
		xp(&x, " (%d nodes per leaf, oversubscription %g)", p->inter.nodes_per_leaf,
			p->inter.oversubscription);
	if (s->wrap)
		xp(&x, "; first period of a %d-node system, ghosts stand for the next period", s->system_nodes);
	/* no "--" inside a comment (XML 1.0 section 2.5): the --cfg options are named bare */
	xp(&x, ".\n     Bandwidths are effective (x efficiency). Network model (SimGrid cfg): network/model:CM02\n"
		     "     network/crosstraffic:0 network/TCP-gamma:0 (pure alpha-beta, max-min). -->\n");
	xp(&x, "<platform version=\"4.1\">\n");
	sgx_sink sink = {.ctx = &x,
			 .zone_open = xml_zone_open,
			 .zone_close = xml_zone_close,
			 .host = xml_host,
			 .router = xml_router,
			 .link = xml_link,
			 .route = xml_route};
	if (!sgx_platform_emit(s, &sink, err))
		return false;
	xp(&x, "</platform>\n");
	if (ferror(out))
		return config_fail(err, "cannot write the SimGrid platform (disk full?)");
	if (bytes)
		*bytes = x.bytes;
	return true;
}

bool engine_simgrid_platform_xml(const config_platform *p, FILE *out, config_error *err)
{
	sgx_spec s = {.p = p, .nodes = p->nodes, .system_nodes = p->nodes, .wrap = false};
	return sgx_platform_write(&s, out, NULL, err);
}
