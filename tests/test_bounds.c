/* bounds: numbers at the edges. One range table (config/ranges.h) read the same way by
 * every entry point, overflow-checked products, finite results, bounded loops and YAML
 * limits. Each test feeds an input that used to crash, hang, overflow or print nonsense. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/ranges.h"
#include "config/yamltree.h"
#include "nccltests/nccltests.h"
#include "plan/plan.h"
#include "report/report.h"
#include "testutil.h"
#include "util/intmath.h"

/* ------------------------------------------------------------- helpers --- */

/* A temporary file holding text; returns its path (static, one at a time per slot). */
static const char *temp_file(int slot, const char *text)
{
	static char paths[4][64];
	snprintf(paths[slot], sizeof paths[slot], "/tmp/spsim-bounds-%d-%d.yaml", (int)getpid(), slot);
	FILE *f = fopen(paths[slot], "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return paths[slot];
}

/* The text of a repository file (relative to SPSIM_DATA_DIR) with the first line
 * containing `old` replaced by `line`; static storage. */
static const char *replaced(const char *rel, const char *old, const char *line)
{
	char src[CONFIG_PATH_MAX];
	snprintf(src, sizeof src, "%s/%s", getenv("SPSIM_DATA_DIR"), rel);
	FILE *f = fopen(src, "r");
	ck_assert_ptr_nonnull(f);
	static char text[65536];
	size_t used = 0;
	char buf[512];
	bool done = false;
	while (fgets(buf, sizeof buf, f) && used < sizeof text - 1024) {
		const char *put = buf;
		if (!done && strstr(buf, old)) {
			put = line;
			done = true;
		}
		used += (size_t)snprintf(text + used, sizeof text - used, "%s", put);
	}
	fclose(f);
	ck_assert_msg(done, "'%s' not in %s", old, src);
	return text;
}

/* A shipped platform with one line replaced, in a temporary file. */
static const char *platform_with(int slot, const char *old, const char *line)
{
	return temp_file(slot, replaced("platforms/a100-2x4-ib400.yaml", old, line));
}

/* Runs the spsim binary through the shell with args; returns its exit code and stderr. */
static int run_spsim(const char *args, char *err, size_t len)
{
	char errpath[64], cmd[4096];
	snprintf(errpath, sizeof errpath, "/tmp/spsim-bounds-err-%d", (int)getpid());
	snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", getenv("SPSIM_EXE"), args, errpath);
	int status = system(cmd);
	FILE *f = fopen(errpath, "r");
	size_t n = f ? fread(err, 1, len - 1, f) : 0;
	err[n] = '\0';
	if (f)
		fclose(f);
	unlink(errpath);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define expect_exit(code, in_err, ...)                                                                    \
	do {                                                                                              \
		char cmd_[2048], err_[8192];                                                              \
		snprintf(cmd_, sizeof cmd_, __VA_ARGS__);                                                 \
		int rc_ = run_spsim(cmd_, err_, sizeof err_);                                             \
		ck_assert_msg(rc_ == (code), "spsim %s: exit %d, want %d; stderr: %s", cmd_, rc_, code, err_); \
		ck_assert_msg(strstr(err_, in_err), "spsim %s: stderr lacks '%s': %s", cmd_, in_err, err_); \
	} while (0)

/* call fails and its error e holds want */
#define expect_refused(call, e, want)                                                     \
	do {                                                                              \
		ck_assert_msg(!(call), "accepted: %s", #call);                            \
		ck_assert_msg(strstr((e).msg, want), "%s lacks '%s'", (e).msg, want);     \
	} while (0)

#define REF "--model llama-3.1-8b --platform a100-2x4-ib400 --engine analytic"

/* -------------------------------------------------------------- ranges --- */

START_TEST(every_row_accepts_its_bounds_and_refuses_beyond)
{
	for (int id = 0; id < CONFIG_R_COUNT; id++) {
		const config_range *r = config_range_get((config_range_id)id);
		ck_assert_msg(r->key && r->lo <= r->hi, "row %d", id);
		ck_assert(config_range_ok((config_range_id)id, r->lo) && config_range_ok((config_range_id)id, r->hi));
		ck_assert(!config_range_ok((config_range_id)id, r->hi * 2 + 1));
		ck_assert(!config_range_ok((config_range_id)id, NAN) && !config_range_ok((config_range_id)id, INFINITY));
		/* The text of each bound parses back to it: the table and its parser agree. */
		char text[64];
		const char *unit = r->type < CONFIG_RANGE_INT ? config_unit_name((config_unit_kind)r->type) : "";
		for (int k = 0; k < 2; k++) {
			double b = k ? r->hi : r->lo;
			if (b == 0) /* a bare 0 where the range holds it */
				snprintf(text, sizeof text, "0");
			else
				snprintf(text, sizeof text, r->type >= CONFIG_RANGE_INT && r->type != CONFIG_RANGE_NUMBER ? "%.0f%s" : "%.17g%s", b, unit);
			double v = -1;
			config_error e;
			ck_assert_msg(config_range_parse((config_range_id)id, NULL, text, &v, &e), "%s: %s", r->key, e.msg);
			ck_assert_double_eq(v, b);
		}
		/* INT rows fit an int (the loaders store them in ints). */
		if (r->type == CONFIG_RANGE_INT)
			ck_assert(r->hi <= INT_MAX);
	}
}
END_TEST

/* Every numeric flag reads its row: the message names the flag and the row's range (so the
 * flag, the job YAML and the sweep spec cannot drift apart). */
static void flag_reads_row(config_range_id id, const char *flag, const char *cmd)
{
	char expect[160], want[256], name[32];
	/* the message names the command the flag was given to: "spsim plan: --top expects ..." */
	snprintf(name, sizeof name, "%.*s", (int)strcspn(cmd, " "), cmd);
	snprintf(want, sizeof want, "spsim %s: %s expects %s, got", name, flag,
		 config_range_expect(id, expect, sizeof expect));
	expect_exit(2, want, "%s", cmd);
}

START_TEST(every_numeric_flag_reads_the_table)
{
	flag_reads_row(CONFIG_R_COLL_FACTOR, "-f", "collective -f 1");
	flag_reads_row(CONFIG_R_COLL_GROUP, "-g", "collective -g 0");
	flag_reads_row(CONFIG_R_COLL_GROUP, "--groups", "collective --groups 16777217");
	flag_reads_row(CONFIG_R_JOBS, "--jobs", "sweep --jobs 4097 x.yaml");
	flag_reads_row(CONFIG_R_TIMEOUT, "--point-timeout", "sweep --point-timeout 0 x.yaml");
	flag_reads_row(CONFIG_R_PLAN_TOP, "--top", "plan --top 1001");
	flag_reads_row(CONFIG_R_JOBS, "--jobs", "plan -j 0");
	flag_reads_row(CONFIG_R_TIMEOUT, "--timeout", "plan --timeout 1e10");
	flag_reads_row(CONFIG_R_PRICE, "--price", "plan --model llama-3.1-8b --platform a100-2x4-ib400 --gpus 8 "
						  "--seq-len 4K --global-batch 1M --price 1e10");
	/* What-ifs: the factor's row bounds the flags and the what_if: key alike (both parse
	 * through config_whatif_add); its upper bound is taken, a hair above is not. */
	const config_range *f = config_range_get(CONFIG_R_WHATIF_FACTOR);
	ck_assert_double_eq(f->lo, 1);
	ck_assert_double_eq(f->hi, 1000); /* the "FACTOR a number from 1 to 1000" of the messages */
	config_whatif w = {0};
	config_error e;
	ck_assert_msg(config_whatif_add(&w, CONFIG_WHATIF_SLOW_GPU, "3:1000", &e), "%s", e.msg);
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_DEGRADE, "nic:0:1000.5", &e));
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_SLOW_NODE, "0:0x10", &e)); /* hex: not a plain number */
	/* --background: SIZE and PERIOD were unbounded quantities (1e30 B or 1e-300 s taken) */
	ck_assert_msg(config_whatif_add(&w, CONFIG_WHATIF_BACKGROUND, "1TB:1us:4-5", &e), "%s", e.msg);
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_BACKGROUND, "1e30B:100ms:4-5", &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "--background"));
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_BACKGROUND, "1GiB:1e-300s:4-5", &e));
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_BACKGROUND, "1GiB:2e6s:4-5", &e));
	expect_exit(2, "--background",
		    "run --model llama-3.1-8b --platform a100-2x4-ib400 --engine simgrid --seq-len 4K --background "
		    "1e30B:100ms:0-1");
}
END_TEST

START_TEST(job_yaml_takes_the_command_line_ranges)
{
	/* grad_accum and micro_batch at 2^31 - 1 were accepted by YAML (an hour of simulation);
	 * the command line always stopped at 2^20. Both now read the same row. */
	config_job j;
	config_job_defaults(&j);
	config_error e;
	expect_refused(config_load_job(temp_file(0, "job:\n  grad_accum: 2147483647\n"), &j, NULL, NULL, NULL, NULL, &e), e, ":2:15: 'grad_accum' must be an integer from 1 to 1048576, got '2147483647'");
	expect_refused(config_load_job(temp_file(0, "job:\n  micro_batch: 2147483647\n"), &j, NULL, NULL, NULL, NULL, &e), e, "'micro_batch' must be an integer from 1 to 1048576");
	expect_exit(2, "--grad-accum expects an integer from 1 to 1048576", "run " REF " --seq-len 4K --grad-accum 2147483647");
	/* seq_len takes the command line's K suffix in YAML too */
	ck_assert_msg(config_load_job(temp_file(0, "job:\n  seq_len: 32K\n"), &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert_int_eq(j.seq_len, 32768);
	/* beyond 2^32 tokens: refused everywhere (was stored in a double and converted back) */
	expect_refused(config_load_job(temp_file(0, "job:\n  seq_len: 9223372036854775807\n"), &j, NULL, NULL, NULL, NULL, &e), e, "'seq_len' must be a token count from 1 to 4294967296");
	plan_spec s;
	expect_refused(plan_spec_load(temp_file(1, "sweep:\n  model: llama-3.1-8b\n  platform: a100-2x4-ib400\n"
						"  seq_len: [16K, 9223372036854775807]\n"),
				  &s, &e), e, ":4:18: 'seq_len' must be a token count from 1 to 4294967296");
}
END_TEST

START_TEST(token_products_cannot_overflow)
{
	/* 2^62 tokens x micro-batch 4 wrapped to "0 tokens per GPU" and a 29-digit step time */
	expect_exit(2, "--seq-len expects a token count from 1 to 4294967296",
		    "run " REF " --seq-len 4611686018427387904 --micro-batch 4");
	expect_exit(2, "--granule expects a token count", "max-seq " REF " --granule 9223372036854775807");
	/* the largest accepted product: 2^32 tokens x 2^20 sequences = 2^52, exact */
	long t;
	ck_assert(util_mul_long(4294967296L, 1048576L, &t) && t == 1L << 52);
	ck_assert(!util_mul_long(4611686018427387904L, 4, &t));
}
END_TEST

START_TEST(gpu_count_products_are_checked)
{
	/* nodes x gpus_per_node was an unchecked int: 65536 x 65536 wrapped to 0 (SIGFPE) */
	config_platform p = tu_platform(65536, 65536, 1);
	config_error e;
	ck_assert_int_eq(config_platform_gpus(&p), -1);
	expect_refused(config_platform_check(&p, &e), e, "'gpus_per_node' is 65536, expected an integer from 1 to 1024");
	/* both within their rows, the product beyond the GPU count's */
	p = tu_platform(1048576, 1024, 1);
	expect_refused(config_platform_check(&p, &e), e, "1048576 nodes x 1024 GPUs per node is more than 16777216 GPUs");
	/* the job check refuses it before any division */
	config_model m = tu_model();
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 0, 0, 1, 4096, 1);
	p = tu_platform(65536, 65536, 1);
	ck_assert(!workload_check(&m, &p, &j, &e));
	expect_exit(2, "'gpus_per_node' must be an integer from 1 to 1024",
		    "run --model llama-3.1-8b --platform %s --seq-len 4K",
		    platform_with(0, "gpus_per_node", "  gpus_per_node: 65536\n"));
	expect_exit(2, "--nodes expects an integer from 1 to 1048576", "run " REF " --seq-len 4K --nodes 2147483647");
	/* nics: 2147483647 overflowed ceil_div's a + b - 1 */
	ck_assert_int_eq(util_ceil_div(INT_MAX, 2), 1073741824);
	ck_assert_int_eq(util_ceil_div(INT_MAX, INT_MAX), 1);
	ck_assert_int_eq(util_ceil_div(7, 2), 4);
	int n;
	ck_assert(!util_mul_int(65536, 65536, &n));
	/* counts from doubles saturate instead of undefined behaviour (a 1e-300 bucket) */
	ck_assert_int_eq(util_int_of(1e300), INT_MAX);
	ck_assert_int_eq(util_int_of(NAN), 0);
	ck_assert_int_eq(util_int_of(41.0), 41);
}
END_TEST

START_TEST(tiny_quantities_are_refused)
{
	/* 1e-300 B/s and 1e-300 FLOP/s printed "inf s" (analytic) or a 0.0 us step after a
	 * SimGrid deadlock, with exit 0 */
	config_platform p;
	config_error e;
	expect_refused(config_load_platform(platform_with(0, "nic_bandwidth", "    nic_bandwidth: 1e-300B/s\n"), &p, &e), e, "'nic_bandwidth' must be a bandwidth from 1 MB/s to 1 PB/s, got '1e-300B/s'");
	expect_refused(config_load_platform(platform_with(0, "peak_bf16", "    peak_bf16: 1e-300FLOPS\n"), &p, &e), e, "'peak_bf16' must be a FLOP rate from 1 GFLOP/s to 1000 PFLOP/s");
	expect_refused(config_load_platform(platform_with(0, "gemm", "    gemm: 1e-300\n"), &p, &e), e, "'gemm' must be a number from 0.001 to 1");
	config_calibration c;
	expect_refused(config_load_calibration(temp_file(1, "calibration:\n  inter_node: {bandwidth: 1e-300GB/s}\n"), &c, &e), e, ":2:27: 'bandwidth' must be a bandwidth from 1 MB/s to 1 PB/s");
	/* the sweep's what-if axes read the same rows */
	plan_spec s;
	expect_refused(plan_spec_load(temp_file(1, "sweep:\n  model: llama-3.1-8b\n  platform: a100-2x4-ib400\n"
						"  seq_len: 16K\n  nic_bandwidth: [1e-300B/s]\n"),
				  &s, &e), e, "'nic_bandwidth' must be a bandwidth from 1 MB/s to 1 PB/s");
}
END_TEST

/* ------------------------------------------------------ finite results --- */

START_TEST(non_finite_results_are_engine_errors)
{
	engine_result r = {.engine = "analytic", .step_time = 1.0, .tokens_per_s = 1.0, .mfu = 0.5};
	config_error e;
	ck_assert(engine_result_check(&r, &e));
	r.step_time = INFINITY;
	expect_refused(engine_result_check(&r, &e), e, "analytic engine computed a step time of inf");
	r.step_time = 1.0;
	r.mfu = NAN;
	expect_refused(engine_result_check(&r, &e), e, "MFU of nan");
	r.mfu = 0.5;
	r.step_time = 0; /* what SimGrid reported after a deadlock */
	expect_refused(engine_result_check(&r, &e), e, "step time of 0 s, expected a positive time");
}
END_TEST

START_TEST(simgrid_deadlock_is_an_error)
{
	const engine_ops *sg = engine_find("simgrid");
	if (!sg)
		return; /* built without SimGrid */
	/* A link of 1e-300 B/s (past the range check, as a program could build it): SimGrid
	 * ends with activities that can never finish; that is no step time. */
	config_platform p;
	config_model m;
	config_error e0;
	ck_assert(config_load_platform("a100-2x4-ib400", &p, &e0) && config_load_model("llama-3.1-8b", &m, &e0));
	p.inter.nic_bandwidth = 1e-300;
	config_job j = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 8, 1, 4096, 1);
	config_error e;
	ck_assert(workload_layout_make(&m, &j, &(workload_layout){0}, &e));
	workload_composite c;
	ck_assert_msg(workload_compose(&m, &p, &j, &c, &e), "%s", e.msg);
	engine_result r;
	const workload_plan *primary;
	bool ok = engine_run_composite(sg, &m, &p, &j, &c, (engine_options){0}, &r, NULL, &primary, &e);
	workload_compose_finish(&c);
	ck_assert_msg(!ok, "a deadlocked simulation gave step time %g s", r.step_time);
	ck_assert_msg(strstr(e.msg, "unfinished"), "%s", e.msg);
}
END_TEST

START_TEST(long_times_print_with_a_unit)
{
	char b[64];
	/* 1e6 s = 11.574 days; 1e13 s / 31557600 s per year = 316881 years */
	ck_assert_str_eq(report_time(1e6, b, sizeof b), "11.57 days");
	ck_assert_str_eq(report_time(1e13, b, sizeof b), "3.169e+05 years");
	ck_assert_str_eq(report_time(999999, b, sizeof b), "999999.000 s");
	ck_assert_str_eq(report_time(1.5, b, sizeof b), "1.500 s");
	ck_assert_str_eq(report_time(INFINITY, b, sizeof b), "not finite");
}
END_TEST

START_TEST(large_sizes_print_with_a_unit)
{
	char b[64];
	/* 2^50 B = 1 PiB; 1e29 B / 2^80 = 82718.06 YiB (a 2^32-token, 2^20-sequence job's
	 * activations: '17925474304.36 TiB' before, past the largest unit) */
	ck_assert_str_eq(report_bytes(1099511627776.0 * 1024, b, sizeof b), "1.00 PiB");
	ck_assert_str_eq(report_bytes(1e29, b, sizeof b), "82718.06 YiB");
	ck_assert_str_eq(report_bytes(1536, b, sizeof b), "1.50 KiB");
	ck_assert_str_eq(report_bytes(1000, b, sizeof b), "1000 B");
}
END_TEST

/* ---------------------------------------------------------- collective --- */

START_TEST(collective_size_loops_end)
{
	/* -b 1e308 -e 1e308 never ended: 1e308 + 1 MiB == 1e308 */
	expect_exit(2, "-b: '1e308' is 1e+308 bytes, expected a size from 0 to 1 TB", "collective alltoall --platform dgx-h100 -b 1e308 -e 1e308");
	expect_exit(2, "give 966367641601 sizes, expected at most 10000",
		    "collective alltoall --platform dgx-h100 -b 0 -e 900G -i 1");
}
END_TEST

/* ---------------------------------------------------------------- YAML --- */

START_TEST(yaml_size_and_depth_are_limited)
{
	config_error e;
	yt_doc *d;
	/* 2 MiB: refused before libyaml reads it */
	size_t big = 2u << 20;
	char *text = malloc(big + 1);
	ck_assert_ptr_nonnull(text);
	memcpy(text, "model:\n  name: x\n#", 18);
	memset(text + 18, 'x', big - 18);
	text[big] = '\0';
	expect_refused(yt_load(temp_file(0, text), &d, &e), e, "larger than 1048576 bytes");
	/* 80,000 levels of nesting (160 KB) took over 30 s inside libyaml */
	size_t deep = 80000;
	for (size_t i = 0; i < deep; i++)
		text[i] = '[';
	for (size_t i = 0; i < deep; i++)
		text[deep + i] = ']';
	text[2 * deep] = '\0';
	expect_refused(yt_load(temp_file(0, text), &d, &e), e, ":1:65: nesting deeper than 64 levels");
	free(text);
}
END_TEST

START_TEST(duplicate_keys_found_in_large_maps)
{
	/* 80,000 keys (the check was quadratic: 9 s for 60,000); the duplicate is the last */
	size_t n = 80000, cap = n * 16 + 64, used = 0;
	char *text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	used += (size_t)snprintf(text, cap, "model:\n");
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, cap - used, "  k%zu: 1\n", i);
	snprintf(text + used, cap - used, "  k17: 2\n");
	config_error e;
	yt_doc *d;
	/* k17 is on line 2 + 17; the duplicate on line 2 + n */
	char want[128];
	snprintf(want, sizeof want, ":%zu:3: duplicate key 'k17' in 'model' (first at line 19)", n + 2);
	expect_refused(yt_load(temp_file(0, text), &d, &e), e, want);
	text[used] = '\0';
	ck_assert_msg(yt_load(temp_file(0, text), &d, &e), "%s", e.msg);
	ck_assert_uint_eq(d->root->items[0]->n, n);
	yt_free(d);
	free(text);
}
END_TEST

/* ---------------------------------------------------------- nccl-tests --- */

/* A real all_reduce_perf log with one line replaced. */
static bool parse_log_with(const char *old, const char *line, config_error *e)
{
	nccltests_log log;
	bool ok = nccltests_parse_text("x.log", replaced("tests/data/nccltests/all_reduce_perf.1x8.log", old, line), NULL,
				       &log, e);
	if (ok)
		nccltests_log_finish(&log);
	return ok;
}

START_TEST(nccltests_numbers_are_bounded)
{
	config_error e;
	ck_assert_msg(parse_log_with("Rank  7", "#  Rank  7 Group  0 Pid 4007 on node-00 device  7 [0x77] NVIDIA\n", &e),
		      "%s", e.msg);
	/* Rank 4294967296 was cast to rank 0 */
	expect_refused(parse_log_with("Rank  7", "#  Rank 4294967296 Group  0 Pid 4007 on node-00 device  7 [0x77] NVIDIA\n",
				  &e), e, "x.log:13:9: rank 4294967296, expected an integer from 0 to 16777215");
	ck_assert(!parse_log_with("Rank  7", "#  Rank 2147483647 Group  0 Pid 4007 on node-00 device  7 [0x77] NVIDIA\n",
				  &e));
	/* a 1e30-byte size was fitted to 6.9e24 GB/s */
	expect_refused(parse_log_with("   8             2     float",
				  "1000000000000000000000000000000 2 float sum -1 35.00 0.00 0.00 0 35.00 0.00 0.00 0\n", &e), e, "x.log:18:1: size '1000000000000000000000000000000' is not a byte count, expected a "
				    "size from 0 to 1 TB");
}
END_TEST

/* --------------------------------------------------------------- sweep --- */

START_TEST(failed_points_are_recorded_and_the_sweep_goes_on)
{
	/* 1048576 nodes x 1024 GPUs: each axis within its row, their product beyond the GPU
	 * count's. The point is recorded as invalid; recording it again as failed (what the
	 * parent does when a worker dies) must not trap either. */
	plan_spec s;
	config_error e;
	ck_assert_msg(plan_spec_load(temp_file(1, "sweep:\n  model: llama-3.1-8b\n  platform: a100-2x4-ib400\n"
						  "  seq_len: 16K\n  strategy: ulysses\n  engine: analytic\n"
						  "  nodes: [1048576, 2]\n  gpus_per_node: 1024\n"),
				     &s, &e),
		      "%s", e.msg);
	ck_assert_int_eq(s.n_points, 2);
	json_t *bad = plan_point_eval(&s, 0), *failed = plan_point_failed(&s, 0, "worker died (signal 8)"),
	       *next = plan_point_eval(&s, 1);
	ck_assert(bad && failed && next);
	ck_assert_str_eq(json_string_value(json_object_get(bad, "status")), "invalid");
	ck_assert_msg(strstr(json_string_value(json_object_get(bad, "error")), "more than 16777216 GPUs"), "%s",
		      json_string_value(json_object_get(bad, "error")));
	ck_assert_str_eq(json_string_value(json_object_get(failed, "status")), "error");
	ck_assert_ptr_nonnull(json_object_get(next, "status"));
	json_decref(bad);
	json_decref(failed);
	json_decref(next);
	plan_spec_finish(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bounds");
	TCase *tc = tcase_create("bounds");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_row_accepts_its_bounds_and_refuses_beyond);
	tcase_add_test(tc, job_yaml_takes_the_command_line_ranges);
	tcase_add_test(tc, every_numeric_flag_reads_the_table);
	tcase_add_test(tc, token_products_cannot_overflow);
	tcase_add_test(tc, gpu_count_products_are_checked);
	tcase_add_test(tc, tiny_quantities_are_refused);
	tcase_add_test(tc, non_finite_results_are_engine_errors);
	tcase_add_test(tc, simgrid_deadlock_is_an_error);
	tcase_add_test(tc, long_times_print_with_a_unit);
	tcase_add_test(tc, large_sizes_print_with_a_unit);
	tcase_add_test(tc, collective_size_loops_end);
	tcase_add_test(tc, yaml_size_and_depth_are_limited);
	tcase_add_test(tc, duplicate_keys_found_in_large_maps);
	tcase_add_test(tc, nccltests_numbers_are_bounded);
	tcase_add_test(tc, failed_points_are_recorded_and_the_sweep_goes_on);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
