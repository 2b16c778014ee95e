/* spsim's prediction of each corpus case, through the same library paths the commands
 * use: nccltests_predict_time for collectives (what `spsim collective` prints), the
 * compute-time model on a synthetic op for kernels, and an engine over the whole op
 * program for training steps (what `spsim run` reports). */
#include "fidelity/fidelity.h"

#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "nccltests/nccltests.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* FLOPs as the published kernel benchmarks count them (see fidelity.h). */
static double kernel_flops(const fidelity_kernel *k)
{
	if (k->kernel == WL_KERNEL_GEMM)
		return 2.0 * k->m * k->n * k->k;
	double s = (double)k->seq_len;
	double fwd = 4.0 * k->batch * s * s * k->heads * k->head_dim * (k->causal ? 0.5 : 1.0);
	return k->pass == FID_PASS_FWD ? fwd : k->pass == FID_PASS_BWD ? 2.5 * fwd : 3.5 * fwd;
}

/* HBM bytes a kernel cannot avoid (bf16 operands read and results written once): the
 * memory side of the roofline. */
static double kernel_bytes(const fidelity_kernel *k)
{
	if (k->kernel == WL_KERNEL_GEMM)
		return 2.0 * (k->m * k->k + k->k * k->n + k->m * k->n);
	/* Q and O per query head, K and V per K/V head (grouped-query attention reads each
	 * K/V head once for its group) */
	int kv = k->kv_heads > 0 ? k->kv_heads : k->heads;
	double qkvo = 2.0 * 2.0 * k->batch * (double)k->seq_len * (k->heads + kv) * k->head_dim;
	/* backward also reads dO and writes dQ, dK, dV */
	return k->pass == FID_PASS_FWD ? qkvo : k->pass == FID_PASS_BWD ? 2.0 * qkvo : 3.0 * qkvo;
}

/* The one place a published kernel configuration becomes spsim's op: FLOPs, HBM bytes and
 * the shape the compute model times it by (engine/compute.c): m, n, k of a GEMM; sequence
 * length, heads, head dimension, causality, pass and kernel family (k->family, the kernel
 * the source measured) of attention. A fwd+bwd case is its forward and backward ops. */
double fidelity_kernel_time(const config_platform *p, const fidelity_kernel *k, double *flops)
{
	workload_op op;
	memset(&op, 0, sizeof op);
	op.name = k->kernel == WL_KERNEL_GEMM ? "fidelity_gemm" : "fidelity_attention";
	op.kind = WL_OP_COMPUTE;
	op.cat = WL_CAT_COMPUTE;
	op.kernel = k->kernel;
	op.flops = kernel_flops(k);
	op.hbm_bytes = kernel_bytes(k);
	if (flops)
		*flops = op.flops;
	if (k->kernel == WL_KERNEL_GEMM) {
		op.shape.gemm.m = (int)k->m;
		op.shape.gemm.n = (int)k->n;
		op.shape.gemm.k = (int)k->k;
		return engine_compute_time(p, &op);
	}
	op.shape.attn.seq = (int)k->seq_len;
	op.shape.attn.head_dim = k->head_dim;
	op.shape.attn.heads = k->heads;
	op.shape.attn.kv_heads = k->kv_heads > 0 ? k->kv_heads : k->heads;
	op.shape.attn.seqs = k->batch;
	op.shape.attn.causal = k->causal;
	for (int i = 0; i < CONFIG_ATTN_KERNELS; i++)
		if (strcmp(k->family, config_attn_kernel_names[i]) == 0)
			op.shape.attn.kernel = (unsigned char)i;
	if (k->pass != FID_PASS_FWD_BWD) {
		op.phase = k->pass == FID_PASS_BWD ? WL_PHASE_BWD : WL_PHASE_FWD;
		return engine_compute_time(p, &op);
	}
	/* forward: 1/3.5 of the FLOPs and a third of the bytes; backward the rest */
	workload_op bwd = op;
	op.phase = WL_PHASE_FWD;
	op.flops /= 3.5;
	op.hbm_bytes /= 3.0;
	bwd.phase = WL_PHASE_BWD;
	bwd.flops *= 2.5 / 3.5;
	bwd.hbm_bytes *= 2.0 / 3.0;
	return engine_compute_time(p, &op) + engine_compute_time(p, &bwd);
}

static bool predict_collective(const fidelity_case *k, const config_platform *p, double *out, config_error *err)
{
	config_platform forced = *p; /* what the run forced, as --alg and --proto do */
	forced.nccl.force_algo = k->force_algo;
	forced.nccl.force_proto = k->force_proto;
	nccltests_setup s = {.platform = &forced, .coll = k->coll, .alg = k->alg, .gpus = k->gpus,
			     .group_size = k->gpus, .placement = ENGINE_PLACE_CONTIGUOUS};
	if (!nccltests_setup_check(&s, err))
		return false;
	double t;
	if (!nccltests_predict_time(&s, k->size, &t, err))
		return false;
	if (k->metric == FID_TIME_US) {
		*out = t * 1e6;
		return true;
	}
	nccltests_result r;
	nccltests_result_make(k->coll, k->gpus, 4, k->size, t, &r);
	*out = r.busbw;
	return true;
}

/* The named engine (NULL: the analytic one). */
static bool find_engine(const char *engine, const engine_ops **e, config_error *err)
{
	*e = engine_find(engine ? engine : "analytic");
	return *e ? true : config_fail(err, "unknown engine '%s', expected analytic or simgrid", engine);
}

/* FLOPs per token of a step as Megatron-DeepSpeed counts them for its printed TFLOP/s
 * (megatron/utils.py throughput_calculator: flops_per_iteration = 24 · f · B · s · L · h²
 * · (1 + s/(6h) + V/(16·L·h)) with B·s the iteration's tokens, f = 4 when activations are
 * checkpointed (checkpoint_activations, or recompute_granularity selective) and 3
 * otherwise; V the padded vocabulary; Narayanan et al., arXiv 2104.04473, eq. 3). */
double fidelity_megatron_flops_per_token(const config_model *m, const config_job *job)
{
	double h = m->hidden, L = m->layers, s = (double)job->seq_len, V = m->vocab;
	double f = job->recompute == CONFIG_RECOMPUTE_NONE ? 3.0 : 4.0;
	return 24.0 * f * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h));
}

static bool predict_step(const fidelity_case *k, const config_platform *p, const char *engine, double *out,
			 config_error *err)
{
	const engine_ops *e;
	if (!find_engine(engine, &e, err))
		return false;
	config_model m;
	if (!config_load_model(k->model, &m, err))
		return false;
	config_job job = k->job;
	engine_options opt = {0};
	opt.whatif = k->whatif.n > 0 ? &k->whatif : NULL; /* a step case's what_if: */
	if (!workload_check(&m, p, &job, err) || !engine_whatif_supported(e->name, &opt, err))
		return false;
	workload_composite comp;
	if (!workload_compose(&m, p, &job, &comp, err))
		return false;
	engine_result r;
	const workload_plan *primary;
	bool ok = engine_run_composite(e, &m, p, &job, &comp, opt, &r, NULL, &primary, err);
	if (ok && fidelity_metric_is_memory(k->metric)) /* read before the plans are freed */
		*out = fidelity_memory_measure(workload_composite_memory(&comp, primary), k->metric) / GIB;
	workload_compose_finish(&comp);
	if (!ok || fidelity_metric_is_memory(k->metric))
		return ok;
	double tokens_gpu = r.tokens_per_s / job.gpus;
	*out = k->metric == FID_MFU_PCT		? 100.0 * r.mfu
	       : k->metric == FID_MFU_DENSE_PCT	? 100.0 * r.mfu_dense
	       : k->metric == FID_MEGATRON_TFLOPS ? tokens_gpu * fidelity_megatron_flops_per_token(&m, &job) / 1e12
						: tokens_gpu;
	return true;
}

bool fidelity_metric_is_memory(fidelity_metric metric)
{
	return metric == FID_GIB_ALLOCATED || metric == FID_GIB_RESERVED || metric == FID_GIB_DEVICE;
}

double fidelity_memory_measure(const workload_memory *mem, fidelity_metric metric)
{
	const workload_reserve *r = &mem->reserve_of;
	/* not handed to tensors by PyTorch's caching allocator: the driver's context and NCCL's
	 * own cudaMalloc'd buffers (outside the allocator) and the fragmentation (inside its
	 * segments, unusable); the cuBLAS workspace is an allocator block (CublasHandlePool.cpp
	 * getNewWorkspace) */
	double outside = r->declared ? r->total : r->context + r->nccl + r->fragmentation;
	double allocated = mem->peak - outside;
	switch (metric) {
	case FID_GIB_ALLOCATED: return allocated;
	case FID_GIB_RESERVED: return allocated + (r->declared ? 0.0 : r->fragmentation);
	case FID_GIB_DEVICE: return mem->peak;
	default: return 0;
	}
}

/* An sp_attention case: the section of spsim's own op program for the strategy
 * (workload_sp_attention_plan_make, the layer block's builders) run by the engine; one
 * iteration is the section once (fwd) or its forward then its backward (fwd+bwd). */
static bool predict_sp_attention(const fidelity_case *k, const config_platform *p, const char *engine, double *out,
				 config_error *err)
{
	const engine_ops *e;
	if (!find_engine(engine, &e, err))
		return false;
	config_model m;
	fidelity_sp_attention_model(k, &m);
	config_job job = k->job;
	if (!workload_check(&m, p, &job, err))
		return false;
	workload_plan plan;
	if (!workload_sp_attention_plan_make(&m, p, &job, k->kern.pass == FID_PASS_FWD_BWD, &plan, err))
		return false;
	engine_input in = {.model = &m, .platform = p, .job = &job, .plan = &plan};
	engine_result r;
	bool ok = engine_run_checked(e, &in, &r, err);
	workload_plan_finish(&plan);
	if (ok)
		*out = 1.0 / r.step_time;
	return ok;
}

bool fidelity_predict(const fidelity_case *k, const char *engine, double *predicted, config_error *err)
{
	config_platform p;
	if (!fidelity_case_platform(k, &p, err))
		return false;
	switch (k->kind) {
	case FID_COLLECTIVE: return predict_collective(k, &p, predicted, err);
	case FID_ATTENTION:
	case FID_GEMM: {
		double flops, t = fidelity_kernel_time(&p, &k->kern, &flops);
		*predicted = !(t > 0) ? 0 : k->metric == FID_ITER_S ? 1.0 / t : flops / t / 1e12;
		return true;
	}
	case FID_STEP: return predict_step(k, &p, engine, predicted, err);
	case FID_SP_ATTENTION: return predict_sp_attention(k, &p, engine, predicted, err);
	default: return config_fail(err, "%s: unknown case kind", k->id);
	}
}

double fidelity_err_pct(double predicted, double published)
{
	return 100.0 * (predicted - published) / published;
}

fidelity_summary fidelity_summarize(const double *predicted, const double *published, int n)
{
	fidelity_summary s = {.n = n};
	double sum = 0;
	for (int i = 0; i < n; i++) {
		sum += fabs(log(predicted[i] / published[i]));
		double e = fabs(fidelity_err_pct(predicted[i], published[i]));
		if (e > s.max_abs_error_pct)
			s.max_abs_error_pct = e;
	}
	s.geomean_abs_error_pct = n > 0 ? 100.0 * (exp(sum / n) - 1.0) : 0;
	return s;
}
