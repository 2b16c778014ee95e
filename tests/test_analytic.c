/* analytic: collective closed forms, the max-plus schedule, and invariants of whole steps.
 * Hand platform (tests/testutil.h): NVSwitch 100 GB/s per GPU, 1 us; NICs 10 GB/s, 10 us;
 * efficiencies 1; 100 TFLOP/s; 1000 GB/s HBM. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/analytic.h"
#include "engine/nccl.h"
#include "engine/schedule.h"
#include "testutil.h"

static engine_group_shape shape(int P, int r, int active)
{
	return (engine_group_shape){.size = P, .per_node = r, .active_per_node = active};
}

/* The shipped dgx-h100 on `nodes` nodes, without NCCL's 6 us launch (the NCCL terms alone). */
static config_platform dgx_h100(int nodes)
{
	config_platform p;
	config_error e;
	ck_assert_msg(config_load_platform("dgx-h100", &p, &e), "%s", e.msg);
	p.nodes = nodes;
	p.coll_overhead = 0;
	return p;
}

START_TEST(alltoall_inside_a_node)
{
	/* P = 4 on one NVSwitch node, 4 MB buffer: 1 MB to each of 3 peers over the GPU's
	 * 100 GB/s link: 1 us + 3e6 / 100e9 = 31 us. */
	config_platform p = tu_platform(1, 4, 1);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 4e6), 31e-6,
			1e-12);
	/* pairwise: 3 rounds of 1 us + 1e6/100e9 = 33 us */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_PAIRWISE, shape(4, 4, 4), 4e6), 33e-6,
			1e-12);
}
END_TEST

START_TEST(alltoall_across_nodes_is_set_by_the_nic)
{
	/* P = 8 over 2 nodes of 4, 8 MB: 1 MB per peer; 3 local peers (30 us on NVLink),
	 * 4 remote peers. One NIC shared by 4 GPUs: 2.5 GB/s each -> 4e6 / 2.5e9 = 1.6 ms,
	 * plus the network latency 10 us and one network post per remote peer (NCCL's 1 us,
	 * engine/nccl.c p2p_message_latency): 4 us. */
	config_platform p = tu_platform(2, 4, 1);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 8e6),
			10e-6 + 4e-6 + 1.6e-3, 1e-12);
	/* One NIC per GPU: 4e6 / 10e9 = 400 us. */
	p.inter.nics_per_node = 4;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 8e6),
			10e-6 + 4e-6 + 400e-6, 1e-12);
	/* Pairwise with a NIC per GPU: round k sends to i + k and receives from i - k and
	 * ends when both are done. Rank 0 sends across nodes in rounds 4-7 and receives
	 * across in rounds 1-4, so all 7 rounds are remote: 7 x (10 us + 1e6 / 10e9) = 770 us,
	 * plus one network post per remote peer sent to (4 x 1 us) = 774 us. (Counting only
	 * the rounds whose send is remote gave 3 x 11 + 4 x 110 + 4 = 477 us; SimGrid, which
	 * runs the rounds flow by flow, gives the 774.) */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_PAIRWISE, shape(8, 4, 4), 8e6), 774e-6,
			1e-12);
	/* Efficiency scales the NIC: 0.5 -> 800 us. */
	p.eff.inter_link = 0.5;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 8e6),
			10e-6 + 4e-6 + 800e-6, 1e-12);
}
END_TEST

START_TEST(ring_collectives)
{
	/* Intra-node ring, P = 4, 4 MB: chunk 1 MB, 10 us per step on the wire; NCCL picks
	 * ring/Simple (baseLat 8.4 us + 1 us per step; LL128 would be 14 + 3 x 0.56 us +
	 * 4e6 / (92 GB/s x 4/3) = 48 us, the tree 145 us):
	 * all-gather / reduce-scatter: 8.4 + 3 + 30 = 41.4 us; all-reduce: 8.4 + 6 + 60 = 74.4 us. */
	config_platform p = tu_platform(1, 4, 1);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(4, 4, 4), 4e6), 41.4e-6,
			1e-12);
	ck_assert_close(engine_collective_time(&p, WL_COLL_REDUCESCATTER, WL_ALG_RING, shape(4, 4, 4), 4e6), 41.4e-6,
			1e-12);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(4, 4, 4), 4e6), 74.4e-6,
			1e-12);
	/* Across 2 nodes, P = 8, one NIC: the ring crosses the NIC once per node: 1 MB /
	 * 10 GB/s = 100 us per step on the wire, 14 steps; NCCL's latency 8.4 + 10 x 3 (network
	 * overhead) + 4 x 10 us = 78.4 us, x 1.4 (ring plateau): 1.4 ms + 109.76 us. */
	config_platform q = tu_platform(2, 4, 1);
	q.nccl.force_algo = NCCL_ALGO_RING + 1; /* the ring itself (NCCL picks its tree here: below) */
	ck_assert_close(engine_collective_time(&q, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 4, 4), 8e6), 1509.76e-6,
			1e-12);
	q.nccl.force_algo = 0;
	/* Two groups of 8 spanning the same nodes (4 per node each, 8 GPUs per node):
	 * their rings share the NIC -> 5 GB/s each: 200 us per step, 7 steps, plus
	 * 8.4 + 6 x 3 + 1 x 10 = 36.4 us. */
	config_platform r = tu_platform(2, 8, 1);
	ck_assert_close(engine_collective_time(&r, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 4, 8), 8e6),
			7 * 200e-6 + 36.4e-6, 1e-12);
}
END_TEST

START_TEST(ring_channel_exits_skip_nvlink)
{
	/* 2 nodes x 4 GPUs, 4 NICs of 100 GB/s: one ring channel per NIC, each leaving the
	 * node from a different GPU, a quarter of the chunk each. A GPU forwards inside the
	 * node the 3 channels it does not send out: 0.75 MB at 100 GB/s = 7.5 us; a NIC
	 * carries 0.25 MB = 2.5 us. All-gather of 8 MB: 7 x 7.5 us on the wire, plus NCCL's
	 * ring/Simple latency 36.4 us (8.4 + 6 x 3 + 10). */
	config_platform p = tu_platform(2, 4, 4);
	p.inter.nic_bandwidth = 100e9;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 4, 4), 8e6),
			7 * 7.5e-6 + 36.4e-6, 1e-12);
	/* (with four NICs NCCL's network channels do not bind: 4 rings at the search's 24 GB/s,
	 * under 25 so not duplicated, doubled to 8 channels of at most 20 GB/s = 160 GB/s,
	 * above the ring's 133 GB/s; ring_across_nodes_runs_nccl_network_channels)
	 * one NIC: the whole chunk leaves through it (10 us) and the GPUs forward it all:
	 * ring bus bandwidth 100 GB/s. NCCL now prefers LL128 (its model: 0.92 x 100 = 92 GB/s,
	 * under 5 channels x 20 GB/s), latency 14 + 6 x 1 (network overhead) + 4.0/14 x 10 us =
	 * 22.857 us, 8e6 / (92 GB/s x 8/7) = 76.09 us: 98.95 us < Simple's 36.4 + 70 us. Its
	 * network channels: one ring at the search's top speed 48 GB/s (the 100 GB/s port
	 * allows more), duplicated (compute capability 80) to 2, doubled to 4 channels of at
	 * most one NVLink, 20 GB/s: the ring runs at 80 of its 100 GB/s, LL128's 76.09 us x
	 * 100/80 = 95.11 us. */
	p.inter.nics_per_node = 1;
	nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 4, 4), 8e6);
	ck_assert_int_eq(k.proto, NCCL_PROTO_LL128);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 4, 4), 8e6),
			(14 + 6 + 4.0 / 14 * 10) * 1e-6 + 7 * 10e-6 / 0.92 * 100 / 80, 1e-12);
}
END_TEST

START_TEST(leaf_uplinks_carry_every_crossing_pair)
{
	/* 8 nodes of 2 GPUs, leaves of 2 nodes (4 ranks), 2:1 oversubscribed: uplink
	 * 2 x 2 x 10 GB/s / 2 = 20 GB/s. Groups of 6 ranks: [0-5] [6-11] [12-17]...; leaf 1
	 * = ranks 4-7 holds 2 of group 0 and 2 of group 1: 2·4 + 2·4 = 16 pairs; leaf 0 holds
	 * 4 of group 0: 4·2 = 8. 6 MB all-to-all: 1 MB per pair: 16e6 / 20e9 = 800 us, above
	 * the NIC term (4 remote peers x 1 MB over a 10 GB/s NIC per GPU = 400 us). */
	config_platform p = tu_platform(8, 2, 2);
	p.inter.topology = CONFIG_TOPO_FAT_TREE;
	p.inter.nodes_per_leaf = 2;
	p.inter.oversubscription = 2;
	workload_layout l = {.world = 12, .sp = 12, .group_size = 6}; /* two groups on 6 nodes */
	engine_group_shape s = engine_group_shape_of(&p, &l, WL_GROUP_SP);
	ck_assert_close(s.leaf_pairs, 16, 1e-12);
	/* + 4 remote peers x 1 us network posts (engine/nccl.c p2p_message_latency) */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, s, 6e6), 10e-6 + 4e-6 + 800e-6,
			1e-12);
}
END_TEST

START_TEST(mesh_uses_every_pair_link)
{
	/* NVLink mesh, 50 GB/s per pair, 4 GPUs. All-to-all: each of 3 peers over its own
	 * link, 1 MB at 50 GB/s = 20 us, but NCCL's p2p channels carry 3 peers x 2 channels
	 * x 20 GB/s = 120 of the 150 GB/s (tests/test_simgrid.c has the channel count):
	 * 1 us + 1.25 x 20 us = 26 us. Ring: K4 holds one Hamiltonian cycle usable both
	 * ways: 2 x 50 GB/s; all-gather 4 MB: 8.4 us + 3 x (1 us + 1e6/100e9). */
	config_platform p = tu_platform(1, 4, 1);
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.intra.pair_bandwidth = 50e9;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 4e6), 26e-6,
			1e-12);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(4, 4, 4), 4e6), 41.4e-6,
			1e-12);
	/* two GPUs: one pair link, 2 MB buffer: 1 MB at 50 GB/s; the one peer gets
	 * 4 channels (80 GB/s), more than its link */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(2, 2, 4), 2e6), 21e-6,
			1e-12);
}
END_TEST

START_TEST(nccl_protocol_switches_where_its_model_does)
{
	/* All-reduce on one node of 8 (hand platform: 100 GB/s, 1 us per Simple step,
	 * compute capability 80, 5 channels = 100 / 20 GB/s per NVLink). NCCL's model
	 * (src/graph/tuning.cc; hwLat scaled by 1 us / 3.4 us, the NVLink ring/Simple step):
	 *   ring LL     bus min(87.7, 100/4) = 25 GB/s, algbw 25 x 8/14 = 14.286 GB/s,
	 *               latency 6.6 + 14 x 0.6/3.4 = 9.0706 us
	 *   ring LL128  bus min(0.92 x 100, 5 x 20) = 92, algbw 52.571, latency 14 + 14 x 1.9/3.4
	 *               = 21.8235 us
	 *   ring Simple bus 100, algbw 57.143, latency 8.4 + 14 x 1 = 22.4 us
	 *   trees are never faster here (LL 12.1 GB/s, LL128 <= 35.8 x correction, Simple
	 *   latency 14 x 28/3.4 = 115 us).
	 * LL = LL128 at S1 = 12.753 us / (1/14.286 - 1/52.571) = 250.2 kB;
	 * LL128 = Simple at S2 = 0.5765 us / (1/52.571 - 1/57.143) = 378.8 kB. */
	config_platform p = tu_platform(1, 8, 1);
	engine_group_shape s = shape(8, 8, 8);
	double lat_ll = 6.6 + 14 * 0.6 / 3.4, lat_128 = 14 + 14 * 1.9 / 3.4, lat_s = 8.4 + 14;
	double bw_ll = 25e9 * 8 / 14, bw_128 = 92e9 * 8 / 14, bw_s = 100e9 * 8 / 14;
	double s1 = (lat_128 - lat_ll) * 1e-6 / (1 / bw_ll - 1 / bw_128);
	double s2 = (lat_s - lat_128) * 1e-6 / (1 / bw_128 - 1 / bw_s);
	ck_assert(fabs(s1 - 250.2e3) < 0.1e3 && fabs(s2 - 378.8e3) < 0.1e3);
	const struct {
		double bytes;
		nccl_proto proto;
		double lat, bw;
	} want[] = {{0.99 * s1, NCCL_PROTO_LL, lat_ll, bw_ll},
		    {1.01 * s1, NCCL_PROTO_LL128, lat_128, bw_128},
		    {0.99 * s2, NCCL_PROTO_LL128, lat_128, bw_128},
		    {1.01 * s2, NCCL_PROTO_SIMPLE, lat_s, bw_s}};
	for (int i = 0; i < 4; i++) {
		nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, want[i].bytes);
		ck_assert_int_eq(k.algo, NCCL_ALGO_RING);
		ck_assert_int_eq(k.proto, want[i].proto);
		/* the time: NCCL's latency plus the physical ring time x bandwidth ratio, which
		 * on this contention-free node is NCCL's own bytes / algbw */
		ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, want[i].bytes),
				want[i].lat * 1e-6 + want[i].bytes / want[i].bw, 1e-9);
	}
	/* NVLS (Hopper, NVSwitch with NVLink SHARP), at NCCL's own latencies (3.4 us step):
	 * ring LL 6.6 + 14 x 0.6 = 15 us at 14.286 GB/s, NVLS 23 us at 100 x 5/6 = 83.33 GB/s:
	 * NVLS from 8 us / (1/14.286 - 1/83.33) = 137.9 kB (LL128 and Simple start at 40.6 and
	 * 56 us). */
	p.nccl.compute_capability = 90;
	p.nccl.nvls = true;
	p.intra.latency = 3.4e-6;
	double s3 = 8e-6 / (14 / (25e9 * 8) - 6 / (100e9 * 5));
	ck_assert(fabs(s3 - 137.9e3) < 0.1e3);
	ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 0.99 * s3).algo, NCCL_ALGO_RING);
	nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1.01 * s3);
	ck_assert_int_eq(k.algo, NCCL_ALGO_NVLS);
	/* ... and runs it as one loop (139 kB < 16 channels x 8 heads x 16 KiB = 2 MiB) whose
	 * scatter, reduce and gather stages follow one another: 3 x bytes / algbw, where
	 * NCCL's model counts 1 (nvls_mid_sizes_pay_the_pipeline_fill) */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1.01 * s3),
			23e-6 + 3 * 1.01 * s3 / (100e9 * 5 / 6), 1e-9);
	/* forcing: --alg ring --proto Simple gives the ring's Simple time at any size */
	p.nccl.force_algo = NCCL_ALGO_RING + 1;
	p.nccl.force_proto = NCCL_PROTO_SIMPLE + 1;
	/* ... on the one channel NCCL launches for 1 kB (enqueue.cc channel tuning: 1e3 B <
	 * nc x 512 threads x 64 B down to nc = 1 of the 5): 5 x the wire time */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1e3), 56e-6 + 5 * 1e3 / bw_s,
			1e-9);
}
END_TEST

START_TEST(nccl_a100_mid_sizes_switch_from_ll128_to_simple)
{
	/* The 8 x A100 NVSwitch node of the fidelity corpus (platforms/dgx-a100.yaml: 300 GB/s
	 * x 0.77 = 231 GB/s ring bus bandwidth, 3.4 us NVLink Simple step, compute capability
	 * 80, lround(231 / 20) = 12 channels), without the launch overhead. NCCL's model
	 * (tuning.cc, NCCL 2.19):
	 *   ring LL128  bus min(0.92 x 231, 12 x 20 perChMaxRingLL128Bw) = 212.52 GB/s, algbw
	 *               x 8/14 = 121.44 GB/s, latency 14 + 14 x 1.9 = 40.6 us
	 *   ring Simple bus 231, algbw 132 GB/s, latency 8.4 + 14 x 3.4 = 56 us
	 * LL128 = Simple at 15.4 us / (1/121.44 - 1/132 GB/s) = 23.38 MB: the tuner runs LL128
	 * at 2-16 MiB and Simple from 32 MiB, so the 32 and 64 MiB points of a measured curve
	 * (Azure ND A100 v4: 442.3 and 704.8 us, docs/fidelity.md) run Simple, whose modelled
	 * times are 56 + 254.2 = 310.2 us and 56 + 508.4 = 564.4 us: the mid-size gap is there
	 * where no LL128 runs. LL128 is enabled (NVLink, one generation of 70/80/90) and not
	 * on compute capability 100, which NCCL 2.19 does not enable by default. */
	config_platform p = tu_platform(1, 8, 1);
	p.intra.bandwidth = 231e9;
	p.intra.latency = 3.4e-6;
	p.nccl.compute_capability = 80;
	engine_group_shape s = shape(8, 8, 8);
	ck_assert_int_eq(nccl_channels(&p), 12);
	double bw_128 = 212.52e9 * 8 / 14, bw_s = 231e9 * 8 / 14;
	double cross = 15.4e-6 / (1 / bw_128 - 1 / bw_s);
	ck_assert(fabs(cross - 23.38e6) < 0.01e6);
	double MiB = 1048576;
	for (double sz = 2 * MiB; sz <= 64 * MiB; sz *= 2) {
		nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, sz);
		bool simple = sz > cross;
		ck_assert_int_eq(k.algo, NCCL_ALGO_RING);
		ck_assert_int_eq(k.proto, simple ? NCCL_PROTO_SIMPLE : NCCL_PROTO_LL128);
		ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, sz),
				simple ? 56e-6 + sz / bw_s : 40.6e-6 + sz / bw_128, 1e-9);
	}
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 64 * MiB), 564.4e-6, 1e-6);
	/* Blackwell (100): NCCL 2.19's LL128 switch has no case for it, so 16 MiB runs Simple */
	p.nccl.compute_capability = 100;
	ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 16 * MiB).proto, NCCL_PROTO_SIMPLE);
}
END_TEST

START_TEST(nvls_mid_sizes_pay_the_pipeline_fill)
{
	/* One-node NVLS all-reduce (hand platform: 8 GPUs, 100 GB/s, compute capability 90,
	 * NVLink SHARP, NCCL's 3.4 us step, so NVLS is 23 us at algbw 100 x 5/6 = 83.33 GB/s).
	 * NCCL's kernel (src/device/all_reduce.h) pipelines scatter, reduce and gather over
	 * loops of 16 channels x 8 heads x chunk, the chunk set by src/enqueue.cc: 128 KiB,
	 * 64 KiB below 64 x 128 x 128 KiB = 1 GiB, 32 KiB below 8 x 128 x 64 KiB = 64 MiB,
	 * 16 KiB below 2 x 128 x 32 KiB = 8 MiB. n loops take n + 2 stage times, so the time is
	 * 23 us + bytes / algbw + 2 x min(bytes, loop) / algbw:
	 *   1 MiB:          one partial loop (2 MiB):      23 + 3 x 12.58 = 60.75 us
	 *   8 MiB - 1 kiB:  16 KiB chunks, loop 2 MiB:    + 2 x 25.17 us
	 *   8 MiB:          32 KiB chunks, loop 4 MiB:    + 2 x 50.33 us
	 *   64 MiB:         64 KiB chunks, loop 8 MiB;  1 GiB: 128 KiB chunks, loop 16 MiB.
	 * The fill is NCCL's kernel, not its tuner: the choice stays NVLS at every size. */
	config_platform p = tu_platform(1, 8, 1);
	p.nccl.compute_capability = 90;
	p.nccl.nvls = true;
	p.intra.latency = 3.4e-6;
	engine_group_shape s = shape(8, 8, 8);
	double MiB = 1048576, bw = 100e9 * 5 / 6;
	const struct {
		double bytes, loop;
	} want[] = {{1 * MiB, 2 * MiB},	 {8 * MiB - 1024, 2 * MiB}, {8 * MiB, 4 * MiB}, {64 * MiB - 1024, 4 * MiB},
		    {64 * MiB, 8 * MiB}, {1024 * MiB - 1024, 8 * MiB}, {1024 * MiB, 16 * MiB}};
	for (int i = 0; i < 7; i++) {
		double b = want[i].bytes;
		ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, b).algo, NCCL_ALGO_NVLS);
		ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, b),
				23e-6 + b / bw + 2 * fmin(b, want[i].loop) / bw, 1e-9);
	}
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, MiB), 60.75e-6, 1e-4);
	/* the fill belongs to one-node all-reduce (the kernel read): NVLS all-gather keeps
	 * NCCL's latency alone */
	p.nccl.force_algo = NCCL_ALGO_NVLS + 1;
	nccl_cost g = nccl_cost_of(&p, WL_COLL_ALLGATHER, WL_ALG_RING, s, 64 * MiB);
	ck_assert_int_eq(g.algo, NCCL_ALGO_NVLS);
	ck_assert_close(g.latency, 23e-6, 1e-9);
}
END_TEST

START_TEST(nccl_launches_fewer_channels_for_small_messages)
{
	/* enqueue.cc getAlgoInfo: while nBytes < nc x nThreads x threadThreshold NCCL drops a
	 * channel. Hand platform: 5 channels (100 / 20 GB/s). Ring/LL on 8 ranks: 512 threads
	 * x 8 B x 8 ranks = 32 KiB per channel: 64 KiB runs on 1 channel (64 KiB < 2 x 32 KiB
	 * is false: 2 channels), 1 MiB on all 5; ring/Simple 512 x 64 B = 32 KiB; LL128 640 x
	 * 8 B = 5 KiB; NVLS always 16. */
	config_platform p = tu_platform(1, 8, 1);
	double KiB = 1024;
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_RING, NCCL_PROTO_LL, 8, 64 * KiB), 2);
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_RING, NCCL_PROTO_LL, 8, 64 * KiB - 1), 1);
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_RING, NCCL_PROTO_LL, 8, 1024 * KiB), 5);
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, 96 * KiB), 3);
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_RING, NCCL_PROTO_LL128, 8, 12 * KiB), 2);
	ck_assert_int_eq(nccl_launch_channels(&p, NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE, 8, 1), 16);
	/* 64 KiB all-reduce (ring/LL below 250 kB, nccl_protocol_switches_where_its_model_does):
	 * latency 9.0706 us + 65536 B / (14.286 GB/s x 2/5 of the channels) = 20.54 us */
	double want = (6.6 + 14 * 0.6 / 3.4) * 1e-6 + 65536 / (25e9 * 8 / 14 * 2 / 5);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 8, 8), 65536), want, 1e-9);
}
END_TEST

START_TEST(transport_message_latency_on_every_network_hop)
{
	/* 2 nodes x 4 GPUs, ring/LL all-reduce forced (hand platform: 1 us NVLink step, 10 us
	 * network step). NCCL's latency (tuning.cc): 6.6 + (14 - 4) intra steps x max(0.6 x
	 * 1/3.4, 1 us network post overhead) + 4 inter steps x 2.7 x 10/14 = 6.6 + 10 + 7.714 =
	 * 24.31 us. A TCP transport of 50 us per message (inter_node.message_latency) replaces
	 * the 1.93 us LL network step: 6.6 + 10 + 4 x 50 = 216.6 us; Simple's 10 us step the
	 * same way (a transport below NCCL's step changes nothing: 1 us). */
	config_platform p = tu_platform(2, 4, 1);
	p.nccl.force_algo = NCCL_ALGO_RING + 1;
	p.nccl.force_proto = NCCL_PROTO_LL + 1;
	engine_group_shape s = shape(8, 4, 4);
	ck_assert_close(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1e3).latency,
			(6.6 + 10 + 4 * 2.7 * 10 / 14) * 1e-6, 1e-9);
	p.inter.message_latency = 50e-6;
	ck_assert_close(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1e3).latency, 216.6e-6, 1e-9);
	p.inter.message_latency = 1e-6;
	ck_assert_close(nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 1e3).latency,
			(6.6 + 10 + 4 * 2.7 * 10 / 14) * 1e-6, 1e-9);
	/* one node: no network hop, no transport cost */
	config_platform q = tu_platform(1, 8, 1);
	q.inter.message_latency = 50e-6;
	ck_assert(nccl_cost_of(&q, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 8, 8), 1e3).latency < 20e-6);
}
END_TEST

START_TEST(nvls_tree_across_nodes)
{
	/* 2 nodes x 4 GPUs (hand platform, 100 GB/s NVSwitch, 1 us step, 10 us network step),
	 * four 25 GB/s NICs per node, compute capability 90, NVLS declared. Ring bus bandwidth
	 * min(4 x 25, 100 / (3/4 forwarded)) = 100 GB/s. NVLS-tree (tuning.cc): bus min(node's
	 * 100, 16 x 20.6, network 100) = 100, algbw x 5/6 = 83.33 GB/s; latency 23 x 1/3.4 +
	 * 2 x log2(2) x 14 x 10/14 = 26.765 us. The ring gives 57.1 GB/s, the tree (LL128)
	 * min(100 x 120/128, 5 x 36.7) / 2 = 46.9: NVLS-tree from a few MB on.
	 * NVLS-tree's kernel pipelines loops of 16 channels x 4 heads x chunk (src/enqueue.cc
	 * NVLS_TREE branch: 512 KiB, 256 KiB below 32 x 64 x 512 KiB = 1 GiB, 128 KiB below
	 * 16 x 64 x 256 KiB = 256 MiB, 64 KiB below 4 x 64 x 128 KiB = 32 MiB, 32 KiB below
	 * 1 x 64 x 64 KiB = 4 MiB) through 2 log2(2) + 3 = 5 warp groups on a leaf channel
	 * (scatter, reduce, the root's reduce, broadcast, gather): n loops take n + 4 stage
	 * times (nvls_tree_pays_its_pipeline_fill). 1e9 B runs 256 KiB chunks, 16 MiB loops:
	 * 26.765 us + (1e9 + 4 x 16 MiB) / 83.33e9. */
	config_platform p = tu_platform(2, 4, 4);
	p.inter.nic_bandwidth = 25e9;
	p.nccl.compute_capability = 90;
	p.nccl.nvls = true;
	nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 4, 4), 1e9);
	ck_assert_int_eq(k.algo, NCCL_ALGO_NVLS);
	double lat = 23 / 3.4 + 2 * 14 * 10.0 / 14, MiB = 1048576;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 4, 4), 1e9),
			lat * 1e-6 + (1e9 + 4 * 16 * MiB) / (100e9 * 5 / 6), 1e-9);
	/* all-gather has no NVLS across nodes (it needs CollNet): the ring */
	ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 4, 4), 1e9).algo, NCCL_ALGO_RING);
	/* 4 nodes: the network side halves (bwInter / 2): 50 x 5/6 = 41.67 GB/s, below the
	 * ring's 100 x 16/30 = 53.3: the ring; forced, 2 log2(4) network hops, and a pipeline
	 * of 2 log2(4) + 3 = 7 groups over loops of 64 x 64 KiB = 4 MiB (the chunk capped at
	 * 64 KiB from 4 nodes): + 6 x 4 MiB / 41.67 GB/s */
	config_platform q = tu_platform(4, 4, 4);
	q.inter.nic_bandwidth = 25e9;
	q.nccl.compute_capability = 90;
	q.nccl.nvls = true;
	ck_assert_int_eq(nccl_cost_of(&q, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(16, 4, 4), 1e9).algo, NCCL_ALGO_RING);
	q.nccl.force_algo = NCCL_ALGO_NVLS + 1;
	ck_assert_close(engine_collective_time(&q, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(16, 4, 4), 1e9),
			(23 / 3.4 + 4 * 10) * 1e-6 + (1e9 + 6 * 4 * MiB) / (50e9 * 5 / 6), 1e-9);
}
END_TEST

START_TEST(nvls_tree_pays_its_pipeline_fill)
{
	/* Two 8-GPU H100 nodes as the Nebius case of the fidelity corpus (dgx-h100 x 2: eight
	 * 400 Gb/s NICs, NVLink SHARP), NVLS-tree at every size from 1 MiB. NCCL's model:
	 * latency 23 + 2 x 14 = 51 us (the platform's steps are NCCL's), algbw 16 x 20.6 x 5/6
	 * = 274.67 GB/s (the node's NVLS, below the network). The kernel (all_reduce.h,
	 * NCCL_ALGO_NVLS_TREE) runs loops of 16 channels x 8 heads x chunk through five warp
	 * groups on a leaf channel, so the time is 51 us + (bytes + 4 min(bytes, loop)) / algbw
	 * (NCCL's 6 us launch aside). Hand derivation, 64 MiB: concurrentOps 128; chunk 512 KiB
	 * -> 256 KiB (64 MiB < 32 x 128 x 512 KiB = 2 GiB) -> 128 KiB (< 16 x 128 x 256 KiB =
	 * 512 MiB); not below 4 x 128 x 128 KiB = 64 MiB, so 128 KiB: loop 16 MiB, four loops,
	 * 51 + (64 + 4 x 16) MiB / 274.67 GB/s = 51 + 488.66 = 539.66 us (NCCL's model alone
	 * 295.3 us; the measured run, 472.4 us). 1 MiB: 32 KiB chunks, a loop of 4 MiB larger
	 * than the call: 51 + 5 x 1 MiB / 274.67 GB/s = 70.09 us. */
	config_platform p = dgx_h100(2);
	engine_group_shape s = shape(16, 8, 8);
	double MiB = 1048576, bw = 16 * 20.6e9 * 5 / 6;
	const struct {
		double bytes, loop;
	} want[] = {{1 * MiB, 4 * MiB},	 {8 * MiB - 1024, 4 * MiB},  {8 * MiB, 8 * MiB},
		    {64 * MiB, 16 * MiB}, {512 * MiB, 32 * MiB}, {2048 * MiB, 64 * MiB}};
	for (int i = 0; i < 6; i++) {
		double b = want[i].bytes;
		nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, b);
		ck_assert_int_eq(k.algo, NCCL_ALGO_NVLS);
		ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, b),
				51e-6 + (b + 4 * fmin(b, want[i].loop)) / bw, 1e-9);
	}
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 64 * MiB), 539.66e-6, 1e-5);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, MiB), 70.09e-6, 1e-4);
}
END_TEST

START_TEST(ring_across_nodes_runs_nccl_network_channels)
{
	/* Four dgx-h100 nodes (8 H100, eight 400 Gb/s NICs each), all-gather on 32 ranks forced
	 * to ring/Simple. NCCL's channels across nodes (engine/nccl.c ring_net_channels): one
	 * ring per NIC at the highest sm90 search speed that both the 50 GB/s port and the
	 * GPU's NVLink over 8 rings (369 / 8 = 46.1 GB/s) carry, 45 GB/s; not duplicated
	 * (compute capability 90, under 50 GB/s, more than 4 rings); ncclTopoPostset doubles
	 * them: 16 channels, as NCCL issue 1453's three-node log lists. Each moves at most one
	 * NVLink's 20.6 GB/s, so the ring's bus bandwidth is min(NIC bound 8 x 50 x 0.94 = 376,
	 * 16 x 20.6 = 329.6) = 329.6 GB/s. Latency (NCCL 2.19's model, the platform's steps are
	 * NCCL's): 8.4 + 28 intra steps x max(3.4, 3 x 1) + 3 network steps x 14 = 145.6 us.
	 * 16 GiB: 145.6 us + 16 GiB x 31/32 / 329.6 GB/s = 50.61 ms (busbw 329.6 less the
	 * latency's share). */
	config_platform p = dgx_h100(4);
	p.nccl.force_proto = NCCL_PROTO_SIMPLE + 1;
	engine_group_shape s = shape(32, 8, 8);
	double B = 16.0 * 1073741824;
	double t8 = engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, s, B);
	ck_assert_close(t8, 145.6e-6 + B * 31 / 32 / 329.6e9, 1e-9);
	/* four NICs per node: 4 rings at 48 GB/s, duplicated (4 rings only) to 8 at 24 GB/s,
	 * doubled: 16 again (NCCL issue 1357's two-node log, 16 channels on four NICs). The
	 * channels' 329.6 GB/s is above the four NICs' 4 x 50 x 0.94 = 188: the NICs bound the
	 * ring, as without the channel term */
	p.inter.nics_per_node = 4;
	double t4 = engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, s, B);
	ck_assert_close(t4, 145.6e-6 + B * 31 / 32 / 188e9, 1e-9);
	ck_assert(t8 < t4); /* more NICs never slow the ring */
	/* channels set on the platform (NCCL_MIN_NCHANNELS, nccl.channels) are the ring's: 24
	 * CTAs x 20.6 = 494.4 GB/s leave the eight NICs' 376 binding (NCCL #309's cluster (b)
	 * reached 391.4 GB/s with NCCL_MIN_CTAS=24 where its default ran 320.7) */
	p.inter.nics_per_node = 8;
	p.nccl.channels = 24;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, s, B), 145.6e-6 + B * 31 / 32 / 376e9,
			1e-9);
	p.nccl.channels = 0;
	/* one node: no network channels; the NVSwitch ring at 450 x 0.82 = 369 GB/s, 18
	 * channels of 20.6 (370.8) do not bind */
	p.nodes = 1;
	p.inter.nics_per_node = 8;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, shape(8, 8, 8), B),
			(8.4 + 7 * 3.4) * 1e-6 + B * 7 / 8 / 369e9, 1e-9);
}
END_TEST

START_TEST(two_node_all_reduce_takes_the_tree)
{
	/* 2 nodes x 4 GPUs, one 10 GB/s NIC per node, 8 MB all-reduce (hand platform: 100 GB/s
	 * NVSwitch, 1 us step, 10 us network step, compute capability 80, 5 channels).
	 * Ring/Simple: 1509.76 us (ring_collectives). NCCL rates its trees on two nodes by
	 * bwIntra (tuning.cc), each node sending the buffer once over the network: tree bus
	 * bandwidth min(100, 2 x 10) = 20 GB/s.
	 *   tree/LL128: bus min(20 x .92 x 120/128, 5 x 20) = 17.25 GB/s, algbw x .5 = 8.625,
	 *     x treeCorrectionFactor[LL128][log2(8e6/64) = 16] .8 = 6.9 GB/s; latency 14 +
	 *     2 x (3 x 1.25/3.4 + 1 x 8.5 x 10/14) = 28.35 us: 28.35 + 8e6/6.9e9 = 1187.8 us
	 *   tree/Simple: algbw 20 x .92 x .5 x .7 = 6.44 GB/s, latency 2 x (3 x 28/3.4 + 28 x
	 *     10/14) = 89.4 us: 1331.6 us; tree/LL: 20 x .92 / 3.8 x .5 x .7 = 0.85 GB/s. */
	config_platform p = tu_platform(2, 4, 1);
	nccl_cost k = nccl_cost_of(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 4, 4), 8e6);
	ck_assert_int_eq(k.algo, NCCL_ALGO_TREE);
	ck_assert_int_eq(k.proto, NCCL_PROTO_LL128);
	double lat = 14 + 2 * (3 * 1.25 / 3.4 + 8.5 * 10.0 / 14);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(8, 4, 4), 8e6),
			lat * 1e-6 + 8e6 / (20e9 * .92 * 120 / 128 * .5 * .8), 1e-9);
	/* four nodes: a tree node moves a ring's bytes, NCCL uses bwInter: the ring again */
	config_platform q = tu_platform(4, 4, 1);
	ck_assert_int_eq(nccl_cost_of(&q, WL_COLL_ALLREDUCE, WL_ALG_RING, shape(16, 4, 4), 8e6).algo, NCCL_ALGO_RING);
}
END_TEST

START_TEST(one_rank_alltoall_is_a_launch_and_a_copy)
{
	/* A group of one still launches NCCL's kernel and copies its buffer to itself in HBM
	 * (read + write): 8 MB at 1000 GB/s x 1 (memory efficiency): 5 us + 2 x 8e6 / 1e12 =
	 * 21 us; SimGrid sleeps the same (engine/simgrid/collectives.c). */
	config_platform p = tu_platform(1, 1, 1);
	p.coll_overhead = 5e-6;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(1, 1, 1), 8e6), 21e-6, 1e-12);
	p.eff.memory = 0.5;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(1, 1, 1), 8e6), 37e-6, 1e-12);
	ck_assert(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(1, 1, 1), 0) == 0);
}
END_TEST

START_TEST(p2p_channels_slow_a_mesh_all_to_all)
{
	/* The all-to-all of a 4-GPU NVLink mesh (reference cluster: 80 GB/s per pair, 2 us)
	 * no longer runs at link rate: channels 2 x 80 / 20 = 8, p2p channels 8, per peer
	 * pow2Up(min(8, 2 x 4 links)) = 8 halved to 2 (2 x 4 ranks = 8); up to 512 KiB per
	 * peer 2 channels each: 3 x 2 x 20 = 120 GB/s for 240 GB/s of pair links (x 2);
	 * above, 4 per peer but 8 in all: 160 GB/s (x 1.5). An 8 MiB buffer (2 MiB per peer,
	 * 4 channels of 512 KiB): 2 us + 1.5 x 3 x 2 MiB / 240 GB/s = 41.3 us; a 1 MiB one:
	 * 2 us + 2 x 3 x 256 KiB / 240 GB/s = 8.55 us. */
	config_platform p = tu_platform(1, 4, 1);
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.intra.pair_bandwidth = 80e9;
	p.intra.latency = 2e-6;
	double MiB = 1048576;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 8 * MiB),
			2e-6 + 1.5 * 3 * 2 * MiB / 240e9, 1e-12);
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), MiB),
			2e-6 + 2 * 3 * 0.25 * MiB / 240e9, 1e-12);
	/* up to 16 KiB per peer NCCL's p2p runs LL: twice the bytes on the wire */
	ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 64e3).proto, NCCL_PROTO_LL);
	ck_assert_int_eq(nccl_cost_of(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 80e3).proto,
			 NCCL_PROTO_SIMPLE);
}
END_TEST

/* NCCL's p2p staging between processes (engine/nccl.c p2p_staging_drain): a Simple
 * transfer between two processes goes through the receiver's FIFO in 512 KiB chunks
 * (NCCL_P2P_NVL_CHUNKSIZE) and is copied twice; the local copy of the channels' last
 * chunks is left after the link's time: 2 x (last chunk x channels copying) / HBM
 * bandwidth. Hand platform: 1000 GB/s HBM at efficiency 1; NVSwitch 100 GB/s: ring
 * channels 5 (100 / 20 GB/s), p2p channels pow2Up(5) = 8, per peer pow2Up(min(2 x 5, 8))
 * = 8, nChannelsMin 8 halved while 8 x ranks > 8. */
START_TEST(p2p_staging_drain_between_processes)
{
	config_platform p = tu_platform(1, 4, 1);
	config_platform one = p; /* one process driving the node's GPUs: no staging */
	p.nccl.processes = CONFIG_NCCL_PROCS_PER_GPU;
	double MiB = 1048576;
	/* all-to-all of 4 MB on 4 GPUs: 1 us + 3e6 / 100e9 = 31 us of links (alltoall_inside_a_node);
	 * 1e6 per peer on 2 channels (nChannelsMin 2: 2 x 4 = 8), 500 kB each, one chunk;
	 * 3 peers x 2 = 6 channels copy their chunk at once: 2 x 6 x 500e3 / 1000e9 = 6 us */
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 4e6), 37e-6, 1e-12);
	ck_assert_close(engine_collective_time(&one, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 4e6), 31e-6, 1e-12);
	/* one peer, one chunk: send/recv of 256 KiB between 2 GPUs, nChannelsMin 4 (4 x 2 = 8),
	 * 64 KiB per channel: 2 x 256 KiB / 1000 GB/s */
	engine_group_shape two = shape(2, 2, 2);
	double d1 = engine_collective_time(&p, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 256 * 1024) -
		    engine_collective_time(&one, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 256 * 1024);
	ck_assert_close(d1, 2.0 * 256 * 1024 / 1000e9, 1e-9);
	/* one peer, many chunks: 64 MiB on 8 channels (doubled from 4 while a channel's part
	 * exceeds a chunk, up to the peer's 8), 8 MiB = 16 chunks each; only the last chunk of
	 * each of the 8 channels is left: 2 x 8 x 512 KiB / 1000 GB/s = 8.39 us */
	double d2 = engine_collective_time(&p, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 64 * MiB) -
		    engine_collective_time(&one, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 64 * MiB);
	ck_assert_close(d2, 2.0 * 8 * 512 * 1024 / 1000e9, 1e-9);
	/* the channels cap it: 16 MiB to each of 3 peers on 8 channels each, 24 parts on the
	 * GPU's 8 p2p channels: 8 last chunks of 512 KiB, the same 8.39 us */
	double d3 = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 64 * MiB) -
		    engine_collective_time(&one, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 4, 4), 64 * MiB);
	ck_assert_close(d3, 2.0 * 8 * 512 * 1024 / 1000e9, 1e-9);
	/* LL (up to 16 KiB per peer) writes its flags into the peer's buffer: no drain */
	ck_assert_double_eq(engine_collective_time(&p, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 8192),
			    engine_collective_time(&one, WL_COLL_SENDRECV, WL_ALG_DIRECT, two, 8192));
	/* a communicator across nodes stages every peer in NCCL_P2P_NET_CHUNKSIZE chunks (128 KiB,
	 * init.cc computeBuffSizes): 2 nodes of 4, 64 MiB, 8 MiB per peer on 8 channels (from 1,
	 * 8 x 8 ranks > 8), 1 MiB per channel; the 8 p2p channels' last 128 KiB chunks:
	 * 2 x 8 x 128 KiB / 1000 GB/s = 2.10 us */
	config_platform q = tu_platform(2, 4, 4), q1 = q;
	q.nccl.processes = CONFIG_NCCL_PROCS_PER_GPU;
	double d4 = engine_collective_time(&q, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 64 * MiB) -
		    engine_collective_time(&q1, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 64 * MiB);
	ck_assert_close(d4, 2.0 * 8 * 128 * 1024 / 1000e9, 1e-9);
	/* and a peer's channels double past that chunk, not the one-node 512 KiB (src/enqueue.cc
	 * addP2pToPlan: maxPartSize = p2pChunkSize when nNodes > 1): 4 MiB, 512 KiB per peer,
	 * from 1 channel to 2 (256 KiB) to 4 (128 KiB, not above the chunk); the 3 NVLink peers'
	 * 12 parts on the 8 p2p channels, each a last chunk of 128 KiB: 2 x 8 x 128 KiB /
	 * 1000 GB/s = 2.10 us. Doubling past 512 KiB kept the peer on 1 channel: 3 chunks,
	 * 0.79 us. */
	double d5 = engine_collective_time(&q, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 4 * MiB) -
		    engine_collective_time(&q1, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 4, 4), 4 * MiB);
	ck_assert_close(d5, 2.0 * 8 * 128 * 1024 / 1000e9, 1e-9);
	/* across nodes without a local peer (one GPU per node): no NVLink stage */
	config_platform n1 = tu_platform(2, 1, 1), n1p = n1;
	n1p.nccl.processes = CONFIG_NCCL_PROCS_PER_GPU;
	ck_assert_double_eq(engine_collective_time(&n1p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(2, 1, 1), 64 * MiB),
			    engine_collective_time(&n1, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(2, 1, 1), 64 * MiB));
}
END_TEST

START_TEST(p2p_staging_monotone_over_the_nccl_tests_sweep)
{
	/* dgx-h100, 8 GPUs, one process per GPU (its default): the all-to-all's time never
	 * falls from one size to the next of nccl-tests' -f 2 sweep, 1 KiB to 16 GiB, and is
	 * never below the one-process time. (Between those sizes a peer's channels double where
	 * its part per channel passes a chunk, and the drain halves with the chunk, as the
	 * bandwidth ramp already steps there.) */
	config_platform p = dgx_h100(1), one = p;
	ck_assert_int_eq(p.nccl.processes, CONFIG_NCCL_PROCS_PER_GPU);
	one.nccl.processes = CONFIG_NCCL_PROCS_PER_NODE;
	double prev = 0;
	for (double b = 1024; b <= 16.0 * 1073741824; b *= 2) {
		double t = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 8, 8), b);
		ck_assert_msg(t >= prev, "%.0f B: %g s after %g s", b, t, prev);
		ck_assert(t >= engine_collective_time(&one, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 8, 8), b));
		prev = t;
	}
	/* 32 MiB: 4 MiB per peer on 8 channels of 512 KiB, 56 parts on the 32 p2p channels; the
	 * 32 last chunks read and written at 0.8 x 3.35 TB/s: 12.52 us */
	double d = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 8, 8), 32 * 1048576.0) -
		   engine_collective_time(&one, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(8, 8, 8), 32 * 1048576.0);
	ck_assert_close(d, 2.0 * 32 * 524288 / (0.8 * 3350e9), 1e-9);
}
END_TEST

START_TEST(hierarchical_is_the_sum_of_its_phases)
{
	/* P = 8 = 2 nodes x 4, 4 NICs: reduce-scatter of the 8 MB in the node (chunk 2 MB,
	 * 3 x (1 + 20) us), all-reduce of 2 MB between the 2 nodes on each GPU's NIC
	 * (2 steps x (10 us + 1 MB / 10 GB/s)), all-gather in the node (3 x 21 us). */
	config_platform p = tu_platform(2, 4, 4);
	double want = 3 * 21e-6 + 2 * (10e-6 + 100e-6) + 3 * 21e-6;
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_HIERARCHICAL, shape(8, 4, 4), 8e6), want,
			1e-12);
}
END_TEST

START_TEST(hierarchical_alltoall_moves_the_same_inter_node_bytes)
{
	/* P = 16 over 2 nodes of 8, one NIC per GPU, 16 MB: direct sends 8 remote chunks of
	 * 1 MB per GPU over its NIC (800 us) and 7 local ones over NVLink in parallel;
	 * hierarchical first exchanges inside the node (1 + 7·2e6/100e9 = 141 us), then 8 MB
	 * between the two nodes per GPU (10 + 8e6/10e9 = 810 us), then inside again (141 us).
	 * Same NIC bytes: in alpha-beta terms the hierarchy only adds the NVLink phases. Each
	 * network message is posted by the GPU's proxy (1 us, tuning.cc getNetOverhead):
	 * direct posts 8 (8 us), hierarchical 1 (1 us); direct's 15 peers
	 * take 2 rounds of the 8 p2p channels (pow2Up(5)), a second 10 us network latency. */
	config_platform p = tu_platform(2, 8, 8);
	double direct = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(16, 8, 8), 16e6);
	double hier = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_HIERARCHICAL, shape(16, 8, 8), 16e6);
	ck_assert_close(direct, 2 * 10e-6 + 8e-6 + 800e-6, 1e-12);
	ck_assert_close(hier, 1e-6 + 2 * (1e-6 + 7 * 2e6 / 100e9) + 10e-6 + 8e6 / 10e9, 1e-12);
}
END_TEST

START_TEST(fat_tree_oversubscription_slows_cross_leaf_traffic)
{
	/* 4 nodes, 2 per leaf, 2:1 oversubscribed. A group over all 4 nodes sends 2/3 of its
	 * inter-node bytes beyond its leaf, at half rate: time x (2/3)·2 = 4/3. */
	config_platform p = tu_platform(4, 1, 1);
	/* the fixed terms: 10 us latency, 3 remote peers x 1 us network posts */
	double flat = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 1, 1), 4e6) - 13e-6;
	p.inter.topology = CONFIG_TOPO_FAT_TREE;
	p.inter.nodes_per_leaf = 2;
	p.inter.oversubscription = 2;
	double tree = engine_collective_time(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, shape(4, 1, 1), 4e6) - 13e-6;
	ck_assert_close(tree / flat, 4.0 / 3.0, 1e-9);
}
END_TEST

START_TEST(busbw_factors_follow_nccl_tests)
{
	ck_assert_close(engine_busbw_factor(WL_COLL_ALLREDUCE, 8), 2.0 * 7 / 8, 1e-15);
	ck_assert_close(engine_busbw_factor(WL_COLL_ALLGATHER, 8), 7.0 / 8, 1e-15);
	ck_assert_close(engine_busbw_factor(WL_COLL_REDUCESCATTER, 4), 3.0 / 4, 1e-15);
	ck_assert_close(engine_busbw_factor(WL_COLL_ALLTOALL, 2), 0.5, 1e-15);
	ck_assert_close(engine_busbw_factor(WL_COLL_SENDRECV, 2), 1.0, 1e-15);
}
END_TEST

START_TEST(compute_is_a_roofline)
{
	config_platform p = tu_platform(1, 1, 1);
	workload_op gemm = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_GEMM, .flops = 1e12};
	workload_op copy = {.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_MEMORY, .hbm_bytes = 1e9};
	ck_assert_close(engine_compute_time(&p, &gemm), 10e-3, 1e-12); /* 1e12 / 100e12 */
	ck_assert_close(engine_compute_time(&p, &copy), 1e-3, 1e-12);  /* 1e9 / 1000e9 */
	p.eff.gemm = 0.5;
	ck_assert_close(engine_compute_time(&p, &gemm), 20e-3, 1e-12);
}
END_TEST

/* A hand-built program: block "b" x3 of [A: main, 1 s] [Z: zero stream, 2 s, after A]. */
START_TEST(schedule_overlaps_streams)
{
	workload_op ops[2] = {
		{.name = "A", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN, .dep = -1},
		{.name = "Z", .kind = WL_OP_COMM, .cat = WL_CAT_ZERO_COMM, .stream = WL_STREAM_ZERO, .dep = 0},
	};
	workload_block blk = {.name = "b", .repeat = 3, .layer_first = 0, .layer_step = 1, .ops = ops, .n_ops = 2};
	workload_program prog = {.micro = &blk, .n_micro = 1, .grad_accum = 1};
	double d[2] = {1, 2}, *dur[1] = {d};
	engine_result r;
	config_error err;
	/* A ends at 1, 2, 3. Z: [1,3], [3,5], [5,7]. Step 7; compute 3, ZeRO 6 of which
	 * 7 - 3 = 4 exposed. */
	ck_assert(engine_schedule_run(&prog, dur, &r, NULL, NULL, &err));
	ck_assert_close(r.step_time, 7, 1e-15);
	ck_assert_close(r.breakdown.compute, 3, 1e-15);
	ck_assert_close(r.breakdown.zero_comm, 6, 1e-15);
	ck_assert_close(r.breakdown.zero_comm_exposed, 4, 1e-15);
	/* A barrier block after it waits for the zero stream: a 1 s op starts at 7. */
	workload_op o2 = {.name = "opt", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
			  .phase = WL_PHASE_STEP, .dep = -1};
	workload_block step = {.name = "opt", .repeat = 1, .barrier = true, .layer_first = -1, .ops = &o2, .n_ops = 1};
	prog.step = &step;
	prog.n_step = 1;
	double d2[1] = {1}, *dur2[2] = {d, d2};
	ck_assert(engine_schedule_run(&prog, dur2, &r, NULL, NULL, &err));
	ck_assert_close(r.step_time, 8, 1e-15);
	ck_assert_close(r.breakdown.optimizer, 1, 1e-15);
	/* A dependency on a later op of the same iteration is rejected. */
	ops[0].dep = 1;
	ck_assert(!engine_schedule_run(&prog, dur2, &r, NULL, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid dependency"));
}
END_TEST

START_TEST(schedule_prefetch_one_iteration_ahead)
{
	/* [G: prefetch 3 s, after C of the previous iteration] [C: main 2 s, after G].
	 * G0 [0,3], C0 [3,5]; G1 waits for C0: [5,8], C1 [8,10]; G2 [10,13], C2 [13,15]. */
	workload_op ops[2] = {
		{.name = "G", .kind = WL_OP_COMM, .cat = WL_CAT_ZERO_COMM, .stream = WL_STREAM_PREFETCH, .dep = 1,
		 .dep_iter = -1},
		{.name = "C", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN, .dep = 0},
	};
	workload_block blk = {.name = "b", .repeat = 3, .layer_first = 0, .layer_step = 1, .ops = ops, .n_ops = 2};
	workload_program prog = {.micro = &blk, .n_micro = 1, .grad_accum = 2};
	double d[2] = {3, 2}, *dur[1] = {d};
	engine_result r;
	config_error err;
	/* Second micro-step: G0 waits only for the stream (G2 ended 13): [13,16], C0 [16,18],
	 * G1 [18,21], C1 [21,23], G2 [23,26], C2 [26,28]. */
	ck_assert(engine_schedule_run(&prog, dur, &r, NULL, NULL, &err));
	ck_assert_close(r.step_time, 28, 1e-15);
}
END_TEST

/* Collects the end of every op instance, to check the extrapolation against unrolling. */
static void visit_max(void *ctx, const workload_block *b, int it, int micro, const workload_op *op, double s, double e)
{
	double *mx = ctx;
	if (e > *mx)
		*mx = e;
}

START_TEST(extrapolation_equals_unrolled_schedule)
{
	config_error err;
	config_model m;
	config_platform p;
	ck_assert_msg(config_load_model("llama-3.1-8b", &m, &err), "%s", err.msg);
	ck_assert_msg(config_load_platform("a100-2x4-ib400", &p, &err), "%s", err.msg);
	for (int z = 0; z <= 3; z++)
		for (int ov = -1; ov <= 1; ov++)
			for (int B = 1; B <= 8; B *= 2)
				for (int rc = 0; rc < 2; rc++) {
					config_job j = tu_job(B % 2 ? CONFIG_STRATEGY_ULYSSES : CONFIG_STRATEGY_BASP, 8, 8, B,
							      8192, z);
					j.zero_overlap = ov;
					j.grad_accum = 2;
					j.recompute = rc ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
					ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
					workload_plan plan;
					ck_assert(workload_plan_make(&m, &p, &j, &plan, &err));
					double **dur;
					ck_assert(engine_analytic_durations(&p, &plan, &dur, &err));
					engine_result fast, slow;
					double mx = 0;
					ck_assert(engine_schedule_run(&plan.program, dur, &fast, NULL, NULL, &err));
					ck_assert(engine_schedule_run(&plan.program, dur, &slow, visit_max, &mx, &err));
					ck_assert_close(fast.step_time, slow.step_time, 1e-9);
					ck_assert_close(mx, slow.step_time, 1e-12);
					engine_durations_free(dur, plan.program.n_micro + plan.program.n_step);
					workload_plan_finish(&plan);
				}
}
END_TEST

/* engine_analytic_durations keeps collective times across plans in a per-thread cache
 * that holds one platform byte for byte. Invariant: every duration it returns equals the
 * uncached engine_op_time on the platform passed, whatever platform came before; a
 * platform one field apart (network latency, launch overhead, NIC efficiency) gets its own
 * times, and the first platform's come back unchanged after it. */
typedef struct cached_case {
	config_model m;
	config_platform p;
	config_job j;
	workload_plan plan;
	double step; /* cached_step alone, set by collective_cache_is_per_thread */
} cached_case;

static void cached_case_make(cached_case *c, int nodes)
{
	config_error err;
	ck_assert(config_load_model("llama-3.2-1b", &c->m, &err));
	ck_assert(config_load_platform("dgx-h100", &c->p, &err));
	c->p.nodes = nodes;
	c->j = tu_job(CONFIG_STRATEGY_ULYSSES, 8 * nodes, 8 * nodes, 1, 16384, 3);
	ck_assert_msg(workload_check(&c->m, &c->p, &c->j, &err), "%s", err.msg);
	ck_assert(workload_plan_make(&c->m, &c->p, &c->j, &c->plan, &err));
}

/* Durations on p equal engine_op_time's, op for op; returns the sum of the comm ops'. */
static double durations_match_uncached(const config_platform *p, const workload_plan *plan)
{
	config_error err;
	double **dur;
	ck_assert(engine_analytic_durations(p, plan, &dur, &err));
	const workload_program *prog = &plan->program;
	double comm = 0;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		for (int j = 0; j < blk->n_ops; j++) {
			if (blk->ops[j].kind != WL_OP_COMM)
				continue;
			double t = engine_op_time(p, &plan->layout, &blk->ops[j]);
			ck_assert_msg(dur[b][j] == t, "%s: cached %.17g, uncached %.17g", blk->ops[j].name, dur[b][j], t);
			comm += t;
		}
	}
	engine_durations_free(dur, prog->n_micro + prog->n_step);
	return comm;
}

START_TEST(collective_cache_follows_every_platform_field)
{
	cached_case c;
	cached_case_make(&c, 2);
	double base = durations_match_uncached(&c.p, &c.plan);
	ck_assert(base > 0);
	config_platform q[3] = {c.p, c.p, c.p};
	q[0].inter.latency *= 2;     /* every inter-node hop slower */
	q[1].coll_overhead += 1e-6;  /* every call's launch */
	q[2].eff.inter_link *= 0.5;  /* every NIC byte */
	for (int i = 0; i < 3; i++) {
		double t = durations_match_uncached(&q[i], &c.plan);
		ck_assert_msg(t > base, "variant %d: comm %.17g, base %.17g", i, t, base);
		ck_assert(durations_match_uncached(&c.p, &c.plan) == base);
	}
	/* another node count: other shapes and NCCL choices, same plan shape checks */
	cached_case d;
	cached_case_make(&d, 4);
	durations_match_uncached(&d.p, &d.plan);
	ck_assert(durations_match_uncached(&c.p, &c.plan) == base);
	workload_plan_finish(&d.plan);
	workload_plan_finish(&c.plan);
}
END_TEST

/* The whole step of a case (ZeRO-3 with overlap: the link-sharing schedule). */
static double cached_step(const cached_case *c, const config_platform *p)
{
	config_error err;
	engine_input in = {.model = &c->m, .platform = p, .job = &c->j, .plan = &c->plan};
	engine_result r;
	ck_assert_msg(engine_find("analytic")->run(&in, &r, &err), "%s", err.msg);
	return r.step_time;
}

/* Threads each keep their own cache, and take turns with the schedule's buffers: two
 * threads alternating platforms one field apart always get their own platform's uncached
 * times, and the same step as one thread alone. */
static void *cached_worker(void *arg)
{
	cached_case *c = arg;
	config_platform q = c->p;
	q.inter.latency *= 3;
	for (int i = 0; i < 40; i++) {
		durations_match_uncached(i % 2 ? &q : &c->p, &c->plan);
		ck_assert(cached_step(c, &c->p) == c->step);
	}
	return NULL;
}

START_TEST(collective_cache_is_per_thread)
{
	cached_case c[2];
	cached_case_make(&c[0], 2);
	cached_case_make(&c[1], 2);
	c[1].p.coll_overhead += 2e-6;
	for (int i = 0; i < 2; i++)
		c[i].step = cached_step(&c[i], &c[i].p);
	ck_assert(c[1].step > c[0].step); /* every call's launch is 2 us longer */
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		ck_assert(pthread_create(&t[i], NULL, cached_worker, &c[i]) == 0);
	for (int i = 0; i < 2; i++)
		ck_assert(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < 2; i++)
		workload_plan_finish(&c[i].plan);
}
END_TEST

static engine_result run_job(const config_model *m, const config_platform *p, config_job j)
{
	config_error err;
	ck_assert_msg(workload_check(m, p, &j, &err), "%s", err.msg);
	workload_plan plan;
	ck_assert(workload_plan_make(m, p, &j, &plan, &err));
	engine_input in = {.model = m, .platform = p, .job = &j, .plan = &plan};
	engine_result r;
	ck_assert(engine_find("analytic")->run(&in, &r, &err));
	workload_plan_finish(&plan);
	return r;
}

/* The tiny platform on one node of 4 GPUs with a host link of 10 GB/s and 1 us and a host
 * DRAM of 100 GB/s (the optimizer-offload hand derivations). */
static config_platform offload_platform(void)
{
	config_platform p = tu_platform(1, 4, 1);
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 1e12;
	p.host.memory_bandwidth = 100e9;
	return p;
}

START_TEST(offload_optimizer_step_by_hand)
{
	/* ZeRO-1 on one node of W = 4 (tiny platform: HBM 1000 GB/s at efficiency 1), host
	 * link 10 GB/s with 1 us latency, host DRAM 100 GB/s. ZeRO-1's gradient copy follows
	 * the boundary's all-reduce and the step waits for every part of the optimizer block,
	 * so the step grows by exactly (shard = psi/4):
	 *   + gradient to the host   1e-6 + 4·shard / 10e9
	 *   + CPU Adam               28·shard·4 / 100e9   (the node's 4 shards at once)
	 *   + parameters back        1e-6 + 2·shard / 10e9
	 *   - fused Adam on the GPU  30·shard / 1000e9.
	 * ZeRO-3 (overlap on, its default) copies each layer's gradient shard on the ZeRO
	 * stream behind backward, three copies per reduction (the bf16 partition out to the
	 * host's accumulation buffer and back, then the fp32 copy: 2 + 2 + 4 = 8 bytes per
	 * parameter, program.c OFFLOAD_*): its step grows by at least the CPU step and the
	 * copy back less the GPU Adam, and by at most that plus every gradient copy. */
	config_model m = tu_model();
	config_platform p = offload_platform();
	const double shard = config_model_params(&m) / 4;
	const double d2h = 1e-6 + 4 * shard / 10e9, cpu = 28 * shard * 4 / 100e9, h2d = 1e-6 + 2 * shard / 10e9,
		     gpu = 30 * shard / 1000e9;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 4096, 1);
	engine_result none = run_job(&m, &p, j);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	engine_result cpu_r = run_job(&m, &p, j);
	ck_assert_close(cpu_r.step_time - none.step_time, d2h + cpu + h2d - gpu, 1e-9);
	ck_assert_close(cpu_r.breakdown.host_comm, d2h + h2d, 1e-9);
	ck_assert_close(cpu_r.breakdown.host_comm_exposed, d2h + h2d, 1e-9);
	ck_assert_close(cpu_r.breakdown.optimizer, cpu, 1e-9);
	j.zero_stage = 3;
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_NONE;
	none = run_job(&m, &p, j);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	cpu_r = run_job(&m, &p, j);
	double grow = cpu_r.step_time - none.step_time;
	ck_assert_msg(grow >= cpu + h2d - gpu - 1e-12, "%g < %g", grow, cpu + h2d - gpu);
	/* every gradient copy: three per reduction, one reduction per layer plus the head's and
	 * the embedding's, each with its latency (the latencies bound the count from above: at
	 * most 8 reductions, 24 copies) */
	ck_assert_msg(grow <= cpu + h2d - gpu + 24e-6 + 8 * shard / 10e9 + 1e-12, "%g", grow);
	/* the copies move 8 bytes per parameter of the shard (the layers', the head's and the
	 * embedding's shards add up to psi/4), each copy paying its latency */
	double copies = cpu_r.breakdown.host_comm - h2d - 8 * shard / 10e9;
	ck_assert_msg(copies >= 3e-6 - 1e-12 && copies <= 24e-6 + 1e-12, "%g", copies);
}
END_TEST

/* Bytes per step of the program's optimizer-offload gradient copies (host-copy ops named
 * opt_grad_*), out to the host (*_d2h) and back (*_h2d): the micro-step blocks count G
 * times, each block its repeat times. */
static void offload_grad_bytes(const workload_program *prog, double *d2h, double *h2d)
{
	*d2h = *h2d = 0;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		double times = (double)blk->repeat * (b < prog->n_micro ? prog->grad_accum : 1);
		for (int i = 0; i < blk->n_ops; i++) {
			const workload_op *o = &blk->ops[i];
			if (o->kernel != WL_KERNEL_HOST_COPY || strncmp(o->name, "opt_grad", 8) != 0)
				continue;
			size_t n = strlen(o->name);
			*(strcmp(o->name + n - 4, "_h2d") == 0 ? h2d : d2h) += times * o->bytes;
		}
	}
}

START_TEST(offload_optimizer_host_bytes_by_hand)
{
	/* What DeepSpeed moves over the host link per step for the gradients, per parameter
	 * of the shard s = psi/W (program.c OFFLOAD_*), G micro-steps, bf16 model:
	 * - ZeRO-3 (stage3.py partition_grads into the host's bf16 grad_partitions_flat_buffer):
	 *   micro-step 0 copies the partition out (2) and back (.to(device), 2); each later
	 *   micro-step brings the partial sum back (2) and sends the sum out (2); the boundary
	 *   adds the fp32 copy out (4). Out 2G + 4, back 2G: G = 1: 6 and 2; G = 4: 12 and 8;
	 *   with ZeRO overlap on or off alike (off, G = 4: the fp32 copy in the optimizer block).
	 * - ZeRO-2 (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu): G = 1: the fp32
	 *   copy, 4; G = 4: out 2(G-1) + 4, back 2(G-1), 4G = 16 in all, issued as 4 bytes of
	 *   opt_grad_d2h per micro-step (the link times a copy by its bytes in either
	 *   direction).
	 * - ZeRO-1: the fp32 copy after the boundary's all-reduce, 4, whatever G. */
	config_model m = tu_model();
	config_platform p = offload_platform();
	const double s = config_model_params(&m) / 4;
	static const struct {
		int z, G, overlap;
		double d2h, h2d; /* bytes per parameter of the shard, per step */
	} c[] = {{3, 1, 1, 6, 2}, {3, 4, 1, 12, 8}, {3, 1, 0, 6, 2}, {3, 4, 0, 12, 8},
		 {2, 1, 0, 4, 0}, {2, 4, 0, 16, 0}, {2, 4, 1, 16, 0}, {1, 4, 1, 4, 0}};
	for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
		config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 4096, c[k].z);
		j.grad_accum = c[k].G;
		j.zero_overlap = c[k].overlap;
		j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
		config_error err;
		ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
		workload_plan plan;
		ck_assert(workload_plan_make(&m, &p, &j, &plan, &err));
		double d2h, h2d;
		offload_grad_bytes(&plan.program, &d2h, &h2d);
		workload_plan_finish(&plan);
		ck_assert_msg(fabs(d2h - c[k].d2h * s) <= 1e-9 * s && fabs(h2d - c[k].h2d * s) <= 1e-9 * s,
			      "zero %d G %d overlap %d: out %.6g, back %.6g bytes per parameter, want %g and %g", c[k].z,
			      c[k].G, c[k].overlap, d2h / s, h2d / s, c[k].d2h, c[k].h2d);
	}
}
END_TEST

START_TEST(offload_optimizer_under_grad_accum_by_hand)
{
	/* ZeRO overlap off (every op on the main stream, in sequence: the step grows by the
	 * sum of what offload adds, the host link on the step's critical path), the platform
	 * of offload_optimizer_step_by_hand (link 10 GB/s, 1 us), shard s = psi/4, the tiny
	 * model's 2 layers: the backward reduces in 4 calls (2 layers, the head, the
	 * embedding), whose shards add up to s. What DeepSpeed copies to the host per step
	 * (offload_optimizer_host_bytes_by_hand, program.c OFFLOAD_*):
	 * - ZeRO-3, G = 4: the bf16 partition out and back after each call of each micro-step,
	 *   two copies: G·(2·4·1e-6 + (2 + 2)·s/10e9), and the fp32 copy once, at the boundary,
	 *   in the optimizer block: + 1e-6 + 4·s/10e9;
	 * - ZeRO-3, G = 1: three copies after each call (out, back, fp32):
	 *   3·4·1e-6 + (2 + 2 + 4)·s/10e9;
	 * - ZeRO-2, G = 4: 4·G bytes per parameter, issued as 4 bytes in each call of each
	 *   micro-step: G·(4·1e-6 + 4·s/10e9);
	 * each + CPU Adam 28·s·4/100e9 + the copy back 1e-6 + 2·s/10e9 - fused Adam 30·s/1000e9. */
	config_model m = tu_model();
	config_platform p = offload_platform();
	const double s = config_model_params(&m) / 4, G = 4;
	const double step = 28 * s * 4 / 100e9 + 1e-6 + 2 * s / 10e9 - 30 * s / 1000e9;
	const struct {
		int z, G;
		double copies;
	} c[] = {{3, 4, G * (8e-6 + 4 * s / 10e9) + 1e-6 + 4 * s / 10e9},
		 {3, 1, 12e-6 + 8 * s / 10e9},
		 {2, 4, G * (4e-6 + 4 * s / 10e9)}};
	for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
		config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 4096, c[k].z);
		j.grad_accum = c[k].G;
		j.zero_overlap = 0;
		engine_result none = run_job(&m, &p, j);
		j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
		engine_result cpu_r = run_job(&m, &p, j);
		ck_assert_msg(fabs(cpu_r.step_time - none.step_time - (c[k].copies + step)) <= 1e-9 * none.step_time,
			      "zero %d G %d: offload adds %.12g s, want %.12g s", c[k].z, c[k].G,
			      cpu_r.step_time - none.step_time, c[k].copies + step);
		ck_assert_close(cpu_r.breakdown.host_comm, c[k].copies + 1e-6 + 2 * s / 10e9, 1e-9);
	}
}
END_TEST

START_TEST(zero3_deepspeed_fetch_never_beats_layer_prefetch)
{
	/* Invariant: with the same bytes per call, less lookahead cannot hide more. DeepSpeed's
	 * per-submodule fetch (zero3_prefetch deepspeed) gathers the next layer's units one hook
	 * ahead (a window of at least the layer: prefetch_bucket = the layer's parameters, so
	 * the layer style's gather is one call too); the layer style gathers the whole next
	 * layer one layer ahead. Over SP, recompute, NICs and sequence lengths on a 2 x 4
	 * platform with a 4-layer, h = 1024 model, the DeepSpeed step is never shorter, and
	 * where the network is slow it is longer (the GEMM of each hook waits for its own
	 * window, not the layer's). */
	config_model m = tu_model();
	m.layers = 4, m.hidden = 1024, m.heads = 8, m.kv_heads = 8, m.head_dim = 128, m.ffn = 4096, m.vocab = 1000;
	int points = 0, slower = 0;
	for (int nics = 1; nics <= 4; nics *= 4)
		for (int sp = 1; sp <= 4; sp *= 4)
			for (int rc = 0; rc < 2; rc++)
				for (long S = 1024; S <= 8192; S *= 8) {
					config_platform p = tu_platform(2, 4, nics);
					config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 8, sp, 1, S, 3);
					j.recompute = rc ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
					j.prefetch_bucket_elems = config_model_layer_params(&m);
					j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
					double layer = run_job(&m, &p, j).step_time;
					j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_DEEPSPEED;
					double ds = run_job(&m, &p, j).step_time;
					ck_assert_msg(ds >= layer * (1 - 1e-9), "nics %d sp %d recompute %d S %ld: deepspeed %.9g < layer %.9g",
						      nics, sp, rc, S, ds, layer);
					slower += ds > 1.01 * layer;
					points++;
				}
	ck_assert_int_eq(points, 16);
	ck_assert_int_gt(slower, 0);
}
END_TEST

START_TEST(breakdown_conserves_step_time)
{
	/* The main stream runs compute and SP all-to-alls back to back; ZeRO exposure is
	 * the rest: compute + sp_exposed + zero_exposed = step, and exposed <= total. */
	config_error err;
	config_model m;
	config_platform p;
	ck_assert(config_load_model("llama-3.2-1b", &m, &err));
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	p.nodes = 2;
	for (int z = 0; z <= 3; z++)
		for (int B = 1; B <= 4; B *= 2) {
			engine_result r = run_job(&m, &p, tu_job(CONFIG_STRATEGY_BASP, 16, 16, B, 16384, z));
			const engine_breakdown *b = &r.breakdown;
			ck_assert_close(b->compute + b->sp_comm_exposed + b->zero_comm_exposed, r.step_time, 1e-9);
			ck_assert(b->zero_comm_exposed <= b->zero_comm * (1 + 1e-9) + 1e-12);
			ck_assert_close(b->gemm + b->attention + b->memory_bound + b->optimizer, b->compute, 1e-9);
			ck_assert(r.mfu > 0 && r.mfu < 1);
		}
}
END_TEST

START_TEST(faster_network_never_slows_a_step)
{
	config_error err;
	config_model m;
	config_platform p;
	ck_assert(config_load_model("llama-3.1-8b", &m, &err));
	ck_assert(config_load_platform("a100-2x4-ib400", &p, &err));
	double prev = INFINITY;
	for (double gbps = 100; gbps <= 1600; gbps *= 2) {
		p.inter.nic_bandwidth = gbps * 1e9 / 8;
		engine_result r = run_job(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 2, 16384, 3));
		ck_assert(r.step_time <= prev);
		prev = r.step_time;
	}
	/* and longer sequences always take longer */
	prev = 0;
	for (long S = 2048; S <= 65536; S *= 2) {
		engine_result r = run_job(&m, &p, tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, S, 3));
		ck_assert(r.step_time > prev);
		prev = r.step_time;
	}
}
END_TEST

START_TEST(tokens_per_second_counts_every_replica)
{
	/* W = 16, N = 8: two SP domains x B = 2 sequences x 4096 tokens x grad_accum 3 per
	 * step. */
	config_error err;
	config_model m;
	config_platform p;
	ck_assert(config_load_model("llama-3.2-1b", &m, &err));
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	p.nodes = 2;
	config_job j = tu_job(CONFIG_STRATEGY_BASP, 16, 8, 2, 4096, 1);
	j.grad_accum = 3;
	engine_result r = run_job(&m, &p, j);
	ck_assert_close(r.tokens_per_s * r.step_time, 2.0 * 2 * 4096 * 3, 1e-12);
}
END_TEST

START_TEST(analytic_trace_is_valid_json)
{
	config_error err;
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 3);
	ck_assert(workload_check(&m, &p, &j, &err));
	workload_plan plan;
	ck_assert(workload_plan_make(&m, &p, &j, &plan, &err));
	char path[] = "/tmp/spsim-trace-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	engine_input in = {.model = &m, .platform = &p, .job = &j, .plan = &plan, .opt = {.trace_path = path}};
	engine_result r, plain;
	ck_assert_msg(engine_find("analytic")->run(&in, &r, &err), "%s", err.msg);
	in.opt.trace_path = NULL;
	ck_assert(engine_find("analytic")->run(&in, &plain, &err));
	ck_assert_close(r.step_time, plain.step_time, 1e-12); /* tracing does not change the result */
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	ck_assert_msg(root != NULL, "trace is not JSON: %s", je.text);
	json_t *ev = json_object_get(root, "traceEvents");
	ck_assert(json_is_array(ev));
	/* every slice of the last op ends at the step time */
	double last = 0;
	int slices = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
			continue;
		slices++;
		double end = json_number_value(json_object_get(e, "ts")) + json_number_value(json_object_get(e, "dur"));
		if (end > last)
			last = end;
	}
	ck_assert_close(last, r.step_time * 1e6, 1e-9);
	ck_assert_int_gt(slices, 8 * m.layers);
	json_decref(root);
	unlink(path);
	workload_plan_finish(&plan);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("analytic");
	TCase *tc = tcase_create("analytic");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, alltoall_inside_a_node);
	tcase_add_test(tc, alltoall_across_nodes_is_set_by_the_nic);
	tcase_add_test(tc, ring_collectives);
	tcase_add_test(tc, mesh_uses_every_pair_link);
	tcase_add_test(tc, nccl_protocol_switches_where_its_model_does);
	tcase_add_test(tc, nccl_a100_mid_sizes_switch_from_ll128_to_simple);
	tcase_add_test(tc, nccl_launches_fewer_channels_for_small_messages);
	tcase_add_test(tc, nvls_mid_sizes_pay_the_pipeline_fill);
	tcase_add_test(tc, ring_across_nodes_runs_nccl_network_channels);
	tcase_add_test(tc, two_node_all_reduce_takes_the_tree);
	tcase_add_test(tc, nvls_tree_across_nodes);
	tcase_add_test(tc, nvls_tree_pays_its_pipeline_fill);
	tcase_add_test(tc, transport_message_latency_on_every_network_hop);
	tcase_add_test(tc, one_rank_alltoall_is_a_launch_and_a_copy);
	tcase_add_test(tc, p2p_channels_slow_a_mesh_all_to_all);
	tcase_add_test(tc, p2p_staging_drain_between_processes);
	tcase_add_test(tc, p2p_staging_monotone_over_the_nccl_tests_sweep);
	tcase_add_test(tc, ring_channel_exits_skip_nvlink);
	tcase_add_test(tc, leaf_uplinks_carry_every_crossing_pair);
	tcase_add_test(tc, hierarchical_is_the_sum_of_its_phases);
	tcase_add_test(tc, fat_tree_oversubscription_slows_cross_leaf_traffic);
	tcase_add_test(tc, hierarchical_alltoall_moves_the_same_inter_node_bytes);
	tcase_add_test(tc, busbw_factors_follow_nccl_tests);
	tcase_add_test(tc, compute_is_a_roofline);
	tcase_add_test(tc, schedule_overlaps_streams);
	tcase_add_test(tc, schedule_prefetch_one_iteration_ahead);
	tcase_add_test(tc, extrapolation_equals_unrolled_schedule);
	tcase_add_test(tc, breakdown_conserves_step_time);
	tcase_add_test(tc, faster_network_never_slows_a_step);
	tcase_add_test(tc, zero3_deepspeed_fetch_never_beats_layer_prefetch);
	tcase_add_test(tc, tokens_per_second_counts_every_replica);
	tcase_add_test(tc, offload_optimizer_step_by_hand);
	tcase_add_test(tc, offload_optimizer_host_bytes_by_hand);
	tcase_add_test(tc, offload_optimizer_under_grad_accum_by_hand);
	tcase_add_test(tc, analytic_trace_is_valid_json);
	tcase_add_test(tc, collective_cache_follows_every_platform_field);
	tcase_add_test(tc, collective_cache_is_per_thread);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
