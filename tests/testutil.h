/* Helpers shared by the suites: hand-built platforms and models with round numbers, so
 * that expected values can be derived by hand next to each test. */
#ifndef SPSIM_TESTS_TESTUTIL_H
#define SPSIM_TESTS_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "engine/engine.h"
#include "workload/workload.h"

#define ck_assert_close(got, want, rel)                                                                        \
	do {                                                                                                     \
		double g_ = (got), w_ = (want);                                                                  \
		ck_assert_msg(fabs(g_ - w_) <= (rel) * fabs(w_) + 1e-300, "%s = %.12g, want %.12g (rel %g)", #got, \
			      g_, w_, (double)(rel));                                                            \
	} while (0)

/* nodes x gpus, NVSwitch 100 GB/s per GPU, 1 us; nics x 10 GB/s NICs, 10 us; all
 * efficiencies 1; 100 TFLOP/s, 1000 GB/s HBM, 80 GB. One process drives a node's GPUs
 * (nccl.processes per_node): NCCL's p2p path writes into the peer's buffer with no
 * staging drain (engine/nccl.c p2p_staging_drain), so the hand derivations of the
 * suites carry none; test_analytic.c's p2p_staging_* tests set per_gpu and derive it. */
static inline config_platform tu_platform(int nodes, int gpus, int nics)
{
	config_platform p;
	memset(&p, 0, sizeof p);
	strcpy(p.name, "hand");
	p.nodes = nodes;
	p.gpus_per_node = gpus;
	strcpy(p.gpu.name, "hand-gpu");
	p.gpu.peak_flops = 100e12;
	p.gpu.memory_bytes = 80e9;
	p.gpu.hbm_bandwidth = 1000e9;
	p.intra.fabric = CONFIG_FABRIC_NVSWITCH;
	p.intra.bandwidth = 100e9;
	p.intra.pair_bandwidth = 100e9;
	p.intra.latency = 1e-6;
	p.inter.nics_per_node = nics;
	p.inter.nic_bandwidth = 10e9;
	p.inter.latency = 10e-6;
	p.inter.topology = CONFIG_TOPO_SINGLE_SWITCH;
	p.inter.oversubscription = 1;
	p.eff.gemm = p.eff.attention = p.eff.memory = p.eff.intra_link = p.eff.inter_link = 1.0;
	p.nccl.processes = CONFIG_NCCL_PROCS_PER_NODE;
	return p;
}

/* A tiny Llama-style model: L=2, h=64, a=4, g=2, d=16, ffn=128, V=100, untied. */
static inline config_model tu_model(void)
{
	config_model m;
	memset(&m, 0, sizeof m);
	strcpy(m.name, "tiny");
	m.layers = 2;
	m.hidden = 64;
	m.heads = 4;
	m.kv_heads = 2;
	m.head_dim = 16;
	m.ffn = 128;
	m.vocab = 100;
	m.max_position = 4096;
	m.mlp = CONFIG_MLP_SWIGLU;
	m.norm = CONFIG_NORM_RMSNORM;
	return m;
}

static inline config_job tu_job(config_strategy s, int gpus, int sp, int B, long S, int zero)
{
	config_job j;
	config_job_defaults(&j);
	j.strategy = s;
	j.gpus = gpus;
	j.sp = sp;
	j.micro_batch = B;
	j.seq_len = S;
	j.zero_stage = zero;
	return j;
}

static inline const workload_op *tu_find(const workload_plan *plan, const char *block, const char *op)
{
	const workload_program *pr = &plan->program;
	for (int i = 0; i < pr->n_micro + pr->n_step; i++) {
		const workload_block *b = i < pr->n_micro ? &pr->micro[i] : &pr->step[i - pr->n_micro];
		if (strcmp(b->name, block) != 0)
			continue;
		for (int j = 0; j < b->n_ops; j++)
			if (strcmp(b->ops[j].name, op) == 0)
				return &b->ops[j];
	}
	return NULL;
}

static inline int tu_count(const workload_plan *plan, workload_category cat, workload_coll coll)
{
	int n = 0;
	const workload_program *pr = &plan->program;
	for (int i = 0; i < pr->n_micro + pr->n_step; i++) {
		const workload_block *b = i < pr->n_micro ? &pr->micro[i] : &pr->step[i - pr->n_micro];
		for (int j = 0; j < b->n_ops; j++)
			if (b->ops[j].kind == WL_OP_COMM && b->ops[j].cat == cat && b->ops[j].coll == coll)
				n += b->repeat;
	}
	return n;
}

/* Bytes of a step's communication ops of one category and collective, every instance
 * (repeat, and grad_accum for micro-step blocks). */
static inline double tu_comm_bytes(const workload_plan *plan, workload_category cat, workload_coll coll)
{
	double s = 0;
	const workload_program *pr = &plan->program;
	for (int i = 0; i < pr->n_micro + pr->n_step; i++) {
		const workload_block *b = i < pr->n_micro ? &pr->micro[i] : &pr->step[i - pr->n_micro];
		double times = (double)b->repeat * (i < pr->n_micro ? pr->grad_accum : 1);
		for (int j = 0; j < b->n_ops; j++)
			if (b->ops[j].kind == WL_OP_COMM && b->ops[j].cat == cat && b->ops[j].coll == coll)
				s += b->ops[j].bytes * times;
	}
	return s;
}

/* Writes text to path (created or truncated). */
static inline void tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Whole file into a malloc'd string (NULL when unreadable). */
static inline char *tu_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int c;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

static inline int tu_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
