/* memory: per-GPU memory against hand derivations (docs/model.md "Memory"). Tiny model
 * of tests/testutil.h: L = 2, h = 64, a = 4, g = 2, d = 16, ffn = 128, V = 100. */
#include "testutil.h"

static void mem_of(const config_model *m, const config_platform *p, config_job j, workload_memory *out)
{
	config_error err;
	workload_layout l;
	ck_assert_msg(workload_check(m, p, &j, &err), "%s", err.msg);
	ck_assert(workload_layout_make(m, &j, &l, &err));
	workload_memory_compute(m, p, &j, &l, out);
}

START_TEST(model_states_by_zero_stage)
{
	/* bytes per parameter: 2 weights + 2 grads + 12 optimizer (fp32 master, m, v);
	 * stage 1 shards the 12, stage 2 also the grads, stage 3 everything, over W = 4. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	double psi = config_model_params(&m);
	workload_memory mem;
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0), &mem);
	ck_assert_close(mem.params, 2 * psi, 1e-12);
	ck_assert_close(mem.grads, 2 * psi, 1e-12);
	ck_assert_close(mem.optimizer, 12 * psi, 1e-12);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1), &mem);
	ck_assert_close(mem.params + mem.grads + mem.optimizer, (4 + 12.0 / 4) * psi, 1e-12);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 2), &mem);
	ck_assert_close(mem.params + mem.grads + mem.optimizer, (2 + 14.0 / 4) * psi, 1e-12);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 3), &mem);
	ck_assert_close(mem.params + mem.grads + mem.optimizer, 16.0 / 4 * psi, 1e-12);
}
END_TEST

START_TEST(activations_match_hand_derivation)
{
	/* Ulysses N = 4, B = 1, S = 32: t = 8 tokens, P = 4 > g = 2 so kvr = 4.
	 * Per layer, bf16: 2·t·(4h + 3·a·d + 2·kvr·d + 3·ffn)
	 *   = 2·8·(256 + 192 + 128 + 384) = 15360, plus fp32 LSE 4·t·a = 128 -> 15488.
	 * Two layers 30976, plus embedding output and final norm 2·2·t·h = 2048 -> 33024.
	 * Logits: t·V·(2 + 4) = 4800. All-to-all buffers: send + receive of the Q
	 * buffer, 2·2·t·a·d = 2048. ZeRO-0 reduce bucket, capped at psi, in fp32: 4·psi. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	double psi = config_model_params(&m);
	workload_memory mem;
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0), &mem);
	ck_assert_close(mem.activations, 33024, 1e-12);
	ck_assert_close(mem.logits, 4800, 1e-12);
	ck_assert_close(mem.buffers, 2048 + 4 * psi, 1e-12);
	ck_assert_close(mem.peak, 16 * psi + 33024 + 4800 + 2048 + 4 * psi, 1e-12);
	ck_assert(mem.fits);
	ck_assert_close(mem.capacity, 80e9, 1e-12);

	/* Full recompute keeps each layer's input (2·t·h = 1024 per layer) and rebuilds one
	 * layer at a time: 2·1024 + 15488 + 2048 = 19584. */
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 19584, 1e-12);
}
END_TEST

START_TEST(basp_keeps_ulysses_tokens_per_gpu)
{
	/* basp.md "Why not simply run Ulysses with SP degree N/B": BASP and Ulysses-SP hold
	 * B·S/N tokens per GPU; Ulysses with SP = N/B holds B²·S/N: B times the activations. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 8, 1);
	m.heads = 8;
	m.kv_heads = 8;
	m.head_dim = 8;
	workload_memory u, b, half;
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 2, 64, 3), &u);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 64, 3), &b);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 2, 64, 3), &half);
	ck_assert_close(b.activations, u.activations, 1e-12);
	ck_assert_close(b.logits, u.logits, 1e-12);
	ck_assert_close(b.params + b.grads + b.optimizer, u.params + u.grads + u.optimizer, 1e-12);
	/* with g = a >= every group size, every activation term is linear in t */
	ck_assert_close(half.activations, 2 * u.activations, 1e-12);
	ck_assert_close(half.logits, 2 * u.logits, 1e-12);
}
END_TEST

START_TEST(fits_compares_peak_with_capacity)
{
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	workload_memory mem;
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0), &mem);
	p.gpu.memory_bytes = mem.peak; /* exactly full still fits */
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0), &mem);
	ck_assert(mem.fits);
	p.gpu.memory_bytes = mem.peak * (1 - 1e-9);
	mem_of(&m, &p, tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0), &mem);
	ck_assert(!mem.fits);
}
END_TEST

START_TEST(max_seq_is_the_fitting_boundary)
{
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	p.gpu.memory_bytes = 64e6;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 3);
	config_error err;
	ck_assert(workload_check(&m, &p, &j, &err));
	long best = workload_max_seq(&m, &p, &j, 64);
	ck_assert_int_gt(best, 0);
	ck_assert_int_eq(best % 64, 0);
	workload_memory mem;
	j.seq_len = best;
	mem_of(&m, &p, j, &mem);
	ck_assert(mem.fits);
	j.seq_len = best + 64;
	mem_of(&m, &p, j, &mem);
	ck_assert(!mem.fits);
	/* more memory or full recompute never shortens it */
	p.gpu.memory_bytes = 128e6;
	ck_assert_int_ge(workload_max_seq(&m, &p, &j, 64), best);
	p.gpu.memory_bytes = 64e6;
	j.recompute = CONFIG_RECOMPUTE_FULL;
	ck_assert_int_ge(workload_max_seq(&m, &p, &j, 64), best);
	/* nothing fits when model states alone exceed memory */
	p.gpu.memory_bytes = 1e3;
	ck_assert_int_eq(workload_max_seq(&m, &p, &j, 64), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("memory");
	tcase_add_test(tc, model_states_by_zero_stage);
	tcase_add_test(tc, activations_match_hand_derivation);
	tcase_add_test(tc, basp_keeps_ulysses_tokens_per_gpu);
	tcase_add_test(tc, fits_compares_peak_with_capacity);
	tcase_add_test(tc, max_seq_is_the_fitting_boundary);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
