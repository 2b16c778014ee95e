/* cli: the spsim binary as a user meets it: exit codes (0 ok, 2 bad input), messages,
 * output formats, job files, traces. Runs $SPSIM_EXE (set by tests/meson.build). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

typedef struct cli_out {
	int code;
	char out[1 << 16];
	char err[1 << 14];
} cli_out;

static void slurp(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;
	while ((r = read(fd, buf + n, cap - 1 - n)) > 0 && n + 1 < cap)
		n += (size_t)r;
	buf[n] = '\0';
}

/* Runs spsim with a NULL-terminated argument list, capturing stdout and stderr (each to
 * a temporary file, so neither pipe can fill up). */
static cli_out *spsim(const char *arg, ...)
{
	const char *exe = getenv("SPSIM_EXE");
	ck_assert_msg(exe != NULL, "SPSIM_EXE is not set");
	const char *argv[64] = {exe};
	int n = 1;
	va_list ap;
	va_start(ap, arg);
	for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char po[] = "/tmp/spsim-cli-out-XXXXXX", pe[] = "/tmp/spsim-cli-err-XXXXXX";
	int fo = mkstemp(po), fe = mkstemp(pe);
	ck_assert(fo >= 0 && fe >= 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	cli_out *o = calloc(1, sizeof *o);
	ck_assert_ptr_nonnull(o);
	o->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	lseek(fo, 0, SEEK_SET);
	lseek(fe, 0, SEEK_SET);
	slurp(fo, o->out, sizeof o->out);
	slurp(fe, o->err, sizeof o->err);
	close(fo);
	close(fe);
	unlink(po);
	unlink(pe);
	return o;
}

static void expect(cli_out *o, int code, const char *in_err)
{
	ck_assert_msg(o->code == code, "exit %d, want %d; stderr: %s", o->code, code, o->err);
	if (in_err)
		ck_assert_msg(strstr(o->err, in_err), "stderr lacks '%s': %s", in_err, o->err);
}

static const char *data(const char *rel)
{
	static char buf[4][CONFIG_PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/tests/data/cli/%s", getenv("SPSIM_DATA_DIR"), rel);
	return buf[k];
}

#define REF "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400"

START_TEST(usage_and_help)
{
	cli_out *o = spsim(NULL);
	expect(o, 2, "usage: spsim COMMAND");
	free(o);
	o = spsim("--help", NULL);
	expect(o, 0, NULL);
	ck_assert(strstr(o->out, "compare"));
	free(o);
	static const char *const cmds[] = {"run", "compare", "max-seq", "models", "platforms", "platform"};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		o = spsim(cmds[i], "--help", NULL);
		expect(o, 0, NULL);
		ck_assert_msg(strstr(o->out, "usage: spsim"), "%s --help: %s", cmds[i], o->out);
		free(o);
	}
	o = spsim("frobnicate", NULL);
	expect(o, 2, "unknown command 'frobnicate'");
	free(o);
}
END_TEST

START_TEST(bad_flags_exit_2_with_a_sentence)
{
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--gpus", "abc", NULL);
	expect(o, 2, "--gpus expects an integer");
	free(o);
	o = spsim("run", REF, "--seq-len", "16Q", NULL);
	expect(o, 2, "--seq-len expects a token count from 1 to 4294967296");
	free(o);
	o = spsim("run", REF, NULL);
	expect(o, 2, "--seq-len is required");
	free(o);
	o = spsim("run", "--platform", "a100-2x4-ib400", "--seq-len", "1K", NULL);
	expect(o, 2, "--model is required");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--bogus", NULL);
	expect(o, 2, "unknown option '--bogus'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--strategy", "ring", NULL);
	expect(o, 2, "--strategy expects ulysses or basp");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--strategy", "basp", "--micro-batch", "3", NULL);
	expect(o, 2, "BASP needs the micro-batch to divide the SP size");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--gpus", "16", NULL);
	expect(o, 2, "lower --gpus or raise --nodes");
	free(o);
	o = spsim("run", "--model", "qwen1.5-4b", "--platform", "a100-2x4-ib400", "--seq-len", "16K", NULL);
	expect(o, 2, "20 attention heads, not divisible");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--engine", "warp", NULL);
	expect(o, 2, "--engine expects one of");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", "--placement", "strided", NULL);
	expect(o, 2, "models contiguous placement only; use --engine simgrid");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--format", "xml", NULL);
	expect(o, 2, "--format expects table, json or csv");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--impl", "deepspeed", NULL);
	expect(o, 2, "--impl expects hf or megatron, got 'deepspeed'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--memory-reserve", "2", NULL);
	expect(o, 2, "--memory-reserve: '2' has no unit, expected a size such as 40GiB or 80GB, or 0");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--memory-reserve", "-1GiB", NULL);
	expect(o, 2, "--memory-reserve: '-1GiB' must be positive");
	free(o);
}
END_TEST

START_TEST(impl_reserve_and_max_position)
{
	/* megatron keeps less than hf; a declared reserve is reported as given and moves the
	 * peak by the difference; beyond max_position (131072 for Llama-3.1) a warning, not a
	 * failure */
	static const char *const impls[] = {"hf", "megatron"};
	double peak[2], act[2];
	for (int i = 0; i < 2; i++) {
		cli_out *o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", "--impl", impls[i],
				   "--memory-reserve", "0", "--format", "json", NULL);
		expect(o, 0, NULL);
		json_t *j = json_loads(o->out, 0, NULL);
		ck_assert_ptr_nonnull(j);
		json_t *m = json_object_get(j, "memory_bytes");
		ck_assert(json_number_value(json_object_get(m, "reserve")) == 0);
		peak[i] = json_number_value(json_object_get(m, "peak"));
		act[i] = json_number_value(json_object_get(m, "activations"));
		json_decref(j);
		free(o);
	}
	ck_assert(act[0] > act[1] && peak[0] > peak[1]);
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", "--memory-reserve", "1GiB",
			   "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	json_t *m = json_object_get(j, "memory_bytes");
	ck_assert_close(json_number_value(json_object_get(m, "peak")) - peak[0], 1073741824.0, 1e-7); /* JSON keeps 10 digits */
	ck_assert(json_is_true(json_object_get(json_object_get(j, "memory_reserve"), "declared")));
	json_decref(j);
	free(o);
	o = spsim("run", REF, "--seq-len", "256K", "--engine", "analytic", NULL);
	expect(o, 0, "warning: 262144 tokens exceed llama-3.1-8b's max_position (131072)");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->err, "warning"), "unexpected warning: %s", o->err);
	free(o);
}
END_TEST

START_TEST(yaml_errors_point_at_file_line_column)
{
	char want[CONFIG_PATH_MAX + 32];
	snprintf(want, sizeof want, "%s:10:3: unknown key 'max_positon'", data("model_typo.yaml"));
	cli_out *o = spsim("run", "--model", data("model_typo.yaml"), "--platform", "dgx-h100", "--seq-len", "1K", NULL);
	expect(o, 2, want);
	free(o);
	o = spsim("run", "--model", "llama-9", "--platform", "dgx-h100", "--seq-len", "1K", NULL);
	expect(o, 2, "llama-3.1-8b"); /* the message lists the shipped names */
	free(o);
}
END_TEST

START_TEST(run_json_has_the_documented_keys)
{
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "2", "--strategy", "basp", "--zero", "3",
			   "--format", "json", NULL);
	expect(o, 0, NULL);
	json_error_t je;
	json_t *j = json_loads(o->out, 0, &je);
	ck_assert_msg(j, "not JSON: %s", je.text);
	/* the default engine: simgrid when built with it, else analytic */
	ck_assert_str_eq(json_string_value(json_object_get(j, "engine")), engine_registry[0]->name);
	ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "llama-3.1-8b");
	ck_assert_str_eq(json_string_value(json_object_get(j, "platform")), "a100-2x4-ib400");
	json_t *job = json_object_get(j, "job");
	static const char *const jk[] = {"strategy", "gpus", "sp", "micro_batch", "group_size", "seq_len", "zero_stage",
					 "recompute", "grad_accum"};
	for (size_t i = 0; i < sizeof jk / sizeof *jk; i++)
		ck_assert_msg(json_object_get(job, jk[i]), "job.%s missing", jk[i]);
	ck_assert_int_eq(json_integer_value(json_object_get(job, "group_size")), 4); /* K = 8/2 */
	ck_assert_int_eq(json_integer_value(json_object_get(job, "seq_len")), 16384);
	json_t *b = json_object_get(j, "breakdown_s");
	static const char *const bk[] = {"compute", "sp_comm", "sp_comm_exposed", "zero_comm", "zero_comm_exposed"};
	for (size_t i = 0; i < sizeof bk / sizeof *bk; i++)
		ck_assert_msg(json_is_number(json_object_get(b, bk[i])), "breakdown_s.%s missing", bk[i]);
	json_t *m = json_object_get(j, "memory_bytes");
	static const char *const mk[] = {"params", "grads", "optimizer", "activations", "buffers", "peak", "capacity"};
	double sum = 0;
	for (size_t i = 0; i < sizeof mk / sizeof *mk; i++) {
		ck_assert_msg(json_is_number(json_object_get(m, mk[i])), "memory_bytes.%s missing", mk[i]);
		if (i < 5)
			sum += json_number_value(json_object_get(m, mk[i]));
	}
	sum += json_number_value(json_object_get(m, "logits"));
	ck_assert(json_number_value(json_object_get(m, "reserve")) > 0); /* derived by default */
	sum += json_number_value(json_object_get(m, "reserve"));
	ck_assert_close(sum, json_number_value(json_object_get(m, "peak")), 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(job, "impl")), "hf");
	/* wire bytes beside the buffers: BASP K = 4 stays in a node; ZeRO-3's world rings
	 * leave the node for 1/4 of what they send (r = 4) */
	json_t *cb = json_object_get(j, "comm_bytes_per_gpu");
	ck_assert(json_number_value(json_object_get(cb, "sp_wire_off_gpu")) > 0);
	ck_assert(json_number_value(json_object_get(cb, "sp_wire_off_node")) == 0);
	ck_assert_close(json_number_value(json_object_get(cb, "zero_wire_off_node")),
			json_number_value(json_object_get(cb, "zero_wire_off_gpu")) / 4, 1e-9);
	ck_assert(json_number_value(json_object_get(j, "hfu")) >= json_number_value(json_object_get(j, "mfu")));
	ck_assert(json_is_boolean(json_object_get(j, "fits")));
	double step = json_number_value(json_object_get(j, "step_time_s"));
	double tps = json_number_value(json_object_get(j, "tokens_per_s"));
	ck_assert_close(step * tps, 2.0 * 16384, 1e-9); /* one domain, B = 2 sequences */
	ck_assert(json_number_value(json_object_get(j, "mfu")) > 0);
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(compare_reports_speedups_over_the_first)
{
	cli_out *o = spsim("compare", REF, "--seq-len", "16K", "--micro-batch", "2", "--zero", "3", "--strategies",
			   "ulysses,basp,ulysses:sp=4", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	json_t *runs = json_object_get(j, "runs");
	ck_assert_int_eq(json_array_size(runs), 3);
	json_t *sp = json_object_get(j, "speedup");
	ck_assert_close(json_number_value(json_object_get(sp, "ulysses")), 1.0, 1e-12);
	double t0 = json_number_value(json_object_get(json_array_get(runs, 0), "tokens_per_s"));
	double t1 = json_number_value(json_object_get(json_array_get(runs, 1), "tokens_per_s"));
	ck_assert_close(json_number_value(json_object_get(sp, "basp")), t1 / t0, 1e-9);
	ck_assert(json_number_value(json_object_get(sp, "basp")) > 1.0);
	/* ulysses:sp=4 holds twice the tokens per GPU */
	json_t *h = json_object_get(json_array_get(runs, 2), "job");
	ck_assert_int_eq(json_integer_value(json_object_get(h, "sp")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(h, "tokens_per_gpu")), 8192);
	json_decref(j);
	free(o);
	o = spsim("compare", REF, "--seq-len", "16K", "--micro-batch", "2", NULL);
	expect(o, 0, NULL);
	ck_assert(strstr(o->out, "speedup (tokens/s)") && strstr(o->out, "basp"));
	free(o);
	o = spsim("compare", REF, "--seq-len", "16K", "--strategies", "ulysses,ring", NULL);
	expect(o, 2, "unknown strategy 'ring'");
	free(o);
	o = spsim("compare", REF, "--seq-len", "16K", "--micro-batch", "3", NULL);
	expect(o, 2, "basp: BASP needs the micro-batch");
	free(o);
}
END_TEST

START_TEST(csv_rows_match_the_header)
{
	cli_out *o = spsim("compare", REF, "--seq-len", "8K", "--micro-batch", "2", "--format", "csv", NULL);
	expect(o, 0, NULL);
	int lines = 0, cols[3] = {0};
	for (const char *c = o->out; *c && lines < 3; c++) {
		if (*c == ',')
			cols[lines]++;
		if (*c == '\n')
			lines++;
	}
	ck_assert_int_eq(lines, 3); /* header + ulysses + basp */
	ck_assert_int_eq(cols[0], cols[1]);
	ck_assert_int_eq(cols[0], cols[2]);
	ck_assert(strncmp(o->out, "label,engine,model", 18) == 0);
	free(o);
}
END_TEST

START_TEST(job_file_and_flag_override)
{
	cli_out *o = spsim("run", "--job", data("job.yaml"), "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	json_t *job = json_object_get(j, "job");
	ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "llama-3.2-1b");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "nodes")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(job, "strategy")), "basp");
	ck_assert_int_eq(json_integer_value(json_object_get(job, "group_size")), 4); /* 16 / 4 */
	ck_assert_int_eq(json_integer_value(json_object_get(job, "zero_stage")), 2);
	json_decref(j);
	free(o);
	o = spsim("run", "--job", data("job.yaml"), "--zero", "3", "--strategy", "ulysses", "--format", "json", NULL);
	expect(o, 0, NULL);
	j = json_loads(o->out, 0, NULL);
	job = json_object_get(j, "job");
	ck_assert_int_eq(json_integer_value(json_object_get(job, "zero_stage")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(job, "strategy")), "ulysses");
	ck_assert_int_eq(json_integer_value(json_object_get(job, "micro_batch")), 4); /* still from the file */
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(calibration_from_another_gpu_is_refused)
{
	/* Measured on an H200: a100-2x4-ib400 (A100-SXM4-40GB) refuses it naming both GPUs;
	 * hgx-h200 takes it. */
	cli_out *a = spsim("run", REF, "--seq-len", "16K", "--calibration", data("h200_cal.yaml"), NULL);
	expect(a, 2, "'H200-SXM-141GB'");
	ck_assert_msg(strstr(a->err, "'A100-SXM4-40GB'"), "%s", a->err);
	cli_out *b = spsim("run", "--model", "llama-3.1-8b", "--platform", "hgx-h200", "--seq-len", "16K", "--calibration",
			   data("h200_cal.yaml"), NULL);
	expect(b, 0, NULL);
	free(a);
	free(b);
}
END_TEST

START_TEST(calibration_moves_the_prediction)
{
	cli_out *a = spsim("run", REF, "--seq-len", "16K", "--format", "json", NULL);
	cli_out *b = spsim("run", REF, "--seq-len", "16K", "--format", "json", "--calibration", data("fast_links.yaml"),
			   NULL);
	expect(a, 0, NULL);
	expect(b, 0, NULL);
	json_t *ja = json_loads(a->out, 0, NULL), *jb = json_loads(b->out, 0, NULL);
	double ca = json_number_value(json_object_get(json_object_get(ja, "breakdown_s"), "sp_comm"));
	double cb = json_number_value(json_object_get(json_object_get(jb, "breakdown_s"), "sp_comm"));
	ck_assert(cb < 0.6 * ca); /* NIC 47 -> 94 GB/s: the inter-node all-to-all halves */
	ck_assert(json_object_get(jb, "calibration"));
	json_decref(ja);
	json_decref(jb);
	free(a);
	free(b);
}
END_TEST

START_TEST(trace_written_only_on_success)
{
	char path[] = "/tmp/spsim-cli-trace-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert(write(fd, "keep", 4) == 4);
	close(fd);
	/* a bad job leaves the user's file alone */
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "3", "--strategy", "basp", "--trace", path,
			   NULL);
	expect(o, 2, NULL);
	free(o);
	char buf[8] = {0};
	fd = open(path, O_RDONLY);
	ck_assert(read(fd, buf, 7) == 4 && strcmp(buf, "keep") == 0);
	close(fd);
	o = spsim("run", REF, "--seq-len", "4K", "--trace", path, NULL);
	expect(o, 0, NULL);
	free(o);
	json_t *j = json_load_file(path, 0, NULL);
	ck_assert_msg(j && json_is_array(json_object_get(j, "traceEvents")), "trace is not a Chrome trace");
	json_decref(j);
	unlink(path);
}
END_TEST

START_TEST(listing_commands)
{
	cli_out *o = spsim("models", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_int_eq(json_array_size(j), 9); /* the nine models of modeling.md */
	size_t i;
	json_t *e;
	bool seen = false;
	json_array_foreach(j, i, e) if (strcmp(json_string_value(json_object_get(e, "name")), "llama-3.1-8b") == 0)
	{
		seen = true;
		ck_assert_close(json_number_value(json_object_get(e, "params")), 8030261248.0, 1e-12);
	}
	ck_assert(seen);
	json_decref(j);
	free(o);
	o = spsim("platforms", NULL);
	expect(o, 0, NULL);
	ck_assert(strstr(o->out, "a100-2x4-ib400") && strstr(o->out, "dgx-h100") && strstr(o->out, "a100-pcie"));
	free(o);
	o = spsim("platform", "a100-2x4-ib400", NULL);
	expect(o, 0, NULL);
	ck_assert(strstr(o->out, "nvlink-mesh"));
	free(o);
	o = spsim("platform", NULL);
	expect(o, 2, "usage");
	free(o);
}
END_TEST

START_TEST(max_seq_reports_a_fitting_length)
{
	cli_out *o = spsim("max-seq", REF, "--micro-batch", "2", "--strategy", "basp", "--zero", "3", "--format", "json",
			   NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	long best = (long)json_integer_value(json_object_get(j, "max_seq_len"));
	json_decref(j);
	free(o);
	ck_assert_int_gt(best, 0);
	char s[32], s2[32];
	snprintf(s, sizeof s, "%ld", best);
	snprintf(s2, sizeof s2, "%ld", best + 1024);
	o = spsim("run", REF, "--micro-batch", "2", "--strategy", "basp", "--zero", "3", "--seq-len", s, "--format",
		  "json", NULL);
	expect(o, 0, NULL);
	j = json_loads(o->out, 0, NULL);
	ck_assert(json_is_true(json_object_get(j, "fits")));
	json_decref(j);
	free(o);
	o = spsim("run", REF, "--micro-batch", "2", "--strategy", "basp", "--zero", "3", "--seq-len", s2, "--format",
		  "json", NULL);
	j = json_loads(o->out, 0, NULL);
	ck_assert(json_is_false(json_object_get(j, "fits")));
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(basp_uneven_reports_its_parts)
{
	cli_out *o = spsim("run", REF, "--seq-len", "12K", "--micro-batch", "3", "--strategy", "basp", "--zero", "3",
			   "--basp-uneven", "unequal", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	json_t *u = json_object_get(j, "basp_uneven");
	ck_assert_str_eq(json_string_value(json_object_get(u, "mode")), "unequal");
	json_t *parts = json_object_get(u, "parts");
	ck_assert_int_eq(json_array_size(parts), 2);
	/* 8 = 3 + 3 + 2: the groups of 2 hold S/2 tokens per GPU and set the step */
	double slow = 0;
	int ranks = 0;
	size_t i;
	json_t *e;
	json_array_foreach(parts, i, e)
	{
		ranks += (int)json_integer_value(json_object_get(e, "ranks"));
		slow = fmax(slow, json_number_value(json_object_get(e, "step_time_s")));
	}
	ck_assert_int_eq(ranks, 8);
	ck_assert_close(json_number_value(json_object_get(j, "step_time_s")), slow, 1e-12);
	json_decref(j);
	free(o);
	o = spsim("run", REF, "--seq-len", "12K", "--micro-batch", "3", "--strategy", "basp", "--basp-uneven",
		  "extra-step", NULL);
	expect(o, 0, NULL);
	ck_assert(strstr(o->out, "2 sequences on groups of 4, 1 sequence on groups of 8"));
	free(o);
	o = spsim("run", REF, "--seq-len", "12K", "--micro-batch", "3", "--strategy", "basp", "--basp-uneven", "maybe",
		  NULL);
	expect(o, 2, "--basp-uneven expects error, unequal or extra-step");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--a2a", "ring", NULL);
	expect(o, 2, "--a2a expects direct, pairwise or hierarchical");
	free(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, usage_and_help);
	tcase_add_test(tc, bad_flags_exit_2_with_a_sentence);
	tcase_add_test(tc, impl_reserve_and_max_position);
	tcase_add_test(tc, yaml_errors_point_at_file_line_column);
	tcase_add_test(tc, run_json_has_the_documented_keys);
	tcase_add_test(tc, compare_reports_speedups_over_the_first);
	tcase_add_test(tc, csv_rows_match_the_header);
	tcase_add_test(tc, job_file_and_flag_override);
	tcase_add_test(tc, calibration_moves_the_prediction);
	tcase_add_test(tc, calibration_from_another_gpu_is_refused);
	tcase_add_test(tc, trace_written_only_on_success);
	tcase_add_test(tc, listing_commands);
	tcase_add_test(tc, max_seq_reports_a_fitting_length);
	tcase_add_test(tc, basp_uneven_reports_its_parts);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
