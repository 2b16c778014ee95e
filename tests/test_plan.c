/* plan: sweep specs, grid expansion, the worker pool, resumable output, MPI split, the
 * planner and figures. Fixtures live in tests/data/plan/; SPSIM_DATA_DIR is the source root
 * and SPSIM_EXE the spsim executable (tests/meson.build). Expected values come from
 * direct runs of the workload + analytic engine (the pipeline a point must reproduce),
 * from exhaustive enumeration, or from invariants (row sets, counts, file formats). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "spsim_build.h"
#include "plan/plan.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- helpers --- */

static void fixture(char *buf, size_t len, const char *name)
{
	const char *root = getenv("SPSIM_DATA_DIR");
	ck_assert_ptr_nonnull(root);
	snprintf(buf, len, "%s/tests/data/plan/%s", root, name);
}

static const char *exe(void)
{
	const char *e = getenv("SPSIM_EXE");
	ck_assert_msg(e && *e, "SPSIM_EXE is not set");
	return e;
}

/* A fresh directory under /tmp; the name goes to buf. */
static void tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/spsim-plan-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(buf));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* Removes a directory made by tmpdir (left in place when a test fails, for a look). */
static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void load_spec(const char *name, plan_spec *s)
{
	char path[CONFIG_PATH_MAX];
	config_error e = {""};
	fixture(path, sizeof path, name);
	ck_assert_msg(plan_spec_load(path, s, &e), "%s: %s", name, e.msg);
}

/* Runs spsim with argv (NULL-terminated, argv[0] ignored), stdout and stderr to files in
 * dir when given; returns the exit status. */
static int run_exe(char *const argv[], const char *out_file)
{
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (out_file) {
			int fd = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				dup2(fd, STDOUT_FILENO);
				dup2(fd, STDERR_FILENO);
				close(fd);
			}
		}
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	size_t got = fread(b, 1, (size_t)n, f);
	b[got] = '\0';
	fclose(f);
	return b;
}

static long count_lines(const char *path)
{
	char *b = slurp(path);
	if (!b)
		return -1;
	long n = 0;
	for (char *c = b; *c; c++)
		n += *c == '\n';
	free(b);
	return n;
}

/* The rows of DIR/points.jsonl keyed by point, without the wall-clock field. */
static json_t *rows_by_point(const char *dir)
{
	json_t *rows;
	config_error e = {""};
	ck_assert_msg(plan_rows_load(dir, &rows, &e), "%s", e.msg);
	json_t *by = json_object();
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		json_object_del(r, "wall_s");
		ck_assert_msg(!json_object_get(by, plan_row_str(r, "point")), "point %s recorded twice",
			      plan_row_str(r, "point"));
		json_object_set(by, plan_row_str(r, "point"), r);
	}
	json_decref(rows);
	return by;
}

static void assert_same_rows(const char *dir_a, const char *dir_b, long expect)
{
	json_t *a = rows_by_point(dir_a), *b = rows_by_point(dir_b);
	ck_assert_int_eq((long)json_object_size(a), expect);
	ck_assert_int_eq((long)json_object_size(b), expect);
	const char *k;
	json_t *v;
	json_object_foreach(a, k, v)
	{
		json_t *w = json_object_get(b, k);
		ck_assert_msg(w, "point %s missing from %s", k, dir_b);
		ck_assert_msg(json_equal(v, w), "point %s differs between %s and %s", k, dir_a, dir_b);
	}
	json_decref(a);
	json_decref(b);
}

/* The analytic engine's result for one job, the way `spsim run` gets it. */
static engine_result direct(const config_model *m, const config_platform *p, config_job job, bool *fits)
{
	config_error e = {""};
	ck_assert_msg(workload_check(m, p, &job, &e), "%s", e.msg);
	workload_plan plan;
	engine_result r;
	ck_assert_msg(workload_plan_make(m, p, &job, &plan, &e), "%s", e.msg);
	engine_input in = {.model = m, .platform = p, .job = &job, .plan = &plan};
	ck_assert_msg(engine_find("analytic")->run(&in, &r, &e), "%s", e.msg);
	if (fits)
		*fits = plan.memory.fits;
	workload_plan_finish(&plan);
	return r;
}

/* A test that needs the SimGrid engine says so and passes where it is not built. */
static bool simgrid_missing(const char *test)
{
	if (engine_find("simgrid"))
		return false;
	fprintf(stderr, "%s: simgrid engine not built; skipped\n", test);
	return true;
}

/* ---------------------------------------------------------------- specs --- */

START_TEST(spec_axes_and_defaults)
{
	plan_spec s;
	load_spec("grid.yaml", &s);
	ck_assert_str_eq(s.name, "fixture");
	ck_assert_int_eq(s.n_points, 2 * 2 * 2 * 3 * 3 * 2 * 2);
	ck_assert(s.given[PLAN_AXIS_NODES] && s.given[PLAN_AXIS_NIC_BANDWIDTH]);
	ck_assert(!s.given[PLAN_AXIS_RECOMPUTE] && s.n[PLAN_AXIS_RECOMPUTE] == 1);
	/* 200 Gb/s = 25e9 bytes/s; "4K" = 4096 tokens; the baseline defaults to the first strategy */
	ck_assert_double_eq(s.values[PLAN_AXIS_NIC_BANDWIDTH][0].num, 25e9);
	ck_assert_double_eq(s.values[PLAN_AXIS_SEQ_LEN][0].num, 4096);
	ck_assert_str_eq(s.values[PLAN_AXIS_SEQ_LEN][0].text, "4096");
	ck_assert_str_eq(s.baseline, "ulysses");
	ck_assert_str_eq(s.strategies[2].label, "ulysses:sp=N/B");
	ck_assert_int_eq(s.strategies[2].sp_mode, PLAN_SP_PER_BATCH);
	ck_assert_str_eq(s.models[1].name, "qwen1.5-4b");
	/* unspecified: engine analytic, ZeRO from the job defaults, strategy list defaults */
	ck_assert_str_eq(s.values[PLAN_AXIS_ENGINE][0].text, "analytic");
	plan_spec_finish(&s);
}
END_TEST

START_TEST(spec_errors_are_located)
{
	static const struct {
		const char *file, *where, *what;
	} cases[] = {
		{"bad_key.yaml", ":5:3: ", "unknown key 'nic_bandwith' in 'sweep', expected one of: name,"},
		{"bad_quantity.yaml", ":5:28: ", "'nic_bandwidth': '400 furlongs' has an unknown unit"},
		{"bad_model.yaml", ":2:25: ", "model 'llama-9b' cannot be used: unknown model 'llama-9b'"},
		{"bad_duplicate.yaml", ":5:23: ", "'micro_batch' lists '1' twice, expected distinct values"},
		{"bad_zero.yaml", ":5:9: ", "'zero' must be an integer from 0 to 3, got '4'"},
		{"bad_impl.yaml", ":5:9: ", "'impl' must be one of: hf, megatron, hf-trainer, got 'fused'"},
		{"bad_recompute.yaml", ":5:26: ", "'recompute' must be one of: none, full, selective, got 'partial'"},
		{"bad_reserve.yaml", ":5:19: ", "'memory_reserve': '1 GiBs' has an unknown unit 'GiBs'"},
		{"bad_strategy.yaml", ":5:23: ", "unknown strategy 'tree', expected ulysses|basp"},
		{"bad_baseline.yaml", ":6:13: ", "baseline 'ring' is not one of the strategies of this sweep"},
		{"bad_missing.yaml", ":2:3: ", "missing required key 'seq_len' in 'sweep'"},
		{"bad_seq.yaml", ":4:17: ", "'seq_len' must be a token count from 1 to 4294967296 (K and M suffixes: 16K = 16384), got '16Q'"},
		{"bad_engine.yaml", ":5:11: ", "unknown engine 'warp-drive' (not built into this spsim), expected one of:"},
		{"bad_empty.yaml", ":4:12: ", "'seq_len' is an empty list, expected at least one value"},
		{"bad_map.yaml", ":5:10: ", "'nodes' must be a value or a list of values, got a mapping"},
		/* the same value spelled twice makes every point twice: 1 GiB = 1024 MiB, 400 Gbit/s =
		 * 50 GB/s */
		{"bad_same_reserve.yaml", ":5:32: ", "'memory_reserve' lists '1024MiB', the same value as '1GiB', expected "
						     "distinct values"},
		{"bad_same_bandwidth.yaml", ":5:28: ", "'nic_bandwidth' lists '50GB/s', the same value as '400Gbps'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[CONFIG_PATH_MAX], want[CONFIG_PATH_MAX + 512];
		fixture(path, sizeof path, cases[i].file);
		snprintf(want, sizeof want, "%s%s%s", path, cases[i].where, cases[i].what);
		plan_spec s;
		config_error e = {""};
		ck_assert_msg(!plan_spec_load(path, &s, &e), "%s was accepted", cases[i].file);
		ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s:\n got  %s\n want %s...", cases[i].file, e.msg,
			      want);
	}
}
END_TEST

START_TEST(grid_indices_and_keys)
{
	plan_spec s;
	load_spec("grid.yaml", &s);
	json_t *keys = json_object();
	for (long i = 0; i < s.n_points; i++) {
		plan_point p;
		char key[4096];
		plan_point_at(&s, i, &p);
		ck_assert_int_eq(p.index, i);
		/* mixed radix, strategy fastest: the index is recovered from the digits */
		long back = 0;
		for (int a = 0; a < PLAN_AXIS_COUNT; a++)
			back = back * s.n[a] + p.at[a];
		ck_assert_int_eq(back, i);
		ck_assert_int_eq(p.at[PLAN_AXIS_STRATEGY], i % 3);
		plan_point_key(&s, &p, key, sizeof key);
		ck_assert_msg(!json_object_get(keys, key), "key %s twice", key);
		json_object_set_new(keys, key, json_true());
	}
	plan_point p;
	char key[4096];
	plan_point_at(&s, 0, &p);
	plan_point_key(&s, &p, key, sizeof key);
	ck_assert_str_eq(key, "model=llama-3.2-1b;platform=a100-2x4-ib400;nodes=1;nic_bandwidth=200Gbps;zero=1;"
			      "seq_len=4096;micro_batch=1;strategy=ulysses");
	json_decref(keys);
	plan_spec_finish(&s);
}
END_TEST

START_TEST(point_applies_overrides_and_calibration)
{
	plan_spec s;
	load_spec("overrides.yaml", &s);
	ck_assert_int_eq(s.n_points, 2 * 2 * 2);
	ck_assert_str_eq(s.baseline, "basp");
	for (long i = 0; i < s.n_points; i++) {
		plan_point p;
		config_platform pl;
		config_job job;
		config_error e = {""};
		plan_point_at(&s, i, &p);
		ck_assert_msg(plan_point_job(&s, &p, &pl, &job, &e), "%s", e.msg);
		bool cal = p.at[PLAN_AXIS_CALIBRATION] == 1;
		int gpn = p.at[PLAN_AXIS_GPUS_PER_NODE] ? 4 : 2;
		ck_assert_int_eq(pl.gpus_per_node, gpn);
		ck_assert_int_eq(job.gpus, pl.nodes * gpn); /* every GPU of the (re-shaped) platform */
		ck_assert_int_eq(pl.inter.nics_per_node, 2);
		ck_assert_double_eq(pl.inter.nic_bandwidth, 100e9); /* 800 Gb/s, after any calibration */
		ck_assert_double_eq(pl.inter.latency, 7e-6);
		ck_assert_double_eq(pl.gpu.memory_bytes, 80.0 * 1024 * 1024 * 1024);
		ck_assert_double_eq(pl.intra.bandwidth, 120e9);
		if (pl.intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
			ck_assert_double_eq(pl.intra.pair_bandwidth, 120e9 / (gpn - 1));
		/* the calibration's measured NIC rate sets that efficiency to 1; its gemm replaces */
		ck_assert_double_eq(pl.eff.inter_link, cal ? 1.0 : s.platforms[p.at[PLAN_AXIS_PLATFORM]].eff.inter_link);
		ck_assert_double_eq(pl.eff.gemm, cal ? 0.5 : s.platforms[p.at[PLAN_AXIS_PLATFORM]].eff.gemm);
		/* the overrides are hardware: NCCL's own view of the links (which a calibration
		 * leaves at the platform's) follows them */
		ck_assert(pl.nccl.tuner.set == cal);
		if (cal) {
			ck_assert_double_eq(pl.nccl.tuner.nic_bw, 100e9);
			ck_assert_double_eq(pl.nccl.tuner.inter_lat, 7e-6);
			ck_assert_double_eq(pl.nccl.tuner.intra_bw, 120e9);
			ck_assert_double_eq(pl.nccl.tuner.pair_bw, pl.intra.pair_bandwidth);
		}
		ck_assert_int_eq(job.strategy, CONFIG_STRATEGY_BASP);
		ck_assert_int_eq(job.micro_batch, 2);
	}
	plan_spec_finish(&s);
}
END_TEST

/* The first line of a log's progress comes before any rate can be measured: it says "--"
 * rather than dividing a count by microseconds (a SimGrid run printed 2.6e+06 blocks/s);
 * the final line always has a number. */
START_TEST(progress_rate_waits_for_time)
{
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	plan_progress p;
	plan_progress_start(&p, f, 3, false);
	plan_progress_update(&p, 1, 0); /* a handful of tasks: a line each */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	plan_progress_update(&p, 3, 0);
	plan_progress_end(&p);
	char text[1024] = "";
	rewind(f);
	text[fread(text, 1, sizeof text - 1, f)] = '\0';
	fclose(f);
	double el = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (el < 0.05) /* the first update came well within the first tenth of a second */
		ck_assert_msg(strstr(text, "progress: 1/3 points (33%), 0 failed, -- points/s"), "%s", text);
	const char *last = strstr(text, "progress: 3/3");
	ck_assert_msg(last && !strstr(last, "-- points/s") && strstr(last, "elapsed"), "%s", text);
}
END_TEST

START_TEST(strategy_labels)
{
	plan_strategy st;
	config_error e = {""};
	config_job job;
	config_job_defaults(&job);
	job.gpus = 8;
	job.micro_batch = 4;
	ck_assert(plan_strategy_parse("ulysses:sp=N/B", &st, &e));
	ck_assert(plan_strategy_apply(&st, &job, &e));
	ck_assert_int_eq(job.sp, 2);
	ck_assert(plan_strategy_parse("basp:sp=4", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_int_eq(job.sp, 4);
	ck_assert_int_eq(job.strategy, CONFIG_STRATEGY_BASP);
	ck_assert(plan_strategy_parse("ulysses", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_int_eq(job.sp, 8);
	job.micro_batch = 3;
	ck_assert(plan_strategy_parse("ulysses:sp=N/B", &st, &e));
	ck_assert(!plan_strategy_apply(&st, &job, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "not divisible by micro-batch 3"));
	ck_assert(!plan_strategy_parse("ulysses:sp=0", &st, &e));
	ck_assert(!plan_strategy_parse("ulysses:dp=2", &st, &e));
	ck_assert(!plan_strategy_parse("megatron", &st, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "unknown strategy 'megatron'"));
	/* ring:comm=all_gather and basp:inner=ring:comm=all_gather are the all-gather rows */
	ck_assert(plan_strategy_parse("ring:comm=all_gather", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "ring-allgather");
	ck_assert(config_job_all_gather(&job));
	ck_assert(plan_strategy_parse("basp:inner=ring:comm=all_gather:sp=4", &st, &e) &&
		  plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "basp-ring-allgather");
	ck_assert_int_eq(job.sp, 4);
	ck_assert(config_job_all_gather(&job));
	ck_assert(plan_strategy_parse("ring:comm=p2p", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "ring");
	ck_assert(!config_job_all_gather(&job));
	/* USP's degrees in a sweep: given, or derived by the job check (0 here) */
	job.micro_batch = 2;
	ck_assert(plan_strategy_parse("basp:inner=usp:u=2:r=2", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "basp-usp");
	ck_assert_int_eq(job.basp_inner, CONFIG_STRATEGY_USP);
	ck_assert_int_eq(job.ulysses_degree, 2);
	ck_assert_int_eq(job.ring_degree, 2);
	ck_assert(plan_strategy_parse("usp:sp=8", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_int_eq(job.ulysses_degree, 0);
	ck_assert(!plan_strategy_parse("ring:u=2", &st, &e)); /* degrees are USP's */
	/* run's --strategy parser reads the spelling: its sentence */
	ck_assert_ptr_nonnull(strstr(e.msg, "u= and r= apply only to usp"));
	/* ring:split=naive, run's spelling, is the ring row with the naive split */
	ck_assert(plan_strategy_parse("ring:split=naive:sp=4", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "ring");
	ck_assert_int_eq(job.cp_split, CONFIG_CP_SPLIT_NAIVE);
	ck_assert_int_eq(job.sp, 4);
	ck_assert(plan_strategy_parse("basp-ring:split=naive", &st, &e) && plan_strategy_apply(&st, &job, &e));
	ck_assert_str_eq(st.variant->name, "basp-ring");
	ck_assert_int_eq(job.cp_split, CONFIG_CP_SPLIT_NAIVE);
	ck_assert(!plan_strategy_parse("ulysses:split=naive", &st, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "split= applies only to ring attention"));
	ck_assert(!plan_strategy_parse("ring:sp=4:sp=N/B", &st, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "contradict"));
	ck_assert(!plan_strategy_parse("ring:comm=a2a", &st, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "expected comm=p2p or comm=all_gather"));
}
END_TEST

/* The strategies study (examples/strategies.yaml) names every strategy of the family in
 * sweep spellings: each point is a valid job, the degrees as the spec says (USP 4 x 2 on one
 * 8-GPU node, 4 x 4 on two; BASP over USP 2 x 2 and 2 x 4 in its groups of N/2). */
START_TEST(strategies_study_points_are_valid_jobs)
{
	char path[CONFIG_PATH_MAX];
	snprintf(path, sizeof path, "%s/examples/strategies.yaml", getenv("SPSIM_DATA_DIR"));
	plan_spec s;
	config_error e = {""};
	ck_assert_msg(plan_spec_load(path, &s, &e), "%s", e.msg);
	ck_assert_int_eq(s.n[PLAN_AXIS_STRATEGY], 8);
	int usp = 0, ag = 0;
	for (long i = 0; i < s.n_points; i++) {
		plan_point pt;
		plan_point_at(&s, i, &pt);
		config_platform p;
		config_job j;
		ck_assert_msg(plan_point_job(&s, &pt, &p, &j, &e), "point %ld: %s", i, e.msg);
		if (config_job_usp(&j)) {
			int P = j.strategy == CONFIG_STRATEGY_BASP ? j.sp / j.micro_batch : j.sp;
			ck_assert_int_eq(j.ulysses_degree, j.strategy == CONFIG_STRATEGY_BASP ? 2 : 4);
			ck_assert_int_eq(j.ulysses_degree * j.ring_degree, P);
			usp++;
		}
		ag += config_job_all_gather(&j);
	}
	ck_assert_int_eq(usp, 2 * 6); /* two USP strategies on six hardware variants */
	ck_assert_int_eq(ag, 2 * 6);
	plan_spec_finish(&s);
}
END_TEST

/* ------------------------------------------------------------------ pool --- */
typedef struct pool_t {
	long *seen; /* times each task came back */
	int *pid;   /* the worker that ran it */
	long crash, hang, n_failed;
	long sigint;   /* this task's worker dies of SIGINT (a terminal's Ctrl-C); -1: none */
	long stop_at;  /* the parent's "SIGINT handler" sets *stop when this task is done; -1: never */
	volatile sig_atomic_t *stop;
	char why[512];
	bool isolate_all;
} pool_t;

static json_t *pt_eval(void *ctx, long task)
{
	pool_t *p = ctx;
	if (task == p->crash)
		abort();
	if (task == p->hang)
		sleep(60);
	if (task == p->sigint)
		raise(SIGINT); /* the pool put SIGINT back to its default: this ends the worker */
	return json_pack("{s:I, s:i}", "task", (json_int_t)task, "pid", (int)getpid());
}

static bool pt_isolated(void *ctx, long task)
{
	(void)task;
	return ((pool_t *)ctx)->isolate_all;
}

static json_t *pt_failed(void *ctx, long task, const char *why)
{
	pool_t *p = ctx;
	p->n_failed++;
	snprintf(p->why, sizeof p->why, "%s", why);
	return json_pack("{s:I, s:i, s:s}", "task", (json_int_t)task, "pid", -1, "error", why);
}

static void pt_done(void *ctx, long task, const json_t *row)
{
	pool_t *p = ctx;
	ck_assert_int_eq(json_integer_value(json_object_get(row, "task")), task);
	p->seen[task]++;
	p->pid[task] = (int)json_integer_value(json_object_get(row, "pid"));
	if (task == p->stop_at)
		*p->stop = 1;
}

/* Runs tasks 0..n-1 with the stop flag; returns how many came back. */
static long run_pool_stop(pool_t *p, long n, int jobs)
{
	long *tasks = malloc((size_t)n * sizeof *tasks);
	for (long i = 0; i < n; i++)
		tasks[i] = i;
	p->seen = calloc((size_t)n, sizeof *p->seen);
	p->pid = calloc((size_t)n, sizeof *p->pid);
	plan_pool_ops ops = {.ctx = p, .eval = pt_eval, .isolated = pt_isolated, .failed = pt_failed, .done = pt_done};
	plan_pool_opts o = {.jobs = jobs, .stop = p->stop};
	config_error e = {""};
	ck_assert_msg(plan_pool_run(tasks, n, &o, &ops, &e), "%s", e.msg);
	long back = 0;
	for (long i = 0; i < n; i++) {
		ck_assert_msg(p->seen[i] <= 1, "task %ld came back %ld times", i, p->seen[i]);
		back += p->seen[i];
	}
	free(tasks);
	return back;
}

static void run_pool(pool_t *p, long n, int jobs, double timeout)
{
	long *tasks = malloc((size_t)n * sizeof *tasks);
	for (long i = 0; i < n; i++)
		tasks[i] = i;
	p->seen = calloc((size_t)n, sizeof *p->seen);
	p->pid = calloc((size_t)n, sizeof *p->pid);
	plan_pool_ops ops = {.ctx = p, .eval = pt_eval, .isolated = pt_isolated, .failed = pt_failed, .done = pt_done};
	plan_pool_opts o = {.jobs = jobs, .timeout_s = timeout};
	config_error e = {""};
	ck_assert_msg(plan_pool_run(tasks, n, &o, &ops, &e), "%s", e.msg);
	for (long i = 0; i < n; i++)
		ck_assert_msg(p->seen[i] == 1, "task %ld came back %ld times", i, p->seen[i]);
	free(tasks);
}

START_TEST(pool_runs_every_task_once)
{
	for (int jobs = 1; jobs <= 3; jobs++) {
		pool_t p = {.crash = -1, .hang = -1, .sigint = -1, .stop_at = -1};
		run_pool(&p, 5000, jobs, 0);
		ck_assert_int_eq(p.n_failed, 0);
		/* batched workers: far fewer processes than tasks, none of them this one */
		json_t *pids = json_object();
		for (long i = 0; i < 5000; i++) {
			char k[32];
			snprintf(k, sizeof k, "%d", p.pid[i]);
			ck_assert_int_ne(p.pid[i], getpid());
			json_object_set_new(pids, k, json_true());
		}
		ck_assert_int_le((long)json_object_size(pids), jobs);
		json_decref(pids);
		free(p.seen), free(p.pid);
	}
}
END_TEST

START_TEST(pool_isolated_tasks_get_fresh_processes)
{
	pool_t p = {.crash = -1, .hang = -1, .sigint = -1, .stop_at = -1, .isolate_all = true};
	run_pool(&p, 40, 2, 0);
	json_t *pids = json_object();
	for (long i = 0; i < 40; i++) {
		char k[32];
		snprintf(k, sizeof k, "%d", p.pid[i]);
		json_object_set_new(pids, k, json_true());
	}
	ck_assert_int_eq((long)json_object_size(pids), 40);
	json_decref(pids);
	free(p.seen), free(p.pid);
}
END_TEST

START_TEST(pool_crash_costs_one_task)
{
	/* The crashing task sits mid-batch: it fails, the rest of its batch runs elsewhere. */
	pool_t p = {.crash = 1234, .hang = -1, .sigint = -1, .stop_at = -1};
	run_pool(&p, 5000, 2, 0);
	ck_assert_int_eq(p.n_failed, 1);
	ck_assert_int_eq(p.pid[1234], -1);
	ck_assert_msg(strstr(p.why, "killed by signal 6"), "why: %s", p.why);
	free(p.seen), free(p.pid);
	/* and in isolated mode */
	pool_t q = {.crash = 7, .hang = -1, .sigint = -1, .stop_at = -1, .isolate_all = true};
	run_pool(&q, 20, 3, 0);
	ck_assert_int_eq(q.n_failed, 1);
	ck_assert_int_eq(q.pid[7], -1);
	free(q.seen), free(q.pid);
}
END_TEST

START_TEST(pool_timeout_costs_one_task)
{
	pool_t p = {.crash = -1, .hang = 3, .sigint = -1, .stop_at = -1};
	run_pool(&p, 50, 2, 0.5);
	ck_assert_int_eq(p.n_failed, 1);
	ck_assert_int_eq(p.pid[3], -1);
	ck_assert_msg(strstr(p.why, "timed out after 0.5 s"), "why: %s", p.why);
	free(p.seen), free(p.pid);
}
END_TEST

START_TEST(pool_stop_hands_out_nothing_more_and_kills_what_runs)
{
	/* Isolated tasks, two at a time: task 0 returns at once, task 1 would take 60 s. The
	 * stop flag is set when task 0 comes back (as the planner's SIGINT handler would): no
	 * other task starts, task 1 is killed rather than waited for, and none is reported as
	 * failed. */
	volatile sig_atomic_t stop = 0;
	pool_t p = {.crash = -1, .hang = 1, .sigint = -1, .stop_at = 0, .stop = &stop, .isolate_all = true};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long back = run_pool_stop(&p, 6, 2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_eq(back, 1);
	ck_assert_int_eq(p.seen[0], 1);
	ck_assert_int_eq(p.n_failed, 0);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	ck_assert_msg(took < 30, "the pool waited %.1f s for a task it should have killed", took);
	/* a flag already set starts nothing */
	free(p.seen), free(p.pid);
	pool_t q = {.crash = -1, .hang = -1, .sigint = -1, .stop_at = -1, .stop = &stop};
	ck_assert_int_eq(run_pool_stop(&q, 100, 2), 0);
	free(q.seen), free(q.pid);
}
END_TEST

START_TEST(pool_worker_dying_of_sigint_is_an_interrupt)
{
	/* One worker at a time, isolated: task 2's worker dies of SIGINT. With a stop flag that
	 * is the Ctrl-C: the flag is set, task 2 is not a failure, tasks 3.. never start. */
	volatile sig_atomic_t stop = 0;
	pool_t p = {.crash = -1, .hang = -1, .sigint = 2, .stop_at = -1, .stop = &stop, .isolate_all = true};
	ck_assert_int_eq(run_pool_stop(&p, 6, 1), 2);
	ck_assert(p.seen[0] == 1 && p.seen[1] == 1);
	ck_assert_int_eq(stop, 1);
	ck_assert_int_eq(p.n_failed, 0);
	free(p.seen), free(p.pid);
	/* Without one (sweep) it is a death like any other: that task fails, the rest run. */
	pool_t q = {.crash = -1, .hang = -1, .sigint = 2, .stop_at = -1, .isolate_all = true};
	run_pool(&q, 6, 1, 0);
	ck_assert_int_eq(q.n_failed, 1);
	ck_assert_int_eq(q.pid[2], -1);
	ck_assert_msg(strstr(q.why, "killed by signal 2"), "why: %s", q.why);
	free(q.seen), free(q.pid);
}
END_TEST

/* ---------------------------------------------------------------- output --- */
static json_t *row(long i)
{
	char key[32];
	snprintf(key, sizeof key, "p%ld", i);
	json_t *r = plan_row_new(i, key);
	json_object_set_new(r, "tokens_per_s", json_real(1000.0 + i));
	return r;
}

START_TEST(output_never_overwrites_silently)
{
	char dir[64];
	tmpdir(dir, sizeof dir);
	plan_output *o;
	config_error e = {""};
	ck_assert_msg(plan_output_open(dir, PLAN_OUTPUT_NEW, false, &o, &e), "%s", e.msg);
	for (long i = 0; i < 3; i++) {
		json_t *r = row(i);
		ck_assert(plan_output_add(o, r, &e));
		json_decref(r);
	}
	ck_assert(plan_output_close(o, false, &e));
	/* again without resume or force: refused, nothing touched */
	ck_assert(!plan_output_open(dir, PLAN_OUTPUT_NEW, false, &o, &e));
	ck_assert_msg(strstr(e.msg, "--resume") && strstr(e.msg, "--force"), "%s", e.msg);
	char path[128];
	snprintf(path, sizeof path, "%s/points.jsonl", dir);
	ck_assert_int_eq(count_lines(path), 3);
	/* resume keeps, force discards */
	ck_assert(plan_output_open(dir, PLAN_OUTPUT_RESUME, false, &o, &e));
	ck_assert_int_eq(plan_output_count(o), 3);
	ck_assert(plan_output_done(o, "p1") && !plan_output_done(o, "p3"));
	ck_assert(plan_output_close(o, false, &e));
	ck_assert(plan_output_open(dir, PLAN_OUTPUT_FORCE, false, &o, &e));
	ck_assert_int_eq(plan_output_count(o), 0);
	ck_assert(plan_output_close(o, false, &e));
	ck_assert_int_eq(count_lines(path), 0);
	rm_tree(dir);
}
END_TEST

START_TEST(output_resume_drops_cut_lines_and_rebuilds_csv)
{
	char dir[64], path[128], csv[128];
	tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/points.jsonl", dir);
	snprintf(csv, sizeof csv, "%s/points.csv", dir);
	FILE *f = fopen(path, "w");
	for (long i = 0; i < 4; i++) {
		json_t *r = row(i);
		if (i == 2)
			plan_row_set_status(r, "error", "worker process killed by signal 9");
		char *s = json_dumps(r, JSON_COMPACT);
		fprintf(f, "%s\n", s);
		free(s);
		json_decref(r);
	}
	fputs("{\"index\":4,\"point\":\"p4\",\"sta", f); /* an interrupted write */
	fclose(f);
	/* the CSV lost its last rows in the interruption */
	f = fopen(csv, "w");
	plan_row_csv_header(f);
	fclose(f);
	plan_output *o;
	config_error e = {""};
	ck_assert_msg(plan_output_open(dir, PLAN_OUTPUT_RESUME, false, &o, &e), "%s", e.msg);
	ck_assert_int_eq(plan_output_count(o), 4);
	ck_assert(!plan_output_done(o, "p4"));
	ck_assert(plan_output_close(o, false, &e));
	ck_assert_int_eq(count_lines(path), 4);
	ck_assert_int_eq(count_lines(csv), 5); /* header + the 4 rows, rebuilt from the record */
	/* --retry-failed lets the error row run again */
	ck_assert(plan_output_open(dir, PLAN_OUTPUT_RESUME, true, &o, &e));
	ck_assert_int_eq(plan_output_count(o), 3);
	ck_assert(!plan_output_done(o, "p2"));
	ck_assert(plan_output_close(o, false, &e));
	rm_tree(dir);
}
END_TEST

/* A whole line that is not a row (a hand edit, another tool's output) is the user's data:
 * resume would rewrite the record without it, so it is refused at its line and the record
 * stays as it was; only the last line without its newline counts as an interrupted row. */
START_TEST(output_resume_refuses_a_line_that_is_not_a_row)
{
	char dir[64], path[128];
	tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/points.jsonl", dir);
	FILE *f = fopen(path, "w");
	for (long i = 0; i < 2; i++) {
		json_t *r = row(i);
		char *s = json_dumps(r, JSON_COMPACT);
		fprintf(f, "%s\n", s);
		free(s);
		json_decref(r);
	}
	fputs("\n{\"index\":9}\n", f); /* a blank line (kept quiet), then an object without 'point' */
	fclose(f);
	char *before = slurp(path);
	config_error e = {""};
	ck_assert(!plan_output_check(dir, PLAN_OUTPUT_RESUME, &e));
	char want[192];
	snprintf(want, sizeof want, "%s:4:1: not a sweep row", path);
	ck_assert_msg(strstr(e.msg, want) && strstr(e.msg, "--force"), "%s", e.msg);
	plan_output *o = NULL;
	ck_assert(!plan_output_open(dir, PLAN_OUTPUT_RESUME, false, &o, &e));
	char *after = slurp(path);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	/* --force still starts again */
	ck_assert(plan_output_check(dir, PLAN_OUTPUT_FORCE, &e));
	rm_tree(dir);
}
END_TEST

START_TEST(csv_quotes_and_columns)
{
	json_t *r = plan_row_new(7, "model=x;platform=y");
	plan_row_set_status(r, "invalid", "heads 20, not divisible by 8, \"K\" must divide\nthem");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	plan_row_csv_header(f);
	plan_row_csv(f, r);
	fclose(f);
	json_decref(r);
	/* same number of columns in header and row; the error quoted, newline flattened */
	char *nl = strchr(buf, '\n');
	ck_assert_ptr_nonnull(nl);
	int cols = 1;
	for (char *c = buf; c < nl; c++)
		cols += *c == ',';
	int ncol = 0;
	while (plan_row_columns[ncol])
		ncol++;
	ck_assert_int_eq(cols, ncol);
	ck_assert_ptr_nonnull(strstr(nl + 1, "7,model=x;platform=y,invalid,\"heads 20, not divisible by 8, \"\"K\"\" must "
					    "divide them\","));
	free(buf);
}
END_TEST

/* ------------------------------------------------------- job settings --- */
/* Writes text to dir/name; the path goes to out. */
static void put_file(char *out, size_t len, const char *dir, const char *name, const char *text)
{
	snprintf(out, len, "%s/%s", dir, name);
	FILE *f = fopen(out, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Writes `yaml` to DIR/spec.yaml (its path into spec) and loads it into *s: it must load. */
static void load_sweep(char *spec, size_t n, const char *dir, const char *yaml, plan_spec *s)
{
	config_error e = {""};
	put_file(spec, n, dir, "spec.yaml", yaml);
	ck_assert_msg(plan_spec_load(spec, s, &e), "%s", e.msg);
}

/* A job run the way `spsim run --job FILE` runs it: the job file read by config_load_job,
 * its model and platform loaded, nodes applied, the job check, then the analytic engine
 * over the composite (plan_simulate is run's pipeline: workload_compose + every part). */
static void run_job_file(const char *path, double *step, double *peak)
{
	config_job job;
	config_job_defaults(&job);
	char model[CONFIG_PATH_MAX] = "", platform[CONFIG_PATH_MAX] = "", cal[CONFIG_PATH_MAX] = "";
	int nodes = 0;
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &job, model, platform, cal, &nodes, &e), "%s", e.msg);
	static config_model m;
	static config_platform p;
	ck_assert_msg(config_load_model(model, &m, &e) && config_load_platform(platform, &p, &e), "%s", e.msg);
	if (nodes)
		p.nodes = nodes;
	ck_assert_msg(workload_check(&m, &p, &job, &e), "%s: %s", path, e.msg);
	plan_sim *sim = malloc(sizeof *sim);
	ck_assert_ptr_nonnull(sim);
	ck_assert_msg(plan_simulate(&m, &p, &job, engine_find("analytic"), (engine_options){0}, sim, &e), "%s", e.msg);
	*step = sim->res.step_time;
	*peak = sim->memory.peak;
	plan_sim_finish(sim);
	free(sim);
}

/* Every job-file setting a sweep takes: a spec that lists values of the key, and for each
 * value the job file that says the same with the key set to it. Point i of the spec must
 * be that job exactly (same step time and peak memory: one code path, nothing dropped),
 * and the values must not all give the same job (the key is applied, not ignored). The
 * `same` cases are keys whose values are by definition one job here: zero_overlap default
 * is on at stage 3 (DeepSpeed's overlap_comm default), and dtype has only bf16. */
START_TEST(sweep_settings_equal_their_job_files)
{
	static const struct {
		const char *key;
		const char *values[4];
		const char *extra; /* lines both files share, besides the common ones */
		bool same;
	} cases[] = {
		{"cp_comm_type", {"p2p", "all_gather", "a2a", "a2a+p2p"}, "  strategy: basp\n", false},
		{"attention_kernel", {"flash-attn-2", "flash-attn-3", "cudnn", "flash-attn-triton"}, "", false},
		{"impl", {"hf", "megatron"}, "", false},
		{"zero3_prefetch", {"deepspeed", "layer"}, "", false},
		{"offload_activations", {"false", "true"}, "  recompute: full\n", false},
		{"offload_optimizer", {"none", "cpu"}, "", false},
		{"tile_mlp", {"1", "4"}, "", false},
		{"tile_logits", {"1", "8"}, "", false},
		{"memory_reserve", {"0", "6GiB"}, "", false},
		{"recompute", {"none", "selective", "full"}, "", false},
		{"zero_overlap", {"false", "true"}, "", false},
		{"zero_overlap", {"default", "true"}, "", true},
		{"fp32_grad_comm", {"false", "true"}, "", false},
		{"contiguous_gradients", {"false", "true"}, "  zero: 2\n", false},
		{"reduce_bucket", {"5e8", "1e6"}, "  zero: 2\n", false},
		{"allgather_bucket", {"5e8", "1e6"}, "  zero: 1\n", false},
		{"prefetch_bucket", {"5e7", "1e5"}, "", false},
		{"a2a", {"direct", "hierarchical"}, "  strategy: ulysses\n", false},
		{"basp_uneven", {"unequal", "extra-step"}, "  strategy: basp\n  micro_batch: 3\n", false},
		{"dtype", {"bf16"}, "", true},
	};
	/* micro-batch 2 unless the case says (B = 3 over 16 GPUs: BASP beyond divisibility) */
	const char *common = "  model: llama-3.1-8b\n  platform: dgx-h100\n  nodes: 2\n  seq_len: 32K\n";
	char dir[64];
	tmpdir(dir, sizeof dir);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char text[2048], list[256] = "", spec[256], job[256];
		int n = 0;
		for (; n < 4 && cases[c].values[n]; n++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n ? ", " : "", cases[c].values[n]);
		bool strategy = strstr(cases[c].extra, "strategy") != NULL;
		/* zero 3 unless the case says; one strategy, so point i is value i */
		const char *zero = strstr(cases[c].extra, "zero") ? "" : "  zero: 3\n",
			   *batch = strstr(cases[c].extra, "micro_batch") ? "" : "  micro_batch: 2\n";
		snprintf(text, sizeof text, "sweep:\n%s%s%s%s%s  %s: [%s]\n", common, cases[c].extra, zero, batch,
			 strategy ? "" : "  strategy: basp\n", cases[c].key, list);
		put_file(spec, sizeof spec, dir, "spec.yaml", text);
		plan_spec s;
		config_error e = {""};
		ck_assert_msg(plan_spec_load(spec, &s, &e), "%s: %s", cases[c].key, e.msg);
		ck_assert_int_eq(s.n_points, n);
		double step[4], peak[4];
		for (int i = 0; i < n; i++) {
			snprintf(text, sizeof text, "job:\n%s%s%s%s%s  %s: %s\n", common, cases[c].extra, zero, batch,
				 strategy ? "" : "  strategy: basp\n", cases[c].key, cases[c].values[i]);
			put_file(job, sizeof job, dir, "job.yaml", text);
			run_job_file(job, &step[i], &peak[i]);
			json_t *row = plan_point_eval(&s, i);
			ck_assert_msg(strcmp(plan_row_str(row, "status"), "ok") == 0, "%s=%s: %s", cases[c].key,
				      cases[c].values[i], plan_row_str(row, "error"));
			ck_assert_msg(plan_row_num(row, "step_time_s") == step[i] && plan_row_num(row, "mem_peak") == peak[i],
				      "%s=%s: sweep %.9g s %.6g B, job file %.9g s %.6g B", cases[c].key, cases[c].values[i],
				      plan_row_num(row, "step_time_s"), plan_row_num(row, "mem_peak"), step[i], peak[i]);
			/* the row names the value it ran (cp_comm_type, attention_kernel, ...) */
			char want[64];
			snprintf(want, sizeof want, "%s=%s", cases[c].key, cases[c].values[i]);
			ck_assert_ptr_nonnull(strstr(plan_row_str(row, "point"), want));
			json_decref(row);
		}
		bool differ = false;
		for (int i = 1; i < n; i++)
			differ |= step[i] != step[0] || peak[i] != peak[0];
		ck_assert_msg(differ != cases[c].same, "%s: values %s", cases[c].key,
			      cases[c].same ? "differ where they are one job" : "all give the same job");
		plan_spec_finish(&s);
	}
	rm_tree(dir);
}
END_TEST

/* The row columns carry the settings a point ran with, named as a job file names them. */
START_TEST(sweep_rows_carry_the_settings)
{
	char dir[64], spec[256];
	tmpdir(dir, sizeof dir);
	plan_spec s;
	config_error e = {""};
	load_sweep(spec, sizeof spec, dir,
		 "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n"
		 "  attention_kernel: cudnn\n  impl: megatron\n  recompute: full\n"
		 "  offload_activations: true\n  tile_mlp: 4\n  tile_logits: 8\n  memory_reserve: 3GiB\n"
		 "  zero_overlap: false\n  fp32_grad_comm: false\n  contiguous_gradients: false\n  reduce_bucket: 1e7\n  allgather_bucket: 2e7\n"
		 "  prefetch_bucket: 3e6\n  strategy: ring:split=naive\n", &s);
	json_t *r = plan_point_eval(&s, 0);
	ck_assert_str_eq(plan_row_str(r, "status"), "ok");
	ck_assert_str_eq(plan_row_str(r, "strategy"), "ring");
	ck_assert_str_eq(plan_row_str(r, "cp_comm_type"), "p2p"); /* ring's KV passed around */
	ck_assert_str_eq(plan_row_str(r, "attention_kernel"), "cudnn");
	ck_assert_str_eq(plan_row_str(r, "impl"), "megatron");
	ck_assert(json_is_true(json_object_get(r, "offload_activations")));
	ck_assert_double_eq(plan_row_num(r, "tile_mlp"), 4);
	ck_assert_double_eq(plan_row_num(r, "tile_logits"), 8);
	ck_assert_double_eq(plan_row_num(r, "memory_reserve"), 3.0 * 1073741824);
	ck_assert(json_is_false(json_object_get(r, "zero_overlap")));
	ck_assert(json_is_false(json_object_get(r, "fp32_grad_comm")));
	ck_assert(json_is_false(json_object_get(r, "contiguous_gradients")));
	ck_assert_double_eq(plan_row_num(r, "reduce_bucket"), 1e7);
	ck_assert_double_eq(plan_row_num(r, "allgather_bucket"), 2e7);
	ck_assert_double_eq(plan_row_num(r, "prefetch_bucket"), 3e6);
	ck_assert_str_eq(plan_row_str(r, "placement"), "contiguous");
	ck_assert_str_eq(plan_row_str(r, "what_if"), "none");
	/* the spec's strategy value is the label; split=naive reached the job */
	ck_assert_str_eq(plan_row_str(r, "label"), "ring:split=naive");
	plan_point p;
	config_platform pl;
	config_job job;
	plan_point_at(&s, 0, &p);
	ck_assert(plan_point_job(&s, &p, &pl, &job, &e));
	ck_assert_int_eq(job.cp_split, CONFIG_CP_SPLIT_NAIVE);
	ck_assert_int_eq(job.cp_comm, CONFIG_CP_COMM_P2P);
	/* the CSV has a column for each */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	plan_row_csv_header(f);
	fclose(f);
	static const char *const cols[] = {",cp_comm_type,", ",attention_kernel,", ",impl,", ",offload_activations,",
					   ",tile_mlp,", ",tile_logits,", ",memory_reserve_bytes,", ",zero_overlap,",
					   ",fp32_grad_comm,", ",reduce_bucket_elements,", ",placement,", ",what_if,"};
	for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
		ck_assert_msg(strstr(buf, cols[i]), "no column %s", cols[i]);
	free(buf);
	json_decref(r);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

/* reduce_bucket and prefetch_bucket auto in a sweep: resolved per point from that point's
 * model, as transformers' Trainer fills them (h^2, int(0.9 h^2)); the rows hold the
 * numbers. By hand (Python's int(0.9 * h * h)): llama-3.1-8b h = 4096: 16777216 and
 * 15099494; llama-3.2-1b h = 2048: 4194304 and 3774873. auto and 1e7 are two values. */
START_TEST(sweep_resolves_auto_buckets_per_model)
{
	char dir[64], spec[256];
	tmpdir(dir, sizeof dir);
	plan_spec s;
	config_error e = {""};
	load_sweep(spec, sizeof spec, dir,
		 "sweep:\n  model: [llama-3.1-8b, llama-3.2-1b]\n  platform: dgx-h100\n  seq_len: 16K\n  zero: 3\n"
		 "  strategy: ulysses\n  reduce_bucket: [auto, 1e7]\n  prefetch_bucket: auto\n", &s);
	ck_assert_int_eq(s.n_points, 4);
	int autos = 0, tens = 0;
	for (long i = 0; i < s.n_points; i++) {
		json_t *r = plan_point_eval(&s, i);
		ck_assert_str_eq(plan_row_str(r, "status"), "ok");
		const bool big = strcmp(plan_row_str(r, "model"), "llama-3.1-8b") == 0;
		const double rb = plan_row_num(r, "reduce_bucket");
		ck_assert_double_eq(plan_row_num(r, "prefetch_bucket"), big ? 15099494 : 3774873);
		if (rb == 1e7)
			tens++;
		else {
			ck_assert_double_eq(rb, big ? 16777216 : 4194304);
			autos++;
		}
		json_decref(r);
	}
	ck_assert_int_eq(autos, 2);
	ck_assert_int_eq(tens, 2);
	plan_spec_finish(&s);
	/* the all-gather bucket has none, at its line and column */
	put_file(spec, sizeof spec, dir, "spec.yaml",
		 "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n  allgather_bucket: [5e8, auto]\n");
	ck_assert(!plan_spec_load(spec, &s, &e));
	ck_assert_msg(strstr(e.msg, ":5:27: 'allgather_bucket' must be a whole number from 1 to 1e+15 (e.g. 5e8), got "
				    "'auto' (no auto here"),
		      "%s", e.msg);
	rm_tree(dir);
}
END_TEST

/* cp_comm_type against a strategy the spec names: the job file's rule (a non-BASP strategy
 * other than the type's is refused with both named), per point, as the job check's reason. */
START_TEST(sweep_cp_comm_type_against_named_strategies)
{
	char dir[64], spec[256];
	tmpdir(dir, sizeof dir);
	put_file(spec, sizeof spec, dir, "spec.yaml",
		 "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n  micro_batch: 2\n"
		 "  strategy: [ring, basp]\n  cp_comm_type: [p2p, a2a]\n");
	plan_spec s;
	config_error e = {""};
	ck_assert_msg(plan_spec_load(spec, &s, &e), "%s", e.msg);
	ck_assert_int_eq(s.n_points, 4);
	/* points: (p2p, ring) (p2p, basp) (a2a, ring) (a2a, basp) */
	const bool valid[4] = {true, true, false, true};
	const config_strategy inner[4] = {CONFIG_STRATEGY_RING, CONFIG_STRATEGY_RING, 0, CONFIG_STRATEGY_ULYSSES};
	for (int i = 0; i < 4; i++) {
		plan_point p;
		config_platform pl;
		config_job job;
		plan_point_at(&s, i, &p);
		ck_assert_int_eq(plan_point_job(&s, &p, &pl, &job, &e), valid[i]);
		if (!valid[i])
			ck_assert_ptr_nonnull(strstr(e.msg, "cp_comm_type a2a is strategy ulysses, but the strategy given is ring"));
		else
			ck_assert_int_eq(job.strategy == CONFIG_STRATEGY_BASP ? job.basp_inner : job.strategy, inner[i]);
	}
	plan_spec_finish(&s);
	/* without a strategy key the default pair [ulysses, basp] takes the type: ring and BASP over ring */
	load_sweep(spec, sizeof spec, dir,
		 "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n  micro_batch: 2\n"
		 "  cp_comm_type: p2p\n", &s);
	for (int i = 0; i < 2; i++) {
		plan_point p;
		config_platform pl;
		config_job job;
		plan_point_at(&s, i, &p);
		ck_assert_msg(plan_point_job(&s, &p, &pl, &job, &e), "%s", e.msg);
		ck_assert(config_job_ring(&job));
		json_t *r = plan_point_eval(&s, i);
		ck_assert_str_eq(plan_row_str(r, "cp_comm_type"), "p2p");
		ck_assert_str_eq(plan_row_str(r, "strategy"), i ? "basp" : "ring");
		ck_assert_str_eq(plan_row_str(r, "label"), i ? "basp" : "plain"); /* not Ulysses any more */
		json_decref(r);
	}
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

/* A bad value of each new key: the job file's message at the value's line and column;
 * unknown keys and the strategy's own keys refused with what to write instead. */
START_TEST(sweep_setting_errors_are_located)
{
	static const struct {
		const char *line, *where, *what;
	} cases[] = {
		{"  cp_comm_type: [p2p, ring]\n", ":5:23: ", "'cp_comm_type' must be one of: p2p, all_gather, a2a, a2a+p2p, got 'ring'"},
		{"  attention_kernel: flash-attn-4\n", ":5:21: ",
		 "'attention_kernel' must be one of: flash-attn-2, flash-attn-3, cudnn, flash-attn-triton, got 'flash-attn-4'"},
		{"  offload_activations: [true, maybe]\n", ":5:31: ", "'offload_activations' must be true or false, got 'maybe'"},
		{"  offload_optimizer: [none, gpu]\n", ":5:29: ", "'offload_optimizer' must be one of: none, cpu, got 'gpu'"},
		{"  tile_mlp: [1, 0]\n", ":5:17: ", "'tile_mlp' must be"},
		{"  tile_logits: -2\n", ":5:16: ", "'tile_logits' must be"},
		{"  memory_reserve: [0, lots]\n", ":5:23: ", "'memory_reserve': "},
		{"  zero_overlap: sometimes\n", ":5:17: ", "'zero_overlap' must be true, false or default, got 'sometimes'"},
		{"  fp32_grad_comm: 2\n", ":5:19: ", "'fp32_grad_comm' must be true or false, got '2'"},
		{"  contiguous_gradients: [true, maybe]\n", ":5:32: ", "'contiguous_gradients' must be true or false, got 'maybe'"},
		{"  reduce_bucket: -1\n", ":5:18: ", "'reduce_bucket' must be auto or a whole number"},
		{"  prefetch_bucket: [auto, autox]\n", ":5:27: ", "'prefetch_bucket' must be auto or a whole number from 1 to 1e+15 (e.g. 5e8), got 'autox'"},
		{"  dtype: fp16\n", ":5:10: ", "'dtype' must be one of: bf16, got 'fp16'"},
		{"  impl: [hf, hf]\n", ":5:14: ", "'impl' lists 'hf' twice, expected distinct values"},
		{"  placement: diagonal\n", ":5:14: ", "--placement"},
		{"  what_if: background=1GiB:100ms:0-1\n", ":5:12: ",
		 "'what_if' background=1GiB:100ms:0-1 cannot run on the engine of this sweep"},
		{"  what_if: {slow_gpu: [\"3:0.5\"]}\n", ":5:24: ", "'slow_gpu': "},
		{"  placement: strided\n", ":5:14: ", "'placement' strided cannot run on the engine of this sweep"},
		{"  basp_inner: ring\n", ":5:3: ",
		 "'basp_inner' is part of the strategy in a sweep spec, expected it in the strategy values, e.g. strategy: basp:inner=ring"},
		{"  cp_split: naive\n", ":5:3: ", "'cp_split' is part of the strategy in a sweep spec"},
		{"  ulysses_degree: 2\n", ":5:3: ", "'ulysses_degree' is part of the strategy in a sweep spec"},
		{"  sp: 4\n", ":5:3: ", "'sp' is part of the strategy in a sweep spec"},
		{"  attn_kernel: cudnn\n", ":5:3: ", "unknown key 'attn_kernel' in 'sweep', expected one of: name, baseline, model,"},
		{"  strategy: ring:split=spiral\n", ":5:13: ", "strategy 'ring:split=spiral': split=spiral, expected split=zigzag or split=naive"},
	};
	char dir[64], spec[256];
	tmpdir(dir, sizeof dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n%s",
			 cases[i].line);
		put_file(spec, sizeof spec, dir, "spec.yaml", text);
		plan_spec s;
		config_error e = {""};
		ck_assert_msg(!plan_spec_load(spec, &s, &e), "%s was accepted", cases[i].line);
		snprintf(want, sizeof want, "%s%s%s", spec, cases[i].where, cases[i].what);
		ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s got  %s\n want %s...", cases[i].line, e.msg, want);
	}
	/* the command: the same message and exit status 2 */
	put_file(spec, sizeof spec, dir, "spec.yaml",
		 "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n  cp_comm_type: ring\n");
	char log[128], out[128];
	snprintf(log, sizeof log, "%s/log", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	char *argv[] = {(char *)exe(), "sweep", spec, "-o", out, "--quiet", NULL};
	ck_assert_int_eq(run_exe(argv, log), 2);
	char *msg = slurp(log);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "spec.yaml:5:17: 'cp_comm_type' must be one of: p2p, all_gather, a2a, a2a+p2p, got 'ring'"),
		      "%s", msg);
	free(msg);
	rm_tree(dir);
}
END_TEST

/* Resume keys points by every key the spec gives: a record made with one attention kernel
 * (or with the key left out) does not stand for a point with another. */
START_TEST(sweep_resume_tells_new_keys_apart)
{
	char dir[64], out[128], spec[256];
	tmpdir(dir, sizeof dir);
	snprintf(out, sizeof out, "%s/out", dir);
	const char *base = "sweep:\n  model: llama-3.1-8b\n  platform: dgx-h100\n  seq_len: 16K\n  strategy: ulysses\n";
	const char *extra[] = {"", "  attention_kernel: flash-attn-2\n", "  attention_kernel: cudnn\n",
			       "  attention_kernel: [flash-attn-2, cudnn]\n", "  cp_comm_type: a2a\n"};
	/* rows already there before each run, and rows run by it */
	const long already[] = {0, 0, 0, 2, 0}, ran[] = {1, 1, 1, 0, 1};
	for (int i = 0; i < 5; i++) {
		char text[512];
		snprintf(text, sizeof text, "%s%s", base, extra[i]);
		put_file(spec, sizeof spec, dir, "spec.yaml", text);
		plan_spec s;
		config_error e = {""};
		ck_assert_msg(plan_spec_load(spec, &s, &e), "%s", e.msg);
		plan_sweep_opts o = {.out_dir = out, .jobs = 1, .quiet = true, .mode = i ? PLAN_OUTPUT_RESUME : PLAN_OUTPUT_NEW};
		plan_sweep_summary sum;
		ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
		ck_assert_msg(sum.already == already[i] && sum.ran == ran[i], "%s: %ld already, %ld ran", extra[i],
			      sum.already, sum.ran);
		plan_spec_finish(&s);
	}
	json_t *rows;
	config_error e = {""};
	ck_assert(plan_rows_load(out, &rows, &e));
	ck_assert_int_eq((long)json_array_size(rows), 4);
	json_decref(rows);
	rm_tree(dir);
}
END_TEST

/* what_if and placement on SimGrid: a point with a what-if equals the job file with the
 * same what_if mapping (config_load_whatif), run as `spsim run --job` runs it; the what-if
 * and the placement reach the engine (a GPU computing twice as slow lengthens the step; the
 * strided placement moves ranks across nodes). On the analytic engine the slow GPU sets every
 * rank's pace and the strided placement is an invalid point, with the engine's own sentence. */
START_TEST(sweep_whatif_and_placement_reach_simgrid)
{
	if (simgrid_missing(__func__))
		return;
	char dir[64], spec[256], job[256];
	tmpdir(dir, sizeof dir);
	/* SP groups of 4: inside a node placed contiguously, across both nodes strided */
	const char *common = "  model: llama-3.2-1b\n  platform: a100-2x4-ib400\n  seq_len: 4K\n  zero: 1\n";
	char text[1024];
	snprintf(text, sizeof text,
		 "sweep:\n%s  strategy: \"ulysses:sp=4\"\n  engine: [analytic, simgrid]\n  placement: [contiguous, strided]\n"
		 "  what_if: [none, {slow_gpu: [\"0:2\"]}]\n",
		 common);
	put_file(spec, sizeof spec, dir, "spec.yaml", text);
	plan_spec s;
	config_error e = {""};
	ck_assert_msg(plan_spec_load(spec, &s, &e), "%s", e.msg);
	ck_assert_int_eq(s.n_points, 8);
	ck_assert_str_eq(s.values[PLAN_AXIS_WHAT_IF][1].text, "slow-gpu=0:2");
	snprintf(text, sizeof text, "job:\n%s  strategy: ulysses\n  sp: 4\n  what_if: {slow_gpu: [\"0:2\"]}\n", common);
	put_file(job, sizeof job, dir, "job.yaml", text);
	/* the job file's run on SimGrid, contiguous */
	config_job j;
	config_job_defaults(&j);
	config_whatif w = {0};
	char model[CONFIG_PATH_MAX] = "", platform[CONFIG_PATH_MAX] = "";
	ck_assert_msg(config_load_job(job, &j, model, platform, NULL, NULL, &e) && config_load_whatif(job, &w, &e), "%s",
		      e.msg);
	static config_model m;
	static config_platform p;
	ck_assert(config_load_model(model, &m, &e) && config_load_platform(platform, &p, &e));
	ck_assert_msg(workload_check(&m, &p, &j, &e), "%s", e.msg);
	double step[8];
	for (int i = 0; i < 8; i++) {
		/* points: engine (analytic, simgrid) x placement (contiguous, strided) x what_if (none, slow) */
		pid_t pid = 0;
		int fd[2];
		ck_assert_int_eq(pipe(fd), 0);
		fflush(NULL);
		pid = fork(); /* SimGrid initialises once per process */
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			json_t *r = plan_point_eval(&s, i);
			double v = strcmp(plan_row_str(r, "status"), "ok") == 0 ? plan_row_num(r, "step_time_s") : -1;
			if (v < 0 && i >= 4)
				fprintf(stderr, "point %d: %s\n", i, plan_row_str(r, "error"));
			if (i == 2 || i == 3) /* analytic: contiguous placement only */
				v = strstr(plan_row_str(r, "error"), "contiguous placement only") ? -2 : -3;
			ssize_t n = write(fd[1], &v, sizeof v);
			_exit(n == sizeof v ? 0 : 1);
		}
		close(fd[1]);
		ck_assert_int_eq(read(fd[0], &step[i], sizeof step[i]), (ssize_t)sizeof step[i]);
		close(fd[0]);
		int st;
		waitpid(pid, &st, 0);
	}
	ck_assert_double_gt(step[0], 0);
	/* analytic with the slow GPU: every rank at its pace (engine_whatif_pace), at or above
	 * SimGrid's step, whose ring flows between the other ranks may finish before it arrives */
	ck_assert_double_gt(step[1], step[0] * 1.05);
	ck_assert_double_ge(step[1], step[5] * (1 - 1e-9));
	ck_assert_double_le(step[1], step[5] * 1.07);
	ck_assert_double_eq(step[2], -2); /* analytic with strided placement: invalid */
	ck_assert_double_eq(step[3], -2);
	for (int i = 4; i < 8; i++)
		ck_assert_msg(step[i] > 0, "simgrid point %d failed", i);
	ck_assert_double_gt(step[5], step[4] * 1.05); /* rank 0 twice as slow: the step waits for it */
	ck_assert_double_gt(step[6], step[4]);        /* strided: each all-to-all group crosses the network */
	/* the job file with its what_if, on SimGrid in a process of its own */
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		plan_sim *sim = malloc(sizeof *sim);
		engine_options o = {.placement = ENGINE_PLACE_CONTIGUOUS, .whatif = &w};
		double v = sim && plan_simulate(&m, &p, &j, engine_find("simgrid"), o, sim, &e) ? sim->res.step_time : -1;
		ssize_t n = write(fd[1], &v, sizeof v);
		_exit(n == sizeof v ? 0 : 1);
	}
	close(fd[1]);
	double direct_step = 0;
	ck_assert_int_eq(read(fd[0], &direct_step, sizeof direct_step), (ssize_t)sizeof direct_step);
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	ck_assert_double_eq(step[5], direct_step);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

/* `spsim sweep --help` and docs/planning.md name every key a spec takes. */
START_TEST(sweep_help_and_docs_name_every_key)
{
	char dir[64], log[128], doc[CONFIG_PATH_MAX];
	tmpdir(dir, sizeof dir);
	snprintf(log, sizeof log, "%s/help", dir);
	char *argv[] = {(char *)exe(), "sweep", "--help", NULL};
	ck_assert_int_eq(run_exe(argv, log), 0);
	char *help = slurp(log);
	snprintf(doc, sizeof doc, "%s/docs/planning.md", getenv("SPSIM_DATA_DIR"));
	char *md = slurp(doc);
	ck_assert(help && md);
	for (int a = 0; a < PLAN_AXIS_COUNT; a++) {
		const char *k = plan_axis_key((plan_axis)a);
		char word[64], code[64];
		snprintf(word, sizeof word, " %s", k);
		snprintf(code, sizeof code, "`%s`", k);
		ck_assert_msg(strstr(help, word), "sweep --help does not name '%s'", k);
		ck_assert_msg(strstr(md, code), "docs/planning.md does not name `%s`", k);
	}
	free(help);
	free(md);
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------- sweeps --- */
START_TEST(sweep_rows_match_direct_runs)
{
	plan_spec s;
	load_spec("grid.yaml", &s);
	char dir[64];
	tmpdir(dir, sizeof dir);
	plan_sweep_opts o = {.out_dir = dir, .jobs = 2, .quiet = true};
	plan_sweep_summary sum;
	config_error e = {""};
	ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
	ck_assert_int_eq(sum.points, 288);
	ck_assert_int_eq(sum.ran, 288);
	ck_assert_int_eq(sum.failed, 0);
	ck_assert_int_eq(sum.ok + sum.invalid, 288);
	json_t *rows;
	ck_assert(plan_rows_load(dir, &rows, &e));
	ck_assert_int_eq((long)json_array_size(rows), 288);
	long ok = 0;
	for (long i = 0; i < 288; i++) {
		json_t *r = json_array_get(rows, (size_t)i);
		/* sorted by point once complete */
		ck_assert_int_eq(json_integer_value(json_object_get(r, "index")), i);
		plan_point p;
		config_platform pl;
		config_job job;
		plan_point_at(&s, i, &p);
		bool valid = plan_point_job(&s, &p, &pl, &job, &e);
		ck_assert_str_eq(plan_row_str(r, "status"), valid ? "ok" : "invalid");
		if (!valid) {
			ck_assert_str_eq(plan_row_str(r, "error"), e.msg);
			continue;
		}
		ok++;
		bool fits;
		engine_result want = direct(&s.models[p.at[PLAN_AXIS_MODEL]], &pl, job, &fits);
		ck_assert_double_eq(plan_row_num(r, "step_time_s"), want.step_time);
		ck_assert_double_eq(plan_row_num(r, "tokens_per_s"), want.tokens_per_s);
		ck_assert_double_eq(plan_row_num(r, "sp_comm_s"), want.breakdown.sp_comm);
		ck_assert_int_eq(json_is_true(json_object_get(r, "fits")), fits);
		ck_assert_double_eq(plan_row_num(r, "nic_bandwidth"), s.values[PLAN_AXIS_NIC_BANDWIDTH][p.at[PLAN_AXIS_NIC_BANDWIDTH]].num);
	}
	ck_assert_int_eq(ok, sum.ok);
	ck_assert_int_gt(sum.invalid, 0); /* qwen1.5-4b's 20 heads over 8 ranks */
	json_decref(rows);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

typedef struct fault {
	long crash, hang;
} fault;

static json_t *faulty_eval(const plan_spec *s, long index, void *ctx)
{
	fault *f = ctx;
	if (index == f->crash)
		raise(SIGKILL); /* not a signal a sanitizer could turn into an exit */
	if (index == f->hang)
		sleep(60);
	return plan_point_eval(s, index);
}

START_TEST(sweep_records_a_failing_point_and_goes_on)
{
	plan_spec s;
	load_spec("grid.yaml", &s);
	char dir[64];
	tmpdir(dir, sizeof dir);
	fault f = {.crash = 100, .hang = 200};
	plan_sweep_opts o = {.out_dir = dir, .jobs = 2, .timeout_s = 1.0, .quiet = true, .eval = faulty_eval, .eval_ctx = &f};
	plan_sweep_summary sum;
	config_error e = {""};
	ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
	ck_assert_int_eq(sum.ran, 288);
	ck_assert_int_eq(sum.failed, 2);
	json_t *rows;
	ck_assert(plan_rows_load(dir, &rows, &e));
	ck_assert_int_eq((long)json_array_size(rows), 288);
	json_t *crashed = json_array_get(rows, 100), *hung = json_array_get(rows, 200);
	ck_assert_str_eq(plan_row_str(crashed, "status"), "error");
	ck_assert_msg(strstr(plan_row_str(crashed, "error"), "killed by signal 9"), "%s", plan_row_str(crashed, "error"));
	ck_assert_str_eq(plan_row_str(hung, "status"), "error");
	ck_assert_msg(strstr(plan_row_str(hung, "error"), "timed out after 1 s"), "%s", plan_row_str(hung, "error"));
	/* a failed row still says what the point was */
	plan_point p;
	char key[4096];
	plan_point_at(&s, 100, &p);
	plan_point_key(&s, &p, key, sizeof key);
	ck_assert_str_eq(plan_row_str(crashed, "point"), key);
	ck_assert_str_eq(plan_row_str(crashed, "model"), s.models[p.at[PLAN_AXIS_MODEL]].name);
	json_decref(rows);
	/* --resume --retry-failed runs exactly the two again, now healthy */
	o.eval = NULL;
	o.mode = PLAN_OUTPUT_RESUME;
	o.retry_failed = true;
	ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
	ck_assert_int_eq(sum.already, 286);
	ck_assert_int_eq(sum.ran, 2);
	ck_assert_int_eq(sum.failed, 0);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

START_TEST(sweep_resume_after_kill_matches_uninterrupted)
{
	char spec[CONFIG_PATH_MAX], full[64], cut[64], path[128], log[128];
	fixture(spec, sizeof spec, "resume.yaml");
	tmpdir(full, sizeof full);
	tmpdir(cut, sizeof cut);
	snprintf(log, sizeof log, "%s/log", full);
	char *whole[] = {(char *)exe(), "sweep", spec, "-o", full, "--force", "-j", "2", "--quiet", NULL};
	ck_assert_int_eq(run_exe(whole, log), 0);
	long total = count_lines(strcat(strcpy(path, full), "/points.jsonl"));
	ck_assert_int_eq(total, 3 * 2 * 4 * 2 * 4 * 4 * 4 * 2);

	/* Start the same sweep and kill it (SIGKILL: no chance to tidy up) part way. */
	snprintf(path, sizeof path, "%s/points.jsonl", cut);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, STDERR_FILENO);
		execl(exe(), "spsim", "sweep", spec, "-o", cut, "--force", "-j", "2", (char *)NULL);
		_exit(127);
	}
	long lines = 0;
	for (int i = 0; i < 20000 && lines < 500; i++) {
		nanosleep(&(struct timespec){.tv_nsec = 500000}, NULL);
		lines = count_lines(path);
	}
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	long partial = count_lines(path);
	ck_assert_msg(partial > 0 && partial < total, "killed after %ld of %ld rows", partial, total);
	/* Resume: only the rest runs, and the result is the uninterrupted sweep's. */
	snprintf(log, sizeof log, "%s/log", cut);
	char *resume[] = {(char *)exe(), "sweep", spec, "-o", cut, "--resume", "-j", "2", NULL};
	ck_assert_int_eq(run_exe(resume, log), 0);
	char *msg = slurp(log);
	char want[128];
	ck_assert_ptr_nonnull(msg);
	snprintf(want, sizeof want, "%ld already in %s", partial, cut);
	ck_assert_msg(strstr(msg, want), "log: %.1500s (want '%s')", msg, want);
	free(msg);
	assert_same_rows(full, cut, total);
	snprintf(path, sizeof path, "%s/points.csv", cut);
	ck_assert_int_eq(count_lines(path), total + 1);
	rm_tree(full);
	rm_tree(cut);
}
END_TEST

START_TEST(sweep_runs_simgrid_points_in_their_own_processes)
{
	/* SimGrid can be initialised once per process: two simgrid points in one process
	 * would fail. Every simgrid point here must come back ok, and, with nothing running
	 * concurrently (engines.yaml), agree with the analytic engine. */
	if (simgrid_missing(__func__))
		return;
	plan_spec s;
	load_spec("engines.yaml", &s);
	char dir[64];
	tmpdir(dir, sizeof dir);
	plan_sweep_opts o = {.out_dir = dir, .jobs = 2, .quiet = true, .timeout_s = 120};
	plan_sweep_summary sum;
	config_error e = {""};
	ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
	ck_assert_int_eq(sum.failed, 0);
	ck_assert_int_eq(sum.ok, s.n_points);
	json_t *by = rows_by_point(dir);
	const char *k;
	json_t *r;
	long pairs = 0;
	json_object_foreach(by, k, r)
	{
		if (strcmp(plan_row_str(r, "engine"), "simgrid") != 0)
			continue;
		char twin[4096];
		const char *at = strstr(k, "engine=simgrid");
		ck_assert_ptr_nonnull(at);
		snprintf(twin, sizeof twin, "%.*sengine=analytic%s", (int)(at - k), k, at + strlen("engine=simgrid"));
		const json_t *a = json_object_get(by, twin);
		ck_assert_msg(a, "no analytic twin for %s", k);
		ck_assert_double_eq_tol(plan_row_num(r, "step_time_s"), plan_row_num(a, "step_time_s"),
					1e-6 * plan_row_num(a, "step_time_s"));
		pairs++;
	}
	ck_assert_int_eq(pairs, s.n_points / 2);
	json_decref(by);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

START_TEST(sweep_cli_refuses_existing_output)
{
	char spec[CONFIG_PATH_MAX], dir[64], log[128];
	fixture(spec, sizeof spec, "grid.yaml");
	tmpdir(dir, sizeof dir);
	snprintf(log, sizeof log, "%s.log", dir);
	char *a1[] = {(char *)exe(), "sweep", spec, "-o", dir, "--quiet", NULL};
	ck_assert_int_eq(run_exe(a1, log), 0);
	/* existing output is a bad option (exit 2, as --help says), found before any work */
	ck_assert_int_eq(run_exe(a1, log), 2);
	char *msg = slurp(log);
	ck_assert_msg(strstr(msg, "pass --resume") && strstr(msg, "--force"), "%.1500s", msg);
	free(msg);
	char *a2[] = {(char *)exe(), "sweep", spec, "-o", dir, "--resume", "--force", NULL};
	ck_assert_int_eq(run_exe(a2, log), 2);
	/* a record with a line that is not a row: --resume refuses it as a bad option (exit 2) */
	char rec[128];
	snprintf(rec, sizeof rec, "%s/points.jsonl", dir);
	FILE *g = fopen(rec, "a");
	fputs("garbage{\n", g);
	fclose(g);
	char *a4[] = {(char *)exe(), "sweep", spec, "-o", dir, "--resume", "--quiet", NULL};
	ck_assert_int_eq(run_exe(a4, log), 2);
	msg = slurp(log);
	ck_assert_msg(strstr(msg, "points.jsonl:") && strstr(msg, "not a sweep row"), "%.1500s", msg);
	free(msg);
	char *a3[] = {(char *)exe(), "sweep", spec, "-o", dir, "--force", "--quiet", NULL};
	ck_assert_int_eq(run_exe(a3, log), 0);
	unlink(log);
	rm_tree(dir);
}
END_TEST

static bool have_mpirun(void)
{
	return SPSIM_HAVE_MPI && system("command -v mpirun >/dev/null 2>&1") == 0;
}

START_TEST(sweep_over_mpi_ranks_matches_one_process)
{
	if (!have_mpirun()) {
		fprintf(stderr, "sweep_over_mpi_ranks_matches_one_process: no MPI build or mpirun; skipped\n");
		return;
	}
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
	/* Under the sanitizers: OpenMPI's own allocations outlive MPI_Finalize by design. */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	char spec[CONFIG_PATH_MAX], one[64], many[64], log[128], path[128];
	fixture(spec, sizeof spec, "grid.yaml");
	tmpdir(one, sizeof one);
	tmpdir(many, sizeof many);
	snprintf(log, sizeof log, "%s/log", one);
	char *a1[] = {(char *)exe(), "sweep", spec, "-o", one, "--force", "--quiet", NULL};
	ck_assert_int_eq(run_exe(a1, log), 0);
	char mpirun[] = "/usr/bin/env";
	snprintf(log, sizeof log, "%s/log", many);
	char *a2[] = {mpirun, "mpirun", "-np", "3", (char *)exe(), "sweep", spec, "-o", many, "--force", "-j", "1", NULL};
	int rc = run_exe(a2, log);
	char *msg = slurp(log);
	ck_assert_msg(rc == 0, "mpirun exit %d: %.1500s", rc, msg);
	ck_assert_msg(strstr(msg, "over 3 ranks"), "%.1500s", msg);
	free(msg);
	assert_same_rows(one, many, 288);
	/* An MPI run resumes a cut record like a single process does. */
	snprintf(path, sizeof path, "%s/points.jsonl", many);
	ck_assert_int_eq(truncate(path, 5000), 0);
	char *a3[] = {mpirun, "mpirun", "-np", "2", (char *)exe(), "sweep", spec, "-o", many, "--resume", "-j", "1", NULL};
	rc = run_exe(a3, log);
	ck_assert_msg(rc == 0, "mpirun --resume exit %d", rc);
	assert_same_rows(one, many, 288);
	rm_tree(one);
	rm_tree(many);
}
END_TEST

/* --------------------------------------------------------------- planner --- */
/* One job the way `spsim run` runs it (composite, engine), with the fullest part's
 * memory; false when the job check rejects it. */
static bool run_job(const config_model *m, const config_platform *p, config_job job, engine_result *res, bool *fits)
{
	config_error e = {""};
	if (!workload_check(m, p, &job, &e))
		return false;
	workload_composite *c = malloc(sizeof *c);
	const workload_plan *primary;
	ck_assert_msg(workload_compose(m, p, &job, c, &e), "%s", e.msg);
	ck_assert_msg(engine_run_composite(engine_find("analytic"), m, p, &job, c, (engine_options){0}, res, NULL, &primary,
					   &e),
		      "%s", e.msg);
	double peak = primary->memory.peak;
	*fits = primary->memory.fits;
	for (int i = 0; c->kind == WL_COMPOSE_PARALLEL && i < c->n_parts; i++)
		if (c->parts[i].plan.memory.peak > peak)
			peak = c->parts[i].plan.memory.peak, *fits = c->parts[i].plan.memory.fits;
	workload_compose_finish(c);
	free(c);
	return true;
}

/* The best fitting tokens/s over the planner's space, enumerated independently: every
 * SP degree N | W, micro-batch B with W/N x B dividing the batch, Ulysses, BASP (B | N),
 * BASP with B not dividing N run unequal or with extra steps, ring attention (zigzag),
 * BASP over ring, USP at every Ulysses degree 1 < U < N, every ZeRO stage and
 * recompute, and every all-to-all algorithm for groups that leave the node (direct
 * inside one, the planner's documented rule). */
static double exhaustive_best(const config_model *m, const config_platform *plats, int np, const int *budgets, int nb,
			      long seq, long tokens, long *fits_out)
{
	double best = 0;
	long fits = 0;
	long seqs = tokens / seq;
	static const struct {
		config_strategy s;
		config_basp_uneven u;
		config_strategy inner;
		config_cp_comm comm;
	} kinds[] = {{CONFIG_STRATEGY_ULYSSES, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_ULYSSES},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_ULYSSES},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_UNEQUAL, CONFIG_STRATEGY_ULYSSES},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_EXTRA_STEP, CONFIG_STRATEGY_ULYSSES},
		     /* ring attention and BASP over it: no all-to-all, one run each (direct) */
		     {CONFIG_STRATEGY_RING, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_ULYSSES},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_RING},
		     /* the same with all-gathered KV (no ring-length cap) */
		     {CONFIG_STRATEGY_RING, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_ULYSSES, CONFIG_CP_COMM_ALL_GATHER},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_RING, CONFIG_CP_COMM_ALL_GATHER},
		     /* USP: every U strictly between 1 and N (below); BASP over it, 1 < U < K */
		     {CONFIG_STRATEGY_USP, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_ULYSSES},
		     {CONFIG_STRATEGY_BASP, CONFIG_BASP_UNEVEN_ERROR, CONFIG_STRATEGY_USP}};
	for (int pi = 0; pi < np; pi++)
		for (int bi = 0; bi < nb; bi++) {
			config_platform p = plats[pi];
			int W = budgets[bi];
			p.nodes = (W + p.gpus_per_node - 1) / p.gpus_per_node;
			for (int N = 1; N <= W; N++)
				for (int B = 1; B <= seqs; B++)
					for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
						for (int z = 0; z < 4; z++)
							for (int r = 0; r < 2; r++)
								for (int a = 0; a < 3; a++)
								for (int U = 0; U < N; U++) {
									bool usp = kinds[k].s == CONFIG_STRATEGY_USP ||
										   kinds[k].inner == CONFIG_STRATEGY_USP;
									/* the USP group: N, or K = N/B for BASP over USP */
									int P = kinds[k].s == CONFIG_STRATEGY_USP ? N : N % B ? 0 : N / B;
									if (usp ? U < 2 || P == 0 || U >= P || P % U : U != 0)
										continue; /* USP: 1 < U < P, U | P */
									/* rings of at most PLAN_MAX_RING ranks */
									bool p2p = kinds[k].comm == CONFIG_CP_COMM_P2P;
									if ((kinds[k].s == CONFIG_STRATEGY_RING && p2p && N > PLAN_MAX_RING) ||
									    (usp && P / U > PLAN_MAX_RING) ||
									    (kinds[k].inner == CONFIG_STRATEGY_RING && p2p && N / B > PLAN_MAX_RING))
										continue;
									if (W % N || seqs % ((long)(W / N) * B))
										continue;
									bool basp = kinds[k].s == CONFIG_STRATEGY_BASP;
									if (basp && B == 1)
										continue; /* that is Ulysses */
									if (basp && (kinds[k].u != CONFIG_BASP_UNEVEN_ERROR) != (N % B != 0))
										continue; /* each BASP job once */
									int group = usp ? U : basp ? (N + B - 1) / B : N;
									bool ring = kinds[k].s == CONFIG_STRATEGY_RING ||
										    kinds[k].inner == CONFIG_STRATEGY_RING;
									if (a > 0 && (group <= p.gpus_per_node || ring))
										continue;
									config_job job;
									config_job_defaults(&job);
									job.gpus = W, job.sp = N, job.micro_batch = B;
									job.grad_accum = (int)(seqs / ((long)(W / N) * B));
									job.seq_len = seq, job.strategy = kinds[k].s, job.basp_uneven = kinds[k].u;
									job.basp_inner = kinds[k].inner;
									job.cp_comm = kinds[k].comm;
									if (usp)
										job.ulysses_degree = U, job.ring_degree = P / U;
									job.zero_stage = z, job.a2a = (config_a2a)a;
									job.recompute = r ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
									engine_result res;
									bool fit;
									if (!run_job(m, &p, job, &res, &fit) || !fit)
										continue;
									fits++;
									if (res.tokens_per_s > best)
										best = res.tokens_per_s;
								}
		}
	*fits_out = fits;
	return best;
}

START_TEST(planner_top_pick_is_the_exhaustive_best)
{
	static const struct {
		const char *model, *platform;
		int budgets[3], nb;
		long seq, tokens;
	} cases[] = {
		{"llama-3.1-8b", "a100-2x4-ib400", {8}, 1, 32768, 32L * 32768},
		{"llama-3.1-8b", "a100-2x4-ib400", {4, 8}, 2, 16384, 32L * 16384},
		{"qwen1.5-4b", "dgx-h100", {8, 16, 32}, 3, 65536, 64L * 65536},
		{"llama-3.2-1b", "hgx-h200", {8, 16}, 2, 131072, 16L * 131072},
		/* 3 sequences over 8 GPUs: only BASP beyond divisibility splits them */
		{"llama-3.1-8b", "a100-2x4-ib400", {8}, 1, 24576, 3L * 24576},
		{"qwen1.5-7b", "dgx-h100", {16}, 1, 30720, 6L * 30720},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		config_model m;
		config_platform p;
		config_error e = {""};
		ck_assert(config_load_model(cases[i].model, &m, &e) && config_load_platform(cases[i].platform, &p, &e));
		/* every row, the opt-in ring attention and USP too */
		plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = cases[i].budgets,
				.n_budgets = cases[i].nb, .seq_len = cases[i].seq, .global_tokens = cases[i].tokens,
				.variant_mask = ~0u};
		plan_candidate *c;
		long n;
		plan_search_stats st;
		ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
		long fits;
		double best = exhaustive_best(&m, &p, 1, cases[i].budgets, cases[i].nb, cases[i].seq, cases[i].tokens, &fits);
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(n, fits);
		ck_assert_int_eq(st.fit, fits);
		ck_assert_int_eq(st.searched, st.invalid + st.duplicate + st.no_fit + st.fit);
		ck_assert_double_eq(c[0].tokens_per_s, best);
		for (long k = 1; k < n; k++)
			ck_assert(c[k - 1].tokens_per_s >= c[k].tokens_per_s);
		/* every configuration trains the global batch: tokens/s = tokens / step time */
		ck_assert_double_eq_tol(c[0].tokens_per_s * c[0].step_time, (double)cases[i].tokens, 1e-6 * cases[i].tokens);
		free(c);
	}
}
END_TEST

static bool has_variant(const plan_candidate *c, const char *name)
{
	return c->variant_mask & (1u << (plan_variant_find(name) - plan_variants));
}

START_TEST(sweep_runs_basp_beyond_divisibility)
{
	plan_spec s;
	load_spec("uneven.yaml", &s);
	ck_assert_int_eq(s.n_points, 3 * 3 * 2 * 2);
	char dir[64];
	tmpdir(dir, sizeof dir);
	plan_sweep_opts o = {.out_dir = dir, .jobs = 2, .quiet = true};
	plan_sweep_summary sum;
	config_error e = {""};
	ck_assert_msg(plan_sweep_run(&s, &o, &sum, &e), "%s", e.msg);
	ck_assert_int_eq(sum.failed, 0);
	json_t *rows;
	ck_assert(plan_rows_load(dir, &rows, &e));
	long uneven_ok = 0;
	for (long i = 0; i < s.n_points; i++) {
		const json_t *r = json_array_get(rows, (size_t)i);
		plan_point p;
		config_platform pl;
		config_job job;
		plan_point_at(&s, i, &p);
		bool valid = plan_point_job(&s, &p, &pl, &job, &e);
		ck_assert_str_eq(plan_row_str(r, "status"), valid ? "ok" : "invalid");
		/* "basp-unequal" is BASP with basp_uneven unequal whatever the axis says */
		if (p.at[PLAN_AXIS_STRATEGY] == 2)
			ck_assert_str_eq(plan_row_str(r, "basp_uneven"), "unequal");
		if (!valid)
			continue;
		engine_result want;
		bool fits;
		ck_assert(run_job(&s.models[0], &pl, job, &want, &fits));
		ck_assert_double_eq(plan_row_num(r, "step_time_s"), want.step_time);
		ck_assert_int_eq(json_is_true(json_object_get(r, "fits")), fits);
		if (job.strategy == CONFIG_STRATEGY_BASP && job.micro_batch == 3) {
			uneven_ok++;
			ck_assert_int_eq(plan_row_num(r, "parts"), 2); /* groups of 2 and 3, or micro-steps of 2 and 1 */
		}
	}
	ck_assert_int_gt(uneven_ok, 0);
	json_decref(rows);
	plan_spec_finish(&s);
	rm_tree(dir);
}
END_TEST

START_TEST(planner_walks_only_micro_batches_in_range)
{
	/* The largest global batch the range table takes, 2^52 tokens, is 2^40 sequences of
	 * 4096: the search walked B from 1 to the sequences per replica (up to 2^40, hours)
	 * and cast B and the accumulation per / B to int. B and per / B are each at most 2^20
	 * (the micro_batch and grad_accum rows), so on 8 GPUs: N in {1, 2, 4, 8} gives
	 * R = 8 / N replicas and per = 2^40 / R in {2^37, 2^38, 2^39, 2^40}; the B dividing per
	 * with per / B <= 2^20 and B <= 2^20 are the powers of two from per / 2^20 to 2^20:
	 * 4 + 3 + 2 + 1 = 10 (N, B) pairs, each under the 4 default variants: 40 layouts. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.2-1b", &m, &e) && config_load_platform("dgx-a100", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 4096, .global_tokens = 4503599627370496L};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	ck_assert_int_eq(st.layouts, 40);
	for (long i = 0; i < n; i++)
		ck_assert(c[i].job.micro_batch <= 1048576 && c[i].job.grad_accum <= 1048576 &&
			  (double)c[i].job.micro_batch * c[i].job.grad_accum * (8 / c[i].job.sp) == 1099511627776.0);
	free(c);
}
END_TEST

START_TEST(planner_weighs_basp_beyond_divisibility)
{
	/* 3 sequences per step on 8 GPUs: B = 3 never divides N = 8; only the uneven BASP
	 * variants can give each sequence its own group. 12K: the length where both uneven
	 * variants still fit the 40 GB A100 with Hugging Face activations. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("a100-2x4-ib400", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 12288, .global_tokens = 3L * 12288};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	int vb = (int)(plan_variant_find("basp") - plan_variants);
	int vu = (int)(plan_variant_find("basp-unequal") - plan_variants);
	int vx = (int)(plan_variant_find("basp-extra-step") - plan_variants);
	ck_assert_int_eq(st.variant_valid[vb], 0);
	ck_assert_int_gt(st.variant_fit[vu], 0);
	ck_assert_int_gt(st.variant_fit[vx], 0);
	free(c);
	char log[] = "/tmp/spsim-plan-cli-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8",
		     "--seq-len", "12K", "--global-batch", "36K", "--verify", "none", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "basp: no configuration applies here"), "%.1500s", out);
	ck_assert_msg(strstr(out, "basp-extra-step does not win here") || strstr(out, "basp-extra-step wins"), "%.1500s",
		      out);
	ck_assert_msg(strstr(out, "basp-unequal"), "%.1500s", out);
	free(out);
	unlink(log);
}
END_TEST

START_TEST(planner_search_reports_progress_and_stops_when_asked)
{
	/* One platform, 16 GPUs, 4 sequences of 16K per step. The layouts (platform x budget x
	 * SP degree x micro-batch x strategy) the counting pass finds are the ones the search
	 * then evaluates, each reported to the progress; the log's last line says so. A stop
	 * already set evaluates nothing and says it was interrupted. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("a100-2x4-ib400", &p, &e));
	int budget = 16;
	FILE *log = tmpfile();
	ck_assert_ptr_nonnull(log);
	plan_progress prog;
	plan_progress_start(&prog, log, 0, false);
	prog.unit = "layouts";
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 16384, .global_tokens = 4L * 16384, .progress = &prog};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	plan_progress_end(&prog);
	ck_assert(!st.interrupted);
	ck_assert_int_gt(st.layouts_total, 1);
	ck_assert_int_eq(st.layouts, st.layouts_total);
	ck_assert_int_eq(prog.total, st.layouts_total);
	ck_assert_int_eq(prog.done, st.layouts_total);
	ck_assert_int_gt(n, 0);
	free(c);
	char text[4096] = "", want[128];
	rewind(log);
	size_t got = fread(text, 1, sizeof text - 1, log);
	text[got] = '\0';
	fclose(log);
	snprintf(want, sizeof want, "progress: %ld/%ld layouts (100%%)", st.layouts_total, st.layouts_total);
	ck_assert_msg(strstr(text, want), "'%s' not in: %s", want, text);

	volatile sig_atomic_t stop = 1;
	q.progress = NULL;
	q.stop = &stop;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	ck_assert(st.interrupted);
	ck_assert_int_eq(st.layouts, 0);
	ck_assert_int_eq(st.searched, 0);
	ck_assert_int_eq(n, 0);
	free(c);
}
END_TEST

/* Runs `spsim` with args, stdout to a temporary file and stderr read here; once stderr shows
 * `cue`, waits `delay_ns` and sends SIGINT to the process (the parent only). Returns the
 * exit status; err receives stderr's tail, *out stdout (to free). */
static int plan_interrupted(char *const *args, const char *cue, long delay_ns, char *err, size_t err_len, char **out)
{
	char out_path[] = "/tmp/spsim-plan-int-XXXXXX";
	int fo = mkstemp(out_path);
	ck_assert_int_ge(fo, 0);
	int pe[2];
	ck_assert_int_eq(pipe(pe), 0);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fo, STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		close(pe[0]);
		execv(args[0], args);
		_exit(127);
	}
	close(pe[1]);
	err[0] = '\0';
	size_t used = 0;
	ssize_t r;
	bool sent = false;
	while ((r = read(pe[0], err + used, err_len - 1 - used)) > 0) {
		used += (size_t)r;
		err[used] = '\0';
		if (!sent && strstr(err, cue)) {
			nanosleep(&(struct timespec){.tv_nsec = delay_ns}, NULL);
			ck_assert_int_eq(kill(pid, SIGINT), 0);
			sent = true;
		}
		if (used + 1 >= err_len)
			used = 0; /* keep reading: only the tail matters past here */
	}
	close(pe[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(sent, "'%s' never printed: %s", cue, err);
	close(fo);
	*out = slurp(out_path);
	unlink(out_path);
	return status;
}

START_TEST(plan_ctrl_c_ranks_what_was_searched)
{
	/* A search of three platforms x sixteen budgets (10,668 layouts, 2.5 s on one loaded
	 * core here): SIGINT 0.3 s after it says it is searching. It stops, prints the ranking of what it
	 * evaluated with a note on stdout and stderr, runs no SimGrid re-run, and exits 130.
	 * Into the search, not at its edge: a signal right after "plan: searching" can land
	 * before the first layout under load; the count pass and the first layouts take
	 * milliseconds, the whole search seconds (more under load or sanitizers), and no
	 * progress line is due before 2 s in a log. */
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-a100,dgx-h100,hgx-h200",
		     "--gpus", "8,16,24,32,48,64,96,128,192,256,384,512,768,1024,2048,4096", "--seq-len", "32K",
		     "--global-batch", "32M", "--progress", NULL};
	char err[1 << 14], *out;
	int status = plan_interrupted(a, "plan: searching", 300000000, err, sizeof err, &out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d; stderr: %s", status, err);
	ck_assert_msg(strstr(err, "interrupted after"), "%s", err);
	ck_assert_msg(!strstr(err, "SimGrid runs"), "re-runs after an interrupt: %s", err);
	const char *note = strstr(out, "interrupted: the search stopped after ");
	ck_assert_msg(note, "%.2000s", out);
	long done = 0, total = 0;
	ck_assert_int_eq(sscanf(note, "interrupted: the search stopped after %ld of %ld", &done, &total), 2);
	/* under heavy load (sanitizers) the signal may still land before the first layout */
	ck_assert_msg(done >= 0 && done < total, "%ld of %ld layouts: %.2000s", done, total, out);
	/* what it found is ranked; the memory advice for an empty search is not given */
	ck_assert_msg(strstr(out, "ranked by tokens/s on the analytic engine") || strstr(out, "nothing to rank"),
		      "%.2000s", out);
	ck_assert_msg(!strstr(out, "try more GPUs"), "%.2000s", out);
	free(out);
}
END_TEST

START_TEST(plan_ctrl_c_during_reruns_keeps_the_finished_ones)
{
	/* One platform and budget (the search takes a fraction of a second), the top 8 re-run
	 * on SimGrid one at a time (about 1.5 s each on one core here, 12 s in all): SIGINT 0.5 s
	 * after it says it is re-running, to the parent only (it kills its workers). It stops,
	 * prints the ranking with the re-runs that finished (any number, under load none) and
	 * marks each of the others analytic only, a note on stdout and stderr, and exits 130. */
	if (simgrid_missing(__func__))
		return;
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "64",
		     "--seq-len", "32K", "--global-batch", "4M", "--top", "8", "-j", "1", "--progress", NULL};
	char err[1 << 14], *out;
	int status = plan_interrupted(a, "re-running the top 8 on simgrid", 500000000, err, sizeof err, &out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d; stderr: %s", status, err);
	const char *enote = strstr(err, "interrupted during the re-runs after ");
	ck_assert_msg(enote, "%s", err);
	const char *note = strstr(out, "interrupted: the re-runs on simgrid stopped after ");
	ck_assert_msg(note, "%.3000s", out);
	long done = -1, total = 0, verified = -1;
	ck_assert_int_eq(sscanf(note, "interrupted: the re-runs on simgrid stopped after %ld of %ld runs; %ld results",
				&done, &total, &verified), 3);
	ck_assert_int_eq(total, 8);
	ck_assert_msg(done >= 0 && done < total, "%ld of %ld: %.3000s", done, total, out);
	ck_assert_int_eq(verified, done); /* none of these runs fails */
	/* each row is either re-run or marked: the 8 - done unmarked ones are the verified */
	long marked = 0;
	for (const char *p = out; (p = strstr(p, "[simgrid: " PLAN_VERIFY_INTERRUPTED "]")) != NULL; p++)
		marked++;
	ck_assert_msg(marked == total - done, "%ld marked, %ld finished: %.3000s", marked, done, out);
	ck_assert_msg(strstr(out, "re-run on simgrid until the interrupt"), "%.3000s", out);
	free(out);
}
END_TEST

START_TEST(plan_tie_names_the_settings_that_differ)
{
	/* 8 H100s (one node), 32K, 512K tokens: Ulysses over the node at ZeRO-3 and at ZeRO-1
	 * step within 0.05% (analytic: 43045 and 43037 tokens/s), a tie. The tie says what
	 * differs (the ZeRO stage), not "same step time", which it is not. */
	char log[] = "/tmp/spsim-plan-tie-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "8",
		     "--seq-len", "32K", "--global-batch", "512K", "--verify", "none", "--top", "2", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "ties with #1 (ZeRO-1 vs ZeRO-3)"), "%.2000s", out);
	ck_assert_msg(!strstr(out, "same step time"), "%.2000s", out);
	free(out);
	unlink(log);
}
END_TEST

START_TEST(planner_counts_and_checks_each_recompute)
{
	/* Every configuration searched is counted once: searched = fit + no_fit + invalid +
	 * duplicate, selective recompute included. And --offload-activations is checked per
	 * recompute: with none,full,selective the none and selective ones are rejected (the
	 * checkpoints it moves exist only with full recompute), the full ones are searched,
	 * so the full-only search of the same job finds exactly as many fitting ones. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("dgx-a100", &p, &e));
	ck_assert(p.host.bandwidth > 0);
	int budget = 8;
	config_job base;
	config_job_defaults(&base);
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 8192, .global_tokens = 8L * 8192, .recompute_mask = 4u, .base = &base};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	free(c);
	ck_assert_int_gt(st.fit, 0);
	ck_assert_int_eq(st.searched, st.fit + st.no_fit + st.invalid + st.duplicate);
	base.offload_activations = true;
	q.recompute_mask = 2u; /* full */
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	free(c);
	long full_fit = st.fit;
	ck_assert_int_gt(full_fit, 0);
	ck_assert_int_eq(st.invalid, 0);
	ck_assert_int_eq(st.searched, st.fit + st.no_fit + st.invalid + st.duplicate);
	q.recompute_mask = 7u; /* none, full, selective */
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	free(c);
	ck_assert_int_eq(st.fit, full_fit);
	ck_assert_int_eq(st.invalid, 2 * (st.searched - st.duplicate) / 3);
	ck_assert_int_eq(st.searched, st.fit + st.no_fit + st.invalid + st.duplicate);
}
END_TEST

START_TEST(planner_finds_basp_where_it_wins)
{
	/* Reference cluster at 32K: groups of K = 4 (one node each) beat all-to-alls across
	 * both nodes; the merged #1 is reachable as BASP (SP 8, B 2). (At 8K and 16K, with
	 * Hugging Face activations and the memory reserve on 40 GB, every layout needs full
	 * recompute or data parallelism, and plain data parallelism without any all-to-all
	 * wins or ties: ZeRO-3's gathers and reduce-scatters already share the one NIC per
	 * node with any all-to-all that crosses it, in both engines.) */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("a100-2x4-ib400", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 32768, .global_tokens = 16L * 32768};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	long m2 = plan_merge(c, n);
	ck_assert_int_lt(m2, n);
	ck_assert(has_variant(&c[0], "basp"));
	ck_assert_int_eq(c[0].layout.group_size, p.gpus_per_node);
	ck_assert_int_eq(c[0].layout.seqs_per_group, 1);
	/* and it beats the reference Ulysses over all 8 GPUs at every micro-batch */
	for (long k = 0; k < m2; k++)
		if (c[k].variant->strategy == CONFIG_STRATEGY_ULYSSES && c[k].job.sp == 8)
			ck_assert(c[0].tokens_per_s > 1.05 * c[k].tokens_per_s);
	free(c);
	/* the CLI says so */
	char log[] = "/tmp/spsim-plan-cli-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8",
		     "--seq-len", "32K", "--global-batch", "512K", "--verify", "none", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "basp wins: #1 is a basp layout, groups of K=4 GPUs"), "%.1500s", out);
	free(out);
	unlink(log);
}
END_TEST

START_TEST(planner_says_when_basp_does_not_win)
{
	/* One 8-GPU NVSwitch node at 32K: every all-to-all is on NVLink already, and the
	 * memory left for B > 1 costs recompute; Ulysses over the node wins. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("dgx-h100", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 32768, .global_tokens = 32L * 32768};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	n = plan_merge(c, n);
	ck_assert(!has_variant(&c[0], "basp"));
	free(c);
	char log[] = "/tmp/spsim-plan-cli-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "8",
		     "--seq-len", "32K", "--global-batch", "1M", "--verify", "none", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "basp does not win here: its best layout"), "%.1500s", out);
	ck_assert_msg(strstr(out, "recompute full vs none"), "%.1500s", out);
	free(out);
	unlink(log);
}
END_TEST

/* The planner takes run's job settings (--attention-kernel, --tile-logits, ...) as settings
 * every configuration shares: each candidate is run's job with them (its analytic step is
 * a direct run of that job), and a faster attention kernel makes the best step shorter. */
START_TEST(planner_takes_run_job_settings)
{
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("dgx-h100", &p, &e));
	int budget = 8;
	config_job base;
	config_job_defaults(&base);
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 65536, .global_tokens = 16L * 65536, .base = &base};
	plan_candidate *c;
	long n2, n3;
	plan_search_stats st;
	base.attention_kernel = CONFIG_ATTN_FA2;
	ck_assert(plan_search(&q, &c, &n2, &st, &e) && n2 > 0);
	double fa2 = c[0].analytic.step_time;
	free(c);
	base.attention_kernel = CONFIG_ATTN_FA3;
	base.tile_logits = 4;
	ck_assert(plan_search(&q, &c, &n3, &st, &e) && n3 > 0);
	for (long i = 0; i < n3; i++)
		ck_assert(c[i].job.attention_kernel == CONFIG_ATTN_FA3 && c[i].job.tile_logits == 4);
	config_platform pc = p;
	pc.nodes = 1;
	bool fits;
	engine_result want = direct(&m, &pc, c[0].job, &fits);
	ck_assert_double_eq(c[0].analytic.step_time, want.step_time);
	ck_assert_double_lt(c[0].analytic.step_time, fa2);
	free(c);
	/* the flags: run's parser, run's messages */
	char log[] = "/tmp/spsim-plan-cli-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "8",
		     "--seq-len", "64K", "--global-batch", "1M", "--verify", "none", "--top", "1", "--format", "json",
		     "--attention-kernel", "flash-attn-3", "--tile-logits", "4", "--zero-overlap", "off", "--contiguous-gradients", "off", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	json_t *j = json_load_file(log, 0, NULL);
	ck_assert_ptr_nonnull(j);
	json_t *top = json_array_get(json_object_get(j, "ranking"), 0);
	ck_assert_str_eq(plan_row_str(top, "attention_kernel"), "flash-attn-3");
	ck_assert_double_eq(plan_row_num(top, "tile_logits"), 4);
	ck_assert(json_is_false(json_object_get(top, "zero_overlap")));
	ck_assert(json_is_false(json_object_get(top, "contiguous_gradients")));
	json_decref(j);
	char *bad[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "8",
		       "--seq-len", "64K", "--global-batch", "1M", "--attention-kernel", "flash-attn-4", NULL};
	ck_assert_int_eq(run_exe(bad, log), 2);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "--attention-kernel expects flash-attn-2, flash-attn-3, cudnn or flash-attn-triton, got "
				  "'flash-attn-4'"),
		      "%.1500s", out);
	free(out);
	unlink(log);
}
END_TEST

START_TEST(planner_takes_the_implementation_and_reserve)
{
	/* Megatron's fused kernels keep less than Hugging Face's eager modules, so at least as
	 * many configurations fit; a reserve of the whole GPU leaves none. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("a100-2x4-ib400", &p, &e));
	int budget = 8;
	config_job base;
	config_job_defaults(&base);
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 16384, .global_tokens = 32L * 16384, .base = &base};
	plan_candidate *c;
	long n_hf, n_mg, n_none;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n_hf, &st, &e));
	free(c);
	base.impl = CONFIG_IMPL_MEGATRON;
	ck_assert(plan_search(&q, &c, &n_mg, &st, &e));
	for (long i = 0; i < n_mg; i++)
		ck_assert_int_eq(c[i].job.impl, CONFIG_IMPL_MEGATRON);
	free(c);
	ck_assert_int_gt(n_mg, n_hf);
	base.memory_reserve_set = true;
	base.memory_reserve = p.gpu.memory_bytes;
	ck_assert(plan_search(&q, &c, &n_none, &st, &e));
	free(c);
	ck_assert_int_eq(n_none, 0);
	/* the CLI flags, and their errors */
	char log[] = "/tmp/spsim-plan-cli-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	char *a[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8",
		     "--seq-len", "16K", "--global-batch", "512K", "--verify", "none", "--impl", "megatron", NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	char *bad[] = {(char *)exe(), "plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8",
		       "--seq-len", "16K", "--global-batch", "512K", "--memory-reserve", "lots", NULL};
	ck_assert_int_eq(run_exe(bad, log), 2);
	char *out = slurp(log);
	ck_assert_msg(strstr(out, "--memory-reserve: 'lots' is not a number with a unit"), "%.1500s", out);
	free(out);
	unlink(log);
}
END_TEST

START_TEST(planner_merges_one_layout_under_two_names)
{
	/* BASP (SP 8, B 2) and Ulysses (SP 4, B 1, 2 replicas) with the same batch: groups of
	 * 4 GPUs, one sequence each: the same step. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("a100-2x4-ib400", &p, &e));
	config_job a, b;
	config_job_defaults(&a);
	a.gpus = 8, a.sp = 8, a.micro_batch = 2, a.grad_accum = 4, a.seq_len = 8192, a.zero_stage = 3;
	a.strategy = CONFIG_STRATEGY_BASP;
	b = a;
	b.strategy = CONFIG_STRATEGY_ULYSSES, b.sp = 4, b.micro_batch = 1, b.grad_accum = 4;
	engine_result ra = direct(&m, &p, a, NULL), rb = direct(&m, &p, b, NULL);
	ck_assert_double_eq(ra.step_time, rb.step_time);
	ck_assert_double_eq(ra.tokens_per_s, rb.tokens_per_s);
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 8192, .global_tokens = 16L * 8192, .zero_mask = 1u << 3, .recompute_mask = 1};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	long k = plan_merge(c, n);
	for (long i = 0; i < k; i++)
		for (long j = i + 1; j < k; j++)
			ck_assert(!plan_same_layout(&c[i], &c[j]));
	/* The merged row is named as the BASP configuration a user would write (basp SP 8
	 * B=2, groups of K = 4), with the Ulysses spelling as its alias; no row that a BASP
	 * name reaches is listed as ulysses. */
	bool found = false;
	for (long i = 0; i < k; i++) {
		if (c[i].job.strategy == CONFIG_STRATEGY_BASP && c[i].job.sp == 8 && c[i].job.micro_batch == 2) {
			found = true;
			ck_assert_int_eq(c[i].layout.group_size, 4);
			ck_assert(has_variant(&c[i], "basp") && has_variant(&c[i], "ulysses"));
			ck_assert_msg(strstr(c[i].also, "ulysses SP 4 B=1"), "also: %s", c[i].also);
		}
		if (has_variant(&c[i], "basp"))
			ck_assert_int_ne(c[i].job.strategy, CONFIG_STRATEGY_ULYSSES);
	}
	ck_assert(found);
	free(c);
}
END_TEST

START_TEST(planner_searches_selective_recompute_on_request)
{
	/* recompute_mask bit 2 is selective recompute: asked alone, every candidate runs it;
	 * asked with none and full, all three settings appear among the candidates. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("dgx-h100", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 8192, .global_tokens = 8L * 8192, .zero_mask = 1u << 3, .recompute_mask = 4};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	ck_assert_int_gt(n, 0);
	for (long i = 0; i < n; i++)
		ck_assert_int_eq(c[i].job.recompute, CONFIG_RECOMPUTE_SELECTIVE);
	free(c);
	q.recompute_mask = 7;
	ck_assert_msg(plan_search(&q, &c, &n, &st, &e), "%s", e.msg);
	unsigned seen = 0;
	for (long i = 0; i < n; i++)
		seen |= 1u << c[i].job.recompute;
	ck_assert_uint_eq(seen, 7);
	free(c);
}
END_TEST

START_TEST(planner_cost_ranking_and_explanations)
{
	config_model m;
	config_platform p[2];
	config_error e = {""};
	ck_assert(config_load_model("llama-3.1-8b", &m, &e) && config_load_platform("dgx-a100", &p[0], &e) &&
		  config_load_platform("dgx-h100", &p[1], &e));
	int budgets[] = {8, 16};
	double price[] = {1.5, 4.0};
	plan_query q = {.model = &m, .platforms = p, .price = price, .n_platforms = 2, .budgets = budgets,
			.n_budgets = 2, .seq_len = 32768, .global_tokens = 64L * 32768};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	ck_assert_int_gt(n, 10);
	plan_rank(c, n, PLAN_RANK_COST);
	for (long k = 0; k < n; k++) {
		/* $/h x GPUs / 3600 / (tokens/s) x 1e6 */
		double want = price[c[k].platform] * c[k].job.gpus / 3600.0 / c[k].tokens_per_s * 1e6;
		ck_assert_double_eq_tol(c[k].cost_per_mtok, want, 1e-12 * want);
		if (k)
			ck_assert(c[k - 1].cost_per_mtok <= c[k].cost_per_mtok);
	}
	char why[512];
	plan_explain(&q, &c[0], &c[0], PLAN_RANK_COST, why, sizeof why);
	ck_assert_str_eq(why, "best");
	plan_rank(c, n, PLAN_RANK_THROUGHPUT);
	/* A configuration that differs from #1 only in a bigger all-to-all group is behind
	 * by its SP all-to-all. */
	for (long k = 1; k < n; k++) {
		const plan_candidate *x = &c[k], *b = &c[0];
		if (x->platform == b->platform && x->job.gpus == b->job.gpus && x->job.zero_stage == b->job.zero_stage &&
		    x->job.recompute == b->job.recompute && x->layout.group_size > b->layout.group_size &&
		    x->analytic.breakdown.sp_comm_exposed - b->analytic.breakdown.sp_comm_exposed >
			    fabs(x->analytic.breakdown.zero_comm_exposed - b->analytic.breakdown.zero_comm_exposed) &&
		    x->tokens_per_s < b->tokens_per_s * 0.999) {
			plan_explain(&q, x, b, PLAN_RANK_THROUGHPUT, why, sizeof why);
			char want[128];
			snprintf(want, sizeof want, "SP all-to-all +");
			ck_assert_msg(strstr(why, want), "%s", why);
			snprintf(want, sizeof want, "all-to-all over %d GPUs vs %d", x->layout.group_size, b->layout.group_size);
			ck_assert_msg(strstr(why, want), "%s", why);
			break;
		}
	}
	free(c);
}
END_TEST

START_TEST(planner_verify_reruns_in_own_processes)
{
	/* The second engine here is the analytic one itself: the re-run must reproduce. */
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.2-1b", &m, &e) && config_load_platform("dgx-h100", &p, &e));
	int budget = 16;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 32768, .global_tokens = 32L * 32768};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(plan_search(&q, &c, &n, &st, &e));
	long k = n < 6 ? n : 6;
	engine_options opt = {.placement = ENGINE_PLACE_CONTIGUOUS};
	ck_assert_msg(plan_verify(&q, c, k, "analytic", &opt, 2, 30, &e), "%s", e.msg);
	for (long i = 0; i < k; i++) {
		ck_assert(c[i].has_verified);
		ck_assert_double_eq(c[i].verified.step_time, c[i].analytic.step_time);
		ck_assert_double_eq(c[i].tokens_per_s, c[i].analytic.tokens_per_s);
	}
	ck_assert(!plan_verify(&q, c, k, "no-such-engine", &opt, 2, 30, &e));
	free(c);
}
END_TEST

START_TEST(planner_rejects_a_ragged_batch)
{
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert(config_load_model("llama-3.2-1b", &m, &e) && config_load_platform("dgx-h100", &p, &e));
	int budget = 8;
	plan_query q = {.model = &m, .platforms = &p, .n_platforms = 1, .budgets = &budget, .n_budgets = 1,
			.seq_len = 32768, .global_tokens = 32768 * 3 + 5};
	plan_candidate *c;
	long n;
	plan_search_stats st;
	ck_assert(!plan_search(&q, &c, &n, &st, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "not a whole number of 32768-token sequences"));
}
END_TEST

/* ----------------------------------------------------------------- plots --- */
/* PNG: signature, then the IHDR chunk with width and height (big-endian). */
static void assert_png(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f, "%s missing", path);
	unsigned char h[24];
	ck_assert_int_eq(fread(h, 1, sizeof h, f), sizeof h);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	ck_assert_msg(memcmp(h, sig, 8) == 0, "%s is not a PNG", path);
	ck_assert_msg(memcmp(h + 12, "IHDR", 4) == 0, "%s: no IHDR", path);
	uint32_t w = (uint32_t)h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19];
	uint32_t ht = (uint32_t)h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23];
	ck_assert_int_eq(w, 960);
	ck_assert_int_eq(ht, 640);
	ck_assert_int_gt(size, 5000); /* something was drawn */
}

static void assert_svg(const char *path)
{
	char *s = slurp(path);
	ck_assert_msg(s, "%s missing", path);
	ck_assert_msg(strncmp(s, "<?xml", 5) == 0, "%s: no XML declaration", path);
	ck_assert_ptr_nonnull(strstr(s, "<svg"));
	char *end = strstr(s, "</svg>");
	ck_assert_msg(end, "%s: not closed", path);
	for (end += 6; *end; end++)
		ck_assert_msg(*end == '\n' || *end == ' ', "%s: text after </svg>", path);
	ck_assert_ptr_nonnull(strstr(s, "<path"));
	free(s);
}

static void assert_figure(const char *dir, const char *name)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s.png", dir, name);
	assert_png(p);
	snprintf(p, sizeof p, "%s/%s.svg", dir, name);
	assert_svg(p);
}

static const char *const all_figures[] = {"speedup-vs-micro-batch", "speedup-vs-seq-len", "scaling-vs-gpus",
					   "memory-vs-seq-len", "breakdown", "throughput", NULL};

START_TEST(plot_sweep_figures_are_well_formed)
{
	config_error e = {""};
	ck_assert_msg(plan_plot_available(&e), "%s", e.msg);
	char spec[CONFIG_PATH_MAX], dir[64], figs[96], log[128];
	fixture(spec, sizeof spec, "plots.yaml");
	tmpdir(dir, sizeof dir);
	snprintf(figs, sizeof figs, "%s/figures", dir);
	snprintf(log, sizeof log, "%s/log", dir);
	char *a[] = {(char *)exe(), "sweep", spec, "-o", dir, "--force", "--plot", figs, NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	for (int i = 0; all_figures[i]; i++)
		assert_figure(figs, all_figures[i]);
	/* the memory figure draws the capacity line: A100 40GB = 40 GiB */
	char p[256];
	snprintf(p, sizeof p, "%s/memory-vs-seq-len.gp", figs);
	char *gp = slurp(p);
	ck_assert_ptr_nonnull(strstr(gp, "capacity 40 GiB"));
	/* limits in neutral grey, never a strategy's colour; the x label clear of the key */
	ck_assert_msg(strstr(gp, "lc rgb '#555555' title \"capacity 40 GiB\""), "%s", gp);
	ck_assert_ptr_null(strstr(gp, "#cc0000"));
	ck_assert_ptr_nonnull(strstr(gp, "set key below noenhanced height"));
	free(gp);
	/* each strategy one colour in every figure: ulysses blue, basp orange, the N/B
	 * Ulysses brown, in the curves (as the base of their shades) and in the bars */
	static const char *const curves[] = {"memory-vs-seq-len", "speedup-vs-micro-batch", "scaling-vs-gpus", NULL};
	for (int i = 0; curves[i]; i++) {
		snprintf(p, sizeof p, "%s/%s.gp", figs, curves[i]);
		gp = slurp(p);
		/* a series' colour is its strategy's, darkened or lightened; find every series
		 * line and check its hue family by the dominant channel */
		int series = 0;
		char style[64][32];
		for (char *at = strstr(gp, "with linespoints"); at; at = strstr(at + 1, "with linespoints")) {
			char *lc = strstr(at, "lc rgb '#"), *t = strstr(at, "title \"");
			ck_assert(lc && t);
			unsigned rgb = (unsigned)strtoul(lc + 9, NULL, 16);
			int r = (int)(rgb >> 16), g = (int)(rgb >> 8 & 255), b = (int)(rgb & 255);
			if (strncmp(t + 7, "ulysses:sp=N/B", 14) == 0)
				ck_assert_msg(r > g && g > b, "%s: %.60s", curves[i], lc); /* brown */
			else if (strncmp(t + 7, "ulysses", 7) == 0)
				ck_assert_msg(b > g && g > r, "%s: %.60s", curves[i], lc); /* blue */
			else if (strncmp(t + 7, "basp", 4) == 0)
				ck_assert_msg(r > g && g > b && r - b > 100, "%s: %.60s", curves[i], lc); /* orange */
			/* and no two series drawn alike: colour and dash differ */
			char *dt = strstr(at, " dt ");
			ck_assert(dt && series < 64);
			snprintf(style[series], sizeof style[series], "%.7s/%ld", lc + 8, strtol(dt + 4, NULL, 10));
			for (int k = 0; k < series; k++)
				ck_assert_msg(strcmp(style[k], style[series]) != 0, "%s: two series drawn as %s", curves[i],
					      style[k]);
			series++;
		}
		ck_assert_int_gt(series, 1);
		free(gp);
	}
	snprintf(p, sizeof p, "%s/breakdown.dat", figs);
	char *bars = slurp(p);
	/* the colour column: 0x1f77b4 = 2062260 for ulysses, 0xff7f0e = 16744206 for basp */
	ck_assert_msg(strstr(bars, "\"ulysses\"\t1\t2062260\t"), "%.400s", bars);
	ck_assert_msg(strstr(bars, "\"basp\"\t2\t16744206\t"), "%.400s", bars);
	free(bars);
	/* speedups in the data are tokens/s ratios over the baseline */
	snprintf(p, sizeof p, "%s/speedup-vs-micro-batch.dat", figs);
	char *dat = slurp(p);
	ck_assert_ptr_nonnull(strstr(dat, "# basp"));
	free(dat);
	rm_tree(dir);
}
END_TEST

START_TEST(plot_compare_figures_are_well_formed)
{
	config_error e = {""};
	ck_assert_msg(plan_plot_available(&e), "%s", e.msg);
	char dir[64], log[128], slash[80];
	tmpdir(dir, sizeof dir);
	snprintf(log, sizeof log, "%s.log", dir);
	snprintf(slash, sizeof slash, "%s/", dir); /* as a user types it: the paths printed have one '/' */
	char *a[] = {(char *)exe(), "compare", "--model", "llama-3.2-1b", "--platform", "a100-2x4-ib400",
		     "--micro-batch", "4", "--seq-len", "16K", "--strategies", "ulysses,basp,ulysses:sp=2", "--plot", slash,
		     NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	for (int i = 0; all_figures[i]; i++)
		if (strcmp(all_figures[i], "throughput") != 0)
			assert_figure(dir, all_figures[i]);
	char *printed = slurp(log);
	ck_assert_ptr_nonnull(printed);
	/* only the figure lines: the log also holds stderr, where a sanitizer build may print
	 * a warning with a URL */
	int figures = 0;
	for (char *line = strtok(printed, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "figure: ", 8) == 0) {
			figures++;
			ck_assert_msg(!strstr(line, "//"), "%.200s", line);
		}
	ck_assert_int_gt(figures, 0);
	free(printed);
	unlink(log);
	rm_tree(dir);
}
END_TEST

/* `sweep -o DIR/rows --plot DIR/rows/figures` (examples/run.sh): the figures' folder sits in
 * the rows' folder, which the sweep creates in the same run, so --plot makes the folders
 * above it as -o does; a --plot path under a file is still refused before any work (exit 2). */
START_TEST(plot_folder_inside_the_sweep_output)
{
	config_error e = {""};
	ck_assert_msg(plan_plot_available(&e), "%s", e.msg);
	char dir[64], log[128], spec[128], out[160], figs[192], bad[192];
	tmpdir(dir, sizeof dir);
	snprintf(log, sizeof log, "%s.log", dir);
	snprintf(spec, sizeof spec, "%s/spec.yaml", dir);
	FILE *f = fopen(spec, "w");
	ck_assert_ptr_nonnull(f);
	fputs("sweep:\n  name: nested\n  model: llama-3.2-1b\n  platform: a100-2x4-ib400\n"
	      "  strategy: [ulysses, basp]\n  micro_batch: 2\n  seq_len: 16K\n  zero: 3\n  recompute: full\n",
	      f);
	fclose(f);
	snprintf(out, sizeof out, "%s/rows/a", dir);
	snprintf(figs, sizeof figs, "%s/figures", out);
	char *a[] = {(char *)exe(), "sweep", spec, "-o", out, "--quiet", "--plot", figs, NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	assert_figure(figs, "breakdown");
	snprintf(bad, sizeof bad, "%s/figures", spec); /* below a file */
	char *b[] = {(char *)exe(), "sweep", spec, "-o", out, "--force", "--quiet", "--plot", bad, NULL};
	ck_assert_int_eq(run_exe(b, log), 2);
	char *printed = slurp(log);
	ck_assert_ptr_nonnull(printed);
	ck_assert_msg(strstr(printed, "is not a folder"), "%s", printed);
	free(printed);
	unlink(log);
	rm_tree(dir);
}
END_TEST

/* Every strategy of the strategies study (examples/strategies.yaml) has its own listed
 * colour in the bars: eight labels, eight colours, and only Ulysses is blue (blue the
 * strongest channel), so BASP over USP no longer reads as Ulysses. */
START_TEST(plot_study_strategies_have_distinct_colours)
{
	config_error e = {""};
	ck_assert_msg(plan_plot_available(&e), "%s", e.msg);
	char dir[64], log[128], p[256];
	tmpdir(dir, sizeof dir);
	snprintf(log, sizeof log, "%s.log", dir);
	char *a[] = {(char *)exe(), "compare", "--model", "llama-3.2-1b", "--platform", "a100-2x4-ib400",
		     "--micro-batch", "4", "--seq-len", "16K", "--strategies",
		     "ulysses,ring,ring:comm=all_gather,usp:u=4,basp,basp:inner=ring,basp:inner=ring:comm=all_gather,"
		     "basp:inner=usp:u=2",
		     "--plot", dir, NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	snprintf(p, sizeof p, "%s/breakdown.dat", dir);
	char *bars = slurp(p);
	ck_assert_ptr_nonnull(bars);
	unsigned long colours[16];
	int n = 0;
	for (char *line = strchr(bars, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		/* x, compute, compute+sp, step, tokens_per_s, "label", index, colour, fits */
		char *q = strchr(line + 1, '"');
		ck_assert_ptr_nonnull(q);
		char *q2 = strchr(q + 1, '"');
		ck_assert_ptr_nonnull(q2);
		char *end;
		strtol(q2 + 1, &end, 10); /* label index */
		unsigned long rgb = strtoul(end, NULL, 10);
		int r = (int)(rgb >> 16), g = (int)(rgb >> 8 & 255), b = (int)(rgb & 255);
		bool ulysses = strncmp(q + 1, "ulysses\"", 8) == 0;
		ck_assert_msg(ulysses == (b > r && b > g), "%.*s: #%06lx", (int)(q2 - q), q, rgb);
		for (int k = 0; k < n; k++)
			ck_assert_msg(colours[k] != rgb, "%.*s shares #%06lx", (int)(q2 - q), q, rgb);
		ck_assert_int_lt(n, 16);
		colours[n++] = rgb;
	}
	ck_assert_int_eq(n, 8);
	free(bars);
	unlink(log);
	rm_tree(dir);
}
END_TEST

/* The strategy spec sets the row's cp_comm_type (ulysses a2a, ring p2p, ring:comm=all_gather
 * all_gather): a field that follows the label is no dimension of its own, so the figures
 * keep every strategy instead of pinning cp_comm_type to one value (which left Ulysses and
 * BASP alone in the strategies study's bars). */
START_TEST(plot_keeps_strategies_whose_cp_comm_type_differs)
{
	config_error e = {""};
	ck_assert_msg(plan_plot_available(&e), "%s", e.msg);
	char dir[64], spec[128], figs[128], log[128], p[160];
	tmpdir(dir, sizeof dir);
	snprintf(spec, sizeof spec, "%s/cp.yaml", dir);
	snprintf(figs, sizeof figs, "%s/figures", dir);
	snprintf(log, sizeof log, "%s.log", dir);
	FILE *f = fopen(spec, "w");
	ck_assert_ptr_nonnull(f);
	/* 3 platforms x 2 node counts x 3 strategies: 18 bars, more than a bar figure holds (16),
	 * so one field is pinned; it must be the node count, not cp_comm_type */
	fputs("sweep:\n  name: cp\n  model: llama-3.2-1b\n  platform: [a100-pcie, dgx-a100, hgx-h200]\n"
	      "  nodes: [1, 2]\n"
	      "  strategy: [ulysses, ring, \"ring:comm=all_gather\"]\n  micro_batch: 2\n  seq_len: 16K\n"
	      "  zero: 3\n  recompute: full\n",
	      f);
	fclose(f);
	char out[160];
	snprintf(out, sizeof out, "%s/rows", dir);
	char *a[] = {(char *)exe(), "sweep", spec, "-o", out, "--quiet", "--plot", figs, NULL};
	ck_assert_int_eq(run_exe(a, log), 0);
	snprintf(p, sizeof p, "%s/throughput.dat", figs);
	char *bars = slurp(p);
	ck_assert_ptr_nonnull(bars);
	/* nine bars left: every strategy on each of the three platforms */
	static const char *const labels[] = {"\"ulysses\"", "\"ring\"", "\"ring:comm=all_gather\""};
	for (int l = 0; l < 3; l++) {
		int n = 0;
		for (char *q = strstr(bars, labels[l]); q; q = strstr(q + 1, labels[l]))
			n++;
		ck_assert_msg(n == 3, "%s in %d bars: %s", labels[l], n, bars);
	}
	snprintf(p, sizeof p, "%s/throughput.gp", figs);
	char *gp = slurp(p);
	ck_assert_ptr_nonnull(gp);
	ck_assert_msg(!strstr(gp, "cp_comm_type"), "the subtitle pins cp_comm_type: %.400s", gp);
	free(gp);
	free(bars);
	unlink(log);
	rm_tree(dir);
}
END_TEST

START_TEST(plot_without_gnuplot_says_so)
{
	setenv("SPSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
	config_error e = {""};
	ck_assert(!plan_plot_available(&e));
	ck_assert_msg(strstr(e.msg, "gnuplot not found") && strstr(e.msg, "gnuplot-nox"), "%s", e.msg);
	json_t *rows = json_array();
	int written = -1;
	ck_assert(!plan_plot_rows(rows, "ulysses", "t", "/tmp", NULL, &written, &e));
	json_decref(rows);
	unsetenv("SPSIM_GNUPLOT");
}
END_TEST

static Suite *plan_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *t = tcase_create("specs");
	tcase_add_test(t, spec_axes_and_defaults);
	tcase_add_test(t, spec_errors_are_located);
	tcase_add_test(t, grid_indices_and_keys);
	tcase_add_test(t, point_applies_overrides_and_calibration);
	tcase_add_test(t, strategy_labels);
	tcase_add_test(t, progress_rate_waits_for_time);
	tcase_add_test(t, strategies_study_points_are_valid_jobs);
	suite_add_tcase(s, t);

	t = tcase_create("pool");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, pool_runs_every_task_once);
	tcase_add_test(t, pool_isolated_tasks_get_fresh_processes);
	tcase_add_test(t, pool_crash_costs_one_task);
	tcase_add_test(t, pool_timeout_costs_one_task);
	tcase_add_test(t, pool_stop_hands_out_nothing_more_and_kills_what_runs);
	tcase_add_test(t, pool_worker_dying_of_sigint_is_an_interrupt);
	suite_add_tcase(s, t);

	t = tcase_create("output");
	tcase_add_test(t, output_never_overwrites_silently);
	tcase_add_test(t, output_resume_drops_cut_lines_and_rebuilds_csv);
	tcase_add_test(t, output_resume_refuses_a_line_that_is_not_a_row);
	tcase_add_test(t, csv_quotes_and_columns);
	suite_add_tcase(s, t);

	t = tcase_create("sweeps");
	tcase_set_timeout(t, 180);
	tcase_add_test(t, sweep_rows_match_direct_runs);
	tcase_add_test(t, sweep_settings_equal_their_job_files);
	tcase_add_test(t, sweep_rows_carry_the_settings);
	tcase_add_test(t, sweep_resolves_auto_buckets_per_model);
	tcase_add_test(t, sweep_cp_comm_type_against_named_strategies);
	tcase_add_test(t, sweep_setting_errors_are_located);
	tcase_add_test(t, sweep_resume_tells_new_keys_apart);
	tcase_add_test(t, sweep_whatif_and_placement_reach_simgrid);
	tcase_add_test(t, sweep_help_and_docs_name_every_key);
	tcase_add_test(t, sweep_records_a_failing_point_and_goes_on);
	tcase_add_test(t, sweep_resume_after_kill_matches_uninterrupted);
	tcase_add_test(t, sweep_cli_refuses_existing_output);
	tcase_add_test(t, sweep_over_mpi_ranks_matches_one_process);
	tcase_add_test(t, sweep_runs_basp_beyond_divisibility);
	tcase_add_test(t, sweep_runs_simgrid_points_in_their_own_processes);
	suite_add_tcase(s, t);

	t = tcase_create("planner");
	tcase_add_test(t, planner_counts_and_checks_each_recompute);
	tcase_add_test(t, plan_tie_names_the_settings_that_differ);
	tcase_add_test(t, planner_search_reports_progress_and_stops_when_asked);
	tcase_add_test(t, plan_ctrl_c_ranks_what_was_searched);
	tcase_add_test(t, plan_ctrl_c_during_reruns_keeps_the_finished_ones);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, planner_top_pick_is_the_exhaustive_best);
	tcase_add_test(t, planner_finds_basp_where_it_wins);
	tcase_add_test(t, planner_weighs_basp_beyond_divisibility);
	tcase_add_test(t, planner_walks_only_micro_batches_in_range);
	tcase_add_test(t, planner_says_when_basp_does_not_win);
	tcase_add_test(t, planner_takes_the_implementation_and_reserve);
	tcase_add_test(t, planner_takes_run_job_settings);
	tcase_add_test(t, planner_merges_one_layout_under_two_names);
	tcase_add_test(t, planner_searches_selective_recompute_on_request);
	tcase_add_test(t, planner_cost_ranking_and_explanations);
	tcase_add_test(t, planner_verify_reruns_in_own_processes);
	tcase_add_test(t, planner_rejects_a_ragged_batch);
	suite_add_tcase(s, t);

	t = tcase_create("figures");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, plot_sweep_figures_are_well_formed);
	tcase_add_test(t, plot_compare_figures_are_well_formed);
	tcase_add_test(t, plot_folder_inside_the_sweep_output);
	tcase_add_test(t, plot_keeps_strategies_whose_cp_comm_type_differs);
	tcase_add_test(t, plot_study_strategies_have_distinct_colours);
	tcase_add_test(t, plot_without_gnuplot_says_so);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plan_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
