/* Costs of collectives, topology-aware (docs/model.md "Collectives"). Two layers:
 *   - link physics (this file): which links a collective's bytes cross, how many flows
 *     share each, so the time the bytes take on the busiest one;
 *   - NCCL's own model (engine/nccl.c): the algorithm and protocol NCCL's tuner picks,
 *     its latency, the protocol's and the channels' share of the wire, the launch, the
 *     p2p path of all-to-all and send/recv, the one-rank group.
 * A collective costs launch + latency + physics x scale; the SimGrid engine applies the
 * same terms to its flows (engine/simgrid/collectives.c).
 *
 * All bandwidths are effective ones (link bandwidth x the platform's efficiency for that
 * link class, config_platform_*_bw), so calibration moves both engines the same way. */
#include <math.h>

#include "engine/engine.h"
#include "engine/nccl.h"
#include "util/intmath.h"

/* Contiguous groups of P ranks over W ranks, leaves of R ranks: the largest sum over a
 * leaf of x·(P − x), x a group's ranks inside the leaf. The pattern repeats every
 * lcm(P, R) ranks, so one period of leaves is enough. */
static double leaf_pairs_of(long W, long P, long R)
{
	long period = P / util_gcd(P, R) * R;
	if (period > W)
		period = W;
	double worst = 0;
	for (long lo = 0; lo < period; lo += R) {
		long hi = lo + R < W ? lo + R : W;
		double sum = 0;
		for (long g = lo / P; g * P < hi; g++) {
			long a = g * P > lo ? g * P : lo, b = (g + 1) * P < hi ? (g + 1) * P : hi;
			long x = b - a;
			sum += (double)x * (double)(P - x);
		}
		if (sum > worst)
			worst = sum;
	}
	return worst;
}

engine_group_shape engine_group_shape_of(const config_platform *p, const workload_layout *l, workload_group_kind g)
{
	int G = p->gpus_per_node;
	int P = g == WL_GROUP_SP ? l->group_size : l->world;
	engine_group_shape s = {.size = P};
	/* Contiguous placement: a group of P <= G ranks aligned to P stays in one node;
	 * a larger group spans P / G whole nodes. */
	if (P <= G)
		s.per_node = P;
	else
		s.per_node = G;
	/* The slowest group straddles a node boundary: its ranks on the smaller side talk to
	 * the rest over the network. */
	if (g == WL_GROUP_SP && l->straddle_per_node > 0 && l->straddle_per_node < s.per_node)
		s.per_node = l->straddle_per_node;
	else if (p->inter.topology == CONFIG_TOPO_FAT_TREE && p->inter.oversubscription > 1.0 && P > G &&
		 l->world % P == 0)
		s.leaf_pairs = leaf_pairs_of(l->world, P, (long)p->inter.nodes_per_leaf * G);
	int used = l->world < G ? l->world : G;
	s.active_per_node = used;
	return s;
}

engine_group_shape engine_ring_shape_of(const config_platform *p, const workload_layout *l)
{
	/* A ring of R ranks `stride` apart, placed contiguously (workload_ring_per_node) */
	int G = p->gpus_per_node;
	engine_group_shape s = {.size = l->ring, .per_node = workload_ring_per_node(l, G)};
	s.active_per_node = l->world < G ? l->world : G;
	return s;
}

bool engine_op_own_shape(const workload_layout *l, const workload_op *op)
{
	return op->group == WL_GROUP_SP &&
	       ((op->group_size > 0 && op->group_size != l->group_size) || (l->ring > 1 && op->coll == WL_COLL_SENDRECV));
}

engine_group_shape engine_op_shape(const config_platform *p, const workload_layout *l, const workload_op *op)
{
	if (op->group == WL_GROUP_SP && op->coll == WL_COLL_SENDRECV && l->ring > 1)
		return engine_ring_shape_of(p, l);
	if (op->group == WL_GROUP_SP && op->group_size > 0 && op->group_size != l->group_size) {
		workload_layout k = *l;
		k.group_size = op->group_size;
		return engine_group_shape_of(p, &k, op->group);
	}
	return engine_group_shape_of(p, l, op->group);
}

/* Per-GPU intra-node bandwidth available to one rank talking to `peers` local peers at once. */
static double intra_fanout_bw(const config_platform *p, int peers)
{
	if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
		return config_platform_intra_pair_bw(p) * (peers > 0 ? peers : 1); /* one link per peer */
	return config_platform_intra_bw(p);
}

/* Bandwidth of one ring direction through the intra-node fabric. On an NVLink mesh NCCL
 * builds several rings over disjoint links: a complete graph on r GPUs holds floor((r-1)/2)
 * edge-disjoint Hamiltonian cycles (Walecki), each usable in both directions, so rings move
 * 2·floor((r-1)/2) pair bandwidths per GPU (one pair link when r = 2). */
static double intra_ring_bw(const config_platform *p, int r)
{
	if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH) {
		int rings = 2 * ((r - 1) / 2);
		return config_platform_intra_pair_bw(p) * (rings > 0 ? rings : 1);
	}
	return config_platform_intra_bw(p);
}

/* Inter-node bandwidth per sending GPU when `active` GPUs of a node send at once: each GPU
 * is bound to one NIC (GPU i -> NIC i mod nics; an all-to-all cannot aggregate NICs for
 * one GPU: docs/sources.md [NCCL-topo]), so ceil(active / nics) GPUs share a NIC. */
static double nic_share_bw(const config_platform *p, int active)
{
	int per_nic = util_ceil_div(active > 0 ? active : 1, p->inter.nics_per_node);
	return config_platform_nic_bw(p) / per_nic;
}

/* Fat-tree: the rate a node can push off its leaf when its group spans `nodes` nodes and
 * all of them send at once. Leaf uplink = nodes_per_leaf·nics·nic_bw / oversubscription,
 * shared by the leaf's nodes; the fraction of a node's peers beyond its leaf crosses it. */
static double leaf_penalty(const config_platform *p, int nodes)
{
	if (p->inter.topology != CONFIG_TOPO_FAT_TREE || p->inter.oversubscription <= 1.0)
		return 1.0;
	int npl = p->inter.nodes_per_leaf;
	if (nodes <= npl)
		return 1.0;
	double remote_nodes = nodes - 1;
	double beyond = (double)(nodes - npl) / remote_nodes; /* share of inter traffic leaving the leaf */
	/* Time scales by max(1, beyond·oversubscription). */
	double f = beyond * p->inter.oversubscription;
	return f > 1.0 ? f : 1.0;
}

/* Fat-tree leaf uplink capacity per direction: nodes_per_leaf x nics x NIC / oversubscription. */
static double leaf_uplink_bw(const config_platform *p)
{
	return p->inter.nodes_per_leaf * p->inter.nics_per_node * config_platform_nic_bw(p) / p->inter.oversubscription;
}

/* Wire time of a direct all-to-all, intra-node and inter-node parts (no latency). */
static void alltoall_direct_bw(const config_platform *p, engine_group_shape s, double bytes, double *t_intra,
			       double *t_inter)
{
	int P = s.size, r = s.per_node;
	double c = bytes / P; /* to each peer */
	int local = r - 1, remote = P - r;
	*t_intra = *t_inter = 0;
	if (local > 0)
		*t_intra = local * c / intra_fanout_bw(p, local);
	if (remote > 0) {
		if (s.leaf_pairs > 0) /* every pair across a leaf boundary shares that leaf's uplink */
			*t_inter = fmax(remote * c / nic_share_bw(p, s.active_per_node),
					s.leaf_pairs * c / leaf_uplink_bw(p));
		else
			*t_inter = remote * c / nic_share_bw(p, s.active_per_node) * leaf_penalty(p, P / r);
		if (p->intra.fabric == CONFIG_FABRIC_PCIE) /* NIC traffic also crosses the GPU's PCIe link */
			*t_intra = (local + remote) * c / config_platform_intra_bw(p);
	}
}

/* The latency a direct all-to-all's flows pay: the farthest peer's link. */
static double alltoall_alpha(const config_platform *p, engine_group_shape s)
{
	return s.size > s.per_node ? p->inter.latency : p->intra.latency;
}

/* scale: NCCL's p2p wire multipliers per link class (1 for spsim's own compositions). */
static double alltoall_direct(const config_platform *p, engine_group_shape s, double bytes, const double *scale)
{
	double ti, te;
	alltoall_direct_bw(p, s, bytes, &ti, &te);
	return alltoall_alpha(p, s) + fmax(ti * scale[0], te * scale[1]);
}

/* Pairwise all-to-all: P - 1 rounds; round k sends bytes/P to i + k and receives from
 * i - k, and a rank leaves it when both are done. Each round is timed by its busiest
 * NIC: the group's ranks lie r per node in order, so on node 0 (every node alike) the
 * ranks j < r whose peer of round k is off-node go out (in) through the NICs, as many
 * times over as groups run side by side. With 2 nodes of 8 and a NIC per GPU every one of
 * the 15 rounds has a remote send or receive (rank 0 receives across in rounds 1-8 and
 * sends across in 8-15), so the exchange takes 15 NIC transfers, not the 8 of its remote
 * peers; with 4 GPUs per NIC, round k's 1, 2, 3, 4, 3, 2, 1 flows add to the NIC's bytes. */
static double alltoall_pairwise(const config_platform *p, engine_group_shape s, double bytes)
{
	int P = s.size, r = s.per_node < P ? s.per_node : P;
	double c = bytes / P;
	double t_intra = p->intra.latency + c / intra_fanout_bw(p, 1);
	if (r >= P || r < 1)
		return (P - 1) * t_intra;
	int groups = s.active_per_node / r > 1 ? s.active_per_node / r : 1;
	double leaf = leaf_penalty(p, P / r), t = 0;
	for (int k = 1; k < P; k++) {
		int out = 0, in = 0;
		for (int j = 0; j < r; j++) {
			out += (j + k) % P >= r;
			in += (j - k + P) % P >= r;
		}
		int flows = (out > in ? out : in) * groups;
		double t_remote = flows ? p->inter.latency + c / nic_share_bw(p, flows) * leaf : 0.0;
		t += fmax(t_remote, t_intra);
	}
	return t;
}

/* One ring step's wire time: the chunk crosses every hop at once; the slowest hop sets
 * the pace. */
/* scale: NCCL's wire multipliers per link class, [0] on the NVLink legs and [1] on the
 * network ones (the SimGrid engine's flows take them the same way). */
static double ring_step_scaled(const config_platform *p, engine_group_shape s, double chunk, const double *scale)
{
	int P = s.size, r = s.per_node;
	if (P <= r)
		return scale[0] * chunk / intra_ring_bw(p, r);
	/* Each group's ring crosses every node boundary; NCCL runs one channel per NIC
	 * (C = nics), each leaving the node from a different GPU, so a node's NICs carry one
	 * chunk per group with ranks on it. Inside the node a GPU forwards the chunk/C of
	 * every channel it does not send out of the node: with C >= r every GPU is the exit
	 * of floor(C/r) channels, with C < r some GPU of none. */
	int groups_per_node = s.active_per_node / r;
	if (groups_per_node < 1)
		groups_per_node = 1;
	int C = p->inter.nics_per_node;
	double t_nic = chunk * groups_per_node / (config_platform_nic_bw(p) * C) * leaf_penalty(p, P / r);
	double t_intra = chunk * (C - C / r) / ((double)C * intra_ring_bw(p, r));
	return fmax(t_nic * scale[1], t_intra * scale[0]);
}

static double ring_step_bw(const config_platform *p, engine_group_shape s, double chunk)
{
	static const double unit[2] = {1.0, 1.0};
	return ring_step_scaled(p, s, chunk, unit);
}

static double ring_step(const config_platform *p, engine_group_shape s, double chunk)
{
	return (s.size <= s.per_node ? p->intra.latency : p->inter.latency) + ring_step_bw(p, s, chunk);
}

double engine_ring_busbw(const config_platform *p, engine_group_shape s)
{
	return 1.0 / ring_step_bw(p, s, 1.0);
}

static int ring_steps(workload_coll c, int P) { return c == WL_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1; }

static double ring(const config_platform *p, workload_coll c, engine_group_shape s, double bytes)
{
	int P = s.size;
	return ring_steps(c, P) * ring_step(p, s, bytes / P);
}

/* Intra-node ring phase, inter-node ring over one rank per node (one ring per local rank,
 * each on its own NIC share), intra-node ring phase. */
static double hierarchical(const config_platform *p, workload_coll c, engine_group_shape s, double bytes)
{
	int P = s.size, r = s.per_node, nodes = P / r;
	if (nodes <= 1 || r <= 1)
		return ring(p, c, s, bytes);
	engine_group_shape intra = {.size = r, .per_node = r, .active_per_node = s.active_per_node};
	engine_group_shape inter = {.size = nodes, .per_node = 1, .active_per_node = s.active_per_node};
	double t_inter_bytes = bytes / r;
	switch (c) {
	case WL_COLL_ALLREDUCE:
		return ring(p, WL_COLL_REDUCESCATTER, intra, bytes) + ring(p, WL_COLL_ALLREDUCE, inter, t_inter_bytes) +
		       ring(p, WL_COLL_ALLGATHER, intra, bytes);
	case WL_COLL_ALLGATHER:
		/* gather across nodes on each local rank's slice, then within the node */
		return ring(p, WL_COLL_ALLGATHER, inter, t_inter_bytes) + ring(p, WL_COLL_ALLGATHER, intra, bytes);
	case WL_COLL_REDUCESCATTER:
		return ring(p, WL_COLL_REDUCESCATTER, intra, bytes) +
		       ring(p, WL_COLL_REDUCESCATTER, inter, t_inter_bytes);
	case WL_COLL_ALLTOALL: {
		/* intra exchange to aggregate per destination node, inter exchange of the
		 * aggregated blocks, intra exchange to deliver */
		static const double one[2] = {1.0, 1.0};
		double t = alltoall_direct(p, intra, bytes, one);
		t += alltoall_direct(p, inter, bytes, one);
		return t + alltoall_direct(p, intra, bytes, one);
	}
	default:
		return ring(p, c, s, bytes);
	}
}

/* Everything but the launch, under NCCL's cost terms k (engine/nccl.h). */
static double collective_time(const config_platform *p, workload_coll c, workload_alg a, engine_group_shape s,
			      double bytes, const nccl_cost *k)
{
	if (s.size <= 1)
		return k->local;
	switch (c) {
	case WL_COLL_ALLTOALL: /* k->latency: NCCL's per-message terms (engine/nccl.c p2p_message_latency) */
		if (a == WL_ALG_PAIRWISE)
			return k->latency + alltoall_pairwise(p, s, bytes);
		if (a == WL_ALG_HIERARCHICAL)
			return k->latency + hierarchical(p, c, s, bytes);
		return k->latency + alltoall_direct(p, s, bytes, k->scale);
	case WL_COLL_ALLGATHER:
	case WL_COLL_REDUCESCATTER:
	case WL_COLL_ALLREDUCE:
		if (a == WL_ALG_HIERARCHICAL)
			return hierarchical(p, c, s, bytes);
		if (k->link_latency) /* no NCCL terms (collectives: links): a latency per step */
			return ring(p, c, s, bytes);
		return k->latency + ring_steps(c, s.size) * ring_step_scaled(p, s, bytes / s.size, k->scale);
	case WL_COLL_SENDRECV: {
		/* one message to the next rank of the group's ring (nccl-tests sendrecv_perf, ring
		 * attention): on one node over the fabric; a ring over several nodes is paced by
		 * its hops between nodes, one per node boundary: a node's NICs carry one flow for
		 * each ring with ranks on it (active_per_node / per_node) */
		if (s.per_node >= 2 && s.size <= s.per_node)
			return k->latency + p->intra.latency + k->scale[0] * bytes / intra_fanout_bw(p, 1);
		return k->latency + p->inter.latency +
		       k->scale[1] * bytes / nic_share_bw(p, s.per_node >= 1 ? s.active_per_node / s.per_node : 1);
	}
	case WL_COLL_BROADCAST:
		/* pipelined ring: NCCL's latency, the payload once at the slowest hop's rate */
		if (a == WL_ALG_RING && !k->link_latency)
			return k->latency + ring_step_scaled(p, s, bytes, k->scale);
		return (s.size - 1) * (s.size > s.per_node ? p->inter.latency : p->intra.latency) +
		       ring_step_bw(p, s, bytes);
	case WL_COLL_COUNT:
		break;
	}
	return 0.0;
}

double engine_collective_time(const config_platform *p, workload_coll c, workload_alg a, engine_group_shape s,
			      double bytes)
{
	if (bytes <= 0)
		return 0.0;
	/* Every call pays NCCL's launch (the platform's collective_overhead), a one-rank
	 * group included. */
	nccl_cost k = nccl_cost_of(p, c, a, s, bytes);
	return k.launch + collective_time(p, c, a, s, bytes, &k);
}

double engine_busbw_factor(workload_coll c, int P)
{
	/* nccl-tests doc/PERFORMANCE.md: busbw = algbw x factor. */
	if (P <= 1)
		return c == WL_COLL_SENDRECV || c == WL_COLL_BROADCAST ? 1.0 : 0.0;
	switch (c) {
	case WL_COLL_ALLREDUCE: return 2.0 * (P - 1) / P;
	case WL_COLL_ALLTOALL:
	case WL_COLL_ALLGATHER:
	case WL_COLL_REDUCESCATTER: return (double)(P - 1) / P;
	default: return 1.0;
	}
}
