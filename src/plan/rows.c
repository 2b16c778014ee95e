/* Rows: one JSON object per simulated configuration; the JSON-lines record and the CSV
 * share these fields, in this order. */
#include <math.h>
#include <string.h>

#include "plan/plan.h"

const char *const plan_row_columns[] = {
	"index", "point", "status", "error",
	/* what ran */
	"engine", "model", "platform", "nodes", "gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth",
	"inter_latency", "gpu_memory", "calibration", "gpus", "label", "strategy", "sp", "micro_batch", "group_size",
	"dp_replicas", "seq_len", "zero_stage", "recompute", "grad_accum", "a2a", "basp_uneven", "cp_comm_type",
	"attention_kernel", "impl", "zero3_prefetch", "offload_activations", "offload_optimizer", "tile_mlp", "tile_logits", "memory_reserve", "zero_overlap",
	"fp32_grad_comm", "contiguous_gradients", "reduce_bucket", "allgather_bucket", "prefetch_bucket", "placement", "what_if", "parts",
	"tokens_per_gpu",
	/* time, seconds per optimizer step */
	"step_time_s", "compute_s", "gemm_s", "attention_s", "memory_bound_s", "optimizer_s", "sp_comm_s",
	"sp_comm_exposed_s", "zero_comm_s", "zero_comm_exposed_s",
	/* bytes per GPU per step */
	"sp_bytes", "sp_bytes_off_gpu", "zero_bytes",
	/* memory per GPU, bytes */
	"mem_params", "mem_grads", "mem_optimizer", "mem_activations", "mem_logits", "mem_buffers", "mem_not_concurrent", "mem_reserve",
	"mem_peak", "mem_capacity", "fits",
	/* outcome */
	"tokens_per_s", "mfu", "hfu", "wall_s", NULL,
};

/* The CSV header: the row's key with its unit where the key has none (SI base units:
 * bytes, seconds, bytes per second), in plan_row_columns' order. */
const char *const plan_row_csv_columns[] = {
	"index", "point", "status", "error",
	"engine", "model", "platform", "nodes", "gpus_per_node", "nics", "nic_bandwidth_bytes_per_s",
	"intra_bandwidth_bytes_per_s", "inter_latency_s", "gpu_memory_bytes", "calibration", "gpus", "label", "strategy",
	"sp", "micro_batch", "group_size", "dp_replicas", "seq_len", "zero_stage", "recompute", "grad_accum", "a2a",
	"basp_uneven", "cp_comm_type", "attention_kernel", "impl", "zero3_prefetch", "offload_activations", "offload_optimizer",
	"tile_mlp", "tile_logits", "memory_reserve_bytes", "zero_overlap", "fp32_grad_comm", "contiguous_gradients", "reduce_bucket_elements", "allgather_bucket_elements",
	"prefetch_bucket_elements", "placement", "what_if", "parts", "tokens_per_gpu",
	"step_time_s", "compute_s", "gemm_s", "attention_s", "memory_bound_s", "optimizer_s", "sp_comm_s",
	"sp_comm_exposed_s", "zero_comm_s", "zero_comm_exposed_s",
	"sp_bytes", "sp_bytes_off_gpu", "zero_bytes",
	"mem_params_bytes", "mem_grads_bytes", "mem_optimizer_bytes", "mem_activations_bytes", "mem_logits_bytes",
	"mem_buffers_bytes", "mem_not_concurrent_bytes", "mem_reserve_bytes", "mem_peak_bytes", "mem_capacity_bytes", "fits",
	"tokens_per_s", "mfu", "hfu", "wall_s", NULL,
};
_Static_assert(sizeof plan_row_csv_columns == sizeof plan_row_columns, "one CSV name per row key");

json_t *plan_row_new(long index, const char *key)
{
	return json_pack("{s:I, s:s, s:s, s:n}", "index", (json_int_t)index, "point", key ? key : "", "status", "ok",
			 "error");
}

static void set_i(json_t *o, const char *k, long v) { json_object_set_new(o, k, json_integer((json_int_t)v)); }
static void set_r(json_t *o, const char *k, double v)
{
	json_object_set_new(o, k, isfinite(v) ? json_real(v) : json_null());
}
static void set_s(json_t *o, const char *k, const char *v) { json_object_set_new(o, k, v ? json_string(v) : json_null()); }

void plan_row_set_job(json_t *row, const config_model *m, const config_platform *p, const config_job *job,
		      const char *label, const char *engine, const char *calibration)
{
	set_s(row, "engine", engine);
	set_s(row, "model", m->name);
	set_s(row, "platform", p->name);
	set_i(row, "nodes", p->nodes);
	set_i(row, "gpus_per_node", p->gpus_per_node);
	set_i(row, "nics", p->inter.nics_per_node);
	set_r(row, "nic_bandwidth", p->inter.nic_bandwidth);
	set_r(row, "intra_bandwidth", p->intra.bandwidth);
	set_r(row, "inter_latency", p->inter.latency);
	set_r(row, "gpu_memory", p->gpu.memory_bytes);
	set_s(row, "calibration", calibration);
	set_i(row, "gpus", job->gpus);
	set_s(row, "label", label ? label : workload_strategy_name(job->strategy));
	set_s(row, "strategy", workload_strategy_name(job->strategy));
	set_i(row, "sp", job->sp);
	set_i(row, "micro_batch", job->micro_batch);
	set_i(row, "seq_len", job->seq_len);
	set_i(row, "zero_stage", job->zero_stage);
	set_s(row, "recompute", config_recompute_names[job->recompute]);
	set_i(row, "grad_accum", job->grad_accum);
	set_s(row, "a2a", job->a2a >= 0 && job->a2a <= 2 ? config_a2a_names[job->a2a] : "?");
	set_s(row, "basp_uneven",
	      job->basp_uneven >= 0 && job->basp_uneven <= 2 ? config_basp_uneven_names[job->basp_uneven] : "?");
	/* Megatron-Core's name for what the SP group (BASP: each group) runs */
	config_strategy inner = job->strategy == CONFIG_STRATEGY_BASP ? job->basp_inner : job->strategy;
	config_cp_comm_type type = inner == CONFIG_STRATEGY_USP	   ? CONFIG_CP_TYPE_A2A_P2P
				   : inner != CONFIG_STRATEGY_RING ? CONFIG_CP_TYPE_A2A
				   : config_job_all_gather(job)    ? CONFIG_CP_TYPE_ALL_GATHER
								   : CONFIG_CP_TYPE_P2P;
	set_s(row, "cp_comm_type", config_cp_comm_type_names[type]);
	set_s(row, "attention_kernel", config_attn_kernel_names[config_job_attention_kernel(job, p)]);
	set_s(row, "impl", config_impl_names[job->impl]);
	set_s(row, "zero3_prefetch", config_zero3_prefetch_names[job->zero3_prefetch]);
	json_object_set_new(row, "offload_activations", json_boolean(job->offload_activations));
	set_s(row, "offload_optimizer", config_offload_optimizer_names[job->offload_optimizer]);
	set_i(row, "tile_mlp", job->tile_mlp);
	set_i(row, "tile_logits", job->tile_logits);
	set_r(row, "memory_reserve", job->memory_reserve_set ? job->memory_reserve : NAN); /* null: derived */
	json_object_set_new(row, "zero_overlap", json_boolean(config_job_zero_overlap(job)));
	json_object_set_new(row, "fp32_grad_comm", json_boolean(config_job_fp32_grad_comm(job, job->sp ? job->sp : job->gpus)));
	json_object_set_new(row, "contiguous_gradients", json_boolean(config_job_contiguous_gradients(job)));
	set_r(row, "reduce_bucket", job->reduce_bucket_elems);
	set_r(row, "allgather_bucket", job->allgather_bucket_elems);
	set_r(row, "prefetch_bucket", job->prefetch_bucket_elems);
}

void plan_row_set_options(json_t *row, const char *placement, const char *what_if)
{
	set_s(row, "placement", placement);
	set_s(row, "what_if", what_if);
}

static void set_memory(json_t *row, const workload_memory *m)
{
	set_r(row, "mem_params", m->params);
	set_r(row, "mem_grads", m->grads);
	set_r(row, "mem_optimizer", m->optimizer);
	set_r(row, "mem_activations", m->activations);
	set_r(row, "mem_logits", m->logits);
	set_r(row, "mem_buffers", m->buffers);
	set_r(row, "mem_not_concurrent", m->not_concurrent);
	set_r(row, "mem_reserve", m->reserve);
	set_r(row, "mem_peak", m->peak);
	set_r(row, "mem_capacity", m->capacity);
	json_object_set_new(row, "fits", json_boolean(m->fits));
}

void plan_row_set_result(json_t *row, const workload_plan *plan, const engine_result *res)
{
	const workload_layout *l = &plan->layout;
	const workload_memory *m = &plan->memory;
	const engine_breakdown *b = &res->breakdown;
	workload_volume v;
	workload_volume_of(plan, &v);
	set_s(row, "engine", res->engine);
	set_i(row, "group_size", l->group_size);
	set_i(row, "dp_replicas", l->sp > 0 ? l->world / l->sp : 0);
	set_i(row, "tokens_per_gpu", l->tokens_per_rank);
	set_r(row, "step_time_s", res->step_time);
	set_r(row, "compute_s", b->compute);
	set_r(row, "gemm_s", b->gemm);
	set_r(row, "attention_s", b->attention);
	set_r(row, "memory_bound_s", b->memory_bound);
	set_r(row, "optimizer_s", b->optimizer);
	set_r(row, "sp_comm_s", b->sp_comm);
	set_r(row, "sp_comm_exposed_s", b->sp_comm_exposed);
	set_r(row, "zero_comm_s", b->zero_comm);
	set_r(row, "zero_comm_exposed_s", b->zero_comm_exposed);
	set_r(row, "sp_bytes", v.sp_bytes);
	set_r(row, "sp_bytes_off_gpu", v.sp_off_gpu);
	set_r(row, "zero_bytes", v.zero_bytes);
	set_memory(row, m);
	set_r(row, "tokens_per_s", res->tokens_per_s);
	set_r(row, "mfu", res->mfu);
	set_r(row, "hfu", res->hfu);
}

void plan_row_set_sim(json_t *row, const plan_sim *sim)
{
	plan_row_set_result(row, sim->primary, &sim->res);
	set_memory(row, &sim->memory); /* the fullest part's, not the primary plan's */
	set_i(row, "parts", sim->comp.n_parts);
}

void plan_row_set_status(json_t *row, const char *status, const char *error)
{
	set_s(row, "status", status);
	if (!error) {
		json_object_set_new(row, "error", json_null());
		return;
	}
	/* One line per row: CSV readers and the line-oriented record stay simple. */
	char buf[CONFIG_ERROR_MAX + 128];
	snprintf(buf, sizeof buf, "%s", error);
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	set_s(row, "error", buf);
}

json_t *plan_row_from_run(const report_run *r, long index)
{
	json_t *row = plan_row_new(index, r->label ? r->label : workload_strategy_name(r->job->strategy));
	if (!row)
		return NULL;
	plan_row_set_job(row, r->model, r->platform, r->job, r->label, r->result->engine, r->calibration);
	plan_row_set_result(row, r->plan, r->result);
	if (r->composite) {
		/* The fullest part's memory, as plan_simulate reports it. */
		const workload_memory *m = &r->plan->memory;
		for (int i = 0; r->composite->kind == WL_COMPOSE_PARALLEL && i < r->composite->n_parts; i++)
			if (r->composite->parts[i].plan.memory.peak > m->peak)
				m = &r->composite->parts[i].plan.memory;
		set_r(row, "mem_peak", m->peak);
		json_object_set_new(row, "fits", json_boolean(m->fits));
		set_i(row, "parts", r->composite->n_parts);
	}
	return row;
}

/* ------------------------------------------------------------------- CSV --- */
void plan_csv_string(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void plan_row_csv_header(FILE *f)
{
	for (int i = 0; plan_row_csv_columns[i]; i++)
		fprintf(f, "%s%s", i ? "," : "", plan_row_csv_columns[i]);
	fputc('\n', f);
}

void plan_row_csv(FILE *f, const json_t *row)
{
	for (int i = 0; plan_row_columns[i]; i++) {
		if (i)
			fputc(',', f);
		const json_t *v = json_object_get(row, plan_row_columns[i]);
		switch (v ? json_typeof(v) : JSON_NULL) {
		case JSON_INTEGER: fprintf(f, "%lld", (long long)json_integer_value(v)); break;
		case JSON_REAL: fprintf(f, "%.10g", json_real_value(v)); break;
		case JSON_STRING: plan_csv_string(f, json_string_value(v)); break;
		case JSON_TRUE: fputs("true", f); break;
		case JSON_FALSE: fputs("false", f); break;
		default: break;
		}
	}
	fputc('\n', f);
}

double plan_row_num(const json_t *row, const char *key)
{
	const json_t *v = json_object_get(row, key);
	if (json_is_number(v))
		return json_number_value(v);
	if (json_is_boolean(v))
		return json_is_true(v);
	return NAN;
}

const char *plan_row_str(const json_t *row, const char *key)
{
	const char *s = json_string_value(json_object_get(row, key));
	return s ? s : "";
}
