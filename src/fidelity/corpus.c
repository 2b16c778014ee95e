/* The fidelity corpus loader: one YAML file per source, strict keys, units by kind, and
 * every case checked against the platform, model and job checks the CLI uses. */
#include "fidelity/fidelity.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yamltree.h"
#include "engine/nccl.h"
#include "nccltests/nccltests.h"

const char *const fidelity_kind_names[FID_KIND_COUNT] = {"collective", "attention", "gemm", "step", "sp_attention"};
const char *const fidelity_metric_units[FID_METRIC_COUNT] = {"GB/s", "us", "TFLOP/s", "tokens/s/GPU",
							     "MFU%", "MFU-dense%", "Megatron-TFLOP/s",
							     "iter/s", "GiB-allocated", "GiB-reserved", "GiB-device"};

static const char *const pass_names[] = {"fwd", "bwd", "fwd+bwd"};

/* The range a published value may take in each unit, so that every error the runner prints
 * (predicted / published - 1, and its geometric mean) stays finite and readable; each bound
 * is far beyond any measurement yet still a number (a value of 1e308 TFLOP/s or 1e-300 GB/s
 * is a typo, and its error would print as inf or as a 300-digit percentage). */
static const double published_range[FID_METRIC_COUNT][2] = {
	[FID_BUSBW] = {1e-3, 1e6},    /* GB/s: config's link range, 1 MB/s to 1 PB/s (nccl-tests prints 0.01) */
	[FID_TIME_US] = {1e-6, 1e12}, /* us: 1 ps to 1e6 s (1 TB at 1 MB/s) */
	[FID_TFLOPS] = {1e-3, 1e6},   /* TFLOP/s: 1 GFLOP/s to 1 EFLOP/s, as measured attention points */
	[FID_TOKENS_GPU] = {1e-6, 1e12}, /* tokens/s per GPU: 1e12 is 1 EFLOP/s on a 100k-parameter model */
	[FID_MFU_PCT] = {1e-6, 100},     /* a utilisation: at most the whole peak */
	[FID_MFU_DENSE_PCT] = {1e-6, 100},
	[FID_MEGATRON_TFLOPS] = {1e-3, 1e6}, /* TFLOP/s per GPU: as a kernel's */
	[FID_ITER_S] = {1e-6, 1e9}, /* iterations/s: 1 ns per iteration is below one kernel launch */
	/* GiB per GPU: 1 KiB to 1 PiB, far beyond any GPU's memory either way */
	[FID_GIB_ALLOCATED] = {1e-6, 1e6},
	[FID_GIB_RESERVED] = {1e-6, 1e6},
	[FID_GIB_DEVICE] = {1e-6, 1e6},
};

/* Units each kind may be compared in. */
static bool metric_allowed(fidelity_kind k, fidelity_metric m)
{
	switch (k) {
	case FID_COLLECTIVE: return m == FID_BUSBW || m == FID_TIME_US;
	case FID_ATTENTION: return m == FID_TFLOPS || m == FID_ITER_S;
	case FID_GEMM: return m == FID_TFLOPS;
	case FID_STEP:
		return m == FID_TOKENS_GPU || m == FID_MFU_PCT || m == FID_MFU_DENSE_PCT || m == FID_MEGATRON_TFLOPS ||
		       fidelity_metric_is_memory(m);
	case FID_SP_ATTENTION: return m == FID_ITER_S;
	default: return false;
	}
}

static void units_of(fidelity_kind k, char *buf, size_t len)
{
	buf[0] = '\0';
	size_t used = 0;
	for (int m = 0; m < FID_METRIC_COUNT; m++)
		if (metric_allowed(k, (fidelity_metric)m)) {
			int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", fidelity_metric_units[m]);
			if (w < 0 || (size_t)w >= len - used)
				return;
			used += (size_t)w;
		}
}

/* A platform or model reference: a shipped name as is, a path relative to the corpus
 * file's directory. */
static bool resolve(const char *file, const char *value, char *out, size_t len)
{
	if (!strchr(value, '/') && !strstr(value, ".yaml") && !strstr(value, ".yml"))
		return (size_t)snprintf(out, len, "%s", value) < len;
	if (value[0] == '/')
		return (size_t)snprintf(out, len, "%s", value) < len;
	const char *slash = strrchr(file, '/');
	int dir = slash ? (int)(slash - file) : 1;
	return (size_t)snprintf(out, len, "%.*s/%s", dir, slash ? file : ".", value) < len;
}

bool fidelity_case_platform(const fidelity_case *k, config_platform *p, config_error *err)
{
	if (!config_load_platform(k->platform, p, err))
		return false;
	if (k->nodes > 0)
		p->nodes = k->nodes;
	if (k->nccl_release > 0) /* the release the source ran (collective nccl_version) */
		p->nccl.release = k->nccl_release - 1;
	if (k->nccl_processes > 0) /* how the source launched its ranks (collective processes) */
		p->nccl.processes = k->nccl_processes - 1;
	if (k->calibration[0]) { /* as `spsim run --calibration`: after the node count */
		if (!config_calibrate_platform(k->calibration, p, NULL, err))
			return false;
	}
	return true;
}

/* One of the kind mappings; the others must be absent. */
static bool kind_map(const yt_node *cm, fidelity_kind kind, const yt_node **out, config_error *err)
{
	for (int i = 0; i < FID_KIND_COUNT; i++) {
		const yt_node *v = yt_find(cm, fidelity_kind_names[i]);
		if (i != (int)kind && v)
			return yt_fail(err, v, "'%s' does not belong to a case of kind '%s', expected a '%s' mapping",
				       fidelity_kind_names[i], fidelity_kind_names[kind], fidelity_kind_names[kind]);
	}
	return yt_map(cm, fidelity_kind_names[kind], true, out, err);
}

static bool read_collective(const yt_node *m, fidelity_case *k, const config_platform *p, config_error *err)
{
	static const char *const keys[] = {"op", "gpus", "size", "alg", "proto", "nccl_version", "processes", NULL};
	char op[CONFIG_NAME_MAX], size[CONFIG_NAME_MAX], alg[CONFIG_NAME_MAX], proto[CONFIG_NAME_MAX];
	bool has_alg = false, has_proto = false;
	if (!yt_check_keys(m, keys, err) || !yt_string(m, "op", true, op, sizeof op, NULL, err) ||
	    !yt_posint(m, "gpus", true, &k->gpus, NULL, err) ||
	    !yt_string(m, "size", true, size, sizeof size, NULL, err) ||
	    !yt_string(m, "alg", false, alg, sizeof alg, &has_alg, err) ||
	    !yt_string(m, "proto", false, proto, sizeof proto, &has_proto, err))
		return false;
	int rel = 0;
	bool has_rel = false;
	if (!yt_enum(m, "nccl_version", false, config_nccl_release_names, CONFIG_NCCL_RELEASES, &rel, &has_rel, err))
		return false;
	k->nccl_release = has_rel ? rel + 1 : 0;
	int procs = 0;
	bool has_procs = false;
	if (!yt_enum(m, "processes", false, config_nccl_processes_names, CONFIG_NCCL_PROCS, &procs, &has_procs, err))
		return false;
	k->nccl_processes = has_procs ? procs + 1 : 0;
	if (!nccltests_coll_from_name(op, &k->coll))
		return yt_fail(err, yt_find(m, "op"),
			       "unknown collective '%s', expected all_reduce, all_gather, reduce_scatter, alltoall, sendrecv or broadcast",
			       op);
	if (!nccltests_parse_size(size, &k->size) || k->size <= 0)
		return yt_fail(err, yt_find(m, "size"),
			       "'size' must be a positive byte count (nccl-tests syntax: 524288000, 8M, 1G), got '%s'",
			       size);
	k->alg_set = has_alg;
	k->alg = nccltests_default_alg(k->coll);
	/* the algorithm and protocol the run forced (NCCL_ALGO, NCCL_PROTO), read as
	 * `spsim collective --alg/--proto` read them; only ones NCCL itself could run there */
	k->force_algo = k->force_proto = 0;
	if (has_alg && !nccltests_resolve_alg(k->coll, alg, &k->alg, &k->force_algo))
		return yt_fail(err, yt_find(m, "alg"),
			       "algorithm '%s' does not apply to %s, expected one of ring, tree, nvls (NCCL_ALGO), "
			       "direct, pairwise, hierarchical that does",
			       alg, op);
	if (has_proto) {
		nccl_proto pr;
		if (!nccl_proto_from_name(proto, &pr))
			return yt_fail(err, yt_find(m, "proto"), "'proto' must be LL, LL128 or Simple (NCCL_PROTO), got '%s'",
				       proto);
		k->force_proto = (int)pr + 1;
	}
	char why[256];
	if (!nccl_force_check(p, k->coll, k->force_algo, 0, why, sizeof why))
		return yt_fail(err, yt_find(m, "alg"), "%s", why);
	if (!nccl_force_check(p, k->coll, k->force_algo, k->force_proto, why, sizeof why))
		return yt_fail(err, yt_find(m, "proto"), "%s", why);
	nccltests_setup s = {.platform = p, .coll = k->coll, .alg = k->alg, .gpus = k->gpus, .group_size = k->gpus};
	config_error e2;
	if (!nccltests_setup_check(&s, &e2))
		return yt_fail(err, m, "%s", e2.msg);
	return true;
}

/* Grouped-query K/V heads must divide the query heads: at kv_heads. */
static bool kv_heads_group(const yt_node *m, int heads, int kv_heads, config_error *err)
{
	if (heads % kv_heads == 0)
		return true;
	return yt_fail(err, yt_find(m, "kv_heads"), "'kv_heads' (%d) does not divide 'heads' (%d), expected grouped-query heads",
		       kv_heads, heads);
}

/* The attention shape an attention or sp_attention mapping shares: batch, seq_len, heads,
 * kv_heads (required or heads when absent; it must divide heads), head_dim, causal and the
 * kernel family (its index in *fam). */
static bool read_attention_shape(const yt_node *m, fidelity_kernel *kn, bool kv_required, int *fam,
				 config_error *err)
{
	long batch = 0;
	kn->kv_heads = 0;
	if (!yt_int(m, "batch", true, 1, 1048576, &batch, NULL, err) ||
	    !yt_range_long(m, CONFIG_R_SEQ_LEN, true, &kn->seq_len, NULL, err) ||
	    !yt_range_int(m, CONFIG_R_HEADS, true, &kn->heads, NULL, err) ||
	    !yt_range_int(m, CONFIG_R_KV_HEADS, kv_required, &kn->kv_heads, NULL, err) ||
	    !yt_range_int(m, CONFIG_R_HEAD_DIM, true, &kn->head_dim, NULL, err) ||
	    !yt_bool(m, "causal", true, &kn->causal, NULL, err) ||
	    !yt_enum(m, "kernel", true, config_attn_kernel_names, CONFIG_ATTN_KERNELS, fam, NULL, err))
		return false;
	if (kn->kv_heads == 0)
		kn->kv_heads = kn->heads;
	if (!kv_heads_group(m, kn->heads, kn->kv_heads, err))
		return false;
	kn->kernel = WL_KERNEL_ATTENTION;
	kn->batch = (int)batch;
	snprintf(kn->family, sizeof kn->family, "%s", config_attn_kernel_names[*fam]);
	return true;
}

static bool read_kernel(const yt_node *m, fidelity_case *k, const config_platform *p, config_error *err)
{
	fidelity_kernel *kn = &k->kern;
	if (k->kind == FID_GEMM) {
		static const char *const keys[] = {"m", "n", "k", NULL};
		long mm = 0, nn = 0, kk = 0;
		/* cuBLAS takes m, n, k as int (cublasGemmEx, cublas_api.h) */
		if (!yt_check_keys(m, keys, err) || !yt_int(m, "m", true, 1, INT_MAX, &mm, NULL, err) ||
		    !yt_int(m, "n", true, 1, INT_MAX, &nn, NULL, err) || !yt_int(m, "k", true, 1, INT_MAX, &kk, NULL, err))
			return false;
		kn->kernel = WL_KERNEL_GEMM;
		kn->m = (double)mm, kn->n = (double)nn, kn->k = (double)kk;
		return true;
	}
	static const char *const keys[] = {"batch", "seq_len", "heads",  "head_dim",
					   "causal", "pass",	"kernel", "kv_heads", NULL};
	int pass = 0, fam = 0;
	if (!yt_check_keys(m, keys, err) || !read_attention_shape(m, kn, false, &fam, err) ||
	    !yt_enum(m, "pass", true, pass_names, 3, &pass, NULL, err))
		return false;
	/* a family with no curve on this GPU would be timed at a flat default rate: refused as
	 * a platform's attention_kernel is */
	const char *why = config_attn_kernel_unusable(p, (config_attn_kernel)fam);
	if (why)
		return yt_fail(err, yt_find(m, "kernel"), "'kernel' %s %s on platform '%s' (gpu %s), expected a family it can time",
			       config_attn_kernel_names[fam], why, p->name, p->gpu.name);
	kn->pass = (fidelity_pass)pass;
	return true;
}

void fidelity_sp_attention_model(const fidelity_case *k, config_model *m)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", "sp_attention");
	m->layers = 1;
	m->heads = k->kern.heads;
	m->kv_heads = k->kern.kv_heads;
	m->head_dim = k->kern.head_dim;
	m->hidden = k->kern.heads * k->kern.head_dim;
	m->ffn = m->hidden; /* unused by the section */
	m->vocab = 1;       /* unused by the section */
	m->max_position = (int)(k->kern.seq_len < INT_MAX ? k->kern.seq_len : INT_MAX);
	m->mlp = CONFIG_MLP_SWIGLU;
	m->norm = CONFIG_NORM_RMSNORM;
	m->position = CONFIG_POSITION_ROPE;
}

/* An sp_attention mapping: the benchmark's attention configuration and the strategy that
 * spreads it over `gpus` GPUs (one SP group), checked as `spsim run` checks a job (heads
 * against the group, the sequence against the ring's chunks, the kernel against the GPU). */
static bool read_sp_attention(const yt_node *m, fidelity_case *k, const config_platform *p, config_error *err)
{
	static const char *const keys[] = {"strategy", "gpus",	   "seq_len", "batch", "heads", "kv_heads",
					   "head_dim", "causal", "pass",    "kernel", NULL};
	static const char *const passes[] = {"fwd", "fwd+bwd"};
	fidelity_kernel *kn = &k->kern;
	char strategy[CONFIG_NAME_MAX];
	int pass = 0, fam = 0;
	if (!yt_check_keys(m, keys, err) || !yt_string(m, "strategy", true, strategy, sizeof strategy, NULL, err) ||
	    !yt_posint(m, "gpus", true, &k->gpus, NULL, err) || !read_attention_shape(m, kn, true, &fam, err) ||
	    !yt_enum(m, "pass", true, passes, 2, &pass, NULL, err))
		return false;
	kn->pass = pass == 0 ? FID_PASS_FWD : FID_PASS_FWD_BWD;
	if (!kn->causal)
		return yt_fail(err, yt_find(m, "causal"),
			       "spsim's sequence-parallel attention programs are causal (ring blocks, zigzag split, "
			       "FLOP counts), expected causal: true");
	config_error e2;
	config_job *job = &k->job;
	config_job_defaults(job);
	job->zero_stage = 0; /* the section has no ZeRO collectives */
	if (!config_strategy_parse(strategy, job, NULL, &e2))
		return yt_fail(err, yt_find(m, "strategy"), "%s", e2.msg);
	if (job->strategy == CONFIG_STRATEGY_BASP)
		return yt_fail(err, yt_find(m, "strategy"),
			       "basp gives each sequence its own group (a step case times it), expected ring, ulysses or usp "
			       "over one SP group");
	job->gpus = job->sp = k->gpus;
	job->micro_batch = kn->batch;
	job->seq_len = kn->seq_len;
	job->attention_kernel = fam;
	config_model md;
	fidelity_sp_attention_model(k, &md);
	if (!workload_check(&md, p, job, &e2))
		return yt_fail(err, m, "the attention section does not fit platform '%s': %s", p->name, e2.msg);
	return true;
}

/* A step mapping: every key of a job file, through the job file's own reader, so a step
 * case takes whatever `spsim run --job` takes; the keys a published run must state are
 * required. Its platform and nodes go to *platform and *nodes (left as they are when
 * absent) for read_case to merge with the case level's. */
static bool read_step_fields(const char *file, const yt_node *m, fidelity_case *k, char *platform, int *nodes,
			     config_error *err)
{
	static const char *const required[] = {"model", "gpus", "sp", "micro_batch", "seq_len"};
	config_job_defaults(&k->job);
	int n = 0;
	if (!config_job_read_fields(m, file, &k->job, k->model, platform, k->calibration, &n, &k->whatif, err))
		return false;
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!yt_find(m, required[i]))
			return yt_fail(err, m, "missing required key '%s' in 'step', expected model, gpus, sp, micro_batch and seq_len",
				       required[i]);
	if (n > 0)
		*nodes = n;
	return true;
}

/* The step's job against its model and platform, as `spsim run` checks it. */
static bool check_step(const yt_node *m, const fidelity_case *k, const config_platform *p, config_error *err)
{
	const yt_node *mv = yt_find(m, "model");
	config_model md;
	config_error e2;
	if (!config_load_model(k->model, &md, &e2))
		return yt_fail(err, mv, "model '%s' does not load: %s", mv->value, e2.msg);
	config_job job = k->job;
	if (!workload_check(&md, p, &job, &e2))
		return yt_fail(err, m, "the job does not fit model '%s' on platform '%s': %s", md.name, p->name, e2.msg);
	if (k->whatif.n > 0 && !config_whatif_check(&k->whatif, p, job.gpus, &e2))
		return yt_fail(err, yt_find(m, "what_if"), "%s", e2.msg);
	return true;
}

/* A key a step case may give at the case level or in its step mapping, not both. */
static bool one_place(const yt_node *cm, const yt_node *m, const char *key, config_error *err)
{
	const yt_node *c = yt_find(cm, key), *s = yt_find(m, key);
	if (c && s)
		return yt_fail(err, s, "'%s' is given both here and at the case level (line %d), expected it in one place", key,
			       c->line);
	return true;
}

static bool read_case(const char *file, const char *source, const yt_node *cm, fidelity_case *k, config_error *err)
{
	static const char *const keys[] = {"id",	"kind",	 "citation",     "platform",  "nodes", "collective",
					   "attention", "gemm", "step", "sp_attention", "published", "note", NULL};
	if (cm->kind != YT_MAP)
		return yt_fail(err, cm, "a case must be a mapping with id, kind, citation, platform, published and its configuration");
	memset(k, 0, sizeof *k);
	snprintf(k->file, sizeof k->file, "%s", file);
	snprintf(k->source, sizeof k->source, "%s", source);
	k->line = cm->line, k->col = cm->col;
	int kind = 0;
	char platform[CONFIG_PATH_MAX] = "";
	if (!yt_check_keys(cm, keys, err) || !yt_string(cm, "id", true, k->id, sizeof k->id, NULL, err) ||
	    !yt_enum(cm, "kind", true, fidelity_kind_names, FID_KIND_COUNT, &kind, NULL, err) ||
	    !yt_string(cm, "citation", true, k->citation, sizeof k->citation, NULL, err) ||
	    !yt_string(cm, "platform", false, platform, sizeof platform, NULL, err) ||
	    !yt_posint(cm, "nodes", false, &k->nodes, NULL, err))
		return false;
	k->kind = (fidelity_kind)kind;
	char note[FIDELITY_TEXT_MAX];
	if (!yt_string(cm, "note", false, note, sizeof note, NULL, err))
		return false;

	/* published: {value, unit} */
	const yt_node *pub;
	static const char *const pub_keys[] = {"value", "unit", NULL};
	char unit[CONFIG_NAME_MAX];
	if (!yt_map(cm, "published", true, &pub, err) || !yt_check_keys(pub, pub_keys, err) ||
	    !yt_double(pub, "value", true, 0, true, INFINITY, &k->published, NULL, err) ||
	    !yt_string(pub, "unit", true, unit, sizeof unit, NULL, err))
		return false;
	int metric = -1;
	for (int i = 0; i < FID_METRIC_COUNT; i++)
		if (strcmp(unit, fidelity_metric_units[i]) == 0)
			metric = i;
	if (metric < 0 || !metric_allowed(k->kind, (fidelity_metric)metric)) {
		char u[128];
		units_of(k->kind, u, sizeof u);
		return yt_fail(err, yt_find(pub, "unit"), "unit '%s' does not fit a case of kind '%s', expected one of: %s", unit,
			       fidelity_kind_names[k->kind], u);
	}
	k->metric = (fidelity_metric)metric;
	const double *r = published_range[metric];
	if (k->published < r[0] || k->published > r[1])
		return yt_fail(err, yt_find(pub, "value"), "'value' %g is out of range for unit '%s', expected a number from %g to %g",
			       k->published, unit, r[0], r[1]);

	const yt_node *m;
	if (!kind_map(cm, k->kind, &m, err))
		return false;
	/* A step takes the job keys, platform and nodes among them (resolved by the job
	 * reader); elsewhere the platform is the case's own. */
	const yt_node *pv = yt_find(cm, "platform");
	if (k->kind == FID_STEP) {
		if (!one_place(cm, m, "platform", err) || !one_place(cm, m, "nodes", err) ||
		    !read_step_fields(file, m, k, k->platform, &k->nodes, err))
			return false;
		if (yt_find(m, "platform"))
			pv = yt_find(m, "platform");
	}
	if (!pv)
		return yt_fail(err, cm, "missing required key 'platform' in the case, expected a shipped platform name or a YAML "
					"path%s",
			       k->kind == FID_STEP ? " (at the case level or in 'step')" : "");
	if (!k->platform[0] && !resolve(file, platform, k->platform, sizeof k->platform))
		return yt_fail(err, pv, "platform path too long");
	config_platform p;
	config_error e2;
	if (k->calibration[0]) { /* its own errors at its own key */
		config_calibration cal;
		if (!config_load_calibration(k->calibration, &cal, &e2))
			return yt_fail(err, yt_find(m, "calibration"), "calibration does not load: %s", e2.msg);
	}
	if (!fidelity_case_platform(k, &p, &e2))
		return yt_fail(err, k->calibration[0] ? yt_find(m, "calibration") : pv, "platform '%s'%s does not load: %s",
			       pv->value, k->calibration[0] ? " with the step's calibration" : "", e2.msg);

	switch (k->kind) {
	case FID_COLLECTIVE: return read_collective(m, k, &p, err);
	case FID_ATTENTION:
	case FID_GEMM: return read_kernel(m, k, &p, err);
	case FID_STEP: return check_step(m, k, &p, err);
	case FID_SP_ATTENTION: return read_sp_attention(m, k, &p, err);
	default: return false;
	}
}

static bool push(fidelity_corpus *c, const fidelity_case *k)
{
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 32;
		fidelity_case *n = realloc(c->cases, (size_t)cap * sizeof *n);
		if (!n)
			return false;
		c->cases = n, c->cap = cap;
	}
	c->cases[c->n++] = *k;
	return true;
}

bool fidelity_load_file(const char *path, fidelity_corpus *c, config_error *err)
{
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	const yt_node *src, *cases;
	static const char *const keys[] = {"id", "title", "url", "arxiv", "hardware", "cases", "note", NULL};
	char id[CONFIG_NAME_MAX], title[FIDELITY_TEXT_MAX], url[FIDELITY_TEXT_MAX], hw[FIDELITY_TEXT_MAX];
	bool has_url = false, has_arxiv = false, ok = false;
	int start = c->n;
	if (!yt_top(doc, "source", &src, err) || !yt_check_keys(src, keys, err) ||
	    !yt_string(src, "id", true, id, sizeof id, NULL, err) ||
	    !yt_string(src, "title", true, title, sizeof title, NULL, err) ||
	    !yt_string(src, "url", false, url, sizeof url, &has_url, err) ||
	    !yt_string(src, "arxiv", false, url, sizeof url, &has_arxiv, err) ||
	    !yt_string(src, "hardware", true, hw, sizeof hw, NULL, err) ||
	    !yt_string(src, "note", false, hw, sizeof hw, NULL, err))
		goto out;
	if (!has_url && !has_arxiv) {
		yt_fail(err, src, "source '%s' has neither 'url' nor 'arxiv', expected where the numbers can be read", id);
		goto out;
	}
	for (int j = 0; j < c->n; j++)
		if (strcmp(c->cases[j].source, id) == 0) {
			yt_fail(err, yt_find(src, "id"), "source id '%s' is already used by %s, expected one file per source",
				id, c->cases[j].file);
			goto out;
		}
	cases = yt_find(src, "cases");
	if (!cases || cases->kind != YT_SEQ || cases->n == 0) {
		yt_fail(err, cases ? cases : src, "source '%s' needs 'cases', a non-empty sequence of cases", id);
		goto out;
	}
	for (size_t i = 0; i < cases->n; i++) {
		fidelity_case k;
		if (!read_case(path, id, cases->items[i], &k, err))
			goto out;
		for (int j = 0; j < c->n; j++)
			if (strcmp(c->cases[j].id, k.id) == 0) {
				yt_fail(err, yt_find(cases->items[i], "id"), "case id '%s' is already used at %s:%d:%d, expected a unique id",
					k.id, c->cases[j].file, c->cases[j].line, c->cases[j].col);
				goto out;
			}
		if (!push(c, &k)) {
			config_fail(err, "%s: out of memory", path);
			goto out;
		}
	}
	c->n_sources++;
	ok = true;
out:
	if (!ok)
		c->n = start;
	yt_free(doc);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool fidelity_load_dir(const char *dir, fidelity_corpus *c, config_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return config_fail(err, "%s: cannot open the corpus directory, expected a directory of source .yaml files", dir);
	char **names = NULL;
	int n = 0, cap = 0;
	bool ok = true;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0 || e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nn = realloc(names, (size_t)cap * sizeof *nn);
			if (!nn) {
				ok = config_fail(err, "%s: out of memory", dir);
				break;
			}
			names = nn;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			ok = config_fail(err, "%s: out of memory", dir);
			break;
		}
		n++;
	}
	closedir(d);
	if (ok)
		qsort(names, (size_t)n, sizeof *names, cmp_str);
	for (int i = 0; ok && i < n; i++) {
		char path[CONFIG_PATH_MAX];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
			ok = config_fail(err, "%s/%s: path too long", dir, names[i]);
		else
			ok = fidelity_load_file(path, c, err);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (ok && c->n == 0)
		ok = config_fail(err, "%s: no cases, expected at least one source .yaml file with cases", dir);
	return ok;
}

void fidelity_corpus_free(fidelity_corpus *c)
{
	free(c->cases);
	memset(c, 0, sizeof *c);
}
