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
 *     cp_comm_type: [p2p, all_gather]     # Megatron-Core's name for the SP group's strategy
 *     attention_kernel: [flash-attn-2, cudnn]
 *     placement: [contiguous, strided]    # simgrid engine
 *     what_if: [none, slow-gpu=3:2]       # simgrid engine; compare --what-if's syntax
 *     baseline: ulysses                   # speedups are over this strategy (default: the first)
 *
 * Every job-file key that sets a plain job field (recompute, a2a, basp_uneven,
 * attention_kernel, impl, offload_activations, offload_optimizer, tile_mlp, tile_logits, memory_reserve,
 * zero_overlap, fp32_grad_comm, contiguous_gradients, the buckets, dtype) is an axis read through the job file's
 * own table (config_job_setting_read), so a value means what it means in a job file.
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
	"gpu_memory", "calibration", "engine", "placement", "what_if", "gpus", "zero", "recompute", "a2a", "basp_uneven",
	"cp_comm_type", "attention_kernel", "impl", "zero3_prefetch", "offload_activations", "offload_optimizer", "tile_mlp", "tile_logits",
	"memory_reserve", "zero_overlap", "fp32_grad_comm", "contiguous_gradients", "reduce_bucket", "allgather_bucket", "prefetch_bucket", "dtype", "grad_accum",
	"seq_len", "micro_batch", "strategy",
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

/* Job-file keys a sweep writes in its strategy values instead, and how. */
static const char *const strategy_spelled[][2] = {
	{"sp", "strategy: ulysses:sp=4 (or :sp=N/B)"},
	{"basp_inner", "strategy: basp:inner=ring (or basp:inner=usp)"},
	{"cp_split", "strategy: ring:split=naive"},
	{"ulysses_degree", "strategy: usp:u=4:r=2"},
	{"ring_degree", "strategy: usp:u=4:r=2"},
};

/* The keys of `sweep:`: name, baseline and the axes. */
static bool check_keys(const yt_node *t, config_error *err)
{
	for (size_t i = 0; i < sizeof strategy_spelled / sizeof strategy_spelled[0]; i++) {
		const yt_node *v = yt_find(t, strategy_spelled[i][0]);
		for (size_t k = 0; v && k < t->n; k++)
			if (t->items[k] == v)
				return yt_fail(err, t->keys[k],
					       "'%s' is part of the strategy in a sweep spec, expected it in the strategy "
					       "values, e.g. %s",
					       strategy_spelled[i][0], strategy_spelled[i][1]);
	}
	const char *known[PLAN_AXIS_COUNT + 3] = {"name", "baseline"};
	for (int a = 0; a < PLAN_AXIS_COUNT; a++)
		known[2 + a] = axis_keys[a];
	return yt_check_keys(t, known, err);
}

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
	const bool maps = strcmp(key, "what_if") == 0; /* a job file's what_if mapping is one value */
	if (v->kind == YT_MAP && !maps)
		return yt_fail(err, v, "'%s' must be a value or a list of values, got a mapping", key);
	if (v->kind != YT_SEQ) {
		*items = vp;
		*n = 1;
		return true;
	}
	if (v->n == 0)
		return yt_fail(err, v, "'%s' is an empty list, expected at least one value", key);
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->kind != YT_SCALAR && !(maps && v->items[i]->kind == YT_MAP))
			return yt_fail(err, v->items[i], "'%s' items must be plain values, got a %s", key,
				       v->items[i]->kind == YT_MAP ? "mapping" : "list");
	*items = (const yt_node *const *)v->items;
	*n = v->n;
	return true;
}

/* A what_if value written as a job file's mapping (slow_gpu: ..., degrade: ...); its text
 * is compare --what-if's spelling, KIND=VALUE joined by '+'. */
static bool whatif_map(loader *L, const yt_node *it, size_t i, plan_value *val)
{
	config_whatif *w = &L->s->whatifs[i];
	memset(w, 0, sizeof *w);
	if (!config_read_whatif(it, w, L->err))
		return false;
	if (w->n == 0)
		return yt_fail(L->err, it, "'what_if' is an empty mapping, expected slow_gpu, slow_node, degrade, "
					   "fail_node or background");
	size_t used = 0;
	val->text[0] = '\0';
	for (int k = 0; k < w->n && used < sizeof val->text; k++) {
		char b[160], *sp;
		config_whatif_format(&w->item[k], b, sizeof b);
		if ((sp = strchr(b, ' ')))
			*sp = '=';
		used += (size_t)snprintf(val->text + used, sizeof val->text - used, "%s%s", k ? "+" : "", b);
	}
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
	case PLAN_AXIS_CP_COMM_TYPE: {
		yt_entry e;
		int k = 0;
		if (!yt_enum(yt_entry_of(&e, key, it), key, false, config_cp_comm_type_names, 4, &k, NULL, L->err))
			return false;
		val->num = k;
		return true;
	}
	case PLAN_AXIS_PLACEMENT: {
		engine_options o = {0};
		if (!engine_placement_parse(t, &o, &sub))
			return yt_fail(L->err, it, "%s", sub.msg);
		val->num = o.placement;
		return true;
	}
	case PLAN_AXIS_WHAT_IF: {
		config_whatif *w = &L->s->whatifs[i];
		memset(w, 0, sizeof *w);
		if (strcmp(t, "none") != 0 && !config_whatif_parse_spec(w, t, &sub))
			return yt_fail(L->err, it, "%s", sub.msg);
		return true;
	}
	case PLAN_AXIS_RECOMPUTE:
	case PLAN_AXIS_A2A:
	case PLAN_AXIS_BASP_UNEVEN:
	case PLAN_AXIS_ATTENTION_KERNEL:
	case PLAN_AXIS_IMPL:
	case PLAN_AXIS_ZERO3_PREFETCH:
	case PLAN_AXIS_OFFLOAD_ACTIVATIONS:
	case PLAN_AXIS_OFFLOAD_OPTIMIZER:
	case PLAN_AXIS_TILE_MLP:
	case PLAN_AXIS_TILE_LOGITS:
	case PLAN_AXIS_MEMORY_RESERVE:
	case PLAN_AXIS_ZERO_OVERLAP:
	case PLAN_AXIS_FP32_GRAD_COMM:
	case PLAN_AXIS_CONTIGUOUS_GRADIENTS:
	case PLAN_AXIS_REDUCE_BUCKET:
	case PLAN_AXIS_ALLGATHER_BUCKET:
	case PLAN_AXIS_PREFETCH_BUCKET:
	case PLAN_AXIS_DTYPE: {
		/* the job file's own reading of the key */
		yt_entry e;
		val->job = L->s->base;
		return config_job_setting_read(yt_entry_of(&e, key, it), config_job_setting_find(key), &val->job, NULL,
					       L->err);
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
	else if (a == PLAN_AXIS_WHAT_IF)
		s->whatifs = calloc(n, sizeof *s->whatifs);
	else
		return true;
	return (a == PLAN_AXIS_MODEL && s->models) || (a == PLAN_AXIS_PLATFORM && s->platforms) ||
	       (a == PLAN_AXIS_CALIBRATION && s->cals) || (a == PLAN_AXIS_STRATEGY && s->strategies) ||
	       (a == PLAN_AXIS_WHAT_IF && s->whatifs);
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
	case PLAN_AXIS_PLACEMENT: v->num = ENGINE_PLACE_CONTIGUOUS; snprintf(v->text, sizeof v->text, "contiguous"); break;
	case PLAN_AXIS_WHAT_IF: snprintf(v->text, sizeof v->text, "none"); break; /* whatifs[0] is empty */
	case PLAN_AXIS_GRAD_ACCUM:
	case PLAN_AXIS_MICRO_BATCH: v->num = 1; snprintf(v->text, sizeof v->text, "1"); break;
	default: v->text[0] = '\0'; v->num = 0; /* the platform's own / all GPUs; the base job's setting */
	}
	v->job = s->base;
	return true;
}

/* Two values of axis a that make the same points: the same job setting or number however
 * spelled (1GiB and 1024MiB, 8K and 8192), else the same text. */
static bool same_value(plan_axis a, const plan_value *x, const plan_value *y)
{
	int k = config_job_setting_find(axis_keys[a]);
	if (k >= 0)
		return config_job_setting_equal(k, &x->job, &y->job);
	if (axis_range[a] != CONFIG_R_NODES || a == PLAN_AXIS_NODES)
		return x->num == y->num;
	return strcmp(x->text, y->text) == 0;
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
			/* Sweeps exist to compare: both strategies unless told otherwise. A
			 * cp_comm_type turns them into the type itself and BASP over it: the first
			 * is then labelled `plain`, which is no longer Ulysses. */
			if (!alloc_axis(s, a, 2))
				return config_fail(L->err, "out of memory");
			const char *d[2] = {"ulysses", "basp"};
			for (int i = 0; i < 2; i++) {
				plan_strategy_parse(d[i], &s->strategies[i], NULL);
				if (i == 0 && s->given[PLAN_AXIS_CP_COMM_TYPE])
					snprintf(s->strategies[i].label, sizeof s->strategies[i].label, "plain");
				snprintf(s->values[a][i].text, sizeof s->values[a][i].text, "%s", s->strategies[i].label);
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
		bool ok = a == PLAN_AXIS_WHAT_IF && items[i]->kind == YT_MAP ? whatif_map(L, items[i], i, &s->values[a][i])
									      : parse_item(L, a, items[i], i, &s->values[a][i]);
		if (!ok)
			return false;
		for (size_t j = 0; j < i; j++) {
			const char *was = s->values[a][j].text, *is = s->values[a][i].text;
			if (strcmp(was, is) == 0)
				return yt_fail(L->err, items[i], "'%s' lists '%s' twice, expected distinct values", key, is);
			if (same_value(a, &s->values[a][j], &s->values[a][i]))
				return yt_fail(L->err, items[i], "'%s' lists '%s', the same value as '%s', expected distinct values",
					       key, is, was);
		}
	}
	return true;
}

/* A placement or what-if value no engine of the spec can run is a spec error, not a grid
 * of invalid points (a value some engine runs makes invalid points on the others). */
static bool engines_can_run(const plan_spec *s, const yt_node *t, config_error *err)
{
	for (int a = PLAN_AXIS_PLACEMENT; a <= PLAN_AXIS_WHAT_IF; a++) {
		const yt_node *v = yt_find(t, axis_keys[a]);
		for (int i = 0; v && i < s->n[a]; i++) {
			engine_options o = {.placement = ENGINE_PLACE_CONTIGUOUS};
			if (a == PLAN_AXIS_PLACEMENT)
				engine_placement_parse(s->values[a][i].text, &o, NULL);
			else if (s->whatifs[i].n > 0)
				o.whatif = &s->whatifs[i];
			config_error why = {""};
			bool any = false;
			for (int e = 0; e < s->n[PLAN_AXIS_ENGINE] && !any; e++) {
				const char *engine = s->values[PLAN_AXIS_ENGINE][e].text;
				any = a == PLAN_AXIS_PLACEMENT ? engine_placement_supported(engine, &o, &why)
							       : engine_whatif_supported(engine, &o, &why);
			}
			if (!any)
				return yt_fail(err, v->kind == YT_SEQ ? v->items[i] : v,
					       "'%s' %s cannot run on the engine%s of this sweep (%s), expected engine: "
					       "simgrid",
					       axis_keys[a], s->values[a][i].text, s->n[PLAN_AXIS_ENGINE] > 1 ? "s" : "", why.msg);
		}
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
	config_job_defaults(&s->base);
	bool ok = yt_top(doc, "sweep", &t, err) && check_keys(t, err) &&
		  yt_string(t, "name", false, s->name, sizeof s->name, NULL, err) &&
		  yt_string(t, "baseline", false, s->baseline, sizeof s->baseline, NULL, err);
	for (int a = 0; ok && a < PLAN_AXIS_COUNT; a++)
		ok = read_axis(&L, t, (plan_axis)a);
	ok = ok && engines_can_run(s, t, err);
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
	free(s->whatifs);
	char path[CONFIG_PATH_MAX];
	memcpy(path, s->path, sizeof path);
	memset(s, 0, sizeof *s);
	memcpy(s->path, path, sizeof path);
}
