/* BASP beyond divisibility: jobs whose micro-batch B does not divide the SP size N, as a
 * composite of equal parts (workload.h, docs/model.md "BASP beyond divisibility"). */
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"
#include "util/intmath.h"

/* A layout where every group has K ranks and one sequence, heads split as evenly as
 * possible: the busiest rank holds ceil(a/K) query heads and ceil(g/K) kv heads (or one
 * replicated kv head when g < K). */
static workload_layout unequal_layout(const config_model *m, const config_job *job, int K, int groups)
{
	workload_layout l = {.world = job->gpus, .sp = job->sp, .group_size = K, .n_groups = groups, .seqs_per_group = 1};
	l.tokens_per_rank = job->seq_len / K;
	l.heads_per_rank = util_ceil_div(m->heads, K);
	l.kv_heads_per_rank = m->kv_heads >= K ? util_ceil_div(m->kv_heads, K) : 1;
	l.kv_replicated = m->kv_heads >= K ? m->kv_heads : K;
	return l;
}

/* Contiguous placement of a domain's groups, larger groups first: the fewest ranks any
 * straddling group of size K keeps on one node (0: every group of size K fits in a node). */
static int straddle(int G, int N, int domains, const int *sizes, const int *counts, int K)
{
	int worst = 0, rank = 0;
	for (int d = 0; d < domains; d++)
		for (int i = 1; i >= 0; i--)
			for (int c = 0; c < counts[i]; c++) {
				int s = rank, e = rank + sizes[i] - 1;
				rank += sizes[i];
				if (sizes[i] != K || s / G == e / G)
					continue;
				int first = G - s % G; /* ranks on the first node */
				int side = first < sizes[i] - first ? first : sizes[i] - first;
				if (sizes[i] <= G && (worst == 0 || side < worst))
					worst = side;
			}
	(void)N;
	return worst;
}

static void set_group_size(workload_block *blocks, int n, int K)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < blocks[i].n_ops; j++)
			if (blocks[i].ops[j].kind == WL_OP_COMM && blocks[i].ops[j].group == WL_GROUP_SP)
				blocks[i].ops[j].group_size = K;
}

/* Moves every part's micro-step blocks, in order, into one program followed by the
 * first part's step blocks (the optimizer step and its collectives are the same for every
 * part: they depend on the parameters, not on the sequences). */
static bool merge(workload_composite *c, config_error *err)
{
	int nb = 0;
	for (int i = 0; i < c->n_parts; i++)
		nb += c->parts[i].plan.program.n_micro;
	const workload_program *p0 = &c->parts[0].plan.program;
	nb += p0->n_step;
	workload_block *blocks = calloc((size_t)nb, sizeof *blocks);
	if (!blocks)
		return config_fail(err, "out of memory");
	int k = 0;
	double flops = 0, hw = 0, dense = 0;
	workload_plan *m = &c->merged;
	*m = c->parts[0].plan;
	for (int i = 0; i < c->n_parts; i++) {
		workload_program *pr = &c->parts[i].plan.program;
		set_group_size(pr->micro, pr->n_micro, c->parts[i].plan.layout.group_size);
		for (int b = 0; b < pr->n_micro; b++) {
			blocks[k++] = pr->micro[b];
			pr->micro[b].ops = NULL; /* moved */
			pr->micro[b].n_ops = 0;
		}
		flops += c->parts[i].plan.model_flops_per_step;
		hw += c->parts[i].plan.hardware_flops_per_step;
		dense += c->parts[i].plan.model_flops_dense_per_step;
		if (c->parts[i].plan.memory.peak > m->memory.peak)
			m->memory = c->parts[i].plan.memory;
	}
	int n_micro = k;
	for (int b = 0; b < p0->n_step; b++) {
		blocks[k++] = p0->step[b];
		p0->step[b].ops = NULL;
		p0->step[b].n_ops = 0;
	}
	m->program = (workload_program){.micro = blocks, .n_micro = n_micro, .step = blocks + n_micro,
				       .n_step = k - n_micro, .grad_accum = p0->grad_accum};
	m->model_flops_per_step = flops;
	m->hardware_flops_per_step = hw;
	m->model_flops_dense_per_step = dense;
	return true;
}

long workload_padded_seq_len(long seq_len, int group_size)
{
	return (seq_len + group_size - 1) / group_size * group_size;
}

bool workload_compose(const config_model *m, const config_platform *p, const config_job *job,
		      workload_composite *c, config_error *err)
{
	memset(c, 0, sizeof *c);
	int N = job->sp, B = job->micro_batch;
	bool uneven = job->strategy == CONFIG_STRATEGY_BASP && N % B != 0;
	if (!uneven || job->basp_uneven == CONFIG_BASP_UNEVEN_ERROR) {
		c->kind = WL_COMPOSE_SINGLE;
		c->n_parts = 1;
		c->parts[0].job = *job;
		c->parts[0].ranks = job->gpus;
		return workload_plan_make(m, p, job, &c->parts[0].plan, err);
	}
	int domains = job->gpus / N;
	if (job->basp_uneven == CONFIG_BASP_UNEVEN_UNEQUAL) {
		/* N = q·B + r: r groups of q+1 ranks and B-r groups of q per domain. */
		c->kind = WL_COMPOSE_PARALLEL;
		int q = N / B, r = N % B;
		int sizes[2] = {q, q + 1}, counts[2] = {B - r, r};
		for (int i = 0; i < 2; i++) {
			if (counts[i] == 0)
				continue;
			workload_part *pt = &c->parts[c->n_parts];
			pt->job = *job;
			/* The sequence padded to a multiple of the group size: its padding tokens are
			 * computed, stored and exchanged like the others (the part's plan is built on
			 * the padded length; tokens/s counts the real ones, engine_result_finish). */
			pt->job.seq_len = workload_padded_seq_len(job->seq_len, sizes[i]);
			pt->ranks = counts[i] * sizes[i] * domains;
			workload_layout l = unequal_layout(m, &pt->job, sizes[i], counts[i] * domains);
			l.straddle_per_node = straddle(p->gpus_per_node, N, domains, sizes, counts, sizes[i]);
			if (!workload_plan_make_layout(m, p, &pt->job, &l, &pt->plan, err)) {
				workload_compose_finish(c);
				return false;
			}
			c->n_parts++;
		}
		return true;
	}
	c->kind = WL_COMPOSE_SEQUENTIAL;
	for (int left = B; left > 0 && c->n_parts < WORKLOAD_MAX_PARTS;) {
		int d = workload_divisor_at_most(N, left);
		workload_part *pt = &c->parts[c->n_parts];
		pt->job = *job;
		pt->job.micro_batch = d;
		pt->job.basp_uneven = CONFIG_BASP_UNEVEN_ERROR;
		pt->ranks = job->gpus;
		if (!workload_plan_make(m, p, &pt->job, &pt->plan, err)) {
			workload_compose_finish(c);
			return false;
		}
		c->n_parts++;
		left -= d;
	}
	if (!merge(c, err)) {
		workload_compose_finish(c);
		return false;
	}
	return true;
}

void workload_compose_finish(workload_composite *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_parts; i++)
		workload_plan_finish(&c->parts[i].plan);
	if (c->kind == WL_COMPOSE_SEQUENTIAL && c->merged.program.micro)
		workload_plan_finish(&c->merged);
	memset(c, 0, sizeof *c);
}

const workload_memory *workload_composite_memory(const workload_composite *c, const workload_plan *primary)
{
	const workload_memory *m = &primary->memory;
	if (c && c->kind == WL_COMPOSE_PARALLEL)
		for (int i = 0; i < c->n_parts; i++)
			if (c->parts[i].plan.memory.peak > m->peak)
				m = &c->parts[i].plan.memory;
	return m;
}
