/* Jobs: what to run (strategy, GPUs, batch, sequence, ZeRO) with DeepSpeed's defaults. */
#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

#include <limits.h>
#include <math.h>
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
	job->attention_kernel = -1; /* the platform's attention_kernel */
	job->tile_mlp = 1;
	job->tile_logits = 1;
}

bool config_job_zero_overlap(const config_job *job)
{
	return job->zero_overlap < 0 ? job->zero_stage == 3 : job->zero_overlap != 0;
}

bool config_job_fp32_grad_comm(const config_job *job, int sp)
{
	return job->fp32_grad_comm_set ? job->fp32_grad_comm : sp > 1;
}

config_attn_kernel config_job_attention_kernel(const config_job *job, const config_platform *p)
{
	return job->attention_kernel >= 0 ? (config_attn_kernel)job->attention_kernel : p->attention_kernel;
}

static const char *const job_keys[] = {
	"gpus",          "strategy",         "sp",              "micro_batch",    "seq_len",
	"grad_accum",    "zero",             "recompute",       "dtype",          "zero_overlap",
	"reduce_bucket", "allgather_bucket", "prefetch_bucket", "fp32_grad_comm", "model",
	"platform",      "nodes",            "calibration",     "a2a",            "basp_uneven",
	"attention_kernel", "impl", "zero3_prefetch",         "memory_reserve",   "basp_inner",     "cp_split",
	"ulysses_degree", "ring_degree", "what_if", "cp_comm_type", "offload_activations", "tile_mlp", "tile_logits", NULL,
};

static bool job_read(const yt_doc *doc, const char *doc_path, config_job *job, char *model, char *platform, char *calibration,
		     int *nodes, config_error *err)
{
	static const char *const dtypes[] = {"bf16"};
	static const char *const basp_inners[] = {"ulysses", "ring", "usp"};
	const yt_node *t;
	if (!yt_top(doc, "job", &t, err) || !yt_check_keys(t, job_keys, err))
		return false;
	int strategy = job->strategy, recompute = job->recompute, dtype = job->dtype, a2a = job->a2a,
	    uneven = job->basp_uneven, attn = job->attention_kernel, impl = job->impl, z3p = job->zero3_prefetch,
	    inner = job->basp_inner == CONFIG_STRATEGY_RING ? 1 : job->basp_inner == CONFIG_STRATEGY_USP ? 2 : 0, split = job->cp_split,
	    ctype = -1;
	long zero = job->zero_stage;
	bool has_fp32 = false, has_reserve = false;
	double reserve = 0;
	if (!yt_enum(t, "strategy", false, config_strategy_names, 4, &strategy, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_GPUS, false, &job->gpus, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_SP, false, &job->sp, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_MICRO_BATCH, false, &job->micro_batch, NULL, err) ||
	    !yt_range_long(t, CONFIG_R_SEQ_LEN, false, &job->seq_len, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_GRAD_ACCUM, false, &job->grad_accum, NULL, err) ||
	    !yt_range_long(t, CONFIG_R_ZERO, false, &zero, NULL, err) ||
	    !yt_enum(t, "recompute", false, config_recompute_names, CONFIG_RECOMPUTES, &recompute, NULL, err) ||
	    !yt_enum(t, "dtype", false, dtypes, 1, &dtype, NULL, err) ||
	    !yt_enum(t, "a2a", false, config_a2a_names, 3, &a2a, NULL, err) ||
	    !yt_enum(t, "basp_uneven", false, config_basp_uneven_names, 3, &uneven, NULL, err) ||
	    !yt_enum(t, "attention_kernel", false, config_attn_kernel_names, CONFIG_ATTN_KERNELS, &attn, NULL, err) ||
	    !yt_enum(t, "impl", false, config_impl_names, 2, &impl, NULL, err) ||
	    !yt_enum(t, "zero3_prefetch", false, config_zero3_prefetch_names, 2, &z3p, NULL, err) ||
	    !yt_enum(t, "basp_inner", false, basp_inners, 3, &inner, NULL, err) ||
	    !yt_posint(t, "ulysses_degree", false, &job->ulysses_degree, NULL, err) ||
	    !yt_posint(t, "ring_degree", false, &job->ring_degree, NULL, err) ||
	    !yt_enum(t, "cp_split", false, config_cp_split_names, 2, &split, NULL, err) ||
	    !yt_enum(t, "cp_comm_type", false, config_cp_comm_type_names, 4, &ctype, NULL, err) ||
	    !yt_size_or_zero(t, "memory_reserve", &reserve, &has_reserve, err) ||
	    !yt_range(t, CONFIG_R_REDUCE_BUCKET, false, &job->reduce_bucket_elems, NULL, err) ||
	    !yt_range(t, CONFIG_R_ALLGATHER_BUCKET, false, &job->allgather_bucket_elems, NULL, err) ||
	    !yt_range(t, CONFIG_R_PREFETCH_BUCKET, false, &job->prefetch_bucket_elems, NULL, err) ||
	    !yt_bool(t, "fp32_grad_comm", false, &job->fp32_grad_comm, &has_fp32, err) ||
	    !yt_bool(t, "offload_activations", false, &job->offload_activations, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_TILE_MLP, false, &job->tile_mlp, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_TILE_LOGITS, false, &job->tile_logits, NULL, err))
		return false;
	job->strategy = (config_strategy)strategy;
	job->recompute = (config_recompute)recompute;
	job->dtype = (config_dtype)dtype;
	job->a2a = (config_a2a)a2a;
	job->basp_uneven = (config_basp_uneven)uneven;
	job->attention_kernel = attn;
	job->impl = (config_impl)impl;
	job->zero3_prefetch = (config_zero3_prefetch)z3p;
	job->basp_inner = inner == 1 ? CONFIG_STRATEGY_RING : inner == 2 ? CONFIG_STRATEGY_USP : CONFIG_STRATEGY_ULYSSES;
	job->cp_split = (config_cp_split)split;
	if (ctype >= 0) { /* Megatron-Core's name for the SP group's strategy (BASP: its inner) */
		config_error e;
		if (!config_job_apply_cp_comm_type(job, (config_cp_comm_type)ctype, yt_find(t, "strategy") != NULL, &e))
			return yt_fail(err, yt_find(t, "cp_comm_type"), "%s", e.msg);
	}
	if (has_reserve) {
		job->memory_reserve_set = true;
		job->memory_reserve = reserve;
	}
	job->zero_stage = (int)zero;
	if (has_fp32)
		job->fp32_grad_comm_set = 1;
	/* zero_overlap: true, false, or "default" (DeepSpeed's per-stage default). */
	const yt_node *ov = yt_find(t, "zero_overlap");
	if (ov && ov->kind == YT_SCALAR && strcmp(ov->value, "default") == 0) {
		job->zero_overlap = -1;
	} else if (ov) {
		bool b = false;
		if (ov->kind != YT_SCALAR || (strcmp(ov->value, "default") != 0 &&
					      !yt_bool(t, "zero_overlap", false, &b, NULL, NULL)))
			return yt_fail(err, ov, "'zero_overlap' must be true, false or default, got %s%.200s%s",
				       ov->kind == YT_SCALAR ? "'" : "",
				       ov->kind == YT_SCALAR ? ov->value : ov->kind == YT_MAP ? "a mapping" : "a sequence",
				       ov->kind == YT_SCALAR ? "'" : "");
		job->zero_overlap = b ? 1 : 0;
	}
	char m[CONFIG_PATH_MAX] = "", pl[CONFIG_PATH_MAX] = "", cal[CONFIG_PATH_MAX] = "";
	int n = 0;
	if (!yt_string(t, "model", false, m, sizeof m, NULL, err) ||
	    !yt_string(t, "platform", false, pl, sizeof pl, NULL, err) ||
	    !yt_string(t, "calibration", false, cal, sizeof cal, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_NODES, false, &n, NULL, err))
		return false;
	/* Paths are relative to the job file's directory (shipped names stay names). */
	char dir[CONFIG_PATH_MAX];
	config_dir_of(doc_path, dir, sizeof dir);
	char *const fields[] = {m, pl, cal};
	for (int i = 0; i < 3; i++) {
		char resolved[CONFIG_PATH_MAX];
		if (fields[i][0] && !config_resolve_relative(dir, fields[i], resolved, sizeof resolved))
			return yt_fail(err, yt_find(t, i == 0 ? "model" : i == 1 ? "platform" : "calibration"),
				       "path too long once joined to the job file's directory '%s'", dir);
		if (fields[i][0])
			memcpy(fields[i], resolved, CONFIG_PATH_MAX);
	}
	/* Outputs change only once the whole file is known to be valid. */
	if (model && m[0])
		memcpy(model, m, sizeof m);
	if (platform && pl[0])
		memcpy(platform, pl, sizeof pl);
	if (calibration && cal[0])
		memcpy(calibration, cal, sizeof cal);
	if (nodes)
		*nodes = n;
	return true;
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
