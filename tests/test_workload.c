/* workload: job checks, rank groups, and the op program's FLOPs and bytes against hand
 * derivations for a tiny model (tests/testutil.h: L=2, h=64, a=4, g=2, d=16, ffn=128). */
#include <stdlib.h>

#include "testutil.h"

static config_platform P8; /* 2 nodes x 4 GPUs */

static void setup(void) { P8 = tu_platform(2, 4, 1); }

static void plan_ok(const config_model *m, config_job *j, workload_plan *plan)
{
	config_error err;
	ck_assert_msg(workload_check(m, &P8, j, &err), "%s", err.msg);
	ck_assert_msg(workload_plan_make(m, &P8, j, plan, &err), "%s", err.msg);
}

static void check_fails(const config_model *m, config_job j, const char *needle)
{
	config_error err = {{0}};
	ck_assert_msg(!workload_check(m, &P8, &j, &err), "job accepted, expected an error about '%s'", needle);
	ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(defaults_fill_world_and_sp)
{
	config_model m = tu_model();
	config_platform p4 = tu_platform(1, 4, 1);
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 0, 0, 1, 64, 1);
	config_error err;
	ck_assert_msg(workload_check(&m, &p4, &j, &err), "%s", err.msg);
	ck_assert_int_eq(j.gpus, 4); /* every GPU of the platform */
	ck_assert_int_eq(j.sp, 4);   /* SP domain = world */
}
END_TEST

START_TEST(basp_groups_are_k_contiguous_ranks)
{
	/* W = 8, N = 8, B = 2: K = 4, two groups per domain; one sequence per group;
	 * tokens per GPU S/K = 64/4 = 16 = B·S/N. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 64, 1);
	workload_layout l;
	config_error err;
	ck_assert(workload_check(&m, &P8, &j, &err));
	ck_assert(workload_layout_make(&m, &j, &l, &err));
	ck_assert_int_eq(l.group_size, 4);
	ck_assert_int_eq(l.n_groups, 2);
	ck_assert_int_eq(l.seqs_per_group, 1);
	ck_assert_int_eq(l.tokens_per_rank, 16);
	ck_assert_int_eq(l.heads_per_rank, 1);    /* a/K = 4/4 */
	ck_assert_int_eq(l.kv_heads_per_rank, 1); /* g = 2 < K = 4: replicated, one per rank */
	ck_assert_int_eq(l.kv_replicated, 4);
}
END_TEST

START_TEST(ulysses_group_is_the_domain)
{
	/* W = 8, N = 4: 2 data-parallel replicas, each one all-to-all group of 4 holding
	 * B·S/N = 2·64/4 = 32 tokens of both sequences. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 2, 64, 1);
	workload_layout l;
	config_error err;
	ck_assert(workload_check(&m, &P8, &j, &err));
	ck_assert(workload_layout_make(&m, &j, &l, &err));
	ck_assert_int_eq(l.group_size, 4);
	ck_assert_int_eq(l.n_groups, 2);
	ck_assert_int_eq(l.seqs_per_group, 2);
	ck_assert_int_eq(l.tokens_per_rank, 32);
}
END_TEST

START_TEST(basp_b1_is_ulysses_and_b_equals_n_has_no_group)
{
	config_model m = tu_model();
	workload_layout u, b;
	config_error err;
	config_job ju = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 1);
	config_job jb = tu_job(CONFIG_STRATEGY_BASP, 4, 4, 1, 64, 1);
	ck_assert(workload_layout_make(&m, &ju, &u, &err) && workload_layout_make(&m, &jb, &b, &err));
	ck_assert_mem_eq(&u, &b, sizeof u); /* B = 1: K = N, the same layout */
	config_job jn = tu_job(CONFIG_STRATEGY_BASP, 4, 4, 4, 64, 1);
	workload_plan plan;
	plan_ok(&m, &jn, &plan);
	ck_assert_int_eq(plan.layout.group_size, 1);
	/* Whole sequences per GPU: nothing to exchange, but DeepSpeed still calls the
	 * all-to-all on the one-rank group (8 calls per layer, 2 layers: 16), costed as a
	 * launch plus a local copy; its permutes only move a size-1 dimension (no copies). */
	workload_plan ul;
	plan_ok(&m, &ju, &ul);
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 16);
	ck_assert_int_eq(tu_count(&ul, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 16);
	int copies = 0, ul_copies = 0;
	for (int i = 0; i < plan.program.n_micro; i++)
		for (int j = 0; j < plan.program.micro[i].n_ops; j++)
			copies += plan.program.micro[i].ops[j].kernel == WL_KERNEL_COPY;
	for (int i = 0; i < ul.program.n_micro; i++)
		for (int j = 0; j < ul.program.micro[i].n_ops; j++)
			ul_copies += ul.program.micro[i].ops[j].kernel == WL_KERNEL_COPY;
	ck_assert_int_eq(copies, 0);
	ck_assert_int_eq(ul_copies, 2 * 8); /* one before and one after each of the 8 all-to-alls of a layer */
	/* An SP domain of one GPU (4 data-parallel replicas of --sp 1) is no sequence
	 * parallelism at all: Megatron-DeepSpeed builds no DistributedAttention for an SP world
	 * of 1, so neither an all-to-all nor a layout copy, where BASP's groups of one inside
	 * an SP domain of 4 above keep their 16 one-rank calls. */
	workload_plan dp;
	config_job jd = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 1, 1, 64, 1);
	plan_ok(&m, &jd, &dp);
	ck_assert_int_eq(dp.layout.group_size, 1);
	ck_assert_int_eq(tu_count(&dp, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 0);
	ck_assert_ptr_null(tu_find(&dp, "layer_fwd", "a2a_q"));
	workload_plan_finish(&dp);
	workload_plan_finish(&ul);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(job_errors_say_what_to_change)
{
	config_model m = tu_model();
	check_fails(&m, tu_job(CONFIG_STRATEGY_BASP, 8, 8, 3, 64, 1), "use --micro-batch in {1, 2, 4, 8}");
	check_fails(&m, tu_job(CONFIG_STRATEGY_BASP, 8, 8, 16, 64, 1), "larger than the SP size");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 1, 64, 1), "4 attention heads, not divisible");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 8, 3, 1, 63, 1), "not a multiple of --sp 3");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 30, 1), "not divisible by the 4 sequence shards");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 16, 4, 1, 64, 1), "larger than platform 'hand' (2 nodes x 4 GPUs = 8)");
	config_platform p1 = tu_platform(1, 4, 1); /* one node: no plural */
	config_job j1 = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 64, 1);
	config_error e1 = {{0}};
	ck_assert(!workload_check(&m, &p1, &j1, &e1));
	ck_assert_msg(strstr(e1.msg, "(1 node x 4 GPUs = 4)"), "%s", e1.msg);
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, -1, 4, 1, 64, 1), "--gpus must be a positive");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 0, 64, 1), "--micro-batch must be a positive");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 0, 1), "--seq-len must be a positive");
	check_fails(&m, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 4), "--zero must be 0, 1, 2 or 3");
	config_job ga = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 1);
	ga.grad_accum = 0;
	check_fails(&m, ga, "--grad-accum must be a positive");
	/* kv heads 4 and a group of 6: neither divides the other (12 heads divide by 6). */
	config_model k = m;
	k.heads = 12;
	k.kv_heads = 4;
	check_fails(&k, tu_job(CONFIG_STRATEGY_ULYSSES, 6, 6, 1, 60, 1), "kv heads must divide it");
}
END_TEST

START_TEST(layer_flops_and_bytes_match_hand_derivation)
{
	/* Ulysses, N = 4, B = 1, S = 32: t = 8 tokens per GPU, P = 4, a/P = 1 head,
	 * g = 2 < P so K and V are replicated to P = 4 heads before the all-to-all. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	/* qkv: 2·t·h·(a·d + 2·g·d) = 2·8·64·(64 + 64) = 131072 */
	ck_assert_close(tu_find(&plan, "layer_fwd", "qkv_proj")->flops, 131072, 1e-12);
	/* out: 2·t·a·d·h = 2·8·64·64 = 65536; gate+up: 2·t·h·2·ffn = 262144; down 131072 */
	ck_assert_close(tu_find(&plan, "layer_fwd", "out_proj")->flops, 65536, 1e-12);
	ck_assert_close(tu_find(&plan, "layer_fwd", "mlp_gate_up")->flops, 262144, 1e-12);
	ck_assert_close(tu_find(&plan, "layer_fwd", "mlp_down")->flops, 131072, 1e-12);
	/* causal attention: 4·S²·heads·d / 2 = 2·32²·1·16 = 32768; backward 2.5x */
	ck_assert_close(tu_find(&plan, "layer_fwd", "attn_fwd")->flops, 32768, 1e-12);
	ck_assert_close(tu_find(&plan, "layer_bwd", "attn_bwd")->flops, 81920, 1e-12);
	/* backward GEMMs are 2x forward */
	ck_assert_close(tu_find(&plan, "layer_bwd", "qkv_proj_bwd")->flops, 262144, 1e-12);
	/* all-to-all buffers: Q t·a·d·2 = 8·64·2 = 1024 B; K t·P·d·2 = 8·4·16·2 = 1024 B */
	ck_assert_close(tu_find(&plan, "layer_fwd", "a2a_q")->bytes, 1024, 1e-12);
	ck_assert_close(tu_find(&plan, "layer_fwd", "a2a_k")->bytes, 1024, 1e-12);
	ck_assert_close(tu_find(&plan, "layer_bwd", "a2a_dv")->bytes, 1024, 1e-12);
	/* a layout copy reads and writes the buffer: 2 x 1024 */
	ck_assert_close(tu_find(&plan, "layer_fwd", "a2a_q_pack")->hbm_bytes, 2048, 1e-12);
	/* logits: 2·t·h·V = 2·8·64·100 = 102400 */
	ck_assert_close(tu_find(&plan, "head", "logits")->flops, 102400, 1e-12);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "a2a_q")->group, WL_GROUP_SP);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "a2a_q")->alg, WL_ALG_DIRECT);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(elementwise_bytes_by_implementation)
{
	/* Ulysses, N = 4, S = 32: t = 8 tokens per GPU, h = 64 (t·h = 512 elements), ffn = 128
	 * (t·f = 1024), V = 100 (t·V = 800 logits). Bytes per element from the kernel chains of
	 * modeling_llama.py (hf) and the fused kernels (megatron), program.c elementwise_of:
	 *               hf RMSNorm          megatron
	 *   input_norm  36 x 512 = 18432    4 x 512 = 2048
	 *   norm bwd    84 x 512 = 43008    8 x 512 = 4096
	 *   resid+norm  (6+36) x 512 = 21504 (2+4) x 512 = 3072
	 *   swiglu      10 x 1024 = 10240   6 x 1024 = 6144
	 *   swiglu bwd  18 x 1024 = 18432   10 x 1024 = 10240
	 *   loss        14 x 800 = 11200    10 x 800 = 8000
	 *   loss bwd    22 x 800 = 17600    6 x 800 = 4800
	 * An HF LayerNorm is one F.layer_norm kernel: the fused counts.
	 * RoPE over q and k, t·(a + g)·d = 8·6·16 = 768 elements: hf 20 x 768 = 15360 forward,
	 * 30 x 768 = 23040 backward; megatron 4 x 768 = 3072 each way; ALiBi: no op. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	static const struct {
		config_impl impl;
		config_norm kind;
		config_position pos;
		double norm, norm_bwd, resid, glu, glu_bwd, loss, loss_bwd, rope, rope_bwd;
	} want[] = {
		{CONFIG_IMPL_HF, CONFIG_NORM_RMSNORM, CONFIG_POSITION_ROPE, 18432, 43008, 21504, 10240, 18432, 11200,
		 17600, 15360, 23040},
		{CONFIG_IMPL_MEGATRON, CONFIG_NORM_RMSNORM, CONFIG_POSITION_ROPE, 2048, 4096, 3072, 6144, 10240, 8000,
		 4800, 3072, 3072},
		{CONFIG_IMPL_HF, CONFIG_NORM_LAYERNORM, CONFIG_POSITION_ALIBI, 2048, 4096, 5120, 10240, 18432, 11200,
		 17600, 0, 0},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		workload_plan plan;
		j.impl = want[i].impl;
		m.norm = want[i].kind;
		m.position = want[i].pos;
		plan_ok(&m, &j, &plan);
		ck_assert_close(tu_find(&plan, "layer_fwd", "input_norm")->hbm_bytes, want[i].norm, 1e-12);
		ck_assert_close(tu_find(&plan, "head", "final_norm")->hbm_bytes, want[i].norm, 1e-12);
		ck_assert_close(tu_find(&plan, "layer_bwd", "input_norm_bwd")->hbm_bytes, want[i].norm_bwd, 1e-12);
		ck_assert_close(tu_find(&plan, "layer_fwd", "residual_norm")->hbm_bytes, want[i].resid, 1e-12);
		ck_assert_close(tu_find(&plan, "layer_fwd", "swiglu")->hbm_bytes, want[i].glu, 1e-12);
		ck_assert_close(tu_find(&plan, "layer_bwd", "swiglu_bwd")->hbm_bytes, want[i].glu_bwd, 1e-12);
		ck_assert_close(tu_find(&plan, "head", "loss")->hbm_bytes, want[i].loss, 1e-12);
		ck_assert_close(tu_find(&plan, "head", "loss_bwd")->hbm_bytes, want[i].loss_bwd, 1e-12);
		const workload_op *r = tu_find(&plan, "layer_fwd", "rope"), *rb = tu_find(&plan, "layer_bwd", "rope_bwd");
		ck_assert_close(r ? r->hbm_bytes : 0.0, want[i].rope, 1e-12);
		ck_assert_close(rb ? rb->hbm_bytes : 0.0, want[i].rope_bwd, 1e-12);
		workload_plan_finish(&plan);
	}
}
END_TEST

START_TEST(basp_and_ulysses_do_the_same_attention_work)
{
	/* N = 4, B = 2, S = 32. Ulysses: B·S/N = 16 tokens, 1 head of 2 sequences;
	 * BASP K = 2: S/K = 16 tokens, 2 heads of 1 sequence. Same attention FLOPs:
	 * 2 seqs·2·S²·1·d = 1·2·S²·2·d = 65536. */
	config_model m = tu_model();
	config_job ju = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 2, 32, 1);
	config_job jb = tu_job(CONFIG_STRATEGY_BASP, 4, 4, 2, 32, 1);
	workload_plan u, b;
	plan_ok(&m, &ju, &u);
	plan_ok(&m, &jb, &b);
	ck_assert_close(tu_find(&u, "layer_fwd", "attn_fwd")->flops, 65536, 1e-12);
	ck_assert_close(tu_find(&b, "layer_fwd", "attn_fwd")->flops, 65536, 1e-12);
	ck_assert_close(tu_find(&u, "layer_fwd", "qkv_proj")->flops, tu_find(&b, "layer_fwd", "qkv_proj")->flops,
			1e-12);
	/* Q buffer: t·a·d·2 = 16·64·2 = 2048 B both; K: Ulysses replicates to P = 4 heads
	 * (16·4·16·2 = 2048), BASP with K = 2 = g needs none (16·2·16·2 = 1024). */
	ck_assert_close(tu_find(&u, "layer_fwd", "a2a_k")->bytes, 2048, 1e-12);
	ck_assert_close(tu_find(&b, "layer_fwd", "a2a_k")->bytes, 1024, 1e-12);
	ck_assert_close(u.model_flops_per_step, b.model_flops_per_step, 1e-12);
	workload_plan_finish(&u);
	workload_plan_finish(&b);
}
END_TEST

START_TEST(all_to_all_counts_follow_deepspeed)
{
	/* 4 forward (Q, K, V, O) + 4 backward per layer; full recompute adds 4 more. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 8 * m.layers);
	workload_plan_finish(&plan);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_count(&plan, WL_CAT_SP_COMM, WL_COLL_ALLTOALL), 12 * m.layers);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(off_gpu_bytes_ratio_basp_over_ulysses)
{
	/* Same buffers (g = a = 8 >= N, no replication), N = 8, B = 2, K = 4:
	 * off-GPU bytes ratio = ((K-1)/K) / ((N-1)/N) = (3/4)/(7/8) = 6/7. */
	config_model m = tu_model();
	m.heads = 8;
	m.kv_heads = 8;
	m.head_dim = 8;
	config_job ju = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 2, 64, 1);
	config_job jb = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 64, 1);
	workload_plan u, b;
	plan_ok(&m, &ju, &u);
	plan_ok(&m, &jb, &b);
	workload_volume vu, vb;
	workload_volume_of(&u, &vu);
	workload_volume_of(&b, &vb);
	ck_assert_close(vb.sp_bytes, vu.sp_bytes, 1e-12); /* same buffers handed to NCCL */
	ck_assert_close(vb.sp_off_gpu / vu.sp_off_gpu, (3.0 / 4.0) / (7.0 / 8.0), 1e-12);
	ck_assert_int_eq(vu.sp_collectives, vb.sp_collectives);
	/* without a node size the off-node wire fields stay 0 */
	ck_assert(vu.sp_wire_off_node == 0 && vu.zero_wire_off_node == 0 && vu.sp_wire_off_gpu > 0);

	/* Wire bytes on 2 nodes of 4: every Ulysses all-to-all sends 7/8 of its buffer
	 * off-GPU and 4/8 off-node; ZeRO-1's world rings (all-reduce, all-gather) send off-node
	 * 1/r = 1/4 of what they send off-GPU. BASP K = 4 keeps its all-to-alls in the node. */
	workload_volume_on(&u, 4, &vu);
	workload_volume_on(&b, 4, &vb);
	ck_assert_close(vu.sp_wire_off_gpu, vu.sp_bytes * 7 / 8, 1e-12);
	ck_assert_close(vu.sp_wire_off_gpu, vu.sp_off_gpu, 1e-12);
	ck_assert_close(vu.sp_wire_off_node, vu.sp_bytes * 4 / 8, 1e-12);
	ck_assert_close(vb.sp_wire_off_gpu, vb.sp_bytes * 3 / 4, 1e-12);
	ck_assert_close(vb.sp_wire_off_node, 0, 1e-12);
	ck_assert(vu.zero_wire_off_gpu > 0 && vu.zero_wire_off_gpu < 2 * vu.zero_bytes);
	ck_assert_close(vu.zero_wire_off_node, vu.zero_wire_off_gpu / 4, 1e-12);
	workload_plan_finish(&u);
	workload_plan_finish(&b);
}
END_TEST

START_TEST(model_and_hardware_flops_by_hand)
{
	/* Ulysses N = W = 4, B = 1, S = 32: t = 8 tokens, 1 of 4 heads per GPU in attention.
	 * Forward GEMMs of a layer (2·m·n·k): QKV 2·8·64·(64 + 2·2·16) = 131072, output
	 * 2·8·64·64 = 65536, gate+up 2·8·64·256 = 262144, down 2·8·128·64 = 131072: 589824.
	 * Causal attention forward: 1 sequence x 1 head x 4·S²·d / 2 = 4·1024·16/2 = 32768.
	 * Logits 2·8·64·100 = 102400. Forward = 2·(589824 + 32768) + 102400 = 1347584.
	 * MFU convention (backward 2x): 3 x 1347584 = 4042752.
	 * Executed: GEMMs 3x, attention 1 + 2.5 = 3.5x: 2·(3·589824 + 3.5·32768) + 3·102400
	 * = 2·(1769472 + 114688) + 307200 = 4075520; full recompute adds the layers' forward
	 * once more: + 2·622592 = 5320704 (the model FLOPs stay). Attention dense (PaLM's and
	 * Megatron-LM's count): 3·(2·(589824 + 65536) + 102400) = 4239360. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	ck_assert_close(plan.model_flops_per_step, 4042752, 1e-12);
	ck_assert_close(plan.hardware_flops_per_step, 4075520, 1e-12);
	ck_assert_close(plan.model_flops_dense_per_step, 4239360, 1e-12);

	/* MFU and HFU divide them by peak x step (engine_result_finish) */
	config_error err;
	engine_input in = {.model = &m, .platform = &P8, .job = &j, .plan = &plan};
	engine_result r;
	ck_assert_msg(engine_find("analytic")->run(&in, &r, &err), "%s", err.msg);
	ck_assert_close(r.mfu, 4042752 / (100e12 * r.step_time), 1e-12);
	ck_assert_close(r.hfu, 4075520 / (100e12 * r.step_time), 1e-12);
	ck_assert_close(r.mfu_dense, 4239360 / (100e12 * r.step_time), 1e-12);
	workload_plan_finish(&plan);

	j.recompute = CONFIG_RECOMPUTE_FULL;
	plan_ok(&m, &j, &plan);
	ck_assert_close(plan.model_flops_per_step, 4042752, 1e-12);
	ck_assert_close(plan.hardware_flops_per_step, 5320704, 1e-12);
	workload_plan_finish(&plan);

	j.recompute = CONFIG_RECOMPUTE_NONE;
	j.grad_accum = 3; /* per step: three micro-steps */
	plan_ok(&m, &j, &plan);
	ck_assert_close(plan.model_flops_per_step, 3 * 4042752.0, 1e-12);
	ck_assert_close(plan.hardware_flops_per_step, 3 * 4075520.0, 1e-12);
	workload_plan_finish(&plan);
}
END_TEST

/* Bytes rank `to` receives in one call, by the algorithm's definition, split into all and
 * from another node (ranks placed contiguously, r per node). */
static void received(workload_coll c, int P, int r, double bytes, int to, double *all, double *off_node)
{
	*all = *off_node = 0;
	if (c == WL_COLL_ALLTOALL) {
		/* bytes/P from every other rank */
		for (int from = 0; from < P; from++)
			if (from != to) {
				*all += bytes / P;
				if (from / r != to / r)
					*off_node += bytes / P;
			}
		return;
	}
	if (c == WL_COLL_SENDRECV) { /* ring attention: the predecessor's whole message */
		int from = (to + P - 1) % P;
		*all = bytes;
		*off_node = from / r != to / r ? bytes : 0;
		return;
	}
	/* ring 0 -> 1 -> ... -> P-1 -> 0: a chunk bytes/P from the predecessor per step,
	 * P-1 steps (all-gather, reduce-scatter) or 2(P-1) (all-reduce) */
	int steps = c == WL_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1, from = (to + P - 1) % P;
	*all = steps * bytes / P;
	*off_node = from / r != to / r ? *all : 0;
}

START_TEST(wire_bytes_sent_equal_received)
{
	/* Summed over the ranks, what workload_wire_bytes says each sends equals what the
	 * algorithm delivers, off-GPU and off-node, for rings and all-to-alls over 1-3 nodes. */
	static const workload_coll cs[] = {WL_COLL_ALLTOALL, WL_COLL_ALLGATHER, WL_COLL_REDUCESCATTER,
					   WL_COLL_ALLREDUCE, WL_COLL_SENDRECV};
	static const int shapes[][2] = {{8, 4}, {12, 4}, {4, 4}, {16, 8}, {6, 2}, {2, 1}, {4, 1}};
	const double B = 3e6;
	for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
		for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
			int P = shapes[k][0], r = shapes[k][1];
			workload_alg a = cs[i] == WL_COLL_ALLTOALL ? WL_ALG_DIRECT : WL_ALG_RING;
			double g, n, rg = 0, rn = 0;
			workload_wire_bytes(cs[i], a, P, r, B, &g, &n);
			for (int to = 0; to < P; to++) {
				double x, y;
				received(cs[i], P, r, B, to, &x, &y);
				rg += x;
				rn += y;
			}
			ck_assert_close(P * g, rg, 1e-12);
			ck_assert_close(P * n, rn, 1e-12);
			ck_assert(n <= g);
		}
	/* the published factors: ring all-reduce sends 2(P-1)/P of the buffer, all-gather
	 * (P-1)/P; an all-to-all of 8 ranks on 2 nodes sends 7/8 off-GPU, 4/8 off-node */
	double g, n;
	workload_wire_bytes(WL_COLL_ALLREDUCE, WL_ALG_RING, 8, 8, B, &g, &n);
	ck_assert_close(g, B * 2 * 7 / 8, 1e-12);
	ck_assert_close(n, 0, 1e-12);
	workload_wire_bytes(WL_COLL_ALLTOALL, WL_ALG_DIRECT, 8, 4, B, &g, &n);
	ck_assert_close(g, B * 7 / 8, 1e-12);
	ck_assert_close(n, B * 4 / 8, 1e-12);
	/* hierarchical all-to-all: the same bytes through the NICs, two NVLink phases more */
	double hg, hn;
	workload_wire_bytes(WL_COLL_ALLTOALL, WL_ALG_HIERARCHICAL, 8, 4, B, &hg, &hn);
	ck_assert_close(hn, n, 1e-12);
	ck_assert_close(hg, 2 * B * 3 / 4 + B / 2, 1e-12);
	/* ring attention's send/recv round a ring of 8 over two nodes: the whole message
	 * leaves every GPU, and 2 of the 8 messages (one per node boundary) leave a node; a
	 * ring of 2 on two nodes (USP's rings, one rank per node) sends everything off-node */
	workload_wire_bytes(WL_COLL_SENDRECV, WL_ALG_RING, 8, 4, B, &g, &n);
	ck_assert_close(g, B, 1e-12);
	ck_assert_close(n, B * 2 / 8, 1e-12);
	workload_wire_bytes(WL_COLL_SENDRECV, WL_ALG_RING, 2, 1, B, &g, &n);
	ck_assert_close(n, B, 1e-12);
	workload_wire_bytes(WL_COLL_SENDRECV, WL_ALG_RING, 4, 4, B, &g, &n);
	ck_assert_close(n, 0, 1e-12);
	/* one rank: nothing leaves the GPU */
	workload_wire_bytes(WL_COLL_ALLTOALL, WL_ALG_DIRECT, 1, 1, B, &g, &n);
	ck_assert(g == 0 && n == 0);
}
END_TEST

/* Sum of ZeRO bytes of one collective kind over the whole step. */
static double zero_bytes(const workload_plan *plan, workload_coll c) { return tu_comm_bytes(plan, WL_CAT_ZERO_COMM, c); }

START_TEST(zero_traffic_per_stage_conserves_parameters)
{
	/* psi = params; gradients in fp32 (4 B) because SP = 4 > 1; bf16 weights 2 B.
	 * Stage 1: all-reduce 4·psi once per step + all-gather 2·psi.
	 * Stage 2: the same bytes, the all-reduce split over layers during backward, every
	 *          micro-step (x grad_accum = 2).
	 * Stage 3: gathers every partitioned parameter in forward (psi less the final norm's h
	 *          weights: under 1e5 elements, never partitioned) and the layers again in
	 *          backward, 2 B each, every micro-step; reduce-scatter 4·psi. */
	config_model m = tu_model();
	double psi = config_model_params(&m), lp = config_model_layer_params(&m);
	workload_plan plan;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.grad_accum = 2;
	plan_ok(&m, &j, &plan);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLREDUCE), 4 * psi, 1e-12);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLGATHER), 2 * psi, 1e-12);
	ck_assert_ptr_nonnull(tu_find(&plan, "grad_sync", "zero_grad_allreduce"));
	workload_plan_finish(&plan);

	j.zero_stage = 2;
	plan_ok(&m, &j, &plan);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLREDUCE), 2 * 4 * psi, 1e-12);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLGATHER), 2 * psi, 1e-12);
	ck_assert_ptr_nonnull(tu_find(&plan, "layer_bwd", "zero_grad_allreduce"));
	ck_assert_int_eq(tu_find(&plan, "layer_bwd", "zero_grad_allreduce")->stream, WL_STREAM_MAIN); /* no overlap */
	workload_plan_finish(&plan);

	j.zero_stage = 3;
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	plan_ok(&m, &j, &plan);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLGATHER), 2 * (2 * (psi - m.hidden) + 2 * m.layers * lp), 1e-12);
	ck_assert_close(zero_bytes(&plan, WL_COLL_REDUCESCATTER), 2 * 4 * psi, 1e-12);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->stream, WL_STREAM_PREFETCH); /* overlap on */
	workload_plan_finish(&plan);
	/* DeepSpeed's per-submodule fetch gathers the projection weights only: each layer's
	 * two RMSNorm weights (h each) stay whole (under param_persistence_threshold), in
	 * forward and again in backward; the embedding as before. Its window (5e7, capped at
	 * the layer's P = 36864 units) reaches the whole next layer, so the hooks before the
	 * first layer gather all P of it in each pass (zero3_gather_ahead) and the last layer's
	 * hooks gather P ahead: in forward those stand for the head's 100·64 = 6400 (no head
	 * gather left), 30464 more than the head; in backward nothing follows: P more. */
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_DEEPSPEED;
	plan_ok(&m, &j, &plan);
	const double P = lp - 2.0 * m.hidden;
	ck_assert_double_eq(P, 36864);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLGATHER),
			2 * (2 * (psi - m.hidden - m.layers * 2.0 * m.hidden) + 2 * (P - 6400) + 2 * m.layers * P + 2 * P),
			1e-12);
	ck_assert_close(zero_bytes(&plan, WL_COLL_REDUCESCATTER), 2 * 4 * psi, 1e-12);
	workload_plan_finish(&plan);

	/* SP = 1 (pure data parallelism): gradients travel in bf16. */
	j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 1, 1, 32, 1);
	plan_ok(&m, &j, &plan);
	ck_assert_close(zero_bytes(&plan, WL_COLL_ALLREDUCE), 2 * psi, 1e-12);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(zero_overlap_flag_moves_collectives)
{
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 2);
	j.zero_overlap = 1;
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	const workload_op *op = tu_find(&plan, "layer_bwd", "zero_grad_allreduce");
	ck_assert_int_eq(op->stream, WL_STREAM_ZERO);
	ck_assert_int_ge(op->dep, 0); /* waits for its layer's backward */
	workload_plan_finish(&plan);
	j.zero_stage = 3;
	j.zero_overlap = 0;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->stream, WL_STREAM_MAIN);
	workload_plan_finish(&plan);
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->stream, WL_STREAM_MAIN);
	workload_plan_finish(&plan);
}
END_TEST

/* One block's ops as "name bytes dep/dep_iter" lines, gathers' bytes in elements (bf16). */
static void block_text(const workload_plan *plan, const char *block, char *out, size_t len)
{
	size_t at = 0;
	out[0] = 0;
	for (int i = 0; i < plan->program.n_micro; i++) {
		const workload_block *b = &plan->program.micro[i];
		if (strcmp(b->name, block) != 0)
			continue;
		for (int k = 0; k < b->n_ops && at < len; k++) {
			const workload_op *op = &b->ops[k];
			if (op->kind == WL_OP_COMM)
				at += (size_t)snprintf(out + at, len - at, "%d %s %.0f %d/%d\n", k, op->name, op->bytes / 2, op->dep,
						       op->dep_iter);
			else
				at += (size_t)snprintf(out + at, len - at, "%d %s %d/%d\n", k, op->name, op->dep, op->dep_iter);
		}
	}
}

START_TEST(zero3_deepspeed_fetch_per_submodule)
{
	/* The tiny model (h 64, a 4, g 2, d 16, ffn 128), 4 GPUs, SP 1, ZeRO-3 with overlap
	 * (gathers on the prefetch stream), prefetch_bucket 10000 elements. Fetch units in
	 * forward order with their elements and [start, end) in the layer's trace:
	 *   qkv 64·(64 + 2·32) = 8192 [0, 8192); o 64·64 = 4096 [8192, 12288);
	 *   gate+up 2·64·128 = 16384 [12288, 28672); down 8192 [28672, 36864); P = 36864,
	 *   the next layer's units at +P.
	 * Hook k gathers the units starting in [e(k-1) + 10000, e(k) + 10000), e(-1) = 0:
	 *   qkv [10000, 18192): gate+up (12288) -> 16384
	 *   o [18192, 22288): none -> no gather
	 *   gate+up [22288, 38672): down (28672), next qkv (36864) -> 16384
	 *   down [38672, 46864): next o (45056) -> 4096     (sum 36864 = P)
	 * Each gather is issued when the main stream reaches its hook (dep on the op before
	 * the GEMM); each GEMM waits for the last gather issued at an earlier hook: qkv_proj
	 * for the previous layer's last (index of "down"'s gather, one iteration back),
	 * out_proj and mlp_gate_up for qkv's, mlp_down for gate+up's. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 1, 1, 32, 3);
	j.prefetch_bucket_elems = 10000;
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	char got[4096];
	block_text(&plan, "layer_fwd", got, sizeof got);
	ck_assert_str_eq(got, "0 input_norm -1/0\n"
			      "1 zero3_gather 16384 0/0\n"
			      "2 qkv_proj 10/-1\n"
			      "3 rope -1/0\n"
			      "4 attn_fwd -1/0\n"
			      "5 out_proj 1/0\n"
			      "6 residual_norm -1/0\n"
			      "7 zero3_gather 16384 6/0\n"
			      "8 mlp_gate_up 1/0\n"
			      "9 swiglu -1/0\n"
			      "10 zero3_gather 4096 9/0\n"
			      "11 mlp_down 7/0\n"
			      "12 residual_add -1/0\n");
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->stream, WL_STREAM_PREFETCH);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->chunks, 1); /* one coalesced call */
	/* The first layer's qkv and o (starting before the window's 10000) come from the
	 * embedding's hook, on the main stream; the last layer's hooks prefetched 12288 >= the
	 * head's 6400: no head gather left. */
	const workload_op *ahead = tu_find(&plan, "embed_fwd", "zero3_gather_ahead");
	ck_assert_ptr_nonnull(ahead);
	ck_assert_double_eq(ahead->bytes, 2.0 * 12288);
	ck_assert_int_eq(ahead->stream, WL_STREAM_MAIN);
	ck_assert_ptr_null(tu_find(&plan, "head", "zero3_gather_head"));
	/* Backward without recompute, units in reverse: down [0, 8192), gate+up [8192, 24576),
	 * o [24576, 28672), qkv [28672, 36864):
	 *   down [10000, 18192): none
	 *   gate+up [18192, 34576): o (24576), qkv (28672) -> 12288
	 *   o [34576, 38672): next down (36864) -> 8192
	 *   qkv [38672, 46864): next gate+up (45056) -> 16384
	 * mlp_down_bwd and mlp_gate_up_bwd wait for the previous layer's last gather (qkv's),
	 * out_proj_bwd for gate+up's, qkv_proj_bwd for o's. The reduce-scatter follows. */
	block_text(&plan, "layer_bwd", got, sizeof got);
	ck_assert_str_eq(got, "0 mlp_down_bwd 9/-1\n"
			      "1 swiglu_bwd -1/0\n"
			      "2 zero3_gather_bwd 12288 1/0\n"
			      "3 mlp_gate_up_bwd 9/-1\n"
			      "4 residual_norm_bwd -1/0\n"
			      "5 zero3_gather_bwd 8192 4/0\n"
			      "6 out_proj_bwd 2/0\n"
			      "7 attn_bwd -1/0\n"
			      "8 rope_bwd -1/0\n"
			      "9 zero3_gather_bwd 16384 8/0\n"
			      "10 qkv_proj_bwd 5/0\n"
			      "11 input_norm_bwd -1/0\n"
			      "12 zero3_reduce_scatter 36992 11/0\n");
	/* the last layer's down and gate+up (starting before 10000) from the head's hooks */
	ck_assert_double_eq(tu_find(&plan, "head", "zero3_gather_ahead")->bytes, 2.0 * (8192 + 16384));
	workload_plan_finish(&plan);

	/* Full recompute: the recomputed forward gathers in forward order (the same four
	 * hooks as the forward block, after the backward's first op), the backward reuses
	 * what it gathered: no gather at the backward GEMMs. */
	j.recompute = CONFIG_RECOMPUTE_FULL;
	plan_ok(&m, &j, &plan);
	block_text(&plan, "layer_bwd", got, sizeof got);
	ck_assert_msg(strstr(got, "1 zero3_gather_bwd 16384 0/0\n2 qkv_proj 10/-1\n"), "%s", got);
	ck_assert_msg(strstr(got, "7 zero3_gather_bwd 16384 6/0\n8 mlp_gate_up 1/0\n"), "%s", got);
	ck_assert_msg(strstr(got, "10 zero3_gather_bwd 4096 9/0\n11 mlp_down 7/0\n"), "%s", got);
	ck_assert_msg(strstr(got, "mlp_down_bwd -1/0\n"), "%s", got);
	workload_plan_finish(&plan);

	/* Layer style (FSDP): unchanged, one gather of the whole layer (37,248 elements: the
	 * units and two 64-element norms; config_model_layer_params) in ceil(36992 / 10000) = 4
	 * calls, first in the block, after the previous layer's first op; the layer's first op
	 * waits for it. */
	j.recompute = CONFIG_RECOMPUTE_NONE;
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	plan_ok(&m, &j, &plan);
	block_text(&plan, "layer_fwd", got, sizeof got);
	ck_assert_str_eq(got, "0 zero3_gather 36992 1/-1\n"
			      "1 input_norm 0/0\n"
			      "2 qkv_proj -1/0\n"
			      "3 rope -1/0\n"
			      "4 attn_fwd -1/0\n"
			      "5 out_proj -1/0\n"
			      "6 residual_norm -1/0\n"
			      "7 mlp_gate_up -1/0\n"
			      "8 swiglu -1/0\n"
			      "9 mlp_down -1/0\n"
			      "10 residual_add -1/0\n");
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "zero3_gather")->chunks, 4);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(zero3_gathered_memory_follows_the_window)
{
	/* The tiny model's units as in zero3_deepspeed_fetch_per_submodule, window 10000.
	 * Forward, alive at each hook: the current unit and those prefetched up to the window
	 *   qkv [0, 18192): qkv, o, gate+up 28672; o [8192, 22288): 20480;
	 *   gate+up [12288, 38672): gate+up, down, next qkv 32768; down: 20480 -> 32768.
	 * Full recompute: the recomputed layer stays for its backward (P = 36864) plus what its
	 * hooks prefetched of the next layer, units starting in [P, P + 10000): qkv, o 12288:
	 * 49152. Layer style: two layers, 2 · 36992. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 1, 1, 32, 3);
	j.prefetch_bucket_elems = 10000;
	ck_assert_double_eq(workload_zero3_gathered_elems(&m, &j), 32768);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	ck_assert_double_eq(workload_zero3_gathered_elems(&m, &j), 49152);
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	ck_assert_double_eq(workload_zero3_gathered_elems(&m, &j), 2 * 36992);
}
END_TEST

START_TEST(buckets_split_large_reductions)
{
	/* A bucket of 1000 elements: the stage-1 all-reduce of psi elements becomes
	 * ceil(psi / 1000) calls. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.reduce_bucket_elems = 1000;
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_find(&plan, "grad_sync", "zero_grad_allreduce")->chunks,
			 (int)ceil(config_model_params(&m) / 1000));
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(a2a_algorithm_follows_the_job)
{
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.a2a = CONFIG_A2A_HIERARCHICAL;
	workload_plan plan;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_find(&plan, "layer_bwd", "a2a_dq")->alg, WL_ALG_HIERARCHICAL);
	workload_plan_finish(&plan);
	j.a2a = CONFIG_A2A_PAIRWISE;
	plan_ok(&m, &j, &plan);
	ck_assert_int_eq(tu_find(&plan, "layer_fwd", "a2a_o")->alg, WL_ALG_PAIRWISE);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(basp_uneven_unequal_groups)
{
	/* N = 8, B = 3 on 2 nodes x 4: 8 = 3 + 3 + 2. Placed larger first: [0-2] [3-5] [6-7];
	 * the second group of 3 keeps one rank (rank 3) on node 0. Tokens S/3 and S/2;
	 * heads ceil(4/3) = 2 and 4/2 = 2 of the tiny model's 4. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 3, 96, 1);
	config_error err;
	ck_assert(!workload_check(&m, &P8, &j, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "--basp-uneven unequal (groups of 2 and 3 GPUs)"));
	j.basp_uneven = CONFIG_BASP_UNEVEN_UNEQUAL;
	ck_assert_msg(workload_check(&m, &P8, &j, &err), "%s", err.msg);
	workload_composite c;
	ck_assert_msg(workload_compose(&m, &P8, &j, &c, &err), "%s", err.msg);
	ck_assert_int_eq(c.kind, WL_COMPOSE_PARALLEL);
	ck_assert_int_eq(c.n_parts, 2);
	const workload_layout *two = &c.parts[0].plan.layout, *three = &c.parts[1].plan.layout;
	ck_assert_int_eq(two->group_size, 2);
	ck_assert_int_eq(three->group_size, 3);
	ck_assert_int_eq(c.parts[0].ranks + c.parts[1].ranks, 8);
	ck_assert_int_eq(two->tokens_per_rank, 48);
	ck_assert_int_eq(three->tokens_per_rank, 32);
	ck_assert_int_eq(three->heads_per_rank, 2);
	ck_assert_int_eq(three->straddle_per_node, 1);
	ck_assert_int_eq(two->straddle_per_node, 0);
	/* the busier GPUs hold more activations */
	ck_assert(c.parts[0].plan.memory.activations > c.parts[1].plan.memory.activations);
	workload_compose_finish(&c);
	/* a sequence that does not split over a group size is padded to the next multiple of
	 * it, and the padded tokens are costed: 64 tokens over groups of 3 run as 66 (22 per
	 * GPU), exactly as a 66-token sequence does; the groups of 2 hold 64 / 2 = 32 */
	j.seq_len = 64;
	ck_assert_msg(workload_check(&m, &P8, &j, &err), "%s", err.msg);
	ck_assert_msg(workload_compose(&m, &P8, &j, &c, &err), "%s", err.msg);
	ck_assert_int_eq(c.parts[0].job.seq_len, 64);
	ck_assert_int_eq(c.parts[0].plan.layout.tokens_per_rank, 32);
	ck_assert_int_eq(c.parts[1].job.seq_len, 66);
	ck_assert_int_eq(c.parts[1].plan.layout.tokens_per_rank, 22);
	config_job j66 = j;
	j66.seq_len = 66;
	workload_composite c66;
	ck_assert(workload_compose(&m, &P8, &j66, &c66, &err));
	ck_assert_double_eq(c.parts[1].plan.memory.peak, c66.parts[1].plan.memory.peak);
	ck_assert_double_eq(c.parts[1].plan.model_flops_per_step, c66.parts[1].plan.model_flops_per_step);
	ck_assert_int_eq(c.parts[1].plan.program.n_micro, c66.parts[1].plan.program.n_micro);
	workload_compose_finish(&c66);
	workload_compose_finish(&c);
}
END_TEST

START_TEST(basp_uneven_extra_micro_steps)
{
	/* N = 8: B = 3 -> 2 sequences on groups of 4, then 1 on the whole domain (K = 8 is
	 * too many for the tiny model's 4 heads, so use a = g = 8); B = 7 -> 4 + 2 + 1. */
	config_model m = tu_model();
	m.heads = 8;
	m.kv_heads = 8;
	m.head_dim = 8;
	config_job j = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 3, 64, 1);
	j.basp_uneven = CONFIG_BASP_UNEVEN_EXTRA_STEP;
	config_error err;
	ck_assert_msg(workload_check(&m, &P8, &j, &err), "%s", err.msg);
	workload_composite c;
	ck_assert(workload_compose(&m, &P8, &j, &c, &err));
	ck_assert_int_eq(c.kind, WL_COMPOSE_SEQUENTIAL);
	ck_assert_int_eq(c.n_parts, 2);
	ck_assert_int_eq(c.parts[0].job.micro_batch, 2);
	ck_assert_int_eq(c.parts[1].job.micro_batch, 1);
	/* the merged program holds both micro-steps, each with its own group size */
	int sizes[9] = {0};
	const workload_program *pr = &c.merged.program;
	for (int b = 0; b < pr->n_micro; b++)
		for (int k = 0; k < pr->micro[b].n_ops; k++)
			if (pr->micro[b].ops[k].cat == WL_CAT_SP_COMM)
				sizes[pr->micro[b].ops[k].group_size] += pr->micro[b].repeat;
	ck_assert_int_eq(sizes[4], 8 * m.layers);
	ck_assert_int_eq(sizes[8], 8 * m.layers);
	/* model FLOPs are those of three sequences: part flops add up */
	ck_assert_close(c.merged.model_flops_per_step,
			c.parts[0].plan.model_flops_per_step + c.parts[1].plan.model_flops_per_step, 1e-12);
	workload_compose_finish(&c);
	j.micro_batch = 7;
	ck_assert(workload_compose(&m, &P8, &j, &c, &err));
	ck_assert_int_eq(c.n_parts, 3);
	ck_assert_int_eq(c.parts[0].job.micro_batch + c.parts[1].job.micro_batch + c.parts[2].job.micro_batch, 7);
	ck_assert_int_eq(c.parts[1].job.micro_batch, 2);
	workload_compose_finish(&c);
}
END_TEST

START_TEST(uneven_composites_through_the_engine)
{
	config_model m = tu_model();
	m.heads = 8;
	m.kv_heads = 8;
	m.head_dim = 8;
	config_error err;
	const engine_ops *e = engine_find("analytic");
	for (int mode = CONFIG_BASP_UNEVEN_UNEQUAL; mode <= CONFIG_BASP_UNEVEN_EXTRA_STEP; mode++) {
		config_job j = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 3, 96, 2);
		j.basp_uneven = (config_basp_uneven)mode;
		ck_assert_msg(workload_check(&m, &P8, &j, &err), "%s", err.msg);
		workload_composite c;
		ck_assert(workload_compose(&m, &P8, &j, &c, &err));
		engine_result r, parts[WORKLOAD_MAX_PARTS];
		const workload_plan *primary;
		engine_options opt = {0};
		ck_assert_msg(engine_run_composite(e, &m, &P8, &j, &c, opt, &r, parts, &primary, &err), "%s", err.msg);
		if (mode == CONFIG_BASP_UNEVEN_UNEQUAL) {
			/* the slowest part sets the step */
			double mx = fmax(parts[0].step_time, parts[1].step_time);
			ck_assert(r.step_time == mx);
		}
		const engine_breakdown *b = &r.breakdown;
		ck_assert_close(b->compute + b->sp_comm_exposed + b->zero_comm_exposed, r.step_time, 1e-9);
		ck_assert_close(r.tokens_per_s * r.step_time, 3.0 * 96, 1e-9); /* three sequences a step */
		workload_compose_finish(&c);
	}
}
END_TEST

/* Sum over a block's ops of one kernel kind: bytes (host copies) per iteration. */
static double block_bytes(const workload_plan *plan, const char *block, workload_kernel k, int *repeat)
{
	const workload_program *pr = &plan->program;
	double sum = 0;
	for (int i = 0; i < pr->n_micro; i++) {
		const workload_block *b = &pr->micro[i];
		if (strcmp(b->name, block) != 0)
			continue;
		*repeat = b->repeat;
		for (int j = 0; j < b->n_ops; j++)
			if (b->ops[j].kind == WL_OP_COMPUTE && b->ops[j].kernel == k)
				sum += b->ops[j].bytes;
	}
	return sum;
}

START_TEST(offload_traffic_equals_saved_activations)
{
	/* Full recompute keeps each layer's input, 2·t·h bytes: Ulysses N = 4, S = 32, t = 8,
	 * h = 64: 1024. Offload copies exactly that out in each forward layer and back in each
	 * backward layer, L = 2 times each per micro-step, on a side stream (never the main). */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	j.offload_activations = true;
	P8.host.bandwidth = 10e9;
	P8.host.latency = 1e-6;
	P8.host.memory = 1e12;
	for (int z = 0; z <= 3; z++) {
		j.zero_stage = z;
		workload_plan plan;
		plan_ok(&m, &j, &plan);
		int rf = 0, rb = 0;
		double out = block_bytes(&plan, "layer_fwd", WL_KERNEL_HOST_COPY, &rf);
		double in = block_bytes(&plan, "layer_bwd", WL_KERNEL_HOST_COPY, &rb);
		ck_assert_close(out, workload_layer_saved_bytes(&m, &j, &plan.layout), 1e-12);
		ck_assert_close(out, 1024, 1e-12);
		ck_assert_close(in, out, 1e-12);
		ck_assert_int_eq(rf, 2);
		ck_assert_int_eq(rb, 2);
		const workload_op *d2h = tu_find(&plan, "layer_fwd", "offload_d2h");
		const workload_op *h2d = tu_find(&plan, "layer_bwd", "offload_h2d");
		ck_assert_ptr_nonnull(d2h);
		ck_assert_ptr_nonnull(h2d);
		ck_assert_int_ne(d2h->stream, WL_STREAM_MAIN);
		ck_assert_int_eq(d2h->cat, WL_CAT_HOST_COMM);
		/* the copy waits for the previous layer's output; the fetch starts once the layer
		 * above has begun its backward */
		ck_assert_int_eq(d2h->dep_iter, -1);
		ck_assert_int_eq(h2d->dep_iter, -1);
		/* the same FLOPs as full recompute without offload */
		workload_plan ref;
		config_job r = j;
		r.offload_activations = false;
		plan_ok(&m, &r, &ref);
		ck_assert_close(plan.hardware_flops_per_step, ref.hardware_flops_per_step, 1e-12);
		workload_plan_finish(&ref);
		workload_plan_finish(&plan);
	}
}
END_TEST

START_TEST(selective_recompute_adds_the_attention_forward)
{
	/* Ulysses N = 4, S = 32: the causal attention forward of a layer is 4·S²·d/2 = 32768
	 * FLOPs (one head per GPU); selective recompute runs it once more per layer in the
	 * backward: + L·32768 = 65536 executed FLOPs, model FLOPs unchanged. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	workload_plan none, sel;
	plan_ok(&m, &j, &none);
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	plan_ok(&m, &j, &sel);
	ck_assert_close(sel.hardware_flops_per_step - none.hardware_flops_per_step, 65536, 1e-12);
	ck_assert_close(sel.model_flops_per_step, none.model_flops_per_step, 1e-12);
	const workload_op *re = tu_find(&sel, "layer_bwd", "attn_fwd");
	ck_assert_ptr_nonnull(re);
	ck_assert_int_eq(re->phase, WL_PHASE_RECOMPUTE);
	workload_plan_finish(&none);
	workload_plan_finish(&sel);

	/* ring attention (R = 4, zigzag, c = 8 tokens per rank): the ring's forward again,
	 * its R blocks of 2·c²·a·d = 2·64·4·16 = 8192 FLOPs (4 heads per rank) and its R - 1
	 * KV transfers: + L·4·8192 = 65536 FLOPs and 2·3 = 6 more send/recvs per micro-step. */
	j = tu_job(CONFIG_STRATEGY_RING, 4, 4, 1, 32, 1);
	plan_ok(&m, &j, &none);
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	plan_ok(&m, &j, &sel);
	ck_assert_close(sel.hardware_flops_per_step - none.hardware_flops_per_step, 65536, 1e-12);
	ck_assert_int_eq(tu_count(&sel, WL_CAT_SP_COMM, WL_COLL_SENDRECV) -
				 tu_count(&none, WL_CAT_SP_COMM, WL_COLL_SENDRECV),
			 6);
	workload_plan_finish(&none);
	workload_plan_finish(&sel);

	/* all-gathered KV (cp_comm all_gather): the same forward FLOPs, 2·R·c²·a·d = 32768 a
	 * layer, and its K and V gathers again: + 65536 FLOPs, + 2·L = 4 all-gathers */
	j = tu_job(CONFIG_STRATEGY_RING, 4, 4, 1, 32, 1);
	j.cp_comm = CONFIG_CP_COMM_ALL_GATHER;
	plan_ok(&m, &j, &none);
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	plan_ok(&m, &j, &sel);
	ck_assert_close(sel.hardware_flops_per_step - none.hardware_flops_per_step, 65536, 1e-12);
	ck_assert_int_eq(tu_count(&sel, WL_CAT_SP_COMM, WL_COLL_ALLGATHER) -
				 tu_count(&none, WL_CAT_SP_COMM, WL_COLL_ALLGATHER),
			 4);
	workload_plan_finish(&none);
	workload_plan_finish(&sel);
}
END_TEST

START_TEST(tiles_keep_flops_and_add_launches)
{
	/* Ulysses N = 4, S = 32, t = 8. TiledMLP (n = 4) runs the MLP forward once more per
	 * layer in backward (it keeps only its input): gate+up 2·8·64·256 = 262144 and down
	 * 2·8·128·64 = 131072, + L·393216 = 786432 FLOPs. Each forward MLP op is 4 kernels (3
	 * extra launches), a backward GEMM op 2 per tile (7 extra), on GEMMs of 2 tokens.
	 * Tiled logits (n = 4) keep the FLOPs exactly (the fused loss forms the gradients as
	 * it goes) and add the same launches to the head's ops. */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	workload_plan base, tiled;
	plan_ok(&m, &j, &base);
	j.tile_mlp = 4;
	plan_ok(&m, &j, &tiled);
	ck_assert_close(tiled.hardware_flops_per_step - base.hardware_flops_per_step, 786432, 1e-12);
	const workload_op *up = tu_find(&tiled, "layer_fwd", "mlp_gate_up");
	const workload_op *down_bwd = tu_find(&tiled, "layer_bwd", "mlp_down_bwd");
	ck_assert_int_eq(up->extra_launches, 3);
	ck_assert_int_eq(up->shape.gemm.m, 2);
	ck_assert_int_eq(down_bwd->extra_launches, 7);
	ck_assert_int_eq(tu_find(&base, "layer_fwd", "mlp_gate_up")->extra_launches, 0);
	/* each extra launch costs the kernel gap: the op's time grows by 3 gaps */
	double gap = engine_compute_time(&P8, up) - engine_compute_time(&P8, &(workload_op){
		.kind = WL_OP_COMPUTE, .kernel = WL_KERNEL_GEMM, .flops = up->flops, .shape = up->shape});
	ck_assert_close(gap, 3e-6, 1e-9);
	workload_plan_finish(&tiled);
	j.tile_mlp = 1;
	j.tile_logits = 4;
	plan_ok(&m, &j, &tiled);
	ck_assert_close(tiled.hardware_flops_per_step, base.hardware_flops_per_step, 1e-12);
	ck_assert_int_eq(tu_find(&tiled, "head", "logits_bwd")->extra_launches, 7);
	workload_plan_finish(&tiled);
	workload_plan_finish(&base);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workload");
	TCase *tc = tcase_create("workload");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, defaults_fill_world_and_sp);
	tcase_add_test(tc, basp_groups_are_k_contiguous_ranks);
	tcase_add_test(tc, ulysses_group_is_the_domain);
	tcase_add_test(tc, basp_b1_is_ulysses_and_b_equals_n_has_no_group);
	tcase_add_test(tc, job_errors_say_what_to_change);
	tcase_add_test(tc, layer_flops_and_bytes_match_hand_derivation);
	tcase_add_test(tc, basp_and_ulysses_do_the_same_attention_work);
	tcase_add_test(tc, all_to_all_counts_follow_deepspeed);
	tcase_add_test(tc, off_gpu_bytes_ratio_basp_over_ulysses);
	tcase_add_test(tc, model_and_hardware_flops_by_hand);
	tcase_add_test(tc, offload_traffic_equals_saved_activations);
	tcase_add_test(tc, selective_recompute_adds_the_attention_forward);
	tcase_add_test(tc, tiles_keep_flops_and_add_launches);
	tcase_add_test(tc, wire_bytes_sent_equal_received);
	tcase_add_test(tc, zero_traffic_per_stage_conserves_parameters);
	tcase_add_test(tc, zero_overlap_flag_moves_collectives);
	tcase_add_test(tc, zero3_deepspeed_fetch_per_submodule);
	tcase_add_test(tc, zero3_gathered_memory_follows_the_window);
	tcase_add_test(tc, buckets_split_large_reductions);
	tcase_add_test(tc, a2a_algorithm_follows_the_job);
	tcase_add_test(tc, elementwise_bytes_by_implementation);
	tcase_add_test(tc, basp_uneven_unequal_groups);
	tcase_add_test(tc, basp_uneven_extra_micro_steps);
	tcase_add_test(tc, uneven_composites_through_the_engine);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
