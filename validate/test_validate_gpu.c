/* The validate orchestration on the GPUs of this machine: the NCCL transport, the CUDA
 * kernels (cuDNN's attention where built), cuBLAS. Ulysses and BASP layers against the
 * unpartitioned single-GPU run, up to 8K tokens, with kv heads that divide the group
 * and kv heads replicated across it, and query heads that do not divide it refused; a
 * short collective sweep, a compute run. Exit 77 (meson: SKIP) only when there is no
 * NVIDIA device; any other CUDA error fails with CUDA's message (transport_nccl.c).
 * Exit 1: a mismatch; 2: a failure. */
#include <stdio.h>
#include <string.h>

#include "validate.h"

static int failures;

static int layer(validate_transport *t, validate_strategy st, int B, long S, int h, int a, int g, int d)
{
	validate_layer_cfg cfg = {.strategy = st, .world = t->world, .micro_batch = B, .seq = S, .hidden = h, .heads = a,
				  .kv_heads = g, .head_dim = d, .warmup = 1, .iters = 2, .backward = true, .seed = 5};
	validate_groups gr;
	char err[512] = "";
	if (validate_groups_make(st, t->world, B, S, a, g, &gr, err, sizeof err)) {
		printf("  skip %s B%d: %s\n", validate_strategy_name(st), B, err);
		return 0;
	}
	validate_layer_result res;
	int rc = validate_layer_run(t, &cfg, &res, err, sizeof err);
	if (!rc)
		rc = validate_layer_check(t, &cfg, &res, KERNELS_BF16_TOL, err, sizeof err);
	if (rc) {
		fprintf(stderr, "layer %s B%d: %s %s\n", validate_strategy_name(st), B, validate_strerror(rc), err);
		validate_layer_result_finish(&res);
		return rc;
	}
	printf("  layer %-7s N%d B%d S%ld h%d a%d g%d d%d K%d: %s  Y err %.3g  dX err %.3g\n", validate_strategy_name(st),
	       t->world, B, S, h, a, g, d, res.groups.K, res.pass ? "ok  " : "FAIL", res.cmp_y.max_norm,
	       res.cmp_dx.max_norm);
	failures += !res.pass;
	validate_layer_result_finish(&res);
	return 0;
}

int main(void)
{
	validate_transport *t;
	int rc = validate_transport_nccl(validate_launch_single(), 0, 120, &t);
	if (rc == VALIDATE_ENODEV) {
		printf("SKIP: no NVIDIA device; the GPU validate tests need one\n");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "NCCL transport: %s\n", validate_strerror(rc));
		return 2;
	}
	printf("%d GPU(s) on %s\n", t->world, t->host);
	const int N = t->world;
	/* N = K·B: every divisor B of N gives a BASP grouping; B = 1 is Ulysses over all. */
	for (int B = 1; B <= N; B++) {
		if (N % B)
			continue;
		if ((rc = layer(t, VALIDATE_BASP, B, 128L * N / B * 2, 256, 8 * N, 2, 32)) ||
		    (rc = layer(t, VALIDATE_ULYSSES, B, 64L * N, 512, 4 * N, 4 * N, 128)))
			goto out;
	}
	/* GQA with kv heads replicated across the group (g < K). */
	if (N > 1 && (rc = layer(t, VALIDATE_ULYSSES, 1, 96L * N, 256, 2 * N, 1, 64)))
		goto out;
	/* 8K tokens: Llama-3.1-8B's head shape (d 128, 4:1 GQA) on 8 query heads per GPU. */
	if ((rc = layer(t, VALIDATE_ULYSSES, 1, 8192, 1024, 8 * N, 2 * N, 128)))
		goto out;
	/* Query heads that do not divide the group are refused with a sentence, not run. */
	if (N > 1) {
		validate_groups gr;
		char why[256] = "";
		if (validate_groups_make(VALIDATE_ULYSSES, N, 1, 64L * N, N + 1, 1, &gr, why, sizeof why) != VALIDATE_EINVAL ||
		    !strstr(why, "query heads do not divide")) {
			printf("  FAIL: %d query heads over %d ranks were not refused (%s)\n", N + 1, N, why);
			failures++;
		}
	}

	const int Ks[] = {2};
	validate_comm_cfg cc = {.min_bytes = 1024, .max_bytes = 1 << 22, .factor = 8, .warmup = 2, .iters = 5,
				.group_sizes = Ks, .n_group_sizes = N % 2 == 0 && N > 2 ? 1 : 0, .alltoall_world = true,
				.zero = true, .dtype = VALIDATE_BF16};
	char err[512] = "";
	if ((rc = validate_comm_sweep(t, &cc, NULL, NULL, NULL, err, sizeof err))) {
		fprintf(stderr, "comm sweep: %s %s\n", validate_strerror(rc), err);
		goto out;
	}
	printf("  comm sweep ok\n");
	const validate_model_dims m = {2, 1024, 16, 4, 64, 2816, 32000};
	validate_groups g;
	if ((rc = validate_groups_make(VALIDATE_BASP, N, 1, 1024L * N, 16, 4, &g, err, sizeof err)) == 0) {
		validate_compute_item items[32];
		int n = validate_compute_items(&m, &g, items, 32);
		if ((rc = validate_compute_run(t, items, n, 1, 2, NULL, NULL, err, sizeof err))) {
			fprintf(stderr, "compute: %s %s\n", validate_strerror(rc), err);
			goto out;
		}
		printf("  compute ok (%d kernels)\n", n);
	}
out:
	validate_transport_destroy(t);
	if (rc)
		return 2;
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
