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
	/* MFU: model FLOPs of this GPU (recompute excluded) over peak x step time. */
	r->mfu = r->step_time > 0 ? in->plan->model_flops_per_step / (in->platform->gpu.peak_flops * r->step_time) : 0;
}
