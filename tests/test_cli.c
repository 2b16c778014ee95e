/* cli: the spsim binary as a user meets it: exit codes (0 ok, 2 bad input), messages,
 * output formats, job files, traces. Runs $SPSIM_EXE (set by tests/meson.build). */
#include <dirent.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/commands.h"
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
static cli_out *spsim_argv(const char *const *args);

static cli_out *spsim(const char *arg, ...)
{
	const char *args[64];
	int n = 0;
	va_list ap;
	va_start(ap, arg);
	for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return spsim_argv(args);
}

/* The same with the arguments in a NULL-terminated array. */
static cli_out *spsim_argv(const char *const *args)
{
	const char *exe = getenv("SPSIM_EXE");
	ck_assert_msg(exe != NULL, "SPSIM_EXE is not set");
	const char *argv[64] = {exe};
	int n = 1;
	for (const char *const *a = args; *a && n < 63; a++)
		argv[n++] = *a;
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

/* The text of a file (at most cap - 1 bytes). */
static void read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s", path);
	buf[fread(buf, 1, cap - 1, f)] = '\0';
	fclose(f);
}

/* A fresh directory for files a test writes (left in /tmp on failure, for a look). */
static void tmp_dir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/spsim-cli-dir-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(out));
}

/* Writes text to dir/name; returns the path (static, four in rotation). */
static const char *tmp_write(const char *dir, const char *name, const char *text)
{
	static char buf[4][CONFIG_PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	FILE *f = fopen(buf[k], "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return buf[k];
}

/* A copy of platforms/dgx-h100.yaml with one line replaced (from, to), written to dir/name;
 * variant_line: the line where `to` starts. */
static int variant_line;
static const char *platform_variant(const char *dir, const char *name, const char *from, const char *to)
{
	char path[CONFIG_PATH_MAX], text[8192] = "";
	snprintf(path, sizeof path, "%s/platforms/dgx-h100.yaml", getenv("SPSIM_DATA_DIR"));
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	char *at = strstr(text, from);
	ck_assert_msg(at != NULL, "'%s' not in dgx-h100.yaml", from);
	char out[8400];
	snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	variant_line = 1;
	for (const char *c = text; c < at; c++)
		variant_line += *c == '\n';
	return tmp_write(dir, name, out);
}

#define REF "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400"

/* `spsim run` on a dgx-h100 variant (from replaced by to) fails with exit 2 at the
 * variant's file and line. */
static void expect_variant_error_at(const char *dir, const char *name, const char *from, const char *to)
{
	const char *bad = platform_variant(dir, name, from, to);
	char where[CONFIG_PATH_MAX + 32];
	snprintf(where, sizeof where, "%s:%d:", name, variant_line);
	cli_out *o = spsim("run", "--model", "llama-3.1-8b", "--platform", bad, "--seq-len", "16K", NULL);
	expect(o, 2, where);
	free(o);
}

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

/* spsim --help's example is a job worth trying: run as printed (its lines joined where they
 * end in a backslash), it exits 0 and prints a speedup for every column, i.e. every
 * configuration fits (the example once left out --zero 3 --recompute full, and both of its
 * columns said '- (no fit)'). */
START_TEST(help_example_runs_and_fits)
{
	cli_out *o = spsim("--help", NULL);
	expect(o, 0, NULL);
	const char *ex = strstr(o->out, "Example: spsim ");
	ck_assert_msg(ex != NULL, "%s", o->out);
	static char line[512];
	size_t n = 0;
	for (const char *p = ex + strlen("Example: spsim "); *p && *p != '\n' && n + 1 < sizeof line; p++) {
		if (p[0] == '\\' && p[1] == '\n') { /* continuation: the next line's indent is a space */
			p += 2;
			while (p[0] == ' ' && p[1] == ' ')
				p++;
		}
		line[n++] = *p;
	}
	line[n] = '\0';
	free(o);
	const char *args[64];
	int k = 0;
	for (char *tok = strtok(line, " "); tok && k < 63; tok = strtok(NULL, " "))
		args[k++] = tok;
	args[k] = NULL;
	ck_assert_int_gt(k, 3);
	o = spsim_argv(args);
	expect(o, 0, NULL);
	const char *row = strstr(o->out, "speedup (tokens/s)");
	ck_assert_msg(row != NULL, "%s", o->out);
	char speedups[256];
	snprintf(speedups, sizeof speedups, "%.*s", (int)strcspn(row, "\n"), row);
	ck_assert_msg(!strstr(speedups, "no fit"), "the example does not fit: %s", o->out);
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
	o = spsim("run", REF, "--seq-len", "16K", "--strategy", "tree", NULL);
	expect(o, 2, "--strategy: unknown strategy 'tree', expected ulysses, basp, ring or usp");
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
	expect(o, 2, "--impl expects hf, hf-trainer or megatron, got 'deepspeed'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--impl", "HF-Trainer", NULL);
	expect(o, 2, "--impl expects hf, hf-trainer or megatron, got 'HF-Trainer'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero3-prefetch", "fsdp", NULL);
	expect(o, 2, "--zero3-prefetch expects deepspeed or layer, got 'fsdp'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic", "--zero3-prefetch", "layer", NULL);
	expect(o, 0, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "ZeRO-3 prefetch layer"));
	ck_assert_msg(!strstr(o->err, "warning"), "%s", o->err);
	free(o);
	/* stage-3 settings at another stage: the run goes on, and says they are not used */
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "1", "--engine", "analytic", "--zero3-prefetch", "layer",
		  "--prefetch-bucket", "1", NULL);
	expect(o, 0, "spsim run: warning: ZeRO-1 does not use --zero3-prefetch layer (ZeRO-3 only), --prefetch-bucket 1 "
		     "(ZeRO-3 only); ignored");
	free(o);
	/* --contiguous-gradients: on or off; off at stage 0 (the engine's all-reduce, no ZeRO
	 * optimizer) is said and ignored; at stage 3 it takes effect in the JSON job and moves
	 * memory only (llama-3.1-8b, W = SP = 8: fp32 gradient communication, so the 5e8-element
	 * bucket 4·5e8 = 2e9 bytes becomes 5e8·(2 + 4 + 4) = 5e9: the bf16 gradients, their fp32
	 * casts and reduce_scatter_coalesced's flat copy, workload/memory.c) */
	o = spsim("run", REF, "--seq-len", "16K", "--contiguous-gradients", "maybe", NULL);
	expect(o, 2, "--contiguous-gradients expects on or off, got 'maybe'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "0", "--engine", "analytic", "--contiguous-gradients", "off",
		  NULL);
	expect(o, 0, "spsim run: warning: ZeRO-0 does not use --contiguous-gradients off (DeepSpeed ZeRO-1 to 3 only, not "
		     "zero3_prefetch layer); ignored");
	free(o);
	{
		double buf[2], step[2];
		const char *v[] = {"on", "off"};
		for (int i = 0; i < 2; i++) {
			o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic", "--format", "json",
				  "--contiguous-gradients", v[i], NULL);
			expect(o, 0, NULL);
			json_t *r = json_loads(o->out, 0, NULL);
			ck_assert_ptr_nonnull(r);
			ck_assert(json_is_boolean(json_object_get(json_object_get(r, "job"), "contiguous_gradients")));
			ck_assert(json_is_true(json_object_get(json_object_get(r, "job"), "contiguous_gradients")) == (i == 0));
			buf[i] = json_number_value(json_object_get(json_object_get(r, "memory_bytes"), "buffers"));
			step[i] = json_number_value(json_object_get(r, "step_time_s"));
			json_decref(r);
			free(o);
		}
		ck_assert_double_eq_tol(buf[1] - buf[0], 3e9, 1.0);
		ck_assert_double_eq(step[1], step[0]);
	}
	/* a one-element reduce bucket at stage 3 is one reduce-scatter call per parameter of a
	 * layer: Llama-3.1-8B's layer holds q and o 2 x 4096^2, k and v 2 x 4096 x 8 x 128, the
	 * MLP 3 x 4096 x 14336 and two norms 2 x 4096: 218,112,000 parameters, 2.2e8 calls the SimGrid engine would simulate one by one (it ran for hours): refused
	 * with the smallest bucket it runs, ceil(218,112,000 / 10,000) = 21,812; the analytic
	 * engine times the count in closed form */
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "simgrid", "--reduce-bucket", "1", NULL);
	expect(o, 2, "--reduce-bucket 1 splits 2.181e+08 parameters into 2.181e+08 collective calls, and the simgrid "
		     "engine simulates each (at most 10000); use --reduce-bucket 21812 or more, or the analytic engine");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic", "--reduce-bucket", "1", NULL);
	expect(o, 0, NULL);
	free(o);
	/* --progress then --quiet (or the reverse) would leave the last one in force in silence */
	const char *cmds[] = {"run", "compare", "plan"};
	for (int i = 0; i < 3; i++) {
		char want[128];
		snprintf(want, sizeof want, "spsim %s: --progress and --quiet contradict each other", cmds[i]);
		o = spsim(cmds[i], REF, "--seq-len", "16K", "--quiet", "--progress", NULL);
		expect(o, 2, want);
		free(o);
	}
	o = spsim("run", REF, "--seq-len", "16K", "--quiet", "--quiet", NULL); /* repeated, not contradicted */
	expect(o, 0, NULL);
	free(o);
	/* buckets count elements: DeepSpeed writes them in exponent form (5e8), never as a fraction */
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "2", "--reduce-bucket", "1.5", NULL);
	expect(o, 2, "spsim run: --reduce-bucket expects auto or a whole number from 1 to 1e+15 (e.g. 5e8), got '1.5'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--prefetch-bucket", "2.5e0", NULL);
	expect(o, 2, "spsim run: --prefetch-bucket expects auto or a whole number from 1 to 1e+15 (e.g. 5e8), got '2.5e0'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "2", "--reduce-bucket", "5e8", NULL);
	expect(o, 0, NULL);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--memory-reserve", "2", NULL);
	expect(o, 2, "--memory-reserve: '2' has no unit, expected a size such as 40GiB or 512MiB, or 0");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--memory-reserve", "-1GiB", NULL);
	expect(o, 2, "--memory-reserve: '-1GiB' must be positive");
	free(o);
	/* a reserve beyond any GPU's memory (the platform key's 1e15-byte bound): 1e30GiB
	 * printed 'peak 976562500000000019418578944.00  of 40.00 GiB'; 909 TiB is within */
	o = spsim("run", REF, "--seq-len", "16K", "--memory-reserve", "1e30GiB", NULL);
	expect(o, 2, "--memory-reserve: '1e30GiB' is 1.07374e+39 bytes, expected at most 1e+15 bytes (a GPU's memory range), or 0");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", "--memory-reserve", "909TiB", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "reserve 909.00 TiB (declared)"), "%s", o->out);
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
	/* hf-trainer: the same activations; the peak lower by the bf16 logits the loop drops,
	 * 2·t·V, which is 1/6 of hf-trainer's own logits count 12·t·V (no tiling; reserve 0, so
	 * no fragmentation share moves) */
	cli_out *ot = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", "--impl", "hf-trainer",
			    "--memory-reserve", "0", "--format", "json", NULL);
	expect(ot, 0, NULL);
	json_t *jt = json_loads(ot->out, 0, NULL);
	ck_assert_ptr_nonnull(jt);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(jt, "job"), "impl")), "hf-trainer");
	json_t *mt = json_object_get(jt, "memory_bytes");
	ck_assert(json_number_value(json_object_get(mt, "activations")) == act[0]);
	double lt = json_number_value(json_object_get(mt, "logits"));
	ck_assert(fabs(peak[0] - json_number_value(json_object_get(mt, "peak")) - lt / 6.0) <= 1e-9 * peak[0]);
	json_decref(jt);
	free(ot);
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
	/* full recompute: the rebuilt layer and the loss's tensors never coexist, so
	 * memory_bytes.not_concurrent is positive and the breakdown sums to the peak only
	 * with it subtracted */
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "2", "--strategy", "basp", "--zero", "3",
			   "--recompute", "full", "--format", "json", NULL);
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
	double nc = json_number_value(json_object_get(m, "not_concurrent"));
	ck_assert(nc > 0 && nc < json_number_value(json_object_get(m, "logits")));
	ck_assert_close(sum - nc, json_number_value(json_object_get(m, "peak")), 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(job, "impl")), "hf");
	ck_assert_str_eq(json_string_value(json_object_get(job, "zero3_prefetch")), "deepspeed");
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
	/* recompute full: all three fit in 40 GiB (speedups are given only between runs that fit) */
	cli_out *o = spsim("compare", REF, "--seq-len", "16K", "--micro-batch", "2", "--zero", "3", "--strategies",
			   "ulysses,basp,ulysses:sp=4", "--recompute", "full", "--format", "json", NULL);
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
	o = spsim("compare", REF, "--seq-len", "16K", "--strategies", "ulysses,tree", NULL);
	expect(o, 2, "unknown strategy 'tree'");
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
	/* one column set: compare, run and sweep write the same header, units in the names */
	char header[4096];
	snprintf(header, sizeof header, "%.*s", (int)(strchr(o->out, '\n') - o->out), o->out);
	free(o);
	ck_assert_msg(strstr(header, ",step_time_s,") && strstr(header, ",sp_bytes,") &&
			      strstr(header, ",gpu_memory_bytes,") && strstr(header, ",mem_peak_bytes,") &&
			      strstr(header, ",mem_buffers_bytes,mem_not_concurrent_bytes,mem_reserve_bytes,") &&
			      strstr(header, ",nic_bandwidth_bytes_per_s,") && strstr(header, ",inter_latency_s,"),
		      "%s", header);
	ck_assert_msg(!strstr(header, ",mem_peak,") && !strstr(header, ",gpu_memory,"), "%s", header);
	o = spsim("run", REF, "--seq-len", "8K", "--engine", "analytic", "--format", "csv", NULL);
	expect(o, 0, NULL);
	ck_assert(strncmp(o->out, header, strlen(header)) == 0 && o->out[strlen(header)] == '\n');
	free(o);
	char dir[64], out[96], csv[128];
	tmp_dir(dir, sizeof dir);
	snprintf(out, sizeof out, "%s/rows", dir);
	snprintf(csv, sizeof csv, "%s/points.csv", out);
	char spec[CONFIG_PATH_MAX];
	snprintf(spec, sizeof spec, "%s/tests/data/plan/grid.yaml", getenv("SPSIM_DATA_DIR"));
	o = spsim("sweep", spec, "--out", out, "-j", "1", "--quiet", NULL);
	expect(o, 0, NULL);
	free(o);
	FILE *f = fopen(csv, "r");
	ck_assert_ptr_nonnull(f);
	char line[4096];
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	ck_assert_str_eq(line, header);
}
END_TEST

START_TEST(csv_quotes_names_from_user_files)
{
	/* A model file may name its model with a comma and a quote; every CSV writer quotes it
	 * (RFC 4180), so the row keeps the header's column count. max-seq's two tables wrote
	 * the name bare: one column more than the header. */
	char dir[64];
	tmp_dir(dir, sizeof dir);
	const char *model = tmp_write(dir, "m.yaml",
				      "model:\n  name: 'a,b\"c'\n  layers: 2\n  hidden: 64\n  heads: 8\n  ffn: 128\n"
				      "  vocab: 100\n  max_position: 1000000000\n");
	const char *const extra[][3] = {{"run", "--seq-len", "8K"}, {"max-seq", NULL, NULL},
					{"max-seq", "--techniques", "none,full"}};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		cli_out *o = spsim(extra[i][0], "--model", model, "--platform", "dgx-a100", "--engine", "analytic", "--format",
				   "csv", extra[i][1], extra[i][2], NULL);
		expect(o, 0, NULL);
		const char *row = strchr(o->out, '\n');
		ck_assert_ptr_nonnull(row);
		row++;
		ck_assert_msg(strncmp(row, "\"a,b\"\"c\",dgx-a100,", 18) == 0 || strstr(row, ",\"a,b\"\"c\",dgx-a100,"),
			      "%s: %s", extra[i][0], o->out);
		/* commas outside quotes: as many in the row as in the header */
		int hdr = 0, fields = 0;
		for (const char *c = o->out; c < row; c++)
			hdr += *c == ',';
		bool quoted = false;
		for (const char *c = row; *c && *c != '\n'; c++) {
			if (*c == '"')
				quoted = !quoted;
			fields += *c == ',' && !quoted;
		}
		ck_assert_msg(fields == hdr, "%s: %d commas in the row, %d in the header: %s", extra[i][0], fields, hdr,
			      o->out);
		free(o);
	}
}
END_TEST

START_TEST(a_flag_given_twice_is_refused)
{
	/* A value-taking flag given twice kept the last value without a word (run --seq-len 8K
	 * --seq-len 16K ran 16K; max-seq --zero 2 --zero 3 printed ZeRO-3 only). Every command
	 * refuses it, naming both values, under any spelling of the flag. */
	char log[CONFIG_PATH_MAX], spec[CONFIG_PATH_MAX];
	snprintf(log, sizeof log, "%s/tests/data/nccltests/all_reduce_perf.1x8.log", getenv("SPSIM_DATA_DIR"));
	snprintf(spec, sizeof spec, "%s/tests/data/plan/grid.yaml", getenv("SPSIM_DATA_DIR"));
	static const char *const calls[][16] = {
		{"run", REF, "--seq-len", "8K", "--engine", "analytic", "--seq-len", "16K", NULL},
		{"compare", REF, "--seq-len", "8K", "--engine", "analytic", "--strategies", "ulysses", "--strategies", "basp", NULL},
		{"max-seq", REF, "--zero", "2", "--zero", "3", NULL},
		{"platform", "dgx-a100", "--nodes", "2", "--nodes", "3", NULL},
		{"models", "--format", "json", "--format", "csv", NULL},
		{"collective", "allreduce", "--platform", "dgx-a100", "-b", "8", "--minbytes", "16", NULL},
		{"plan", REF, "--gpus", "8", "--seq-len", "4K", "--global-batch", "64K", "--top", "3", "--top", "5", NULL},
	};
	static const char *const want[] = {
		"spsim run: --seq-len given twice ('8K', then '16K'), expected it once",
		"spsim compare: --strategies given twice ('ulysses', then 'basp')",
		"spsim max-seq: --zero given twice ('2', then '3')",
		"spsim platform: --nodes given twice ('2', then '3')",
		"spsim models: --format given twice ('json', then 'csv')",
		"spsim collective: -b/--minbytes given twice ('8', then '16')",
		"spsim plan: --top given twice ('3', then '5')",
	};
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		const char *const *c = calls[i];
		/* REF is four words; the rest fit the 16 slots */
		cli_out *o = spsim(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13],
				   c[14], c[15], NULL);
		expect(o, 2, want[i]);
		free(o);
	}
	cli_out *o = spsim("calibrate", "--from-nccl-tests", log, "-o", "/tmp/a.yaml", "--out", "/tmp/b.yaml", NULL);
	expect(o, 2, "spsim calibrate: -o/--output given twice ('/tmp/a.yaml', then '/tmp/b.yaml')");
	free(o);
	o = spsim("sweep", spec, "--dry-run", "-j", "2", "--jobs", "3", NULL);
	expect(o, 2, "spsim sweep: -j/--jobs given twice ('2', then '3')");
	free(o);
	/* what adds up may be repeated: what-ifs, compare's columns, plan's lists, logs */
	o = spsim("run", REF, "--seq-len", "8K", "--engine", "analytic", "--slow-gpu", "0:2", "--slow-gpu", "1:2", NULL);
	expect(o, 0, NULL);
	free(o);
	o = spsim("compare", REF, "--seq-len", "8K", "--engine", "analytic", "--what-if", "slow-gpu=0:2", "--what-if",
		  "slow-gpu=1:3", NULL);
	expect(o, 0, NULL);
	free(o);
	o = spsim("plan", REF, "--gpus", "8", "--gpus", "16", "--seq-len", "4K", "--global-batch", "64K", "--verify", "none",
		  "--quiet", NULL);
	expect(o, 0, NULL);
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

START_TEST(outputs_leave_other_files_alone)
{
	/* Outputs are written beside their path and renamed over it; the file beside was
	 * PATH.tmp, so a user's own PATH.tmp was overwritten and then renamed away (lost).
	 * Now it is a fresh name: the user's file is kept, the output is written, and nothing
	 * is left behind. A log name with a line break went verbatim into the YAML comment
	 * of calibrate's output, ending the comment: the rest of the name became YAML. */
	char dir[64], keep[160], out[128], text[256];
	tmp_dir(dir, sizeof dir);
	const char *const outs[] = {"cal.yaml", "trace.json"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(out, sizeof out, "%s/%s", dir, outs[i]);
		snprintf(keep, sizeof keep, "%s.tmp", out);
		tmp_write(dir, i ? "trace.json.tmp" : "cal.yaml.tmp", "the user's own notes\n");
		cli_out *o = i ? spsim("run", REF, "--seq-len", "4K", "--engine", "analytic", "--trace", out, NULL)
			       : spsim("calibrate", "--from-nccl-tests", data("../nccltests/all_reduce_perf.1x8.log"), "-o", out,
				       NULL);
		expect(o, 0, NULL);
		free(o);
		read_text(keep, text, sizeof text);
		ck_assert_str_eq(text, "the user's own notes\n");
		struct stat st;
		ck_assert_int_eq(stat(out, &st), 0);
		ck_assert_int_gt(st.st_size, 0);
	}
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int files = 0;
	for (struct dirent *e; (e = readdir(d));)
		files += e->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(files, 4); /* the two outputs and the two notes: no temporary left */
	/* a log named with a line break: its name is written with '?' for the break, and the
	 * output loads as a calibration */
	static char log_text[16384];
	read_text(data("../nccltests/all_reduce_perf.1x8.log"), log_text, sizeof log_text);
	const char *evil = tmp_write(dir, "evil\ncalibration: {}\n#.log", log_text);
	snprintf(out, sizeof out, "%s/evil-cal.yaml", dir);
	cli_out *o = spsim("calibrate", "--from-nccl-tests", evil, "-o", out, NULL);
	expect(o, 0, NULL);
	free(o);
	read_text(out, text, sizeof text);
	ck_assert_msg(strstr(text, "evil?calibration: {}?#.log\ncalibration:\n"), "%s", text);
	o = spsim("run", REF, "--seq-len", "4K", "--engine", "analytic", "--calibration", out, NULL);
	expect(o, 0, NULL);
	free(o);
}
END_TEST

START_TEST(listing_commands)
{
	cli_out *o = spsim("models", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_int_eq(json_array_size(j), 9); /* the nine models of docs/sources.md */
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
	/* a value flag given last says that its value is missing, as the getopt commands do */
	o = spsim("models", "--format", NULL);
	expect(o, 2, "spsim models: option '--format' needs a value");
	free(o);
	o = spsim("platform", "dgx-h100", "--nodes", NULL);
	expect(o, 2, "spsim platform: option '--nodes' needs a value");
	free(o);
	o = spsim("platform", "dgx-h100", "--xml", "extra", NULL);
	expect(o, 2, "unexpected argument 'extra'");
	free(o);
	/* --xml with --format json printed the XML and dropped the json without a word */
	o = spsim("platform", "dgx-h100", "--xml", "--format", "json", NULL);
	expect(o, 2, "spsim platform: --xml prints the SimGrid platform, which has no json form; drop --xml or --format");
	ck_assert_str_eq(o->out, "");
	free(o);
	/* its help offers table|json: csv is refused, not answered with the table */
	o = spsim("platforms", "--format", "csv", NULL);
	expect(o, 2, "--format expects table or json, got 'csv'");
	ck_assert_str_eq(o->out, "");
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

/* The job line's BASP groups hold one sequence each: K = SP / B ranks, whatever runs inside
 * them. BASP over USP with u=2, r=2 on N = 8, B = 2: 2 groups of K = 2 x 2 = 4 (the layout's
 * group_size is USP's all-to-all degree U = 2, which the line once printed as K). The
 * planner's verdict counts the same ranks: basp-usp at SP 16, B = 2 on two dgx-h100 nodes
 * has groups of K = 8 (USP inside with U = 4, R = 2), and plain USP over SP 8 is one group
 * of 8 per sequence. */
START_TEST(basp_groups_count_the_ranks_of_one_sequence)
{
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "2", "--strategy",
			   "basp:inner=usp:u=2:r=2", "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "micro-batch 2 -> 2 groups of K=4 per domain"), "%s", o->out);
	ck_assert_msg(strstr(o->out, "all-to-all group 2, rings of 2"), "%s", o->out);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "2", "--strategy", "basp:inner=ring", "--engine",
		  "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "micro-batch 2 -> 2 groups of K=4 per domain"), "%s", o->out);
	free(o);
	o = spsim("plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "16", "--seq-len", "32K",
		  "--global-batch", "64K", "--strategies", "basp-usp", "--verify", "none", "--top", "1", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "basp-usp wins: #1 is a basp-usp layout, groups of K=8 GPUs with one sequence each"),
		      "%s", o->out);
	free(o);
	o = spsim("plan", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--gpus", "16", "--seq-len", "32K",
		  "--global-batch", "1M", "--strategies", "usp", "--verify", "none", "--top", "1", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "usp wins: #1 is a usp layout, one group of 8 GPUs per sequence"), "%s", o->out);
	free(o);
}
END_TEST

START_TEST(ignored_inputs_are_said)
{
	/* compare runs --strategies; a --strategy there used to vanish */
	cli_out *o = spsim("compare", REF, "--seq-len", "4K", "--strategy", "basp", "--engine", "analytic", NULL);
	expect(o, 2, "compare runs the list given by --strategies");
	free(o);
	/* max-seq simulates nothing: a trace would never be written */
	o = spsim("max-seq", REF, "--trace", "/tmp/spsim-never.json", NULL);
	expect(o, 2, "--trace: max-seq simulates no step");
	free(o);
	/* the engine does not change a memory bound: said, and the answer is the same */
	o = spsim("max-seq", REF, "--engine", "analytic", NULL);
	expect(o, 0, "--engine is not used");
	cli_out *o2 = spsim("max-seq", REF, NULL);
	expect(o2, 0, NULL);
	ck_assert_str_eq(o->out, o2->out);
	ck_assert_str_eq(o2->err, "");
	free(o);
	free(o2);
	/* --basp-uneven only shapes BASP: with Ulysses it is a warning, the run goes on */
	o = spsim("run", REF, "--seq-len", "4K", "--basp-uneven", "unequal", "--engine", "analytic", NULL);
	expect(o, 0, "--basp-uneven unequal applies to --strategy basp only");
	free(o);
	o = spsim("run", REF, "--seq-len", "4K", "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->err, "warning"), "%s", o->err);
	free(o);
	/* leaf switches exist only in a fat-tree: the key is an error, located */
	char dir[64];
	tmp_dir(dir, sizeof dir);
	const char *pl = platform_variant(dir, "rail.yaml", "    topology: rail-optimized\n",
					  "    topology: rail-optimized\n    nodes_per_leaf: 2\n");
	char want[160];
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", pl, "--seq-len", "4K", NULL);
	snprintf(want, sizeof want, "rail.yaml:%d:21: 'nodes_per_leaf' applies only to topology fat-tree",
		 variant_line + 1);
	expect(o, 2, want);
	free(o);
	pl = platform_variant(dir, "rail2.yaml", "    topology: rail-optimized\n",
			      "    topology: rail-optimized\n    oversubscription: 2\n");
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", pl, "--seq-len", "4K", NULL);
	snprintf(want, sizeof want, "rail2.yaml:%d:23: 'oversubscription' applies only to topology fat-tree",
		 variant_line + 1);
	expect(o, 2, want);
	free(o);
}
END_TEST

START_TEST(files_and_directories)
{
	char dir[64];
	tmp_dir(dir, sizeof dir);
	/* a directory where a file is expected: one message, whatever the flag */
	static const char *const flags[] = {"--model", "--platform", "--calibration", "--job"};
	for (size_t i = 0; i < 4; i++) {
		cli_out *o = i == 0 ? spsim("run", "--model", dir, "--platform", "dgx-h100", "--seq-len", "4K", NULL)
			     : i == 1 ? spsim("run", "--model", "llama-3.2-1b", "--platform", dir, "--seq-len", "4K", NULL)
				      : spsim("run", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K",
					      flags[i], dir, NULL);
		char want[128];
		snprintf(want, sizeof want, "%s is a directory, expected a", dir);
		expect(o, 2, want);
		free(o);
	}
	cli_out *o = spsim("calibrate", "--from-nccl-tests", dir, NULL);
	expect(o, 2, "is a directory, expected an nccl-tests log file");
	free(o);
	/* an unwritable trace is refused before the simulation, as bad input */
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--trace",
		  "/nonexistent-dir/t.json", NULL);
	expect(o, 2, "--trace /nonexistent-dir/t.json: the folder /nonexistent-dir does not exist");
	free(o);
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--trace", dir, NULL);
	expect(o, 2, "is a directory, expected a file name");
	free(o);
	/* a new figure folder written with a trailing slash, as README's examples do */
	char figs[96], fig_dat[128];
	snprintf(figs, sizeof figs, "%s/figures/", dir);
	o = spsim("compare", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--engine",
		  "analytic", "--strategies", "ulysses,basp", "--plot", figs, NULL);
	expect(o, 0, NULL);
	free(o);
	snprintf(fig_dat, sizeof fig_dat, "%sbreakdown.dat", figs);
	ck_assert_msg(access(fig_dat, F_OK) == 0, "%s was not written", fig_dat);
	/* an output onto an input (under any name) would destroy it: refused, the input kept */
	const char *job = tmp_write(dir, "job.yaml", "job:\n  model: llama-3.2-1b\n  platform: dgx-h100\n  seq_len: 4K\n");
	char job_copy[128], job_alias[160], want_in[512];
	snprintf(job_copy, sizeof job_copy, "%s", job);
	snprintf(job_alias, sizeof job_alias, "%s/./job.yaml", dir);
	o = spsim("run", "--job", job_copy, "--engine", "analytic", "--trace", job_alias, NULL);
	snprintf(want_in, sizeof want_in, "--trace %s is the input file %s, which writing would destroy", job_alias, job_copy);
	expect(o, 2, want_in);
	free(o);
	char log_path[128];
	static char log_before[16384], log_after[16384];
	snprintf(log_path, sizeof log_path, "%s/ar.log", dir);
	read_text(data("../nccltests/all_reduce_perf.1x8.log"), log_before, sizeof log_before);
	FILE *dst = fopen(log_path, "w");
	ck_assert_ptr_nonnull(dst);
	fputs(log_before, dst);
	fclose(dst);
	o = spsim("calibrate", "--from-nccl-tests", log_path, "-o", log_path, NULL);
	snprintf(want_in, sizeof want_in, "--output %s is the input file %s", log_path, log_path);
	expect(o, 2, want_in);
	free(o);
	read_text(log_path, log_after, sizeof log_after);
	ck_assert_str_eq(log_after, log_before);
	/* a fit that fails leaves an existing output as it was (and no temporary beside it) */
	const char *one = tmp_write(dir, "one.log", "# Collective test starting: all_reduce_perf\n"
						   "#  Rank  0 Group  0 Pid   4000 on    node-00 device  0 [0x07] GPU\n"
						   "#  Rank  1 Group  0 Pid   4001 on    node-00 device  1 [0x17] GPU\n");
	const char *keep = tmp_write(dir, "keep.yaml", "keep\n");
	char keep_copy[128], tmp_side[160];
	snprintf(keep_copy, sizeof keep_copy, "%s", keep);
	o = spsim("calibrate", "--from-nccl-tests", one, "-o", keep_copy, NULL);
	ck_assert_int_eq(o->code, 2);
	free(o);
	read_text(keep_copy, log_after, sizeof log_after);
	ck_assert_str_eq(log_after, "keep\n");
	snprintf(tmp_side, sizeof tmp_side, "%s.tmp", keep_copy);
	ck_assert_int_ne(access(tmp_side, F_OK), 0);
	/* and one that succeeds replaces it */
	o = spsim("calibrate", "--from-nccl-tests", log_path, "-o", keep_copy, NULL);
	expect(o, 0, NULL);
	free(o);
	read_text(keep_copy, log_after, sizeof log_after);
	ck_assert_msg(strstr(log_after, "calibration:\n"), "%s", log_after);
	ck_assert_int_ne(access(tmp_side, F_OK), 0);
	/* 80GB is 74.5 GiB: taken literally, but said; 80GiB is quiet */
	const char *pl = platform_variant(dir, "dec.yaml", "memory: 80GiB", "memory: 80GB ");
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", pl, "--seq-len", "4K", "--engine", "analytic",
		  "--format", "json", NULL);
	char want[128];
	snprintf(want, sizeof want, "dec.yaml:%d:13: warning: memory '80GB' is a decimal size (74.51 GiB)", variant_line);
	expect(o, 0, want);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_double_eq(json_number_value(json_object_get(json_object_get(j, "memory_bytes"), "capacity")), 80e9);
	json_decref(j);
	free(o);
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--engine", "analytic",
		  NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->err, "warning"), "%s", o->err);
	free(o);
	/* and no hint suggests writing a decimal GPU memory */
	pl = platform_variant(dir, "bad.yaml", "memory: 80GiB", "memory: lots");
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", pl, "--seq-len", "4K", NULL);
	expect(o, 2, "expected a size such as 40GiB");
	ck_assert_msg(!strstr(o->err, "80GB"), "%s", o->err);
	free(o);
}
END_TEST

START_TEST(job_file_takes_token_units_and_relative_paths)
{
	/* seq_len: 32K as on the command line; model and platform paths next to the job file,
	 * whatever the current directory */
	char dir[64], sub[96];
	tmp_dir(dir, sizeof dir);
	snprintf(sub, sizeof sub, "%s/cfg", dir);
	ck_assert_int_eq(mkdir(sub, 0777), 0);
	platform_variant(sub, "my-platform.yaml", "name: dgx-h100", "name: my-h100");
	const char *job = tmp_write(sub, "job.yaml",
				    "job:\n  model: llama-3.2-1b\n  platform: my-platform.yaml\n  seq_len: 32K\n");
	cli_out *o = spsim("run", "--job", job, "--engine", "analytic", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "platform")), "my-h100");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "job"), "seq_len")), 32768);
	json_decref(j);
	free(o);
	/* a bad token count is located */
	job = tmp_write(sub, "bad.yaml", "job:\n  model: llama-3.2-1b\n  seq_len: 32KB\n");
	o = spsim("run", "--job", job, "--platform", "dgx-h100", NULL);
	expect(o, 2, "bad.yaml:3:12: 'seq_len' must be a token count from 1 to 4294967296 (K and M suffixes: 16K = 16384), got '32KB'");
	free(o);
}
END_TEST

START_TEST(one_vocabulary_across_commands)
{
	/* nccl-tests' -b/-e/-f and spsim-validate's --min-bytes/--max-bytes/--factor are one set */
	cli_out *a = spsim("collective", "allreduce", "--platform", "dgx-h100", "--engine", "analytic", "-b", "1M", "-e",
			   "16M", "-f", "4", NULL);
	cli_out *b = spsim("collective", "allreduce", "--platform", "dgx-h100", "--engine", "analytic", "--min-bytes",
			   "1M", "--max-bytes", "16M", "--factor", "4", "--redop", "sum", NULL);
	expect(a, 0, NULL);
	expect(b, 0, NULL);
	ck_assert_str_eq(a->out, b->out);
	ck_assert(strstr(a->out, "16777216"));
	free(a);
	free(b);
	/* -o takes nccl-tests' reduction names only (and "none"), and prints the one given */
	a = spsim("collective", "allreduce", "--platform", "dgx-h100", "--engine", "analytic", "-b", "1M", "-e", "1M",
		  "-o", "max", NULL);
	expect(a, 0, NULL);
	ck_assert_msg(strstr(a->out, " max "), "%s", a->out);
	free(a);
	a = spsim("collective", "allreduce", "--platform", "dgx-h100", "-o", "summ", NULL);
	expect(a, 2, "-o/--op expects sum, prod, max, min, avg, mulsum or none, got 'summ'");
	free(a);
	/* collective --help states the engine that really runs by default: the first built in,
	 * the same one `run --help` names */
	a = spsim("collective", "--help", NULL);
	b = spsim("run", "--help", NULL);
	const char *d;
	const char *eng = strstr(b->out, "--engine NAME");
	ck_assert_ptr_nonnull(eng);
	d = strstr(eng, "(default ");
	ck_assert_ptr_nonnull(d);
	char want[64];
	snprintf(want, sizeof want, "%.*s", (int)(strchr(d, ')') - d + 1), d);
	const char *ce = strstr(a->out, "--engine NAME");
	ck_assert_ptr_nonnull(ce);
	ck_assert_msg(strncmp(strstr(ce, "(default "), want, strlen(want)) == 0, "collective: %.80s, run: %s", ce, want);
	free(a);
	free(b);
	/* calibrate: --collective for the op, -o/--out for --output */
	a = spsim("calibrate", "--help", NULL);
	expect(a, 0, NULL);
	ck_assert(strstr(a->out, "--collective OP") && strstr(a->out, "-o, --output FILE"));
	free(a);
	a = spsim("calibrate", "--from-nccl-tests", "x.log", "--collective", "gather", NULL);
	expect(a, 2, "--collective expects allreduce");
	free(a);
	a = spsim("calibrate", "--from-nccl-tests", "x.log", "-o", "/nonexistent-dir/c.yaml", NULL);
	expect(a, 2, "--output /nonexistent-dir/c.yaml: the folder /nonexistent-dir does not exist");
	free(a);
	/* -e 0 bounds nothing: refused rather than read as "no bound"; -b above -e names both */
	a = spsim("calibrate", "--from-nccl-tests", "x.log", "-e", "0", NULL);
	expect(a, 2, "spsim calibrate: -e expects a size above 0");
	free(a);
	a = spsim("calibrate", "--from-nccl-tests", "x.log", "-b", "1M", "-e", "512K", NULL);
	expect(a, 2, "spsim calibrate: -b (1048576 bytes) is larger than -e (524288 bytes), expected -b <= -e");
	free(a);
	/* the layout flags name themselves (the range table's row had no flag: '(null)') */
	a = spsim("calibrate", "--from-nccl-tests", "x.log", "--gpus-per-node", "0", NULL);
	expect(a, 2, "spsim calibrate: --gpus-per-node expects an integer from 1 to 1024, got '0'");
	free(a);
	a = spsim("collective", "--gpus-per-node", "2000", NULL);
	expect(a, 2, "spsim collective: --gpus-per-node expects an integer from 1 to 1024, got '2000'");
	free(a);
}
END_TEST

START_TEST(compare_refuses_a_repeated_strategy)
{
	/* Two 'ulysses' columns shared one JSON speedup key (and one --trace file): refused,
	 * exit 2, naming the spec; the same strategy with its own SP size is another column. */
	cli_out *o = spsim("compare", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--engine",
			   "analytic", "--strategies", "ulysses,basp,ulysses", "--format", "json", NULL);
	expect(o, 2, "--strategies lists 'ulysses' twice, expected each spec once");
	ck_assert_str_eq(o->out, "");
	free(o);
	o = spsim("compare", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--what-if",
		  "slow-gpu=1:2", "--what-if", "slow-gpu=1:2", NULL);
	expect(o, 2, "--what-if lists 'slow-gpu=1:2' twice, expected each spec once");
	ck_assert_str_eq(o->out, "");
	free(o);
	o = spsim("compare", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K", "--engine",
		  "analytic", "--strategies", "ulysses,ulysses:sp=4", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_object_size(json_object_get(j, "speedup")), 2);
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(max_seq_says_which_time_settings_it_ignores)
{
	/* The all-to-all algorithm and, on a uniform platform, the placement change step time
	 * only: max-seq says it does not use them (as it says for --engine), and its answer is
	 * the one without them. */
	cli_out *base = spsim("max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--format", "json", NULL);
	expect(base, 0, NULL);
	ck_assert_msg(!strstr(base->err, "is not used"), "%s", base->err);
	/* 1B's longest sequence passes its max_position: said, without claiming a simulation */
	expect(base, 0, "exceed llama-3.2-1b's max_position (131072)");
	expect(base, 0, "the memory bound is reported anyway");
	ck_assert_msg(!strstr(base->err, "simulating"), "%s", base->err);
	cli_out *o = spsim("max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--a2a", "pairwise",
			   "--placement", "strided", "--format", "json", NULL);
	expect(o, 0, "note: --a2a is not used");
	expect(o, 0, "note: --placement is not used");
	ck_assert_str_eq(o->out, base->out);
	free(o);
	free(base);
}
END_TEST

START_TEST(max_seq_is_not_held_to_an_engine)
{
	/* max-seq runs no engine: what only an engine refuses does not stop it. A 1000-element
	 * reduce bucket makes the 1.24e9 parameters of llama-3.2-1b 1.24e6 calls, past the
	 * simgrid engine's 10,000 (run refuses it there), and the analytic engine places ranks
	 * contiguously only (run refuses --placement strided there); the bucket changes only
	 * the buffer and the placement nothing on a uniform platform, so the answers stand. */
	cli_out *r = spsim("run", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--seq-len", "8K", "--engine",
			   "simgrid", "--reduce-bucket", "1000", NULL);
	expect(r, 2, "simgrid engine simulates each");
	free(r);
	cli_out *o = spsim("max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--reduce-bucket", "1000", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "longest sequence that fits: "), "%s", o->out);
	free(o);
	o = spsim("max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--engine", "analytic", "--placement",
		  "strided", NULL);
	expect(o, 0, "note: --placement is not used");
	ck_assert_msg(strstr(o->out, "longest sequence that fits: "), "%s", o->out);
	free(o);
}
END_TEST

START_TEST(max_seq_says_when_its_search_stopped)
{
	/* A one-layer model of width 1 on one 80 GiB GPU fits more than the 2^30 tokens
	 * max-seq searches: the answer is that floor, and what stops it is the search, not
	 * memory. It said "blocked by: activations" and that more GPUs "would fit 1073741824
	 * tokens", the same length. */
	char dir[64];
	tmp_dir(dir, sizeof dir);
	const char *model = tmp_write(dir, "w1.yaml",
				      "model:\n  name: w1\n  layers: 1\n  hidden: 1\n  heads: 1\n  ffn: 1\n  vocab: 1\n"
				      "  max_position: 2147483647\n");
	cli_out *o = spsim("max-seq", "--model", model, "--platform", "dgx-a100", "--gpus", "1", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_seq_len")), 1073741824);
	ck_assert_str_eq(json_string_value(json_object_get(j, "blocked_by")), "search limit");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "unblock_max_seq_len")), 0);
	json_decref(j);
	free(o);
	/* a job memory stops keeps its answer */
	o = spsim("max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--format", "json", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "\"blocked_by\": \"activations\""), "%s", o->out);
	free(o);
}
END_TEST

START_TEST(simgrid_node_size_is_refused_up_front)
{
	/* A platform of 72 GPUs per node (an NVL72 rack) is within the file's range (1024)
	 * but past the simgrid engine's 64: refused before anything runs, exit 2 (it failed
	 * inside the run with exit 1), by every command that would run it; the analytic
	 * engine takes it. */
	char dir[64];
	tmp_dir(dir, sizeof dir);
	const char *p72 = platform_variant(dir, "p72.yaml", "gpus_per_node: 8", "gpus_per_node: 72");
	const char *want = "72 GPUs per node, and the simgrid engine simulates at most 64";
	cli_out *o = spsim("run", "--model", "llama-3.2-1b", "--platform", p72, "--gpus", "8", "--seq-len", "8K", "--engine",
			   "simgrid", NULL);
	expect(o, 2, want);
	free(o);
	o = spsim("collective", "allreduce", "--platform", p72, "--engine", "simgrid", NULL);
	expect(o, 2, want);
	free(o);
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", p72, "--gpus", "8", "--seq-len", "4K", "--global-batch",
		  "64K", "--quiet", "--verify", "simgrid", NULL);
	expect(o, 2, want);
	free(o);
	o = spsim("run", "--model", "llama-3.2-1b", "--platform", p72, "--gpus", "8", "--seq-len", "8K", "--engine",
		  "analytic", NULL);
	expect(o, 0, NULL);
	free(o);
}
END_TEST

START_TEST(max_seq_takes_lists_and_says_what_blocks)
{
	/* 70B on 4 DGX-H100 nodes: every combination of two strategies, ZeRO 1 and 3, and
	 * recompute none/full in one call */
	cli_out *o = spsim("max-seq", "--model", "llama-3.1-70b", "--platform", "dgx-h100", "--nodes", "4",
			   "--micro-batch", "2", "--strategy", "ulysses,basp", "--zero", "1,3", "--recompute", "none,full",
			   "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	json_t *rows = json_object_get(j, "rows");
	ck_assert_int_eq(json_array_size(rows), 8);
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		const char *strategy = json_string_value(json_object_get(r, "strategy"));
		long zero = (long)json_integer_value(json_object_get(r, "zero_stage"));
		const char *rc = json_string_value(json_object_get(r, "recompute"));
		long best = (long)json_integer_value(json_object_get(r, "max_seq_len"));
		const char *blocked = json_string_value(json_object_get(r, "blocked_by"));
		/* ZeRO-1 keeps 16 bytes/param of fp32 optimizer state over 70.6e9 params / 32
		 * replicas... only the optimizer is partitioned: 2+2 bytes x 70.6e9 = 282 GB of
		 * bf16 weights and gradients per GPU alone exceed 80 GiB, so nothing fits and the
		 * model states are what blocks; at ZeRO-3 everything is split 32 ways. */
		if (zero == 1) {
			ck_assert_int_eq(best, 0);
			ck_assert_str_eq(blocked, "model states");
			ck_assert_str_eq(json_string_value(json_object_get(r, "unblock")), "--zero 3");
		} else {
			ck_assert_int_gt(best, 0);
			ck_assert_str_eq(blocked, "activations");
		}
		/* the setting named as the way out is exactly another row of this table */
		const char *unblock = json_string_value(json_object_get(r, "unblock"));
		long want_zero = strcmp(unblock, "--zero 3") == 0 ? 3 : zero;
		const char *want_rc = strcmp(unblock, "--recompute full") == 0 ? "full" : rc;
		if (want_zero == zero && strcmp(want_rc, rc) == 0)
			continue;
		size_t k;
		json_t *s;
		bool found = false;
		json_array_foreach(rows, k, s)
		if (strcmp(json_string_value(json_object_get(s, "strategy")), strategy) == 0 &&
		    json_integer_value(json_object_get(s, "zero_stage")) == want_zero &&
		    strcmp(json_string_value(json_object_get(s, "recompute")), want_rc) == 0) {
			found = true;
			ck_assert_int_eq(json_integer_value(json_object_get(r, "unblock_max_seq_len")),
					 json_integer_value(json_object_get(s, "max_seq_len")));
			ck_assert_int_gt(json_integer_value(json_object_get(s, "max_seq_len")), best);
		}
		ck_assert(found);
	}
	json_decref(j);
	free(o);
	/* the table names the blocker and the way out */
	o = spsim("max-seq", "--model", "llama-3.1-70b", "--platform", "dgx-h100", "--nodes", "4", "--strategy",
		  "ulysses,basp", "--micro-batch", "2", "--zero", "1,3", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "model states  --zero 3: ") && strstr(o->out, "activations   --recompute full: "),
		      "%s", o->out);
	free(o);
	o = spsim("max-seq", REF, "--zero", "1,4", NULL);
	expect(o, 2, "--zero expects an integer from 0 to 3, got '4'");
	free(o);
	/* a value listed twice printed its rows twice: refused, naming it ('1' of "1,11" is not
	 * '11') */
	const char *const twice[][3] = {{"--strategy", "ulysses,basp,ulysses", "--strategy lists 'ulysses' twice"},
					{"--zero", "1,3,1", "--zero lists '1' twice, expected each value once"},
					{"--recompute", "full,none,full", "--recompute lists 'full' twice"}};
	for (int t = 0; t < 3; t++) {
		o = spsim("max-seq", REF, twice[t][0], twice[t][1], NULL);
		expect(o, 2, twice[t][2]);
		ck_assert_str_eq(o->out, "");
		free(o);
	}
	o = spsim("max-seq", REF, "--zero", "1,11", NULL);
	expect(o, 2, "--zero expects an integer from 0 to 3, got '11'");
	free(o);
}
END_TEST

START_TEST(plan_says_which_rerun_settings_it_cannot_use)
{
	/* --placement, --timeout and -j shape only the re-runs: with --verify none they are
	 * said to be ignored (exit 0); a placement the analytic engine does not model is
	 * refused before the search (exit 2), as spsim run refuses it. */
	cli_out *o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "8", "--seq-len", "4K",
			   "--global-batch", "32K", "--verify", "none", "--placement", "strided", "--timeout", "5", "-j", "2",
			   NULL);
	expect(o, 0, "--verify none re-runs nothing; ignored: --placement, --timeout, -j");
	free(o);
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "none", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->err, "ignored"), "%s", o->err);
	free(o);
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "analytic", "--placement", "contiguous,strided", NULL);
	expect(o, 2, "--placement strided: the analytic engine (--verify analytic) models contiguous placement only");
	ck_assert_str_eq(o->out, "");
	free(o);
	/* and the help lists --quiet as a flag of its own, beside --progress */
	o = spsim("plan", "--help", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "\n  --quiet ") && strstr(o->out, "\n  --progress "), "%s", o->out);
	free(o);
}
END_TEST

START_TEST(plan_refuses_a_value_listed_twice)
{
	/* a repeated list value searched and printed its layouts twice ("--gpus 8,8": '[same
	 * layout: ulysses SP 4 B=2, ulysses SP 4 B=2]'; a platform twice: '#2 ties with #1
	 * (a100-2x4-ib400 vs a100-2x4-ib400)'), and a platform priced twice kept the last price
	 * without a word: each refused before the search, in one list or across repeated flags */
	const char *const cases[][3] = {
		{"--gpus", "8,8", "--gpus lists '8' twice, expected each value once"},
		{"--platform", "dgx-h100,dgx-h100", "--platform lists 'dgx-h100' twice"},
		{"--zero", "1,2,1", "--zero lists '1' twice"},
		{"--recompute", "none,none", "--recompute lists 'none' twice"},
		{"--strategies", "ulysses,basp,ulysses", "--strategies lists 'ulysses' twice"},
		{"--a2a", "direct,direct", "--a2a lists 'direct' twice"},
		{"--gpus", "8", "--gpus lists '8' twice"}, /* the flag repeats the base command's --gpus 8 */
		{"--price", "dgx-h100=1,dgx-h100=2", "--price prices 'dgx-h100' twice, expected one price per platform"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cli_out *o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "8", "--seq-len", "4K",
				   "--global-batch", "32K", "--verify", "none", cases[i][0], cases[i][1], NULL);
		expect(o, 2, cases[i][2]);
		ck_assert_str_eq(o->out, "");
		free(o);
	}
	/* distinct values still run */
	cli_out *o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "8", "--seq-len", "4K",
			   "--global-batch", "32K", "--verify", "none", "--zero", "1,2", "--price", "dgx-h100=2", NULL);
	expect(o, 0, NULL);
	free(o);
}
END_TEST

START_TEST(plan_says_why_nothing_was_searched)
{
	/* 12 GPUs on 8-GPU nodes: no budget to search is an input error, said so */
	cli_out *o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--gpus", "12", "--seq-len", "4K",
			   "--global-batch", "64K", "--verify", "none", NULL);
	expect(o, 2, "nothing to search: no --gpus budget is a whole number of nodes");
	ck_assert_str_eq(o->out, "");
	free(o);
	/* 70B, one 1M-token sequence on 8 A100-40GB: nothing fits; ZeRO-3 and recompute were
	 * searched (by default), so they are not offered as the way out */
	o = spsim("plan", "--model", "llama-3.1-70b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len", "1M",
		  "--global-batch", "1M", "--verify", "none", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "no configuration fits in GPU memory"), "%s", o->out);
	ck_assert_msg(!strstr(o->out, "--zero 3") && !strstr(o->out, "--recompute full"), "%s", o->out);
	free(o);
	/* searching ZeRO-1 and no recompute only: both are offered */
	o = spsim("plan", "--model", "llama-3.1-70b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len", "1M",
		  "--global-batch", "1M", "--verify", "none", "--zero", "1", "--recompute", "none", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "ZeRO-3 (--zero 3)") && strstr(o->out, "recompute (--recompute full)"), "%s", o->out);
	free(o);
	/* offloaded activations exist only with full recompute: a search without it is an
	 * input error, not a search whose every configuration is rejected */
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "64K", "--verify", "none", "--recompute", "none,selective", "--offload-activations", NULL);
	expect(o, 2, "--offload-activations moves the activation checkpoints, which exist only with full recompute; "
		     "add full to --recompute");
	ck_assert_str_eq(o->out, "");
	free(o);
	/* 4K tokens in 4097 MLP tiles: every configuration fails the job check (each GPU holds
	 * at most the whole 4096-token sequence), which is said with the check's reason, not
	 * as a memory problem */
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "none", "--tile-mlp", "4097", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "no configuration passes the job check; the first rejected: --tile-mlp 4097: each "
				     "GPU holds"),
		      "%s", o->out);
	ck_assert_msg(!strstr(o->out, "GPU memory: try"), "%s", o->out);
	free(o);
	/* buckets the verify engine would run call by call for hours: refused before the search */
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "simgrid", "--reduce-bucket", "1", NULL);
	expect(o, 2, "spsim plan: --verify simgrid at ZeRO-0: --reduce-bucket 1 splits");
	ck_assert_str_eq(o->out, "");
	free(o);
	/* a stage-3 setting with no stage 3 searched: said once, the search goes on */
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "none", "--zero", "1,2", "--zero3-prefetch", "layer", NULL);
	expect(o, 0, "spsim plan: warning: no ZeRO stage searched (--zero) uses --zero3-prefetch layer (ZeRO-3 only); "
		     "ignored");
	free(o);
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "dgx-a100", "--gpus", "8", "--seq-len", "4K",
		  "--global-batch", "32K", "--verify", "none", "--zero", "1,3", "--zero3-prefetch", "layer", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->err, "warning"), "%s", o->err);
	free(o);
}
END_TEST

START_TEST(no_speedup_for_what_does_not_fit)
{
	/* Qwen1.5-7B, 32K, B=2, ZeRO-3 on 8 A100-40GB: without recompute every strategy
	 * needs more than 40 GiB (the README's compare example before it added recompute) */
	cli_out *o = spsim("compare", "--model", "qwen1.5-7b", "--platform", "a100-2x4-ib400", "--micro-batch", "2",
			   "--seq-len", "32K", "--strategies", "ulysses,basp,ulysses:sp=4", "--zero", "3", "--engine",
			   "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "fits                                   NO               NO               NO"), "%s",
		      o->out);
	ck_assert_msg(strstr(o->out, "speedup (tokens/s)             - (no fit)       - (no fit)       - (no fit)"), "%s",
		      o->out);
	ck_assert_msg(!strstr(o->out, "1.00x"), "%s", o->out);
	ck_assert_msg(strstr(o->out, "to fit, try --recompute full,"), "%s", o->out);
	free(o);
	o = spsim("compare", "--model", "qwen1.5-7b", "--platform", "a100-2x4-ib400", "--micro-batch", "2", "--seq-len",
		  "32K", "--strategies", "ulysses,basp", "--zero", "3", "--engine", "analytic", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert(json_is_null(json_object_get(json_object_get(j, "speedup"), "basp")));
	ck_assert(json_is_null(json_object_get(json_object_get(j, "sp_comm_speedup"), "basp")));
	json_decref(j);
	free(o);
	/* at 16K with recompute they fit and the speedups are numbers again */
	o = spsim("compare", "--model", "qwen1.5-7b", "--platform", "a100-2x4-ib400", "--micro-batch", "2", "--seq-len",
		  "16K", "--strategies", "ulysses,basp", "--zero", "3", "--recompute", "full", "--engine", "analytic",
		  "--format", "json", NULL);
	expect(o, 0, NULL);
	j = json_loads(o->out, 0, NULL);
	ck_assert(json_number_value(json_object_get(json_object_get(j, "speedup"), "basp")) > 1);
	json_decref(j);
	free(o);
}
END_TEST

/* stderr without the sanitizers' own notes (ASan's "==PID==WARNING: ASan is ignoring
 * requested __asan_handle_no_return" and its two follow-up lines, printed when SimGrid
 * switches stacks): what spsim itself wrote. */
static const char *spsim_err(const char *err, char *buf, size_t len)
{
	size_t n = 0;
	for (const char *line = err; *line;) {
		const char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line + 1) : strlen(line);
		static const char *const notes[] = {"==", "False positive error reports may follow",
						    "For details see https://github.com/google/sanitizers/"};
		bool note = false;
		for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
			note = note || strncmp(line, notes[i], strlen(notes[i])) == 0;
		if (!note && n + l < len) {
			memcpy(buf + n, line, l);
			n += l;
		}
		line += l;
	}
	buf[n] = '\0';
	return buf;
}

/* The blocks a `run --progress` line reports in all ("progress: N/N blocks (100%)"). */
static long run_progress_total(const char *grad_accum, const char *plain_out)
{
	cli_out *o = spsim("run", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--engine", "simgrid",
			   "--seq-len", "4K", "--grad-accum", grad_accum, "--progress", NULL);
	expect(o, 0, "progress: 1/");
	if (plain_out) /* progress observes: stdout is the run's without it, byte for byte */
		ck_assert_str_eq(o->out, plain_out);
	const char *end = strstr(o->err, " blocks (100%)");
	ck_assert_msg(end && strstr(end, "elapsed"), "%s", o->err);
	/* a run's blocks cannot fail: the line has no failed count */
	ck_assert_msg(strncmp(end, " blocks (100%), ", 16) == 0 && strncmp(end + 16, "0 failed", 8) != 0, "%s", o->err);
	const char *p = end;
	while (p > o->err && p[-1] != '/')
		p--;
	long n = strtol(p, NULL, 10);
	free(o);
	return n;
}

START_TEST(simgrid_run_progress_on_request_only)
{
	/* stderr here is a file, not a terminal: a SimGrid run says nothing unasked */
	cli_out *o = spsim("run", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--engine", "simgrid",
			   "--seq-len", "4K", "--grad-accum", "2", NULL);
	expect(o, 0, NULL);
	char clean[4096];
	ck_assert_str_eq(spsim_err(o->err, clean, sizeof clean), "");
	/* --progress: blocks of the program walked, with rate and ETA; the program is G
	 * micro-steps of n_micro blocks and n_step step blocks, so the total grows by the
	 * same n_micro > 0 per micro-step (G = 1, 2, 3; below the extrapolation threshold) */
	long t1 = run_progress_total("1", NULL), t2 = run_progress_total("2", o->out), t3 = run_progress_total("3", NULL);
	ck_assert_int_gt(t2 - t1, 0);
	ck_assert_int_eq(t3 - t2, t2 - t1);
	ck_assert_int_gt(t1, t2 - t1); /* and the step blocks on top of one micro-step */
	free(o);
	o = spsim("run", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--engine", "simgrid", "--seq-len",
		  "4K", "--quiet", NULL);
	expect(o, 0, NULL);
	ck_assert_str_eq(spsim_err(o->err, clean, sizeof clean), "");
	free(o);
}
END_TEST

START_TEST(plan_progress_on_request_only)
{
	/* stderr here is a file, not a terminal: nothing unasked; --progress: a line per
	 * finished re-run with the rate and the ETA, and the final count */
	cli_out *o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len",
			   "8K", "--global-batch", "128K", "--verify", "analytic", "--top", "3", NULL);
	expect(o, 0, NULL);
	ck_assert_str_eq(o->err, "");
	free(o);
	o = spsim("plan", "--model", "llama-3.2-1b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len", "8K",
		  "--global-batch", "128K", "--verify", "analytic", "--top", "3", "--progress", NULL);
	expect(o, 0, "re-running the top 3 on analytic (3 runs)");
	/* a line per run (a handful of long tasks), the last with the elapsed time */
	ck_assert_msg(strstr(o->err, "progress: 1/3 re-runs (33%), 0 failed") && strstr(o->err, "ETA"), "%s", o->err);
	ck_assert_msg(strstr(o->err, "progress: 3/3 re-runs (100%), 0 failed") && strstr(o->err, "elapsed"), "%s", o->err);
	/* the search's layouts cannot fail (an infeasible layout is a finding): no failed count */
	const char *lay = strstr(o->err, " layouts (100%)");
	ck_assert_msg(lay, "%s", o->err);
	const char *eol = strchr(lay, '\n'), *f = strstr(lay, "failed");
	ck_assert_msg(eol && (!f || f > eol), "%s", o->err);
	free(o);
	/* compare: the same, per strategy run */
	o = spsim("compare", REF, "--seq-len", "4K", "--engine", "analytic", "--progress", NULL);
	expect(o, 0, "progress: 2/2 runs (100%), 0 failed");
	free(o);
	o = spsim("compare", REF, "--seq-len", "4K", "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_str_eq(o->err, "");
	free(o);
}
END_TEST

/* Every file under dir (recursively, dot entries skipped) is read and must not cite the
 * notes file that is not in the repository; returns the number of files read. */
/* Whether docs/sources.md defines tag: a row of one of its tables starts with it
 * ("| [A100-DS] |", or "| [CX6] / [CX7] |"), so a tag merely mentioned in prose does not count. */
static bool source_defined(const char *sources, const char *tag)
{
	for (const char *p = strstr(sources, tag); p; p = strstr(p + 1, tag))
		if ((p - sources >= 2 && strncmp(p - 2, "| ", 2) == 0) ||
		    (p - sources >= 3 && strncmp(p - 3, " / ", 3) == 0))
			return true;
	return false;
}

/* The citation tags of a text: [A100-DS], [MAMF], [nccl-tests-149]. In C sources only
 * hyphenated ones, so that array sizes ([MEMO], [NET]) are not taken for tags; in Markdown
 * any bracketed name of three or more characters that starts upper-case (or "nccl") and is
 * not a link's text. Returns how many it checked. */
static int assert_tags_defined(const char *path, const char *text, const char *sources, bool markdown)
{
	int tags = 0;
	for (const char *t = strchr(text, '['); t; t = strchr(t + 1, '[')) {
		size_t n = strspn(t + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-");
		if (t[1 + n] != ']' || n < 3 || n > 40 || t[2 + n] == '(')
			continue;
		if (!(t[1] >= 'A' && t[1] <= 'Z') && strncmp(t + 1, "nccl", 4) != 0)
			continue;
		if (!markdown && !memchr(t + 1, '-', n))
			continue;
		char tag[48];
		snprintf(tag, sizeof tag, "%.*s", (int)n + 2, t);
		ck_assert_msg(source_defined(sources, tag), "%s cites %s, which docs/sources.md does not define", path, tag);
		tags++;
	}
	return tags;
}

/* Walks dir: no file cites the background notes, and every citation tag in a C source or
 * Markdown file is defined in docs/sources.md. Returns the files read; *tags counts tags. */
static int assert_no_notes_citation(const char *dir, const char *sources, int *tags)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	int files = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[CONFIG_PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		ck_assert_int_eq(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			files += assert_no_notes_citation(path, sources, tags);
		} else if (S_ISREG(st.st_mode)) {
			char *text = tu_read_file(path);
			ck_assert_ptr_nonnull(text);
			ck_assert_msg(!strstr(text, "modeling.md"), "%s cites modeling.md", path);
			size_t len = strlen(path);
			bool md = len > 3 && strcmp(path + len - 3, ".md") == 0;
			bool c = len > 2 && (strcmp(path + len - 2, ".c") == 0 || strcmp(path + len - 2, ".h") == 0);
			if (md || c)
				*tags += assert_tags_defined(path, text, sources, md);
			free(text);
			files++;
		}
	}
	closedir(d);
	return files;
}

START_TEST(shipped_files_cite_sources_in_the_repository)
{
	/* every [TAG] a shipped model or platform cites is defined in docs/sources.md, and none
	 * points at a document that is not in the repository */
	const char *root = getenv("SPSIM_DATA_DIR");
	char path[CONFIG_PATH_MAX];
	snprintf(path, sizeof path, "%s/docs/sources.md", root);
	char *sources = tu_read_file(path);
	ck_assert_ptr_nonnull(sources);
	static const char *const dirs[] = {"models", "platforms"};
	int files = 0, tags = 0;
	for (int d = 0; d < 2; d++) {
		char **names;
		int n = config_list_data(dirs[d], &names);
		ck_assert_int_gt(n, 3);
		for (int i = 0; i < n; i++) {
			snprintf(path, sizeof path, "%s/%s/%s.yaml", root, dirs[d], names[i]);
			char *text = tu_read_file(path);
			ck_assert_ptr_nonnull(text);
			ck_assert_msg(!strstr(text, "modeling.md"), "%s cites modeling.md", path);
			for (char *t = strchr(text, '['); t; t = strchr(t + 1, '[')) {
				char *end = strchr(t, ']');
				if (!end || end - t > 40 || strchr(t, '\n') < end)
					continue;
				char tag[48];
				snprintf(tag, sizeof tag, "%.*s", (int)(end - t + 1), t);
				if (tag[1] < 'A' || tag[1] > 'Z') /* [A100-DS], [HF-..], [NCCL-tuning]; not YAML lists */
					if (strncmp(tag, "[nccl", 5) != 0)
						continue;
				ck_assert_msg(source_defined(sources, tag), "%s cites %s, not defined in docs/sources.md", path,
					      tag);
				tags++;
			}
			free(text);
			free(names[i]);
			files++;
		}
		free(names);
	}
	ck_assert_int_ge(files, 14);
	ck_assert_int_gt(tags, 30);
	/* nor does any source file or document, and every tag they cite is defined there too:
	 * each directory holds files, so a walk that read nothing (a wrong root) fails */
	static const char *const trees[] = {"src", "kernels", "validate", "docs", "examples"};
	int tree_tags = 0;
	for (size_t k = 0; k < sizeof trees / sizeof trees[0]; k++) {
		snprintf(path, sizeof path, "%s/%s", root, trees[k]);
		ck_assert_int_gt(assert_no_notes_citation(path, sources, &tree_tags), 3);
	}
	ck_assert_int_gt(tree_tags, 50); /* docs/sources.md's own rows alone define over 40 */
	/* the tag reader itself: a hyphenated tag in C, an all-caps one in Markdown, neither a
	 * C array size nor a link's text */
	ck_assert_int_eq(assert_tags_defined("x.c", "/* [NCCL-tuning] */ double a[MEMO];", sources, false), 1);
	ck_assert_int_eq(assert_tags_defined("x.md", "[MAMF] and [the docs](y.md)", sources, true), 1);
	free(sources);
}
END_TEST

/* --cp-comm-type: Megatron-Core's context-parallel types name spsim's strategies; bad
 * values, conflicts and options that do not apply exit 2 with the choices. */
/* stdout of one command that exits 0, as JSON; *autos counts the true
 * reduce_bucket_auto / prefetch_bucket_auto keys, which are removed (they are all that
 * tells a run with auto from one with the numbers written out). */
static void drop_auto_keys(json_t *j, int *autos)
{
	static const char *const keys[] = {"reduce_bucket_auto", "prefetch_bucket_auto"};
	size_t i;
	json_t *v;
	const char *k;
	if (json_is_array(j))
		json_array_foreach(j, i, v) drop_auto_keys(v, autos);
	if (!json_is_object(j))
		return;
	for (i = 0; i < 2; i++) {
		*autos += json_is_true(json_object_get(j, keys[i]));
		json_object_del(j, keys[i]);
	}
	json_object_foreach(j, k, v) drop_auto_keys(v, autos);
}

static json_t *json_of(cli_out *o, int *autos)
{
	expect(o, 0, NULL);
	json_error_t je;
	json_t *j = json_loads(o->out, 0, &je);
	ck_assert_msg(j, "not JSON: %s", je.text);
	free(o);
	*autos = 0;
	drop_auto_keys(j, autos);
	return j;
}

START_TEST(auto_buckets_across_commands)
{
	/* --reduce-bucket auto and --prefetch-bucket auto: transformers' Trainer's fill from
	 * the hidden size (llama-3.1-8b, h = 4096): reduce 4096^2 = 16777216, prefetch
	 * int(0.9 * 4096 * 4096) = int(3686.4 * 4096) = int(15099494.4) = 15099494. Each
	 * command prints what it prints with the numbers written out, key for key and value
	 * for value but the booleans that say auto (run and compare: one of each per run;
	 * max-seq prints no job), and not what it prints with DeepSpeed's defaults (ZeRO-3
	 * counts the reduce bucket whole). */
	char dir[CONFIG_PATH_MAX];
	tmp_dir(dir, sizeof dir);
	static const struct {
		const char *cmd;
		int autos;
	} cmds[] = {{"run", 2}, {"compare", 4}, {"max-seq", 0}};
	int na, nn, nd;
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		json_t *a = json_of(spsim(cmds[i].cmd, REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic",
					  "--reduce-bucket", "auto", "--prefetch-bucket", "auto", "--format", "json", NULL),
				    &na);
		json_t *n = json_of(spsim(cmds[i].cmd, REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic",
					  "--reduce-bucket", "16777216", "--prefetch-bucket", "15099494", "--format", "json", NULL),
				    &nn);
		json_t *d = json_of(spsim(cmds[i].cmd, REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic",
					  "--format", "json", NULL),
				    &nd);
		ck_assert_msg(json_equal(a, n), "%s: auto differs from the numbers written out", cmds[i].cmd);
		ck_assert_msg(!json_equal(a, d), "%s: auto prints DeepSpeed's defaults", cmds[i].cmd);
		ck_assert_int_eq(na, cmds[i].autos);
		ck_assert_int_eq(nn + nd, 0);
		if (strcmp(cmds[i].cmd, "run") == 0) {
			json_t *job = json_object_get(a, "job");
			ck_assert(json_real_value(json_object_get(job, "reduce_bucket")) == 16777216);
			ck_assert(json_real_value(json_object_get(job, "prefetch_bucket")) == 15099494);
			ck_assert(json_real_value(json_object_get(job, "allgather_bucket")) == 5e8);
		}
		json_decref(a);
		json_decref(n);
		json_decref(d);
	}
	/* a job file's auto; a flag's number over it wins for that bucket only */
	const char *job = tmp_write(dir, "auto.yaml", "job:\n  seq_len: 16K\n  zero: 3\n  reduce_bucket: auto\n"
						       "  prefetch_bucket: auto\n");
	json_t *f = json_of(spsim("run", REF, "--job", job, "--engine", "analytic", "--format", "json", NULL), &na);
	json_t *n = json_of(spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic", "--reduce-bucket",
				  "16777216", "--prefetch-bucket", "15099494", "--format", "json", NULL),
			    &nn);
	ck_assert(json_equal(f, n) && na == 2);
	json_decref(f);
	json_decref(n);
	f = json_of(spsim("run", REF, "--job", job, "--reduce-bucket", "5e8", "--engine", "analytic", "--format", "json", NULL),
		    &na);
	n = json_of(spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--engine", "analytic", "--prefetch-bucket",
			  "15099494", "--format", "json", NULL),
		    &nn);
	ck_assert(json_equal(f, n) && na == 1);
	json_decref(f);
	json_decref(n);
	/* plan's rows print the resolved sizes */
	cli_out *o = spsim("plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len",
			   "16K", "--global-batch", "64K", "--verify", "none", "--zero", "3", "--reduce-bucket", "auto",
			   "--prefetch-bucket", "auto", "--format", "json", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "\"reduce_bucket\": 16777216.0") && strstr(o->out, "\"prefetch_bucket\": 15099494.0") &&
			      !strstr(o->out, "\"reduce_bucket\": 5e8"),
		      "%s", o->out);
	free(o);
	/* the all-gather bucket has no auto (the Trainer never fills it); malformed values */
	static const struct {
		const char *cmd, *flag, *value, *want;
	} bad[] = {
		{"run", "--allgather-bucket", "auto",
		 "spsim run: --allgather-bucket expects a whole number from 1 to 1e+15 (e.g. 5e8), got 'auto' (no auto here: "
		 "transformers' Trainer fills reduce_bucket_size and stage3_prefetch_bucket_size from the model's hidden "
		 "size, never allgather_bucket_size)"},
		{"run", "--reduce-bucket", "autox",
		 "spsim run: --reduce-bucket expects auto or a whole number from 1 to 1e+15 (e.g. 5e8), got 'autox'"},
		{"run", "--prefetch-bucket", "-1",
		 "spsim run: --prefetch-bucket expects auto or a whole number from 1 to 1e+15 (e.g. 5e8), got '-1'"},
		{"max-seq", "--reduce-bucket", "AUTO", "spsim max-seq: --reduce-bucket expects auto or a whole number"},
		{"plan", "--allgather-bucket", "auto", "spsim plan: --allgather-bucket expects a whole number from 1 to 1e+15 (e.g. 5e8), got 'auto' (no auto here"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		o = strcmp(bad[i].cmd, "plan") == 0
			    ? spsim("plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len",
				    "16K", "--global-batch", "64K", "--verify", "none", bad[i].flag, bad[i].value, NULL)
			    : spsim(bad[i].cmd, REF, "--seq-len", "16K", "--zero", "3", bad[i].flag, bad[i].value, NULL);
		expect(o, 2, bad[i].want);
		free(o);
	}
	job = tmp_write(dir, "ag.yaml", "job:\n  seq_len: 16K\n  allgather_bucket: auto\n");
	o = spsim("run", REF, "--job", job, NULL);
	expect(o, 2, "ag.yaml:3:21: 'allgather_bucket' must be a whole number from 1 to 1e+15 (e.g. 5e8), got 'auto' (no auto here");
	free(o);
}
END_TEST

START_TEST(cp_comm_type_flag)
{
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--cp-comm-type", "all_gather", "--engine", "analytic",
			   "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "job"), "strategy_spec")),
			 "ring:comm=all_gather");
	json_decref(j);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--strategy", "basp", "--micro-batch", "2", "--cp-comm-type", "p2p",
		  "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "job: basp:inner=ring,"));
	free(o);
	static const struct {
		const char *a, *b, *c, *d, *want;
	} bad[] = {
		{"--cp-comm-type", "ring", NULL, NULL, "--cp-comm-type expects p2p, all_gather, a2a or a2a+p2p, got 'ring'"},
		{"--strategy", "ulysses", "--cp-comm-type", "p2p", "cp_comm_type p2p is strategy ring, but the strategy given is ulysses"},
		{"--cp-comm-type", "all_gather", "--a2a", "pairwise", "only all-gathers and reduce-scatters"},
		{"--cp-comm-type", "p2p", "--ring-degree", "8", "apply to USP only"},
		{"--cp-comm-type", "a2a", "--ring-degree", "2", "apply to USP only"},
		{"--cp-comm-type", "a2a+p2p", "--ulysses-degree", "3", "valid U x R: {1x8, 2x4, 4x2, 8x1}"},
		{"--cp-comm-type", "a2a+p2p", "--ring-degree", "3", "valid U x R: {1x8, 2x4, 4x2, 8x1}"},
		{"--strategy", "ring:comm=all_gather:split=naive", NULL, NULL, "zigzag split only"},
		{"--strategy", "usp:comm=all_gather", NULL, NULL, "comm= applies only to ring attention"},
		{"--strategy", "ring:comm=ag", NULL, NULL, "expected comm=p2p or comm=all_gather"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o = spsim("run", REF, "--seq-len", "16K", "--engine", "analytic", bad[i].a, bad[i].b, bad[i].c, bad[i].d, NULL);
		expect(o, 2, bad[i].want);
		free(o);
	}
	o = spsim("compare", REF, "--seq-len", "16K", "--cp-comm-type", "p2p", NULL);
	expect(o, 2, "--cp-comm-type names one job's strategy; compare runs the list given by --strategies");
	free(o);
	o = spsim("max-seq", REF, "--strategy", "ring,ulysses", "--cp-comm-type", "p2p", NULL);
	expect(o, 2, "give the list alone");
	free(o);
	/* compare takes the specs; all_gather holds the whole sequence's K and V, so it fits
	 * less than the p2p ring (max-seq), and --cp-comm-type alone names max-seq's row */
	o = spsim("compare", REF, "--seq-len", "16K", "--engine", "analytic", "--strategies",
		  "ulysses,ring,ring:comm=all_gather,usp,basp:inner=ring:comm=all_gather:sp=8", "--micro-batch", "2", NULL);
	expect(o, 0, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "ring:comm=all_gather"));
	free(o);
	/* (with full recompute: without it both stop at 19456 since the ZeRO-3 fetch window
	 * freed memory, a granule apart from each other's bound) */
	o = spsim("max-seq", REF, "--strategy", "ring,ring:comm=all_gather", "--zero", "3", "--recompute", "full",
		  "--format", "json", NULL);
	expect(o, 0, NULL);
	j = json_loads(o->out, 0, NULL);
	json_t *rows = json_object_get(j, "rows");
	ck_assert_int_eq(json_array_size(rows), 2);
	long ring = (long)json_integer_value(json_object_get(json_array_get(rows, 0), "max_seq_len"));
	long ag = (long)json_integer_value(json_object_get(json_array_get(rows, 1), "max_seq_len"));
	ck_assert_int_gt(ag, 0);
	ck_assert_int_lt(ag, ring);
	json_decref(j);
	free(o);
	o = spsim("max-seq", REF, "--cp-comm-type", "all_gather", "--zero", "3", "--recompute", "full", "--format", "json",
		  NULL);
	expect(o, 0, NULL);
	j = json_loads(o->out, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "strategy")), "ring:comm=all_gather");
	ck_assert_int_eq((long)json_integer_value(json_object_get(j, "max_seq_len")), ag);
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(basp_unequal_pads_the_sequence)
{
	/* 16384 tokens over groups of 2 and 3 (B = 3 on 8 GPUs): the groups of 3 pad the
	 * sequence to 16386 (5462 tokens per GPU), say so, and cost it; the run goes on */
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "3", "--strategy", "basp", "--basp-uneven",
			   "unequal", "--engine", "analytic", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "2 groups of 3 GPUs: 5462 tokens (sequence padded by 2 to 16386)"), "%s", o->out);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--micro-batch", "3", "--strategy", "basp", "--basp-uneven", "unequal",
		  "--engine", "analytic", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	json_t *parts = json_object_get(json_object_get(j, "basp_uneven"), "parts");
	ck_assert_int_eq(json_array_size(parts), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(parts, 0), "padding_tokens")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(parts, 1), "padding_tokens")), 2);
	/* throughput counts the real tokens: 3 sequences of 16384 per step */
	ck_assert_close(json_number_value(json_object_get(j, "tokens_per_s")),
			3.0 * 16384 / json_number_value(json_object_get(j, "step_time_s")), 1e-9);
	json_decref(j);
	free(o);
}
END_TEST

START_TEST(optimizer_offload_flags)
{
	char dir[CONFIG_PATH_MAX];
	tmp_dir(dir, sizeof dir);
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--offload-optimizer", "gpu", NULL);
	expect(o, 2, "--offload-optimizer expects none or cpu, got 'gpu'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "0", "--offload-optimizer", "cpu", NULL);
	expect(o, 2, "--offload-optimizer cpu needs ZeRO stage 1, 2 or 3");
	free(o);
	const char *nohost = platform_variant(dir, "nohost.yaml",
					      "  host_link:\n    bandwidth: 52.8GB/s\n    latency: 10us\n    memory: 2TB\n"
					      "    memory_bandwidth: 614.4GB/s\n",
					      "");
	o = spsim("run", "--model", "llama-3.1-8b", "--platform", nohost, "--seq-len", "16K", "--offload-optimizer", "cpu",
		  NULL);
	expect(o, 2, "declares none; add a host_link:");
	free(o);
	const char *nodram = platform_variant(dir, "nodram.yaml", "    memory_bandwidth: 614.4GB/s\n", "");
	o = spsim("run", "--model", "llama-3.1-8b", "--platform", nodram, "--seq-len", "16K", "--offload-optimizer", "cpu",
		  NULL);
	expect(o, 2, "declares no host_link memory_bandwidth");
	free(o);
	/* the host's DRAM bandwidth through the range table, with file:line:column */
	expect_variant_error_at(dir, "baddram.yaml", "memory_bandwidth: 614.4GB/s", "memory_bandwidth: 1GB/s");
	const char *job = tmp_write(dir, "opt.yaml", "job:\n  seq_len: 16K\n  offload_optimizer: nvme\n");
	o = spsim("run", REF, "--job", job, NULL);
	expect(o, 2, "opt.yaml:3:22: 'offload_optimizer' must be one of: none, cpu, got 'nvme'");
	free(o);
	o = spsim("plan", "--model", "llama-3.1-8b", "--platform", "a100-2x4-ib400", "--gpus", "8", "--seq-len", "16K",
		  "--global-batch", "64K", "--verify", "none", "--zero", "0", "--offload-optimizer", "cpu", NULL);
	expect(o, 2, "--offload-optimizer cpu needs ZeRO stage 1, 2 or 3");
	free(o);
	/* a run: the GPU holds no optimizer states, the host does; the job names it */
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--offload-optimizer", "cpu", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "job"), "offload_optimizer")), "cpu");
	ck_assert(json_real_value(json_object_get(json_object_get(j, "memory_bytes"), "optimizer")) == 0);
	json_t *host = json_object_get(j, "host_memory_bytes");
	ck_assert(json_real_value(json_object_get(host, "optimizer_per_gpu")) > 0);
	ck_assert(json_real_value(json_object_get(host, "optimizer_per_gpu")) == json_real_value(json_object_get(host, "per_gpu")));
	ck_assert(json_real_value(json_object_get(json_object_get(j, "breakdown_s"), "host_comm")) > 0);
	json_decref(j);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--zero", "3", "--offload-optimizer", "cpu", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, ", optimizer offloaded to the CPU") && strstr(o->out, "offloaded optimizer states"),
		      "%s", o->out);
	free(o);
}
END_TEST

START_TEST(memory_technique_flags)
{
	char dir[CONFIG_PATH_MAX];
	tmp_dir(dir, sizeof dir);
	/* offload needs full recompute, and a platform with a host link */
	cli_out *o = spsim("run", REF, "--seq-len", "16K", "--offload-activations", NULL);
	expect(o, 2, "exist only with full recompute; add --recompute full");
	free(o);
	const char *nohost = platform_variant(dir, "nohost.yaml",
					      "  host_link:\n    bandwidth: 52.8GB/s\n    latency: 10us\n    memory: 2TB\n"
					      "    memory_bandwidth: 614.4GB/s\n", "");
	o = spsim("run", "--model", "llama-3.1-8b", "--platform", nohost, "--seq-len", "16K", "--recompute", "full",
		  "--offload-activations", NULL);
	expect(o, 2, "declares none; add a host_link:");
	free(o);
	/* the host link's values through the range table, with file:line:column */
	expect_variant_error_at(dir, "badhost.yaml", "bandwidth: 52.8GB/s", "bandwidth: 0GB/s");
	const char *bad = platform_variant(dir, "nomem.yaml", "    memory: 2TB\n", "");
	o = spsim("run", "--model", "llama-3.1-8b", "--platform", bad, "--seq-len", "16K", NULL);
	expect(o, 2, "'memory'");
	free(o);
	/* tile counts: the range table, then the tokens a GPU holds (16K on 8 GPUs: 2048) */
	o = spsim("run", REF, "--seq-len", "16K", "--tile-mlp", "0", NULL);
	expect(o, 2, "--tile-mlp expects an integer from 1 to 1048576, got '0'");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--tile-logits", "two", NULL);
	expect(o, 2, "--tile-logits expects an integer");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--tile-mlp", "4096", NULL);
	expect(o, 2, "--tile-mlp 4096: each GPU holds 2048 tokens per micro-step");
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--recompute", "partial", NULL);
	expect(o, 2, "--recompute expects none, selective or full, got 'partial'");
	free(o);
	const char *job = tmp_write(dir, "tiles.yaml", "job:\n  seq_len: 16K\n  tile_mlp: 0\n");
	o = spsim("run", REF, "--job", job, NULL);
	expect(o, 2, "tiles.yaml:3:");
	free(o);
	/* a run with every technique: the report names the host copies and the host memory */
	o = spsim("run", REF, "--seq-len", "16K", "--recompute", "full", "--offload-activations", "--tile-mlp", "4",
		  "--tile-logits", "4", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	json_t *bd = json_object_get(j, "breakdown_s");
	ck_assert(json_real_value(json_object_get(bd, "host_comm")) > 0);
	ck_assert(json_object_get(bd, "host_comm_exposed") != NULL);
	ck_assert(json_is_true(json_object_get(json_object_get(j, "host_memory_bytes"), "fits")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "job"), "tile_mlp")), 4);
	json_decref(j);
	free(o);
	/* and the table's job line names them */
	o = spsim("run", REF, "--seq-len", "16K", "--recompute", "full", "--offload-activations", "--tile-mlp", "4",
		  "--tile-logits", "2", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "activations offloaded to host, MLP in 4 tiles, logits in 2 tiles\n"), "%s", o->out);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", "--recompute", "selective", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "recompute selective"), "%s", o->out);
	/* the re-run attention and the loss's tensors never coexist: the memory lines say so */
	ck_assert_msg(strstr(o->out, "  not concurrent -"), "%s", o->out);
	free(o);
	o = spsim("run", REF, "--seq-len", "16K", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(!strstr(o->out, "not concurrent"), "%s", o->out); /* no transient, nothing apart */
	free(o);
}
END_TEST

START_TEST(max_seq_technique_table)
{
	/* one row per strategy, one column per technique set; each technique only lengthens
	 * (none <= full <= offload, full <= tiling <= all) */
	cli_out *o = spsim("max-seq", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--strategy", "ulysses,ring",
			   "--techniques", "table", "--format", "json", NULL);
	expect(o, 0, NULL);
	json_t *j = json_loads(o->out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_array_size(json_object_get(j, "techniques")), 6);
	json_t *rows = json_object_get(j, "rows");
	ck_assert_int_eq(json_array_size(rows), 2);
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		json_t *c = json_object_get(r, "max_seq_len");
#define CELL(k) ((long)json_integer_value(json_object_get(c, k)))
		ck_assert_int_gt(CELL("none"), 0);
		ck_assert_int_ge(CELL("full"), CELL("none"));
		ck_assert_int_ge(CELL("offload"), CELL("full"));
		ck_assert_int_ge(CELL("tiling"), CELL("full"));
		ck_assert_int_ge(CELL("all"), CELL("offload"));
		ck_assert_int_ge(CELL("all"), CELL("tiling"));
#undef CELL
	}
	json_decref(j);
	free(o);
	/* the CSV has a line per row and set; a set that cannot apply is n/a, with the reason */
	char dir[CONFIG_PATH_MAX];
	tmp_dir(dir, sizeof dir);
	const char *nohost = platform_variant(dir, "nohost.yaml",
					      "  host_link:\n    bandwidth: 52.8GB/s\n    latency: 10us\n    memory: 2TB\n"
					      "    memory_bandwidth: 614.4GB/s\n", "");
	o = spsim("max-seq", "--model", "llama-3.1-8b", "--platform", nohost, "--techniques", "none,offload", NULL);
	expect(o, 0, NULL);
	ck_assert_msg(strstr(o->out, "n/a") && strstr(o->out, "host_link"), "%s", o->out);
	free(o);
	o = spsim("max-seq", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--techniques", "none,selective+tiling",
		  "--format", "csv", NULL);
	expect(o, 0, NULL);
	int lines = 0;
	for (const char *c = o->out; *c; c++)
		lines += *c == '\n';
	ck_assert_int_eq(lines, 3);
	ck_assert_msg(strstr(o->out, ",selective+tiling,selective,false,16,16,"), "%s", o->out);
	free(o);
	o = spsim("max-seq", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--techniques", "none,fast", NULL);
	expect(o, 2, "unknown technique 'fast'");
	free(o);
	/* each technique set names its recompute: a --recompute beside them would be ignored */
	o = spsim("max-seq", "--model", "llama-3.1-8b", "--platform", "dgx-h100", "--techniques", "table", "--recompute",
		  "full", NULL);
	expect(o, 2, "--recompute does not apply with --techniques");
	free(o);
}
END_TEST

/* Whether help holds flag ("--name") as a whole word: not as the start of a longer flag
 * (--zero in --zero-overlap does not count) nor the end of one. */
static bool help_names(const char *help, const char *flag)
{
	size_t n = strlen(flag);
	for (const char *p = strstr(help, flag); p; p = strstr(p + 1, flag)) {
		char after = p[n];
		bool word_end = !(after == '-' || after == '_' || (after >= 'a' && after <= 'z') ||
				  (after >= '0' && after <= '9'));
		if (word_end && (p == help || p[-1] != '-'))
			return true;
	}
	return false;
}

static bool table_has(const struct option *t, const char *name)
{
	for (int i = 0; t && t[i].name; i++)
		if (strcmp(t[i].name, name) == 0)
			return true;
	return false;
}

/* Every long option a command's getopt_long table accepts is named in its --help, and every
 * --flag its --help names is one the parser accepts (or one of the few other commands' flags
 * the text refers to, listed below). Walks the tables the parsers use (cli_commands), so an
 * option added to a parser without a help line fails here. --help itself is exempt from the
 * first direction: every command takes it (spsim --help says so). */
START_TEST(every_parsed_option_is_in_its_help)
{
	static const struct {
		const char *command, *flag;
	} prose[] = {
		{"calibrate", "calibration"}, /* "writes a calibration YAML for --calibration" (run's flag) */
		{"sweep", "strategy"},        /* "strategy takes run's --strategy spellings" */
	};
	int checked = 0;
	for (const cli_command *c = cli_commands; c->name; c++) {
		if (!c->options)
			continue;
		cli_out *o = spsim(c->name, "--help", NULL);
		expect(o, 0, NULL);
		const struct option *tables[2] = {c->job_options ? cli_job_options : NULL, c->options};
		for (int t = 0; t < 2; t++)
			for (int i = 0; tables[t] && tables[t][i].name; i++) {
				char flag[64];
				snprintf(flag, sizeof flag, "--%s", tables[t][i].name);
				if (strcmp(flag, "--help") == 0)
					continue;
				ck_assert_msg(help_names(o->out, flag), "spsim %s accepts %s but its --help does not name it",
					      c->name, flag);
				checked++;
			}
		for (const char *p = strstr(o->out, "--"); p; p = strstr(p + 2, "--")) {
			char name[64];
			size_t n = 0;
			while (n + 1 < sizeof name && (p[2 + n] == '-' || (p[2 + n] >= 'a' && p[2 + n] <= 'z') ||
						       (p[2 + n] >= '0' && p[2 + n] <= '9')))
				name[n] = p[2 + n], n++;
			name[n] = '\0';
			if (n == 0 || (p > o->out && p[-1] == '-'))
				continue;
			bool ok = strcmp(name, "help") == 0 || table_has(c->options, name) ||
				  (c->job_options && table_has(cli_job_options, name));
			for (size_t k = 0; !ok && k < sizeof prose / sizeof prose[0]; k++)
				ok = strcmp(prose[k].command, c->name) == 0 && strcmp(prose[k].flag, name) == 0;
			ck_assert_msg(ok, "spsim %s --help names --%s, which its parser does not accept", c->name, name);
			p += n;
		}
		free(o);
	}
	ck_assert_int_gt(checked, 100); /* the job options alone are 40, in three commands */
}
END_TEST

/* Every command refuses an unknown option and an option missing its value with the same
 * two sentences (cli_getopt_refused), naming the command. */
START_TEST(every_command_refuses_alike)
{
	for (const cli_command *c = cli_commands; c->name; c++) {
		char want[160];
		cli_out *o = spsim(c->name, "--no-such-flag", NULL);
		snprintf(want, sizeof want, "spsim %s: unknown option '--no-such-flag' (see spsim %s --help)", c->name,
			 c->name);
		expect(o, 2, want);
		free(o);
		const char *valued = NULL;
		const struct option *t = c->job_options ? cli_job_options : c->options;
		for (int i = 0; t[i].name && !valued; i++)
			if (t[i].has_arg == required_argument)
				valued = t[i].name;
		ck_assert_msg(valued != NULL, "spsim %s takes no option with a value", c->name);
		char flag[64];
		snprintf(flag, sizeof flag, "--%s", valued);
		o = spsim(c->name, flag, NULL);
		snprintf(want, sizeof want, "spsim %s: option '%s' needs a value", c->name, flag);
		expect(o, 2, want);
		free(o);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, usage_and_help);
	tcase_add_test(tc, help_example_runs_and_fits);
	tcase_add_test(tc, every_parsed_option_is_in_its_help);
	tcase_add_test(tc, every_command_refuses_alike);
	tcase_add_test(tc, bad_flags_exit_2_with_a_sentence);
	tcase_add_test(tc, impl_reserve_and_max_position);
	tcase_add_test(tc, yaml_errors_point_at_file_line_column);
	tcase_add_test(tc, run_json_has_the_documented_keys);
	tcase_add_test(tc, compare_reports_speedups_over_the_first);
	tcase_add_test(tc, csv_rows_match_the_header);
	tcase_add_test(tc, csv_quotes_names_from_user_files);
	tcase_add_test(tc, a_flag_given_twice_is_refused);
	tcase_add_test(tc, job_file_and_flag_override);
	tcase_add_test(tc, calibration_moves_the_prediction);
	tcase_add_test(tc, calibration_from_another_gpu_is_refused);
	tcase_add_test(tc, trace_written_only_on_success);
	tcase_add_test(tc, outputs_leave_other_files_alone);
	tcase_add_test(tc, listing_commands);
	tcase_add_test(tc, max_seq_reports_a_fitting_length);
	tcase_add_test(tc, basp_uneven_reports_its_parts);
	tcase_add_test(tc, basp_groups_count_the_ranks_of_one_sequence);
	tcase_add_test(tc, ignored_inputs_are_said);
	tcase_add_test(tc, files_and_directories);
	tcase_add_test(tc, job_file_takes_token_units_and_relative_paths);
	tcase_add_test(tc, one_vocabulary_across_commands);
	tcase_add_test(tc, max_seq_takes_lists_and_says_what_blocks);
	tcase_add_test(tc, max_seq_says_which_time_settings_it_ignores);
	tcase_add_test(tc, max_seq_is_not_held_to_an_engine);
	tcase_add_test(tc, simgrid_node_size_is_refused_up_front);
	tcase_add_test(tc, max_seq_says_when_its_search_stopped);
	tcase_add_test(tc, compare_refuses_a_repeated_strategy);
	tcase_add_test(tc, memory_technique_flags);
	tcase_add_test(tc, optimizer_offload_flags);
	tcase_add_test(tc, max_seq_technique_table);
	tcase_add_test(tc, plan_says_why_nothing_was_searched);
	tcase_add_test(tc, plan_refuses_a_value_listed_twice);
	tcase_add_test(tc, plan_says_which_rerun_settings_it_cannot_use);
	tcase_add_test(tc, no_speedup_for_what_does_not_fit);
	tcase_add_test(tc, plan_progress_on_request_only);
	tcase_add_test(tc, simgrid_run_progress_on_request_only);
	tcase_add_test(tc, shipped_files_cite_sources_in_the_repository);
	tcase_add_test(tc, basp_unequal_pads_the_sequence);
	tcase_add_test(tc, cp_comm_type_flag);
	tcase_add_test(tc, auto_buckets_across_commands);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
