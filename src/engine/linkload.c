/* Per-op link demands: how long each shared resource of a rank's class is busy with one
 * collective when it runs alone, and how many flows the collective keeps on it at once.
 * The schedule (schedule.c) shares resources between concurrent ops from these numbers
 * (docs/model.md §5 "Shared capacity").
 *
 * The resources are those the SimGrid platform builds (docs/simgrid.md §2), seen from
 * GPU 0 of node 0; with contiguous placement every rank of a class sees the same loads
 * (a ring's or an all-to-all's traffic is the same on every GPU of a group up to a
 * relabelling), so one representative of each kind is enough:
 *   NIC   the NIC the GPU sends through (GPU i -> NIC i mod nics), shared by the node's
 *         GPUs bound to it;
 *   LEAF  the leaf uplink of an oversubscribed fat-tree;
 *   PORT  the GPU's NVSwitch port or PCIe link (on PCIe also crossed by its NIC traffic);
 *   PAIR  on an NVLink mesh, the link from GPU 0 to local GPU j (one resource per j).
 * Bytes and flows follow the flows the SimGrid engine posts for each algorithm
 * (src/engine/simgrid/collectives.c): all-to-all direct, one flow per peer; pairwise, one
 * peer per round (flows counted by their average over the rounds); rings over min(nics, ranks per node) channels across nodes (each
 * leaving the node from a different GPU), over 2·floor((P-1)/2) channels on a mesh
 * (Walecki's edge-disjoint Hamiltonian cycles, both directions), one channel elsewhere;
 * hierarchical, the sum of its phases. Busy times are bytes over the effective link
 * bandwidth (config_platform_*_bw), so they bound from below what any cost model of the
 * same bytes can claim. */
#include <math.h>
#include <stdlib.h>

#include "engine/analytic.h"
#include "engine/nccl.h"
#include "engine/schedule.h"
#include "util/intmath.h"

/* Adds `bytes` in `flows` concurrent flows on resource res of bandwidth bw (bytes/s): busy
 * bytes / bw, and the flows as a max-min weight per unit of the link's bandwidth,
 * flows x (1 GB/s / bw). Max-min fairness equalises the bandwidth of the flows that share a
 * link, in bytes/s, not their share of each link: an op whose one NIC flow and seven NVLink
 * flows each move 45 GB/s (a ring leaving the node through a 47 GB/s NIC after seven
 * NVSwitch hops) is as far up the fair level on the NVSwitch port as an all-to-all flow of
 * 45 GB/s there, although it holds 96% of the NIC and 12% of the port per flow. With flows
 * counted per GB/s the schedule's weight w_i = min_k f_ik / u_ik (schedule.c) is the op's
 * rate per unit of that absolute per-flow level, the same on every link. */
static void add(engine_op_load *l, int res, double bytes, double bw, double flows)
{
	double busy = bytes / bw;
	if (busy <= 0 || !(busy < INFINITY))
		return;
	flows *= 1e9 / bw;
	for (int k = 0; k < l->n; k++)
		if (l->res[k] == res) {
			l->busy[k] += busy;
			if (flows > l->flows[k])
				l->flows[k] = flows;
			return;
		}
	if (l->n >= ENGINE_LOAD_MAX) /* more links than a load holds: fold into the last */
		return;
	l->res[l->n] = (unsigned char)res;
	l->busy[l->n] = busy;
	l->flows[l->n] = flows;
	l->n++;
}

/* The mesh pair link from GPU 0 to local GPU j (1 <= j < G); pairs past the last
 * resource id share it (meshes that large are not built). */
static int pair_res(int j)
{
	int r = ENGINE_LINK_PAIR0 + j - 1;
	return r < ENGINE_LINK_COUNT ? r : ENGINE_LINK_COUNT - 1;
}

/* Local traffic of `flows` flows to local peer j (mesh: that pair; otherwise the GPU's port). */
static void local_to(const config_platform *p, engine_op_load *l, int j, double bytes, double flows)
{
	if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
		add(l, pair_res(j), bytes, config_platform_intra_pair_bw(p), flows);
	else
		add(l, ENGINE_LINK_PORT, bytes, config_platform_intra_bw(p), flows);
}

/* Fat-tree leaf uplink capacity per direction: nodes_per_leaf x nics x NIC / oversubscription. */
static double leaf_uplink_bw(const config_platform *p)
{
	return p->inter.nodes_per_leaf * p->inter.nics_per_node * config_platform_nic_bw(p) / p->inter.oversubscription;
}

/* Network traffic: the NIC's bytes (all GPUs bound to it) with its flows; the leaf uplink
 * the share of them that leaves the leaf when the group spans more nodes than a leaf
 * holds; on PCIe the GPU's own share crosses its PCIe link too. */
static void remote(const config_platform *p, engine_op_load *l, engine_group_shape s, double nic_bytes,
		   double nic_flows, double gpu_bytes, double gpu_flows)
{
	add(l, ENGINE_LINK_NIC, nic_bytes, config_platform_nic_bw(p), nic_flows);
	if (p->intra.fabric == CONFIG_FABRIC_PCIE)
		add(l, ENGINE_LINK_PORT, gpu_bytes, config_platform_intra_bw(p), gpu_flows);
	int nodes = s.per_node > 0 ? s.size / s.per_node : 1, npl = p->inter.nodes_per_leaf;
	if (p->inter.topology != CONFIG_TOPO_FAT_TREE || p->inter.oversubscription <= 1.0 || npl <= 0)
		return;
	double leaf_flows = nic_flows * npl * p->inter.nics_per_node;
	if (s.leaf_pairs > 0) /* exact: every crossing pair of every group at once (collectives.c) */
		add(l, ENGINE_LINK_LEAF, s.leaf_pairs * gpu_bytes / fmax(1.0, s.size - s.per_node), leaf_uplink_bw(p),
		    leaf_flows);
	else if (nodes > npl) /* the share of a node's inter-node bytes that leaves its leaf */
		add(l, ENGINE_LINK_LEAF,
		    nic_bytes * p->inter.nics_per_node * npl * ((double)(nodes - npl) / (nodes - 1)), leaf_uplink_bw(p),
		    leaf_flows);
}

/* GPUs of a node bound to one NIC when `active` send at once. */
static int per_nic(const config_platform *p, int active)
{
	return util_ceil_div(active > 0 ? active : 1, p->inter.nics_per_node);
}

/* All-to-all exchanging bytes/P with every peer: direct keeps a flow to every peer at once;
 * pairwise one peer per round over P - 1 rounds, so its flows count by their average. */
static void alltoall(const config_platform *p, engine_op_load *l, engine_group_shape s, double bytes, bool one_at_a_time)
{
	int P = s.size, r = s.per_node > 0 ? s.per_node : 1;
	if (r > P)
		r = P;
	double c = bytes / P;
	int local = r - 1, remote_peers = P - r;
	/* flows each local peer keeps: 1 at once, or 1/(P - 1) on average one round at a time */
	double per_peer = one_at_a_time ? 1.0 / (P - 1) : 1;
	if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
		for (int j = 1; j <= local; j++)
			local_to(p, l, j, c, per_peer);
	else if (local > 0 && p->intra.fabric != CONFIG_FABRIC_PCIE)
		local_to(p, l, 1, local * c, local * per_peer);
	else if (local > 0) /* PCIe: the port carries local and remote flows (added by remote()) */
		add(l, ENGINE_LINK_PORT, local * c, config_platform_intra_bw(p), local * per_peer);
	if (remote_peers > 0) {
		/* Pairwise: one peer per round, remote in (P - r) of the P - 1 rounds, so a NIC
		 * carries k·(P - r)/(P - 1) flows on average over the exchange. */
		int k = per_nic(p, s.active_per_node);
		double f = one_at_a_time ? (double)remote_peers / (P - 1) : remote_peers;
		remote(p, l, s, k * remote_peers * c, k * f, remote_peers * c, f);
	}
}

/* A ring whose every edge carries `edge_bytes` (steps x chunk) in total. */
static void ring(const config_platform *p, engine_op_load *l, engine_group_shape s, double edge_bytes)
{
	s.leaf_pairs = 0; /* the exact leaf count is the all-to-all's; rings average */
	int P = s.size, r = s.per_node > 0 ? s.per_node : 1;
	if (r >= P) {
		if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH && P >= 3) {
			/* C = 2·floor((P-1)/2) channels of edge_bytes / C; GPU 0 sends on two pair
			 * links per cycle (one per direction) */
			int C = 2 * ((P - 1) / 2);
			for (int j = 1; j <= C; j++)
				local_to(p, l, j, edge_bytes / C, 1);
		} else {
			local_to(p, l, 1, edge_bytes, 1);
		}
		return;
	}
	/* Across nodes: C = min(nics, r) channels of edge_bytes / C, each leaving the node
	 * from a different GPU; a GPU forwards over NVLink every channel it is not the exit
	 * of (the busiest: all C when C < r, C - 1 when every GPU is an exit): a channel enters
	 * through one NIC, visits every GPU of the node and leaves through another (NVIDIA/nccl
	 * issue #915, src/graph/search.cc ncclTopoGetNetDev; docs/sources.md [NCCL-ring]). The
	 * NIC path itself does not cross the NVSwitch port (GPU -> PCIe -> NIC: [DGX-H100-UG]). */
	int nics = p->inter.nics_per_node;
	int C = nics < r ? nics : r;
	if (C < 1)
		C = 1;
	int groups = s.active_per_node / r;
	if (groups < 1)
		groups = 1;
	int crossings = util_ceil_div(groups * C, nics); /* channel exits per NIC */
	double per = edge_bytes / C;
	int fwd = C < r ? C : C - 1;
	if (p->intra.fabric == CONFIG_FABRIC_PCIE) {
		/* the GPU's PCIe link carries its forwarding and its exits to the NIC */
		remote(p, l, s, crossings * per, crossings, C * per, C);
	} else {
		if (fwd > 0)
			local_to(p, l, 1, fwd * per, fwd);
		remote(p, l, s, crossings * per, crossings, 0, 0);
	}
}

static int ring_steps(workload_coll c, int P) { return c == WL_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1; }

static void collective(const config_platform *p, engine_op_load *l, workload_coll c, workload_alg a,
		       engine_group_shape s, double bytes)
{
	int P = s.size, r = s.per_node > 0 ? s.per_node : 1;
	if (P <= 1 || bytes <= 0)
		return;
	if (a == WL_ALG_HIERARCHICAL && P > r && r > 1 &&
	    (c == WL_COLL_ALLTOALL || c == WL_COLL_ALLGATHER || c == WL_COLL_REDUCESCATTER || c == WL_COLL_ALLREDUCE)) {
		engine_group_shape intra = {.size = r, .per_node = r, .active_per_node = s.active_per_node};
		engine_group_shape inter = {.size = P / r, .per_node = 1, .active_per_node = s.active_per_node};
		if (c == WL_COLL_ALLTOALL) {
			alltoall(p, l, intra, 2 * bytes, false);
			alltoall(p, l, inter, bytes, false);
			return;
		}
		workload_coll first = c == WL_COLL_ALLGATHER ? WL_COLL_ALLGATHER : WL_COLL_REDUCESCATTER;
		if (c != WL_COLL_ALLGATHER)
			collective(p, l, first, WL_ALG_RING, intra, bytes);
		collective(p, l, c, WL_ALG_RING, inter, bytes / r);
		if (c != WL_COLL_REDUCESCATTER)
			collective(p, l, WL_COLL_ALLGATHER, WL_ALG_RING, intra, bytes);
		return;
	}
	switch (c) {
	case WL_COLL_ALLTOALL: alltoall(p, l, s, bytes, a == WL_ALG_PAIRWISE); return;
	case WL_COLL_SENDRECV: {
		/* One message to the next rank of the group's ring (ring attention). Every GPU
		 * sends one; a ring over several nodes leaves each node once, from the last of its
		 * ranks there, so a node's NICs carry one exit per ring with ranks on the node
		 * (active_per_node / per_node), the others send over the fabric. The op waits for
		 * its slowest hop, so both loads are the op's (collectives.c times it by the NIC's
		 * share, as here); no GPU sends both, so on PCIe the port carries one message. */
		if (r >= 2)
			local_to(p, l, 1, bytes, 1);
		if (P > r) {
			int k = per_nic(p, s.active_per_node / r);
			remote(p, l, s, k * bytes, k, r >= 2 ? 0 : bytes, r >= 2 ? 0 : 1);
		}
		return;
	}
	case WL_COLL_BROADCAST: ring(p, l, s, bytes); return; /* pipelined: every hop carries the message once */
	default: ring(p, l, s, ring_steps(c, P) * bytes / P); return;
	}
}

void engine_op_load_of(const config_platform *p, engine_group_shape s, const workload_op *op, engine_op_load *out)
{
	out->n = 0;
	if (op->kind != WL_OP_COMM)
		return;
	/* Buckets: `chunks` calls of bytes/chunks each move the op's bytes in total. */
	collective(p, out, op->coll, op->alg, s, op->bytes);
	/* An all-reduce over two nodes that NCCL runs as a tree (or NVLS-tree) sends the
	 * buffer over the network once per direction, where a ring sends it 2(P-1)/P times
	 * (tuning.cc ncclTopoTuneModel: on two nodes each node roots one of the two trees and
	 * is a leaf of the other; nccl.c rates those trees the same way). The in-node chain
	 * moves about what the ring's in-node hops do, so only the network's busy time
	 * shrinks, by P / (2(P-1)). */
	int per_node = s.per_node > 0 ? s.per_node : 1;
	if (op->coll == WL_COLL_ALLREDUCE && op->alg == WL_ALG_RING && s.size > per_node && s.size == 2 * per_node) {
		nccl_cost c = nccl_cost_of(p, op->coll, op->alg, s, op->bytes / (op->chunks > 1 ? op->chunks : 1));
		if (c.algo == NCCL_ALGO_TREE || c.algo == NCCL_ALGO_NVLS)
			for (int k = 0; k < out->n; k++)
				if (out->res[k] == ENGINE_LINK_NIC || out->res[k] == ENGINE_LINK_LEAF)
					out->busy[k] *= (double)s.size / (2.0 * (s.size - 1));
	}
}

bool engine_analytic_loads(const config_platform *p, const workload_plan *plan, engine_op_load ***out,
			   config_error *err)
{
	const workload_program *prog = &plan->program;
	int nb = prog->n_micro + prog->n_step;
	size_t nops = 0;
	for (int b = 0; b < nb; b++)
		nops += (size_t)(b < prog->n_micro ? prog->micro[b].n_ops : prog->step[b - prog->n_micro].n_ops);
	engine_op_load **ld = malloc((size_t)nb * sizeof *ld + (nops + 1) * sizeof **ld);
	if (!ld)
		return config_fail(err, "out of memory");
	engine_op_load *row = (engine_op_load *)(ld + nb);
	const workload_layout *l = &plan->layout;
	engine_group_shape sp = engine_group_shape_of(p, l, WL_GROUP_SP), world = engine_group_shape_of(p, l, WL_GROUP_WORLD);
	/* A plan repeats the same few collectives: the load of one on the SP or world shape is
	 * a function of its collective, algorithm and bytes, memoised per plan. */
	enum { MEMO = 32 };
	struct load_memo {
		bool world;
		workload_coll coll;
		workload_alg alg;
		double bytes;
		const engine_op_load *load;
	} memo[MEMO];
	int n_memo = 0;
	for (int b = 0; b < nb; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		ld[b] = row;
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			bool w = op->group == WL_GROUP_WORLD;
			if (engine_op_own_shape(l, op)) {
				engine_op_load_of(p, engine_op_shape(p, l, op), op, &row[j]);
				continue;
			}
			if (op->kind != WL_OP_COMM) {
				row[j].n = 0;
				continue;
			}
			int i = 0;
			while (i < n_memo && !(memo[i].world == w && memo[i].coll == op->coll && memo[i].alg == op->alg &&
					       memo[i].bytes == op->bytes))
				i++;
			if (i < n_memo) {
				row[j] = *memo[i].load;
				continue;
			}
			engine_op_load_of(p, w ? world : sp, op, &row[j]);
			if (n_memo < MEMO)
				memo[n_memo++] = (struct load_memo){.world = w, .coll = op->coll, .alg = op->alg,
								   .bytes = op->bytes, .load = &row[j]};
		}
		row += blk->n_ops;
	}
	*out = ld;
	return true;
}
