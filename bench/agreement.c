/* bench/agreement: how close the analytic engine's step times come to the SimGrid engine's,
 * and whether any analytic step is shorter than its busiest link's own bytes allow.
 *
 * Grid: llama-3.1-8b, qwen1.5-7b, llama-3.2-3b x seq 8K, 16K, 32K x ZeRO 1, 2, 3 x
 * micro-batch 1, 2, 4, 8 x Ulysses, BASP on a100-2x4-ib400 (216 points), and optimizer
 * offload (offload_optimizer: cpu) on llama-3.2-3b at 16K, Ulysses, micro-batch 1 x ZeRO 1, 2,
 * 3 x grad_accum 1, 4 there (6 points, named .../offload/ga<G>); the sequence-parallel family
 * (ring, usp with u=4 and u=2, basp:inner=ring, basp:inner=usp, ring:comm=all_gather) on
 * llama-3.2-3b x seq 8K, 16K, 32K x ZeRO 1, 3 x micro-batch 1, 2, 4 with full recompute
 * (108 points, named .../<strategy spec>). Then a sample of
 * the planner's search space (`spsim plan`, src/plan/search.c) on every shipped platform,
 * and for each of those queries the Kendall tau between the analytic and SimGrid order of
 * the analytic top 10. Each point prints one line:
 *
 *   point <what> analytic_s A simgrid_s S link_bound_s L gap_pct G maxplus_s M maxplus_gap_pct H
 *
 * gap = (analytic - simgrid) / simgrid; link_bound = the busiest link's busy time over the
 * step (linkload.c, every op alone, summed over its instances); maxplus = the schedule
 * without sharing (every stream gets its links to itself), for comparison. Last lines:
 *
 *   maxplus points N median_gap_pct X worst_gap_pct Y below_link_bound Z
 *   kendall_tau queries Q min T mean U
 *   points N median_gap_pct X worst_gap_pct Y below_link_bound Z
 *
 * Usage: bench/agreement [--quick | --full]. Both run the whole grid; --quick (default)
 * adds the analytic top 5 and 2 more sampled configurations per planner query, --full the
 * top 10 and 8 more. SimGrid runs one process per point. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/analytic.h"
#include "engine/schedule.h"
#include "plan/plan.h"

typedef struct stats {
	double *gap;
	int n, cap, below;
} stats;

static void stats_add(stats *s, double gap, bool below)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->gap = realloc(s->gap, (size_t)s->cap * sizeof *s->gap);
		if (!s->gap)
			exit(1);
	}
	s->gap[s->n++] = gap;
	s->below += below;
}

static int by_abs(const void *a, const void *b)
{
	double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
	return (x > y) - (x < y);
}

static void stats_print(const char *prefix, stats *s)
{
	qsort(s->gap, (size_t)s->n, sizeof *s->gap, by_abs);
	double med = s->n ? fabs(s->gap[s->n / 2]) : 0, worst = s->n ? fabs(s->gap[s->n - 1]) : 0;
	if (s->n && s->n % 2 == 0)
		med = 0.5 * (fabs(s->gap[s->n / 2 - 1]) + fabs(s->gap[s->n / 2]));
	printf("%spoints %d median_gap_pct %.2f worst_gap_pct %.2f below_link_bound %d\n", prefix, s->n, 100 * med,
	       100 * worst, s->below);
}

/* The busiest link's busy time over a plan's step: every op's load alone, times its
 * instances (repeat, and grad_accum for micro-step blocks). */
static double link_bound(const config_platform *p, const workload_plan *plan)
{
	engine_op_load **ld;
	config_error err;
	if (!engine_analytic_loads(p, plan, &ld, &err))
		exit(1);
	double busy[ENGINE_LINK_COUNT] = {0};
	const workload_program *prog = &plan->program;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		double times = blk->repeat * (b < prog->n_micro ? prog->grad_accum : 1);
		for (int j = 0; j < blk->n_ops; j++)
			for (int k = 0; k < ld[b][j].n; k++)
				busy[ld[b][j].res[k]] += times * ld[b][j].busy[k];
	}
	free(ld);
	double m = 0;
	for (int r = 0; r < ENGINE_LINK_COUNT; r++)
		m = fmax(m, busy[r]);
	return m;
}

/* The max-plus schedule of a plan (no sharing between streams). */
static double maxplus_step(const config_platform *p, const workload_plan *plan)
{
	double **dur;
	config_error err;
	engine_result r;
	if (!engine_analytic_durations(p, plan, &dur, &err) || !engine_schedule_run(&plan->program, dur, &r, NULL, NULL, &err))
		exit(1);
	engine_durations_free(dur, plan->program.n_micro + plan->program.n_step);
	return r.step_time;
}

typedef struct point_result {
	double analytic, simgrid, bound, maxplus;
	bool ok;
} point_result;

static point_result run_point(const char *what, const config_model *m, const config_platform *p, const config_job *job,
			      stats *now, stats *before)
{
	point_result pr = {0};
	config_error err;
	plan_sim a, s;
	if (!plan_simulate(m, p, job, engine_find("analytic"), (engine_options){0}, &a, &err)) {
		printf("point %s error %s\n", what, err.msg);
		return pr;
	}
	pr.analytic = a.res.step_time;
	pr.bound = link_bound(p, a.primary);
	pr.maxplus = maxplus_step(p, a.primary);
	plan_sim_finish(&a);
	if (!plan_simulate(m, p, job, engine_find("simgrid"), (engine_options){0}, &s, &err)) {
		printf("point %s error %s\n", what, err.msg);
		return pr;
	}
	pr.simgrid = s.res.step_time;
	plan_sim_finish(&s);
	double gap = pr.analytic / pr.simgrid - 1, gap0 = pr.maxplus / pr.simgrid - 1;
	printf("point %s analytic_s %.6f simgrid_s %.6f link_bound_s %.6f gap_pct %+.2f maxplus_s %.6f maxplus_gap_pct "
	       "%+.2f\n",
	       what, pr.analytic, pr.simgrid, pr.bound, 100 * gap, pr.maxplus, 100 * gap0);
	fflush(stdout);
	stats_add(now, gap, pr.analytic < pr.bound * (1 - 1e-9));
	stats_add(before, gap0, pr.maxplus < pr.bound * (1 - 1e-9));
	pr.ok = true;
	return pr;
}

/* Kendall's tau-a between two orders of the same n items given by their values. */
static double kendall(const double *x, const double *y, int n)
{
	int c = 0, d = 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double s = (x[i] - x[j]) * (y[i] - y[j]);
			c += s > 0;
			d += s < 0;
		}
	return n > 1 ? (double)(c - d) / (n * (n - 1) / 2) : 1;
}

static bool load_model(const char *name, config_model *m)
{
	config_error err;
	if (config_load_model(name, m, &err))
		return true;
	fprintf(stderr, "bench/agreement: %s\n", err.msg);
	return false;
}

int main(int argc, char **argv)
{
	bool full = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--full"))
			full = true;
		else if (strcmp(argv[i], "--quick")) {
			fprintf(stderr, "bench/agreement: unknown argument '%s'; use --quick (default) or --full\n", argv[i]);
			return 2;
		}
	}
	if (!engine_find("simgrid")) {
		fprintf(stderr, "bench/agreement: needs the SimGrid engine (built without it)\n");
		return 1;
	}
	double t0 = bench_now();
	stats now = {0}, before = {0};
	config_error err;

	/* ---- the grid on the reference cluster ---- */
	static const char *const models[] = {"llama-3.1-8b", "qwen1.5-7b", "llama-3.2-3b"};
	static const long seqs[] = {8192, 16384, 32768};
	static const int batches[] = {1, 2, 4, 8};
	config_platform ref;
	if (!config_load_platform("a100-2x4-ib400", &ref, &err)) {
		fprintf(stderr, "bench/agreement: %s\n", err.msg);
		return 1;
	}
	for (int mi = 0; mi < 3; mi++) {
		config_model m;
		if (!load_model(models[mi], &m))
			return 1;
		for (int si = 0; si < 3; si++)
			for (int z = 1; z <= 3; z++)
				for (int bi = 0; bi < 4; bi++)
					for (int st = 0; st < 2; st++) {
						config_job job;
						config_job_defaults(&job);
						job.strategy = st ? CONFIG_STRATEGY_BASP : CONFIG_STRATEGY_ULYSSES;
						job.seq_len = seqs[si];
						job.zero_stage = z;
						job.micro_batch = batches[bi];
						if (!workload_check(&m, &ref, &job, &err)) {
							printf("point %s invalid %s\n", models[mi], err.msg);
							continue;
						}
						char what[160];
						snprintf(what, sizeof what, "%s/%s/%ldK/zero%d/B%d/%s", ref.name, models[mi],
							 seqs[si] / 1024, z, batches[bi], st ? "basp" : "ulysses");
						run_point(what, &m, &ref, &job, &now, &before);
					}
	}
	/* optimizer offload, with and without gradient accumulation (program.c OFFLOAD_*) */
	config_model m3;
	if (!load_model("llama-3.2-3b", &m3))
		return 1;
	for (int z = 1; z <= 3; z++)
		for (int ga = 1; ga <= 4; ga += 3) {
			config_job job;
			config_job_defaults(&job);
			job.strategy = CONFIG_STRATEGY_ULYSSES;
			job.seq_len = 16384;
			job.zero_stage = z;
			job.grad_accum = ga;
			job.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
			if (!workload_check(&m3, &ref, &job, &err)) {
				printf("point llama-3.2-3b/offload invalid %s\n", err.msg);
				continue;
			}
			char what[160];
			snprintf(what, sizeof what, "%s/llama-3.2-3b/16K/zero%d/B1/ulysses/offload/ga%d", ref.name, z, ga);
			run_point(what, &m3, &ref, &job, &now, &before);
		}
	/* the sequence-parallel family (ring attention, USP, BASP over them, Megatron-Core's
	 * all_gather context parallelism): rings and all-to-all groups of their own shapes
	 * beside ZeRO traffic on the shared NIC */
	static const char *const family[] = {"ring", "usp", "usp:u=2:r=4", "basp:inner=ring", "basp:inner=usp",
					     "ring:comm=all_gather"};
	for (size_t fi = 0; fi < sizeof family / sizeof *family; fi++)
		for (int si = 0; si < 3; si++)
			for (int z = 1; z <= 3; z += 2)
				for (int bi = 0; bi < 3; bi++) {
					config_job job;
					config_job_defaults(&job);
					job.seq_len = seqs[si];
					job.zero_stage = z;
					job.micro_batch = batches[bi];
					job.recompute = CONFIG_RECOMPUTE_FULL;
					if (!config_strategy_parse(family[fi], &job, NULL, &err) ||
					    !workload_check(&m3, &ref, &job, &err)) {
						printf("point %s invalid %s\n", family[fi], err.msg);
						continue;
					}
					char what[160];
					snprintf(what, sizeof what, "%s/llama-3.2-3b/%ldK/zero%d/B%d/%s", ref.name, seqs[si] / 1024,
						 z, batches[bi], family[fi]);
					run_point(what, &m3, &ref, &job, &now, &before);
				}
	double t_grid = bench_now() - t0;

	/* ---- the planner's space on every shipped platform ---- */
	char **names;
	int np = config_list_data("platforms", &names);
	config_model m8;
	if (!load_model("llama-3.1-8b", &m8))
		return 1;
	int top = full ? 10 : 5, sample = full ? 8 : 2, queries = 0;
	double tau_min = 1, tau_sum = 0;
	for (int pi = 0; pi < np; pi++) {
		config_platform p;
		if (!config_load_platform(names[pi], &p, &err)) {
			fprintf(stderr, "bench/agreement: %s\n", err.msg);
			return 1;
		}
		int budgets[2] = {p.gpus_per_node, 2 * p.gpus_per_node};
		plan_query q = {.model = &m8, .platforms = &p, .n_platforms = 1, .budgets = budgets, .n_budgets = 2,
				.seq_len = 16384, .global_tokens = 64L * 16384, .max_micro_batch = 8};
		plan_candidate *c;
		long n;
		plan_search_stats ps;
		if (!plan_search(&q, &c, &n, &ps, &err)) {
			fprintf(stderr, "bench/agreement: %s\n", err.msg);
			return 1;
		}
		n = plan_merge(c, n);
		int k = n < top ? (int)n : top;
		double xa[10], xs[10];
		int got = 0;
		for (long i = 0; i < n && (i < k || (sample > 0 && i % (n / sample + 1) == 0)); i++) {
			config_platform pp = p;
			pp.nodes = c[i].nodes;
			char what[200];
			snprintf(what, sizeof what, "plan/%s/%dgpu/%s/sp%d/B%d/zero%d/%s/%s", p.name, c[i].job.gpus,
				 c[i].variant->name, c[i].job.sp, c[i].job.micro_batch, c[i].job.zero_stage,
				 config_recompute_names[c[i].job.recompute], plan_a2a_name(c[i].job.a2a));
			point_result pr = run_point(what, &m8, &pp, &c[i].job, &now, &before);
			if (i < k && pr.ok) {
				xa[got] = pr.analytic;
				xs[got] = pr.simgrid;
				got++;
			}
		}
		if (got > 1) {
			double tau = kendall(xa, xs, got);
			printf("query %s top %d kendall_tau %.3f\n", p.name, got, tau);
			tau_min = fmin(tau_min, tau);
			tau_sum += tau;
			queries++;
		}
		free(c);
		free(names[pi]);
	}
	free(names);
	double dt = bench_now() - t0;
	printf("wall_s grid %.1f total %.1f\n", t_grid, dt);
	stats_print("maxplus ", &before);
	printf("kendall_tau queries %d min %.3f mean %.3f\n", queries, tau_min, queries ? tau_sum / queries : 0);
	stats_print("", &now);
	free(now.gap);
	free(before.gap);
	return 0;
}
