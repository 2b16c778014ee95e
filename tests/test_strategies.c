/* strategies: ring attention (context parallelism) and BASP over it. Expected values are
 * derived by hand next to each test (docs/model.md "Ring attention") on the tiny model of
 * testutil.h: L=2, h=64, a=4 heads, g=2 kv heads, d=16. */
#include "testutil.h"

static config_model M;

static void setup(void) { M = tu_model(); }

static config_job ring_job(int gpus, int B, long S, config_cp_split split)
{
	config_job j = tu_job(CONFIG_STRATEGY_RING, gpus, gpus, B, S, 0);
	j.cp_split = split;
	return j;
}

static void plan_of(const config_platform *p, config_job *j, workload_plan *plan)
{
	config_error err;
	ck_assert_msg(workload_check(&M, p, j, &err), "%s", err.msg);
	ck_assert_msg(workload_plan_make(&M, p, j, plan, &err), "%s", err.msg);
}

/* Sum over one block's ops named `name` of bytes (comm) or FLOPs (compute), or with hbm their
 * HBM bytes (memory-bound ops), and their count. */
static double block_total(const workload_plan *plan, const char *block, const char *name, bool hbm, int *count)
{
	double sum = 0;
	int n = 0;
	for (int i = 0; i < plan->program.n_micro; i++) {
		const workload_block *b = &plan->program.micro[i];
		if (strcmp(b->name, block) != 0)
			continue;
		for (int k = 0; k < b->n_ops; k++)
			if (strcmp(b->ops[k].name, name) == 0) {
				sum += hbm ? b->ops[k].hbm_bytes : b->ops[k].kind == WL_OP_COMM ? b->ops[k].bytes : b->ops[k].flops;
				n++;
			}
	}
	if (count)
		*count = n;
	return sum;
}

static double block_sum(const workload_plan *plan, const char *block, const char *name, int *count)
{
	return block_total(plan, block, name, false, count);
}

static double block_hbm(const workload_plan *plan, const char *block, const char *name, int *count)
{
	return block_total(plan, block, name, true, count);
}

/* R = 4, B = 1, S = 64: t = 16 tokens per rank. A KV block is K and V of those tokens:
 * 16 · 2 · g(2) · d(16) · 2 B = 2048 B per step, R-1 = 3 steps forward: 6144 B per layer.
 * Backward: KV again (3 x 2048) and dK, dV in fp32 after every block (4 x 4096). */
START_TEST(ring_bytes_per_step_and_layer)
{
	config_platform p = tu_platform(1, 4, 1);
	config_job j = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan plan;
	plan_of(&p, &j, &plan);
	int n;
	ck_assert_double_eq(block_sum(&plan, "layer_fwd", "ring_kv", &n), 6144.0);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(tu_find(&plan, "layer_fwd", "ring_kv")->bytes, 2048.0);
	ck_assert_double_eq(block_sum(&plan, "layer_bwd", "ring_kv_bwd", &n), 6144.0);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(block_sum(&plan, "layer_bwd", "ring_dkv", &n), 4 * 4096.0);
	ck_assert_int_eq(n, 4);
	/* no all-to-all at all */
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 0);
	/* the volume counts the same bytes: L = 2 layers x (6144 + 6144 + 16384) */
	workload_volume v;
	workload_volume_of(&plan, &v);
	ck_assert_double_eq(v.sp_bytes, 2.0 * (6144 + 6144 + 16384));
	workload_plan_finish(&plan);

	/* Independent of the query heads: 8 heads instead of 4 move the same KV bytes. */
	M.heads = 8;
	M.hidden = 128;
	plan_of(&p, &j, &plan);
	ck_assert_double_eq(block_sum(&plan, "layer_fwd", "ring_kv", NULL), 6144.0);
	workload_plan_finish(&plan);
}
END_TEST

/* The ring's correction passes per layer (docs/model.md "Ring attention"), R = 4, S = 64:
 * t = 16 tokens, all a = 4 heads, g = 2, d = 16. Output O = 16·4·16 = 1024 elements, one
 * of K, V G = 16·2·16 = 512, lse rows 16·4 = 64.
 * Forward: cast in 6·O = 6144; 3 corrections of 10·O + 12·64 = 11008 (33024); cast out
 * 6·O = 6144: 45312 B.
 * Backward, zigzag: casts in 6·(O + 2G) = 12288; 3 x dq 10·O = 10240; 3 x dK, dV over the
 * block's first half 10·2G/2 = 5120; casts out 12288: 12288 + 30720 + 15360 + 12288 =
 * 70656 B. Naive: the dK, dV adds cover the whole block, 10240 each: 86016 B. */
START_TEST(ring_correction_bytes_per_layer)
{
	config_platform p = tu_platform(1, 4, 1);
	config_job j = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan plan;
	plan_of(&p, &j, &plan);
	int n;
	ck_assert_double_eq(block_hbm(&plan, "layer_fwd", "ring_out_init", &n), 6144.0);
	ck_assert_int_eq(n, 1);
	ck_assert_double_eq(block_hbm(&plan, "layer_fwd", "ring_out_correction", &n), 3 * 11008.0);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(block_hbm(&plan, "layer_fwd", "ring_out_cast", &n), 6144.0);
	ck_assert_double_eq(block_hbm(&plan, "layer_bwd", "ring_grad_init", NULL), 12288.0);
	ck_assert_double_eq(block_hbm(&plan, "layer_bwd", "ring_dq_accumulate", &n), 3 * 10240.0);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(block_hbm(&plan, "layer_bwd", "ring_dkv_accumulate", &n), 3 * 5120.0);
	ck_assert_double_eq(block_hbm(&plan, "layer_bwd", "ring_grad_cast", NULL), 12288.0);
	ck_assert_double_eq(workload_ring_fix_bytes(&M, &p, &j, &plan.layout, false), 45312.0);
	ck_assert_double_eq(workload_ring_fix_bytes(&M, &p, &j, &plan.layout, true), 70656.0);
	/* each dK, dV add waits for the previous step's dK, dV transfer (d_kv_comm.wait()),
	 * and the next transfer sends the sum */
	const workload_op *ops = NULL;
	int nops = 0;
	for (int i = 0; i < plan.program.n_micro; i++)
		if (strcmp(plan.program.micro[i].name, "layer_bwd") == 0) {
			ops = plan.program.micro[i].ops;
			nops = plan.program.micro[i].n_ops;
		}
	int adds = 0;
	for (int k = 0; k < nops; k++) {
		if (strcmp(ops[k].name, "ring_dkv_accumulate") != 0)
			continue;
		adds++;
		ck_assert_int_ge(ops[k].dep, 0);
		ck_assert_str_eq(ops[ops[k].dep].name, "ring_dkv");
		ck_assert_str_eq(ops[k + 1].name, "ring_dkv");
		ck_assert_int_eq(ops[k + 1].dep, k);
	}
	ck_assert_int_eq(adds, 3);
	/* zigzag step k >= 1 on rank R-1: c = 16 queries against c/2 = 8 keys, no mask: the
	 * kernel of two 8 x 8 non-causal sequences; step 0 is causal 16 x 16 */
	int steps = 0;
	for (int i = 0; i < plan.program.n_micro; i++) {
		const workload_block *b = &plan.program.micro[i];
		if (strcmp(b->name, "layer_fwd") != 0)
			continue;
		for (int k = 0; k < b->n_ops; k++) {
			const workload_op *o = &b->ops[k];
			if (strcmp(o->name, "ring_attn_fwd") != 0)
				continue;
			ck_assert_int_eq(o->shape.attn.seq, steps == 0 ? 16 : 8);
			ck_assert_int_eq(o->shape.attn.causal, steps == 0 ? 1 : 0);
			ck_assert_int_eq(o->shape.attn.seqs, steps == 0 ? 1 : 2);
			steps++;
		}
	}
	ck_assert_int_eq(steps, 4);
	workload_plan_finish(&plan);

	j = ring_job(4, 1, 64, CONFIG_CP_SPLIT_NAIVE);
	plan_of(&p, &j, &plan);
	ck_assert_double_eq(block_hbm(&plan, "layer_bwd", "ring_dkv_accumulate", NULL), 3 * 10240.0);
	ck_assert_double_eq(workload_ring_fix_bytes(&M, &p, &j, &plan.layout, true), 86016.0);
	ck_assert_double_eq(tu_find(&plan, "layer_fwd", "ring_attn_fwd")->shape.attn.seq, 16);
	workload_plan_finish(&plan);

}
END_TEST

/* Ring attention keeps every head on every rank: R = 8 > 4 heads is fine; Ulysses is not. */
START_TEST(ring_works_with_fewer_heads_than_ranks)
{
	config_platform p = tu_platform(1, 8, 1);
	config_error err;
	config_job j = ring_job(8, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
	config_job u = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 1, 64, 0);
	ck_assert(!workload_check(&M, &p, &u, &err));
}
END_TEST

/* Balance. One sequence, c = S/R tokens per rank, units of c²·a·d FLOPs forward.
 * Causal attention over the whole sequence is 2·S²·a·d = 2·R²; the mean per rank 2·R.
 * zigzag: every step 2 (see program.c), R steps: 2·R: max/mean = 1.
 * naive: the busiest rank does one diagonal (2) and R-1 full blocks (4 each):
 * 4R - 2; max/mean = (2R - 1)/R (= 7/4 at R = 4; 2R/(R+1) if the diagonal counted whole). */
START_TEST(zigzag_balances_and_naive_does_not)
{
	config_platform p = tu_platform(1, 4, 1);
	const int R = 4;
	const long S = 64;
	const double c = (double)S / R, unit = c * c * M.heads * M.head_dim;
	const double mean = 2.0 * (double)S * S * M.heads * M.head_dim / R;
	config_job z = ring_job(R, 1, S, CONFIG_CP_SPLIT_ZIGZAG), n = ring_job(R, 1, S, CONFIG_CP_SPLIT_NAIVE);
	workload_plan pz, pn;
	plan_of(&p, &z, &pz);
	plan_of(&p, &n, &pn);
	double wz = block_sum(&pz, "layer_fwd", "ring_attn_fwd", NULL);
	double wn = block_sum(&pn, "layer_fwd", "ring_attn_fwd", NULL);
	ck_assert_double_eq_tol(wz, 2.0 * R * unit, 1e-6);
	ck_assert_double_eq_tol(wz / mean, 1.0, 1e-12);
	ck_assert_double_eq_tol(wn, (4.0 * R - 2.0) * unit, 1e-6);
	ck_assert_double_eq_tol(wn / mean, (2.0 * R - 1.0) / R, 1e-12);
	/* backward: 2.5x forward per block */
	ck_assert_double_eq_tol(block_sum(&pz, "layer_bwd", "ring_attn_bwd", NULL), 2.5 * wz, 1e-6);
	/* model FLOPs are the mean: the same for both splits */
	ck_assert_double_eq(pz.model_flops_per_step, pn.model_flops_per_step);
	workload_plan_finish(&pz);
	workload_plan_finish(&pn);
}
END_TEST

static engine_result result_of(const char *engine, const config_platform *p, const config_job *j,
			       workload_plan *plan)
{
	const engine_ops *e = engine_find(engine);
	ck_assert_ptr_nonnull(e);
	engine_input in = {.model = &M, .platform = p, .job = j, .plan = plan};
	engine_result r;
	config_error err;
	ck_assert_msg(e->run(&in, &r, &err), "%s", err.msg);
	return r;
}

static double step_of(const char *engine, const config_platform *p, const config_job *j, workload_plan *plan)
{
	return result_of(engine, p, j, plan).step_time;
}

static void zero_ring_bytes(workload_plan *plan)
{
	for (int i = 0; i < plan->program.n_micro; i++)
		for (int k = 0; k < plan->program.micro[i].n_ops; k++)
			if (plan->program.micro[i].ops[k].stream == WL_STREAM_RING)
				plan->program.micro[i].ops[k].bytes = 0;
}

/* Overlap. A step computes block k while block k+1 travels (separate stream); block k+1
 * waits for its transfer, transfer k+1 for block k. Block 0 is local, so the forward ring
 * takes ·max(a, c) + a for block time a and transfer time c: when every transfer is
 * shorter than its block no forward transfer is exposed. Backward sends each block's dK,
 * dV on after computing it; the last of them returns the owner's gradient and the QKV
 * backward waits for it: exactly one transfer per layer is exposed, the final dKV.
 * Hand platform (4 nodes of one GPU, one 10 GB/s NIC, 10 us; 100 TFLOP/s); S = 64K,
 * R = 4, c = 16K: a zigzag block is 2·c²·a·d = 2·16384²·4·16 = 3.4e10 FLOPs = 0.34 ms
 * (backward 0.86 ms); its KV, 16384·2·2·16·2 B = 2 MiB, takes 0.21 ms; the fp32 dKV
 * (4 MiB) 0.42 ms; KV + dKV on the ring stream 0.63 ms < 0.86 ms. So the step is the
 * step with free transfers plus L = 2 x (10 us + 1 us network post (NCCL's getNetOverhead)
 * + 4194304 B / 10 GB/s). With 0.1 GB/s the
 * 21 ms KV transfers outlast their blocks and show, (R-1)·(c - a) per layer forward. */
START_TEST(ring_transfer_shorter_than_block_is_hidden)
{
	config_platform p = tu_platform(4, 1, 1);
	config_job j = ring_job(4, 1, 65536, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan plan;
	plan_of(&p, &j, &plan);
	engine_result r = result_of("analytic", &p, &j, &plan);
	double with = r.step_time;
	/* the breakdown charges the ring exactly that exposed transfer (the gradient
	 * all-reduce of ZeRO-0 blocks the main stream and is charged to ZeRO) */
	ck_assert_double_eq_tol(r.breakdown.sp_comm_exposed, 2 * (11e-6 + 4194304.0 / 10e9), 1e-9);
	/* of 3 x 0.21 + 3 x 0.21 + 4 x 0.42 = 2.94 ms of transfers per layer, 0.43 ms show */
	ck_assert(r.breakdown.sp_comm > 6 * r.breakdown.sp_comm_exposed);
	engine_result rs = result_of("simgrid", &p, &j, &plan);
	ck_assert_double_eq_tol(rs.breakdown.sp_comm_exposed, r.breakdown.sp_comm_exposed, 0.01 * r.breakdown.sp_comm_exposed);
	zero_ring_bytes(&plan);
	double free_ = step_of("analytic", &p, &j, &plan);
	workload_plan_finish(&plan);
	/* the fixed coll_overhead of the platform is 0 here */
	ck_assert_double_eq_tol(with, free_ + 2 * (11e-6 + 4194304.0 / 10e9), 1e-9 * free_);

	p.inter.nic_bandwidth = 0.1e9;
	plan_of(&p, &j, &plan);
	double slow = step_of("analytic", &p, &j, &plan);
	/* forward alone exposes ·(c - a) per layer: at least 3 x 20 ms x 2 layers */
	ck_assert(slow > free_ + 3 * 0.020 * 2);
	workload_plan_finish(&plan);
}
END_TEST

/* BASP with B = 1 over ring is ring attention over the whole domain, exactly. */
START_TEST(basp_b1_over_ring_is_ring)
{
	config_platform p = tu_platform(2, 4, 1);
	config_job r = ring_job(8, 1, 1024, CONFIG_CP_SPLIT_ZIGZAG);
	config_job b = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 1, 1024, 0);
	b.basp_inner = CONFIG_STRATEGY_RING;
	workload_plan pr, pb;
	plan_of(&p, &r, &pr);
	plan_of(&p, &b, &pb);
	ck_assert_double_eq(step_of("analytic", &p, &r, &pr), step_of("analytic", &p, &b, &pb));
	ck_assert_double_eq(pr.memory.peak, pb.memory.peak);
	workload_volume vr, vb;
	workload_volume_of(&pr, &vr);
	workload_volume_of(&pb, &vb);
	ck_assert_double_eq(vr.sp_bytes, vb.sp_bytes);
	workload_plan_finish(&pr);
	workload_plan_finish(&pb);
}
END_TEST

/* BASP over ring, B = 2 of N = 8: groups of K = 4, one sequence each, S/K tokens per
 * rank; the ring's KV block is (S/4)·2·g·d·2 B, K-1 = 3 steps. S = 1024: 256·128 =
 * 32768 B per step. Ring over all 8 with both sequences: 2·1024/8 = 256 tokens too, but 7
 * steps: BASP moves 3/7 of ring's bytes per rank. */
START_TEST(basp_over_ring_bytes)
{
	config_platform p = tu_platform(2, 4, 1);
	config_job b = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 1024, 0);
	b.basp_inner = CONFIG_STRATEGY_RING;
	config_job r = ring_job(8, 2, 1024, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan pb, pr;
	plan_of(&p, &b, &pb);
	plan_of(&p, &r, &pr);
	int n;
	ck_assert_double_eq(block_sum(&pb, "layer_fwd", "ring_kv", &n), 3 * 32768.0);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(block_sum(&pr, "layer_fwd", "ring_kv", &n), 7 * 32768.0);
	ck_assert_int_eq(pb.layout.ring, 4);
	workload_plan_finish(&pb);
	workload_plan_finish(&pr);
}
END_TEST

/* Analytic and SimGrid step times of one job within 1%. */
static void engines_agree(const config_platform *p, config_job j, size_t i)
{
	workload_plan plan;
	plan_of(p, &j, &plan);
	double a = step_of("analytic", p, &j, &plan), s = step_of("simgrid", p, &j, &plan);
	ck_assert_msg(fabs(a - s) <= 0.01 * s, "case %zu: analytic %.9g vs simgrid %.9g", i, a, s);
	workload_plan_finish(&plan);
}

/* The two engines agree on contention-free cases (one ring per node, or one GPU per
 * node): within 1%. */
START_TEST(engines_agree_on_ring)
{
	struct {
		int nodes, gpus, B;
		config_strategy s;
		config_cp_split split;
	} cases[] = {
		{1, 4, 1, CONFIG_STRATEGY_RING, CONFIG_CP_SPLIT_ZIGZAG},
		{1, 4, 2, CONFIG_STRATEGY_RING, CONFIG_CP_SPLIT_NAIVE},
		{4, 1, 1, CONFIG_STRATEGY_RING, CONFIG_CP_SPLIT_ZIGZAG},
		{2, 4, 1, CONFIG_STRATEGY_RING, CONFIG_CP_SPLIT_ZIGZAG},
		{2, 4, 2, CONFIG_STRATEGY_BASP, CONFIG_CP_SPLIT_ZIGZAG},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		config_platform p = tu_platform(cases[i].nodes, cases[i].gpus, 1);
		int W = cases[i].nodes * cases[i].gpus;
		config_job j = tu_job(cases[i].s, W, W, cases[i].B, 16384, 0);
		j.basp_inner = CONFIG_STRATEGY_RING;
		j.cp_split = cases[i].split;
		engines_agree(&p, j, i);
	}
}
END_TEST

START_TEST(bad_ring_input)
{
	config_platform p = tu_platform(1, 4, 1);
	config_error err;
	/* zigzag needs 2R chunks: 100 % 8 != 0 */
	config_job j = ring_job(4, 1, 100, CONFIG_CP_SPLIT_ZIGZAG);
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 8"));
	j.cp_split = CONFIG_CP_SPLIT_NAIVE; /* 100 % 4 == 0 */
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
	/* all-to-all options do not apply to a ring */
	j.a2a = CONFIG_A2A_PAIRWISE;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "--a2a"));
	/* BASP beyond divisibility is Ulysses-only */
	config_job b = tu_job(CONFIG_STRATEGY_BASP, 4, 4, 3, 96, 0);
	b.basp_inner = CONFIG_STRATEGY_RING;
	b.basp_uneven = CONFIG_BASP_UNEVEN_UNEQUAL;
	ck_assert(!workload_check(&M, &p, &b, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "--basp-uneven"));
}
END_TEST

START_TEST(strategy_specs_parse)
{
	config_job j;
	config_job_defaults(&j);
	config_error err;
	int sp = 0;
	char buf[64];
	ck_assert(config_strategy_parse("basp:inner=ring:split=naive", &j, NULL, &err));
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_BASP);
	ck_assert_int_eq(j.basp_inner, CONFIG_STRATEGY_RING);
	ck_assert_int_eq(j.cp_split, CONFIG_CP_SPLIT_NAIVE);
	ck_assert_str_eq(config_strategy_label(&j, buf, sizeof buf), "basp:inner=ring:split=naive");
	ck_assert(config_strategy_parse("ring:sp=4", &j, &sp, &err));
	ck_assert_int_eq(sp, 4);
	ck_assert_int_eq(j.cp_split, CONFIG_CP_SPLIT_ZIGZAG);
	ck_assert_str_eq(config_strategy_label(&j, buf, sizeof buf), "ring");
	ck_assert(!config_strategy_parse("ring:sp=4", &j, NULL, &err)); /* sp= only where allowed */
	ck_assert(!config_strategy_parse("usp2", &j, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "ulysses, basp, ring or usp"));
	ck_assert(!config_strategy_parse("basp:inner=tree", &j, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "inner=ring"));
	ck_assert(!config_strategy_parse("ulysses:split=naive", &j, NULL, &err));
	ck_assert(!config_strategy_parse("ring:split", &j, NULL, &err));
	ck_assert(!config_strategy_parse("ring:inner=ring", &j, NULL, &err)); /* inner is basp's */
	/* an option given twice: the last one won without a word (this ran zigzag) */
	const char *const twice[][2] = {{"ring:split=naive:split=zigzag", "split= given twice, expected each option once"},
					{"usp:u=2:u=4:r=4", "u= given twice"},
					{"basp:inner=ring:inner=usp", "inner= given twice"},
					{"ring:comm=p2p:comm=all_gather", "comm= given twice"},
					{"ring:sp=4:sp=8", "sp= given twice"}};
	for (int i = 0; i < 5; i++) {
		ck_assert_msg(!config_strategy_parse(twice[i][0], &j, &sp, &err), "%s accepted", twice[i][0]);
		ck_assert_msg(strstr(err.msg, twice[i][1]), "%s: %s", twice[i][0], err.msg);
	}
	ck_assert(config_strategy_parse("basp:inner=usp:u=2:r=4", &j, NULL, &err)); /* distinct options still parse */
}
END_TEST

/* Memory: ring keeps all heads but S/R tokens, so its saved activations equal Ulysses'
 * when Ulysses need not replicate kv heads (g = 4 >= P = 4 here; same elements per rank,
 * head layout or not); its buffers are the double-buffered KV (2·2·t·2g·d), the fp32
 * dK, dV pair (2·4·t·2g·d) and the fp32 output and LSE correction (4·t·a·(d+1)).
 * t = 16, g = 4, d = 16, a = 4: 8192 + 16384 + 4352 = 28928 B. With g = 2 Ulysses
 * replicates kv heads to 4 and saves more than ring. */
START_TEST(ring_memory)
{
	M.kv_heads = 4;
	config_platform p = tu_platform(1, 4, 1);
	config_job r = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	config_job u = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 0);
	workload_plan pr, pu;
	plan_of(&p, &r, &pr);
	plan_of(&p, &u, &pu);
	ck_assert_double_eq(pr.memory.activations, pu.memory.activations);
	/* world 4 > 1: ZeRO-0 buffers are the same in both; the difference is the SP part */
	double zero = pu.memory.buffers - 2.0 * 2.0 * 16 * 4 * 16;
	ck_assert_double_eq_tol(pr.memory.buffers - zero, 28928.0, 1e-9);
	workload_plan_finish(&pr);
	workload_plan_finish(&pu);
	M.kv_heads = 2;
	plan_of(&p, &r, &pr);
	plan_of(&p, &u, &pu);
	ck_assert(pr.memory.activations < pu.memory.activations);
	workload_plan_finish(&pr);
	workload_plan_finish(&pu);
}
END_TEST


static config_job usp_job(int gpus, int B, long S, int U, int R)
{
	config_job j = tu_job(CONFIG_STRATEGY_USP, gpus, gpus, B, S, 0);
	j.ulysses_degree = U;
	j.ring_degree = R;
	return j;
}

static double sp_bytes_of(const config_platform *p, config_job j)
{
	workload_plan plan;
	plan_of(p, &j, &plan);
	workload_volume v;
	workload_volume_of(&plan, &v);
	workload_plan_finish(&plan);
	return v.sp_bytes;
}

/* USP bytes are the sum of its parts. U = 2, R = 2 on 4 GPUs, S = 64, t = 16: the
 * all-to-alls are Ulysses' over U = 2 on S/R = 32 tokens (t = 16 as well: Q 16·4·16·2 =
 * 2048 B, K and V 16·2·16·2 = 1024 B each), the ring is a ring of R = 2 over S = 64 with
 * a/U = 2 heads and g/U = 1 kv head (a KV block of 32·2·1·16·2 = 2048 B). */
START_TEST(usp_bytes_are_the_sum_of_its_parts)
{
	config_platform p4 = tu_platform(1, 4, 1), p2 = tu_platform(1, 2, 1);
	double usp = sp_bytes_of(&p4, usp_job(4, 1, 64, 2, 2));
	double uly = sp_bytes_of(&p2, tu_job(CONFIG_STRATEGY_ULYSSES, 2, 2, 1, 32, 0));
	config_model full = M;
	M.heads = 2, M.kv_heads = 1, M.hidden = 32;
	double ring = sp_bytes_of(&p2, ring_job(2, 1, 64, CONFIG_CP_SPLIT_ZIGZAG));
	M = full;
	ck_assert_double_eq(usp, uly + ring);
	/* by hand, per layer: 8 all-to-alls (forward Q, K, V, O; backward dO, dQ, dK, dV)
	 * = 2 x (2048 + 1024 + 1024 + 2048); ring: 1 KV forward, 1 KV and 2 fp32 dKV backward
	 * = 2048 + 2048 + 2 x 4096; L = 2 layers */
	ck_assert_double_eq(usp, 2.0 * (2 * 6144.0 + 2048 + 2048 + 8192));
	workload_plan plan;
	config_job j = usp_job(4, 1, 64, 2, 2);
	plan_of(&p4, &j, &plan);
	ck_assert_double_eq(tu_find(&plan, "layer_fwd", "ring_kv")->bytes, 2048.0);
	ck_assert_double_eq(tu_find(&plan, "layer_fwd", "a2a_q")->bytes, 2048.0);
	ck_assert_int_eq(plan.layout.heads_per_rank, 2);
	workload_plan_finish(&plan);
}
END_TEST

/* Wire bytes of the rings (workload_volume_on), 2 nodes of 4 GPUs. Every rank sends its
 * whole message to the next rank of its ring, so off-GPU = the ring's bytes; a ring leaves
 * each node it spans once, so off-node, averaged over the ranks, = bytes / (ring ranks per
 * node):
 *  - ring of 8 (4 per node): 1/4 of the bytes off-node;
 *  - USP U = 2, R = 4: rings of ranks i, i+2, i+4, i+6, 2 per node: 1/2; the all-to-alls
 *    over U = 2 stay in the node;
 *  - USP U = 4, R = 2: rings i, i+4, one rank per node: all of it. */
START_TEST(ring_wire_bytes_leave_the_node_at_its_boundaries)
{
	config_platform p = tu_platform(2, 4, 1);
	const struct {
		config_job j;
		double off_node; /* of the ring's bytes */
	} cases[] = {
		{ring_job(8, 1, 1024, CONFIG_CP_SPLIT_ZIGZAG), 1.0 / 4},
		{usp_job(8, 1, 1024, 2, 4), 1.0 / 2},
		{usp_job(8, 1, 1024, 4, 2), 1.0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		config_job j = cases[i].j;
		workload_plan plan;
		plan_of(&p, &j, &plan);
		double ring = tu_comm_bytes(&plan, WL_CAT_SP_COMM, WL_COLL_SENDRECV);
		ck_assert_double_gt(ring, 0);
		workload_volume v;
		workload_volume_on(&plan, p.gpus_per_node, &v);
		double a2a = v.sp_bytes - ring; /* USP's all-to-alls over U ranks of one node */
		int U = plan.layout.group_size;
		ck_assert_msg(fabs(v.sp_wire_off_node - cases[i].off_node * ring) <= 1e-9 * ring, "case %zu: %.9g off-node",
			      i, v.sp_wire_off_node);
		ck_assert_msg(fabs(v.sp_wire_off_gpu - (ring + a2a * (U - 1) / U)) <= 1e-9 * v.sp_bytes, "case %zu", i);
		ck_assert_msg(fabs(v.sp_off_gpu - v.sp_wire_off_gpu) <= 1e-9 * v.sp_bytes, "case %zu", i);
		workload_plan_finish(&plan);
	}
}
END_TEST

/* U = P is Ulysses and R = P is ring attention, exactly; BASP over USP with B = 1 is USP. */
START_TEST(usp_edges_are_ulysses_and_ring)
{
	config_platform p = tu_platform(2, 4, 1);
	struct {
		config_job a, b;
	} pairs[] = {
		{usp_job(8, 1, 1024, 4, 2), usp_job(8, 1, 1024, 4, 2)},
		{usp_job(8, 2, 1024, 1, 8), ring_job(8, 2, 1024, CONFIG_CP_SPLIT_ZIGZAG)},
	};
	pairs[0].b.strategy = CONFIG_STRATEGY_BASP;
	pairs[0].b.basp_inner = CONFIG_STRATEGY_USP;
	for (size_t i = 0; i < 2; i++) {
		workload_plan pa, pb;
		plan_of(&p, &pairs[i].a, &pa);
		plan_of(&p, &pairs[i].b, &pb);
		ck_assert_double_eq(step_of("analytic", &p, &pairs[i].a, &pa), step_of("analytic", &p, &pairs[i].b, &pb));
		ck_assert_double_eq(pa.memory.peak, pb.memory.peak);
		workload_plan_finish(&pa);
		workload_plan_finish(&pb);
	}
	/* U = P = 4 heads: Ulysses over 4 (the tiny model's 4 heads allow it) */
	config_platform p1 = tu_platform(1, 4, 1);
	config_job u = usp_job(4, 1, 256, 4, 1), x = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 256, 0);
	workload_plan pu, px;
	plan_of(&p1, &u, &pu);
	plan_of(&p1, &x, &px);
	ck_assert_double_eq(step_of("analytic", &p1, &u, &pu), step_of("analytic", &p1, &x, &px));
	ck_assert_double_eq(pu.memory.peak, px.memory.peak);
	workload_plan_finish(&pu);
	workload_plan_finish(&px);
}
END_TEST

/* Degrees: derived (U the largest in a node that splits the heads), checked (exit 2 with
 * the valid pairs). */
START_TEST(usp_degrees)
{
	config_platform p = tu_platform(2, 4, 1);
	config_error err;
	config_job j = usp_job(8, 1, 1024, 0, 0);
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
	ck_assert_int_eq(j.ulysses_degree, 4); /* G = 4, a = 4 */
	ck_assert_int_eq(j.ring_degree, 2);
	j = usp_job(8, 1, 1024, 0, 8);
	ck_assert(workload_check(&M, &p, &j, &err));
	ck_assert_int_eq(j.ulysses_degree, 1);
	j = usp_job(8, 1, 1024, 3, 0);
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "{1x8, 2x4, 4x2}")); /* 8x1: 8 > 4 heads */
	j = usp_job(8, 1, 1024, 8, 1);
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "4 heads"));
	j = usp_job(8, 1, 1024, 4, 4);
	ck_assert(!workload_check(&M, &p, &j, &err));
	/* degrees on a strategy that has none */
	j = ring_job(8, 1, 1024, CONFIG_CP_SPLIT_ZIGZAG);
	j.ring_degree = 8;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "USP only"));
	/* the sequence: zigzag over R = 2 with U = 4 inside: 16 chunks */
	j = usp_job(8, 1, 1000, 4, 2);
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 16"));
	/* USP keeps its all-to-alls, so --a2a applies */
	j = usp_job(8, 1, 1024, 4, 2);
	j.a2a = CONFIG_A2A_PAIRWISE;
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
}
END_TEST

/* The engines agree on USP, rings strided across nodes included. */
START_TEST(engines_agree_on_usp)
{
	int cases[][4] = {{1, 4, 2, 2}, {2, 4, 2, 4}, {2, 4, 4, 2}, {4, 2, 2, 4}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		config_platform p = tu_platform(cases[i][0], cases[i][1], 1);
		int W = cases[i][0] * cases[i][1];
		engines_agree(&p, usp_job(W, 1, 16384, cases[i][2], cases[i][3]), i);
	}
}
END_TEST

/* ---- Megatron-Core context-parallel communication types (docs/model.md §7b) ---- */

static config_job ag_job(int gpus, int B, long S)
{
	config_job j = ring_job(gpus, B, S, CONFIG_CP_SPLIT_ZIGZAG);
	j.cp_comm = CONFIG_CP_COMM_ALL_GATHER;
	return j;
}

/* A job of one --cp-comm-type on top of a strategy (BASP takes it as its inner). */
static config_job typed_job(config_strategy s, config_cp_comm_type type, int gpus, int B, long S)
{
	config_job j = tu_job(s, gpus, gpus, B, S, 0);
	config_error err;
	ck_assert_msg(config_job_apply_cp_comm_type(&j, type, false, &err), "%s", err.msg);
	return j;
}

/* all_gather, R = 4, B = 1, S = 64: t = 16 tokens per rank; the rank's K is
 * 16·g(2)·d(16)·2 B = 1024 B, the gathered K (nccl-tests' all-gather size, the output)
 * 4 x 1024 = 4096 B, V the same. Forward: all-gather K, all-gather V; backward: both again
 * (only the local K, V are saved) and reduce-scatters of dK, dV (bf16, 4096 B input each).
 * On the wire each rank receives (R-1)/R of the full K and of V: 3072 B each, 6144 B per
 * layer forward, the same as the p2p ring's 3 KV blocks of 2048 B; backward 4 x 3072. */
START_TEST(all_gather_bytes_per_layer)
{
	config_platform p = tu_platform(1, 4, 1);
	config_job j = ag_job(4, 1, 64);
	workload_plan plan;
	plan_of(&p, &j, &plan);
	int n;
	const char *fwd[] = {"cp_allgather_k", "cp_allgather_v"};
	const char *bwd[] = {"cp_allgather_k", "cp_allgather_v", "cp_reducescatter_dk", "cp_reducescatter_dv"};
	for (int i = 0; i < 2; i++) {
		ck_assert_double_eq(block_sum(&plan, "layer_fwd", fwd[i], &n), 4096.0);
		ck_assert_int_eq(n, 1);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_double_eq(block_sum(&plan, "layer_bwd", bwd[i], &n), 4096.0);
		ck_assert_int_eq(n, 1);
	}
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "cp_allgather_k")->coll, WL_COLL_ALLGATHER);
	ck_assert_int_eq(tu_find(&plan, "layer_bwd", "cp_reducescatter_dv")->coll, WL_COLL_REDUCESCATTER);
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_SENDRECV), 0);
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 0);
	double off_gpu, off_node;
	workload_wire_bytes(WL_COLL_ALLGATHER, WL_ALG_RING, 4, 4, 4096.0, &off_gpu, &off_node);
	ck_assert_double_eq(off_gpu, 3072.0);
	workload_volume v;
	workload_volume_of(&plan, &v);
	ck_assert_double_eq(v.sp_bytes, 2.0 * 6 * 4096);      /* L = 2 layers x 6 collectives */
	ck_assert_double_eq(v.sp_wire_off_gpu, 2.0 * 6 * 3072); /* (R-1)/R of each */
	workload_plan_finish(&plan);
	/* forward wire bytes equal the p2p ring's */
	config_job r = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	plan_of(&p, &r, &plan);
	ck_assert_double_eq(block_sum(&plan, "layer_fwd", "ring_kv", NULL), 2 * 3072.0);
	workload_plan_finish(&plan);
	/* independent of the query heads */
	M.heads = 8;
	M.hidden = 128;
	plan_of(&p, &j, &plan);
	ck_assert_double_eq(block_sum(&plan, "layer_fwd", "cp_allgather_k", NULL), 4096.0);
	workload_plan_finish(&plan);
}
END_TEST

/* Work: the program is rank 0's two chunks, c = S/R = 16: chunk 0 (8 queries, 8 keys,
 * causal) 4·8·(8 - 4)·a·d = 128·a·d, chunk 7 (8 queries against all 64 keys, bottom-right
 * causal) 4·8·(64 - 4)·a·d = 1920·a·d: 2048·a·d = 2·R·c²·a·d, the zigzag ring's per-rank
 * work (the mean of causal attention: every rank of the zigzag split does it). */
START_TEST(all_gather_work_is_the_zigzag_mean)
{
	config_platform p = tu_platform(1, 4, 1);
	config_job j = ag_job(4, 1, 64), r = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan pa, pr;
	plan_of(&p, &j, &pa);
	plan_of(&p, &r, &pr);
	const double ad = (double)M.heads * M.head_dim;
	int n;
	double w = block_sum(&pa, "layer_fwd", "cp_attn_fwd", &n);
	ck_assert_int_eq(n, 2);
	ck_assert_double_eq_tol(w, 2048.0 * ad, 1e-6);
	ck_assert_double_eq_tol(w, block_sum(&pr, "layer_fwd", "ring_attn_fwd", NULL), 1e-6);
	ck_assert_double_eq_tol(block_sum(&pa, "layer_bwd", "cp_attn_bwd", NULL), 2.5 * w, 1e-6);
	ck_assert_double_eq(pa.model_flops_per_step, pr.model_flops_per_step);
	workload_plan_finish(&pa);
	workload_plan_finish(&pr);
}
END_TEST

/* Memory: saved activations are the p2p ring's (TE saves the local K, V only). Buffers:
 * F = the whole sequence's K and V = R·t·2·g·d·2 B = 4·16·2·2·16·2 = 8192 B; backward holds
 * the gathered KV, the full dK, dV, both chunks' per-step dK, dV ((R + 1/2)/R·F) and their
 * reordered copy: (4 + 1/8)·8192 = 33792 B, against the ring's 2·2·1024 + 2·4·1024 +
 * 4·16·4·17 = 16640 B. NCCL: a collective communicator (16 channels x 2 connections x
 * 9633792 B FIFOs) instead of the ring's two p2p peers (2 x 2 channels x 2 x 4 MiB). */
START_TEST(all_gather_memory)
{
	config_platform p = tu_platform(1, 4, 1);
	config_job j = ag_job(4, 1, 64), r = ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG);
	workload_plan pa, pr;
	plan_of(&p, &j, &pa);
	plan_of(&p, &r, &pr);
	ck_assert_double_eq(pa.memory.activations, pr.memory.activations);
	ck_assert_double_eq_tol(pa.memory.buffers - pr.memory.buffers, 33792.0 - 16640.0, 1e-9);
	ck_assert_double_eq_tol(pa.memory.reserve_of.nccl - pr.memory.reserve_of.nccl,
				16 * 2 * 9633792.0 - 2 * 2 * 2 * 4194304.0, 1e-3);
	workload_plan_finish(&pa);
	workload_plan_finish(&pr);
	/* the gathered KV grows with R at a fixed t: R = 2 holds (4 + 1/4)·(2·16·2·2·16·2) */
	config_platform p2 = tu_platform(1, 2, 1);
	config_job j2 = ag_job(2, 1, 32), r2 = ring_job(2, 1, 32, CONFIG_CP_SPLIT_ZIGZAG);
	plan_of(&p2, &j2, &pa);
	plan_of(&p2, &r2, &pr);
	ck_assert_double_eq_tol(pa.memory.buffers - pr.memory.buffers, 4.25 * 4096.0 - 16640.0, 1e-9);
	workload_plan_finish(&pa);
	workload_plan_finish(&pr);
}
END_TEST

/* The two engines agree within 1% on contention-free all_gather and a2a+p2p cases. */
START_TEST(engines_agree_on_cp_comm_types)
{
	struct {
		int nodes, gpus, B;
		config_strategy s;
		config_cp_comm_type type;
	} cases[] = {
		{1, 4, 1, CONFIG_STRATEGY_RING, CONFIG_CP_TYPE_ALL_GATHER},
		{4, 1, 1, CONFIG_STRATEGY_RING, CONFIG_CP_TYPE_ALL_GATHER},
		{2, 4, 1, CONFIG_STRATEGY_RING, CONFIG_CP_TYPE_ALL_GATHER},
		{2, 4, 2, CONFIG_STRATEGY_BASP, CONFIG_CP_TYPE_ALL_GATHER},
		{2, 4, 1, CONFIG_STRATEGY_USP, CONFIG_CP_TYPE_A2A_P2P},
		{4, 2, 1, CONFIG_STRATEGY_USP, CONFIG_CP_TYPE_A2A_P2P},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		config_platform p = tu_platform(cases[i].nodes, cases[i].gpus, 1);
		int W = cases[i].nodes * cases[i].gpus;
		engines_agree(&p, typed_job(cases[i].s, cases[i].type, W, cases[i].B, 16384), i);
	}
}
END_TEST

/* a2a+p2p is USP with U = the GPUs of a node: on 2 nodes x 2 GPUs, U = 2 (2 splits the 4
 * heads and 2 kv heads), R = 2, and its bytes are the sum of its parts as in
 * usp_bytes_are_the_sum_of_its_parts (S = 64): Ulysses over 2 on 32 tokens plus a ring of
 * 2 over 64 tokens with 2 heads and 1 kv head, 2 x (2·6144 + 2048 + 2048 + 8192) B. */
START_TEST(a2a_p2p_is_usp_in_the_node)
{
	config_platform p = tu_platform(2, 2, 1), p2 = tu_platform(1, 2, 1);
	config_job j = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_A2A_P2P, 4, 1, 64);
	config_error err;
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_USP);
	ck_assert_int_eq(j.ulysses_degree, 2);
	ck_assert_int_eq(j.ring_degree, 2);
	double whole = sp_bytes_of(&p, j);
	double uly = sp_bytes_of(&p2, tu_job(CONFIG_STRATEGY_ULYSSES, 2, 2, 1, 32, 0));
	config_model full = M;
	M.heads = 2, M.kv_heads = 1, M.hidden = 32;
	double ring = sp_bytes_of(&p2, ring_job(2, 1, 64, CONFIG_CP_SPLIT_ZIGZAG));
	M = full;
	ck_assert_double_eq(whole, uly + ring);
	ck_assert_double_eq(whole, 2.0 * (2 * 6144.0 + 2048 + 2048 + 8192));
	/* a2a is Ulysses, p2p the ring: the same plans as the strategies */
	config_job a = typed_job(CONFIG_STRATEGY_RING, CONFIG_CP_TYPE_A2A, 4, 1, 64);
	ck_assert_int_eq(a.strategy, CONFIG_STRATEGY_ULYSSES);
	ck_assert_double_eq(sp_bytes_of(&p, a), sp_bytes_of(&p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 0)));
	config_job r = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_P2P, 4, 1, 64);
	ck_assert_double_eq(sp_bytes_of(&p, r), sp_bytes_of(&p, ring_job(4, 1, 64, CONFIG_CP_SPLIT_ZIGZAG)));
}
END_TEST

/* BASP with B = 1 over all_gather is all_gather over the whole domain, and over a2a+p2p
 * it is the hierarchical type itself: same step time (both engines), memory and bytes. */
START_TEST(basp_b1_over_cp_comm_types)
{
	config_platform p = tu_platform(2, 4, 1);
	config_cp_comm_type types[] = {CONFIG_CP_TYPE_ALL_GATHER, CONFIG_CP_TYPE_A2A_P2P};
	for (int i = 0; i < 2; i++) {
		config_job a = typed_job(CONFIG_STRATEGY_ULYSSES, types[i], 8, 1, 1024);
		config_job b = typed_job(CONFIG_STRATEGY_BASP, types[i], 8, 1, 1024);
		ck_assert_int_eq(b.strategy, CONFIG_STRATEGY_BASP);
		workload_plan pa, pb;
		plan_of(&p, &a, &pa);
		plan_of(&p, &b, &pb);
		ck_assert_int_eq(pa.layout.ring, pb.layout.ring);
		ck_assert_double_eq(step_of("analytic", &p, &a, &pa), step_of("analytic", &p, &b, &pb));
		ck_assert_double_eq(step_of("simgrid", &p, &a, &pa), step_of("simgrid", &p, &b, &pb));
		ck_assert_double_eq(pa.memory.peak, pb.memory.peak);
		workload_volume va, vb;
		workload_volume_of(&pa, &va);
		workload_volume_of(&pb, &vb);
		ck_assert_double_eq(va.sp_bytes, vb.sp_bytes);
		workload_plan_finish(&pa);
		workload_plan_finish(&pb);
	}
}
END_TEST

START_TEST(bad_cp_comm_input)
{
	config_platform p = tu_platform(2, 4, 1);
	config_error err;
	config_job j;
	config_job_defaults(&j);
	/* specs */
	ck_assert(!config_strategy_parse("ring:comm=tree", &j, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "expected comm=p2p or comm=all_gather"));
	ck_assert(!config_strategy_parse("usp:comm=all_gather", &j, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "comm= applies only to ring attention"));
	ck_assert(!config_strategy_parse("ulysses:comm=p2p", &j, NULL, &err));
	ck_assert(!config_strategy_parse("basp:inner=usp:comm=p2p", &j, NULL, &err));
	ck_assert_int_eq(config_cp_comm_type_parse("a2a+p2p"), CONFIG_CP_TYPE_A2A_P2P);
	ck_assert_int_eq(config_cp_comm_type_parse("allgather"), -1);
	/* a type against an explicitly given strategy of another kind */
	j = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 1, 1024, 0);
	ck_assert(!config_job_apply_cp_comm_type(&j, CONFIG_CP_TYPE_P2P, true, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "cp_comm_type p2p is strategy ring, but the strategy given is ulysses"));
	j = ring_job(8, 1, 1024, CONFIG_CP_SPLIT_ZIGZAG);
	ck_assert(!config_job_apply_cp_comm_type(&j, CONFIG_CP_TYPE_ALL_GATHER, true, &err));
	ck_assert(config_job_apply_cp_comm_type(&j, CONFIG_CP_TYPE_P2P, true, &err));
	j = tu_job(CONFIG_STRATEGY_USP, 8, 8, 1, 1024, 0);
	ck_assert(config_job_apply_cp_comm_type(&j, CONFIG_CP_TYPE_A2A_P2P, true, &err));
	/* all_gather: zigzag only, 2R chunks, no all-to-all options, no USP degrees */
	j = ag_job(8, 1, 1024);
	ck_assert_msg(workload_check(&M, &p, &j, &err), "%s", err.msg);
	j.cp_split = CONFIG_CP_SPLIT_NAIVE;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "zigzag split only"));
	j = ag_job(8, 1, 1000); /* 1000 % 16 != 0 */
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 16"));
	j = ag_job(8, 1, 1024);
	j.a2a = CONFIG_A2A_HIERARCHICAL;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "only all-gathers and reduce-scatters"));
	j = ag_job(8, 1, 1024);
	j.ring_degree = 8;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "USP only"));
	/* a2a (Ulysses) with a ring degree, a2a+p2p with degrees that do not divide */
	j = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_A2A, 8, 1, 1024);
	j.ring_degree = 2;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "USP only"));
	j = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_A2A_P2P, 8, 1, 1024);
	j.ulysses_degree = 3;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "got --ulysses-degree 3 alone, which does not divide 8; valid U x R: {1x8, 2x4, 4x2}"),
		      "%s", err.msg); /* not "got 3 x 0": the ring degree was not given */
	/* a ring degree that leaves no all-to-all (U = 1) takes no --a2a; one that does not
	 * divide the group lists the pairs */
	j = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_A2A_P2P, 8, 1, 1024);
	j.ring_degree = 8;
	j.a2a = CONFIG_A2A_PAIRWISE;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "--a2a pairwise does not apply to ring attention"));
	j = typed_job(CONFIG_STRATEGY_ULYSSES, CONFIG_CP_TYPE_A2A_P2P, 8, 1, 1024);
	j.ring_degree = 3;
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "got --ring-degree 3 alone, which does not divide 8; valid U x R: {1x8, 2x4, 4x2}"),
		      "%s", err.msg);
	/* BASP over all_gather needs B | N like every ring inner */
	j = typed_job(CONFIG_STRATEGY_BASP, CONFIG_CP_TYPE_ALL_GATHER, 8, 3, 1024);
	ck_assert(!workload_check(&M, &p, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "--micro-batch in {1, 2, 4, 8}"));
}
END_TEST

START_TEST(cp_comm_specs_parse)
{
	config_job j;
	config_job_defaults(&j);
	config_error err;
	char buf[64];
	const char *specs[] = {"ring:comm=all_gather", "basp:inner=ring:comm=all_gather"};
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(config_strategy_parse(specs[i], &j, NULL, &err), "%s", err.msg);
		ck_assert(config_job_all_gather(&j));
		ck_assert_str_eq(config_strategy_label(&j, buf, sizeof buf), specs[i]);
	}
	ck_assert(config_strategy_parse("ring:comm=p2p", &j, NULL, &err));
	ck_assert(!config_job_all_gather(&j));
	ck_assert_str_eq(config_strategy_label(&j, buf, sizeof buf), "ring");
	/* each type's strategy, and BASP's inner */
	const char *labels[] = {"ring", "ring:comm=all_gather", "ulysses", "usp"};
	const char *inner[] = {"basp:inner=ring", "basp:inner=ring:comm=all_gather", "basp", "basp:inner=usp"};
	for (int t = 0; t < 4; t++) {
		config_job a = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 1, 1024, 0), b = a;
		b.strategy = CONFIG_STRATEGY_BASP;
		ck_assert(config_job_apply_cp_comm_type(&a, (config_cp_comm_type)t, false, &err));
		ck_assert(config_job_apply_cp_comm_type(&b, (config_cp_comm_type)t, true, &err));
		ck_assert_str_eq(config_strategy_label(&a, buf, sizeof buf), labels[t]);
		ck_assert_str_eq(config_strategy_label(&b, buf, sizeof buf), inner[t]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strategies");
	TCase *tc = tcase_create("ring");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, ring_bytes_per_step_and_layer);
	tcase_add_test(tc, ring_correction_bytes_per_layer);
	tcase_add_test(tc, ring_works_with_fewer_heads_than_ranks);
	tcase_add_test(tc, zigzag_balances_and_naive_does_not);
	tcase_add_test(tc, ring_transfer_shorter_than_block_is_hidden);
	tcase_add_test(tc, basp_b1_over_ring_is_ring);
	tcase_add_test(tc, basp_over_ring_bytes);
	tcase_add_test(tc, engines_agree_on_ring);
	tcase_add_test(tc, bad_ring_input);
	tcase_add_test(tc, strategy_specs_parse);
	tcase_add_test(tc, ring_memory);
	tcase_add_test(tc, usp_bytes_are_the_sum_of_its_parts);
	tcase_add_test(tc, usp_edges_are_ulysses_and_ring);
	tcase_add_test(tc, usp_degrees);
	tcase_add_test(tc, engines_agree_on_usp);
	tcase_add_test(tc, ring_wire_bytes_leave_the_node_at_its_boundaries);
	tcase_add_test(tc, all_gather_bytes_per_layer);
	tcase_add_test(tc, all_gather_work_is_the_zigzag_mean);
	tcase_add_test(tc, all_gather_memory);
	tcase_add_test(tc, engines_agree_on_cp_comm_types);
	tcase_add_test(tc, a2a_p2p_is_usp_in_the_node);
	tcase_add_test(tc, basp_b1_over_cp_comm_types);
	tcase_add_test(tc, bad_cp_comm_input);
	tcase_add_test(tc, cp_comm_specs_parse);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
