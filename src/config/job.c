/* Jobs: what to run (strategy, GPUs, batch, sequence, ZeRO) with DeepSpeed's defaults. */
#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

void config_job_defaults(config_job *job)
{
	memset(job, 0, sizeof *job);
	job->strategy = CONFIG_STRATEGY_ULYSSES;
	job->gpus = 0;        /* all GPUs of the platform */
	job->sp = 0;          /* = gpus */
	job->micro_batch = 1;
	job->seq_len = 0;     /* not set: the caller must supply one */
	job->grad_accum = 1;  /* DeepSpeed gradient_accumulation_steps default */
	job->zero_stage = 1;
	job->recompute = CONFIG_RECOMPUTE_NONE;
	job->dtype = CONFIG_DTYPE_BF16;
	/* DeepSpeed defaults (docs/sources.md [DS-zero-config], [DS-sp-comm]): overlap_comm true only
	 * for stage 3; reduce/allgather buckets 5e8 elements; stage-3 prefetch bucket 5e7;
	 * gradients communicated in fp32 when SP > 1. */
	job->zero_overlap = -1;
	job->reduce_bucket_elems = 5e8;
	job->allgather_bucket_elems = 5e8;
	job->prefetch_bucket_elems = 5e7;
	job->fp32_grad_comm = false;
	job->fp32_grad_comm_set = 0;
	/* DeepSpeed's default: deepspeed/runtime/zero/config.py DeepSpeedZeroConfig,
	 * contiguous_gradients: bool = True (docs/sources.md [DS-zero-config]). */
	job->contiguous_gradients = true;
	job->attention_kernel = -1; /* the platform's attention_kernel */
	job->tile_mlp = 1;
	job->tile_logits = 1;
}

bool config_job_zero_overlap(const config_job *job)
{
	return job->zero_overlap < 0 ? job->zero_stage == 3 : job->zero_overlap != 0;
}

bool config_job_contiguous_gradients(const config_job *job)
{
	/* stage_1_and_2.py DeepSpeedZeroOptimizer.__init__: "CPU-Offload requires contiguous
	 * gradients", self.contiguous_gradients = contiguous_gradients or self.cpu_offload;
	 * stage3.py takes the setting as given. */
	const bool offload12 = job->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU && (job->zero_stage == 1 || job->zero_stage == 2);
	return job->contiguous_gradients || offload12;
}

bool config_job_fp32_grad_comm(const config_job *job, int sp)
{
	return job->fp32_grad_comm_set ? job->fp32_grad_comm : sp > 1;
}

config_attn_kernel config_job_attention_kernel(const config_job *job, const config_platform *p)
{
	return job->attention_kernel >= 0 ? (config_attn_kernel)job->attention_kernel : p->attention_kernel;
}

const char *const config_job_keys[] = {
	"gpus",          "strategy",         "sp",              "micro_batch",    "seq_len",
	"grad_accum",    "zero",             "recompute",       "dtype",          "zero_overlap",
	"reduce_bucket", "allgather_bucket", "prefetch_bucket", "fp32_grad_comm", "model",
	"platform",      "nodes",            "calibration",     "a2a",            "basp_uneven",
	"attention_kernel", "impl", "zero3_prefetch",         "memory_reserve",   "basp_inner",     "cp_split",
	"ulysses_degree", "ring_degree", "what_if", "cp_comm_type", "offload_activations", "tile_mlp", "tile_logits",
	"offload_optimizer", "contiguous_gradients", NULL,
};

/* ---------------------------------------------------------------- settings --- */
/* The job keys that set plain fields of config_job, in one table: job files read them
 * here (job_read) and sweep specs read each of their values through the same entry
 * (config_job_setting_read on a one-entry mapping), so both take the same spellings,
 * ranges and messages. */
typedef enum setting_kind { K_ENUM, K_BOOL, K_RANGE, K_RANGE_INT, K_SIZE_OR_ZERO, K_TRISTATE, K_BUCKET } setting_kind;
typedef struct setting {
	const char *key;
	setting_kind kind;
	const char *const *names; /* K_ENUM */
	int n;
	config_range_id range;    /* K_RANGE, K_RANGE_INT */
	size_t off, size;         /* the field */
	size_t flag_off, flag_size; /* a field set to 1 when the key is given (0 size: none);
				     * K_BUCKET: whether the value is auto (0 size: auto refused) */
} setting;

static const char *const dtype_names[] = {"bf16"};
#define FIELD(f) offsetof(config_job, f), sizeof(((config_job *)0)->f)
#define NOFLAG 0, 0
static const setting settings[] = {
	{"recompute", K_ENUM, config_recompute_names, CONFIG_RECOMPUTES, 0, FIELD(recompute), NOFLAG},
	{"dtype", K_ENUM, dtype_names, 1, 0, FIELD(dtype), NOFLAG},
	{"a2a", K_ENUM, config_a2a_names, 3, 0, FIELD(a2a), NOFLAG},
	{"basp_uneven", K_ENUM, config_basp_uneven_names, 3, 0, FIELD(basp_uneven), NOFLAG},
	{"attention_kernel", K_ENUM, config_attn_kernel_names, CONFIG_ATTN_KERNELS, 0, FIELD(attention_kernel), NOFLAG},
	{"impl", K_ENUM, config_impl_names, CONFIG_IMPLS, 0, FIELD(impl), NOFLAG},
	{"zero3_prefetch", K_ENUM, config_zero3_prefetch_names, 2, 0, FIELD(zero3_prefetch), NOFLAG},
	{"memory_reserve", K_SIZE_OR_ZERO, NULL, 0, 0, FIELD(memory_reserve), FIELD(memory_reserve_set)},
	{"zero_overlap", K_TRISTATE, NULL, 0, 0, FIELD(zero_overlap), NOFLAG},
	{"reduce_bucket", K_BUCKET, NULL, 0, CONFIG_R_REDUCE_BUCKET, FIELD(reduce_bucket_elems), FIELD(reduce_bucket_auto)},
	{"allgather_bucket", K_BUCKET, NULL, 0, CONFIG_R_ALLGATHER_BUCKET, FIELD(allgather_bucket_elems), NOFLAG},
	{"prefetch_bucket", K_BUCKET, NULL, 0, CONFIG_R_PREFETCH_BUCKET, FIELD(prefetch_bucket_elems), FIELD(prefetch_bucket_auto)},
	{"fp32_grad_comm", K_BOOL, NULL, 0, 0, FIELD(fp32_grad_comm), FIELD(fp32_grad_comm_set)},
	{"contiguous_gradients", K_BOOL, NULL, 0, 0, FIELD(contiguous_gradients), NOFLAG},
	{"offload_activations", K_BOOL, NULL, 0, 0, FIELD(offload_activations), NOFLAG},
	{"offload_optimizer", K_ENUM, config_offload_optimizer_names, 2, 0, FIELD(offload_optimizer), NOFLAG},
	{"tile_mlp", K_RANGE_INT, NULL, 0, CONFIG_R_TILE_MLP, FIELD(tile_mlp), NOFLAG},
	{"tile_logits", K_RANGE_INT, NULL, 0, CONFIG_R_TILE_LOGITS, FIELD(tile_logits), NOFLAG},
};
#undef FIELD
#undef NOFLAG
#define N_SETTINGS ((int)(sizeof settings / sizeof settings[0]))
/* enum fields are written as an int */
_Static_assert(sizeof(config_recompute) == sizeof(int) && sizeof(config_a2a) == sizeof(int) &&
		       sizeof(config_impl) == sizeof(int) && sizeof(config_dtype) == sizeof(int) &&
		       sizeof(config_basp_uneven) == sizeof(int) && sizeof(config_zero3_prefetch) == sizeof(int) &&
		       sizeof(config_offload_optimizer) == sizeof(int),
	       "enum job fields are int-sized");

int config_job_setting_find(const char *key)
{
	for (int i = 0; i < N_SETTINGS; i++)
		if (strcmp(settings[i].key, key) == 0)
			return i;
	return -1;
}

const char *config_job_setting_key(int i) { return i >= 0 && i < N_SETTINGS ? settings[i].key : NULL; }

/* zero_overlap: true, false, or "default" (DeepSpeed's per-stage default). */
static bool read_tristate(const yt_node *t, const char *key, int *out, config_error *err)
{
	const yt_node *ov = yt_find(t, key);
	if (ov->kind == YT_SCALAR && strcmp(ov->value, "default") == 0) {
		*out = -1;
		return true;
	}
	bool b = false;
	if (ov->kind != YT_SCALAR || !yt_bool(t, key, false, &b, NULL, NULL))
		return yt_fail(err, ov, "'%s' must be true, false or default, got %s%.200s%s", key,
			       ov->kind == YT_SCALAR ? "'" : "",
			       ov->kind == YT_SCALAR ? ov->value : ov->kind == YT_MAP ? "a mapping" : "a sequence",
			       ov->kind == YT_SCALAR ? "'" : "");
	*out = b ? 1 : 0;
	return true;
}

bool config_job_setting_read(const yt_node *t, int i, config_job *job, bool *found, config_error *err)
{
	const setting *s = &settings[i];
	bool f = yt_find(t, s->key) != NULL;
	if (found)
		*found = f;
	if (!f)
		return true;
	char *field = (char *)job + s->off;
	bool ok = true, b = false;
	int k = 0;
	double d = 0;
	switch (s->kind) {
	case K_ENUM:
		memcpy(&k, field, sizeof k);
		ok = yt_enum(t, s->key, false, s->names, s->n, &k, NULL, err);
		memcpy(field, &k, sizeof k);
		break;
	case K_BOOL:
		ok = yt_bool(t, s->key, false, &b, NULL, err);
		memcpy(field, &b, sizeof b);
		break;
	case K_RANGE:
		ok = yt_range(t, s->range, false, &d, NULL, err);
		memcpy(field, &d, sizeof d);
		break;
	case K_RANGE_INT:
		ok = yt_range_int(t, s->range, false, &k, NULL, err);
		memcpy(field, &k, sizeof k);
		break;
	case K_SIZE_OR_ZERO:
		ok = yt_size_or_zero(t, s->key, &d, NULL, err);
		memcpy(field, &d, sizeof d);
		break;
	case K_TRISTATE:
		ok = read_tristate(t, s->key, &k, err);
		memcpy(field, &k, sizeof k);
		break;
	case K_BUCKET: {
		const yt_node *v = yt_find(t, s->key);
		config_error e;
		if (v->kind != YT_SCALAR) /* the range's own message for a mapping or a sequence */
			return yt_range(t, s->range, false, &d, NULL, err);
		if (!config_job_bucket_parse(s->range, s->key, false, v->value, &d, &b, &e))
			return yt_fail(err, v, "%s", e.msg);
		memcpy(field, &d, sizeof d);
		if (s->flag_size)
			memcpy((char *)job + s->flag_off, &b, sizeof b);
		return true;
	}
	}
	if (ok && s->flag_size) {
		const bool yes = true;
		const int one = 1;
		memcpy((char *)job + s->flag_off, s->flag_size == sizeof yes ? (const void *)&yes : (const void *)&one,
		       s->flag_size);
	}
	return ok;
}

void config_job_setting_copy(int i, config_job *dst, const config_job *src)
{
	const setting *s = &settings[i];
	memcpy((char *)dst + s->off, (const char *)src + s->off, s->size);
	if (s->flag_size)
		memcpy((char *)dst + s->flag_off, (const char *)src + s->flag_off, s->flag_size);
}

bool config_job_setting_equal(int i, const config_job *a, const config_job *b)
{
	const setting *s = &settings[i];
	return memcmp((const char *)a + s->off, (const char *)b + s->off, s->size) == 0 &&
	       (!s->flag_size || memcmp((const char *)a + s->flag_off, (const char *)b + s->flag_off, s->flag_size) == 0);
}

bool config_job_read_fields(const yt_node *t, const char *doc_path, config_job *job, char *model, char *platform,
			    char *calibration, int *nodes, config_whatif *whatif, config_error *err)
{
	static const char *const basp_inners[] = {"ulysses", "ring", "usp"};
	if (!yt_check_keys(t, config_job_keys, err))
		return false;
	int strategy = job->strategy,
	    inner = job->basp_inner == CONFIG_STRATEGY_RING ? 1 : job->basp_inner == CONFIG_STRATEGY_USP ? 2 : 0, split = job->cp_split,
	    ctype = -1;
	long zero = job->zero_stage;
	for (int i = 0; i < N_SETTINGS; i++)
		if (!config_job_setting_read(t, i, job, NULL, err))
			return false;
	if (!yt_enum(t, "strategy", false, config_strategy_names, 4, &strategy, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_GPUS, false, &job->gpus, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_SP, false, &job->sp, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_MICRO_BATCH, false, &job->micro_batch, NULL, err) ||
	    !yt_range_long(t, CONFIG_R_SEQ_LEN, false, &job->seq_len, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_GRAD_ACCUM, false, &job->grad_accum, NULL, err) ||
	    !yt_range_long(t, CONFIG_R_ZERO, false, &zero, NULL, err) ||
	    !yt_enum(t, "basp_inner", false, basp_inners, 3, &inner, NULL, err) ||
	    !yt_posint(t, "ulysses_degree", false, &job->ulysses_degree, NULL, err) ||
	    !yt_posint(t, "ring_degree", false, &job->ring_degree, NULL, err) ||
	    !yt_enum(t, "cp_split", false, config_cp_split_names, 2, &split, NULL, err) ||
	    !yt_enum(t, "cp_comm_type", false, config_cp_comm_type_names, 4, &ctype, NULL, err))
		return false;
	job->strategy = (config_strategy)strategy;
	job->basp_inner = inner == 1 ? CONFIG_STRATEGY_RING : inner == 2 ? CONFIG_STRATEGY_USP : CONFIG_STRATEGY_ULYSSES;
	job->cp_split = (config_cp_split)split;
	if (ctype >= 0) { /* Megatron-Core's name for the SP group's strategy (BASP: its inner) */
		config_error e;
		if (!config_job_apply_cp_comm_type(job, (config_cp_comm_type)ctype, yt_find(t, "strategy") != NULL, &e))
			return yt_fail(err, yt_find(t, "cp_comm_type"), "%s", e.msg);
	}
	job->zero_stage = (int)zero;
	char m[CONFIG_PATH_MAX] = "", pl[CONFIG_PATH_MAX] = "", cal[CONFIG_PATH_MAX] = "";
	int n = 0;
	if (!yt_string(t, "model", false, m, sizeof m, NULL, err) ||
	    !yt_string(t, "platform", false, pl, sizeof pl, NULL, err) ||
	    !yt_string(t, "calibration", false, cal, sizeof cal, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_NODES, false, &n, NULL, err))
		return false;
	/* what_if: read here only for a caller that keeps it (job files leave it to
	 * config_load_whatif); appended below once everything else is valid. */
	config_whatif wi = {0};
	const yt_node *wn = NULL;
	if (whatif && (!yt_map(t, "what_if", false, &wn, err) || (wn && !config_read_whatif(wn, &wi, err))))
		return false;
	/* Paths are relative to the job file's directory (shipped names stay names). */
	char dir[CONFIG_PATH_MAX];
	config_dir_of(doc_path, dir, sizeof dir);
	char *const fields[] = {m, pl, cal};
	for (int i = 0; i < 3; i++) {
		char resolved[CONFIG_PATH_MAX];
		if (fields[i][0] && !config_resolve_relative(dir, fields[i], resolved, sizeof resolved))
			return yt_fail(err, yt_find(t, i == 0 ? "model" : i == 1 ? "platform" : "calibration"),
				       "path too long once joined to the file's directory '%s'", dir);
		if (fields[i][0])
			memcpy(fields[i], resolved, CONFIG_PATH_MAX);
	}
	if (whatif && whatif->n + wi.n > CONFIG_MAX_WHATIF)
		return yt_fail(err, wn, "too many what-ifs (%d), expected at most %d", whatif->n + wi.n, CONFIG_MAX_WHATIF);
	/* Outputs change only once the whole mapping is known to be valid. */
	if (model && m[0])
		memcpy(model, m, sizeof m);
	if (platform && pl[0])
		memcpy(platform, pl, sizeof pl);
	if (calibration && cal[0])
		memcpy(calibration, cal, sizeof cal);
	if (nodes)
		*nodes = n;
	for (int i = 0; whatif && i < wi.n; i++)
		whatif->item[whatif->n++] = wi.item[i];
	return true;
}

static bool job_read(const yt_doc *doc, const char *doc_path, config_job *job, char *model, char *platform, char *calibration,
		     int *nodes, config_error *err)
{
	const yt_node *t;
	return yt_top(doc, "job", &t, err) &&
	       config_job_read_fields(t, doc_path, job, model, platform, calibration, nodes, NULL, err);
}

bool config_load_job(const char *path, config_job *job, char *model, char *platform, char *calibration, int *nodes,
		     config_error *err)
{
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	config_job j = *job;
	bool ok = job_read(doc, path, &j, model, platform, calibration, nodes, err);
	yt_free(doc);
	if (ok)
		*job = j;
	return ok;
}

bool config_job_check(const config_job *job, config_error *err)
{
	const config_range_value v[] = {
		{CONFIG_R_GPUS, job->gpus ? job->gpus : 1},
		{CONFIG_R_SP, job->sp ? job->sp : 1},
		{CONFIG_R_MICRO_BATCH, job->micro_batch},
		{CONFIG_R_SEQ_LEN, (double)job->seq_len},
		{CONFIG_R_GRAD_ACCUM, job->grad_accum},
		{CONFIG_R_ZERO, job->zero_stage},
		{CONFIG_R_REDUCE_BUCKET, job->reduce_bucket_elems},
		{CONFIG_R_ALLGATHER_BUCKET, job->allgather_bucket_elems},
		{CONFIG_R_PREFETCH_BUCKET, job->prefetch_bucket_elems},
	};
	return config_range_check_all("job", NULL, v, sizeof v / sizeof v[0], err);
}

bool config_job_bucket_parse(config_range_id id, const char *name, bool flag, const char *text, double *elems,
			     bool *is_auto, config_error *err)
{
	/* transformers fills reduce_bucket_size and stage3_prefetch_bucket_size from the model
	 * when they read "auto" (config_job_resolve_auto); allgather_bucket_size never */
	const bool can_auto = id != CONFIG_R_ALLGATHER_BUCKET;
	if (can_auto && strcmp(text, "auto") == 0) {
		*elems = 0;
		*is_auto = true;
		return true;
	}
	config_error re;
	if (config_range_parse(id, name, text, elems, &re)) {
		*is_auto = false;
		return true;
	}
	char e[160];
	config_range_expect(id, e, sizeof e);
	const char *why = !can_auto && strcmp(text, "auto") == 0
				  ? " (no auto here: transformers' Trainer fills reduce_bucket_size and "
				    "stage3_prefetch_bucket_size from the model's hidden size, never allgather_bucket_size)"
				  : "";
	return flag ? config_fail(err, "%s expects %s%s, got '%.200s'%s", name, can_auto ? "auto or " : "", e, text, why)
		    : config_fail(err, "'%s' must be %s%s, got '%.200s'%s", name, can_auto ? "auto or " : "", e, text, why);
}

void config_job_resolve_auto(config_job *job, const config_model *m)
{
	/* transformers, src/transformers/integrations/deepspeed.py,
	 * HfTrainerDeepSpeedConfig.trainer_config_finalize: hidden_size = model.config.hidden_size;
	 *   fill_only("zero_optimization.reduce_bucket_size", hidden_size * hidden_size)
	 *   if self.is_zero3(): fill_only("zero_optimization.stage3_prefetch_bucket_size",
	 *                                 int(0.9 * hidden_size * hidden_size))
	 * (prefetch is filled at stage 3 only, the only stage spsim reads it at). 0.9 * h * h
	 * is evaluated left to right in doubles as in Python, and int() truncates: floor for
	 * a positive value. */
	const double h = m->hidden;
	if (job->reduce_bucket_auto)
		job->reduce_bucket_elems = h * h;
	if (job->prefetch_bucket_auto)
		job->prefetch_bucket_elems = floor(0.9 * h * h);
}

bool config_job_unused_zero(const config_job *job, char *buf, size_t n)
{
	config_job d;
	config_job_defaults(&d);
	const int z = job->zero_stage;
	char z3p[48], pb[48], ab[48];
	snprintf(z3p, sizeof z3p, "--zero3-prefetch %s", config_zero3_prefetch_names[job->zero3_prefetch]);
	if (job->prefetch_bucket_auto)
		snprintf(pb, sizeof pb, "--prefetch-bucket auto");
	else
		snprintf(pb, sizeof pb, "--prefetch-bucket %g", job->prefetch_bucket_elems);
	snprintf(ab, sizeof ab, "--allgather-bucket %g", job->allgather_bucket_elems);
	const struct {
		bool unused;
		const char *what, *stages;
	} s[] = {
		{z != 3 && job->zero3_prefetch != d.zero3_prefetch, z3p, "ZeRO-3 only"},
		{z != 3 && (job->prefetch_bucket_auto || job->prefetch_bucket_elems != d.prefetch_bucket_elems), pb,
		 "ZeRO-3 only"},
		{z == 0 && job->allgather_bucket_elems != d.allgather_bucket_elems, ab, "ZeRO-1 to 3"},
		/* contiguous_gradients is DeepSpeed's ZeRO optimizers' (stage 0 all-reduces in the
		 * engine; PyTorch FSDP has no reduce bucket); stages 1-2 force it on under offload */
		{!job->contiguous_gradients && (z == 0 || (z == 3 && job->zero3_prefetch == CONFIG_ZERO3_PREFETCH_LAYER)),
		 "--contiguous-gradients off", "DeepSpeed ZeRO-1 to 3 only, not zero3_prefetch layer"},
		{config_job_contiguous_gradients(job) != job->contiguous_gradients, "--contiguous-gradients off",
		 "DeepSpeed forces it on under --offload-optimizer cpu"},
	};
	size_t at = 0;
	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		if (s[i].unused && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s%s (%s)", at ? ", " : "", s[i].what, s[i].stages);
	return at > 0;
}
