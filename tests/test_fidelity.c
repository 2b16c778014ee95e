/* fidelity: the published-measurement corpus (bench/corpus/) loads, every case is valid
 * and predictable, bad corpus files fail with file:line:col, and the runner's arithmetic
 * (kernel FLOP counts, signed error, geometric-mean summary) is right by hand. */
#include "fidelity/fidelity.h"

#include <check.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/yamltree.h"
#include "engine/engine.h"
#include "engine/nccl.h"
#include "nccltests/nccltests.h"
#include "testutil.h"

static void corpus_dir(char *buf, size_t len)
{
	const char *root = getenv("SPSIM_DATA_DIR");
	ck_assert_ptr_nonnull(root);
	snprintf(buf, len, "%s/bench/corpus", root);
}

/* ------------------------------------------------------- shipped corpus --- */

START_TEST(shipped_corpus_loads_and_is_large_enough)
{
	char dir[CONFIG_PATH_MAX];
	corpus_dir(dir, sizeof dir);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	/* The corpus promise: at least 30 cases from at least 8 independent sources. */
	ck_assert_int_ge(c.n, 30);
	ck_assert_int_ge(c.n_sources, 8);
	fidelity_corpus_free(&c);
}
END_TEST

START_TEST(every_shipped_case_is_valid_and_predictable)
{
	char dir[CONFIG_PATH_MAX];
	corpus_dir(dir, sizeof dir);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	for (int i = 0; i < c.n; i++) {
		const fidelity_case *k = &c.cases[i];
		ck_assert_msg(k->published > 0 && isfinite(k->published), "%s: published %g", k->id, k->published);
		ck_assert_msg(strlen(k->citation) > 10, "%s: citation too short to locate the number", k->id);
		for (int j = 0; j < i; j++)
			ck_assert_msg(strcmp(k->id, c.cases[j].id) != 0, "id %s twice", k->id);
		double p = 0;
		ck_assert_msg(fidelity_predict(k, "analytic", &p, &e), "%s: %s", k->id, e.msg);
		ck_assert_msg(p > 0 && isfinite(p), "%s: prediction %g", k->id, p);
	}
	fidelity_corpus_free(&c);
}
END_TEST

/* What the corpus must cover: every kind; the four nccl-tests collectives; A100 and H100;
 * and all-to-all (the collective of Ulysses and BASP) on both GPUs, inside a node and across
 * nodes. */
START_TEST(shipped_corpus_covers_kinds_collectives_and_gpus)
{
	char dir[CONFIG_PATH_MAX];
	corpus_dir(dir, sizeof dir);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	int kinds[FID_KIND_COUNT] = {0}, colls[WL_COLL_COUNT] = {0}, a100 = 0, h100 = 0, multinode = 0;
	int a2a_a100 = 0, a2a_h100 = 0, a2a_intra = 0, a2a_multinode = 0;
	for (int i = 0; i < c.n; i++) {
		const fidelity_case *k = &c.cases[i];
		kinds[k->kind]++;
		config_platform p;
		ck_assert_msg(fidelity_case_platform(k, &p, &e), "%s: %s", k->id, e.msg);
		a100 += strstr(p.gpu.name, "A100") != NULL;
		h100 += strstr(p.gpu.name, "H100") != NULL;
		if (k->kind == FID_COLLECTIVE) {
			colls[k->coll]++;
			multinode += k->gpus > p.gpus_per_node;
			if (k->coll == WL_COLL_ALLTOALL) {
				a2a_a100 += strstr(p.gpu.name, "A100") != NULL;
				a2a_h100 += strstr(p.gpu.name, "H100") != NULL;
				a2a_intra += k->gpus <= p.gpus_per_node;
				a2a_multinode += k->gpus > p.gpus_per_node;
			}
		}
	}
	for (int i = 0; i < FID_KIND_COUNT; i++)
		ck_assert_msg(kinds[i] > 0, "no case of kind %s", fidelity_kind_names[i]);
	/* memory per GPU: cases exist, and `--case '*-mem'` selects exactly them (README's row) */
	int memory = 0;
	for (int i = 0; i < c.n; i++) {
		const fidelity_case *k = &c.cases[i];
		bool mem_id = fnmatch("*-mem", k->id, 0) == 0;
		ck_assert_msg(mem_id == fidelity_metric_is_memory(k->metric), "%s: a memory case's id ends in -mem, no other's",
			      k->id);
		memory += mem_id;
	}
	ck_assert_int_gt(memory, 0);
	ck_assert_int_gt(colls[WL_COLL_ALLREDUCE], 0);
	ck_assert_int_gt(colls[WL_COLL_ALLGATHER], 0);
	ck_assert_int_gt(colls[WL_COLL_REDUCESCATTER], 0);
	ck_assert_int_gt(colls[WL_COLL_ALLTOALL], 0);
	ck_assert_int_gt(multinode, 0);
	ck_assert_int_gt(a2a_a100, 0);
	ck_assert_int_gt(a2a_h100, 0);
	ck_assert_int_gt(a2a_intra, 0);
	ck_assert_int_gt(a2a_multinode, 0);
	ck_assert_int_gt(a100, 0);
	ck_assert_int_gt(h100, 0);
	fidelity_corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------- bad corpora --- */

/* A temporary corpus directory holding one source file with `text`. */
static void write_source(char *dir, size_t dlen, char *path, size_t plen, const char *text)
{
	snprintf(dir, dlen, "/tmp/spsim-fidelity-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, plen, "%s/src.yaml", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Loads `text` as a corpus; it must fail with "path:line:col: " and contain `what`. */
static void expect_error(const char *text, int line, int col, const char *what)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path, text);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(!fidelity_load_dir(dir, &c, &e), "loaded a bad corpus:\n%s", text);
	char where[192];
	snprintf(where, sizeof where, "%s:%d:%d: ", path, line, col);
	ck_assert_msg(strncmp(e.msg, where, strlen(where)) == 0, "error '%s' does not start with '%s'", e.msg, where);
	ck_assert_msg(strstr(e.msg, what), "error '%s' does not say '%s'", e.msg, what);
	ck_assert_int_eq(c.n, 0);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}

#define HEAD                                                                                                   \
	"source:\n"                                                                                            \
	"  id: s\n"                                                                                            \
	"  title: t\n"                                                                                         \
	"  url: https://example.org\n"                                                                         \
	"  hardware: h\n"                                                                                      \
	"  cases:\n"
/* line 7 is the first case's "- id:" line */
#define GEMM_CASE(id)                                                                                          \
	"    - id: " id "\n"                                                                                   \
	"      kind: gemm\n"                                                                                   \
	"      citation: a quoted table row\n"                                                                 \
	"      platform: dgx-a100\n"                                                                           \
	"      gemm: {m: 1024, n: 1024, k: 1024}\n"                                                            \
	"      published: {value: 100, unit: TFLOP/s}\n"

START_TEST(a_good_minimal_source_loads)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path, HEAD GEMM_CASE("g1"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 1);
	ck_assert_int_eq(c.n_sources, 1);
	ck_assert_int_eq(c.cases[0].line, 7);
	ck_assert_int_eq(c.cases[0].col, 7);
	ck_assert(c.cases[0].kind == FID_GEMM && c.cases[0].metric == FID_TFLOPS);
	ck_assert_double_eq(c.cases[0].kern.m, 1024);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(bad_files_fail_with_location)
{
	/* unknown key in a case: at the key (line 13, column 7) */
	expect_error(HEAD GEMM_CASE("g1") "      colour: red\n", 13, 7, "unknown key 'colour'");
	/* a unit that does not fit the kind: at the unit's value */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1, unit: GB/s}\n",
		     12, 35, "unit 'GB/s' does not fit a case of kind 'gemm'");
	/* a configuration mapping of another kind */
	expect_error(HEAD GEMM_CASE("g1") "      step: {model: llama-3.1-8b}\n", 13, 13,
		     "'step' does not belong to a case of kind 'gemm'");
	/* an unknown platform: at the platform's value */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: no-such-box\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1, unit: TFLOP/s}\n",
		     10, 17, "platform 'no-such-box' does not load");
	/* attention K/V heads that do not group the query heads: at kv_heads' value */
	expect_error(HEAD "    - id: a1\n      kind: attention\n      citation: c\n      platform: dgx-a100\n"
			  "      attention: {batch: 1, seq_len: 2048, heads: 32, kv_heads: 5, head_dim: 128, causal: true, pass: fwd, kernel: flash-attn-2}\n"
			  "      published: {value: 1, unit: TFLOP/s}\n",
		     11, 65, "'kv_heads' (5) does not divide 'heads' (32)");
	/* cuDNN on A100 has no curve (docs/model.md "Compute"): refused at the kernel's value
	 * rather than timed at a flat default rate */
	expect_error(HEAD "    - id: a1\n      kind: attention\n      citation: c\n      platform: dgx-a100\n"
			  "      attention: {batch: 1, seq_len: 2048, heads: 64, kv_heads: 8, head_dim: 128, causal: true, pass: fwd, kernel: cudnn}\n"
			  "      published: {value: 1, unit: TFLOP/s}\n",
		     11, 116, "'kernel' cudnn has no published efficiency curve");
	/* the same id twice: at the second id */
	expect_error(HEAD GEMM_CASE("g1") GEMM_CASE("g1"), 13, 11, "case id 'g1' is already used");
	/* a non-positive published value */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 0, unit: TFLOP/s}\n",
		     12, 26, "'value' must be a number > 0");
	/* a published value no measurement can have: its error would print as inf (1e308) or as a
	 * 300-digit percentage (1e-300); at the value, naming the unit's range */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1e308, unit: TFLOP/s}\n",
		     12, 26, "'value' 1e+308 is out of range for unit 'TFLOP/s', expected a number from 0.001 to 1e+06");
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: 1M}\n      published: {value: 1e-300, unit: GB/s}\n",
		     12, 26, "out of range for unit 'GB/s'");
	/* a utilisation above the whole peak */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 101, unit: MFU%}\n",
		     12, 26, "expected a number from 1e-06 to 100");
	/* attention shapes ranged as a model's and a job's (sp_attention's keys already were):
	 * an 11-digit sequence, a head size of 1e8 */
	expect_error(HEAD "    - id: a1\n      kind: attention\n      citation: c\n      platform: dgx-h100\n"
			  "      attention: {batch: 1, seq_len: 99999999999, heads: 8, head_dim: 128, causal: true, pass: fwd, kernel: flash-attn-2}\n"
			  "      published: {value: 1, unit: TFLOP/s}\n",
		     11, 38, "'seq_len' must be a token count from 1 to 4294967296");
	expect_error(HEAD "    - id: a1\n      kind: attention\n      citation: c\n      platform: dgx-h100\n"
			  "      attention: {batch: 1, seq_len: 1024, heads: 8, head_dim: 99999999, causal: true, pass: fwd, kernel: flash-attn-2}\n"
			  "      published: {value: 1, unit: TFLOP/s}\n",
		     11, 64, "'head_dim' must be an integer from 1 to 8192");
	/* a GEMM dimension beyond cuBLAS's int m, n, k */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 4294967296, n: 1, k: 1}\n      published: {value: 1, unit: TFLOP/s}\n",
		     11, 17, "'m' must be a positive integer up to 2147483647, got '4294967296'");
	/* no url nor arxiv: at the source mapping */
	expect_error("source:\n  id: s\n  title: t\n  hardware: h\n  cases:\n" GEMM_CASE("g1"), 2, 3,
		     "neither 'url' nor 'arxiv'");
	/* an empty case list */
	expect_error(HEAD "    []\n", 7, 5, "non-empty sequence of cases");
	/* a collective larger than the platform */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 16, size: 1M}\n      published: {value: 1, unit: GB/s}\n",
		     11, 19, "16");
	/* a malformed size */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: lots}\n      published: {value: 1, unit: GB/s}\n",
		     11, 51, "'size' must be a positive byte count");
	/* an unknown collective */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_sum, gpus: 8, size: 1M}\n      published: {value: 1, unit: us}\n",
		     11, 24, "unknown collective 'all_sum'");
	/* a protocol NCCL does not have: at the value */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: 1M, proto: LL256}\n      published: {value: 1, unit: GB/s}\n",
		     11, 62, "'proto' must be LL, LL128 or Simple (NCCL_PROTO), got 'LL256'");
	/* an algorithm neither NCCL nor spsim has: at the value */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: 1M, alg: collnet}\n      published: {value: 1, unit: GB/s}\n",
		     11, 60, "algorithm 'collnet' does not apply to all_reduce, expected one of ring, tree, nvls (NCCL_ALGO)");
	/* an algorithm NCCL cannot run there: NVLS on A100's NVSwitch (no NVLink SHARP) */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: 1M, alg: nvls}\n      published: {value: 1, unit: GB/s}\n",
		     11, 60, "--alg nvls needs a platform declaring nccl: {nvls: true}");
	/* a tuner release spsim has no tables for: at the value (the column of 2.24) */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: all_reduce, gpus: 8, size: 1M, nccl_version: 2.24}\n      published: {value: 1, unit: GB/s}\n",
		     11, 69, "'nccl_version' must be one of: 2.19, 2.28, got");
	/* a process layout spsim does not know: at the value */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: alltoall, gpus: 8, size: 1M, processes: per_rank}\n      published: {value: 1, unit: GB/s}\n",
		     11, 64, "'processes' must be one of: per_gpu, per_node, got");
	/* a protocol NCCL cannot run there: LL128 on the p2p path of an all-to-all */
	expect_error(HEAD "    - id: c1\n      kind: collective\n      citation: c\n      platform: dgx-a100\n"
			  "      collective: {op: alltoall, gpus: 8, size: 1M, proto: LL128}\n      published: {value: 1, unit: GB/s}\n",
		     11, 60, "NCCL's p2p path (all-to-all, send/recv) runs LL or Simple");
	/* an attention pass spsim does not know */
	expect_error(HEAD "    - id: a1\n      kind: attention\n      citation: c\n      platform: dgx-h100\n"
			  "      attention: {batch: 1, seq_len: 1024, heads: 8, head_dim: 128, causal: false, pass: both, kernel: flash-attn-2}\n"
			  "      published: {value: 1, unit: TFLOP/s}\n",
		     11, 90, "'pass'");
	/* a job the model cannot run: 32 heads do not split over an SP group of 3 */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 3, sp: 3, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 13, "the job does not fit model 'llama-3.1-8b'");
	/* an attention kernel family spsim does not know: at the value */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096, attention_kernel: xformers}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 100, "'attention_kernel' must be one of: flash-attn-2, flash-attn-3, cudnn, flash-attn-triton");
	/* a family the platform's GPU cannot run: the job check's sentence, at the step */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096, attention_kernel: flash-attn-3}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 13, "flash-attn-3 runs only on hopper GPUs");
	/* a dense-attention MFU is a step unit, not a kernel one */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1, unit: MFU-dense%}\n",
		     12, 35, "expected one of: TFLOP/s");
	/* not YAML at all: the parser's location */
	expect_error("source: [unclosed\n", 2, 1, "");
}
END_TEST

/* Two files claiming the same source: the second one's id is the error. */
START_TEST(a_source_id_used_twice_is_an_error)
{
	char dir[64], path[128], path2[160];
	write_source(dir, sizeof dir, path, sizeof path, HEAD GEMM_CASE("g1"));
	snprintf(path2, sizeof path2, "%s/zz.yaml", dir); /* loaded after src.yaml */
	FILE *f = fopen(path2, "w");
	ck_assert_ptr_nonnull(f);
	fputs(HEAD GEMM_CASE("g2"), f);
	fclose(f);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert(!fidelity_load_dir(dir, &c, &e));
	char where[512];
	snprintf(where, sizeof where, "%s:2:7: source id 's' is already used by %s", path2, path);
	ck_assert_msg(strncmp(e.msg, where, strlen(where)) == 0, "error '%s', want '%s...'", e.msg, where);
	fidelity_corpus_free(&c);
	unlink(path2);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(missing_corpus_directory_is_an_error)
{
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert(!fidelity_load_dir("/nonexistent/corpus", &c, &e));
	ck_assert_msg(strstr(e.msg, "/nonexistent/corpus: cannot open"), "%s", e.msg);
	fidelity_corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------- the runner --- */

/* build/bench/fidelity next to build/src/spsim (SPSIM_EXE); `meson test` builds both. */
static void runner_path(char *buf, size_t len)
{
	const char *exe = getenv("SPSIM_EXE");
	ck_assert_ptr_nonnull(exe);
	const char *slash = strrchr(exe, '/');
	ck_assert_ptr_nonnull(slash);
	snprintf(buf, len, "%.*s/../bench/fidelity", (int)(slash - exe), exe);
	ck_assert_msg(access(buf, X_OK) == 0, "%s: not built", buf);
}

/* Runs the runner with args; returns its exit status and its last output line. */
static int run_runner(const char *args, char *last, size_t len)
{
	char exe[CONFIG_PATH_MAX], cmd[2 * CONFIG_PATH_MAX];
	runner_path(exe, sizeof exe);
	snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", exe, args);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	char line[1024];
	last[0] = '\0';
	while (fgets(line, sizeof line, p))
		snprintf(last, len, "%s", line);
	int st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(runner_reports_and_exits_zero)
{
	char dir[CONFIG_PATH_MAX], args[CONFIG_PATH_MAX + 16], last[1024];
	corpus_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--corpus %s", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 0);
	int n = 0;
	double g = -1, m = -1;
	ck_assert_msg(sscanf(last, "cases %d geomean_abs_error_pct %lf max_abs_error_pct %lf", &n, &g, &m) == 3,
		      "last line '%s'", last);
	ck_assert_int_ge(n, 30);
	ck_assert(g >= 0 && m >= 0);
}
END_TEST

/* --kind and --case select cases; the counts come from the loader itself (an independent
 * count of the same corpus), and the JSON carries the same rows and summary as the text. */
START_TEST(runner_selects_by_kind_and_id_and_speaks_json)
{
	char dir[CONFIG_PATH_MAX], args[CONFIG_PATH_MAX + 96], last[1024];
	corpus_dir(dir, sizeof dir);
	fidelity_corpus c = {0};
	config_error e;
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	int gemm = 0, nd = 0, nd_gemm = 0;
	for (int i = 0; i < c.n; i++) {
		bool is_gemm = c.cases[i].kind == FID_GEMM, is_nd = fnmatch("nd-*", c.cases[i].id, 0) == 0;
		gemm += is_gemm, nd += is_nd, nd_gemm += is_gemm && is_nd;
	}
	ck_assert(gemm > 0 && nd > nd_gemm && nd_gemm > 0);
	int n = -1;
	snprintf(args, sizeof args, "--corpus %s --kind gemm", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 0);
	ck_assert(sscanf(last, "cases %d", &n) == 1);
	ck_assert_int_eq(n, gemm);
	snprintf(args, sizeof args, "--corpus %s --case 'nd-*'", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 0);
	ck_assert(sscanf(last, "cases %d", &n) == 1);
	ck_assert_int_eq(n, nd);
	snprintf(args, sizeof args, "--corpus %s --case 'nd-*' --kind gemm,step", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 0);
	ck_assert(sscanf(last, "cases %d", &n) == 1);
	ck_assert_int_ge(n, nd_gemm);
	/* JSON: the whole output is one object; its summary counts its rows */
	char exe[CONFIG_PATH_MAX], cmd[2 * CONFIG_PATH_MAX + 64];
	runner_path(exe, sizeof exe);
	snprintf(cmd, sizeof cmd, "%s --corpus %s --kind gemm --format json 2>/dev/null", exe, dir);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	json_error_t je;
	json_t *o = json_loadf(p, 0, &je);
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_msg(o, "not JSON: %s", je.text);
	json_t *rows = json_object_get(o, "cases");
	ck_assert_int_eq((int)json_array_size(rows), gemm);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "summary"), "cases")), gemm);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "kind")), "gemm");
	ck_assert_int_eq((int)json_array_size(json_object_get(o, "kinds")), 1);
	json_decref(o);
	/* a selection of nothing, an unknown or repeated kind, a flag twice: exit 2 */
	snprintf(args, sizeof args, "--corpus %s --case 'no-such-case-*'", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--kind colective", last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--kind gemm,gemm", last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--kind gemm --kind step", last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--format xml", last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--case ''", last, sizeof last), 2);
	fidelity_corpus_free(&c);
}
END_TEST

START_TEST(runner_exits_two_on_a_malformed_corpus)
{
	char dir[64], path[128], args[128], last[1024];
	write_source(dir, sizeof dir, path, sizeof path, HEAD GEMM_CASE("g1") "      colour: red\n");
	snprintf(args, sizeof args, "--corpus %s", dir);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--engine nonsense", last, sizeof last), 2);
	/* a flag without its value, and one given twice (the second replaced the first) */
	ck_assert_int_eq(run_runner("--corpus", last, sizeof last), 2);
	ck_assert_int_eq(run_runner("--engine analytic --engine simgrid", last, sizeof last), 2);
	ck_assert_int_eq(run_runner(args, last, sizeof last), 2);
	char twice[256];
	snprintf(twice, sizeof twice, "--corpus %s --corpus %s", dir, dir);
	ck_assert_int_eq(run_runner(twice, last, sizeof last), 2);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* ----------------------------------------------------------- arithmetic --- */

START_TEST(signed_error_percent)
{
	ck_assert_double_eq_tol(fidelity_err_pct(110, 100), 10.0, 1e-12);
	ck_assert_double_eq_tol(fidelity_err_pct(90, 100), -10.0, 1e-12);
	ck_assert_double_eq_tol(fidelity_err_pct(100, 100), 0.0, 1e-12);
	ck_assert_double_eq_tol(fidelity_err_pct(300, 100), 200.0, 1e-12);
}
END_TEST

START_TEST(summary_geomean_and_max)
{
	/* (110, 100), (100, 100): mean |ln ratio| = ln(1.1) / 2, so the geometric-mean error
	 * factor is sqrt(1.1) = 1.0488088: 4.88088 %; the largest error is 10 %. */
	double p1[] = {110, 100}, q1[] = {100, 100};
	fidelity_summary s = fidelity_summarize(p1, q1, 2);
	ck_assert_int_eq(s.n, 2);
	ck_assert_close(s.geomean_abs_error_pct, 100 * (sqrt(1.1) - 1), 1e-12);
	ck_assert_close(s.max_abs_error_pct, 10.0, 1e-12);
	/* Twice too high and twice too low weigh the same in the geomean (factor 2: 100 %),
	 * while the signed errors are +100 % and -50 %: max 100 %. */
	double p2[] = {200, 50}, q2[] = {100, 100};
	s = fidelity_summarize(p2, q2, 2);
	ck_assert_close(s.geomean_abs_error_pct, 100.0, 1e-12);
	ck_assert_close(s.max_abs_error_pct, 100.0, 1e-12);
	/* Exact predictions: zero error. */
	s = fidelity_summarize(q2, q2, 2);
	ck_assert_double_eq_tol(s.geomean_abs_error_pct, 0.0, 1e-12);
	ck_assert_double_eq_tol(s.max_abs_error_pct, 0.0, 1e-12);
}
END_TEST

/* Kernel FLOP counts (the benchmarks' conventions) and the roofline they meet, on the
 * hand platform: 100 TFLOP/s, 1000 GB/s HBM, all efficiencies 1. */
START_TEST(kernel_flops_and_time_by_hand)
{
	config_platform p = tu_platform(1, 8, 1);
	fidelity_kernel g = {.kernel = WL_KERNEL_GEMM, .m = 1024, .n = 1024, .k = 1024};
	double flops = 0;
	/* 2 mnk = 2^31 FLOPs: 21.47 us of compute; 2 (3 x 2^20) bytes = 6.3 us of HBM. */
	double t = fidelity_kernel_time(&p, &g, &flops);
	ck_assert_close(flops, 2147483648.0, 1e-15);
	ck_assert_close(t, 2147483648.0 / 100e12, 1e-12);
	/* A 16^3 GEMM moves 2 (3 x 256) = 1536 bytes (1.536 ns at 1000 GB/s) but computes a
	 * whole 128x128 output tile (tile quantization, engine/compute.c): 2·128·128·16 FLOPs
	 * of work at 100 TFLOP/s = 5.24288 ns, which sets the time. */
	fidelity_kernel small = {.kernel = WL_KERNEL_GEMM, .m = 16, .n = 16, .k = 16};
	ck_assert_close(fidelity_kernel_time(&p, &small, &flops), 2.0 * 128 * 128 * 16 / 100e12, 1e-12);
	/* Attention b=1, s=1024, h=2, d=64: forward 4 b s^2 h d = 536870912; causal halves
	 * it; backward 2.5x, forward + backward 3.5x. */
	fidelity_kernel a = {.kernel = WL_KERNEL_ATTENTION, .batch = 1, .seq_len = 1024, .heads = 2, .head_dim = 64,
			     .causal = false, .pass = FID_PASS_FWD};
	fidelity_kernel_time(&p, &a, &flops);
	ck_assert_close(flops, 536870912.0, 1e-15);
	a.causal = true;
	fidelity_kernel_time(&p, &a, &flops);
	ck_assert_close(flops, 268435456.0, 1e-15);
	a.pass = FID_PASS_BWD;
	fidelity_kernel_time(&p, &a, &flops);
	ck_assert_close(flops, 2.5 * 268435456.0, 1e-15);
	a.pass = FID_PASS_FWD_BWD;
	t = fidelity_kernel_time(&p, &a, &flops);
	ck_assert_close(flops, 3.5 * 268435456.0, 1e-15);
	ck_assert_close(t, 3.5 * 268435456.0 / 100e12, 1e-12); /* compute bound */
	/* A short memory-bound forward, s=16, h=8, d=64: 4·256·8·64 = 524288 FLOPs (5.2 ns)
	 * against bf16 Q, K, V, O of 2·16·64 bytes per head each: 4·2048·8 = 65536 bytes,
	 * 65.5 ns at 1000 GB/s. Grouped-query K/V (kv_heads 2) keep the FLOPs and read K and
	 * V for 2 heads: 2·2048·(8 + 2) = 40960 bytes; the backward moves twice that. */
	fidelity_kernel q = {.kernel = WL_KERNEL_ATTENTION, .batch = 1, .seq_len = 16, .heads = 8, .head_dim = 64,
			     .causal = false, .pass = FID_PASS_FWD};
	ck_assert_close(fidelity_kernel_time(&p, &q, &flops), 65536.0 / 1e12, 1e-12);
	ck_assert_close(flops, 524288.0, 1e-15);
	q.kv_heads = 8; /* as many K/V heads as query heads: the same op */
	ck_assert_close(fidelity_kernel_time(&p, &q, &flops), 65536.0 / 1e12, 1e-12);
	q.kv_heads = 2;
	ck_assert_close(fidelity_kernel_time(&p, &q, &flops), 40960.0 / 1e12, 1e-12);
	ck_assert_close(flops, 524288.0, 1e-15);
	q.pass = FID_PASS_BWD;
	ck_assert_close(fidelity_kernel_time(&p, &q, &flops), 81920.0 / 1e12, 1e-12);
}
END_TEST

/* A kernel prediction is the FLOP count over the modelled time: with efficiency e the
 * rate of a compute-bound kernel is e x peak (today's single-number model). */
START_TEST(kernel_prediction_is_flops_over_time)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path, HEAD GEMM_CASE("g1"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	config_platform p;
	ck_assert(fidelity_case_platform(&c.cases[0], &p, &e));
	double flops, t = fidelity_kernel_time(&p, &c.cases[0].kern, &flops), pred = 0;
	ck_assert(fidelity_predict(&c.cases[0], "analytic", &pred, &e));
	ck_assert_close(pred, flops / t / 1e12, 1e-12);
	ck_assert(pred <= p.gpu.peak_flops / 1e12 * (1 + 1e-12));
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}
END_TEST

#define COLL_CASE(id, extra)                                                                                   \
	"    - id: " id "\n"                                                                                   \
	"      kind: collective\n"                                                                             \
	"      citation: c\n"                                                                                  \
	"      platform: dgx-a100\n"                                                                           \
	"      collective: {op: all_reduce, gpus: 8, size: 8M" extra "}\n"                                     \
	"      published: {value: 100, unit: GB/s}\n"

/* A collective case's alg and proto are what the run forced (NCCL_ALGO, NCCL_PROTO), read
 * as `spsim collective --alg/--proto` read them: the case predicts what the platform with
 * force_algo/force_proto set predicts, and without the keys NCCL's tuner chooses. At
 * 8 MiB on 8 A100s the tuner runs ring/LL128 (docs/fidelity.md, mid sizes: LL128 from about
 * 1.2 to 23.4 MB), the pair of least modelled time, so forcing Simple, LL or the tree can
 * only lower the busbw; `alg: ring` with `proto: LL128` is the tuner's own pair. */
START_TEST(collective_alg_and_proto_are_the_forced_ones)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path,
		     HEAD COLL_CASE("tuner", "") COLL_CASE("simple", ", proto: Simple") COLL_CASE("ll", ", proto: LL")
			     COLL_CASE("tree", ", alg: tree") COLL_CASE("ring-ll128", ", alg: ring, proto: LL128"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 5);
	ck_assert_int_eq(c.cases[0].force_proto, 0);
	ck_assert_int_eq(c.cases[0].force_algo, 0);
	ck_assert_int_eq(c.cases[1].force_proto, NCCL_PROTO_SIMPLE + 1);
	ck_assert_int_eq(c.cases[2].force_proto, NCCL_PROTO_LL + 1);
	ck_assert_int_eq(c.cases[3].force_algo, NCCL_ALGO_TREE + 1);
	ck_assert(c.cases[3].alg == WL_ALG_RING); /* spsim's op stays the ring family's */
	ck_assert_int_eq(c.cases[4].force_algo, NCCL_ALGO_RING + 1);
	double bus[5];
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fidelity_predict(&c.cases[i], "analytic", &bus[i], &e), "%s", e.msg);
	/* the same time as the platform forced by hand */
	config_platform p;
	ck_assert(fidelity_case_platform(&c.cases[1], &p, &e));
	p.nccl.force_proto = NCCL_PROTO_SIMPLE + 1;
	nccltests_setup s = {.platform = &p, .coll = WL_COLL_ALLREDUCE, .alg = WL_ALG_RING, .gpus = 8,
			     .group_size = 8, .placement = ENGINE_PLACE_CONTIGUOUS};
	double t;
	ck_assert_msg(nccltests_predict_time(&s, 8388608, &t, &e), "%s", e.msg);
	nccltests_result r;
	nccltests_result_make(WL_COLL_ALLREDUCE, 8, 4, 8388608, t, &r);
	ck_assert_close(bus[1], r.busbw, 1e-12);
	/* the tuner's pair is the fastest; the forced ones differ from it */
	ck_assert_double_gt(bus[0], bus[1]);
	ck_assert_double_gt(bus[0], bus[2]);
	ck_assert_double_gt(bus[0], bus[3]);
	ck_assert_close(bus[4], bus[0], 1e-12);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}
END_TEST

#define STEP_CASE(id, extra, unit)                                                                             \
	"    - id: " id "\n"                                                                                   \
	"      kind: step\n"                                                                                   \
	"      citation: c\n"                                                                                  \
	"      platform: dgx-a100\n"                                                                           \
	"      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096" extra "}\n"          \
	"      published: {value: 1, unit: " unit "}\n"

/* A step case's attention_kernel reaches the job (absent: the platform's), the Triton
 * family's dense work makes the step slower than FlashAttention-2's, and MFU-dense% is MFU%
 * with the attention counted dense. Llama-3.1-8B at S = 4096 per token and layer: GEMMs
 * 2h(ad + 2gd) + 2adh + 4hf + 2fh = 436,207,616 FLOPs (h 4096, a 32, g 8, d 128, f 14336),
 * causal attention 4·S·d·a / 2 = 33,554,432 (dense 67,108,864), plus the logits 2·h·V =
 * 1,050,673,152 per token (V 128256) once: dense / causal =
 * (32·(436207616 + 67108864) + 1050673152) / (32·(436207616 + 33554432) + 1050673152)
 * = 1.06676229. */
START_TEST(step_attention_kernel_and_mfu_conventions)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path,
		     HEAD STEP_CASE("fa2", "", "tokens/s/GPU") STEP_CASE("tri", ", attention_kernel: flash-attn-triton", "tokens/s/GPU")
			     STEP_CASE("mfu", "", "MFU%") STEP_CASE("dense", "", "MFU-dense%"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 4);
	ck_assert_int_eq(c.cases[0].job.attention_kernel, -1);
	ck_assert_int_eq(c.cases[1].job.attention_kernel, CONFIG_ATTN_TRITON);
	ck_assert(c.cases[3].metric == FID_MFU_DENSE_PCT);
	double fa2, tri, mfu, dense;
	ck_assert_msg(fidelity_predict(&c.cases[0], "analytic", &fa2, &e), "%s", e.msg);
	ck_assert_msg(fidelity_predict(&c.cases[1], "analytic", &tri, &e), "%s", e.msg);
	ck_assert_msg(fidelity_predict(&c.cases[2], "analytic", &mfu, &e), "%s", e.msg);
	ck_assert_msg(fidelity_predict(&c.cases[3], "analytic", &dense, &e), "%s", e.msg);
	ck_assert_double_lt(tri, fa2);
	ck_assert_close(dense / mfu, 1.06676229, 1e-7);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Megatron-TFLOP/s is the step's tokens/s per GPU times the FLOPs per token that
 * Megatron-DeepSpeed's throughput_calculator counts, 24 f L h^2 (1 + s/(6h) + V/(16 L h)),
 * f = 3 without recomputation and 4 with it. Llama-3.1-8B (L 32, h 4096, V 128256) at
 * s = 4096: 24·32·4096² = 12,884,901,888; 1 + 4096/24576 + 128256/2,097,152 =
 * 1.2278238932...; per token 3 × 12,884,901,888 × 1.2278238932 = 47,461,171,200 (f = 3)
 * and 63,281,561,600 (f = 4). The unit belongs to steps only. */
START_TEST(step_megatron_tflops_by_hand)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path,
		     HEAD STEP_CASE("tok", "", "tokens/s/GPU") STEP_CASE("mt", "", "Megatron-TFLOP/s")
			     STEP_CASE("tokr", ", recompute: full", "tokens/s/GPU")
				     STEP_CASE("mtr", ", recompute: full", "Megatron-TFLOP/s"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 4);
	ck_assert(c.cases[1].metric == FID_MEGATRON_TFLOPS);
	double v[4];
	for (int i = 0; i < 4; i++)
		ck_assert_msg(fidelity_predict(&c.cases[i], "analytic", &v[i], &e), "%s", e.msg);
	ck_assert_close(v[1] / v[0], 47461171200.0 / 1e12, 1e-12);
	ck_assert_close(v[3] / v[2], 63281561600.0 / 1e12, 1e-12);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1, unit: Megatron-TFLOP/s}\n",
		     12, 35, "expected one of: TFLOP/s");
}
END_TEST

/* ------------------------------------------------------- step job keys --- */

/* The job fields two readings must agree on: every table setting plus the keys read
 * outside the table (field by field, not memcmp: struct copies need not keep padding). */
static bool same_job(const config_job *a, const config_job *b)
{
	for (int i = 0; config_job_setting_key(i); i++)
		if (!config_job_setting_equal(i, a, b))
			return false;
	return a->strategy == b->strategy && a->gpus == b->gpus && a->sp == b->sp && a->micro_batch == b->micro_batch &&
	       a->seq_len == b->seq_len && a->grad_accum == b->grad_accum && a->zero_stage == b->zero_stage &&
	       a->basp_inner == b->basp_inner && a->ulysses_degree == b->ulysses_degree && a->ring_degree == b->ring_degree &&
	       a->cp_split == b->cp_split && a->cp_comm == b->cp_comm;
}

static bool same_whatif(const config_whatif *a, const config_whatif *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++) {
		char x[128], y[128];
		config_whatif_format(&a->item[i], x, sizeof x);
		config_whatif_format(&b->item[i], y, sizeof y);
		if (strcmp(x, y) != 0)
			return false;
	}
	return true;
}

/* Everything a step case takes from its step mapping. */
static bool same_step(const fidelity_case *a, const fidelity_case *b)
{
	return same_job(&a->job, &b->job) && strcmp(a->model, b->model) == 0 && strcmp(a->platform, b->platform) == 0 &&
	       strcmp(a->calibration, b->calibration) == 0 && a->nodes == b->nodes && same_whatif(&a->whatif, &b->whatif);
}

/* One value per job key, with the keys it needs beside it, each a valid job for
 * Llama-3.1-8B on dgx-a100 (or the platform it names). */
typedef struct key_sample {
	const char *key;
	const char *kv[4][2];
	bool same_as_default; /* dtype has one value: accepted, changes nothing */
} key_sample;
static const key_sample samples[] = {
	{"gpus", {{"gpus", "4"}}, false},
	{"strategy", {{"strategy", "ring"}, {"sp", "8"}}, false},
	{"sp", {{"sp", "2"}}, false},
	{"micro_batch", {{"micro_batch", "2"}}, false},
	{"seq_len", {{"seq_len", "8K"}}, false},
	{"grad_accum", {{"grad_accum", "4"}}, false},
	{"zero", {{"zero", "3"}}, false},
	{"recompute", {{"recompute", "full"}}, false},
	{"dtype", {{"dtype", "bf16"}}, true},
	{"zero_overlap", {{"zero_overlap", "true"}}, false},
	{"reduce_bucket", {{"reduce_bucket", "2e8"}}, false},
	{"allgather_bucket", {{"allgather_bucket", "3e8"}}, false},
	{"prefetch_bucket", {{"zero", "3"}, {"prefetch_bucket", "1e7"}}, false},
	{"fp32_grad_comm", {{"fp32_grad_comm", "true"}}, false},
	{"contiguous_gradients", {{"zero", "2"}, {"contiguous_gradients", "false"}}, false},
	{"model", {{"model", "llama-3.2-1b"}}, false},
	{"platform", {{"platform", "dgx-h100"}}, false},
	{"nodes", {{"nodes", "2"}}, false},
	{"calibration", {{"calibration", "@CAL@"}}, false},
	{"a2a", {{"sp", "8"}, {"a2a", "pairwise"}}, false},
	{"basp_uneven", {{"strategy", "basp"}, {"sp", "8"}, {"basp_uneven", "unequal"}}, false},
	{"attention_kernel", {{"attention_kernel", "flash-attn-triton"}}, false},
	{"impl", {{"impl", "megatron"}}, false},
	{"zero3_prefetch", {{"zero", "3"}, {"zero3_prefetch", "layer"}}, false},
	{"memory_reserve", {{"memory_reserve", "2GiB"}}, false},
	{"basp_inner", {{"strategy", "basp"}, {"sp", "8"}, {"basp_inner", "ring"}}, false},
	{"cp_split", {{"strategy", "ring"}, {"sp", "8"}, {"cp_split", "naive"}}, false},
	{"ulysses_degree", {{"strategy", "usp"}, {"sp", "8"}, {"ulysses_degree", "4"}, {"ring_degree", "2"}}, false},
	{"ring_degree", {{"strategy", "usp"}, {"sp", "8"}, {"ring_degree", "4"}}, false},
	{"what_if", {{"nodes", "2"}, {"what_if", "{background: [\"1GiB:100ms:0-1\"]}"}}, false},
	{"cp_comm_type", {{"sp", "8"}, {"cp_comm_type", "p2p"}}, false},
	{"offload_activations", {{"recompute", "full"}, {"offload_activations", "true"}}, false},
	{"tile_mlp", {{"tile_mlp", "2"}}, false},
	{"tile_logits", {{"tile_logits", "2"}}, false},
	{"offload_optimizer", {{"offload_optimizer", "cpu"}}, false},
};

/* "{k: v, ...}": the base job with the sample's keys set (NULL: the base alone). */
static void job_mapping(const key_sample *smp, const char *cal, char *out, size_t len)
{
	const char *base[][2] = {{"model", "llama-3.1-8b"}, {"platform", "dgx-a100"}, {"gpus", "8"},
				 {"sp", "1"},               {"micro_batch", "1"},      {"seq_len", "4096"}};
	size_t used = (size_t)snprintf(out, len, "{");
	const size_t nb = sizeof base / sizeof base[0];
	for (size_t i = 0; i < nb; i++) {
		const char *v = base[i][1];
		for (int j = 0; smp && j < 4 && smp->kv[j][0]; j++)
			if (strcmp(smp->kv[j][0], base[i][0]) == 0)
				v = smp->kv[j][1];
		used += (size_t)snprintf(out + used, len - used, "%s%s: %s", i ? ", " : "", base[i][0], v);
	}
	for (int j = 0; smp && j < 4 && smp->kv[j][0]; j++) {
		bool in_base = false;
		for (size_t i = 0; i < nb; i++)
			in_base |= strcmp(smp->kv[j][0], base[i][0]) == 0;
		if (!in_base)
			used += (size_t)snprintf(out + used, len - used, ", %s: %s", smp->kv[j][0],
						 strcmp(smp->kv[j][1], "@CAL@") == 0 ? cal : smp->kv[j][1]);
	}
	ck_assert_uint_lt(used + 2, len);
	snprintf(out + used, len - used, "}");
}

/* Loads the one step case whose step mapping is `map` (platform inside it). */
static void load_step(const char *map, fidelity_case *out, char *dir, size_t dlen)
{
	char path[160], text[2048];
	snprintf(text, sizeof text,
		 HEAD "    - id: s1\n      kind: step\n      citation: c\n      step: %s\n"
		      "      published: {value: 1, unit: tokens/s/GPU}\n",
		 map);
	write_source(dir, dlen, path, sizeof path, text);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "step %s: %s", map, e.msg);
	ck_assert_int_eq(c.n, 1);
	*out = c.cases[0];
	fidelity_corpus_free(&c);
	unlink(path);
}

/* A step case takes every key of a job file (config_job_keys), with the job file's
 * meaning: for each key, a step mapping holding it loads, reads the same job, model,
 * platform, calibration, nodes and what-ifs as `spsim run --job` on a job file with the
 * same mapping, and differs from the base step (the key took effect). A job key without a
 * sample here fails the test, so a new key must be shown to work in the corpus too. */
START_TEST(step_cases_take_every_job_key)
{
	const char *root = getenv("SPSIM_DATA_DIR");
	ck_assert_ptr_nonnull(root);
	char cal[CONFIG_PATH_MAX], map[1024], dir[64];
	snprintf(cal, sizeof cal, "%s/tests/data/cli/fast_links.yaml", root);
	fidelity_case base;
	job_mapping(NULL, cal, map, sizeof map);
	load_step(map, &base, dir, sizeof dir);
	rmdir(dir);
	const int n = (int)(sizeof samples / sizeof samples[0]);
	for (int i = 0; config_job_keys[i]; i++) {
		const key_sample *smp = NULL;
		for (int j = 0; j < n; j++)
			if (strcmp(samples[j].key, config_job_keys[i]) == 0)
				smp = &samples[j];
		ck_assert_msg(smp, "job key '%s' has no sample in step_cases_take_every_job_key: add one that a step case must take",
			      config_job_keys[i]);
		bool has_key = false;
		for (int j = 0; j < 4 && smp->kv[j][0]; j++)
			has_key |= strcmp(smp->kv[j][0], smp->key) == 0;
		ck_assert_msg(has_key, "sample of '%s' does not set it", smp->key);
		job_mapping(smp, cal, map, sizeof map);
		fidelity_case k;
		load_step(map, &k, dir, sizeof dir);
		/* the same mapping as a job file, read as spsim run reads it */
		char jpath[128];
		snprintf(jpath, sizeof jpath, "%s/job.yaml", dir);
		FILE *f = fopen(jpath, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "job: %s\n", map);
		fclose(f);
		fidelity_case j;
		memset(&j, 0, sizeof j);
		config_job_defaults(&j.job);
		config_error e = {""};
		ck_assert_msg(config_load_job(jpath, &j.job, j.model, j.platform, j.calibration, &j.nodes, &e) &&
				      config_load_whatif(jpath, &j.whatif, &e),
			      "%s: %s", smp->key, e.msg);
		unlink(jpath);
		rmdir(dir);
		ck_assert_msg(same_step(&k, &j), "key '%s': the step case reads %s differently from a job file", smp->key, map);
		ck_assert_msg(smp->same_as_default || !same_step(&k, &base), "key '%s' changed nothing in the step case", smp->key);
		/* and the case is predictable the way its key says: a neighbour's traffic needs
		 * the SimGrid engine, everything else runs on the analytic one */
		double p = 0;
		bool ok = fidelity_predict(&k, "analytic", &p, &e);
		if (strcmp(smp->key, "what_if") == 0)
			ck_assert_msg(!ok && strstr(e.msg, "simgrid"), "what_if on the analytic engine: '%s'", e.msg);
		else
			ck_assert_msg(ok && p > 0 && isfinite(p), "key '%s': %s", smp->key, e.msg);
	}
}
END_TEST

/* Platform and nodes go in one place: the case level or the step, never both; a step
 * needs the keys a published run must state; a calibration that does not load is an
 * error at its key. */
START_TEST(step_keys_bad_input_has_a_location)
{
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, platform: dgx-h100, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 45, "'platform' is given both here and at the case level (line 10)");
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n      nodes: 2\n"
			  "      step: {model: llama-3.1-8b, nodes: 2, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     12, 42, "'nodes' is given both here and at the case level (line 11)");
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     7, 7, "missing required key 'platform' in the case");
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 13, "missing required key 'sp' in 'step'");
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096, calibration: /nonexistent/cal.yaml}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 95, "calibration does not load");
	/* a job key with a bad value: the job file's own message, at the value */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096, impl: fused}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 88, "'impl'");
	/* a what-if naming a GPU the job does not have */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096, what_if: {slow_gpu: [\"99:2\"]}}\n"
			  "      published: {value: 1, unit: tokens/s/GPU}\n",
		     11, 91, "rank 99 does not exist");
}
END_TEST

/* ------------------------------------------------------- sp_attention --- */

/* An sp_attention case in block style: line 7 "- id:", line 11 "sp_attention:", its keys on
 * lines 12 (strategy, value at column 19) to 21; the published value on line 22 (or 21 when a
 * key is dropped). */
#define SP_KEYS_ALL(strategy, gpus, seq, batch, kv, causal, pass, kernel)                                   \
	"        strategy: " strategy "\n"                                                                     \
	"        gpus: " gpus "\n"                                                                             \
	"        seq_len: " seq "\n"                                                                           \
	"        batch: " batch "\n"                                                                           \
	"        heads: 32\n"                                                                                  \
	"        kv_heads: " kv "\n"                                                                           \
	"        head_dim: 128\n"                                                                              \
	"        causal: " causal "\n"                                                                         \
	"        pass: " pass "\n"                                                                             \
	"        kernel: " kernel "\n"
#define SP_KEYS(strategy, seq, causal, pass) SP_KEYS_ALL(strategy, "8", seq, "1", "8", causal, pass, "flash-attn-2")
#define SP_PUB "      published: {value: 1, unit: iter/s}\n"
#define SP_HEAD(id)                                                                                            \
	"    - id: " id "\n"                                                                                   \
	"      kind: sp_attention\n"                                                                           \
	"      citation: a quoted table row\n"                                                                 \
	"      platform: dgx-a100\n"                                                                           \
	"      sp_attention:\n"
#define SP_CASE(id, strategy, seq, pass)                                                                       \
	SP_HEAD(id) SP_KEYS(strategy, seq, "true", pass) "      published: {value: 10, unit: iter/s}\n"

/* The ring-flash-attention benchmark's configuration (8 GPUs, 64K tokens, Llama-3.1-8B
 * attention) loads as sp_attention cases in iter/s, and each prediction is 1 / the time
 * the engine gives the section's own plan. The naive split's busiest rank computes one
 * diagonal and R-1 full blocks, (2R-1)/2 full-block equivalents, against the zigzag
 * split's R half blocks = R/2: (2R-1)/R = 1.875 times the attention FLOPs for R = 8; its
 * prediction is slower than the zigzag's by at most that (the corrections are alike, the
 * full blocks run at least as efficiently as the zigzag's halves). */
START_TEST(sp_attention_cases_load_and_predict_from_the_section)
{
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path,
		     HEAD SP_CASE("naive", "'ring:split=naive'", "65536", "fwd")
			     SP_CASE("zigzag", "'ring:split=zigzag'", "65536", "fwd")
				     SP_CASE("zigzag-bwd", "ring", "65536", "fwd+bwd")
					     SP_CASE("ulysses", "ulysses", "65536", "fwd+bwd"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 4);
	double pred[4];
	for (int i = 0; i < 4; i++) {
		const fidelity_case *k = &c.cases[i];
		ck_assert(k->kind == FID_SP_ATTENTION && k->metric == FID_ITER_S);
		ck_assert_msg(fidelity_predict(k, "analytic", &pred[i], &e), "%s: %s", k->id, e.msg);
		config_platform p;
		ck_assert(fidelity_case_platform(k, &p, &e));
		config_model m;
		fidelity_sp_attention_model(k, &m);
		config_job job = k->job;
		ck_assert_msg(workload_check(&m, &p, &job, &e), "%s", e.msg);
		workload_plan plan;
		ck_assert_msg(workload_sp_attention_plan_make(&m, &p, &job, k->kern.pass == FID_PASS_FWD_BWD, &plan, &e),
			      "%s", e.msg);
		ck_assert_int_eq(plan.program.n_micro, 1);
		ck_assert_int_eq(plan.program.n_step, 0);
		engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
		engine_result r;
		ck_assert_msg(engine_run_checked(engine_find("analytic"), &in, &r, &e), "%s", e.msg);
		ck_assert_close(pred[i], 1.0 / r.step_time, 1e-12);
		workload_plan_finish(&plan);
	}
	ck_assert(c.cases[0].job.cp_split == CONFIG_CP_SPLIT_NAIVE && c.cases[1].job.cp_split == CONFIG_CP_SPLIT_ZIGZAG);
	ck_assert_double_gt(pred[1], pred[0]);
	ck_assert_double_le(pred[1] / pred[0], 15.0 / 8.0);
	ck_assert_double_lt(pred[2], pred[1]); /* the backward ring comes on top */
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(sp_attention_bad_input_has_a_location)
{
	/* an unknown split: the strategy parser's sentence at the value */
	expect_error(HEAD SP_CASE("r1", "'ring:split=diagonal'", "65536", "fwd"), 12, 19,
		     "split=diagonal, expected split=zigzag or split=naive");
	/* a strategy that is not one SP group */
	expect_error(HEAD SP_CASE("r1", "basp", "65536", "fwd"), 12, 19, "expected ring, ulysses or usp");
	/* 65544 = 8 x 8193 splits over 8 ranks but not into the zigzag's 16 chunks: the job
	 * check's sentence, at the mapping */
	expect_error(HEAD SP_CASE("r1", "ring", "65544", "fwd"), 12, 9, "does not split into the 16 chunks of zigzag");
	/* the naive split needs only 8 chunks: 65544 loads */
	char dir[64], path[128];
	write_source(dir, sizeof dir, path, sizeof path, HEAD SP_CASE("r1", "'ring:split=naive'", "65544", "fwd"));
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	fidelity_corpus_free(&c);
	unlink(path);
	rmdir(dir);
	/* a non-causal benchmark: at the value */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS("ring", "65536", "false", "fwd") SP_PUB,
		     19, 17, "expected causal: true");
	/* a pass that is not a whole iteration */
	expect_error(HEAD SP_CASE("r1", "ring", "65536", "bwd"), 20, 15, "'pass'");
	/* a missing key: at the mapping */
	expect_error(HEAD SP_HEAD("r1") "        strategy: ring\n        gpus: 8\n        seq_len: 65536\n        batch: 1\n"
				"        heads: 32\n        head_dim: 128\n        causal: true\n        pass: fwd\n"
				"        kernel: flash-attn-2\n" SP_PUB,
		     12, 9, "missing required key 'kv_heads'");
	/* kv heads that do not group the query heads: at kv_heads */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS_ALL("ring", "8", "65536", "1", "5", "true", "fwd", "flash-attn-2") SP_PUB,
		     17, 19, "'kv_heads' (5) does not divide 'heads' (32)");
	/* more GPUs than the platform has: the job check's sentence */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS_ALL("ring", "16", "65536", "1", "8", "true", "fwd", "flash-attn-2") SP_PUB,
		     12, 9, "--gpus 16 is larger than platform 'dgx-a100'");
	/* a kernel the GPU cannot run */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS_ALL("ring", "8", "65536", "1", "8", "true", "fwd", "flash-attn-3") SP_PUB,
		     12, 9, "flash-attn-3 runs only on hopper GPUs");
	/* a number out of range */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS_ALL("ring", "8", "65536", "0", "8", "true", "fwd", "flash-attn-2") SP_PUB,
		     15, 16, "'batch'");
	/* a kernel unit for a section */
	expect_error(HEAD SP_HEAD("r1") SP_KEYS("ring", "65536", "true", "fwd") "      published: {value: 1, unit: TFLOP/s}\n",
		     22, 35, "unit 'TFLOP/s' does not fit a case of kind 'sp_attention', expected one of: iter/s");
}
END_TEST

/* The section's time by hand on the hand platform (100 TFLOP/s of attention, 1000 GB/s of
 * HBM, 100 GB/s NVLink, every efficiency 1), R = 8 ranks of c = 8192 tokens of one
 * 65536-token sequence, a = 32 heads, g = 8 kv heads, d = 128:
 *   zigzag block (every step of rank R-1): 2 c^2 a d = 549,755,813,888 FLOPs = 5.49755813888 ms;
 *   naive: the diagonal block the same, R-1 full blocks 4 c^2 a d = 10.99511627776 ms each;
 *   corrections (ring_fix_of, O = c a d = 33,554,432 elements, rows = c a = 262,144):
 *     cast in 6 O = 201,326,592 B = 0.201326592 ms, each later step 10 O + 12 rows =
 *     338,690,048 B = 0.338690048 ms, cast out 0.201326592 ms: 2.77348352 ms in all.
 *   A KV block (c 2 g d bf16 = 33.5 MB, ~0.34 ms on the link) is shorter than any block,
 *   and block 0 is local: no transfer is exposed, the forward is its main stream:
 *   zigzag 8 x 5.49755813888 + 2.77348352 = 46.75394863104 ms,
 *   naive 5.49755813888 + 7 x 10.99511627776 + 2.77348352 = 85.2368556032 ms;
 *   attention alone: naive / zigzag = (1 + 2·7) / 8 = (2R-1)/R = 1.875.
 * Backward (zigzag), 2.5x each block's FLOPs: 8 x 13.7438953472 ms; casts 6 (O + 2G) with
 *   G = c g d = 8,388,608: 301,989,888 B = 0.301989888 ms in and out; per later step dQ
 *   10 O = 0.33554432 ms and dK, dV over the block's first half 10 x 2G x 1/2 =
 *   0.08388608 ms: 113.4911553536 ms of main stream; the last dK, dV return (c 2 g d fp32,
 *   67,108,864 B) is waited for by the final cast: exposed once. */
static double sp_hand_time(const char *strategy, bool backward, double *last_dkv)
{
	config_platform p = tu_platform(1, 8, 1);
	fidelity_case k;
	memset(&k, 0, sizeof k);
	k.kern.heads = 32;
	k.kern.head_dim = 128;
	k.kern.seq_len = 65536;
	k.kern.kv_heads = 8;
	config_model m;
	fidelity_sp_attention_model(&k, &m);
	config_job job = tu_job(CONFIG_STRATEGY_RING, 8, 8, 1, 65536, 0);
	config_error e = {""};
	ck_assert_msg(config_strategy_parse(strategy, &job, NULL, &e), "%s", e.msg);
	ck_assert_msg(workload_check(&m, &p, &job, &e), "%s", e.msg);
	workload_plan plan;
	ck_assert_msg(workload_sp_attention_plan_make(&m, &p, &job, backward, &plan, &e), "%s", e.msg);
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
	engine_result r;
	ck_assert_msg(engine_run_checked(engine_find("analytic"), &in, &r, &e), "%s", e.msg);
	if (last_dkv) {
		const workload_block *b = &plan.program.micro[0];
		const workload_op *dkv = NULL;
		for (int i = 0; i < b->n_ops; i++)
			if (strcmp(b->ops[i].name, "ring_dkv") == 0)
				dkv = &b->ops[i];
		ck_assert_ptr_nonnull(dkv);
		ck_assert_double_eq(dkv->bytes, 67108864.0);
		*last_dkv = engine_collective_time(&p, dkv->coll, dkv->alg, engine_op_shape(&p, &plan.layout, dkv), dkv->bytes);
	}
	workload_plan_finish(&plan);
	return r.step_time;
}

START_TEST(sp_attention_section_time_by_hand)
{
	const double zigzag = sp_hand_time("ring", false, NULL), naive = sp_hand_time("ring:split=naive", false, NULL);
	ck_assert_close(zigzag, 46.75394863104e-3, 1e-9);
	ck_assert_close(naive, 85.2368556032e-3, 1e-9);
	const double fix = 2.77348352e-3;
	ck_assert_close((naive - fix) / (zigzag - fix), 15.0 / 8.0, 1e-9);
	double dkv = 0;
	const double both = sp_hand_time("ring", true, &dkv);
	ck_assert_double_gt(dkv, 0.0);
	ck_assert_close(both, 46.75394863104e-3 + 113.4911553536e-3 + dkv, 1e-9);
}
END_TEST

/* ------------------------------------------------------ memory per GPU --- */

/* A two-layer model small enough to add its memory up by hand (docs/model.md "Memory per
 * GPU"): h 64, 4 heads of 16 (K/V heads 4), ffn 128, vocabulary 256, untied. */
static const char tiny_model[] = "model:\n  name: tiny\n  layers: 2\n  hidden: 64\n  heads: 4\n  kv_heads: 4\n"
				 "  head_dim: 16\n  ffn: 128\n  vocab: 256\n  tied_embeddings: false\n  qkv_bias: false\n"
				 "  mlp: swiglu\n  norm: rmsnorm\n  max_position: 1024\n";

/* Loads one step case of the tiny model in `unit` with step keys `keys` and predicts it
 * with `engine`. */
static double tiny_memory_on(const char *engine, const char *unit, const char *keys)
{
	char dir[64], path[128], sub[96], model[160], text[2048];
	snprintf(text, sizeof text,
		 HEAD "    - id: m1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
		      "      step: {model: models/tiny.yaml, gpus: 1, sp: 1, micro_batch: 1, seq_len: 64%s}\n"
		      "      published: {value: 0.03, unit: %s}\n",
		 keys, unit);
	write_source(dir, sizeof dir, path, sizeof path, text);
	/* in a subdirectory, which the corpus loader does not read as sources */
	snprintf(sub, sizeof sub, "%s/models", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	snprintf(model, sizeof model, "%s/tiny.yaml", sub);
	FILE *f = fopen(model, "w");
	ck_assert_ptr_nonnull(f);
	fputs(tiny_model, f);
	fclose(f);
	fidelity_corpus c = {0};
	config_error e = {""};
	ck_assert_msg(fidelity_load_dir(dir, &c, &e), "%s", e.msg);
	ck_assert_int_eq(c.n, 1);
	ck_assert(fidelity_metric_is_memory(c.cases[0].metric));
	ck_assert_str_eq(fidelity_metric_units[c.cases[0].metric], unit);
	double gib = 0;
	ck_assert_msg(fidelity_predict(&c.cases[0], engine, &gib, &e), "%s", e.msg);
	fidelity_corpus_free(&c);
	unlink(model);
	rmdir(sub);
	unlink(path);
	rmdir(dir);
	return gib;
}

static double tiny_memory(const char *unit, const char *keys)
{
	return tiny_memory_on("analytic", unit, keys);
}

/* The tiny model, one GPU, 64 tokens, full recompute, hf, no ZeRO (t = 64):
 *   parameters psi = embedding 256*64 + head 256*64 + 2 layers * (q 64*64 + k, v 2*64*64
 *     + o 64*64 + MLP 3*64*128 + norms 2*64 = 41088) + final norm 64 = 115008
 *   model states 2 + 2 + 12 bytes per parameter = 16 * 115008 = 1840128
 *   activations: each layer keeps its input 2*t*h = 8192; the layer rebuilt in backward
 *     keeps everything: 2*t*(3*64 + 2*4*16 + 4*128) = 106496, log-sum-exp 4*t*4 = 1024,
 *     two hf RMSNorms 2*(8*t*h + 4*t) = 66048: 173568; plus the final norm 33024:
 *     2*8192 + 173568 + 33024 = 222976
 *   logits (hf) 14*t*V = 229376
 *   buffers: ZeRO-1 (the default stage) allocates its reduce bucket whole even on one GPU
 *     (DeepSpeed's contiguous_gradients ipg buffer): 5e8 elements in bf16 (no SP, no
 *     overlap_comm at stage 1) = 1e9; no all-to-all, no all-gather bucket (one GPU)
 *   not concurrent: the loss phase (logits less the bf16 logits the hf loop keeps, 2*t*V
 *     = 32768, plus the final norm) 229376 - 32768 + 33024 = 229632 is freed before the
 *     rebuilt layer's 173568 exists: min = 173568
 *   dynamic 222976 + 229376 + 1e9 - 173568 = 1000278784
 *   reserve: context 512 MiB, cuBLAS 32 MiB, NCCL 0 (one GPU), fragmentation (full
 *     recompute) 0.15 * 1000278784 = 150041817.6
 * GiB-allocated = states + dynamic + cuBLAS workspace (an allocator block)
 *              = 1840128 + 1000278784 + 33554432 = 1035673344
 * GiB-reserved  = allocated + fragmentation = 1185715161.6
 * GiB-device    = reserved + context 536870912 = 1722586073.6 */
START_TEST(memory_units_by_hand)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;
	const double allocated = tiny_memory("GiB-allocated", ", recompute: full");
	const double reserved = tiny_memory("GiB-reserved", ", recompute: full");
	const double device = tiny_memory("GiB-device", ", recompute: full");
	ck_assert_double_eq_tol(allocated * gib, 1035673344.0, 1e-3);
	ck_assert_double_eq_tol(reserved * gib, 1185715161.6, 1e-3);
	ck_assert_double_eq_tol(device * gib, 1722586073.6, 1e-3);
	/* memory is the plan's, not the engine's: the discrete-event engine (when built) gives
	 * the same */
	if (engine_find("simgrid"))
		ck_assert_double_eq_tol(tiny_memory_on("simgrid", "GiB-reserved", ", recompute: full") * gib, 1185715161.6,
					1e-3);
	/* a declared reserve (2 GiB) has no parts: all of it lies outside the allocator, so
	 * allocated = reserved = peak - 2 GiB and device = peak; the peak loses the derived
	 * reserve and gains the declared one: 1840128 + 1000278784 + 2 GiB */
	const double states_act_logits = 1840128.0 + 1000278784.0;
	ck_assert_double_eq_tol(tiny_memory("GiB-allocated", ", recompute: full, memory_reserve: 2GiB") * gib,
				states_act_logits, 1e-3);
	ck_assert_double_eq_tol(tiny_memory("GiB-reserved", ", recompute: full, memory_reserve: 2GiB") * gib,
				states_act_logits, 1e-3);
	ck_assert_double_eq_tol(tiny_memory("GiB-device", ", recompute: full, memory_reserve: 2GiB") * gib,
				states_act_logits + 2.0 * gib, 1e-3);
}
END_TEST

/* The three measures of one job nest: allocated <= reserved <= device, strictly when the
 * job has fragmentation (ZeRO-3) and NCCL buffers (8 GPUs, a ring); and
 * fidelity_memory_measure splits workload_memory as fidelity.h says. */
START_TEST(memory_units_nest_on_one_job)
{
	config_model m;
	config_platform p;
	config_error e = {""};
	ck_assert_msg(config_load_model("llama-3.2-1b", &m, &e) && config_load_platform("dgx-h100", &p, &e), "%s", e.msg);
	config_job job;
	config_job_defaults(&job);
	ck_assert_msg(config_strategy_parse("ring", &job, NULL, &e), "%s", e.msg);
	job.gpus = 8, job.sp = 4, job.micro_batch = 1, job.seq_len = 32768, job.zero_stage = 3;
	ck_assert_msg(workload_check(&m, &p, &job, &e), "%s", e.msg);
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&m, &p, &job, &plan, &e), "%s", e.msg);
	const workload_memory *mem = &plan.memory;
	const workload_reserve *r = &mem->reserve_of;
	ck_assert(r->nccl > 0 && r->fragmentation > 0 && r->context > 0);
	double a = fidelity_memory_measure(mem, FID_GIB_ALLOCATED), rs = fidelity_memory_measure(mem, FID_GIB_RESERVED),
	       d = fidelity_memory_measure(mem, FID_GIB_DEVICE);
	ck_assert(a < rs && rs < d);
	ck_assert_double_eq_tol(d, mem->peak, 1e-6);
	ck_assert_double_eq_tol(rs - a, r->fragmentation, 1e-3); /* bytes, of GiB-scale sums */
	ck_assert_double_eq_tol(d - rs, r->context + r->nccl, 1e-3);
	/* the cuBLAS workspace stays in what the allocator handed out */
	ck_assert_double_eq_tol(a, mem->params + mem->grads + mem->optimizer + mem->activations + mem->logits +
					   mem->buffers + r->cublas,
				1e-3);
	ck_assert_double_eq(fidelity_memory_measure(mem, FID_TOKENS_GPU), 0);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(memory_units_bad_input_has_a_location)
{
	/* an unknown memory unit on a step: at the unit, naming the memory units */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1, unit: GiB}\n",
		     12, 35, "unit 'GiB' does not fit a case of kind 'step', expected one of: tokens/s/GPU, MFU%, MFU-dense%, "
			     "Megatron-TFLOP/s, GiB-allocated, GiB-reserved, GiB-device");
	/* memory is a step's measure, not a kernel's */
	expect_error(HEAD "    - id: g1\n      kind: gemm\n      citation: c\n      platform: dgx-a100\n"
			  "      gemm: {m: 1, n: 1, k: 1}\n      published: {value: 1, unit: GiB-device}\n",
		     12, 35, "unit 'GiB-device' does not fit a case of kind 'gemm', expected one of: TFLOP/s");
	/* a value no GPU holds (1e7 GiB) or a typo's 1e-9: at the value, naming the range */
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1e7, unit: GiB-reserved}\n",
		     12, 26, "'value' 1e+07 is out of range for unit 'GiB-reserved', expected a number from 1e-06 to 1e+06");
	expect_error(HEAD "    - id: s1\n      kind: step\n      citation: c\n      platform: dgx-a100\n"
			  "      step: {model: llama-3.1-8b, gpus: 8, sp: 1, micro_batch: 1, seq_len: 4096}\n"
			  "      published: {value: 1e-9, unit: GiB-allocated}\n",
		     12, 26, "out of range for unit 'GiB-allocated'");
}
END_TEST

static Suite *fidelity_suite(void)
{
	Suite *s = suite_create("fidelity");
	TCase *t = tcase_create("corpus");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, shipped_corpus_loads_and_is_large_enough);
	tcase_add_test(t, every_shipped_case_is_valid_and_predictable);
	tcase_add_test(t, shipped_corpus_covers_kinds_collectives_and_gpus);
	suite_add_tcase(s, t);
	t = tcase_create("errors");
	tcase_add_test(t, a_good_minimal_source_loads);
	tcase_add_test(t, collective_alg_and_proto_are_the_forced_ones);
	tcase_add_test(t, bad_files_fail_with_location);
	tcase_add_test(t, a_source_id_used_twice_is_an_error);
	tcase_add_test(t, missing_corpus_directory_is_an_error);
	suite_add_tcase(s, t);
	t = tcase_create("runner");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, runner_reports_and_exits_zero);
	tcase_add_test(t, runner_exits_two_on_a_malformed_corpus);
	tcase_add_test(t, runner_selects_by_kind_and_id_and_speaks_json);
	suite_add_tcase(s, t);
	t = tcase_create("arithmetic");
	tcase_add_test(t, signed_error_percent);
	tcase_add_test(t, summary_geomean_and_max);
	tcase_add_test(t, kernel_flops_and_time_by_hand);
	tcase_add_test(t, kernel_prediction_is_flops_over_time);
	tcase_add_test(t, step_attention_kernel_and_mfu_conventions);
	tcase_add_test(t, step_megatron_tflops_by_hand);
	suite_add_tcase(s, t);
	t = tcase_create("step_keys");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, step_cases_take_every_job_key);
	tcase_add_test(t, step_keys_bad_input_has_a_location);
	suite_add_tcase(s, t);
	t = tcase_create("sp_attention");
	tcase_add_test(t, sp_attention_cases_load_and_predict_from_the_section);
	tcase_add_test(t, sp_attention_bad_input_has_a_location);
	tcase_add_test(t, sp_attention_section_time_by_hand);
	suite_add_tcase(s, t);
	t = tcase_create("memory");
	tcase_add_test(t, memory_units_by_hand);
	tcase_add_test(t, memory_units_nest_on_one_job);
	tcase_add_test(t, memory_units_bad_input_has_a_location);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(fidelity_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
