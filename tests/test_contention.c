/* contention: the analytic engine's shared links (engine/linkload.c, the fluid schedule in
 * engine/schedule.c). A hand-derived two-stream case, the link bound as a property over a
 * randomized grid, and agreement with the SimGrid engine where streams compete. */
#include <stdlib.h>

#include "engine/analytic.h"
#include "engine/nccl.h"
#include "engine/schedule.h"
#include "testutil.h"

/* Two communication ops that start together on two streams, da and db seconds alone. */
static void two_streams_for(const engine_op_load *la, const engine_op_load *lb, double da, double db, engine_result *r)
{
	workload_op ops[2] = {
		{.name = "A", .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM, .stream = WL_STREAM_MAIN, .dep = -1},
		{.name = "B", .kind = WL_OP_COMM, .cat = WL_CAT_ZERO_COMM, .stream = WL_STREAM_ZERO, .dep = -1},
	};
	workload_block blk = {.name = "b", .repeat = 1, .layer_first = -1, .ops = ops, .n_ops = 2};
	workload_program prog = {.micro = &blk, .n_micro = 1, .grad_accum = 1};
	double d[2] = {da, db}, *dur[1] = {d};
	engine_op_load l[2] = {*la, *lb}, *load[1] = {l};
	config_error err;
	ck_assert(engine_schedule_run_shared(&prog, dur, load, r, NULL, NULL, &err));
}

/* Each 1 s alone. */
static void two_streams(const engine_op_load *la, const engine_op_load *lb, engine_result *r)
{
	two_streams_for(la, lb, 1, 1, r);
}

START_TEST(two_streams_share_a_nic_by_flows)
{
	engine_result r;
	/* A: 16 flows on the NIC, B: 1 flow, each keeps the NIC busy its whole second alone.
	 * Max-min over the 17 flows: A runs at 16/17, B at 1/17, until A ends at 17/16 =
	 * 1.0625 s; B has done 1/16 of its work and finishes the rest alone: 1.0625 + 15/16
	 * = 2 s, the NIC's total busy time (sharing wastes nothing). */
	engine_op_load a = {.n = 1, .res = {ENGINE_LINK_NIC}, .busy = {1}, .flows = {16}};
	engine_op_load b = {.n = 1, .res = {ENGINE_LINK_NIC}, .busy = {1}, .flows = {1}};
	two_streams(&a, &b, &r);
	ck_assert_close(r.breakdown.sp_comm, 17.0 / 16, 1e-12);
	ck_assert_close(r.breakdown.zero_comm, 2, 1e-12);
	ck_assert_close(r.step_time, 2, 1e-12);
	/* Equal flows: each gets half, both end at 2 s. */
	b.flows[0] = 16;
	two_streams(&a, &b, &r);
	ck_assert_close(r.breakdown.sp_comm, 2, 1e-12);
	ck_assert_close(r.breakdown.zero_comm, 2, 1e-12);
	/* B busies the NIC for half its duration (latency the rest). Per-flow shares of the
	 * NIC: A's 16 flows get x_A/16 each, B's x_B·0.5/16; equal shares give x_B = 2·x_A,
	 * and a full NIC x_A + 0.5·x_B = 1, so x_A = 0.5 and x_B = 1: B ends at 1 s, A has
	 * done half and finishes alone at 1.5 s. */
	b.busy[0] = 0.5;
	two_streams(&a, &b, &r);
	ck_assert_close(r.breakdown.zero_comm, 1, 1e-12);
	ck_assert_close(r.breakdown.sp_comm, 1.5, 1e-12);
	ck_assert_close(r.step_time, 1.5, 1e-12);
	/* Different links: no sharing, both end at 1 s (the max-plus schedule). */
	b = (engine_op_load){.n = 1, .res = {ENGINE_LINK_PORT}, .busy = {1}, .flows = {1}};
	two_streams(&a, &b, &r);
	ck_assert_close(r.step_time, 1, 1e-12);
	/* An op never runs faster than its busiest link alone: busy 3 s beats a 1 s duration. */
	a.busy[0] = 3;
	two_streams(&a, &b, &r);
	ck_assert_close(r.breakdown.sp_comm, 3, 1e-12);
}
END_TEST

/* The NIC bound derived from the op program alone: every communication op's bytes that
 * must cross the sending GPU's NIC, over the NIC's bandwidth.
 *  - all-to-all direct over P ranks, r per node: a GPU sends bytes/P to each of its P - r
 *    remote peers; the ceil(G/nics) GPUs bound to a NIC all do, so the NIC carries
 *    ceil(G/nics)·(P - r)·bytes/P;
 *  - ring all-gather / reduce-scatter (P - 1 steps) and all-reduce (2(P - 1)) over the
 *    world spanning nodes: every step moves bytes/P across each node boundary, split over
 *    C = min(nics, G) channels that leave through different NICs: steps·bytes/(P·C) per NIC;
 *  - except an all-reduce over exactly two nodes that NCCL's model runs as a tree (or
 *    NVLS-tree): each node roots one of the two trees and is a leaf of the other, so the
 *    buffer crosses the boundary once per direction: bytes/C per NIC.
 *  - ring attention's send/recv: each ring that spans nodes leaves every node it has ranks
 *    on once, from the last of them, so a NIC carries the whole message once per exit
 *    bound to it.
 * Summed over every instance (repeat, and grad_accum for micro-step blocks). */
static double nic_bound(const config_platform *p, const workload_plan *plan)
{
	const workload_program *prog = &plan->program;
	const int G = p->gpus_per_node, nics = p->inter.nics_per_node;
	const double bw = p->inter.nic_bandwidth * p->eff.inter_link;
	double bytes = 0;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		double times = blk->repeat * (b < prog->n_micro ? prog->grad_accum : 1);
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			if (op->kind != WL_OP_COMM)
				continue;
			const workload_layout *l = &plan->layout;
			if (op->coll == WL_COLL_SENDRECV && l->ring > 1) {
				/* ring attention: rings of R ranks `stride` apart; one that spans
				 * nodes (R x stride > G) has G/stride of its ranks on a node (1 when
				 * stride >= G) and leaves the node from the last of them, so a node
				 * is left once by each of its G / per-node rings, those exits spread
				 * over the NICs */
				int st = l->ring_stride > 1 ? l->ring_stride : 1;
				if ((long)l->ring * st <= G)
					continue;
				int per_node = st >= G ? 1 : G / st, exits = G / per_node;
				bytes += times * ((exits + nics - 1) / nics) * op->bytes;
				continue;
			}
			int P = op->group == WL_GROUP_WORLD ? plan->layout.world
				: op->group_size > 0       ? op->group_size
							   : plan->layout.group_size;
			if (P <= G)
				continue; /* inside a node */
			if (op->coll == WL_COLL_ALLTOALL && op->alg == WL_ALG_DIRECT) {
				int per_nic = (G + nics - 1) / nics;
				bytes += times * per_nic * (double)(P - G) * op->bytes / P;
			} else if (op->alg == WL_ALG_RING && (op->coll == WL_COLL_ALLGATHER ||
							      op->coll == WL_COLL_REDUCESCATTER ||
							      op->coll == WL_COLL_ALLREDUCE)) {
				int steps = op->coll == WL_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1;
				int C = nics < G ? nics : G;
				if (op->coll == WL_COLL_ALLREDUCE && P == 2 * G) {
					engine_group_shape sh = {.size = P, .per_node = G, .active_per_node = G};
					nccl_algo a = nccl_cost_of(p, op->coll, op->alg, sh,
								   op->bytes / (op->chunks > 1 ? op->chunks : 1))
							  .algo;
					if (a == NCCL_ALGO_TREE || a == NCCL_ALGO_NVLS) {
						bytes += times * op->bytes / C;
						continue;
					}
				}
				bytes += times * steps * op->bytes / P / C;
			}
		}
	}
	return bytes / bw;
}

START_TEST(no_step_below_the_nic_bound)
{
	static const char *const models[] = {"llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen1.5-7b"};
	static const char *const platforms[] = {"a100-2x4-ib400", "dgx-a100", "dgx-h100", "a100-pcie"};
	config_model m[4];
	config_platform pl[4];
	config_error err;
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(config_load_model(models[i], &m[i], &err), "%s", err.msg);
		ck_assert_msg(config_load_platform(platforms[i], &pl[i], &err), "%s", err.msg);
	}
	srand(12345);
	int checked = 0, shared = 0, rings = 0;
	for (int trial = 0; trial < 400; trial++) {
		const config_model *mm = &m[rand() % 4];
		config_platform p = pl[rand() % 4];
		p.nodes = 1 << (rand() % 3);       /* 1, 2, 4 nodes */
		p.inter.nic_bandwidth *= 0.25 * (1 + rand() % 8); /* slow to fast networks */
		config_job job;
		config_job_defaults(&job);
		static const char *const strategies[] = {"ulysses", "basp", "ring", "usp", "basp:inner=ring"};
		ck_assert(config_strategy_parse(strategies[rand() % 5], &job, NULL, &err));
		job.micro_batch = 1 << (rand() % 4);
		job.seq_len = 4096L << (rand() % 4);
		job.zero_stage = 2 + rand() % 2;
		job.zero_overlap = 1; /* gathers, reductions and all-to-alls on three streams */
		job.grad_accum = 1 + rand() % 2;
		job.recompute = rand() % 2 ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
		if (!workload_check(mm, &p, &job, &err))
			continue;
		workload_plan plan;
		ck_assert_msg(workload_plan_make(mm, &p, &job, &plan, &err), "%s", err.msg);
		engine_input in = {.model = mm, .platform = &p, .job = &job, .plan = &plan};
		engine_result r;
		ck_assert_msg(engine_analytic.run(&in, &r, &err), "%s", err.msg);
		double bound = nic_bound(&p, &plan);
		rings += plan.layout.ring > 1 && p.nodes > 1;
		ck_assert_msg(r.step_time >= bound * (1 - 1e-9), "%s on %s x%d: step %.6g s below the NIC bound %.6g s",
			      mm->name, p.name, p.nodes, r.step_time, bound);
		/* and the max-plus schedule, which ignores sharing, is never slower */
		double **dur;
		engine_result r0;
		ck_assert(engine_analytic_durations(&p, &plan, &dur, &err));
		ck_assert(engine_schedule_run(&plan.program, dur, &r0, NULL, NULL, &err));
		engine_durations_free(dur, plan.program.n_micro + plan.program.n_step);
		ck_assert_msg(r.step_time >= r0.step_time * (1 - 1e-9), "sharing made a step shorter: %.9g < %.9g",
			      r.step_time, r0.step_time);
		shared += r.step_time > r0.step_time * (1 + 1e-6);
		workload_plan_finish(&plan);
		checked++;
	}
	ck_assert_int_gt(checked, 100);
	ck_assert_int_gt(shared, 10); /* the grid does exercise sharing */
	ck_assert_int_gt(rings, 20);  /* and ring attention across nodes */
}
END_TEST

/* Skipping iterations in closed form equals running every one (the trace visits every op
 * instance, which turns skipping off). */
static void visit_none(void *ctx, const workload_block *blk, int it, int micro, const workload_op *op, double s,
		       double e)
{
	(void)blk, (void)it, (void)micro, (void)op, (void)s;
	double *last = ctx;
	if (e > *last)
		*last = e;
}

START_TEST(skipping_equals_the_full_fluid_schedule)
{
	/* Llama-3.1-70B on one NIC per 4 GPUs: its reduce-scatters fall behind the backward
	 * pass and queue up (the saturated-queue case of the skipping). */
	static const char *const models[] = {"llama-3.1-8b", "llama-3.1-70b"};
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("a100-2x4-ib400", &p, &err));
	for (int mi = 0; mi < 2; mi++)
	for (int st = 0; st < 2; st++)
		for (int B = 1; B <= 4; B *= 2)
			for (long S = 4096; S <= 32768; S *= 2) {
				config_model m;
				ck_assert(config_load_model(models[mi], &m, &err));
				config_job job;
				config_job_defaults(&job);
				job.strategy = st ? CONFIG_STRATEGY_BASP : CONFIG_STRATEGY_ULYSSES;
				job.micro_batch = B;
				job.seq_len = S;
				job.zero_stage = 3;
				job.grad_accum = B == 2 ? 5 : 1; /* micro-steps skipped in closed form too */
				if (!workload_check(&m, &p, &job, &err))
					continue;
				workload_plan plan;
				ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
				double **dur;
				engine_op_load **ld;
				ck_assert(engine_analytic_durations(&p, &plan, &dur, &err));
				ck_assert(engine_analytic_loads(&p, &plan, &ld, &err));
				engine_result fast, slow;
				double last = 0;
				ck_assert(engine_schedule_run_shared(&plan.program, dur, ld, &fast, NULL, NULL, &err));
				ck_assert(engine_schedule_run_shared(&plan.program, dur, ld, &slow, visit_none, &last, &err));
				ck_assert_msg(fabs(fast.step_time / slow.step_time - 1) <= 1e-9,
					      "%s %s B=%d S=%ld: skipping %.12g, every iteration %.12g", m.name,
					      st ? "basp" : "ulysses", B, S, fast.step_time, slow.step_time);
				ck_assert_close(last, slow.step_time, 1e-12);
				ck_assert_close(fast.breakdown.sp_comm, slow.breakdown.sp_comm, 1e-9);
				ck_assert_close(fast.breakdown.zero_comm, slow.breakdown.zero_comm, 1e-9);
				ck_assert_close(fast.fwd_time, slow.fwd_time, 1e-9);
				ck_assert_close(fast.bwd_time, slow.bwd_time, 1e-9);
				free(ld);
				engine_durations_free(dur, plan.program.n_micro + plan.program.n_step);
				workload_plan_finish(&plan);
			}
}
END_TEST

/* Engine agreement where streams compete for the reference cluster's one NIC per node:
 * ZeRO-3 gathers and reduce-scatters beside Ulysses all-to-alls, and beside BASP's. */
START_TEST(engines_agree_under_contention)
{
	const engine_ops *sg = engine_find("simgrid");
	if (!sg)
		return; /* built without SimGrid */
	static const struct {
		const char *model;
		long seq;
		int B;
		const char *st;
		double tol;
	} cases[] = {
		{"llama-3.1-8b", 16384, 1, "ulysses", 0.05}, /* the worst case before sharing: -28% */
		{"llama-3.2-3b", 8192, 2, "ulysses", 0.05},
		{"qwen1.5-7b", 8192, 2, "basp", 0.05},
		{"llama-3.2-3b", 32768, 4, "basp", 0.05},
		/* ring attention across the two nodes: its KV messages leave each node through the
		 * NIC the ZeRO-3 gathers use (-9.2% while the analytic engine loaded only the
		 * ring's NVLink hop: linkload.c, send/recv), and USP's rings, whose NIC load was
		 * read off the all-to-all group's shape (-7.5%, -5.8%); 1.2% at most since */
		{"llama-3.1-8b", 16384, 1, "ring", 0.02},
		{"llama-3.1-8b", 16384, 1, "usp", 0.02},
		{"llama-3.1-8b", 8192, 1, "usp:u=2:r=4", 0.02},
	};
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("a100-2x4-ib400", &p, &err));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		config_model m;
		ck_assert(config_load_model(cases[i].model, &m, &err));
		config_job job;
		config_job_defaults(&job);
		ck_assert(config_strategy_parse(cases[i].st, &job, NULL, &err));
		job.micro_batch = cases[i].B;
		job.seq_len = cases[i].seq;
		job.zero_stage = 3;
		if (strcmp(cases[i].st, "ulysses") && strcmp(cases[i].st, "basp"))
			job.recompute = CONFIG_RECOMPUTE_FULL; /* ring attention's 8B steps fit with it */
		ck_assert(workload_check(&m, &p, &job, &err));
		workload_plan plan;
		ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
		engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
		engine_result a, s;
		ck_assert_msg(engine_analytic.run(&in, &a, &err), "%s", err.msg);
		ck_assert_msg(sg->run(&in, &s, &err), "%s", err.msg);
		ck_assert_msg(fabs(a.step_time / s.step_time - 1) <= cases[i].tol,
			      "%s %s %ldK B=%d: analytic %.4f s, simgrid %.4f s", cases[i].st, cases[i].model,
			      cases[i].seq / 1024, cases[i].B, a.step_time, s.step_time);
		workload_plan_finish(&plan);
	}
}
END_TEST

/* Ring attention's send/recv on a100-2x4-ib400 (2 nodes of 4 A100 on an NVLink mesh, one
 * NIC per node): every rank sends S bytes to the next rank of its ring and the op ends
 * with its slowest message.
 *  - A ring of 8 (4 ranks per node): GPU 0 sends to GPU 1 over their pair link (S / pair
 *    bandwidth, 1 flow), and each node is left once, from its last rank, through the one
 *    NIC (S / NIC bandwidth, 1 flow).
 *  - USP's rings of 2, ranks 4 apart (one per node): every GPU's message leaves the node,
 *    so the NIC carries the node's 4 messages (4 S / NIC bandwidth, 4 flows), no pair link.
 * Alone the ring of 8 takes its closed-form time, which is paced by the NIC. */
START_TEST(ring_sendrecv_loads_the_nic_it_leaves_by)
{
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("a100-2x4-ib400", &p, &err));
	const double S = 32.0 * (1 << 20), N = config_platform_nic_bw(&p), L = config_platform_intra_pair_bw(&p);
	workload_op sr = {.kind = WL_OP_COMM, .group = WL_GROUP_SP, .coll = WL_COLL_SENDRECV, .alg = WL_ALG_RING,
			  .bytes = S};
	engine_op_load l;
	engine_op_load_of(&p, (engine_group_shape){.size = 8, .per_node = 4, .active_per_node = 4}, &sr, &l);
	ck_assert_int_eq(l.n, 2);
	for (int k = 0; k < 2; k++) {
		ck_assert(l.res[k] == ENGINE_LINK_NIC || l.res[k] == ENGINE_LINK_PAIR0);
		ck_assert_close(l.busy[k], S / (l.res[k] == ENGINE_LINK_NIC ? N : L), 1e-12);
	}
	engine_op_load_of(&p, (engine_group_shape){.size = 2, .per_node = 1, .active_per_node = 4}, &sr, &l);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.res[0], ENGINE_LINK_NIC);
	ck_assert_close(l.busy[0], 4 * S / N, 1e-12);
	ck_assert_close(l.flows[0], 4 * 1e9 / N, 1e-12); /* 4 flows, counted per GB/s (linkload.c add) */
	/* a ring inside one node loads only the pair link */
	engine_op_load_of(&p, (engine_group_shape){.size = 4, .per_node = 4, .active_per_node = 4}, &sr, &l);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.res[0], ENGINE_LINK_PAIR0);
}
END_TEST

/* An NVSwitch all-to-all beside a ZeRO ring that leaves the node (dgx-h100, 2 nodes): the
 * ring crosses the NIC in one flow and the GPU's NVSwitch port in seven (a channel enters a
 * node through one GPU's NIC, visits the node's eight GPUs over NVLink and leaves through
 * another's: NVIDIA/nccl issue #915), so both ops load the port.
 *   Port B = 450 GB/s x 0.82 = 369 GB/s per direction, NIC N = 50 GB/s x 0.94 = 47 GB/s.
 *   A: all-to-all of S_a over the node's 8 GPUs: 7 flows of S_a/8 on the port,
 *      alone T_A = 7 S_a / (8 B).
 *   R: all-gather of S_r over 16 ranks (8 per node), 8 channels of E/8, E = 15 S_r / 16:
 *      the port carries 7 E/8 in 7 flows, the NIC E/8 in 1; alone the NIC binds,
 *      T_R = E / (8 N), and the port is busy u = 7 N / B = 0.892 of it.
 * At full rate A's flows move B/7 = 52.7 GB/s each, R's N = 47 GB/s each (on both links:
 * a ring's hops run at one pace). Max-min over the port's 14 flows gives each B/14 =
 * 26.4 GB/s: A at x_A = (B/14)/(B/7) = 1/2, R at x_R = (B/14)/N = 0.561; the port is
 * then full (1/2 + 0.561 x 0.892 = 1). A ends at 2 T_A; R has done 2 T_A x_R of its work
 * and ends at T_R + 2 T_A (1 - x_R). Counting flows by their share of each link instead
 * (R's NIC flow at 96%, its port flows at 13%) would hold R down to its NIC level and let A
 * run at full rate (A at T_A), which SimGrid does not do. */
START_TEST(nvswitch_alltoall_shares_the_port_with_a_leaving_ring)
{
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	p.nodes = 2;
	const double B = 450e9 * 0.82, N = 50e9 * 0.94;
	ck_assert_close(config_platform_intra_bw(&p), B, 1e-12);
	ck_assert_close(config_platform_nic_bw(&p), N, 1e-12);
	const double Sa = 16.0 * (1 << 20), Sr = 512.0 * (1 << 20), E = 15 * Sr / 16;
	workload_op a2a = {.kind = WL_OP_COMM, .coll = WL_COLL_ALLTOALL, .alg = WL_ALG_DIRECT, .bytes = Sa};
	workload_op ag = {.kind = WL_OP_COMM, .coll = WL_COLL_ALLGATHER, .alg = WL_ALG_RING, .bytes = Sr};
	engine_op_load la, lr;
	engine_op_load_of(&p, (engine_group_shape){.size = 8, .per_node = 8, .active_per_node = 8}, &a2a, &la);
	engine_op_load_of(&p, (engine_group_shape){.size = 16, .per_node = 8, .active_per_node = 8}, &ag, &lr);
	const double TA = 7 * Sa / (8 * B), TR = E / (8 * N);
	ck_assert_int_eq(la.n, 1);
	ck_assert_int_eq(la.res[0], ENGINE_LINK_PORT);
	ck_assert_close(la.busy[0], TA, 1e-12);
	ck_assert_int_eq(lr.n, 2);
	for (int k = 0; k < 2; k++)
		ck_assert_close(lr.busy[k], lr.res[k] == ENGINE_LINK_NIC ? TR : 7 * E / (8 * B), 1e-12);
	engine_result r;
	two_streams_for(&la, &lr, TA, TR, &r);
	const double xR = (B / 14) / N;
	ck_assert_close(r.breakdown.sp_comm, 2 * TA, 1e-9);
	ck_assert_close(r.breakdown.zero_comm, TR + 2 * TA * (1 - xR), 1e-9);
}
END_TEST

/* The whole step of the case above in both engines: Llama-3.1-8B, 16K, BASP over 16 GPUs
 * in groups of 8 (one node each, all-to-alls on NVSwitch), micro-batch 2, ZeRO-3 gathers
 * and reduce-scatters across the two nodes (layer-ahead fetch). SimGrid shares the NVSwitch port flow by flow;
 * the all-to-all time and the step must agree within 5%. */
START_TEST(engines_agree_when_nvswitch_alltoalls_meet_zero_rings)
{
	const engine_ops *sg = engine_find("simgrid");
	if (!sg)
		return; /* built without SimGrid */
	config_platform p;
	config_model m;
	config_error err;
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	ck_assert(config_load_model("llama-3.1-8b", &m, &err));
	p.nodes = 2;
	config_job job;
	config_job_defaults(&job);
	job.strategy = CONFIG_STRATEGY_BASP;
	job.sp = 16;
	job.micro_batch = 2;
	job.seq_len = 16384;
	job.zero_stage = 3;
	/* the layer-ahead fetch: a whole layer's gather runs beside the layer's all-to-alls (the
	 * per-submodule fetch issues smaller gathers at the GEMMs, fewer of them beside the
	 * all-to-alls) */
	job.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	ck_assert_msg(workload_check(&m, &p, &job, &err), "%s", err.msg);
	workload_plan plan;
	ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
	engine_result a, s;
	ck_assert_msg(engine_analytic.run(&in, &a, &err), "%s", err.msg);
	ck_assert_msg(sg->run(&in, &s, &err), "%s", err.msg);
	ck_assert_msg(fabs(a.breakdown.sp_comm / s.breakdown.sp_comm - 1) <= 0.05,
		      "all-to-all: analytic %.6f s, simgrid %.6f s", a.breakdown.sp_comm, s.breakdown.sp_comm);
	ck_assert_msg(fabs(a.step_time / s.step_time - 1) <= 0.05, "step: analytic %.6f s, simgrid %.6f s", a.step_time,
		      s.step_time);
	/* the all-to-all is slowed by the rings it meets, in both engines */
	double **dur;
	engine_result r0;
	ck_assert(engine_analytic_durations(&p, &plan, &dur, &err));
	ck_assert(engine_schedule_run(&plan.program, dur, &r0, NULL, NULL, &err));
	engine_durations_free(dur, plan.program.n_micro + plan.program.n_step);
	ck_assert_double_gt(a.breakdown.sp_comm, 1.2 * r0.breakdown.sp_comm);
	ck_assert_double_gt(s.breakdown.sp_comm, 1.2 * r0.breakdown.sp_comm);
	workload_plan_finish(&plan);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("contention");
	TCase *tc = tcase_create("contention");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, two_streams_share_a_nic_by_flows);
	tcase_add_test(tc, no_step_below_the_nic_bound);
	tcase_add_test(tc, skipping_equals_the_full_fluid_schedule);
	tcase_add_test(tc, engines_agree_under_contention);
	tcase_add_test(tc, ring_sendrecv_loads_the_nic_it_leaves_by);
	tcase_add_test(tc, nvswitch_alltoall_shares_the_port_with_a_leaving_ring);
	tcase_add_test(tc, engines_agree_when_nvswitch_alltoalls_meet_zero_rings);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
