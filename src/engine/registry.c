#include <math.h>
#include <string.h>

#include "spsim_build.h"
#include "engine/analytic.h"
#include "engine/engine.h"
#if SPSIM_HAVE_SIMGRID && __has_include("engine/simgrid/simgrid.h")
#include "engine/simgrid/simgrid.h"
#endif

const engine_ops *const engine_registry[] = {
#if SPSIM_HAVE_SIMGRID && defined(SPSIM_SIMGRID_READY)
	&engine_simgrid,
#endif
	&engine_analytic,
	NULL,
};

const engine_ops *engine_find(const char *name)
{
	for (int i = 0; engine_registry[i]; i++)
		if (strcmp(engine_registry[i]->name, name) == 0)
			return engine_registry[i];
	return NULL;
}

void engine_result_finish(const engine_input *in, engine_result *r)
{
	const config_job *job = in->job;
	const workload_layout *l = &in->plan->layout;
	/* Sequences per step: W/N SP domains x B sequences x grad_accum micro-steps. */
	double seqs = (double)(l->world / l->sp) * job->micro_batch * job->grad_accum;
	double tokens = seqs * (double)job->seq_len;
	r->tokens_per_s = r->step_time > 0 ? tokens / r->step_time : 0;
	/* MFU: model FLOPs of this GPU by the published convention over peak x step time; HFU
	 * the same with the FLOPs it executes (workload_model_flops, workload_program_flops). */
	double denom = in->platform->gpu.peak_flops * r->step_time;
	r->mfu = r->step_time > 0 ? in->plan->model_flops_per_step / denom : 0;
	r->hfu = r->step_time > 0 ? in->plan->hardware_flops_per_step / denom : 0;
	r->mfu_dense = r->step_time > 0 ? in->plan->model_flops_dense_per_step / denom : 0;
}

bool engine_result_check(const engine_result *r, config_error *err)
{
	const engine_breakdown *b = &r->breakdown;
	const struct {
		const char *name;
		double v;
	} f[] = {
		{"step time", r->step_time},	 {"tokens/s", r->tokens_per_s},	  {"MFU", r->mfu},
		{"forward time", r->fwd_time},	 {"backward time", r->bwd_time},  {"compute", b->compute},
		{"SP all-to-all", b->sp_comm},	 {"exposed SP all-to-all", b->sp_comm_exposed},
		{"ZeRO communication", b->zero_comm}, {"exposed ZeRO communication", b->zero_comm_exposed},
		{"GEMM time", b->gemm},		 {"attention time", b->attention}, {"memory-bound time", b->memory_bound},
		{"optimizer time", b->optimizer},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!isfinite(f[i].v) || f[i].v < 0)
			return config_fail(err, "internal: the %s engine computed a %s of %g, expected a finite value >= 0",
					   r->engine ? r->engine : "?", f[i].name, f[i].v);
	if (!(r->step_time > 0))
		return config_fail(err, "internal: the %s engine computed a step time of %g s, expected a positive time",
				   r->engine ? r->engine : "?", r->step_time);
	return true;
}

bool engine_run_checked(const engine_ops *e, const engine_input *in, engine_result *out, config_error *err)
{
	return e->run(in, out, err) && engine_result_check(out, err);
}

bool engine_run_composite(const engine_ops *e, const config_model *m, const config_platform *p, const config_job *job,
			  const workload_composite *c, engine_options opt, engine_result *out, engine_result *part_out,
			  const workload_plan **primary, config_error *err)
{
	if (c->kind != WL_COMPOSE_PARALLEL) {
		const workload_plan *plan = c->kind == WL_COMPOSE_SEQUENTIAL ? &c->merged : &c->parts[0].plan;
		engine_input in = {.model = m, .platform = p, .job = job, .plan = plan, .opt = opt};
		*primary = plan;
		return engine_run_checked(e, &in, out, err);
	}
	/* Unequal groups run side by side; the slowest part sets the step. Each part is
	 * simulated over the whole world with its own group size (an engine sees one group
	 * size at a time), so contention between parts of different sizes is not seen. */
	int slowest = 0;
	double flops = 0, hw = 0, dense = 0;
	engine_result tmp[WORKLOAD_MAX_PARTS];
	for (int i = 0; i < c->n_parts; i++) {
		engine_input in = {.model = m, .platform = p, .job = job, .plan = &c->parts[i].plan, .opt = opt};
		if (i > 0)
			in.opt.trace_path = NULL; /* one trace: the first part's */
		if (!engine_run_checked(e, &in, &tmp[i], err))
			return false;
		if (tmp[i].step_time > tmp[slowest].step_time)
			slowest = i;
		flops += c->parts[i].plan.model_flops_per_step * c->parts[i].ranks;
		hw += c->parts[i].plan.hardware_flops_per_step * c->parts[i].ranks;
		dense += c->parts[i].plan.model_flops_dense_per_step * c->parts[i].ranks;
		if (part_out)
			part_out[i] = tmp[i];
	}
	*out = tmp[slowest];
	*primary = &c->parts[slowest].plan;
	/* MFU over every GPU: the parts do different work per GPU. */
	out->mfu = out->step_time > 0 ? flops / job->gpus / (p->gpu.peak_flops * out->step_time) : 0;
	out->hfu = out->step_time > 0 ? hw / job->gpus / (p->gpu.peak_flops * out->step_time) : 0;
	out->mfu_dense = out->step_time > 0 ? dense / job->gpus / (p->gpu.peak_flops * out->step_time) : 0;
	return true;
}
