/* bench/simgrid: wall time, CPU time and peak memory of the SimGrid engine simulating one
 * full training step (32 layers forward and backward, ZeRO reductions, optimizer and the
 * parameter all-gather) of Llama-3.1-8B on dgx-h100 nodes, for BASP and Ulysses with an
 * SP domain of 8 and data parallelism beyond it. Each size runs in its own process, through
 * engine_simgrid_run_opt (what `spsim run` does: identical layers and micro-steps
 * extrapolated, docs/simgrid.md §5.4); its times cover loading, the op program, platform
 * generation and every simulation it takes. CPU time (user + system, the child's and its
 * children's) is the figure to compare on a shared machine; wall time counts other load.
 *
 * Prints, per size, comment lines with each strategy's result (the flows its simulations
 * moved, and those of the full program, counted: docs/simgrid.md §5.4; the window runs
 * forked from a longer one, "Shared prefixes"), then
 *   gpus N wall_s X cpu_s C peak_rss_mb Y
 * with X, C and Y the larger of the strategies'. cpu_s counts every process of a run (the
 * window runs forked from a longer one included); peak_rss_mb is the largest process's: a
 * forked copy runs beside its paused trunk, the two sharing the pages the copy has not
 * written, so the two together hold up to about twice that (docs/simgrid.md §7).
 * Usage: bench/simgrid [MAX_GPUS] [--whole] [--sizes N,N,...] [--strategy basp|ulysses]
 *          [--zero 0-3] [--grad-accum G] [--runs N] [--cap CPU_SECONDS] [--no-repeat]
 *          [--no-share] [--against RECORD]
 *   --runs N     run each simulation N times, BASP and Ulysses alternating, and print the best
 *                run's wall and CPU time (the slower strategy's best), adding `runs N cpu_s_max C`
 *                with the worst run's CPU time; single runs of one binary spread by up to 2x on a
 *                shared machine (docs/simgrid.md §7). Every rerun must give the first run's step
 *                time exactly (the simulation is deterministic), or the bench fails.
 *   --whole      no symmetry reduction; each line then also gives the ratio of its CPU time
 *                to the symmetric run's and the largest relative step-time difference
 *                between the two (below 1e-9)
 *   --cap S      a size whose slower run took more than S CPU seconds (default 600) ends the
 *                series; the sizes left are listed as skipped
 *   --no-repeat  simulate every layer and micro-step (the full program)
 *   --no-share   run each layer window's counts as separate simulations instead of forks of
 *                the largest (docs/simgrid.md §5.4, "Shared prefixes"): the same results
 *   --against F  compare each step time with a record of an earlier run (its "# gpus" lines,
 *                e.g. bench/simgrid-record.txt) and fail past 1e-9 relative */
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

#define PROG "bench/simgrid"
#define MAX_SIZE 1048576L /* GPUs: 64 times the largest size of the series */

static int g_zero = 2;
static int g_accum = 1; /* --grad-accum: micro-steps per step */
static bool g_repeat = true; /* --no-repeat: simulate every layer and micro-step */
static bool g_share = true;  /* --no-share: no forked window runs */

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
	job.grad_accum = g_accum;
	job.zero_stage = g_zero;
	if (!workload_check(&m, &p, &job, &err) || !workload_plan_make(&m, &p, &job, &plan, &err)) {
		snprintf(o->err, sizeof o->err, "%s", err.msg);
		return;
	}
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
	engine_simgrid_options opt;
	engine_simgrid_options_default(&opt);
	opt.symmetry = !whole;
	opt.repeat = g_repeat;
	opt.share_prefix = g_share;
	engine_result r;
	if (!engine_simgrid_run_opt(&in, &opt, &r, &o->stats, &err)) {
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

/* Runs one simulation in a child; returns its wall time, CPU time (user + system, the
 * figure to compare on a loaded machine) and peak RSS (MiB). */
static bool run_child(int gpus, config_strategy st, bool whole, outcome *o, double *wall, double *cpu,
		      double *rss_mb)
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
	*cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	*rss_mb = ru.ru_maxrss / 1024.0; /* Linux: KiB */
	return got == sizeof *o && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* --against FILE: step times recorded by an earlier run of this benchmark (its "# gpus"
 * lines, each under a header naming its ZeRO stage), to hold a change of the engine to. */
typedef struct recorded {
	int zero, gpus;
	char strategy[16];
	double step;
} recorded;

static int load_record(const char *path, recorded *rec, int cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	int n = 0, zero = 2;
	while (fgets(line, sizeof line, f)) {
		const char *z = strstr(line, "ZeRO-");
		if (strncmp(line, "# llama", 7) == 0 && z)
			zero = atoi(z + 5);
		recorded r = {.zero = zero};
		if (n < cap && sscanf(line, "# gpus %d %15s step %lf", &r.gpus, r.strategy, &r.step) == 3)
			rec[n++] = r;
	}
	fclose(f);
	return n;
}

static void usage_text(FILE *f)
{
	fprintf(f, "usage: bench/simgrid [MAX_GPUS] [--whole] [--sizes N,N,...] [--strategy basp|ulysses] "
		   "[--zero 0-3] [--grad-accum G] [--runs N] [--cap SECONDS] [--no-repeat] [--no-share] [--against RECORD]\n");
}

static int usage(void)
{
	usage_text(stderr);
	return 2;
}

static int help(void)
{
	usage_text(stdout);
	printf("One full Llama-3.1-8B step on dgx-h100 nodes (SP domain 8) per size, each in its own process;\n"
	       "prints `gpus N wall_s X cpu_s C peak_rss_mb Y` per size (CPU time is the figure to compare\n"
	       "on a shared machine; it counts every process of a run, peak_rss_mb the largest: a window's\n"
	       "forked copy and its paused trunk hold up to about twice that together).\n"
	       "  MAX_GPUS     the largest size run (default 16384)\n"
	       "  --sizes L    the sizes, comma-separated, run in ascending order (default 8,64,512,1024,4096,16384)\n"
	       "  --whole      no symmetry reduction; adds the CPU ratio to the symmetric run and their step gap\n"
	       "  --strategy S basp or ulysses only (default both)\n"
	       "  --zero Z     ZeRO stage 0-3 (default 2)\n"
	       "  --grad-accum G  micro-steps per step, 1-4096 (default 1; the record holds G = 1)\n"
	       "  --runs N     each simulation N times (1-100, default 1), the strategies interleaved; the line gives\n"
	       "               the best run's times and adds `runs N cpu_s_max C` (the worst), for a machine whose\n"
	       "               speed drifts; every rerun must give the same step, or the bench fails\n"
	       "  --cap S      a size whose slower run took more than S CPU seconds ends the series (default 600)\n"
	       "  --no-repeat  simulate every layer and micro-step (no extrapolation)\n"
	       "  --no-share   each window's layer counts as separate simulations (not forked from the largest)\n"
	       "  --against F  compare each step time with a record (bench/simgrid-record.txt); fail past 1e-9\n");
	return 0;
}

static int by_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int sizes[32] = {8, 64, 512, 1024, 4096, 16384};
	int n_sizes = 6;
	long max_gpus = 16384;
	bool whole = false;
	int only = -1;    /* -1: both strategies */
	double cap = 600; /* a size whose slower run took longer (CPU s) ends the series */
	int runs = 1;     /* --runs: each simulation this many times, interleaved; the best is printed */
	static recorded rec[256];
	int n_rec = 0;
	double rec_diff = -1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return help();
		} else if (strcmp(argv[i], "--whole") == 0) {
			whole = true;
		} else if (strcmp(argv[i], "--against") == 0 && i + 1 < argc) {
			n_rec = load_record(argv[++i], rec, 256);
			if (n_rec < 0) {
				fprintf(stderr, "bench/simgrid: --against %s: cannot read the record\n", argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--no-repeat") == 0) {
			g_repeat = false;
		} else if (strcmp(argv[i], "--no-share") == 0) {
			g_share = false;
		} else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
			n_sizes = 0;
			long v;
			for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
				if (n_sizes == 32) {
					fprintf(stderr, "bench/simgrid: --sizes: at most 32 sizes\n");
					return 2;
				}
				if (!bench_long(PROG, "--sizes", t, 1, MAX_SIZE, &v))
					return 2;
				sizes[n_sizes++] = (int)v;
			}
			if (n_sizes == 0)
				return usage();
			/* ascending, so that MAX_GPUS and --cap end the series where they should */
			qsort(sizes, (size_t)n_sizes, sizeof *sizes, by_int);
		} else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "basp") == 0)
				only = 0;
			else if (strcmp(argv[i], "ulysses") == 0)
				only = 1;
			else
				return usage();
		} else if (strcmp(argv[i], "--zero") == 0 && i + 1 < argc) {
			long v;
			if (!bench_long(PROG, "--zero", argv[++i], 0, 3, &v))
				return 2;
			g_zero = (int)v;
		} else if (strcmp(argv[i], "--grad-accum") == 0 && i + 1 < argc) {
			long v;
			if (!bench_long(PROG, "--grad-accum", argv[++i], 1, 4096, &v))
				return 2;
			g_accum = (int)v;
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
			long v;
			if (!bench_long(PROG, "--runs", argv[++i], 1, 100, &v))
				return 2;
			runs = (int)v;
		} else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc) {
			if (!bench_double(PROG, "--cap", argv[++i], 1e-3, 1e7, &cap))
				return 2;
		} else if (argv[i][0] >= '0' && argv[i][0] <= '9') {
			if (!bench_long(PROG, "MAX_GPUS", argv[i], 1, MAX_SIZE, &max_gpus))
				return 2;
		} else {
			return usage();
		}
	}
	if (n_rec > 0 && g_accum != 1) {
		fprintf(stderr, "bench/simgrid: --against: the record holds steps of one micro-step, not %d\n", g_accum);
		return 2;
	}
	printf("# llama-3.1-8b on dgx-h100, one step: seq 32768, micro-batch 4, SP domain 8, ZeRO-%d%s%s\n", g_zero,
	       g_accum > 1 ? ", gradient accumulation" : "", whole ? ", whole system simulated" : "");
	if (g_accum > 1)
		printf("# %d micro-steps per step\n", g_accum);
	fflush(stdout);
	int failed = 0;
	for (int k = 0; k < n_sizes; k++) {
		int n = sizes[k];
		if (n > max_gpus)
			break;
		/* per strategy: the best and worst of its runs; the line gives the slower strategy's */
		double best_wall[2] = {INFINITY, INFINITY}, best_cpu[2] = {INFINITY, INFINITY}, worst_cpu[2] = {0, 0};
		double rss_max = 0, sym_best[2] = {INFINITY, INFINITY}, diff_max = 0;
		double first_step[2] = {-1, -1};
		bool done[2] = {false, false};
		for (int run = 0; run < runs; run++)
			for (int st = 0; st < 2; st++) {
				if ((only >= 0 && st != only) || (run > 0 && !done[st]))
					continue;
				config_strategy s = st ? CONFIG_STRATEGY_ULYSSES : CONFIG_STRATEGY_BASP;
				const char *name = workload_strategy_name(s);
				outcome o;
				double wall, cpu, rss;
				if (!run_child(n, s, whole, &o, &wall, &cpu, &rss) || !o.ok) {
					printf("# gpus %d %s: failed: %s\n", n, name, o.err);
					failed = 1; /* a failed rerun keeps the runs before it on the line */
					continue;
				}
				char of_runs[32] = "";
				if (runs > 1)
					snprintf(of_runs, sizeof of_runs, " (run %d of %d)", run + 1, runs);
				printf("# gpus %d %-7s step %.9f s (sp comm %.9f, zero comm %.9f); simulated ranks %d%s, %ld flows (full program %ld), %ld executions, %d forked copies%s, platform %.1f MB; wall %.3f s, cpu %.3f s, rss %.1f MB%s\n",
				       n, name, o.step_time, o.sp_comm, o.zero_comm, o.stats.simulated_ranks,
				       o.stats.period_nodes ? " (one period)" : "", o.stats.flows, o.stats.full_flows,
				       o.stats.executions, o.stats.copies,
				       o.stats.copies_missing ? " (some brought no result)" : "", o.stats.xml_bytes / 1e6, wall,
				       cpu, rss, of_runs);
				if (run == 0) {
					done[st] = true;
					first_step[st] = o.step_time;
					for (int j = 0; j < n_rec; j++)
						if (rec[j].zero == g_zero && rec[j].gpus == n && strcmp(rec[j].strategy, name) == 0) {
							double d = fabs(o.step_time - rec[j].step) / rec[j].step;
							printf("# gpus %d %-7s recorded step %.9f s, relative difference %.1e\n", n, name,
							       rec[j].step, d);
							if (d > rec_diff)
								rec_diff = d;
						}
				} else if (o.step_time != first_step[st]) {
					/* the simulation is deterministic: a rerun that differs is a bug */
					printf("# gpus %d %s: run %d gave step %.17g s, run 1 %.17g s\n", n, name, run + 1,
					       o.step_time, first_step[st]);
					failed = 1;
				}
				if (wall < best_wall[st])
					best_wall[st] = wall;
				if (cpu < best_cpu[st])
					best_cpu[st] = cpu;
				if (cpu > worst_cpu[st])
					worst_cpu[st] = cpu;
				if (rss > rss_max)
					rss_max = rss;
				outcome so;
				double swall, scpu, srss;
				if (whole && run_child(n, s, false, &so, &swall, &scpu, &srss) && so.ok) {
					double d = fabs(so.step_time - o.step_time) / o.step_time;
					if (scpu < sym_best[st])
						sym_best[st] = scpu;
					if (d > diff_max)
						diff_max = d;
				}
			}
		double wall_max = 0, cpu_max = 0, cpu_worst = 0, sym_max = 0;
		for (int st = 0; st < 2; st++) {
			if (!done[st])
				continue;
			if (best_wall[st] > wall_max)
				wall_max = best_wall[st];
			if (best_cpu[st] > cpu_max) {
				cpu_max = best_cpu[st];
				sym_max = isfinite(sym_best[st]) ? sym_best[st] : 0;
			}
			if (worst_cpu[st] > cpu_worst)
				cpu_worst = worst_cpu[st];
		}
		char spread[64] = "";
		if (runs > 1)
			snprintf(spread, sizeof spread, " runs %d cpu_s_max %.3f", runs, cpu_worst);
		if (whole && sym_max > 0)
			printf("gpus %d wall_s %.3f cpu_s %.3f peak_rss_mb %.1f ratio_to_symmetric %.1f step_rel_diff %.1e%s\n",
			       n, wall_max, cpu_max, rss_max, cpu_max / sym_max, diff_max, spread);
		else
			printf("gpus %d wall_s %.3f cpu_s %.3f peak_rss_mb %.1f%s\n", n, wall_max, cpu_max, rss_max, spread);
		fflush(stdout);
		if (cpu_max > cap) {
			for (int j = k + 1; j < n_sizes && sizes[j] <= max_gpus; j++)
				printf("# gpus %d skipped: %d GPUs took %.0f CPU s, over the cap of %.0f s (--cap)\n",
				       sizes[j], n, cpu_max, cap);
			break;
		}
	}
	if (rec_diff >= 0)
		printf("# largest relative difference to the record: %.1e\n", rec_diff);
	else if (n_rec > 0)
		printf("# no size and strategy of this run is in the record\n");
	return failed || rec_diff > 1e-9;
}
