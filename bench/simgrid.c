/* bench/simgrid: wall time and peak memory of the SimGrid engine simulating one full
 * training step (32 layers forward and backward, ZeRO-2 reductions, optimizer and the
 * parameter all-gather) of Llama-3.1-8B on dgx-h100 nodes, for BASP and Ulysses with an
 * SP domain of 8 and data parallelism beyond it. Each simulation runs in its own process
 * (SimGrid initialises once per process); its wall time covers loading, the op program,
 * platform generation and the simulation.
 *
 * Prints, per size, comment lines with each strategy's result, then
 *   gpus N wall_s X peak_rss_mb Y
 * with X and Y the larger of the two strategies'.
 * Usage: bench/simgrid [MAX_GPUS] [--whole]   (--whole: no symmetry reduction; each line
 * then also gives the ratio of its wall time to the symmetric run's, and the largest
 * relative step-time difference between the two, which must be below 1e-9) */
#define _DEFAULT_SOURCE /* wait4 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "engine/simgrid/simgrid.h"

typedef struct outcome {
	int ok;
	double step_time, sp_comm, zero_comm;
	engine_simgrid_stats stats;
	char err[CONFIG_ERROR_MAX];
} outcome;

static void simulate(int gpus, config_strategy st, bool whole, outcome *o)
{
	config_error err = {{0}};
	config_model m;
	config_platform p;
	workload_plan plan;
	if (!config_load_model("llama-3.1-8b", &m, &err) || !config_load_platform("dgx-h100", &p, &err)) {
		snprintf(o->err, sizeof o->err, "%s", err.msg);
		return;
	}
	p.nodes = (gpus + p.gpus_per_node - 1) / p.gpus_per_node;
	config_job job;
	config_job_defaults(&job);
	job.strategy = st;
	job.gpus = gpus;
	job.sp = 8;
	job.micro_batch = 4; /* BASP: 4 groups of K = 2 per SP domain */
	job.seq_len = 32768;
	job.grad_accum = 1;
	job.zero_stage = 2;
	if (!workload_check(&m, &p, &job, &err) || !workload_plan_make(&m, &p, &job, &plan, &err)) {
		snprintf(o->err, sizeof o->err, "%s", err.msg);
		return;
	}
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
	engine_simgrid_options opt;
	engine_simgrid_options_default(&opt);
	opt.symmetry = !whole;
	engine_result r;
	if (!engine_simgrid_run_with(&in, &opt, &r, &o->stats, &err)) {
		snprintf(o->err, sizeof o->err, "%s", err.msg);
		workload_plan_finish(&plan);
		return;
	}
	o->ok = 1;
	o->step_time = r.step_time;
	o->sp_comm = r.breakdown.sp_comm;
	o->zero_comm = r.breakdown.zero_comm;
	workload_plan_finish(&plan);
}

/* Runs one simulation in a child; returns its wall time and peak RSS (MiB). */
static bool run_child(int gpus, config_strategy st, bool whole, outcome *o, double *wall, double *rss_mb)
{
	int fd[2];
	if (pipe(fd) != 0)
		return false;
	fflush(stdout);
	double t0 = bench_now();
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(fd[0]);
		outcome c;
		memset(&c, 0, sizeof c);
		simulate(gpus, st, whole, &c);
		ssize_t w = write(fd[1], &c, sizeof c);
		_exit(w == (ssize_t)sizeof c ? 0 : 1);
	}
	close(fd[1]);
	memset(o, 0, sizeof *o);
	size_t got = 0;
	while (got < sizeof *o) {
		ssize_t k = read(fd[0], (char *)o + got, sizeof *o - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		return false;
	*wall = bench_now() - t0;
	*rss_mb = ru.ru_maxrss / 1024.0; /* Linux: KiB */
	return got == sizeof *o && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {8, 64, 512, 1024, 4096, 16384};
	long max_gpus = 16384;
	bool whole = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--whole") == 0)
			whole = true;
		else
			max_gpus = strtol(argv[i], NULL, 10);
	}
	printf("# llama-3.1-8b on dgx-h100, one step: seq 32768, micro-batch 4, SP domain 8, ZeRO-2%s\n",
	       whole ? ", whole system simulated" : "");
	fflush(stdout);
	int failed = 0;
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		int n = sizes[k];
		if (n > max_gpus)
			break;
		double wall_max = 0, rss_max = 0, sym_max = 0, diff_max = 0;
		for (int st = 0; st < 2; st++) {
			config_strategy s = st ? CONFIG_STRATEGY_ULYSSES : CONFIG_STRATEGY_BASP;
			outcome o;
			double wall, rss;
			if (!run_child(n, s, whole, &o, &wall, &rss) || !o.ok) {
				printf("# gpus %d %s: failed: %s\n", n, workload_strategy_name(s), o.err);
				failed = 1;
				continue;
			}
			printf("# gpus %d %-7s step %.6f s (sp comm %.6f, zero comm %.6f); simulated ranks %d%s, %ld flows, %ld executions, platform %.1f MB; wall %.3f s, rss %.1f MB\n",
			       n, workload_strategy_name(s), o.step_time, o.sp_comm, o.zero_comm, o.stats.simulated_ranks,
			       o.stats.period_nodes ? " (one period)" : "", o.stats.flows, o.stats.executions,
			       o.stats.xml_bytes / 1e6, wall, rss);
			if (wall > wall_max)
				wall_max = wall;
			if (rss > rss_max)
				rss_max = rss;
			outcome so;
			double swall, srss;
			if (whole && run_child(n, s, false, &so, &swall, &srss) && so.ok) {
				double d = fabs(so.step_time - o.step_time) / o.step_time;
				if (swall > sym_max)
					sym_max = swall;
				if (d > diff_max)
					diff_max = d;
			}
		}
		if (whole && sym_max > 0)
			printf("gpus %d wall_s %.3f peak_rss_mb %.1f ratio_to_symmetric %.1f step_rel_diff %.1e\n", n,
			       wall_max, rss_max, wall_max / sym_max, diff_max);
		else
			printf("gpus %d wall_s %.3f peak_rss_mb %.1f\n", n, wall_max, rss_max);
		fflush(stdout);
	}
	return failed;
}
