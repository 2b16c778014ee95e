/* spsim-validate layer: a real distributed attention layer under Ulysses and BASP,
 * checked against an unpartitioned single-device run, timed per phase, and set against
 * what the engine predicts for the same job: each phase is an op of the workload's op
 * program (same name, same FLOPs and bytes), costed with the engine's own functions on the
 * platform (with --calibration applied). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/engine.h"
#include "workload/workload.h"

typedef struct prediction {
	bool ok;
	char why[CONFIG_ERROR_MAX + 64];
	double phase[VALIDATE_LAYER_PHASES];
	bool has[VALIDATE_LAYER_PHASES];
	double step_s; /* the whole training step of the job, analytic engine; 0 if not run */
	char notes[512];
} prediction;

static const workload_op *find_op(const workload_plan *plan, const char *block, const char *name)
{
	for (int i = 0; i < plan->program.n_micro; i++) {
		const workload_block *b = &plan->program.micro[i];
		if (strcmp(b->name, block))
			continue;
		for (int k = 0; k < b->n_ops; k++)
			if (!strcmp(b->ops[k].name, name) && b->ops[k].phase != WL_PHASE_RECOMPUTE)
				return &b->ops[k];
	}
	return NULL;
}

static void predict(const vcli_opts *opt, const config_model *m, const validate_layer_cfg *cfg,
		    const validate_transport *t, prediction *pr)
{
	memset(pr, 0, sizeof *pr);
	if (!m) {
		snprintf(pr->why, sizeof pr->why, "predictions need --model (the op program needs the whole model)");
		return;
	}
	if (!opt->platform) {
		snprintf(pr->why, sizeof pr->why, "give --platform (and --calibration) for the predicted side");
		return;
	}
	config_platform p;
	config_error e;
	if (!config_load_platform(opt->platform, &p, &e)) {
		snprintf(pr->why, sizeof pr->why, "%s", e.msg);
		return;
	}
	if (opt->calibration) {
		if (!config_calibrate_platform(opt->calibration, &p, NULL, &e)) {
			snprintf(pr->why, sizeof pr->why, "%s", e.msg);
			return;
		}
	}
	/* The machine measured: its hosts and ranks per host decide which groups cross nodes. */
	const int rpn = validate_transport_ranks_per_node(t);
	if (rpn > 0 && t->nodes > 1 && rpn != p.gpus_per_node) {
		snprintf(pr->notes, sizeof pr->notes, "%s has %d GPUs per node, the run had %d: predicting for %d\n",
			 p.name, p.gpus_per_node, rpn, rpn);
		p.gpus_per_node = rpn;
	}
	if (config_platform_gpus(&p) < cfg->world)
		p.nodes = (cfg->world + p.gpus_per_node - 1) / p.gpus_per_node;
	config_job job;
	config_job_defaults(&job);
	job.strategy = cfg->strategy == VALIDATE_BASP ? CONFIG_STRATEGY_BASP : CONFIG_STRATEGY_ULYSSES;
	job.gpus = cfg->world;
	job.sp = cfg->world;
	job.micro_batch = cfg->micro_batch;
	job.seq_len = cfg->seq;
	workload_plan plan;
	if (!workload_check(m, &p, &job, &e) || !workload_plan_make(m, &p, &job, &plan, &e)) {
		snprintf(pr->why, sizeof pr->why, "%s", e.msg);
		return;
	}
	for (int i = 0; i < VALIDATE_LAYER_PHASES; i++) {
		const workload_op *op = find_op(&plan, i < VALIDATE_LAYER_FWD_PHASES ? "layer_fwd" : "layer_bwd",
						validate_layer_phase_names[i]);
		if (!op)
			continue;
		pr->has[i] = true;
		if (op->kind == WL_OP_COMPUTE) {
			pr->phase[i] = engine_compute_time(&p, op);
		} else {
			const int chunks = op->chunks > 0 ? op->chunks : 1;
			pr->phase[i] = chunks * engine_collective_time(&p, op->coll, op->alg, engine_op_shape(&p, &plan.layout, op),
								       op->bytes / chunks);
		}
	}
	const engine_ops *an = engine_find("analytic");
	if (an) {
		engine_input in = {.model = m, .platform = &p, .job = &job, .plan = &plan};
		engine_result r;
		if (an->run(&in, &r, &e))
			pr->step_s = r.step_time;
	}
	workload_plan_finish(&plan);
	pr->ok = true;
}

static const char *kind_name(validate_phase_kind k)
{
	switch (k) {
	case VALIDATE_PH_GEMM: return "gemm";
	case VALIDATE_PH_ATTN: return "attention";
	case VALIDATE_PH_COMM: return "all-to-all";
	default: return "layout";
	}
}

static void row(vcli_out *o, const char *name, double meas, double mean, bool has, double pred)
{
	char p[32] = "-", err[32] = "-";
	if (has) {
		snprintf(p, sizeof p, "%.4f", pred * 1e3);
		if (meas > 0)
			snprintf(err, sizeof err, "%+.1f%%", 100 * (pred - meas) / meas);
	}
	vcli_say(o, "| %-16s | %12.4f | %10.4f | %13s | %8s |\n", name, meas * 1e3, mean * 1e3, p, err);
}

static int one_strategy(const vcli_opts *opt, validate_transport *t, vcli_out *o, const config_model *m,
			const validate_layer_cfg *cfg, bool *failed)
{
	char err[512] = "";
	validate_layer_result res;
	vcli_say(o, "\n### %s: N = %d, B = %d, S = %ld, hidden %d, heads %d/%d, d %d%s\n\n",
		 validate_strategy_name(cfg->strategy), cfg->world, cfg->micro_batch, cfg->seq, cfg->hidden, cfg->heads,
		 cfg->kv_heads, cfg->head_dim, cfg->backward ? ", forward + backward" : ", forward");
	int rc = validate_layer_run(t, cfg, &res, err, sizeof err);
	if (rc) {
		if (err[0] && o->writer)
			fprintf(stderr, "spsim-validate layer: %s\n", err);
		return rc;
	}
	const validate_groups *g = &res.groups;
	vcli_say(o, "Groups of K = %d (%d of them), %d sequence(s) x %ld tokens per rank, %d/%d heads per rank in "
		    "attention, kv heads sent x%d.\n",
		 g->K, g->n_groups, g->nseq, g->tokens, g->heads_per_rank, g->kv_per_rank, g->kv_rep);
	if (t->ops->attn_kernel) {
		const kernels_attn_shape as = {.nseq = g->nseq, .seq = (int)g->seq, .heads = g->heads_per_rank,
					       .kv_heads = g->kv_per_rank, .head_dim = cfg->head_dim, .causal = 1};
		vcli_say(o, "Attention kernels: forward %s, backward %s.\n", t->ops->attn_kernel(t, 0, &as, 0),
			 cfg->backward ? t->ops->attn_kernel(t, 0, &as, 1) : "-");
	}
	if (!opt->no_check) {
		if ((rc = validate_layer_check(t, cfg, &res, opt->tol, err, sizeof err))) {
			if (err[0] && o->writer)
				fprintf(stderr, "spsim-validate layer: %s\n", err);
			validate_layer_result_finish(&res);
			return rc;
		}
		vcli_say(o, "Check against an unpartitioned single-device run: %s (output max err %.3g, max |err|/(|ref|+rms) "
			    "%.3g%s",
			 res.pass ? "PASS" : "FAIL", res.cmp_y.max_abs, res.cmp_y.max_norm, cfg->backward ? "" : ").\n");
		if (cfg->backward)
			vcli_say(o, "; input gradient max err %.3g, %.3g), tolerance %.3g.\n", res.cmp_dx.max_abs,
				 res.cmp_dx.max_norm, opt->tol);
		validate_log_append(&o->log, "layer_check",
				    "\"strategy\": \"%s\", \"N\": %d, \"B\": %d, \"S\": %ld, \"pass\": %s, "
				    "\"y_max_abs\": %.6g, \"y_max_norm\": %.6g, \"dx_max_abs\": %.6g, \"dx_max_norm\": %.6g, "
				    "\"tol\": %.6g",
				    validate_strategy_name(cfg->strategy), cfg->world, cfg->micro_batch, cfg->seq,
				    res.pass ? "true" : "false", res.cmp_y.max_abs, res.cmp_y.max_norm, res.cmp_dx.max_abs,
				    res.cmp_dx.max_norm, opt->tol);
		*failed |= !res.pass;
	}
	prediction pr;
	predict(opt, m, cfg, t, &pr);
	if (!pr.ok)
		vcli_say(o, "No prediction: %s\n", pr.why);
	else if (pr.notes[0])
		vcli_say(o, "%s", pr.notes);
	vcli_say(o, "\n| phase            | measured ms  | mean ms    | predicted ms  | error    |\n"
		    "|------------------|--------------|------------|---------------|----------|\n");
	double sum_m[4] = {0}, sum_mean[4] = {0}, sum_p[4] = {0};
	bool all_p[4] = {true, true, true, true};
	double tot_m[2] = {0}, tot_mean[2] = {0}, tot_p[2] = {0};
	for (int i = 0; i < res.n_phases; i++) {
		const validate_phase_info ph = validate_layer_phase(cfg, g, i);
		const bool has = pr.ok && pr.has[i];
		row(o, validate_layer_phase_names[i], res.time_s[i], res.mean_s[i], has, pr.phase[i]);
		sum_m[ph.kind] += res.time_s[i];
		sum_mean[ph.kind] += res.mean_s[i];
		tot_m[i >= VALIDATE_LAYER_FWD_PHASES] += res.time_s[i];
		tot_mean[i >= VALIDATE_LAYER_FWD_PHASES] += res.mean_s[i];
		if (has) {
			sum_p[ph.kind] += pr.phase[i];
			tot_p[i >= VALIDATE_LAYER_FWD_PHASES] += pr.phase[i];
		} else if (ph.present) {
			all_p[ph.kind] = false;
		}
		validate_log_append(&o->log, "layer_phase",
				    "\"strategy\": \"%s\", \"N\": %d, \"B\": %d, \"S\": %ld, \"K\": %d, \"phase\": \"%s\", "
				    "\"kind\": \"%s\", \"flops\": %.9g, \"bytes\": %.9g, \"time_s\": %.9g, \"mean_s\": %.9g, "
				    "\"predicted_s\": %.9g",
				    validate_strategy_name(cfg->strategy), cfg->world, cfg->micro_batch, cfg->seq, g->K,
				    validate_layer_phase_names[i], kind_name(ph.kind), ph.flops, ph.bytes, res.time_s[i],
				    res.mean_s[i], has ? pr.phase[i] : -1.0);
	}
	vcli_say(o, "|------------------|--------------|------------|---------------|----------|\n");
	const validate_phase_kind kinds[4] = {VALIDATE_PH_GEMM, VALIDATE_PH_ATTN, VALIDATE_PH_MEMORY, VALIDATE_PH_COMM};
	for (int k = 0; k < 4; k++)
		row(o, kind_name(kinds[k]), sum_m[kinds[k]], sum_mean[kinds[k]], pr.ok && all_p[kinds[k]], sum_p[kinds[k]]);
	row(o, "forward", tot_m[0], tot_mean[0], pr.ok, tot_p[0]);
	if (cfg->backward) {
		row(o, "backward", tot_m[1], tot_mean[1], pr.ok, tot_p[1]);
		row(o, "layer", tot_m[0] + tot_m[1], tot_mean[0] + tot_mean[1], pr.ok, tot_p[0] + tot_p[1]);
	}
	vcli_say(o, "\nMeasured: the slowest rank's mean over %d iterations after %d warm-up (mean: over ranks). "
		    "Error = (predicted - measured) / measured.\n",
		 cfg->iters, cfg->warmup);
	if (pr.ok && pr.step_s > 0)
		vcli_say(o, "The analytic engine's whole training step for this job (%d layers and the rest): %.4f s.\n",
			 m->layers, pr.step_s);
	validate_layer_result_finish(&res);
	return VALIDATE_OK;
}

int vcli_layer(const vcli_opts *opt, validate_transport *t, vcli_out *o)
{
	config_model m;
	config_error e;
	const config_model *mp = NULL;
	validate_layer_cfg cfg = {.world = t->world, .micro_batch = opt->micro_batch, .warmup = opt->warmup,
				  .iters = opt->iters, .backward = !opt->no_backward, .seed = opt->seed};
	if (opt->has_dims) {
		cfg.hidden = opt->dims[0];
		cfg.heads = opt->dims[1];
		cfg.kv_heads = opt->dims[2];
		cfg.head_dim = opt->dims[3];
	} else if (opt->model) {
		if (!config_load_model(opt->model, &m, &e)) {
			if (o->writer)
				fprintf(stderr, "spsim-validate layer: %s\n", e.msg);
			return VALIDATE_EINVAL;
		}
		mp = &m;
		cfg.hidden = m.hidden;
		cfg.heads = m.heads;
		cfg.kv_heads = m.kv_heads;
		cfg.head_dim = m.head_dim;
	}
	if (!cfg.hidden || opt->n_seqs != 1) {
		if (o->writer)
			fprintf(stderr, "spsim-validate layer: needs --model (or --dims h,a,g,d) and one --seq\n");
		return VALIDATE_EINVAL;
	}
	cfg.seq = opt->seqs[0];
	const char *which = opt->strategy ? opt->strategy : "both";
	bool failed = false;
	for (int s = 0; s < 2; s++) {
		cfg.strategy = s ? VALIDATE_BASP : VALIDATE_ULYSSES;
		if (strcmp(which, "both") && strcmp(which, validate_strategy_name(cfg.strategy)))
			continue;
		int rc = one_strategy(opt, t, o, mp, &cfg, &failed);
		if (rc)
			return rc;
	}
	return failed ? VALIDATE_ECHECK : VALIDATE_OK;
}
