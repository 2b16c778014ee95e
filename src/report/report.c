#include <math.h>
#include <string.h>

#include "report/report.h"

bool report_format_parse(const char *s, report_format *out)
{
	if (strcmp(s, "table") == 0)
		*out = REPORT_TABLE;
	else if (strcmp(s, "json") == 0)
		*out = REPORT_JSON;
	else if (strcmp(s, "csv") == 0)
		*out = REPORT_CSV;
	else
		return false;
	return true;
}

const char *report_time(double s, char *buf, size_t len)
{
	/* Beyond a million seconds (11.6 days) seconds stop being readable: days, then years
	 * (of 365.25 days), with 4 significant digits. */
	if (!isfinite(s))
		snprintf(buf, len, "not finite");
	else if (s >= 365.25 * 86400)
		snprintf(buf, len, "%.4g years", s / (365.25 * 86400));
	else if (s >= 1e6)
		snprintf(buf, len, "%.2f days", s / 86400);
	else if (s >= 1.0)
		snprintf(buf, len, "%.3f s", s);
	else if (s >= 1e-3)
		snprintf(buf, len, "%.2f ms", s * 1e3);
	else
		snprintf(buf, len, "%.1f us", s * 1e6);
	return buf;
}

const char *report_bytes(double b, char *buf, size_t len)
{
	/* up to YiB: bounded inputs reach ~1e29 bytes (2^32 tokens x 2^20 sequences of a wide
	 * model), printed '17925474304.36 TiB' before */
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
	int i = 0;
	while (b >= 1024.0 && i < 8) {
		b /= 1024.0;
		i++;
	}
	snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", b, u[i]);
	return buf;
}

/* Memory per GPU of a run (workload_composite_memory). */
static const workload_memory *run_memory(const report_run *r)
{
	return workload_composite_memory(r->composite, r->plan);
}


json_t *report_run_json(const report_run *r)
{
	const config_job *j = r->job;
	const workload_layout *l = &r->plan->layout;
	const workload_memory *m = run_memory(r);
	const engine_breakdown *b = &r->result->breakdown;
	workload_volume v;
	workload_volume_on(r->plan, r->platform->gpus_per_node, &v);
	json_t *o = json_object();
	json_object_set_new(o, "engine", json_string(r->result->engine));
	json_object_set_new(o, "model", json_string(r->model->name));
	json_object_set_new(o, "platform", json_string(r->platform->name));
	json_object_set_new(o, "nodes", json_integer(r->platform->nodes));
	if (r->label)
		json_object_set_new(o, "label", json_string(r->label));
	if (r->calibration)
		json_object_set_new(o, "calibration", json_string(r->calibration));
	/* the what-ifs as written (flag and value, e.g. "slow-gpu 3:2"); [] for none */
	json_t *wi = json_array();
	for (int i = 0; r->whatif && i < r->whatif->n; i++) {
		char what[96];
		config_whatif_label(&r->whatif->item[i], what, sizeof what);
		json_array_append_new(wi, json_string(what));
	}
	json_object_set_new(o, "what_if", wi);
	json_object_set_new(
		o, "job",
		json_pack("{s:s, s:i, s:i, s:i, s:i, s:I, s:i, s:s, s:i, s:i, s:i, s:I, s:i, s:i, s:b}", "strategy",
			  workload_strategy_name(j->strategy), "gpus", j->gpus, "sp", j->sp, "micro_batch", j->micro_batch,
			  "group_size", l->group_size, "seq_len", (json_int_t)j->seq_len, "zero_stage", j->zero_stage,
			  "recompute", config_recompute_names[j->recompute], "grad_accum", j->grad_accum, "dp_replicas",
			  l->world / l->sp, "groups", l->n_groups, "tokens_per_gpu", (json_int_t)l->tokens_per_rank,
			  "heads_per_gpu", l->heads_per_rank, "kv_heads_per_gpu", l->kv_heads_per_rank, "zero_overlap",
			  config_job_zero_overlap(j)));
	json_object_set_new(json_object_get(o, "job"), "a2a", json_string(config_a2a_names[j->a2a]));
	json_object_set_new(json_object_get(o, "job"), "impl", json_string(config_impl_names[j->impl]));
	json_object_set_new(json_object_get(o, "job"), "zero3_prefetch", json_string(config_zero3_prefetch_names[j->zero3_prefetch]));
	json_object_set_new(json_object_get(o, "job"), "contiguous_gradients", json_boolean(config_job_contiguous_gradients(j)));
	/* the ZeRO bucket sizes in elements as run (auto resolved from the model's hidden size)
	 * and whether they came from auto (transformers' Trainer fill, config_job_resolve_auto) */
	json_object_set_new(json_object_get(o, "job"), "reduce_bucket", json_real(j->reduce_bucket_elems));
	json_object_set_new(json_object_get(o, "job"), "allgather_bucket", json_real(j->allgather_bucket_elems));
	json_object_set_new(json_object_get(o, "job"), "prefetch_bucket", json_real(j->prefetch_bucket_elems));
	json_object_set_new(json_object_get(o, "job"), "reduce_bucket_auto", json_boolean(j->reduce_bucket_auto));
	json_object_set_new(json_object_get(o, "job"), "prefetch_bucket_auto", json_boolean(j->prefetch_bucket_auto));
	{
		char label[64];
		json_object_set_new(json_object_get(o, "job"), "strategy_spec",
				    json_string(config_strategy_label(j, label, sizeof label)));
		json_object_set_new(json_object_get(o, "job"), "ring_degree", json_integer(l->ring));
	}
	json_object_set_new(json_object_get(o, "job"), "attention_kernel",
			    json_string(config_attn_kernel_names[config_job_attention_kernel(j, r->platform)]));
	json_object_set_new(o, "step_time_s", json_real(r->result->step_time));
	json_object_set_new(o, "breakdown_s",
			    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "compute", b->compute,
				      "sp_comm", b->sp_comm, "sp_comm_exposed", b->sp_comm_exposed, "zero_comm",
				      b->zero_comm, "zero_comm_exposed", b->zero_comm_exposed, "gemm", b->gemm,
				      "attention", b->attention, "memory_bound", b->memory_bound, "optimizer",
				      b->optimizer, "forward", r->result->fwd_time, "backward", r->result->bwd_time));
	json_object_set_new(json_object_get(o, "breakdown_s"), "host_comm", json_real(b->host_comm));
	json_object_set_new(json_object_get(o, "breakdown_s"), "host_comm_exposed", json_real(b->host_comm_exposed));
	json_object_set_new(json_object_get(o, "job"), "offload_activations", json_boolean(j->offload_activations));
	json_object_set_new(json_object_get(o, "job"), "offload_optimizer",
			    json_string(config_offload_optimizer_names[j->offload_optimizer]));
	json_object_set_new(json_object_get(o, "job"), "tile_mlp", json_integer(j->tile_mlp));
	json_object_set_new(json_object_get(o, "job"), "tile_logits", json_integer(j->tile_logits));
	/* sp and zero are the buffers handed to NCCL (nccl-tests' sizes); the *_wire_* fields
	 * are the bytes this GPU sends to other GPUs and other nodes (workload_wire_bytes). */
	json_object_set_new(o, "comm_bytes_per_gpu",
			    json_pack("{s:f, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f}", "sp", v.sp_bytes, "sp_off_gpu",
				      v.sp_off_gpu, "zero", v.zero_bytes, "sp_collectives", (json_int_t)v.sp_collectives,
				      "zero_collectives", (json_int_t)v.zero_collectives, "sp_wire_off_gpu", v.sp_wire_off_gpu,
				      "sp_wire_off_node", v.sp_wire_off_node, "zero_wire_off_gpu", v.zero_wire_off_gpu,
				      "zero_wire_off_node", v.zero_wire_off_node));
	json_object_set_new(o, "memory_bytes",
			    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "params", m->params, "grads",
				      m->grads, "optimizer", m->optimizer, "activations", m->activations, "logits",
				      m->logits, "buffers", m->buffers, "not_concurrent", m->not_concurrent, "reserve",
				      m->reserve, "peak", m->peak, "capacity", m->capacity));
	json_object_set_new(o, "memory_reserve",
			    json_pack("{s:b, s:f, s:f, s:f, s:f}", "declared", m->reserve_of.declared, "cuda_context",
				      m->reserve_of.context, "cublas_workspace", m->reserve_of.cublas, "nccl_buffers",
				      m->reserve_of.nccl, "fragmentation", m->reserve_of.fragmentation));
	json_object_set_new(o, "fits", json_boolean(m->fits));
	if (m->host > 0)
		json_object_set_new(o, "host_memory_bytes",
				    json_pack("{s:f, s:f, s:f, s:f, s:b}", "per_gpu", m->host, "per_node", m->host_node,
					      "optimizer_per_gpu", m->host_optimizer, "capacity", m->host_capacity, "fits",
					      m->host_fits));
	if (r->composite && r->composite->kind != WL_COMPOSE_SINGLE) {
		const workload_composite *c = r->composite;
		json_t *parts = json_array();
		for (int i = 0; i < c->n_parts; i++) {
			const workload_part *pt = &c->parts[i];
			json_t *e = json_pack("{s:i, s:i, s:i, s:I, s:i, s:f}", "group_size", pt->plan.layout.group_size,
					      "groups", pt->plan.layout.n_groups, "ranks", pt->ranks, "tokens_per_gpu",
					      (json_int_t)pt->plan.layout.tokens_per_rank, "heads_per_gpu",
					      pt->plan.layout.heads_per_rank, "memory_peak_bytes", pt->plan.memory.peak);
			if (c->kind == WL_COMPOSE_PARALLEL)
				json_object_set_new(e, "padding_tokens", json_integer((json_int_t)(pt->job.seq_len - r->job->seq_len)));
			if (c->kind == WL_COMPOSE_PARALLEL && r->part_results)
				json_object_set_new(e, "step_time_s", json_real(r->part_results[i].step_time));
			else
				json_object_set_new(e, "sequences", json_integer(pt->job.micro_batch));
			json_array_append_new(parts, e);
		}
		json_object_set_new(o, "basp_uneven",
				    json_pack("{s:s, s:o}", "mode",
					      c->kind == WL_COMPOSE_PARALLEL ? "unequal" : "extra-step", "parts", parts));
	}
	json_object_set_new(o, "tokens_per_s", json_real(r->result->tokens_per_s));
	json_object_set_new(o, "mfu", json_real(r->result->mfu));
	json_object_set_new(o, "hfu", json_real(r->result->hfu));
	json_object_set_new(o, "mfu_dense_attention", json_real(r->result->mfu_dense));
	return o;
}

void report_json_print(FILE *f, json_t *v)
{
	json_dumpf(v, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	fputc('\n', f);
}

static void job_line(FILE *f, const report_run *r)
{
	const config_job *j = r->job;
	const workload_layout *l = &r->plan->layout;
	char label[64];
	fprintf(f, "job: %s, %d GPUs, SP %d (%d replica%s), micro-batch %d", config_strategy_label(j, label, sizeof label),
		j->gpus, j->sp, l->world / l->sp, l->world / l->sp == 1 ? "" : "s", j->micro_batch);
	if (j->strategy == CONFIG_STRATEGY_BASP && (!r->composite || r->composite->kind == WL_COMPOSE_SINGLE)) {
		int K = workload_layout_seq_ranks(l);
		fprintf(f, " -> %d groups of K=%d per domain", j->sp / K, K);
	}
	fprintf(f, ", seq %ld, ZeRO-%d, recompute %s, grad-accum %d, attention %s, impl %s", j->seq_len,
		j->zero_stage, config_recompute_names[j->recompute], j->grad_accum,
		config_attn_kernel_names[config_job_attention_kernel(j, r->platform)], config_impl_names[j->impl]);
	/* the long-context memory techniques, when on (the JSON's job object carries them always) */
	if (j->offload_activations)
		fputs(", activations offloaded to host", f);
	if (j->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU)
		fputs(", optimizer offloaded to the CPU", f);
	if (j->tile_mlp > 1)
		fprintf(f, ", MLP in %d tiles", j->tile_mlp);
	if (j->tile_logits > 1)
		fprintf(f, ", logits in %d tiles", j->tile_logits);
	if (j->zero_stage == 3 && j->zero3_prefetch != CONFIG_ZERO3_PREFETCH_DEEPSPEED)
		fprintf(f, ", ZeRO-3 prefetch %s", config_zero3_prefetch_names[j->zero3_prefetch]);
	fputc('\n', f);
	if (r->whatif && r->whatif->n > 0) {
		fputs("what-if: ", f);
		for (int i = 0; i < r->whatif->n; i++) {
			char what[96];
			config_whatif_label(&r->whatif->item[i], what, sizeof what);
			fprintf(f, "%s--%s", i ? ", " : "", what);
		}
		/* how the analytic engine runs the ones it takes (engine_whatif_supported) */
		if (strcmp(r->result->engine, "analytic") == 0) {
			bool pace = false, moved = false;
			for (int i = 0; i < r->whatif->n; i++) {
				moved |= r->whatif->item[i].kind == CONFIG_WHATIF_FAIL_NODE;
				pace |= r->whatif->item[i].kind != CONFIG_WHATIF_FAIL_NODE;
			}
			fprintf(f, " (analytic: %s%s%s)", pace ? "every rank at the slowest GPU's or link's pace" : "",
				pace && moved ? ", " : "", moved ? "the job re-placed on the remaining nodes" : "");
		}
		fputc('\n', f);
	}
}

void report_run_table(FILE *f, const report_run *r)
{
	char a[32], b2[32], c[32], d[32];
	const engine_result *res = r->result;
	const engine_breakdown *b = &res->breakdown;
	const workload_memory *m = run_memory(r);
	const workload_layout *l = &r->plan->layout;
	const config_job *j = r->job;
	workload_volume v;
	workload_volume_on(r->plan, r->platform->gpus_per_node, &v);
	fprintf(f, "%s on %s (%d node%s x %d GPUs), engine %s%s%s\n", r->model->name, r->platform->name,
		r->platform->nodes, r->platform->nodes == 1 ? "" : "s", r->platform->gpus_per_node, res->engine,
		r->calibration ? ", calibration " : "",
		r->calibration ? r->calibration : "");
	job_line(f, r);
	fprintf(f, "per GPU: %ld tokens, %d of %d heads in attention, ", l->tokens_per_rank, l->heads_per_rank,
		r->model->heads);
	if (l->ring > 1 && config_job_all_gather(r->job)) /* the context-parallel group's collectives */
		fprintf(f, "all-gather group %d\n", l->ring);
	else if (l->ring > 1 && l->ring_stride > 1)
		fprintf(f, "all-to-all group %d, rings of %d\n", l->group_size, l->ring);
	else if (l->ring > 1)
		fprintf(f, "ring of %d\n", l->ring);
	else
		fprintf(f, "all-to-all group %d\n", l->group_size);
	if (r->composite && r->composite->kind == WL_COMPOSE_PARALLEL) {
		fprintf(f, "unequal BASP groups (the slowest sets the step):\n");
		for (int i = 0; i < r->composite->n_parts; i++) {
			const workload_part *pt = &r->composite->parts[i];
			char pad[96] = "";
			if (pt->job.seq_len > r->job->seq_len)
				snprintf(pad, sizeof pad, " (sequence padded by %ld to %ld)", pt->job.seq_len - r->job->seq_len,
					 pt->job.seq_len);
			fprintf(f, "  %d groups of %d GPUs: %ld tokens%s, %d heads per GPU, step %s, peak %s\n",
				pt->plan.layout.n_groups, pt->plan.layout.group_size, pt->plan.layout.tokens_per_rank, pad,
				pt->plan.layout.heads_per_rank,
				report_time(r->part_results ? r->part_results[i].step_time : 0, a, sizeof a),
				report_bytes(pt->plan.memory.peak, b2, sizeof b2));
		}
	} else if (r->composite && r->composite->kind == WL_COMPOSE_SEQUENTIAL) {
		fprintf(f, "BASP micro-steps per optimizer step:");
		for (int i = 0; i < r->composite->n_parts; i++)
			fprintf(f, "%s %d sequence%s on groups of %d", i ? "," : "", r->composite->parts[i].job.micro_batch,
				r->composite->parts[i].job.micro_batch == 1 ? "" : "s",
				r->composite->parts[i].plan.layout.group_size);
		fputc('\n', f);
	}
	fprintf(f, "\n%-22s %12s\n", "step time", report_time(res->step_time, a, sizeof a));
	fprintf(f, "  %-20s %12s   (gemm %s, attention %s", "compute", report_time(b->compute, a, sizeof a),
		report_time(b->gemm, b2, sizeof b2), report_time(b->attention, c, sizeof c));
	fprintf(f, ", memory-bound %s", report_time(b->memory_bound, a, sizeof a));
	fprintf(f, ", optimizer %s)\n", report_time(b->optimizer, a, sizeof a));
	/* ring attention's SP traffic is (also) point-to-point: not an all-to-all */
	fprintf(f, "  %-20s %12s   exposed %s, %s per GPU sent off-GPU\n", l->ring > 1 ? "sp comm" : "sp all-to-all",
		report_time(b->sp_comm, a, sizeof a), report_time(b->sp_comm_exposed, b2, sizeof b2),
		report_bytes(v.sp_off_gpu, c, sizeof c));
	fprintf(f, "  %-20s %12s   exposed %s\n", "zero comm", report_time(b->zero_comm, a, sizeof a),
		report_time(b->zero_comm_exposed, b2, sizeof b2));
	if (b->host_comm > 0)
		fprintf(f, "  %-20s %12s   exposed %s (%s over the host link)\n", "host copies",
			report_time(b->host_comm, a, sizeof a), report_time(b->host_comm_exposed, b2, sizeof b2),
			j->offload_activations && j->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU ? "activation and optimizer offload"
			: j->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU			  ? "optimizer offload"
												  : "activation offload");
	fprintf(f, "  %-20s sp %s off-GPU, %s off-node; zero %s off-GPU, %s off-node\n", "sent per GPU",
		report_bytes(v.sp_wire_off_gpu, a, sizeof a), report_bytes(v.sp_wire_off_node, b2, sizeof b2),
		report_bytes(v.zero_wire_off_gpu, c, sizeof c), report_bytes(v.zero_wire_off_node, d, sizeof d));
	fprintf(f, "%-22s %12.0f\n", "tokens/s", res->tokens_per_s);
	fprintf(f, "%-22s %11.1f%%   (model FLOPs, causal attention halved; %.1f%% counting attention dense)\n", "MFU",
		100.0 * res->mfu, 100.0 * res->mfu_dense);
	fprintf(f, "%-22s %11.1f%%   (FLOPs executed, recompute and attention backward 2.5x included)\n", "HFU",
		100.0 * res->hfu);
	fprintf(f, "\nmemory per GPU: peak %s of %s -> %s\n", report_bytes(m->peak, a, sizeof a),
		report_bytes(m->capacity, b2, sizeof b2), m->fits ? "fits" : "DOES NOT FIT");
	fprintf(f, "  params %s, grads %s, optimizer %s\n", report_bytes(m->params, a, sizeof a),
		report_bytes(m->grads, b2, sizeof b2), report_bytes(m->optimizer, c, sizeof c));
	fprintf(f, "  activations %s, logits %s, buffers %s (impl %s)\n", report_bytes(m->activations, a, sizeof a),
		report_bytes(m->logits, b2, sizeof b2), report_bytes(m->buffers, c, sizeof c),
		config_impl_names[r->job->impl]);
	if (m->not_concurrent > 0)
		fprintf(f, "  not concurrent -%s (the loss phase, freed before a layer recomputes in backward)\n",
			report_bytes(m->not_concurrent, a, sizeof a));
	if (m->reserve_of.declared) {
		fprintf(f, "  reserve %s (declared)\n", report_bytes(m->reserve, a, sizeof a));
	} else {
		fprintf(f, "  reserve %s: CUDA context %s, cuBLAS %s, NCCL %s", report_bytes(m->reserve, a, sizeof a),
			report_bytes(m->reserve_of.context, b2, sizeof b2), report_bytes(m->reserve_of.cublas, c, sizeof c),
			report_bytes(m->reserve_of.nccl, d, sizeof d));
		fprintf(f, ", fragmentation %s\n", report_bytes(m->reserve_of.fragmentation, a, sizeof a));
	}
	if (m->host > 0)
		fprintf(f, "host memory per node: offloaded %s %s (%s per GPU) of %s -> %s\n",
			m->host_optimizer <= 0		 ? "checkpoints"
			: m->host_optimizer < m->host ? "checkpoints and optimizer states"
						       : "optimizer states",
			report_bytes(m->host_node, a, sizeof a), report_bytes(m->host, b2, sizeof b2),
			report_bytes(m->host_capacity, c, sizeof c), m->host_fits ? "fits" : "DOES NOT FIT");
}

json_t *report_compare_json(const report_run *runs, int n)
{
	json_t *arr = json_array(), *sp = json_object(), *spc = json_object();
	for (int i = 0; i < n; i++) {
		json_array_append_new(arr, report_run_json(&runs[i]));
		const char *key = runs[i].label ? runs[i].label : workload_strategy_name(runs[i].job->strategy);
		/* Throughput ratio: equals the step-time ratio when both runs train the same
		 * tokens per step, and stays fair when they do not (ulysses:sp=N/B). */
		double s = runs[0].result->tokens_per_s > 0 ? runs[i].result->tokens_per_s / runs[0].result->tokens_per_s : 0;
		double c = runs[i].result->breakdown.sp_comm > 0
				   ? runs[0].result->breakdown.sp_comm / runs[i].result->breakdown.sp_comm
				   : 0;
		/* A speedup between configurations that cannot run says nothing: null when this
		 * run or the baseline does not fit in GPU memory. */
		bool both_fit = run_memory(&runs[i])->fits && run_memory(&runs[0])->fits;
		json_object_set_new(sp, key, both_fit ? json_real(s) : json_null());
		json_object_set_new(spc, key, both_fit ? json_real(c) : json_null());
	}
	return json_pack("{s:o, s:s, s:o, s:o}", "runs", arr, "baseline",
			 runs[0].label ? runs[0].label : workload_strategy_name(runs[0].job->strategy), "speedup", sp,
			 "sp_comm_speedup", spc);
}

void report_compare_table(FILE *f, const report_run *runs, int n)
{
	char buf[64];
	const report_run *r0 = &runs[0];
	fprintf(f, "%s on %s (%d node%s x %d GPUs), engine %s\n", r0->model->name, r0->platform->name,
		r0->platform->nodes, r0->platform->nodes == 1 ? "" : "s", r0->platform->gpus_per_node,
		r0->result->engine);
	fprintf(f, "%d GPUs, micro-batch %d, seq %ld, ZeRO-%d, recompute %s, grad-accum %d, attention %s\n\n",
		r0->job->gpus, r0->job->micro_batch, r0->job->seq_len, r0->job->zero_stage,
		config_recompute_names[r0->job->recompute], r0->job->grad_accum,
		config_attn_kernel_names[config_job_attention_kernel(r0->job, r0->platform)]);
	fprintf(f, "%-24s", "");
	for (int i = 0; i < n; i++)
		fprintf(f, " %16s", runs[i].label ? runs[i].label : workload_strategy_name(runs[i].job->strategy));
	fputc('\n', f);
#define ROW(title, expr)                                     \
	do {                                                 \
		fprintf(f, "%-24s", title);                  \
		for (int i = 0; i < n; i++) {                \
			const report_run *r = &runs[i];      \
			(void)r;                             \
			fprintf(f, " %16s", (expr));         \
		}                                            \
		fputc('\n', f);                              \
	} while (0)
	ROW("SP size / group size", (snprintf(buf, sizeof buf, "%d / %d", r->job->sp, r->plan->layout.group_size), buf));
	ROW("tokens per GPU", (snprintf(buf, sizeof buf, "%ld", r->plan->layout.tokens_per_rank), buf));
	ROW("step time", report_time(r->result->step_time, buf, sizeof buf));
	ROW("  compute", report_time(r->result->breakdown.compute, buf, sizeof buf));
	/* "all-to-all" for the Ulysses family; for ring and USP the row is all SP transfers, and
	 * the next one says how much of it the step waited for (ring steps hide behind attention). */
	ROW("  sp all-to-all", report_time(r->result->breakdown.sp_comm, buf, sizeof buf));
	ROW("  sp comm (exposed)", report_time(r->result->breakdown.sp_comm_exposed, buf, sizeof buf));
	ROW("  zero comm (exposed)", report_time(r->result->breakdown.zero_comm_exposed, buf, sizeof buf));
	ROW("tokens/s", (snprintf(buf, sizeof buf, "%.0f", r->result->tokens_per_s), buf));
	ROW("MFU", (snprintf(buf, sizeof buf, "%.1f%%", 100.0 * r->result->mfu), buf));
	ROW("HFU", (snprintf(buf, sizeof buf, "%.1f%%", 100.0 * r->result->hfu), buf));
	ROW("memory peak", report_bytes(run_memory(r)->peak, buf, sizeof buf));
	ROW("  activations", report_bytes(run_memory(r)->activations, buf, sizeof buf));
	ROW("  reserve", report_bytes(run_memory(r)->reserve, buf, sizeof buf));
	ROW("fits", run_memory(r)->fits ? "yes" : "NO");
	/* No speedup where this run or the baseline does not fit: it could not train. */
#define NOFIT(r) (!run_memory(r)->fits ? "- (no fit)" : !run_memory(r0)->fits ? "- (base no fit)" : NULL)
	ROW("speedup (tokens/s)",
	    NOFIT(r) ? NOFIT(r)
		     : (snprintf(buf, sizeof buf, "%.2fx", r->result->tokens_per_s / r0->result->tokens_per_s), buf));
	ROW("speedup (all-to-all)",
	    NOFIT(r) ? NOFIT(r)
	    : r->result->breakdown.sp_comm > 0
		    ? (snprintf(buf, sizeof buf, "%.2fx", r0->result->breakdown.sp_comm / r->result->breakdown.sp_comm), buf)
		    : "no all-to-all");
#undef NOFIT
#undef ROW
	bool all_fit = true;
	for (int i = 0; i < n; i++)
		all_fit = all_fit && run_memory(&runs[i])->fits;
	if (!all_fit)
		fprintf(f, "\nspeedups are shown only between configurations that fit in GPU memory (%s per GPU); "
			   "to fit, try%s%s a shorter --seq-len or more GPUs\n",
			report_bytes(run_memory(r0)->capacity, buf, sizeof buf), r0->job->zero_stage < 3 ? " --zero 3," : "",
			r0->job->recompute == CONFIG_RECOMPUTE_NONE ? " --recompute full," : "");
}
