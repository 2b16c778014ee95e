/* memory: per-GPU memory against hand derivations (docs/model.md "Memory"). Tiny model
 * of tests/testutil.h: L = 2, h = 64, a = 4, g = 2, d = 16, ffn = 128, V = 100. */
#include <limits.h>

#include "testutil.h"

static void mem_of(const config_model *m, const config_platform *p, config_job j, workload_memory *out)
{
	config_error err;
	workload_layout l;
	ck_assert_msg(workload_check(m, p, &j, &err), "%s", err.msg);
	ck_assert(workload_layout_make(m, &j, &l, &err));
	workload_memory_compute(m, p, &j, &l, out);
}

/* The peak as the report's fields give it: everything summed but what is never alive at
 * once (not_concurrent). */
static double fields_peak(const workload_memory *m)
{
	return m->params + m->grads + m->optimizer + m->activations + m->logits + m->buffers + m->reserve -
	       m->not_concurrent;
}

/* The hand-derived jobs below: Ulysses N = 4, B = 1, S = 32 (t = 8), ZeRO-0, megatron, no
 * reserve (reserve_* tests cover it). */
static config_job tiny_megatron_job(void)
{
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0);
	j.memory_reserve_set = true;
	j.memory_reserve = 0;
	j.impl = CONFIG_IMPL_MEGATRON;
	return j;
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
	/* Ulysses N = 4, B = 1, S = 32: t = 8 tokens, P = 4 > g = 2 so kvr = 4. Reserve 0 here
	 * (reserve_* tests below).
	 * megatron, per layer: bf16 2·t·(3·a·d + 2·kvr·d + 3·f) = 2·8·(192 + 128 + 384) = 11264;
	 *   fp32 LSE 4·t·a = 128; two fused RMSNorms, each input + output in bf16 and fp32
	 *   rsigma: 2·(4·t·h + 4·t) = 2·(2048 + 32) = 4160 -> 15552. Two layers 31104, plus
	 *   the final norm 2080 -> 33184. Logits: bf16 + the fp32 softmax, t·V·(2 + 4) = 4800.
	 * hf, per layer: the MLP keeps 4·f (gate, SiLU output, up, product):
	 *   2·8·(192 + 128 + 512) = 13312; LSE 128; two LlamaRMSNorms, each fp32 input, bf16
	 *   normalised, bf16 output and fp32 rsqrt: 2·(8·t·h + 4·t) = 2·(4096 + 32) = 8256
	 *   -> 21696. Two layers 43392, final norm 4128 -> 47520. Logits: bf16 logits, fp32
	 *   log-softmax, and its backward's fp32 gradient in and out: 14·t·V = 11200.
	 * Buffers (both): send + receive of the Q all-to-all, 2·2·t·a·d = 2048; ZeRO-0
	 * reduce bucket, capped at psi, in fp32: 4·psi. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	double psi = config_model_params(&m);
	workload_memory mem;
	config_job j = tiny_megatron_job();
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 33184, 1e-12);
	ck_assert_close(mem.logits, 4800, 1e-12);
	ck_assert_close(mem.buffers, 2048 + 4 * psi, 1e-12);
	ck_assert_close(mem.reserve, 0, 1e-12);
	ck_assert_close(mem.peak, 16 * psi + 33184 + 4800 + 2048 + 4 * psi, 1e-12);
	ck_assert(mem.fits);
	ck_assert_close(mem.capacity, 80e9, 1e-12);

	j.impl = CONFIG_IMPL_HF; /* the default */
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 47520, 1e-12);
	ck_assert_close(mem.logits, 11200, 1e-12);
	ck_assert_close(mem.buffers, 2048 + 4 * psi, 1e-12);
	ck_assert_close(mem.peak, 16 * psi + 47520 + 11200 + 2048 + 4 * psi, 1e-12);

	/* hf-trainer (the loop drops the model output before backward): the same activations
	 * and buffers; logits 12·t·V = 9600 (fp32 log-softmax output, nll_loss's gradient and
	 * log_softmax's input gradient, no bf16 logits): the peak lower by exactly 2·t·V = 1600.
	 * Forward's own loss peak, 10·t·V = 8000 (bf16 logits, fp32 copy, log-softmax output),
	 * stays below. */
	j.impl = CONFIG_IMPL_HF_TRAINER;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 47520, 1e-12);
	ck_assert_close(mem.logits, 9600, 1e-12);
	ck_assert_close(mem.peak, 16 * psi + 47520 + 9600 + 2048 + 4 * psi, 1e-12);
	/* With the derived reserve (ZeRO-0, no recompute: no fragmentation share) the peaks
	 * still differ by exactly 2·t·V. */
	{
		config_job d = j;
		d.memory_reserve_set = false;
		workload_memory a, b;
		mem_of(&m, &p, d, &a);
		d.impl = CONFIG_IMPL_HF;
		mem_of(&m, &p, d, &b);
		ck_assert_close(b.peak - a.peak, 2.0 * 8 * 100, 1e-9);
		/* tiled logits (--tile-logits 2): the model returns no whole logits, the loop
		 * kind changes nothing: 14·ceil(t/2)·V + 2·t·h = 5600 + 1024 in both */
		d.tile_logits = 2;
		mem_of(&m, &p, d, &b);
		ck_assert_close(b.logits, 14.0 * 4 * 100 + 2.0 * 8 * 64, 1e-12);
		d.impl = CONFIG_IMPL_HF_TRAINER;
		mem_of(&m, &p, d, &a);
		ck_assert_close(a.logits, b.logits, 1e-12);
		ck_assert_close(a.peak, b.peak, 1e-12);
	}
	j.impl = CONFIG_IMPL_HF;

	/* Full recompute keeps each layer's input (2·t·h = 1024 per layer) and rebuilds one
	 * layer at a time: megatron 2·1024 + 15552 + 2080 = 19680; hf 2048 + 21696 + 4128 = 27872. */
	j.recompute = CONFIG_RECOMPUTE_FULL;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 27872, 1e-12);
	j.impl = CONFIG_IMPL_MEGATRON;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 19680, 1e-12);
}
END_TEST

START_TEST(reserve_default_by_hand)
{
	/* Derived reserve of the job above (W = 4, P = 4, ZeRO-0, no recompute):
	 *   CUDA context 512 MiB = 536870912, cuBLAS 32 MiB = 33554432;
	 *   NCCL, ZeRO communicator: 16 channels x 2 connections x (Simple 4194304 + LL128
	 *   120·640·8·8 = 4915200 + LL 8·512·8·16 = 524288 = 9633792) = 308281344;
	 *   all-to-all p2p: 3 peers x 2 channels x (send + receive) x 4 MiB = 50331648;
	 *   fragmentation: 0 (neither ZeRO-3 nor recompute).
	 *   total 929038336, added to peak. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	workload_memory with, without;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0);
	mem_of(&m, &p, j, &with);
	ck_assert(!with.reserve_of.declared);
	ck_assert_close(with.reserve_of.context, 536870912.0, 1e-12);
	ck_assert_close(with.reserve_of.cublas, 33554432.0, 1e-12);
	ck_assert_close(with.reserve_of.nccl, 308281344.0 + 50331648.0, 1e-12);
	ck_assert_close(with.reserve_of.fragmentation, 0, 1e-12);
	ck_assert_close(with.reserve, 929038336.0, 1e-12);
	j.memory_reserve_set = true;
	j.memory_reserve = 0;
	mem_of(&m, &p, j, &without);
	ck_assert_close(with.peak - without.peak, 929038336.0, 1e-12);

	/* ZeRO-3 adds 15% of the dynamic memory (activations, logits, buffers) */
	j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 3);
	mem_of(&m, &p, j, &with);
	ck_assert_close(with.reserve_of.fragmentation, 0.15 * (with.activations + with.logits + with.buffers), 1e-12);
	ck_assert_close(with.reserve, 929038336.0 + with.reserve_of.fragmentation, 1e-12);

	/* one GPU: no communicator, no NCCL buffers */
	config_platform one = tu_platform(1, 1, 1);
	mem_of(&m, &one, tu_job(CONFIG_STRATEGY_ULYSSES, 1, 1, 1, 32, 0), &with);
	ck_assert_close(with.reserve_of.nccl, 0, 1e-12);
}
END_TEST

START_TEST(reserve_declared_job_over_platform)
{
	/* the job's memory_reserve wins over the platform's, which wins over the default */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	workload_memory mem;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0);
	p.has_memory_reserve = true;
	p.memory_reserve = 3e9;
	mem_of(&m, &p, j, &mem);
	ck_assert(mem.reserve_of.declared);
	ck_assert_close(mem.reserve, 3e9, 1e-12);
	ck_assert_close(mem.reserve_of.context + mem.reserve_of.nccl, 0, 1e-12);
	j.memory_reserve_set = true;
	j.memory_reserve = 1e9;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.reserve, 1e9, 1e-12);
	/* fits counts it: a reserve of the whole remaining memory leaves it exactly full */
	double rest = mem.capacity - (mem.peak - mem.reserve);
	j.memory_reserve = rest;
	mem_of(&m, &p, j, &mem);
	ck_assert(mem.fits);
	j.memory_reserve = rest * 1.001;
	mem_of(&m, &p, j, &mem);
	ck_assert(!mem.fits);
}
END_TEST

START_TEST(max_seq_shrinks_with_reserve_and_hf)
{
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	p.gpu.memory_bytes = 2e9;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	/* a reduce bucket sized for the tiny model: DeepSpeed allocates the configured size
	 * whole, and the default 5e8 elements in fp32 would take the whole 2 GB */
	j.reduce_bucket_elems = 1e6;
	config_error err;
	ck_assert(workload_check(&m, &p, &j, &err));
	j.memory_reserve_set = true;
	long prev = LONG_MAX;
	/* non-increasing in the reserve, and strictly shorter once the reserve is large */
	for (double r = 0; r <= 1.5e9; r += 0.25e9) {
		j.memory_reserve = r;
		long s = workload_max_seq(&m, &p, &j, 64);
		ck_assert_int_le(s, prev);
		prev = s;
	}
	j.memory_reserve = 0;
	long none = workload_max_seq(&m, &p, &j, 64);
	j.memory_reserve = 1.5e9;
	ck_assert_int_lt(workload_max_seq(&m, &p, &j, 64), none);
	/* hf keeps more per token than megatron: never longer */
	j.memory_reserve = 0.5e9;
	long hf = workload_max_seq(&m, &p, &j, 64);
	j.impl = CONFIG_IMPL_MEGATRON;
	long mg = workload_max_seq(&m, &p, &j, 64);
	ck_assert_int_lt(hf, mg);
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
	j.memory_reserve_set = true; /* none: 64 MB would not hold the default */
	j.memory_reserve = 0;
	j.reduce_bucket_elems = 1e6; /* nor the default 5e8-element bucket, allocated whole */
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
	long full = workload_max_seq(&m, &p, &j, 64);
	ck_assert_int_ge(full, best);
	/* max-seq's boundary is the peak with the loss phase and the rebuilt layer apart: at the
	 * longest fitting sequence the fields summed without subtracting not_concurrent would
	 * already exceed the capacity */
	j.seq_len = full;
	mem_of(&m, &p, j, &mem);
	ck_assert(mem.fits);
	ck_assert(mem.peak + mem.not_concurrent > mem.capacity);
	/* nothing fits when model states alone exceed memory */
	p.gpu.memory_bytes = 1e3;
	ck_assert_int_eq(workload_max_seq(&m, &p, &j, 64), 0);
}
END_TEST

START_TEST(selective_recompute_by_hand)
{
	/* Ulysses N = 4, B = 1, S = 32 on the tiny model: t = 8, a = 4, d = 16, L = 2 (layer
	 * totals from activations_match_hand_derivation: megatron 15552, hf 21696; final norm
	 * megatron 2080, hf 4128). Selective recompute checkpoints the core attention: it drops
	 * FlashAttention's output 2·t·a·d = 1024 and log-sum-exp 4·t·a = 128, core = 1152 per
	 * layer, and holds one layer's core again while that layer's backward re-runs it:
	 *   megatron: 2·(15552 - 1152) + 1152 + 2080 = 32032 (none: 33184)
	 *   hf:       2·(21696 - 1152) + 1152 + 4128 = 46368 (none: 47520)
	 * Without the s² attention matrix (FlashAttention never stores it, Korthikanti et al.'s
	 * 5·a·s²·b term) selective recompute saves (L - 1)·core: 1152 here. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	workload_memory mem;
	config_job j = tiny_megatron_job();
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 32032, 1e-12);
	ck_assert_close(mem.logits, 4800, 1e-12); /* the head is untouched */
	j.impl = CONFIG_IMPL_HF;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 46368, 1e-12);
	/* between none and full for a deep enough model: L = 8 */
	m.layers = 8;
	double acts[3];
	const config_recompute rc[3] = {CONFIG_RECOMPUTE_NONE, CONFIG_RECOMPUTE_SELECTIVE, CONFIG_RECOMPUTE_FULL};
	for (int i = 0; i < 3; i++) {
		j.recompute = rc[i];
		mem_of(&m, &p, j, &mem);
		acts[i] = mem.activations;
	}
	ck_assert_close(acts[0] - acts[1], 7 * 1152.0, 1e-12);
	ck_assert(acts[2] < acts[1]);
}
END_TEST

START_TEST(tiling_memory_ratio)
{
	/* TiledMLP with n tiles keeps no MLP intermediates and holds one tile's,
	 * ceil(t/n)/t of them. megatron, t = 8: the MLP saves 2·3·t·f = 6144 per layer.
	 *   n = 4: tile of 2 tokens, 6144·2/8 = 1536 (the ratio 1/4);
	 *     none: 2·(15552 - 6144) + 1536 + 2080 = 22432
	 *     full: 2·1024 (inputs) + (15552 - 6144 + 1536) + 2080 = 15072 (untiled 19680)
	 *   n = 3: tiles of ceil(8/3) = 3 tokens, 6144·3/8 = 2304; full: 2048 + 11712 + 2080 = 15840.
	 * Tiled logits, n = 4: the fused loss keeps one tile's logits 6·2·V = 1200 and the
	 * head input's gradient 2·t·h = 1024: 2224 (untiled 6·t·V = 4800). */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	workload_memory mem, base;
	config_job j = tiny_megatron_job();
	j.tile_mlp = 4;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 22432, 1e-12);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 15072, 1e-12);
	j.tile_mlp = 1;
	mem_of(&m, &p, j, &base);
	/* the ratio: what the tiles save is the MLP term times (1 - ceil(t/n)/t) */
	ck_assert_close(base.activations - mem.activations, 6144 * (1 - 2.0 / 8), 1e-12);
	j.tile_mlp = 3;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 15840, 1e-12);
	j.tile_mlp = 1;
	j.tile_logits = 4;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.logits, 2224, 1e-12);
	ck_assert_close(mem.activations, base.activations, 1e-12);
	/* more tiles never need more memory */
	double prev = INFINITY;
	for (int n = 1; n <= 8; n++) {
		j.tile_mlp = j.tile_logits = n;
		mem_of(&m, &p, j, &mem);
		ck_assert(mem.activations + mem.logits <= prev);
		prev = mem.activations + mem.logits;
	}
}
END_TEST

START_TEST(offload_moves_checkpoints_to_the_host)
{
	/* L = 4, megatron, full recompute, Ulysses N = 4, S = 4096: t = 1024, 128 times the
	 * t = 8 of activations_match_hand_derivation (every term is linear in t): a layer saves
	 * 15552·128 = 1990656, the final norm 2080·128 = 266240, a checkpoint 2·t·h = 131072.
	 *   device: all four 4·131072 + the rebuilt layer + final norm = 2781184;
	 *   offload: only the one copied out and the one fetched back, 2·131072: 2519040;
	 *   host: 4·131072 = 524288 per GPU, 4 GPUs on the node: 2097152 per node. */
	config_model m = tu_model();
	m.layers = 4;
	config_platform p = tu_platform(1, 4, 1);
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 2097152;
	workload_memory mem;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 4096, 0);
	j.memory_reserve_set = true;
	j.memory_reserve = 0;
	j.impl = CONFIG_IMPL_MEGATRON;
	j.recompute = CONFIG_RECOMPUTE_FULL;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 2781184, 1e-12);
	ck_assert_close(mem.host, 0, 1e-12);
	j.offload_activations = true;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.activations, 2519040, 1e-12);
	ck_assert_close(mem.host, 524288, 1e-12);
	ck_assert_close(mem.host_node, 2097152, 1e-12);
	ck_assert(mem.host_fits && mem.fits);
	/* one byte less of host memory: the node's checkpoints no longer fit, nor the job */
	p.host.memory = 2097151;
	mem_of(&m, &p, j, &mem);
	ck_assert(!mem.host_fits);
	ck_assert(!mem.fits);
	/* the layer's saved bytes the copies move: its input */
	workload_layout l;
	config_error err;
	ck_assert(workload_layout_make(&m, &j, &l, &err));
	ck_assert_close(workload_layer_saved_bytes(&m, &j, &l), 131072, 1e-12);
}
END_TEST

START_TEST(technique_checks_say_what_to_change)
{
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_error err;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 0);
	/* offload without a host link */
	j.recompute = CONFIG_RECOMPUTE_FULL;
	j.offload_activations = true;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "host_link"), "%s", err.msg);
	/* offload without full recompute */
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 1e12;
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "--recompute full"), "%s", err.msg);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
	/* tiles: t = 8 tokens per GPU, so 1..8 */
	j.tile_mlp = 8;
	ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
	j.tile_mlp = 9;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "--tile-mlp 9") && strstr(err.msg, "from 1 to 8"), "%s", err.msg);
	j.tile_mlp = 1;
	j.tile_logits = 0;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "tile_logits"), "%s", err.msg);
	/* a platform host link out of range */
	j.tile_logits = 1;
	p.host.memory = 10; /* below 1 MB */
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "memory"), "%s", err.msg);
}
END_TEST

START_TEST(techniques_lengthen_max_seq)
{
	/* Each technique frees activation memory, so none of them shortens the longest
	 * sequence, and offload + tiling on full recompute go furthest. */
	config_model m = tu_model();
	m.layers = 8;
	config_platform p = tu_platform(1, 4, 1);
	p.gpu.memory_bytes = 64e6;
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 1e15;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, 0);
	j.memory_reserve_set = true;
	j.memory_reserve = 0;
	j.reduce_bucket_elems = 1e6; /* ZeRO-1 below allocates it whole: sized for 64 MB */
	long none = workload_max_seq(&m, &p, &j, 64);
	j.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	long sel = workload_max_seq(&m, &p, &j, 64);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	long full = workload_max_seq(&m, &p, &j, 64);
	j.offload_activations = true;
	long off = workload_max_seq(&m, &p, &j, 64);
	j.tile_mlp = j.tile_logits = 4;
	long all = workload_max_seq(&m, &p, &j, 64);
	ck_assert_int_gt(none, 0);
	ck_assert_int_ge(sel, none);
	ck_assert_int_gt(full, sel);
	ck_assert_int_gt(off, full);
	ck_assert_int_gt(all, off);
	/* optimizer offload frees the GPU's optimizer states (ZeRO-1: 12·psi/4), so the longest
	 * sequence grows as well */
	p.host.memory_bandwidth = 100e9;
	j.zero_stage = 1;
	long z1 = workload_max_seq(&m, &p, &j, 64);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	long z1_off = workload_max_seq(&m, &p, &j, 64);
	ck_assert_int_gt(z1, 0);
	ck_assert_int_gt(z1_off, z1);
}
END_TEST

START_TEST(offload_optimizer_moves_states_to_the_host)
{
	/* ZeRO-Offload (docs/model.md "Memory techniques"), W = 4 on one node, reserve 0:
	 *   GPU: the 12 bytes per parameter of fp32 master, m and v leave; ZeRO-1 keeps
	 *     12·psi/4 = 3·psi on each GPU without offload, 0 with, so the peak drops by 3·psi
	 *     exactly and params, grads, activations, logits and buffers stay as they were;
	 *   host: master, m, v and the fp32 gradient buffer the CPU step reads, 16 bytes per
	 *     parameter of the shard: 16·psi/4 = 4·psi per GPU, 16·psi for the node's 4 GPUs.
	 * ZeRO-3 shards the same 16 bytes over the same 4 ranks and keeps its bf16 gradient
	 * partition on the host too (stage3.py: grad_partitions_flat_buffer on self.device, the
	 * cpu under offload): host 18·psi/4 = 4.5·psi per GPU, the GPU's grads 0.
	 * With activation offload too, the host holds both: + 2 checkpoints of 2·t·h. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	const double psi = config_model_params(&m);
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 16.0 * psi;
	p.host.memory_bandwidth = 100e9;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.memory_reserve_set = true;
	j.memory_reserve = 0;
	workload_memory off, on;
	mem_of(&m, &p, j, &off);
	ck_assert_close(off.optimizer, 3.0 * psi, 1e-12);
	ck_assert_close(off.host, 0, 1e-12);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	mem_of(&m, &p, j, &on);
	ck_assert_close(on.optimizer, 0, 1e-12);
	ck_assert_close(on.peak, off.peak - 3.0 * psi, 1e-12);
	ck_assert_close(on.params, off.params, 1e-12);
	ck_assert_close(on.grads, off.grads, 1e-12);
	ck_assert_close(on.activations + on.logits + on.buffers, off.activations + off.logits + off.buffers, 1e-12);
	ck_assert_close(on.host_optimizer, 4.0 * psi, 1e-12);
	ck_assert_close(on.host, 4.0 * psi, 1e-12);
	ck_assert_close(on.host_node, 16.0 * psi, 1e-12);
	ck_assert(on.host_fits && on.fits);
	/* the node's host memory one byte short: neither the states nor the job fit */
	p.host.memory = 16.0 * psi - 1;
	mem_of(&m, &p, j, &on);
	ck_assert(!on.host_fits);
	ck_assert(!on.fits);
	p.host.memory = 1e12;
	j.zero_stage = 3;
	mem_of(&m, &p, j, &on);
	ck_assert_close(on.optimizer, 0, 1e-12);
	ck_assert_close(on.grads, 0, 1e-12);
	ck_assert_close(on.host, 4.5 * psi, 1e-12);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_NONE;
	mem_of(&m, &p, j, &off);
	ck_assert_close(off.grads, 0.5 * psi, 1e-12); /* on the GPU without offload */
	ck_assert_close(on.peak, off.peak - 3.0 * psi - 0.5 * psi, 1e-12);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	/* both offloads: t = 8, checkpoints 2·t·h = 1024 bytes per layer, 2 layers */
	j.recompute = CONFIG_RECOMPUTE_FULL;
	j.offload_activations = true;
	mem_of(&m, &p, j, &on);
	ck_assert_close(on.host_optimizer, 4.5 * psi, 1e-12);
	ck_assert_close(on.host, 4.5 * psi + 2.0 * 1024, 1e-12);
}
END_TEST

START_TEST(offload_optimizer_checks_say_what_to_change)
{
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_error err;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 1);
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	/* no host link */
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "--offload-optimizer cpu needs a host link") && strstr(err.msg, "host_link"), "%s",
		      err.msg);
	/* a host link without the host's DRAM bandwidth */
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 1e12;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "memory_bandwidth"), "%s", err.msg);
	p.host.memory_bandwidth = 100e9;
	ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
	/* ZeRO-0: refused as DeepSpeed does, whatever the platform */
	j.zero_stage = 0;
	ck_assert(!workload_check(&m, &p, &j, &err));
	ck_assert_msg(strstr(err.msg, "ZeRO stage 1, 2 or 3") && strstr(err.msg, "--zero 0"), "%s", err.msg);
	/* no offload: nothing asked of the platform */
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_NONE;
	p.host.bandwidth = 0;
	ck_assert_msg(workload_check(&m, &p, &j, &err), "%s", err.msg);
}
END_TEST

START_TEST(loss_and_rebuilt_layer_never_coexist)
{
	/* Backward runs the loss, lm_head and the final norm before any layer, and autograd
	 * frees each node's saved tensors once its backward ran; the transient (a rebuilt
	 * layer, the re-run attention) exists only later. not_concurrent is the smaller of
	 * loss phase = logits - what the loop keeps + final norm, and transient.
	 * Ulysses N = 4, B = 1, S = 32 on the tiny model (t = 8; totals from
	 * activations_match_hand_derivation and selective_recompute_by_hand), reserve 0,
	 * buffers 2048 + 4·psi (a2a + ZeRO-0 fp32 bucket), model states 16·psi.
	 * 1) logits > transient, megatron, selective recompute: transient = core = 1152,
	 *    loss phase 4800 + 2080 = 6880: not_concurrent 1152;
	 *    peak = 16·psi + 32032 + 4800 + 2048 + 4·psi - 1152 = 20·psi + 37728
	 *    (= 2 layers·(15552 - 1152) + final norm 2080 + logits 4800 + 2048 + 20·psi).
	 * 2) transient > logits, megatron, full recompute: transient = the rebuilt layer 15552,
	 *    loss phase 6880: not_concurrent 6880;
	 *    peak = 16·psi + 19680 + 4800 + 2048 + 4·psi - 6880 = 20·psi + 19648
	 *    (= inputs 2·1024 + rebuilt layer 15552 + a2a 2048 + 20·psi).
	 * 3) hf, full recompute: the loop keeps the bf16 logits 2·t·V = 1600 through backward;
	 *    loss phase 11200 - 1600 + 4128 = 13728 < transient 21696: not_concurrent 13728;
	 *    peak = 20·psi + 27872 + 11200 + 2048 - 13728 = 20·psi + 27392
	 *    (= 2048 + 21696 + 1600 + 2048). hf-trainer: logits 9600, loss phase 9600 + 4128
	 *    = 13728 again, peak 20·psi + 25792: 1600 below hf, the kept logits.
	 * 4) no recompute, no tiles: no transient, not_concurrent 0; hf-trainer's peak
	 *    20·psi + 47520 + 9600 + 2048. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	double psi = config_model_params(&m);
	workload_memory mem;
	const struct {
		config_impl impl;
		config_recompute rc;
		double activations, logits, not_concurrent, peak_less_states; /* peak - 20·psi */
	} cases[] = {
		{CONFIG_IMPL_MEGATRON, CONFIG_RECOMPUTE_SELECTIVE, 32032, 4800, 1152, 37728},
		{CONFIG_IMPL_MEGATRON, CONFIG_RECOMPUTE_FULL, 19680, 4800, 6880, 19648},
		{CONFIG_IMPL_HF, CONFIG_RECOMPUTE_FULL, 27872, 11200, 13728, 27392},
		{CONFIG_IMPL_HF_TRAINER, CONFIG_RECOMPUTE_FULL, 27872, 9600, 13728, 25792},
		{CONFIG_IMPL_HF_TRAINER, CONFIG_RECOMPUTE_NONE, 47520, 9600, 0, 47520 + 9600 + 2048},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		config_job j = tiny_megatron_job();
		j.impl = cases[i].impl;
		j.recompute = cases[i].rc;
		mem_of(&m, &p, j, &mem);
		ck_assert_close(mem.activations, cases[i].activations, 1e-12);
		ck_assert_close(mem.logits, cases[i].logits, 1e-12);
		ck_assert_close(mem.not_concurrent, cases[i].not_concurrent, 1e-12);
		ck_assert_close(mem.peak, 20 * psi + cases[i].peak_less_states, 1e-12);
	}

	/* The fragmentation share is of the peak's dynamic memory (ZeRO-3, full recompute):
	 * 0.15·(activations + logits + buffers - not_concurrent). */
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 32, 3);
	j.recompute = CONFIG_RECOMPUTE_FULL;
	mem_of(&m, &p, j, &mem);
	ck_assert(mem.not_concurrent > 0);
	ck_assert_close(mem.reserve_of.fragmentation,
			0.15 * (mem.activations + mem.logits + mem.buffers - mem.not_concurrent), 1e-12);

	/* Invariant over implementations, recompute, tiles, offload and ZeRO stages: the fields
	 * sum to the peak, and not_concurrent is never more than either of the two phases it
	 * stands for (below the activations, and below the logits plus the activations). */
	const config_impl impls[] = {CONFIG_IMPL_HF, CONFIG_IMPL_HF_TRAINER, CONFIG_IMPL_MEGATRON};
	const config_recompute rcs[] = {CONFIG_RECOMPUTE_NONE, CONFIG_RECOMPUTE_SELECTIVE, CONFIG_RECOMPUTE_FULL};
	p.host.bandwidth = 10e9;
	p.host.latency = 1e-6;
	p.host.memory = 1e12;
	p.host.memory_bandwidth = 100e9;
	for (int i = 0; i < 3; i++)
		for (int r = 0; r < 3; r++)
			for (int tiles = 1; tiles <= 4; tiles *= 4)
				for (int z = 0; z <= 3; z++)
					for (int off = 0; off <= (r == 2); off++) {
						config_job k = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 64, z);
						k.impl = impls[i];
						k.recompute = rcs[r];
						k.tile_mlp = k.tile_logits = tiles;
						k.offload_activations = off;
						mem_of(&m, &p, k, &mem);
						ck_assert_close(mem.peak, fields_peak(&mem), 1e-12);
						ck_assert(mem.not_concurrent >= 0);
						ck_assert(mem.not_concurrent < mem.activations);
						if (rcs[r] == CONFIG_RECOMPUTE_NONE && tiles == 1)
							ck_assert(mem.not_concurrent == 0);
						else
							ck_assert(mem.not_concurrent > 0);
					}
}
END_TEST


START_TEST(zero3_gathers_the_head_weight)
{
	/* ZeRO-3 over W = 4 gathers the output layer's weight whole, V·h bf16 = 2·100·64 = 12800
	 * bytes (tiny model, untied), which the layer submodules' count leaves out.
	 * deepspeed: gathered for the head's forward, kept to its backward (max_reuse_distance),
	 *   released after: part of the loss phase. megatron, full recompute, t = 8: loss phase
	 *   4800 + 2080 + 12800 = 19680 against the rebuilt layer 15552: not_concurrent 15552
	 *   (6880 without the head), and buffers 12800 more than the layer units and bucket.
	 * layer (FSDP2): the root group (embedding + output) is not resharded after forward:
	 *   2·12800 for the whole step, 12800 when tied; not in the loss phase. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_job j = tiny_megatron_job();
	j.zero_stage = 3;
	j.recompute = CONFIG_RECOMPUTE_FULL;
	workload_memory ds, fsdp, tied;
	mem_of(&m, &p, j, &ds);
	ck_assert_close(ds.not_concurrent, 15552, 1e-12);
	ck_assert(ds.reserve == 0);
	ck_assert_close(ds.peak, fields_peak(&ds), 1e-12);
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	mem_of(&m, &p, j, &fsdp);
	ck_assert_close(fsdp.not_concurrent, 6880, 1e-12);
	m.tied_embeddings = true;
	mem_of(&m, &p, j, &tied);
	ck_assert_close(fsdp.buffers - tied.buffers, 12800, 1e-12);
	/* deepspeed's buffers: the layer units and the whole reduce bucket (5e8 elements, fp32
	 * with SP = 4: 2e9) plus the head */
	m.tied_embeddings = false;
	config_job k = j;
	k.zero3_prefetch = CONFIG_ZERO3_PREFETCH_DEEPSPEED;
	ck_assert_close(ds.buffers - 2048, 2.0 * workload_zero3_gathered_elems(&m, &k) + 4.0 * 5e8 + 12800, 1e-12);
	/* One GPU: nothing gathered, but DeepSpeed's bucket is allocated all the same: 5e8
	 * elements in bf16 (SP = 1) = 1e9. */
	config_platform one = tu_platform(1, 1, 1);
	workload_memory single;
	mem_of(&m, &one, tu_job(CONFIG_STRATEGY_ULYSSES, 1, 1, 1, 32, 3), &single);
	ck_assert_close(single.buffers, 1e9, 1e-12);
}
END_TEST

START_TEST(zero12_overlap_doubles_the_reduce_bucket)
{
	/* ZeRO-1/2 with overlap_comm hold two reduce buckets (DeepSpeed's ipg_buffer buf_0 and
	 * buf_1): tiny model, W = 4, the bucket of reduce_bucket_size = 5e8 elements (allocated
	 * whole) in the gradient communication precision, 4 bytes (fp32 with SP > 1): overlap
	 * adds 4·5e8 = 2e9 to the buffers and the peak (no recompute: no fragmentation share, no
	 * not_concurrent). ZeRO-0 and ZeRO-3 keep one. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	for (int z = 0; z <= 3; z++) {
		config_job j = tiny_megatron_job();
		j.zero_stage = z;
		j.zero_overlap = 0;
		workload_memory off, on;
		mem_of(&m, &p, j, &off);
		j.zero_overlap = 1;
		mem_of(&m, &p, j, &on);
		const double more = z == 1 || z == 2 ? 4.0 * 5e8 : 0.0;
		ck_assert_close(on.buffers - off.buffers, more, 1e-9);
		ck_assert_close(on.peak - off.peak, more, 1e-9);
	}
}
END_TEST

START_TEST(contiguous_gradients_off_reduces_from_the_gradients)
{
	/* contiguous_gradients: false allocates no reduce bucket; a bucket's worth of gradients,
	 * e = min(reduce_bucket, psi) elements, waits in its own bf16 tensors and is reduced
	 * through a flat copy (memory.c cites stage3.py and stage_1_and_2.py). Tiny model,
	 * Ulysses W = N = 4: gb = 4 (fp32 communication with SP > 1), so the cast copy counts
	 * (cast = 4); t = 8, megatron, no recompute, reserve 0; psi = 86848; all-to-all 2048;
	 * all-gather bucket at stages 1-2 capped at psi in bf16: 173696.
	 * ZeRO-2, overlap on, reduce_bucket 1e4 (e = 1e4):
	 *   on:  two buckets 2·4·1e4 = 80000 -> buffers 2048 + 80000 + 173696 = 255744;
	 *   off: two buckets' bf16 gradients 2·2·1e4 = 40000 + the flat bf16 copy 2·1e4 + its
	 *        fp32 cast 4·1e4 = 60000 -> 2048 + 100000 + 173696 = 275744.
	 * ZeRO-2, reduce_bucket 1e5 > psi (e = psi = 86848), off: 4·86848 + 6·86848 = 868480
	 *   -> 2048 + 868480 + 173696 = 1044224 (on: 975744, reduce_bucket_is_allocated_whole).
	 * ZeRO-1, overlap off, 1e4: its gradients are out->grads already: off 6·1e4 = 60000,
	 *   on 4·1e4 = 40000 -> off - on = 20000.
	 * ZeRO-3, 1e4: on 4·1e4 = 40000; off: bf16 gradients 2·1e4 + fp32 cast copies 4·1e4 +
	 *   reduce_scatter_coalesced's fp32 flat buffer 4·1e4 = 100000 -> off - on = 60000.
	 * One GPU, ZeRO-3, default bucket 5e8, SP = 1 (bf16, no cast): on 2·5e8 = 1e9; off
	 *   e = psi: (2 + 2)·86848 = 347392. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	config_job j = tiny_megatron_job();
	j.zero_stage = 2;
	j.zero_overlap = 1;
	j.reduce_bucket_elems = 1e4;
	workload_memory on, off;
	mem_of(&m, &p, j, &on);
	j.contiguous_gradients = false;
	mem_of(&m, &p, j, &off);
	ck_assert_close(on.buffers, 255744, 1e-12);
	ck_assert_close(off.buffers, 275744, 1e-12);
	ck_assert_close(off.peak, fields_peak(&off), 1e-12);
	ck_assert_close(off.peak - on.peak, 20000, 1e-12);
	j.reduce_bucket_elems = 1e5;
	mem_of(&m, &p, j, &off);
	ck_assert_close(off.buffers, 1044224, 1e-12);

	j = tiny_megatron_job();
	j.zero_stage = 1;
	j.zero_overlap = 0;
	j.reduce_bucket_elems = 1e4;
	mem_of(&m, &p, j, &on);
	j.contiguous_gradients = false;
	mem_of(&m, &p, j, &off);
	ck_assert_close(off.buffers - on.buffers, 20000, 1e-12);

	j = tiny_megatron_job();
	j.zero_stage = 3;
	j.reduce_bucket_elems = 1e4;
	mem_of(&m, &p, j, &on);
	j.contiguous_gradients = false;
	mem_of(&m, &p, j, &off);
	ck_assert_close(on.buffers, 2048 + 2.0 * workload_zero3_gathered_elems(&m, &j) + 40000 + 12800, 1e-12);
	ck_assert_close(off.buffers - on.buffers, 60000, 1e-12);
	ck_assert_close(off.peak - on.peak, 60000, 1e-12);
	ck_assert_close(off.peak, fields_peak(&off), 1e-12);

	config_platform one = tu_platform(1, 1, 1);
	config_job s = tu_job(CONFIG_STRATEGY_ULYSSES, 1, 1, 1, 32, 3);
	mem_of(&m, &one, s, &on);
	s.contiguous_gradients = false;
	mem_of(&m, &one, s, &off);
	ck_assert_close(on.buffers, 1e9, 1e-12);
	ck_assert_close(off.buffers, 347392, 1e-12);
}
END_TEST

START_TEST(reduce_bucket_is_allocated_whole)
{
	/* DeepSpeed allocates its reduce bucket at reduce_bucket_size elements before backward
	 * (contiguous_gradients, on by default): no cap at the model's or a layer's
	 * parameters. PyTorch FSDP (zero3_prefetch: layer) reduce-scatters one unit at a time:
	 * at most one layer's parameters. Tiny model, Ulysses W = N = 4 (fp32 gradient
	 * communication, 4 bytes), t = 8, megatron, no recompute, reserve 0:
	 *   psi = embedding 6400 + head 6400 + 2 layers x 36992 + final norm 64 = 86848;
	 *   a layer lp = q 4096 + k, v 4096 + o 4096 + MLP 24576 + norms 128 = 36992;
	 *   all-to-all 2048 (activations_match_hand_derivation).
	 * ZeRO-2, overlap_comm on, reduce_bucket 1e5 (> psi): two buckets 2·4·1e5 = 800000,
	 *   plus the all-gather bucket capped at psi in bf16, 2·86848 = 173696:
	 *   buffers = 2048 + 800000 + 173696 = 975744 (the old cap at psi: 2048 + 694784
	 *   + 173696 = 870528).
	 * ZeRO-3 (deepspeed), reduce_bucket 1e5: one bucket 4·1e5 = 400000 beside the gathered
	 *   parameters and the head; going to 2e5 adds exactly 400000 more (before: 4·lp =
	 *   147968 both times). FSDP: 4·lp = 147968 at either size. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	ck_assert_close(config_model_params(&m), 86848, 1e-12);
	ck_assert_close(config_model_layer_params(&m), 36992, 1e-12);
	config_job j = tiny_megatron_job();
	j.zero_stage = 2;
	j.zero_overlap = 1;
	j.reduce_bucket_elems = 1e5;
	workload_memory mem;
	mem_of(&m, &p, j, &mem);
	ck_assert_close(mem.buffers, 975744, 1e-12);
	ck_assert(mem.reserve == 0 && mem.not_concurrent == 0);
	ck_assert_close(mem.peak, fields_peak(&mem), 1e-12);

	j = tiny_megatron_job();
	j.zero_stage = 3;
	j.reduce_bucket_elems = 1e5;
	workload_memory a, b;
	mem_of(&m, &p, j, &a);
	ck_assert_close(a.buffers, 2048 + 2.0 * workload_zero3_gathered_elems(&m, &j) + 400000 + 12800, 1e-12);
	j.reduce_bucket_elems = 2e5;
	mem_of(&m, &p, j, &b);
	ck_assert_close(b.buffers - a.buffers, 400000, 1e-12);
	ck_assert_close(b.peak - a.peak, 400000, 1e-12);
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	mem_of(&m, &p, j, &b);
	j.reduce_bucket_elems = 1e5;
	mem_of(&m, &p, j, &a);
	ck_assert_close(a.buffers, b.buffers, 1e-12);
	ck_assert_close(a.buffers, 2048 + 2.0 * workload_zero3_gathered_elems(&m, &j) + 4.0 * 36992 + 2 * 12800, 1e-12);
}
END_TEST

/* Every memory field of two jobs, exactly. */
static void same_memory(const workload_memory *a, const workload_memory *b)
{
	const double x[] = {a->params, a->grads, a->optimizer, a->activations, a->logits, a->buffers,
			    a->not_concurrent, a->reserve, a->peak, a->host, a->host_optimizer};
	const double y[] = {b->params, b->grads, b->optimizer, b->activations, b->logits, b->buffers,
			    b->not_concurrent, b->reserve, b->peak, b->host, b->host_optimizer};
	for (size_t i = 0; i < sizeof x / sizeof *x; i++)
		ck_assert_double_eq(x[i], y[i]);
	ck_assert(a->fits == b->fits);
}

START_TEST(auto_buckets_are_the_numbers_written_out)
{
	/* reduce_bucket and prefetch_bucket "auto" (transformers' Trainer: h^2 and
	 * int(0.9 h^2)) are resolved against the model by workload_check. Tiny model, h = 64:
	 * reduce 64^2 = 4096, prefetch 0.9 * 64 = 57.6, 57.6 * 64 = 3686.4 -> 3686. The job
	 * with auto and the job with 4096 and 3686 written out have the same memory, field by
	 * field, at ZeRO-2 and ZeRO-3; and the bucket moves the memory (so the equality is not
	 * that of two defaults), by hand as in reduce_bucket_is_allocated_whole:
	 *   ZeRO-2, overlap on: two buckets 2·4·4096 = 32768 + all-gather bucket 173696 +
	 *     all-to-all 2048 = 208512;
	 *   ZeRO-3: 2048 + 2·gathered + 4·4096 + 12800. */
	config_model m = tu_model();
	config_platform p = tu_platform(1, 4, 1);
	for (int z = 2; z <= 3; z++) {
		config_job a = tiny_megatron_job(), n = tiny_megatron_job();
		a.zero_stage = n.zero_stage = z;
		a.zero_overlap = n.zero_overlap = 1;
		a.reduce_bucket_auto = a.prefetch_bucket_auto = true;
		a.reduce_bucket_elems = a.prefetch_bucket_elems = 0; /* as the parser leaves them */
		n.reduce_bucket_elems = 4096;
		n.prefetch_bucket_elems = 3686;
		config_error err;
		config_job checked = a;
		ck_assert_msg(workload_check(&m, &p, &checked, &err), "%s", err.msg);
		ck_assert_double_eq(checked.reduce_bucket_elems, 4096);
		ck_assert_double_eq(checked.prefetch_bucket_elems, 3686);
		workload_memory ma, mn, md;
		mem_of(&m, &p, a, &ma);
		mem_of(&m, &p, n, &mn);
		same_memory(&ma, &mn);
		config_job d = tiny_megatron_job(); /* DeepSpeed's default buckets at the same stage */
		d.zero_stage = z;
		d.zero_overlap = 1;
		mem_of(&m, &p, d, &md);
		ck_assert(ma.buffers != md.buffers);
		if (z == 2)
			ck_assert_close(ma.buffers, 208512, 1e-12);
		else
			ck_assert_close(ma.buffers, 2048 + 2.0 * workload_zero3_gathered_elems(&m, &checked) + 4.0 * 4096 + 12800,
					1e-12);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("memory");
	tcase_add_test(tc, model_states_by_zero_stage);
	tcase_add_test(tc, activations_match_hand_derivation);
	tcase_add_test(tc, reserve_default_by_hand);
	tcase_add_test(tc, reserve_declared_job_over_platform);
	tcase_add_test(tc, max_seq_shrinks_with_reserve_and_hf);
	tcase_add_test(tc, basp_keeps_ulysses_tokens_per_gpu);
	tcase_add_test(tc, fits_compares_peak_with_capacity);
	tcase_add_test(tc, max_seq_is_the_fitting_boundary);
	tcase_add_test(tc, selective_recompute_by_hand);
	tcase_add_test(tc, tiling_memory_ratio);
	tcase_add_test(tc, offload_moves_checkpoints_to_the_host);
	tcase_add_test(tc, technique_checks_say_what_to_change);
	tcase_add_test(tc, techniques_lengthen_max_seq);
	tcase_add_test(tc, offload_optimizer_moves_states_to_the_host);
	tcase_add_test(tc, offload_optimizer_checks_say_what_to_change);
	tcase_add_test(tc, loss_and_rebuilt_layer_never_coexist);
	tcase_add_test(tc, zero3_gathers_the_head_weight);
	tcase_add_test(tc, zero12_overlap_doubles_the_reduce_bucket);
	tcase_add_test(tc, reduce_bucket_is_allocated_whole);
	tcase_add_test(tc, auto_buckets_are_the_numbers_written_out);
	tcase_add_test(tc, contiguous_gradients_off_reduces_from_the_gradients);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
