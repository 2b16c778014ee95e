/* Sweep specs: a YAML file under `sweep:` whose keys are axes, each a scalar or a list.
 *
 *   sweep:
 *     name: micro-batch scaling           # optional, titles the figures
 *     model: [llama-3.1-8b, qwen1.5-7b]   # shipped names or paths (relative to this file)
 *     platform: a100-2x4-ib400
 *     nodes: [1, 2, 4]                    # default: the platform's
 *     nic_bandwidth: [200Gbps, 400Gbps]   # platform overrides (what-if), see below
 *     strategy: [ulysses, basp, ulysses:sp=N/B]
 *     micro_batch: [1, 2, 4, 8]
 *     seq_len: [8K, 16K, 32K]             # required
 *     zero: [1, 3]
 *     recompute: [none, full]     # or selective
 *     engine: analytic                    # default analytic
 *     calibration: [none, cal.yaml]
 *     a2a: [direct, hierarchical]         # SP all-to-all algorithm (default direct)
 *     basp_uneven: [unequal, extra-step]  # BASP when B does not divide N (default error)
 *     baseline: ulysses                   # speedups are over this strategy (default: the first)
 *
 * Errors are "file:line:column: what is wrong, what was expected" (config/yamltree.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/yamltree.h"
#include "plan/plan.h"

/* Spec keys of the axes, in plan_axis order. */
static const char *const axis_keys[PLAN_AXIS_COUNT] = {
	"model", "platform", "nodes", "gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth", "inter_latency",
	"gpu_memory", "calibration", "engine", "gpus", "zero", "recompute", "a2a", "basp_uneven", "grad_accum", "seq_len",
	"micro_batch", "strategy",
};

/* The range-table row of each numeric axis (0 for the others: they are not numbers). */
static const config_range_id axis_range[PLAN_AXIS_COUNT] = {
	[PLAN_AXIS_NODES] = CONFIG_R_NODES,		[PLAN_AXIS_GPUS_PER_NODE] = CONFIG_R_GPUS_PER_NODE,
	[PLAN_AXIS_NICS] = CONFIG_R_NICS,		[PLAN_AXIS_NIC_BANDWIDTH] = CONFIG_R_NIC_BANDWIDTH,
	[PLAN_AXIS_INTRA_BANDWIDTH] = CONFIG_R_INTRA_BANDWIDTH, [PLAN_AXIS_INTER_LATENCY] = CONFIG_R_INTER_LATENCY,
	[PLAN_AXIS_GPU_MEMORY] = CONFIG_R_GPU_MEMORY,	[PLAN_AXIS_GPUS] = CONFIG_R_GPUS,
	[PLAN_AXIS_ZERO] = CONFIG_R_ZERO,		[PLAN_AXIS_GRAD_ACCUM] = CONFIG_R_GRAD_ACCUM,
	[PLAN_AXIS_SEQ_LEN] = CONFIG_R_SEQ_LEN,		[PLAN_AXIS_MICRO_BATCH] = CONFIG_R_MICRO_BATCH,
};

const char *plan_axis_key(plan_axis a) { return a >= 0 && a < PLAN_AXIS_COUNT ? axis_keys[a] : "?"; }

static const char *const spec_keys[] = {
	"name", "baseline", "zero_overlap", "fp32_grad_comm", "reduce_bucket", "allgather_bucket", "prefetch_bucket",
	"model", "platform", "nodes", "gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth", "inter_latency",
	"gpu_memory", "calibration", "engine", "gpus", "zero", "recompute", "a2a", "basp_uneven", "grad_accum", "seq_len",
	"micro_batch", "strategy", "impl", "memory_reserve", "zero3_prefetch", NULL,
};

#define MAX_POINTS 100000000L


typedef struct loader {
	plan_spec *s;
	char dir[CONFIG_PATH_MAX];
	config_error *err;
} loader;

/* The scalar items of an axis: the node itself when scalar, else the list's items. */
static bool items_of(const yt_node *const *vp, const char *key, const yt_node *const **items, size_t *n,
		     config_error *err)
{
	const yt_node *v = *vp;
	if (v->kind == YT_MAP)
		return yt_fail(err, v, "'%s' must be a value or a list of values, got a mapping", key);
	if (v->kind == YT_SCALAR) {
		*items = vp;
		*n = 1;
		return true;
	}
	if (v->n == 0)
		return yt_fail(err, v, "'%s' is an empty list, expected at least one value", key);
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->kind != YT_SCALAR)
			return yt_fail(err, v->items[i], "'%s' items must be plain values, got a %s", key,
				       v->items[i]->kind == YT_MAP ? "mapping" : "list");
	*items = (const yt_node *const *)v->items;
	*n = v->n;
	return true;
}

/* Parses one item of axis a into val; may load the model/platform/calibration into slot i. */
static bool parse_item(loader *L, plan_axis a, const yt_node *it, size_t i, plan_value *val)
{
	const char *key = axis_keys[a], *t = it->value;
	config_error sub;
	if (!t[0])
		return yt_fail(L->err, it, "'%s' has an empty value, expected a value", key);
	snprintf(val->text, sizeof val->text, "%s", t);
	switch (a) {
	case PLAN_AXIS_MODEL:
	case PLAN_AXIS_PLATFORM: {
		char path[CONFIG_PATH_MAX];
		if (!config_resolve_relative(L->dir, t, path, sizeof path))
			return yt_fail(L->err, it, "'%s' path too long", key);
		bool ok = a == PLAN_AXIS_MODEL ? config_load_model(path, &L->s->models[i], &sub)
					       : config_load_platform(path, &L->s->platforms[i], &sub);
		if (!ok)
			return yt_fail(L->err, it, "%s '%s' cannot be used: %s", key, t, sub.msg);
		return true;
	}
	case PLAN_AXIS_CALIBRATION: {
		config_calibration *c = &L->s->cals[i];
		memset(c, 0, sizeof *c);
		if (strcmp(t, "none") == 0)
			return true;
		char path[CONFIG_PATH_MAX];
		if (!config_resolve_relative(L->dir, t, path, sizeof path) || !config_load_calibration(path, c, &sub))
			return yt_fail(L->err, it, "calibration '%s' cannot be used: %s", t,
				       path[0] ? sub.msg : "path too long");
		return true;
	}
	case PLAN_AXIS_ENGINE:
		if (!engine_find(t)) {
			char list[256] = "";
			size_t used = 0;
			for (int k = 0; engine_registry[k]; k++)
				used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "",
							 engine_registry[k]->name);
			return yt_fail(L->err, it, "unknown engine '%s' (not built into this spsim), expected one of: %s",
				       t, list);
		}
		return true;
	case PLAN_AXIS_STRATEGY: {
		if (!plan_strategy_parse(t, &L->s->strategies[i], &sub))
			return yt_fail(L->err, it, "%s", sub.msg);
		return true;
	}
	case PLAN_AXIS_RECOMPUTE:
		/* the value is the config_recompute: 0 none, 1 full, 2 selective */
		for (int k = 0; k < CONFIG_RECOMPUTES; k++)
			if (strcmp(t, config_recompute_names[k]) == 0) {
				val->num = k;
				return true;
			}
		return yt_fail(L->err, it, "'recompute' must be none, selective or full, got '%.200s'", t);
	case PLAN_AXIS_A2A:
	case PLAN_AXIS_BASP_UNEVEN: {
		static const char *const a2a[] = {"direct", "pairwise", "hierarchical"};
		static const char *const uneven[] = {"error", "unequal", "extra-step"};
		const char *const *names = a == PLAN_AXIS_A2A ? a2a : uneven;
		for (int k = 0; k < 3; k++)
			if (strcmp(t, names[k]) == 0) {
				val->num = k;
				return true;
			}
		return yt_fail(L->err, it, "'%s' must be one of %s, %s, %s, got '%.200s'", key, names[0], names[1], names[2],
			       t);
	}
	case PLAN_AXIS_ZERO:
	case PLAN_AXIS_SEQ_LEN:
	case PLAN_AXIS_NODES:
	case PLAN_AXIS_GPUS_PER_NODE:
	case PLAN_AXIS_NICS:
	case PLAN_AXIS_GPUS:
	case PLAN_AXIS_GRAD_ACCUM:
	case PLAN_AXIS_MICRO_BATCH:
	case PLAN_AXIS_NIC_BANDWIDTH:
	case PLAN_AXIS_INTRA_BANDWIDTH:
	case PLAN_AXIS_INTER_LATENCY:
	case PLAN_AXIS_GPU_MEMORY:
		/* the same ranges as the platform, job and command line (config/ranges.h) */
		if (!config_range_parse(axis_range[a], key, t, &val->num, &sub))
			return yt_fail(L->err, it, "%s", sub.msg);
		if (a == PLAN_AXIS_SEQ_LEN)
			snprintf(val->text, sizeof val->text, "%.0f", val->num);
		return true;
	case PLAN_AXIS_COUNT: break;
	}
	return yt_fail(L->err, it, "internal: axis %d", (int)a);
}

static bool alloc_axis(plan_spec *s, plan_axis a, size_t n)
{
	s->n[a] = (int)n;
	s->values[a] = calloc(n, sizeof *s->values[a]);
	if (!s->values[a])
		return false;
	if (a == PLAN_AXIS_MODEL)
		s->models = calloc(n, sizeof *s->models);
	else if (a == PLAN_AXIS_PLATFORM)
		s->platforms = calloc(n, sizeof *s->platforms);
	else if (a == PLAN_AXIS_CALIBRATION)
		s->cals = calloc(n, sizeof *s->cals);
	else if (a == PLAN_AXIS_STRATEGY)
		s->strategies = calloc(n, sizeof *s->strategies);
	else
		return true;
	return (a == PLAN_AXIS_MODEL && s->models) || (a == PLAN_AXIS_PLATFORM && s->platforms) ||
	       (a == PLAN_AXIS_CALIBRATION && s->cals) || (a == PLAN_AXIS_STRATEGY && s->strategies);
}

/* An axis the spec leaves out: one value that means "the default". */
static bool default_axis(loader *L, plan_axis a)
{
	plan_spec *s = L->s;
	if (!alloc_axis(s, a, 1))
		return config_fail(L->err, "out of memory");
	plan_value *v = &s->values[a][0];
	switch (a) {
	case PLAN_AXIS_ENGINE: snprintf(v->text, sizeof v->text, "analytic"); break;
	case PLAN_AXIS_CALIBRATION: snprintf(v->text, sizeof v->text, "none"); break;
	case PLAN_AXIS_ZERO: v->num = s->base.zero_stage; snprintf(v->text, sizeof v->text, "%d", s->base.zero_stage); break;
	case PLAN_AXIS_RECOMPUTE: v->num = 0; snprintf(v->text, sizeof v->text, "none"); break;
	case PLAN_AXIS_A2A: v->num = s->base.a2a; snprintf(v->text, sizeof v->text, "default"); break;
	case PLAN_AXIS_BASP_UNEVEN: v->num = s->base.basp_uneven; snprintf(v->text, sizeof v->text, "default"); break;
	case PLAN_AXIS_GRAD_ACCUM:
	case PLAN_AXIS_MICRO_BATCH: v->num = 1; snprintf(v->text, sizeof v->text, "1"); break;
	default: v->text[0] = '\0'; v->num = 0; /* the platform's own / all GPUs */
	}
	return true;
}

static bool read_axis(loader *L, const yt_node *t, plan_axis a)
{
	plan_spec *s = L->s;
	const char *key = axis_keys[a];
	const yt_node *v = yt_find(t, key);
	if (!v) {
		if (a == PLAN_AXIS_MODEL || a == PLAN_AXIS_PLATFORM || a == PLAN_AXIS_SEQ_LEN)
			return yt_fail(L->err, t, "missing required key '%s' in 'sweep', expected a value or a list", key);
		if (a == PLAN_AXIS_STRATEGY) {
			/* Sweeps exist to compare: both strategies unless told otherwise. */
			if (!alloc_axis(s, a, 2))
				return config_fail(L->err, "out of memory");
			const char *d[2] = {"ulysses", "basp"};
			for (int i = 0; i < 2; i++) {
				plan_strategy_parse(d[i], &s->strategies[i], NULL);
				snprintf(s->values[a][i].text, sizeof s->values[a][i].text, "%s", d[i]);
			}
			return true;
		}
		return default_axis(L, a);
	}
	const yt_node *const *items = NULL;
	size_t n = 0;
	if (!items_of(&v, key, &items, &n, L->err))
		return false;
	if (!alloc_axis(s, a, n))
		return config_fail(L->err, "out of memory");
	s->given[a] = true;
	for (size_t i = 0; i < n; i++) {
		if (!parse_item(L, a, items[i], i, &s->values[a][i]))
			return false;
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->values[a][j].text, s->values[a][i].text) == 0)
				return yt_fail(L->err, items[i], "'%s' lists '%s' twice, expected distinct values", key,
					       items[i]->value);
	}
	return true;
}

static bool read_base(loader *L, const yt_node *t)
{
	config_job *b = &L->s->base;
	config_job_defaults(b);
	bool has_fp32 = false;
	if (!yt_range(t, CONFIG_R_REDUCE_BUCKET, false, &b->reduce_bucket_elems, NULL, L->err) ||
	    !yt_range(t, CONFIG_R_ALLGATHER_BUCKET, false, &b->allgather_bucket_elems, NULL, L->err) ||
	    !yt_range(t, CONFIG_R_PREFETCH_BUCKET, false, &b->prefetch_bucket_elems, NULL, L->err) ||
	    !yt_bool(t, "fp32_grad_comm", false, &b->fp32_grad_comm, &has_fp32, L->err))
		return false;
	int impl = b->impl, z3p = b->zero3_prefetch;
	if (!yt_enum(t, "impl", false, config_impl_names, 2, &impl, NULL, L->err) ||
	    !yt_enum(t, "zero3_prefetch", false, config_zero3_prefetch_names, 2, &z3p, NULL, L->err) ||
	    !yt_size_or_zero(t, "memory_reserve", &b->memory_reserve, &b->memory_reserve_set, L->err))
		return false;
	b->impl = (config_impl)impl;
	b->zero3_prefetch = (config_zero3_prefetch)z3p;
	b->fp32_grad_comm_set = has_fp32;
	const yt_node *ov = yt_find(t, "zero_overlap");
	if (ov) {
		static const char *const ovs[] = {"default", "false", "true"};
		int k = 0;
		if (!yt_enum(t, "zero_overlap", false, ovs, 3, &k, NULL, L->err))
			return false;
		b->zero_overlap = k - 1;
	}
	return true;
}

bool plan_spec_load(const char *path, plan_spec *out, config_error *err)
{
	memset(out, 0, sizeof *out);
	plan_spec *s = out;
	if (strlen(path) >= sizeof s->path)
		return config_fail(err, "%s: path too long", path);
	strcpy(s->path, path);
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	loader L = {.s = s, .err = err};
	config_dir_of(path, L.dir, sizeof L.dir);
	const yt_node *t;
	bool ok = yt_top(doc, "sweep", &t, err) && yt_check_keys(t, spec_keys, err) &&
		  yt_string(t, "name", false, s->name, sizeof s->name, NULL, err) &&
		  yt_string(t, "baseline", false, s->baseline, sizeof s->baseline, NULL, err) && read_base(&L, t);
	for (int a = 0; ok && a < PLAN_AXIS_COUNT; a++)
		ok = read_axis(&L, t, (plan_axis)a);
	if (ok && !s->name[0]) {
		/* The file name without directory and extension. */
		const char *b = strrchr(path, '/');
		b = b ? b + 1 : path;
		const char *dot = strrchr(b, '.');
		snprintf(s->name, sizeof s->name, "%.*s", (int)(dot && dot > b ? dot - b : (long)strlen(b)), b);
	}
	if (ok) {
		if (s->baseline[0]) {
			bool found = false;
			for (int i = 0; i < s->n[PLAN_AXIS_STRATEGY]; i++)
				found |= strcmp(s->strategies[i].label, s->baseline) == 0;
			if (!found)
				ok = yt_fail(err, yt_find(t, "baseline"),
					     "baseline '%s' is not one of the strategies of this sweep, expected one of its "
					     "'strategy' values", s->baseline);
		} else {
			snprintf(s->baseline, sizeof s->baseline, "%s", s->strategies[0].label);
		}
	}
	if (ok) {
		double n = 1;
		for (int a = 0; a < PLAN_AXIS_COUNT; a++)
			n *= s->n[a];
		if (n > MAX_POINTS)
			ok = yt_fail(err, t, "the grid has %.0f points, more than %ld; split the sweep into several specs", n,
				     MAX_POINTS);
		s->n_points = (long)n;
	}
	yt_free(doc);
	if (!ok)
		plan_spec_finish(s);
	return ok;
}

void plan_spec_finish(plan_spec *s)
{
	if (!s)
		return;
	for (int a = 0; a < PLAN_AXIS_COUNT; a++)
		free(s->values[a]);
	free(s->models);
	free(s->platforms);
	free(s->cals);
	free(s->strategies);
	char path[CONFIG_PATH_MAX];
	memcpy(path, s->path, sizeof path);
	memset(s, 0, sizeof *s);
	memcpy(s->path, path, sizeof path);
}
