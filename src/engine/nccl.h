/* nccl: NCCL's own cost model, shared by both engines (docs/model.md "Collectives").
 *
 * For the ring family (all-reduce, all-gather, reduce-scatter, broadcast) it makes the
 * choice NCCL's tuner makes: ncclTopoTuneModel (src/graph/tuning.cc) tabulates, per
 * algorithm (tree, ring, NVLS) and protocol (LL, LL128, Simple), a latency
 * baseLat[a][p] + steps x hwLat[link][a][p] and a bus bandwidth (channels x per-channel
 * bandwidth, cut by the protocol's share and per-channel caps), and ncclTopoGetAlgoTime
 * takes the smallest latency + bytes / bandwidth. spsim keeps its own link physics (which
 * link carries what, shared by whom) for the bytes and applies NCCL's choice on top: the
 * chosen pair's latency replaces the per-step link latency, and the wire time is the
 * physical ring time times NCCL's bandwidth ratio ring/Simple : chosen pair (LL moves half
 * its bytes as flags, LL128 8 of every 128, trees and NVLS move different volumes).
 *
 * For all-to-all and send/recv it models NCCL's p2p path (src/enqueue.cc
 * scheduleP2pTasksToPlan, src/graph/connect.cc ncclTopoComputeP2pChannels, src/init.cc
 * computeBuffSizes): per-peer messages over a few channels per peer, LL below 16 KiB per
 * peer, the per-call launch, and a one-rank group as a launch plus a local copy.
 *
 * Every engine costs a collective as
 *   launch + latency + wire time, the wire time of a link class (intra / inter node)
 *   being its physical time x scale[class]:
 * the analytic engine multiplies its closed forms, the SimGrid engine sleeps
 * launch + latency and sends scale x the bytes, so the two agree when nothing contends. */
#ifndef SPSIM_ENGINE_NCCL_H
#define SPSIM_ENGINE_NCCL_H

#include <stdbool.h>

#include "config/config.h"
#include "engine/engine.h"
#include "workload/workload.h"

typedef enum nccl_algo {
	NCCL_ALGO_TREE, /* NCCL's order (src/include/device.h): tree, ring, ..., NVLS */
	NCCL_ALGO_RING,
	NCCL_ALGO_NVLS,
	NCCL_ALGO_P2P, /* all-to-all, send/recv: not a tuned algorithm in NCCL */
	NCCL_ALGO_COUNT
} nccl_algo;

typedef enum nccl_proto { NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE, NCCL_PROTO_COUNT } nccl_proto;

const char *nccl_algo_name(nccl_algo a);
const char *nccl_proto_name(nccl_proto p);
/* Case-insensitive; false if unknown. */
bool nccl_algo_from_name(const char *name, nccl_algo *out);
bool nccl_proto_from_name(const char *name, nccl_proto *out);

typedef struct nccl_cost {
	nccl_algo algo;
	nccl_proto proto;
	double launch;   /* per call (platform collective_overhead), s */
	double latency;  /* NCCL's latency of the chosen pair, s; 0 for p2p (link latency per flow) */
	double scale[2]; /* wire-time multiplier over the link physics: [0] intra-node, [1] inter-node */
	double local;    /* one-rank group: time of the local copy, s */
	bool link_latency; /* flows pay their link latency (p2p, and algorithms NCCL does not tune) */
} nccl_cost;

/* The cost terms of one collective call of `bytes` (workload_op.bytes) on a group of
 * shape s. alg is spsim's algorithm: ring for the ring family and direct for all-to-all
 * follow NCCL; pairwise and hierarchical (spsim's own compositions of NCCL calls) pay the
 * launch and their link latencies, with scale 1. Honours p->nccl.force_algo/force_proto
 * where they apply (nccl_force_check says where). */
nccl_cost nccl_cost_of(const config_platform *p, workload_coll c, workload_alg alg, engine_group_shape s,
		       double bytes);

/* Whether a forced algorithm/protocol (1 + enum, 0 = none) can run collective c on p;
 * false with a sentence in why (the flag, the valid choices) otherwise. */
bool nccl_force_check(const config_platform *p, workload_coll c, int force_algo, int force_proto, char *why,
		      size_t len);

/* Ring channels NCCL's graph search gives the platform (p->nccl.channels when set). */
int nccl_channels(const config_platform *p);

/* Channels NCCL launches for one call of `bytes` with the chosen pair on `ranks` ranks
 * (enqueue.cc's channel tuning: fewer channels for small messages; NVLS always 16; p2p:
 * the communicator's p2p channels, which its peers share). */
int nccl_launch_channels(const config_platform *p, nccl_algo a, nccl_proto pr, int ranks, double bytes);

/* The same for a group of shape s: a ring across nodes runs NCCL's network channels (one
 * ring per NIC, duplicated as NCCL's search and setup do: 16 on eight 400 Gb/s NICs of 8
 * H100s; docs/model.md §3), launched by the same channel tuning. */
int nccl_group_channels(const config_platform *p, nccl_algo a, nccl_proto pr, engine_group_shape s, double bytes);

/* NCCL's own model time (s) of every (algorithm, protocol) pair of a ring-family call on
 * NCCL's view of the links (what its tuner compares; the pair it picks is the smallest, the
 * first of equal ones, unless forced), < 0 for a pair it cannot run; returns how many it can
 * run (0 for a call outside the ring family). */
int nccl_tuner_times(const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
		     double time[NCCL_ALGO_P2P][NCCL_PROTO_COUNT]);

/* NCCL's predicted time (s) of a ring-family pair, its own model: latency + bytes / algbw,
 * with busbw_ring the physical ring bus bandwidth (bytes/s); < 0 when the pair is
 * disabled. Exposed for the tests of the crossovers. */
double nccl_model_time(const config_platform *p, workload_coll c, engine_group_shape s, double bytes,
		       double busbw_ring, nccl_algo a, nccl_proto pr, double *latency, double *algbw);

#endif
