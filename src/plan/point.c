/* Grid points: index <-> axis values, keys, the job a point stands for, and running it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"

void plan_point_at(const plan_spec *s, long index, plan_point *out)
{
	out->index = index;
	/* Mixed radix, the last axis (strategy) varying fastest. */
	for (int a = PLAN_AXIS_COUNT - 1; a >= 0; a--) {
		int n = s->n[a] > 0 ? s->n[a] : 1;
		out->at[a] = (int)(index % n);
		index /= n;
	}
}

void plan_point_key(const plan_spec *s, const plan_point *p, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int a = 0; a < PLAN_AXIS_COUNT; a++) {
		if (!s->given[a] && a != PLAN_AXIS_STRATEGY)
			continue;
		int w = snprintf(buf + used, len - used, "%s%s=%s", used ? ";" : "", plan_axis_key((plan_axis)a),
				 s->values[a][p->at[a]].text);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

static double num(const plan_spec *s, const plan_point *p, plan_axis a) { return s->values[a][p->at[a]].num; }

bool plan_point_job(const plan_spec *s, const plan_point *pt, config_platform *platform, config_job *job,
		    config_error *err)
{
	const config_model *m = &s->models[pt->at[PLAN_AXIS_MODEL]];
	config_platform p = s->platforms[pt->at[PLAN_AXIS_PLATFORM]];
	const config_calibration *cal = &s->cals[pt->at[PLAN_AXIS_CALIBRATION]];
	/* A calibration first, the what-if overrides on top of it: an override is the link's
	 * rate as written, scaled by the platform's efficiency (1 after a calibration). */
	if (cal->path[0]) {
		if (!config_calibration_check(cal, &p, err))
			return false;
		config_apply_calibration(&p, cal);
	}
	if (s->given[PLAN_AXIS_NODES])
		p.nodes = (int)num(s, pt, PLAN_AXIS_NODES);
	if (s->given[PLAN_AXIS_GPUS_PER_NODE]) {
		p.gpus_per_node = (int)num(s, pt, PLAN_AXIS_GPUS_PER_NODE);
		/* A mesh gives each GPU one pair link per peer (config.h). */
		if (p.intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
			p.intra.bandwidth = p.intra.pair_bandwidth * (p.gpus_per_node > 1 ? p.gpus_per_node - 1 : 1);
	}
	if (s->given[PLAN_AXIS_NICS])
		p.inter.nics_per_node = (int)num(s, pt, PLAN_AXIS_NICS);
	if (s->given[PLAN_AXIS_NIC_BANDWIDTH])
		p.inter.nic_bandwidth = num(s, pt, PLAN_AXIS_NIC_BANDWIDTH);
	if (s->given[PLAN_AXIS_INTRA_BANDWIDTH]) {
		double bw = num(s, pt, PLAN_AXIS_INTRA_BANDWIDTH);
		p.intra.bandwidth = bw;
		p.intra.pair_bandwidth = p.intra.fabric == CONFIG_FABRIC_NVLINK_MESH && p.gpus_per_node > 1
						 ? bw / (p.gpus_per_node - 1)
						 : bw;
	}
	if (s->given[PLAN_AXIS_INTER_LATENCY])
		p.inter.latency = num(s, pt, PLAN_AXIS_INTER_LATENCY);
	if (s->given[PLAN_AXIS_GPU_MEMORY])
		p.gpu.memory_bytes = num(s, pt, PLAN_AXIS_GPU_MEMORY);
	/* The overrides are hardware: NCCL's own view of the links, which a calibration left
	 * at the platform's declared values (config.h nccl.tuner), follows them too. */
	if (p.nccl.tuner.set) {
		if (s->given[PLAN_AXIS_NIC_BANDWIDTH])
			p.nccl.tuner.nic_bw = p.inter.nic_bandwidth;
		if (s->given[PLAN_AXIS_INTER_LATENCY])
			p.nccl.tuner.inter_lat = p.inter.latency;
		if (s->given[PLAN_AXIS_INTRA_BANDWIDTH]) {
			p.nccl.tuner.intra_bw = p.intra.bandwidth;
			p.nccl.tuner.pair_bw = p.intra.pair_bandwidth;
		} else if (s->given[PLAN_AXIS_GPUS_PER_NODE] && p.intra.fabric == CONFIG_FABRIC_NVLINK_MESH) {
			p.nccl.tuner.intra_bw = p.nccl.tuner.pair_bw * (p.gpus_per_node > 1 ? p.gpus_per_node - 1 : 1);
		}
	}

	config_job j = s->base;
	/* The overridden platform within the ranges before anything is derived from it: the
	 * parent repeats this when it records a failed point, and must not trap there. */
	if (!config_platform_check(&p, err)) {
		*platform = p;
		*job = j;
		return false;
	}
	j.gpus = s->given[PLAN_AXIS_GPUS] ? (int)num(s, pt, PLAN_AXIS_GPUS) : config_platform_gpus(&p);
	j.zero_stage = (int)num(s, pt, PLAN_AXIS_ZERO);
	/* the job-file settings the spec gives, each value read as a job file reads it */
	for (int a = 0; a < PLAN_AXIS_COUNT; a++) {
		int k = s->given[a] ? config_job_setting_find(plan_axis_key((plan_axis)a)) : -1;
		if (k >= 0)
			config_job_setting_copy(k, &j, &s->values[a][pt->at[a]].job);
	}
	j.grad_accum = (int)num(s, pt, PLAN_AXIS_GRAD_ACCUM);
	j.seq_len = (long)num(s, pt, PLAN_AXIS_SEQ_LEN);
	j.micro_batch = (int)num(s, pt, PLAN_AXIS_MICRO_BATCH);
	*platform = p;
	*job = j;
	if (!plan_strategy_apply(&s->strategies[pt->at[PLAN_AXIS_STRATEGY]], job, err))
		return false;
	/* Megatron-Core's name for what the SP group runs, after the strategy it rewrites;
	 * against a strategy the spec names, as against a job file's strategy key */
	if (s->given[PLAN_AXIS_CP_COMM_TYPE] &&
	    !config_job_apply_cp_comm_type(job, (config_cp_comm_type)num(s, pt, PLAN_AXIS_CP_COMM_TYPE),
					   s->given[PLAN_AXIS_STRATEGY], err))
		return false;
	if (!workload_check(m, platform, job, err))
		return false;
	const char *engine = s->values[PLAN_AXIS_ENGINE][pt->at[PLAN_AXIS_ENGINE]].text;
	engine_options o = plan_point_options(s, pt);
	if (!engine_placement_supported(engine, &o, err) || !engine_platform_supported(engine, platform, err) ||
	    !engine_buckets_supported(engine, m, job, err))
		return false;
	return !o.whatif || (config_whatif_check(o.whatif, platform, job->gpus, err) &&
			     engine_whatif_supported(engine, &o, err));
}

engine_options plan_point_options(const plan_spec *s, const plan_point *pt)
{
	engine_options o = {.placement = ENGINE_PLACE_CONTIGUOUS};
	if (s->given[PLAN_AXIS_PLACEMENT])
		engine_placement_parse(s->values[PLAN_AXIS_PLACEMENT][pt->at[PLAN_AXIS_PLACEMENT]].text, &o, NULL);
	const config_whatif *w = s->whatifs ? &s->whatifs[pt->at[PLAN_AXIS_WHAT_IF]] : NULL;
	if (w && w->n > 0)
		o.whatif = w;
	return o;
}

bool plan_engine_isolated(const char *engine) { return strcmp(engine, "analytic") != 0; }

bool plan_simulate(const config_model *m, const config_platform *p, const config_job *job, const engine_ops *e,
		   engine_options opt, plan_sim *out, config_error *err)
{
	if (!workload_compose(m, p, job, &out->comp, err))
		return false;
	if (!engine_run_composite(e, m, p, job, &out->comp, opt, &out->res, NULL, &out->primary, err)) {
		workload_compose_finish(&out->comp);
		return false;
	}
	/* Unequal groups side by side: the memory a GPU needs is the fullest part's. */
	out->memory = out->primary->memory;
	for (int i = 0; out->comp.kind == WL_COMPOSE_PARALLEL && i < out->comp.n_parts; i++)
		if (out->comp.parts[i].plan.memory.peak > out->memory.peak)
			out->memory = out->comp.parts[i].plan.memory;
	return true;
}

void plan_sim_finish(plan_sim *s) { workload_compose_finish(&s->comp); }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A row that describes the point (what ran), before any result. */
static json_t *describe(const plan_spec *s, long index, plan_point *pt, config_platform *p, config_job *job,
			bool *valid, config_error *err)
{
	plan_point_at(s, index, pt);
	char key[4096];
	plan_point_key(s, pt, key, sizeof key);
	json_t *row = plan_row_new(index, key);
	if (!row)
		return NULL;
	const config_calibration *cal = &s->cals[pt->at[PLAN_AXIS_CALIBRATION]];
	*valid = plan_point_job(s, pt, p, job, err);
	plan_row_set_job(row, &s->models[pt->at[PLAN_AXIS_MODEL]], p, job, s->strategies[pt->at[PLAN_AXIS_STRATEGY]].label,
			 s->values[PLAN_AXIS_ENGINE][pt->at[PLAN_AXIS_ENGINE]].text, cal->path[0] ? cal->path : NULL);
	plan_row_set_options(row, s->values[PLAN_AXIS_PLACEMENT][pt->at[PLAN_AXIS_PLACEMENT]].text,
			     s->values[PLAN_AXIS_WHAT_IF][pt->at[PLAN_AXIS_WHAT_IF]].text);
	return row;
}

json_t *plan_point_failed(const plan_spec *s, long index, const char *why)
{
	plan_point pt;
	config_platform p;
	config_job job;
	config_error err;
	bool valid;
	json_t *row = describe(s, index, &pt, &p, &job, &valid, &err);
	if (row)
		plan_row_set_status(row, "error", why);
	return row;
}

json_t *plan_point_eval(const plan_spec *s, long index)
{
	double t0 = now();
	plan_point pt;
	config_platform p;
	config_job job;
	config_error err = {""};
	bool valid;
	json_t *row = describe(s, index, &pt, &p, &job, &valid, &err);
	if (!row)
		return NULL;
	const config_model *m = &s->models[pt.at[PLAN_AXIS_MODEL]];
	const char *engine = s->values[PLAN_AXIS_ENGINE][pt.at[PLAN_AXIS_ENGINE]].text;
	if (!valid) {
		plan_row_set_status(row, "invalid", err.msg);
	} else {
		const engine_ops *e = engine_find(engine);
		plan_sim *sim = malloc(sizeof *sim);
		if (!e || !sim) {
			plan_row_set_status(row, "error", !e ? "engine not built into this spsim" : "out of memory");
		} else if (plan_simulate(m, &p, &job, e, plan_point_options(s, &pt), sim, &err)) {
			plan_row_set_sim(row, sim);
			plan_row_set_status(row, "ok", NULL);
			plan_sim_finish(sim);
		} else {
			char msg[CONFIG_ERROR_MAX + 64];
			snprintf(msg, sizeof msg, "%s engine: %s", e->name, err.msg);
			plan_row_set_status(row, "error", msg);
		}
		free(sim);
	}
	json_object_set_new(row, "wall_s", json_real(now() - t0));
	return row;
}
