/* NCCL's cost model (engine/nccl.h; derivation in docs/model.md "Collectives").
 *
 * Constants are NCCL's, from src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime;
 * NCCL 2.19, github.com/NVIDIA/nccl commit b6475625), src/graph/topo.h (per-link NVLink
 * bandwidth per generation), src/init.cc (computeBuffSizes: p2p chunk sizes) and
 * src/enqueue.cc (scheduleP2pTasksToPlan: channels per p2p message, LL threshold). */
#include "engine/nccl.h"
#include "util/intmath.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { HW_NVLINK, HW_PCI, HW_NET };

/* tuning.cc baseLat (us), rows tree, ring, NVLS; columns LL, LL128, Simple. */
static const double base_lat[3][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}};
/* tuning.cc hwLat (us) per link class: NVLink, PCI, network. */
static const double hw_lat[3][3][3] = {
	{{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 23}},
	{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 0}},
	{{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}},
};
/* tuning.cc per-generation caps (GB/s); rows Volta, Ampere, Hopper; columns 1, 2, > 2 nodes.
 * llMaxBws rows are GPU generations on one node and CPU vendors across nodes (Intel
 * assumed: row 0). */
static const double ll_max_bw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
static const double per_ch_ring_ll128[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
static const double per_ch_tree_ll128[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
static const double per_ch_tree[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
/* tuning.cc treeCorrectionFactor: powers of two from 64 B to 256 MB. */
static const double tree_correction[3][23] = {
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};
/* tuning.cc getNetOverhead: 1 us per network post on x86 Intel (x3 for Simple). */
static const double net_overhead_us = 1.0;
/* enqueue.cc: NCCL_P2P_LL_THRESHOLD, p2p messages up to 16 KiB use LL. */
static const double p2p_ll_threshold = 16384;
/* init.cc computeBuffSizes: NCCL_P2P_NVL_CHUNKSIZE 512 KiB, NCCL_P2P_NET_CHUNKSIZE 128 KiB
 * (comm->p2pChunkSize: the network one for every peer of a communicator on more than one
 * node, "if (comm->nNodes > 1) comm->p2pChunkSize = ncclParamP2pNetChunkSize()"). */
static const double p2p_nvl_chunk = 524288;
static const double p2p_net_chunk = 131072;
/* NCCL_NVLS_NCHANNELS default: NVLS runs 16 channels (src/transport/nvls.cc), each at
 * most one NVLink's bandwidth (the NVLS graph's bwIntra). */
static const int nvls_channels = 16;
/* tuning.cc hwLat[NET][NVLS_TREE][Simple]: 14 us per network hop of NVLS-tree (the
 * NVLS row of hw_lat holds NVLS's own 18). */
static const double nvls_tree_net_lat_us = 14.0;
/* The same tables in NCCL 2.28.3 (github.com/NVIDIA/nccl, tag v2.28.3, src/graph/tuning.cc:
 * ncclTunerConstantsDefaults, nvlsEfficiency, ncclTopoTuneModel), where they differ from
 * 2.19's: tree/Simple baseLat 8.4 us (2.19: 0) and hwLat 4.0 on NVLink and PCI, 14 on
 * the network (2.19: 28 on all three),
 * NVLS hwLat on NVLink 25 (2.19: 23, the NVLS-tree row holds the same 25), llMaxBws'
 * Hopper one-node entry 141 GB/s (2.19: 87.7; the multi-node entries are the CPU rows,
 * unchanged for Intel). */
static const double base_lat_2_28[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}};
static const double hw_lat_2_28[3][3][3] = {
	{{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}},
	{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}},
	{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}},
};
static const double ll_max_bw_2_28[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
/* 2.28.3 tuning.cc: nvlsEfficiency (Hopper 0.85) and perChMaxNVLSTreeBws (GB/s; rows
 * Volta, Ampere, Hopper; columns 1, 2, > 2 nodes). */
static const double nvls_efficiency_2_28 = 0.85;
static const double per_ch_nvls_tree_2_28[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}};
/* NCCL_MAX_P2P_NCHANNELS default (MAXCHANNELS, src/include/device.h). */
static const int p2p_max_channels = 32;

static const char *const algo_names[NCCL_ALGO_COUNT] = {"tree", "ring", "nvls", "p2p"};
static const char *const proto_names[NCCL_PROTO_COUNT] = {"LL", "LL128", "Simple"};

const char *nccl_algo_name(nccl_algo a) { return a < NCCL_ALGO_COUNT ? algo_names[a] : "?"; }
const char *nccl_proto_name(nccl_proto p) { return p < NCCL_PROTO_COUNT ? proto_names[p] : "?"; }

bool nccl_algo_from_name(const char *name, nccl_algo *out)
{
	for (int a = 0; a < NCCL_ALGO_COUNT; a++)
		if (strcasecmp(name, algo_names[a]) == 0) {
			*out = (nccl_algo)a;
			return true;
		}
	return false;
}

bool nccl_proto_from_name(const char *name, nccl_proto *out)
{
	for (int p = 0; p < NCCL_PROTO_COUNT; p++)
		if (strcasecmp(name, proto_names[p]) == 0) {
			*out = (nccl_proto)p;
			return true;
		}
	return false;
}

static int cc_of(const config_platform *p) { return p->nccl.compute_capability ? p->nccl.compute_capability : 80; }

static int cc_index(int cc) { return cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

/* ncclTopoNVLinkBw (src/graph/topo.h): NCCL's bandwidth of one NVLink, GB/s:
 * SM70_NVLINK_BW 20, SM80_NVLINK_BW 20, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1. */
static double nvlink_bw(int cc) { return (cc >= 100 ? 40.1 : cc >= 90 ? 20.6 : 20.0) * 1e9; }

/* NCCL's own view of the links (config_platform.nccl.tuner): the platform's values before
 * any calibration. NCCL's topology detection and tuner see the hardware, not spsim's
 * calibration, so the channel count, the p2p channels per peer and the algorithm and
 * protocol choice are made on these. */
static const config_platform *tuner_platform(const config_platform *p, config_platform *buf)
{
	bool cal = p->nccl.tuner.set;
	for (int k = 0; k < 2 && !cal; k++)
		for (int i = 0; i < CONFIG_CAL_ENTRIES; i++)
			cal |= p->nccl.proto_cal[k][i].latency > 0 || p->nccl.proto_cal[k][i].bandwidth > 0;
	if (!cal)
		return p;
	*buf = *p;
	memset(buf->nccl.proto_cal, 0, sizeof buf->nccl.proto_cal);
	if (p->nccl.tuner.set && !p->nccl.tuner_follows) {
		buf->intra.bandwidth = p->nccl.tuner.intra_bw;
		buf->intra.pair_bandwidth = p->nccl.tuner.pair_bw;
		buf->intra.latency = p->nccl.tuner.intra_lat;
		buf->eff.intra_link = p->nccl.tuner.eff_intra;
		buf->inter.nic_bandwidth = p->nccl.tuner.nic_bw;
		buf->inter.latency = p->nccl.tuner.inter_lat;
		buf->eff.inter_link = p->nccl.tuner.eff_inter;
		buf->nccl.tuner.set = false;
	}
	return buf;
}

/* NCCL's view of one GPU's pair link and of its whole link, bytes/s (see tuner_platform). */
static bool tuner_snapshot(const config_platform *p) { return p->nccl.tuner.set && !p->nccl.tuner_follows; }

static double tuner_pair_bw(const config_platform *p)
{
	return tuner_snapshot(p) ? p->nccl.tuner.pair_bw * p->nccl.tuner.eff_intra : config_platform_intra_pair_bw(p);
}

static double tuner_intra_bw(const config_platform *p)
{
	return tuner_snapshot(p) ? p->nccl.tuner.intra_bw * p->nccl.tuner.eff_intra : config_platform_intra_bw(p);
}

/* One node's ring bandwidth per GPU through the fabric (all its GPUs on the ring), as
 * NCCL's graph search sees it. */
static double node_ring_bw(const config_platform *p)
{
	if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH) {
		int rings = 2 * ((p->gpus_per_node - 1) / 2);
		return tuner_pair_bw(p) * (rings > 0 ? rings : 1);
	}
	return tuner_intra_bw(p);
}

/* NCCL's ring search (src/graph/search.cc ncclTopoCompute) fills the GPU's NVLinks with
 * channels of one link's bandwidth each, so channels = ring bandwidth / per-link bandwidth;
 * over PCIe it finds 2. */
int nccl_channels(const config_platform *p)
{
	if (p->nccl.channels > 0)
		return p->nccl.channels;
	if (p->intra.fabric == CONFIG_FABRIC_PCIE)
		return 2;
	long c = lround(node_ring_bw(p) / nvlink_bw(cc_of(p)));
	return c < 2 ? 2 : c > 32 ? 32 : (int)c;
}

static int log2i(double n)
{
	if (!(n < 1.8e19)) /* beyond 64 bits (and NaN): no conversion overflow */
		return 64;
	int l = -1;
	for (unsigned long long v = (unsigned long long)n; v; v >>= 1)
		l++;
	return l;
}

static bool ring_family(workload_coll c)
{
	return c == WL_COLL_ALLREDUCE || c == WL_COLL_ALLGATHER || c == WL_COLL_REDUCESCATTER ||
	       c == WL_COLL_BROADCAST;
}

/* The pairs ncclTopoTuneModel fills for a collective on p. */
static bool pair_enabled(const config_platform *p, workload_coll c, int nodes, nccl_algo a, nccl_proto pr)
{
	int cc = cc_of(p);
	switch (a) {
	case NCCL_ALGO_TREE:
		if (c != WL_COLL_ALLREDUCE)
			return false;
		break;
	case NCCL_ALGO_RING: break;
	case NCCL_ALGO_NVLS:
		/* Simple only; all-reduce, all-gather, reduce-scatter on one node; across nodes
		 * NCCL runs NVLS-tree (NVLS in the node, a tree between nodes), all-reduce only,
		 * since NVLS itself needs CollNet there, which spsim's platforms never declare */
		if (!p->nccl.nvls || pr != NCCL_PROTO_SIMPLE || c == WL_COLL_BROADCAST ||
		    (nodes > 1 && c != WL_COLL_ALLREDUCE))
			return false;
		break;
	default: return false;
	}
	/* LL128 only where NCCL enables it by default: one GPU generation among 70/80/90
	 * with NVLink inside the node */
	if (pr == NCCL_PROTO_LL128 && (p->intra.fabric == CONFIG_FABRIC_PCIE || (cc != 70 && cc != 80 && cc != 90)))
		return false;
	return true;
}

/* What every (algorithm, protocol) pair of one call shares, computed once per call. */
typedef struct model_ctx {
	const config_platform *p;
	workload_coll c;
	int P, ppn, nodes, ci, ni, li, nsteps, ninter, cc, hwi;
	bool r228; /* nccl.version "2.28": NCCL 2.28.3's tables and formulas */
	const double (*base_lat)[3], (*hw_lat)[3][3], (*ll_max_bw)[3];
	double nch, bytes, busbw;
	/* per protocol, the link latency over NCCL's ring step of that protocol (hwLat): a
	 * protocol's calibrated hop latency where the platform has one, else the class's
	 * latency over NCCL's ring/Simple step, so the other pairs keep NCCL's ratios */
	double lat_intra[NCCL_PROTO_COUNT], lat_inter[NCCL_PROTO_COUNT];
	/* the bus bandwidths are protocol pr's calibrated (realized) ones: NCCL's protocol
	 * share and per-channel caps are already in them (set by ring_cost) */
	bool realized;
	/* protocol pr has a calibrated hop latency on the group's path: it carries the
	 * protocol's whole fixed cost, NCCL's baseLat included (docs/nccl-tests.md §4) */
	bool lat_cal[NCCL_PROTO_COUNT];
	double busbw_tree;  /* the bus bandwidth NCCL's trees start from (see ctx_init) */
	double busbw_intra; /* one node's ring bus bandwidth (the group's ranks on it) */
} model_ctx;

/* The tables and the ring's network steps of one tuner release (nccl.version). */
static void ctx_release(model_ctx *m, bool r228)
{
	m->r228 = r228;
	m->base_lat = r228 ? base_lat_2_28 : base_lat;
	m->hw_lat = r228 ? hw_lat_2_28 : hw_lat;
	m->ll_max_bw = r228 ? ll_max_bw_2_28 : ll_max_bw;
	/* the ring's network steps: 2.19 charges 2n for all-reduce; 2.28.3 (ncclTopoTuneModel,
	 * "nInterSteps = ... coll == ncclFuncAllReduce ? 2*(nNodes-1) : nNodes-1") 2(n-1) */
	int n_ar = r228 ? 2 * (m->nodes - 1) : 2 * m->nodes;
	m->ninter = m->c == WL_COLL_ALLREDUCE	 ? (m->nodes > 1 ? n_ar : 0)
		    : m->c == WL_COLL_BROADCAST ? m->nodes
						: m->nodes - 1;
	if (m->ninter > m->nsteps)
		m->ninter = m->nsteps;
}

static void ctx_init(model_ctx *m, const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
		     double busbw_ring)
{
	m->p = p;
	m->c = c;
	m->P = s.size;
	m->ppn = s.per_node > 0 ? s.per_node : 1;
	m->nodes = m->P / m->ppn > 0 ? m->P / m->ppn : 1;
	m->cc = cc_of(p);
	m->ci = cc_index(m->cc);
	m->ni = m->nodes <= 2 ? m->nodes - 1 : 2;
	m->li = m->nodes == 1 ? m->ci : 0;
	m->nch = nccl_channels(p);
	m->bytes = bytes;
	m->busbw = busbw_ring;
	/* ncclTopoTuneModel: "bw = nNodes <= 2 ? graphs[a]->bwIntra : graphs[a]->bwInter". On
	 * two nodes each node is the root of one of NCCL's two trees and a leaf of the other,
	 * so it sends (and receives) the buffer once over the network, where a ring sends it
	 * 2(P-1)/P times: NCCL rates its trees by the intra-node bandwidth there (spsim's
	 * ring over one node's ranks stands for nChannels x bwIntra), and the network still
	 * caps them at twice the ring's network-bound bus bandwidth. Beyond two nodes a
	 * tree node moves as many bytes as a ring's, and NCCL uses bwInter. */
	m->busbw_intra = busbw_ring;
	if (m->nodes > 1 && m->ppn > 1) {
		engine_group_shape node = {.size = m->ppn, .per_node = m->ppn, .active_per_node = s.active_per_node};
		m->busbw_intra = engine_ring_busbw(p, node);
	}
	m->busbw_tree = m->nodes == 2 ? fmin(m->busbw_intra, 2.0 * busbw_ring) : busbw_ring;
	m->nsteps = c == WL_COLL_ALLREDUCE ? 2 * (m->P - 1) : c == WL_COLL_BROADCAST ? m->P : m->P - 1;
	ctx_release(m, p->nccl.release == CONFIG_NCCL_2_28);
	m->hwi = p->intra.fabric == CONFIG_FABRIC_PCIE ? HW_PCI : HW_NVLINK;
	/* Latencies: NCCL's hwLat, rescaled so that the ring/Simple step equals the platform's
	 * (calibrated) link latency; the other pairs keep NCCL's ratios to it. */
	for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++) {
		double li = p->nccl.proto_cal[0][pr].latency, le = p->nccl.proto_cal[1][pr].latency;
		m->lat_intra[pr] = li > 0 ? li / hw_lat[m->hwi][NCCL_ALGO_RING][pr]
					  : p->intra.latency / hw_lat[m->hwi][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE];
		m->lat_inter[pr] = le > 0 ? le / hw_lat[HW_NET][NCCL_ALGO_RING][pr]
					  : p->inter.latency / hw_lat[HW_NET][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE];
	}
	m->realized = false;
	for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++) /* across nodes: an inter-node entry (proto_platform) */
		m->lat_cal[pr] = p->nccl.proto_cal[m->nodes > 1][pr].latency > 0;
}

static double pair_time(const model_ctx *m, nccl_algo a, nccl_proto pr, double *latency, double *algbw)
{
	if (!pair_enabled(m->p, m->c, m->nodes, a, pr))
		return -1;
	double G = 1e9, us = 1e-6, bus = m->busbw, nch = m->nch;
	int ci = m->ci, ni = m->ni, li = m->li, nodes = m->nodes, ppn = m->ppn, P = m->P, nsteps = m->nsteps;
	workload_coll c = m->c;
	if (m->realized) { /* measured: the protocol's share and caps are in the bandwidth */
		bus = a == NCCL_ALGO_TREE ? m->busbw_tree : a == NCCL_ALGO_NVLS ? fmin(m->busbw_intra, bus) : bus;
	} else {
	if (a == NCCL_ALGO_RING && pr == NCCL_PROTO_LL)
		bus = fmin(m->ll_max_bw[li][ni] * G,
			   bus * (m->r228 ? 0.5 : (nodes > 1 || c == WL_COLL_ALLREDUCE) ? 1.0 / 4.0 : 1.0 / 3.0));
	if (a == NCCL_ALGO_RING && pr == NCCL_PROTO_LL128) /* 2.28.3: 0.92 whatever ppn */
		bus = fmin(bus * (ppn < 2 && !m->r228 ? 0.7 : 0.92), nch * per_ch_ring_ll128[ci][ni] * G);
	if (a == NCCL_ALGO_TREE)
		bus = fmin(m->busbw_tree * .92, nch * per_ch_tree[ci][ni] * G);
	if (a == NCCL_ALGO_TREE && pr == NCCL_PROTO_LL)
		bus = fmin(bus / 3.8, m->ll_max_bw[li][ni] * G);
	if (a == NCCL_ALGO_TREE && pr == NCCL_PROTO_LL128)
		bus = fmin(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * per_ch_tree_ll128[ci][ni] * G);
	if (a == NCCL_ALGO_NVLS && m->r228) {
		/* 2.28.3 ncclTopoTuneModel: intraBw = bwIntra x nvlsEfficiency x (nChannels-1) /
		 * nChannels, x 2 for all-reduce ("AllReduce pipelines two operations"), else x
		 * (ppn-1)/ppn; NVLS-tree: min(intraBw, bwInter (x 2 on two nodes),
		 * perChMaxNVLSTreeBw), per channel. nChannels x bwIntra is the 2.19 branch's
		 * node NVLS bandwidth, nChannels x bwInter the ring's network bus bandwidth. */
		bus = fmin(m->busbw_intra, nvls_channels * nvlink_bw(m->cc)) * nvls_efficiency_2_28 *
		      (nvls_channels - 1) / nvls_channels * (c == WL_COLL_ALLREDUCE ? 2.0 : (ppn - 1.0) / ppn);
		if (nodes > 1)
			bus = fmin(fmin(bus, m->busbw * (nodes <= 2 ? 2 : 1)),
				   nvls_channels * per_ch_nvls_tree_2_28[ci][ni] * G);
	} else if (a == NCCL_ALGO_NVLS) {
		/* one node: NVLS at min(busBw, 16 channels x one NVLink). Across nodes NVLS-tree:
		 * tuning.cc "bw = min(bwIntra, nNodes <= 2 ? bwInter : bwInter/2)": the node's
		 * NVLS, and the network at the ring's bus bandwidth (halved beyond two nodes,
		 * where a tree node relays a child's data too) */
		bus = fmin(m->busbw_intra, nvls_channels * nvlink_bw(m->cc));
		if (nodes > 1)
			bus = fmin(bus, nodes <= 2 ? m->busbw : m->busbw / 2);
	}
	}
	/* 2.28.3: NVLS and NVLS-tree all-reduce at nRanks/nsteps like the ring; no ratio for
	 * NVLS all-gather / reduce-scatter ("if (!(a != NCCL_ALGO_RING && (AllGather ||
	 * ReduceScatter)))") */
	double nvls_ratio = !m->r228 ? 5.0 / 6.0 : c == WL_COLL_ALLREDUCE ? (double)P / nsteps : 1.0;
	double ratio = a == NCCL_ALGO_RING ? (double)P / nsteps : a == NCCL_ALGO_NVLS ? nvls_ratio : 0.5;
	double bw = bus * ratio;

	double intra = m->hw_lat[m->hwi][a][pr] * m->lat_intra[pr];
	/* a transport with a cost of its own per message (inter_node.message_latency: TCP, no
	 * RDMA) pays it on every network hop whatever the protocol: NCCL's hwLat network row
	 * is InfiniBand's, where LL's and LL128's small messages cost less than Simple's */
	/* 2.28.3: "With ppn=1 latencies are fully exposed, use the Tree network latency" */
	nccl_algo an = m->r228 && ppn == 1 && a != NCCL_ALGO_NVLS ? NCCL_ALGO_TREE : a;
	double inter = fmax(m->hw_lat[HW_NET][an][pr] * m->lat_inter[pr], m->p->inter.message_latency);
	double lat = m->lat_cal[pr] ? 0 : m->base_lat[a][pr] * us;
	if (a == NCCL_ALGO_RING) {
		if (c == WL_COLL_BROADCAST) {
			lat += nsteps * (nodes > 1 ? inter : intra);
		} else {
			double ovh = nodes > 1 ? net_overhead_us * us * (pr == NCCL_PROTO_SIMPLE ? 3 : 1) : 0;
			lat += (nsteps - m->ninter) * fmax(intra, ovh) + m->ninter * inter;
		}
	} else if (a == NCCL_ALGO_TREE) {
		lat += 2 * ((ppn - 1) * intra + log2i(nodes) * inter);
		int ls = log2i(m->bytes / 64);
		if (ls >= 0 && ls < 23 && !m->realized)
			bw *= tree_correction[pr][ls];
	} else if (nodes == 1) { /* NVLS */
		lat = intra;
	} else { /* NVLS-tree: baseLat 0 + intraLat + 2 log2(nodes) x interLat */
		double net = fmax(nvls_tree_net_lat_us * m->lat_inter[pr], m->p->inter.message_latency);
		lat = intra + 2 * log2i(nodes) * net;
	}
	if (a == NCCL_ALGO_RING && pr == NCCL_PROTO_SIMPLE && nodes > 1 && c == WL_COLL_ALLREDUCE &&
	    m->bytes / (nch * P) >= 64)
		lat *= m->cc < 80 ? 1.9 : 1.4; /* "plateau effect of ring" */
	if (latency)
		*latency = lat;
	if (algbw)
		*algbw = bw;
	return lat + m->bytes / bw;
}

double nccl_model_time(const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
		       double busbw_ring, nccl_algo a, nccl_proto pr, double *latency, double *algbw)
{
	model_ctx m;
	ctx_init(&m, p, c, s, bytes, busbw_ring);
	return pair_time(&m, a, pr, latency, algbw);
}

/* src/include/device.h: NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
 * NCCL_SIMPLE_MAX_NTHREADS 512 (maxThreads of ncclTopoTuneModel); src/include/comm.h
 * (tuning.cc ncclTopoTuneModel): NCCL_LL_THREAD_THRESHOLD 8, NCCL_LL128_THREAD_THRESHOLD 8,
 * NCCL_SIMPLE_THREAD_THRESHOLD 64 bytes per thread, ring/LL's multiplied by nRanks. */
static const int max_threads[NCCL_PROTO_COUNT] = {512, 640, 512};
static const double thread_threshold[NCCL_PROTO_COUNT] = {8, 8, 64};

static int p2p_channels(const config_platform *p);

/* enqueue.cc getAlgoInfo (topoGetAlgoInfo in later releases), "Ring/Tree channel tuning":
 * from nc channels, while nBytes < nc x nt x threadThreshold, drop a channel (then halve
 * the threads, which only moves messages of a few KiB and is not modelled) */
static int launch_from(int nc, nccl_algo a, nccl_proto pr, int ranks, double bytes)
{
	double thr = thread_threshold[pr] * (a == NCCL_ALGO_RING && pr == NCCL_PROTO_LL ? ranks : 1);
	double per_channel = max_threads[pr] * thr;
	while (nc >= 2 && bytes < nc * per_channel)
		nc--;
	return nc;
}

int nccl_launch_channels(const config_platform *p, nccl_algo a, nccl_proto pr, int ranks, double bytes)
{
	int nc = nccl_channels(p);
	if (a == NCCL_ALGO_P2P) /* the communicator's p2p channels, shared out among the peers */
		return p2p_channels(p);
	if (a == NCCL_ALGO_NVLS) /* "NVLS should not need more than 16 channels": no tuning */
		return nvls_channels;
	if (a != NCCL_ALGO_RING && a != NCCL_ALGO_TREE)
		return nc;
	return launch_from(nc, a, pr, ranks, bytes);
}

/* The platform protocol pr is timed on: p with the class bandwidths replaced by pr's
 * calibrated (realized) ones; false when the group's path has none. Across nodes that
 * takes an inter-node entry (the network is a multi-node ring's bottleneck, and an
 * intra-node entry alone says nothing of the protocol's share of it): without one, the
 * class links and NCCL's protocol model time the pair. */
static bool proto_platform(const config_platform *p, nccl_proto pr, bool multi_node, config_platform *q)
{
	double bi = p->nccl.proto_cal[0][pr].bandwidth, be = p->nccl.proto_cal[1][pr].bandwidth;
	if (multi_node ? !(be > 0) : !(bi > 0))
		return false;
	*q = *p;
	if (bi > 0) { /* as config_apply_calibration applies a class bandwidth */
		q->intra.bandwidth = bi;
		q->intra.pair_bandwidth =
			p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH && p->gpus_per_node > 1 ? bi / (p->gpus_per_node - 1) : bi;
		q->eff.intra_link = 1.0;
	}
	if (multi_node) {
		q->inter.nic_bandwidth = be;
		q->eff.inter_link = 1.0;
	}
	return true;
}

/* The platform the chosen pair (a, pr) is timed on: p itself, or, where the calibration
 * has an entry for the pair (config_cal_entry), p with that entry's latency and bandwidth
 * in place of protocol pr's, field by field (the most specific entry wins; the protocol's
 * entry, then the class's links, stand for what the pair's leaves out). */
static const config_platform *pair_platform(const config_platform *p, nccl_algo a, nccl_proto pr, config_platform *buf)
{
	int e = config_cal_entry((int)a, (int)pr);
	if (e < 0)
		return p;
	bool any = false;
	for (int k = 0; k < 2; k++)
		any |= p->nccl.proto_cal[k][e].latency > 0 || p->nccl.proto_cal[k][e].bandwidth > 0;
	if (!any)
		return p;
	*buf = *p;
	for (int k = 0; k < 2; k++) {
		if (p->nccl.proto_cal[k][e].latency > 0)
			buf->nccl.proto_cal[k][pr].latency = p->nccl.proto_cal[k][e].latency;
		if (p->nccl.proto_cal[k][e].bandwidth > 0)
			buf->nccl.proto_cal[k][pr].bandwidth = p->nccl.proto_cal[k][e].bandwidth;
	}
	return buf;
}

/* enqueue.cc's chunk rules, one line each: "if ((nBytes < (f * (concurrentOps *
 * chunkSize))) && (chunkSize > c)) chunkSize = c", applied in order. */
typedef struct chunk_rule {
	double f, c;
} chunk_rule;

static double chunk_by_rules(double chunk, double ops, double bytes, const chunk_rule *r, int n)
{
	for (int i = 0; i < n; i++)
		if (bytes < r[i].f * ops * chunk && chunk > r[i].c)
			chunk = r[i].c;
	return chunk;
}

/* NVLS all-reduce's chunk (src/enqueue.cc, the NCCL_ALGO_NVLS branch of computeColl in
 * 2.18-2.19 and of the chunk computation in later releases, the same rule): 128 KiB
 * (nvlsChunkSize), then 64, 32 and 16 KiB while nBytes < 64, 8 and 2 x concurrentOps x
 * chunk, concurrentOps = NVLS channels x heads (the node's ranks). */
static double nvls_chunk(int heads, double bytes)
{
	static const chunk_rule r[] = {{64, 65536}, {8, 32768}, {2, 16384}};
	return chunk_by_rules(131072, (double)nvls_channels * heads, bytes, r, 3);
}

/* The fill and drain of NVLS all-reduce's pipeline, s, over `stages` stages (nvls_stages).
 * One node, NCCL's kernel
 * (src/device/all_reduce.h, RunWorkElement<AllReduce, NVLS, Simple>) splits each
 * channel's threads into three warp groups that run one after the other on every loop of
 * nChannels x nHeads x chunk bytes: scatter (the input to the heads' NVLS buffers),
 * reduce (multimem load-reduce and multicast store of the rank's own chunk) and gather
 * (the reduced chunks to the output). A group posts a loop's chunk only once it has
 * handled it for every head (src/device/prims_simple.h ScatterGatherOp: one wait, the
 * copies to all peers, one post per slice, and NVLS runs one slice per chunk,
 * ProtoSimple<1, 1>), so within a loop the stages follow one another; across loops they
 * overlap through the NCCL_STEPS buffer slots, so n loops take n + 2 stage times where
 * NCCL's model (tuning.cc: one
 * latency plus bytes / bandwidth) counts n. The kernel sizes the groups to keep pace with
 * one another (6, 5 and 5 of its 16 warps with more than 6 ranks), so each stage is taken
 * at the pipeline's rate (the pair's algbw) and the two extra stages cost
 * 2 x min(bytes, loop) / algbw: a call smaller than one loop runs its three stages in
 * turn; NVLS-tree's loops pass more groups (nvls_stages). Derivation and measured curves:
 * docs/fidelity.md, "One-node NVLS all-reduce" and "Two-node all-reduce". */
static double nvls_pipeline_fill(int stages, double loop, double bytes, double algbw)
{
	return algbw > 0 ? (stages - 1) * fmin(bytes, loop) / algbw : 0.0;
}

/* NVLS-tree's chunk (src/enqueue.cc, the NCCL_ALGO_NVLS_TREE branch of the chunk
 * computation, NCCL 2.19-2.2x): one NCCL_STEPS step of the 4 MiB Simple buffer, 512 KiB,
 * capped at 64 KiB from 4 nodes (NCCL_NVLS_TREE_MAX_CHUNKSIZE's default), then 256, 128,
 * 64 and 32 KiB while nBytes < 32, 16, 4 and 1 x concurrentOps x chunk (concurrentOps = 16
 * NVLS channels x heads). Later releases start from nvlsChunkSize (128 KiB): the same
 * chunk below 512 MiB. */
static double nvls_tree_chunk(int heads, int nodes, double bytes)
{
	static const chunk_rule r[] = {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}};
	return chunk_by_rules(nodes >= 4 ? 65536 : 524288, (double)nvls_channels * heads, bytes, r, 4);
}

/* The stages a loop of NVLS all-reduce passes in turn (see nvls_pipeline_fill) and its
 * size. One node: scatter, reduce, gather. NVLS-tree across nodes (all_reduce.h,
 * RunWorkElement for NCCL_ALGO_NVLS_TREE; the same warp groups, with the reduce group
 * sending its chunk up the tree between nodes and a broadcast group receiving the result
 * from it): on a channel where the node is a leaf the loop passes its scatter and reduce
 * groups, the reduce group of every node above it up to the root (which reduces and sends
 * the result back down), the broadcast group of every node below the root, and its gather:
 * 2 log2(nodes) + 3 groups, each sized to keep pace as on one node. The network transfers
 * between them are the 2 log2(nodes) hops NCCL's NVLS-tree latency already charges
 * (pair_time: 14 us each). */
static int nvls_stages(int nodes, int heads, double bytes, double *loop)
{
	double ops = (double)nvls_channels * heads;
	if (nodes <= 1) {
		*loop = ops * nvls_chunk(heads, bytes);
		return 3;
	}
	*loop = ops * nvls_tree_chunk(heads, nodes, bytes);
	return 2 * log2i(nodes) + 3;
}

/* src/graph/search.cc: the per-channel bandwidths NCCL's ring search tries across nodes,
 * GB/s, highest first (speedArrayInter; sm90SpeedArrayInter; sm100SpeedArrayInter). */
static const double speeds_inter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
static const double speeds_inter_sm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0};
static const double speeds_inter_sm100[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0};

/* The channels NCCL runs a ring on across nodes, for ppn of the group's GPUs per node.
 * src/graph/search.cc ncclTopoCompute puts one ring through each NIC the node's GPUs use
 * (every ring enters and leaves the node through a NIC) at the highest speed of its array
 * that the NIC (its port speed) and the GPUs' NVLink, which every ring crosses once per
 * GPU, both carry; ncclTopoDupChannels doubles them at half the speed unless the speed is
 * under 25 GB/s, or, on compute capability above 80, under 50 GB/s with more than 4
 * rings; src/graph/connect.cc ncclTopoPostset doubles the channels ("Duplication should be
 * complete now", at most MAXCHANNELS 32) and, on compute capability 90 and more, doubles
 * them again while fewer than 16 remain at a per-channel speed above 45 GB/s ("Use 4
 * compute channels per search channel to reach peak BW on <8 PPN"). Eight 400 Gb/s NICs on
 * eight H100s: 8 rings at 45 GB/s (50 GB/s ports; 369 GB/s of NVLink over 8 rings), not
 * duplicated, 16 channels, as the three-node H100 log of NVIDIA/nccl issue 1453 lists
 * (channels 8-15 repeat rings 0-7). */
static int ring_net_channels(const config_platform *p, int ppn)
{
	int rings = p->inter.nics_per_node < ppn ? p->inter.nics_per_node : ppn;
	if (p->nccl.channels > 0 || rings < 1) /* set channels (NCCL_MIN/MAX_NCHANNELS) win */
		return nccl_channels(p);
	int cc = cc_of(p);
	double port = (tuner_snapshot(p) ? p->nccl.tuner.nic_bw : p->inter.nic_bandwidth) / 1e9;
	double top = fmin(port, node_ring_bw(p) / 1e9 / rings), speed = 0;
#define SPEEDS(a) {a, sizeof a / sizeof *a}
	static const struct {
		const double *v;
		size_t n;
	} arrays[] = {SPEEDS(speeds_inter), SPEEDS(speeds_inter_sm90), SPEEDS(speeds_inter_sm100)};
#undef SPEEDS
	const int which = cc >= 100 ? 2 : cc >= 90 ? 1 : 0;
	for (size_t i = 0; i < arrays[which].n && speed == 0; i++)
		if (arrays[which].v[i] <= top)
			speed = arrays[which].v[i];
	int ch = rings;
	if (speed >= 25.0 && !(cc > 80 && speed < 50.0 && rings > 4)) {
		ch = 2 * rings < 16 ? 2 * rings : 16; /* maxChannels MAXCHANNELS/2 */
		speed /= 2;
	}
	ch = 2 * ch < 32 ? 2 * ch : 32;
	if (cc >= 90 && speed > 45.0 && ch < 16)
		ch *= 2;
	return ch;
}

int nccl_group_channels(const config_platform *p, nccl_algo a, nccl_proto pr, engine_group_shape s, double bytes)
{
	int ppn = s.per_node > 0 ? s.per_node : 1;
	if (a != NCCL_ALGO_RING || s.size <= ppn)
		return nccl_launch_channels(p, a, pr, s.size, bytes);
	return launch_from(ring_net_channels(p, ppn), a, pr, s.size, bytes);
}

/* NCCL's tuner on its own view of the links (tuner_platform): m set up on that view, and
 * its model time of every (algorithm, protocol) pair in t, < 0 where NCCL cannot run it.
 * Returns the platform the context was made on. */
static const config_platform *tuner_table(const config_platform *p, workload_coll c, engine_group_shape s,
					  double bytes, config_platform *tbuf, model_ctx *m,
					  double t[NCCL_ALGO_P2P][NCCL_PROTO_COUNT])
{
	const config_platform *tp = tuner_platform(p, tbuf);
	ctx_init(m, tp, c, s, bytes, engine_ring_busbw(tp, s));
	for (int a = 0; a < NCCL_ALGO_P2P; a++)
		for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++)
			t[a][pr] = pair_time(m, (nccl_algo)a, (nccl_proto)pr, NULL, NULL);
	return tp;
}

int nccl_tuner_times(const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
		     double time[NCCL_ALGO_P2P][NCCL_PROTO_COUNT])
{
	int n = 0;
	for (int a = 0; a < NCCL_ALGO_P2P; a++)
		for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++)
			time[a][pr] = -1;
	if (!ring_family(c) || bytes <= 0 || s.size <= 1 || p->nccl.links_only)
		return 0;
	config_platform tbuf;
	model_ctx m;
	tuner_table(p, c, s, bytes, &tbuf, &m, time);
	for (int a = 0; a < NCCL_ALGO_P2P; a++)
		for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++)
			n += time[a][pr] >= 0;
	return n;
}

/* Ring family, spsim's ring: NCCL's choice among (algorithm, protocol), made by NCCL's
 * model on NCCL's view of the links (tuner_platform), and the time of the chosen pair on
 * the platform as calibrated: its links, and the chosen protocol's own calibrated
 * latency and bandwidth where the calibration has them. */
static nccl_cost ring_cost(const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
			   nccl_cost k)
{
	config_platform tbuf;
	model_ctx m;
	double t[NCCL_ALGO_P2P][NCCL_PROTO_COUNT];
	const config_platform *tp = tuner_table(p, c, s, bytes, &tbuf, &m, t);
	double best = INFINITY;
	k.algo = NCCL_ALGO_RING;
	k.proto = NCCL_PROTO_SIMPLE;
	for (int a = 0; a < NCCL_ALGO_P2P; a++) {
		if (p->nccl.force_algo && p->nccl.force_algo != a + 1)
			continue;
		for (int pr = 0; pr < NCCL_PROTO_COUNT; pr++) {
			if (p->nccl.force_proto && p->nccl.force_proto != pr + 1)
				continue;
			if (t[a][pr] >= 0 && t[a][pr] < best) { /* NCCL keeps the first of equal times */
				best = t[a][pr];
				k.algo = (nccl_algo)a;
				k.proto = (nccl_proto)pr;
			}
		}
	}
	/* the time: the engines move the bytes at the physical ring's rate on p (ring/Simple's
	 * algbw, busbw x P / steps), the scale turns that into the chosen pair's */
	config_platform pbuf;
	p = pair_platform(p, k.algo, k.proto, &pbuf);
	if (tp != p)
		ctx_init(&m, p, c, s, bytes, engine_ring_busbw(p, s));
	double bw_rs = m.busbw * m.P / m.nsteps, bw = bw_rs;
	config_platform q;
	if (proto_platform(p, k.proto, m.nodes > 1, &q)) {
		ctx_init(&m, &q, c, s, bytes, engine_ring_busbw(&q, s));
		m.realized = true;
	}
	/* the release's tables chose the pair; its time is the kernels' on p, which spsim
	 * takes from the 2.19 model its measured curves validate (docs/model.md §3) */
	ctx_release(&m, false);
	k.latency = 0;
	if (pair_time(&m, k.algo, k.proto, &k.latency, &bw) < 0)
		bw = bw_rs;
	if (k.algo == NCCL_ALGO_NVLS && c == WL_COLL_ALLREDUCE) {
		double loop;
		int stages = nvls_stages(m.nodes, m.ppn, bytes, &loop);
		k.latency += nvls_pipeline_fill(stages, loop, bytes, bw);
	}
	k.scale[0] = k.scale[1] = bw_rs / bw;
	/* NCCL chooses on the full channel count and then launches fewer channels for a small
	 * message (nccl_launch_channels); each carries its share of the bandwidth, so the
	 * chosen pair's wire time grows by the ratio */
	int full = k.algo == NCCL_ALGO_NVLS ? nvls_channels : nccl_channels(p);
	int nc = nccl_launch_channels(p, k.algo, k.proto, s.size, bytes);
	if (nc < full) {
		k.scale[0] *= (double)full / nc;
		k.scale[1] *= (double)full / nc;
	}
	/* across nodes the ring runs NCCL's network channels (ring_net_channels), each one CTA
	 * moving at most one NVLink's bandwidth (ncclTopoNVLinkBw, as the NVLS and p2p channels
	 * above): the ring's bus bandwidth is at most channels x that. The CTAs hold back the
	 * channels where they leave the node, so the network leg (scale[1]) carries the limit
	 * and the NVLink traffic the other rings and all-to-alls share is not inflated (the
	 * NICs bind such a ring: 376 GB/s on dgx-h100 against 421 of NVLink forwarding). A
	 * calibrated protocol rate (m.realized) is a measurement and keeps its own. */
	if (k.algo == NCCL_ALGO_RING && m.nodes > 1 && !m.realized) {
		int ch = nccl_group_channels(p, k.algo, k.proto, s, bytes);
		double rate = m.busbw * (nc < full ? (double)nc / full : 1.0), cap = ch * nvlink_bw(m.cc);
		if (rate > cap)
			k.scale[1] *= rate / cap;
	}
	return k;
}

/* p2p channels: pow2Up(ring channels), at most NCCL_MAX_P2P_NCHANNELS
 * (src/graph/connect.cc ncclTopoComputeP2pChannels). */
static int p2p_channels(const config_platform *p)
{
	return util_pow2_up(nccl_channels(p) < p2p_max_channels ? nccl_channels(p) : p2p_max_channels);
}

/* The per-message terms of a p2p exchange with `peers` peers per GPU, `remote` of them on
 * other nodes (k.latency, on top of the one link latency its flows pay):
 * - every network message is posted by the GPU's proxy thread, one after the other:
 *   getNetOverhead (tuning.cc: 1 us per post on x86 Intel; "inter-node rings still have
 *   to launch nsteps * net overhead", where the ring model also triples it for Simple),
 *   so a GPU with r remote peers pays r posts of 1 us;
 * - peers are served in rounds on the p2p channels, each at least one channel
 *   (src/enqueue.cc scheduleP2pTasksToPlan, ncclP2pChannelBaseForRound): more peers than
 *   channels serialise, each wave paying the farthest link's message latency;
 * - a transport with a cost of its own per message (inter_node.message_latency) pays it
 *   instead of the link latency. */
static double p2p_message_latency(const config_platform *p, int peers, int remote)
{
	int ch = p2p_channels(p);
	int waves = peers > ch ? (peers + ch - 1) / ch : 1;
	double link = remote > 0 ? p->inter.latency : p->intra.latency;
	double msg = remote > 0 ? fmax(p->inter.latency, p->inter.message_latency) : link;
	return waves * msg - link + remote * net_overhead_us * 1e-6;
}

/* comm->p2pChunkSize (init.cc computeBuffSizes): the network chunk for every peer once the
 * communicator spans nodes, the NVLink one within one node. */
static double p2p_chunk(engine_group_shape s) { return s.size > s.per_node ? p2p_net_chunk : p2p_nvl_chunk; }

/* The drain of NCCL's p2p staging pipeline on NVLink, s: `part` bytes per channel, `concurrent`
 * channels of the GPU receiving at once. Between processes the P2P transport moves a
 * Simple-protocol transfer through an intermediate FIFO of NCCL_STEPS slots
 * (src/transport/p2p.cc p2pSendSetup: P2P_DIRECT, the sender writing into the
 * receiver's user buffer, only when both ranks are one process, P2P_SAME_PID; otherwise
 * P2P_CUMEM or P2P_IPC with NCCL_P2P_WRITE or NCCL_P2P_READ; NCCL 2.19-2.29), in chunks
 * of comm->p2pChunkSize (src/init.cc computeBuffSizes: NCCL_P2P_NVL_CHUNKSIZE, 512 KiB, on
 * one node; NCCL_P2P_NET_CHUNKSIZE, 128 KiB, for every peer when the communicator spans
 * nodes). Every chunk is copied twice, once over
 * NVLink and once within one GPU's memory: on Hopper the sender writes into the
 * receiver's FIFO and the receiver's warp group copies it out to the user buffer; on
 * Ampere (P2P read, src/graph/paths.cc ncclTopoCheckP2p: "Enable P2P Read for
 * Ampere/NVLink only", compute capability 80) the sender copies into its own FIFO and the
 * receiver reads it over NVLink. The local stage hides behind the link stage except for
 * one chunk at the end (at the start on Ampere): its copy, a read and a write of HBM
 * shared by the channels that copy at once, adds to the link time. One process driving
 * all the node's GPUs (nccl.processes per_node) has no second stage. */
static double p2p_staging_drain(const config_platform *p, engine_group_shape s, double part, int concurrent)
{
	if (p->nccl.processes == CONFIG_NCCL_PROCS_PER_NODE || concurrent < 1)
		return 0.0;
	double step = p2p_chunk(s);
	double chunk = part < step ? part : step;
	return 2.0 * chunk * concurrent / (p->gpu.hbm_bandwidth * p->eff.memory);
}

/* All-to-all (direct) and send/recv through NCCL's p2p path. m: bytes to each peer;
 * peers and remote: peers per GPU, those on other nodes. */
static nccl_cost p2p_cost(const config_platform *p, engine_group_shape s, int local, int peers, int remote, double m,
			  nccl_cost k)
{
	k.algo = NCCL_ALGO_P2P;
	k.link_latency = true;
	bool ll = p->nccl.force_proto ? p->nccl.force_proto == NCCL_PROTO_LL + 1 : m <= p2p_ll_threshold;
	k.proto = ll ? NCCL_PROTO_LL : NCCL_PROTO_SIMPLE;
	k.latency = p2p_message_latency(p, peers, remote);
	/* LL moves 8-byte lines of 4 data bytes and a 4-byte flag (src/device/prims_ll.h) */
	double proto = ll ? 2.0 : 1.0;
	k.scale[0] = k.scale[1] = proto;
	if (local <= 0 || p->intra.fabric == CONFIG_FABRIC_PCIE)
		return k;
	/* Channels (src/graph/connect.cc ncclTopoComputeP2pChannels, src/graph/paths.cc
	 * ncclTopoGetNchannels, src/enqueue.cc scheduleP2pTasksToPlan): p2p channels =
	 * pow2Up(channels); per NVLink peer 2 x the links of the path, as a power of two; a
	 * message starts on nChannelsMin (halved until all ranks fit the p2p channels once)
	 * and doubles while its part per channel exceeds maxPartSize, the communicator's
	 * p2pChunkSize once it spans nodes (src/enqueue.cc addP2pToPlan: "maxPartSize =
	 * comm->nNodes > 1 ? stepSize : stepSize*32", stepSize = comm->p2pChunkSize; the
	 * maxSize of calcP2pChunkSize in older releases): 128 KiB across nodes. Within one node the model doubles past one 512 KiB chunk, where NCCL
	 * waits for 32 (docs/model.md §3). Each channel is one CTA moving at most one NVLink's
	 * bandwidth. */
	int cc = cc_of(p);
	double link = nvlink_bw(cc);
	int p2p_ch = p2p_channels(p);
	long links = lround(floor(tuner_pair_bw(p) / link)); /* NVLinks NCCL's topology finds */
	int per_peer_max = util_pow2_up((int)(2 * (links > 1 ? links : 1)) < p2p_ch ? (int)(2 * (links > 1 ? links : 1)) : p2p_ch);
	int nmin = per_peer_max;
	while (nmin * s.size > p2p_ch && nmin > 1)
		nmin /= 2;
	int nch = nmin;
	while (m / nch > p2p_chunk(s) && nch <= per_peer_max / 2)
		nch *= 2;
	int concurrent = local * nch < p2p_ch ? local * nch : p2p_ch;
	double cap = concurrent * link;
	double phys = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH ? config_platform_intra_pair_bw(p) * local
								     : config_platform_intra_bw(p);
	k.scale[0] = proto * (phys > cap ? phys / cap : 1.0);
	if (!ll)
		k.latency += p2p_staging_drain(p, s, m / nch, concurrent);
	return k;
}

/* Everything of a platform the cost terms read (a memo key). */
typedef struct plat_key {
	int gpn, fabric, nics, topology, npl;
	double intra_bw, pair_bw, intra_lat, nic_bw, inter_lat, msg_lat, oversub, overhead, hbm, eff_mem, eff_intra,
		eff_inter;
	int cc, channels, nvls, links_only, force_algo, force_proto, tuner_set, processes;
	double tuner[7], proto_cal[2][CONFIG_CAL_ENTRIES][2];
} plat_key;

static void key_of(const config_platform *p, plat_key *k)
{
	memset(k, 0, sizeof *k); /* padding too: keys are compared with memcmp */
	k->gpn = p->gpus_per_node;
	k->fabric = (int)p->intra.fabric;
	k->nics = p->inter.nics_per_node;
	k->topology = (int)p->inter.topology;
	k->npl = p->inter.nodes_per_leaf;
	k->intra_bw = p->intra.bandwidth;
	k->pair_bw = p->intra.pair_bandwidth;
	k->intra_lat = p->intra.latency;
	k->nic_bw = p->inter.nic_bandwidth;
	k->inter_lat = p->inter.latency;
	k->msg_lat = p->inter.message_latency;
	k->oversub = p->inter.oversubscription;
	k->overhead = p->coll_overhead;
	k->hbm = p->gpu.hbm_bandwidth;
	k->eff_mem = p->eff.memory;
	k->eff_intra = p->eff.intra_link;
	k->eff_inter = p->eff.inter_link;
	k->cc = p->nccl.compute_capability;
	k->channels = p->nccl.channels;
	k->nvls = p->nccl.nvls;
	k->links_only = p->nccl.links_only;
	k->force_algo = p->nccl.force_algo;
	k->force_proto = p->nccl.force_proto;
	k->processes = p->nccl.processes;
	k->tuner_set = p->nccl.tuner.set + 2 * p->nccl.tuner_follows;
	if (p->nccl.tuner.set) {
		double t[7] = {p->nccl.tuner.intra_bw,	p->nccl.tuner.pair_bw, p->nccl.tuner.intra_lat,
			       p->nccl.tuner.eff_intra, p->nccl.tuner.nic_bw,  p->nccl.tuner.inter_lat,
			       p->nccl.tuner.eff_inter};
		memcpy(k->tuner, t, sizeof t);
	}
	for (int c = 0; c < 2; c++)
		for (int pr = 0; pr < CONFIG_CAL_ENTRIES; pr++) {
			k->proto_cal[c][pr][0] = p->nccl.proto_cal[c][pr].latency;
			k->proto_cal[c][pr][1] = p->nccl.proto_cal[c][pr].bandwidth;
		}
}

static nccl_cost cost_of(const config_platform *p, workload_coll c, workload_alg alg, engine_group_shape s,
			 double bytes);

/* The analytic engine costs the same few calls over and over (every layer, every
 * configuration of a sweep on one platform): a per-thread memo of the last ones, large
 * enough (512 entries, about 120 KB) for a sweep that interleaves several models and
 * platforms: with 64 entries a sweep of 5 models x 4 platforms missed 65% of its calls. */
typedef struct memo_entry {
	bool used;
	int c, alg, size, per_node, active;
	double leaf_pairs, bytes;
	plat_key pk;
	nccl_cost k;
} memo_entry;

enum { MEMO_SIZE = 512 };
static _Thread_local memo_entry memo[MEMO_SIZE];

nccl_cost nccl_cost_of(const config_platform *p, workload_coll c, workload_alg alg, engine_group_shape s,
		       double bytes)
{
	plat_key pk;
	key_of(p, &pk);
	unsigned long long h = (unsigned long long)c * 31 + (unsigned long long)alg;
	h = h * 131 + (unsigned long long)s.size;
	h = h * 131 + (unsigned long long)s.per_node;
	h = h * 131 + (unsigned long long)s.active_per_node;
	unsigned long long bits;
	memcpy(&bits, &bytes, sizeof bits); /* the double's bits: no float-to-integer overflow */
	h ^= bits * 0x9e3779b97f4a7c15ULL;
	memo_entry *e = &memo[(h ^ (h >> 29)) % MEMO_SIZE];
	if (e->used && e->c == (int)c && e->alg == (int)alg && e->size == s.size && e->per_node == s.per_node &&
	    e->active == s.active_per_node && e->leaf_pairs == s.leaf_pairs && e->bytes == bytes &&
	    memcmp(&e->pk, &pk, sizeof pk) == 0)
		return e->k;
	nccl_cost k = cost_of(p, c, alg, s, bytes);
	*e = (memo_entry){.used = true, .c = (int)c, .alg = (int)alg, .size = s.size, .per_node = s.per_node,
			  .active = s.active_per_node, .leaf_pairs = s.leaf_pairs, .bytes = bytes, .pk = pk, .k = k};
	return k;
}

static nccl_cost cost_of(const config_platform *p, workload_coll c, workload_alg alg, engine_group_shape s,
			 double bytes)
{
	nccl_cost k = {.algo = NCCL_ALGO_RING,
		       .proto = NCCL_PROTO_SIMPLE,
		       .launch = p->coll_overhead,
		       .scale = {1.0, 1.0},
		       .link_latency = true};
	if (bytes <= 0)
		return (nccl_cost){.scale = {1.0, 1.0}};
	if (s.size <= 1) {
		/* A one-rank group still launches the kernel; all-to-all and send/recv to self copy
		 * the buffer in HBM (read and write), the reductions and gathers of one rank are a
		 * copy too when out of place (nccl-tests' default). */
		k.algo = NCCL_ALGO_P2P;
		k.link_latency = false;
		k.local = 2.0 * bytes / (p->gpu.hbm_bandwidth * p->eff.memory);
		return k;
	}
	if (p->nccl.links_only) /* measured without NCCL: the links alone */
		return k;
	if (ring_family(c) && alg == WL_ALG_RING) {
		k.link_latency = false;
		return ring_cost(p, c, s, bytes, k);
	}
	if (c == WL_COLL_ALLTOALL && alg == WL_ALG_DIRECT)
		return p2p_cost(p, s, s.per_node - 1, s.size - 1, s.size - s.per_node, bytes / s.size, k);
	if (c == WL_COLL_SENDRECV) {
		bool intra = s.per_node >= 2 && s.size <= s.per_node; /* as the engines route it */
		return p2p_cost(p, s, s.per_node >= 2 ? 1 : 0, 1, intra ? 0 : 1, bytes, k);
	}
	/* pairwise, hierarchical: spsim's compositions of NCCL calls, link latencies, scale 1;
	 * an all-to-all still posts one network message per remote peer of each of its
	 * exchanges (p2p_message_latency): pairwise one peer at a time, hierarchical's
	 * inter-node phase nodes - 1 peers */
	if (c == WL_COLL_ALLTOALL && s.size > s.per_node && s.per_node >= 1) {
		int remote = s.size - s.per_node, nodes = s.size / s.per_node;
		if (alg == WL_ALG_PAIRWISE)
			k.latency = remote * p2p_message_latency(p, 1, 1);
		else if (alg == WL_ALG_HIERARCHICAL)
			k.latency = p2p_message_latency(p, nodes - 1, nodes - 1);
	}
	return k;
}

bool nccl_force_check(const config_platform *p, workload_coll c, int force_algo, int force_proto, char *why,
		      size_t len)
{
	bool ring = ring_family(c);
	if (force_algo) {
		nccl_algo a = (nccl_algo)(force_algo - 1);
		if (!ring || a == NCCL_ALGO_P2P) {
			snprintf(why, len, "--alg %s applies to all-reduce, all-gather, reduce-scatter and broadcast; "
				 "all-to-all and send/recv take direct (pairwise, hierarchical for all-to-all)",
				 nccl_algo_name(a));
			return false;
		}
		if (a == NCCL_ALGO_TREE && c != WL_COLL_ALLREDUCE) {
			snprintf(why, len, "--alg tree applies only to all-reduce (NCCL's trees), expected ring here");
			return false;
		}
		if (a == NCCL_ALGO_NVLS && (!p->nccl.nvls || c == WL_COLL_BROADCAST || (p->nodes > 1 && c != WL_COLL_ALLREDUCE))) {
			snprintf(why, len, "--alg nvls needs a platform declaring nccl: {nvls: true} and all-reduce, "
				 "all-gather or reduce-scatter on one node (across nodes NVLS-tree: all-reduce only)");
			return false;
		}
		if (a == NCCL_ALGO_NVLS && force_proto && force_proto != NCCL_PROTO_SIMPLE + 1) {
			snprintf(why, len, "--proto %s with --alg nvls: NVLS runs only the Simple protocol",
				 nccl_proto_name((nccl_proto)(force_proto - 1)));
			return false;
		}
	}
	if (force_proto) {
		nccl_proto pr = (nccl_proto)(force_proto - 1);
		if (!ring && pr == NCCL_PROTO_LL128) {
			snprintf(why, len, "--proto LL128: NCCL's p2p path (all-to-all, send/recv) runs LL or Simple");
			return false;
		}
		if (pr == NCCL_PROTO_LL128 && ring && !pair_enabled(p, c, 1, NCCL_ALGO_RING, pr)) {
			snprintf(why, len, "--proto LL128: NCCL enables LL128 only on NVLink platforms of compute "
				 "capability 70, 80 or 90; expected LL or Simple");
			return false;
		}
	}
	return true;
}
