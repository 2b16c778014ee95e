/* spsim-validate compute: the GEMM, attention and layout kernels of one rank of a job,
 * each timed alone; achieved TFLOP/s and efficiency against the GPU's peak, and the
 * efficiencies of a calibration file: for each class, total FLOPs over total time of its
 * kernels weighted by how often a layer runs them — the efficiency that makes the
 * engine's roofline (FLOPs / (peak x efficiency)) reproduce the measured total.
 *
 * Times are medians of per-call times (p10/p90 beside them); the GPU's clocks and
 * temperature are recorded with each. Attention names its kernel family (cudnn or
 * wmma-fallback): the calibration records it as attention_kernel and one
 * attention_points entry per shape and direction (config.h). */
#include <string.h>

#include "cli.h"

typedef struct compute_ctx {
	vcli_out *o;
	validate_transport *t;
	double peak, hbm;
	long seq;
	double work[3], time[3]; /* gemm, attention, memory: count-weighted sums */
	double eff[3];           /* the platform's efficiencies (gemm, attention, memory): the predicted side */
	config_calibration *cal; /* attention points go here */
	validate_gpu_state gpu;  /* the last state seen */
} compute_ctx;

static int on_point(void *vctx, const validate_compute_point *p)
{
	compute_ctx *c = vctx;
	const validate_compute_item *it = p->item;
	char shape[96];
	int cls;
	double peak;
	switch (it->kind) {
	case VALIDATE_CK_GEMM:
		snprintf(shape, sizeof shape, "%ldx%ldx%ld %c%c", it->gemm.m, it->gemm.n, it->gemm.k,
			 it->gemm.trans_a ? 'T' : 'N', it->gemm.trans_b ? 'T' : 'N');
		cls = 0;
		peak = c->peak;
		break;
	case VALIDATE_CK_PERMUTE:
		snprintf(shape, sizeof shape, "%d seq x %ld tok x %d heads x %d, P %d", it->perm.nseq, it->perm.tokens,
			 it->perm.heads, it->perm.head_dim, it->perm.peers);
		cls = 2;
		peak = c->hbm;
		break;
	default:
		snprintf(shape, sizeof shape, "%d seq x %d tok, %d/%d heads, d %d", it->attn.nseq, it->attn.seq,
			 it->attn.heads, it->attn.kv_heads, it->attn.head_dim);
		cls = 1;
		peak = c->peak;
		break;
	}
	const int bwd = it->kind == VALIDATE_CK_ATTN_BWD;
	const char *kernel = cls != 1	       ? (cls == 0 ? "cublas" : "permute")
			     : c->t->ops->attn_kernel ? c->t->ops->attn_kernel(c->t, 0, &it->attn, bwd)
						      : "?";
	const double work = cls == 2 ? it->bytes : it->flops;
	/* rates at the 10th / 90th percentile: the slow calls give the low rate */
	const double r10 = p->p90_s > 0 ? work / p->p90_s : 0, r90 = p->p10_s > 0 ? work / p->p10_s : 0;
	if (p->gpu.name[0])
		c->gpu = p->gpu;
	if (cls == 1 && c->cal->n_attention_points < CONFIG_MAX_ATTENTION_POINTS && p->rate > 0) {
		config_attention_point *ap = &c->cal->attention_points[c->cal->n_attention_points++];
		snprintf(ap->kernel, sizeof ap->kernel, "%s", kernel);
		ap->seq = it->attn.seq;
		ap->head_dim = it->attn.head_dim;
		ap->heads = it->attn.heads;
		ap->kv_heads = it->attn.kv_heads;
		ap->direction = bwd ? CONFIG_DIRECTION_BWD : CONFIG_DIRECTION_FWD;
		ap->causal = it->attn.causal != 0;
		ap->tflops = p->rate / 1e12;
		ap->p10 = r10 / 1e12;
		ap->p90 = r90 / 1e12;
		if (!c->cal->attention_kernel[0])
			snprintf(c->cal->attention_kernel, sizeof c->cal->attention_kernel, "%s", kernel);
		else if (strcmp(c->cal->attention_kernel, kernel))
			snprintf(c->cal->attention_kernel, sizeof c->cal->attention_kernel, "mixed");
	}
	c->work[cls] += it->count * (cls == 2 ? it->bytes : it->flops);
	c->time[cls] += it->count * p->time_s;
	const double eff = peak > 0 ? p->rate / peak : 0;
	char effs[16] = "-";
	if (peak > 0)
		snprintf(effs, sizeof effs, "%.1f%%", 100 * eff);
	const double unit = cls == 2 ? 1e9 : 1e12;
	/* spsim's roofline for this kernel: work / (peak x the platform's efficiency) */
	const double predicted = peak > 0 && c->eff[cls] > 0 ? work / (peak * c->eff[cls]) : -1;
	char pred[24] = "-";
	if (predicted > 0)
		snprintf(pred, sizeof pred, "%.4g (%+.0f%%)", predicted * 1e3, 100 * (predicted - p->time_s) / p->time_s);
	char clocks[48] = "-";
	if (p->gpu.sm_mhz)
		snprintf(clocks, sizeof clocks, "%u/%u MHz %u C", p->gpu.sm_mhz, p->gpu.mem_mhz, p->gpu.temp_c);
	vcli_say(c->o, "| %-18s | %-13s | %-36s | %9.3f | %-17s | %7.2f-%-7.2f %-7s | %7s | %-17s |\n", it->name, kernel,
		 shape, p->time_s * 1e3, pred, r10 / unit, r90 / unit, cls == 2 ? "GB/s" : "TFLOP/s", effs, clocks);
	return validate_log_append(&c->o->log, "compute",
				   "\"name\": \"%s\", \"class\": \"%s\", \"kernel\": \"%s\", \"shape\": \"%s\", \"seq\": %ld, "
				   "\"flops\": %.9g, \"bytes\": %.9g, \"per_layer\": %.6g, \"time_s\": %.9g, \"p10_s\": %.9g, "
				   "\"p90_s\": %.9g, \"iters\": %d, \"cache_flushed\": %s, \"rate\": %.9g, \"efficiency\": %.6g, "
				   "\"gpu\": \"%s\", \"sm_mhz\": %u, \"max_sm_mhz\": %u, \"mem_mhz\": %u, \"temp_c\": %u, "
				   "\"predicted_s\": %.9g",
				   it->name, cls == 0 ? "gemm" : cls == 1 ? "attention" : "memory", kernel, shape, c->seq,
				   it->flops, it->bytes, it->count, p->time_s, p->p10_s, p->p90_s, p->iters,
				   p->flushed ? "true" : "false", p->rate, eff, p->gpu.name, p->gpu.sm_mhz, p->gpu.max_sm_mhz,
				   p->gpu.mem_mhz, p->gpu.temp_c, predicted);
}

int vcli_compute(const vcli_opts *opt, validate_transport *t, vcli_out *o)
{
	if (!opt->model || opt->n_seqs < 1) {
		if (o->writer)
			fprintf(stderr, "spsim-validate compute: needs --model and --seq\n");
		return VALIDATE_EINVAL;
	}
	config_model m;
	config_error e;
	if (!config_load_model(opt->model, &m, &e)) {
		if (o->writer)
			fprintf(stderr, "spsim-validate compute: %s\n", e.msg);
		return VALIDATE_EINVAL;
	}
	validate_strategy st = VALIDATE_BASP;
	if (opt->strategy && !validate_strategy_parse(opt->strategy, &st)) {
		if (o->writer)
			fprintf(stderr, "spsim-validate compute: --strategy basp or ulysses\n");
		return VALIDATE_EINVAL;
	}
	const int N = opt->sp ? opt->sp : t->world;
	config_calibration cal;
	memset(&cal, 0, sizeof cal);
	compute_ctx c = {.o = o, .t = t, .cal = &cal};
	vcli_peaks(opt, &c.peak, &c.hbm);
	if (opt->platform) {
		config_platform plat;
		if (config_load_platform(opt->platform, &plat, &e)) {
			c.eff[0] = plat.eff.gemm;
			c.eff[1] = plat.eff.attention;
			c.eff[2] = plat.eff.memory;
			vcli_say(o, "Predicted: spsim's roofline with %s's efficiencies (gemm %.2f, attention %.2f, memory %.2f), "
				    "no calibration.\n",
				 plat.name, plat.eff.gemm, plat.eff.attention, plat.eff.memory);
		}
	}
	const validate_model_dims dims = {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab};
	vcli_say(o, "Model %s, job N = %d, B = %d, %s: the kernels of one rank, each rank of this run timing its own.\n",
		 m.name, N, opt->micro_batch, validate_strategy_name(st));
	if (c.peak > 0)
		vcli_say(o, "Peak %.0f TFLOP/s dense bf16, HBM %.0f GB/s.\n", c.peak / 1e12, c.hbm / 1e9);
	else
		vcli_say(o, "No peak known (give --platform or --peak-tflops/--hbm-bandwidth): rates only.\n");
	for (int s = 0; s < opt->n_seqs; s++) {
		validate_groups g;
		char err[512] = "";
		int rc = validate_groups_make(st, N, opt->micro_batch, opt->seqs[s], m.heads, m.kv_heads, &g, err, sizeof err);
		if (rc) {
			if (o->writer)
				fprintf(stderr, "spsim-validate compute: %s\n", err);
			return rc;
		}
		validate_compute_item items[32];
		const int n = validate_compute_items(&dims, &g, items, 32);
		c.seq = opt->seqs[s];
		vcli_say(o, "\nS = %ld: %ld tokens per rank, %d query / %d kv heads per rank in attention.\n\n", c.seq,
			 (long)g.nseq * g.tokens, g.heads_per_rank, g.kv_per_rank);
		vcli_say(o, "| kernel             | implementation | shape                                | median ms | "
			    "predicted ms (err) | rate p10-p90            | of peak | SM/mem clock, temp |\n"
			    "|--------------------|---------------|--------------------------------------|-----------|"
			    "-------------------|-------------------------|---------|-------------------|\n");
		if ((rc = validate_compute_run(t, items, n, opt->warmup, opt->iters, on_point, &c, err, sizeof err))) {
			if (err[0] && o->writer)
				fprintf(stderr, "spsim-validate compute: %s\n", err);
			return rc;
		}
	}
	vcli_say(o, "\n%d timed calls per kernel after %d warm-up; median, and the rate at the 10th and 90th "
		    "percentile of the call times%s.\n",
		 opt->iters, opt->warmup, t->ops->flush_cache ? "; L2 flushed before each call whose operands fit in it" : "");
	if (cal.attention_kernel[0])
		vcli_say(o, "Attention measured with: %s.\n", cal.attention_kernel);
	snprintf(cal.source, sizeof cal.source, "spsim-validate compute (%s)", t->ops->name);
	if (vcli_gpu_of(opt, &c.gpu, cal.gpu, sizeof cal.gpu) != VALIDATE_OK)
		return VALIDATE_EINVAL;
	if (opt->platform)
		snprintf(cal.platform, sizeof cal.platform, "%s", opt->platform);
	static const char *const names[3] = {"gemm", "attention", "memory"};
	double eff[3] = {0, 0, 0};
	for (int k = 0; k < 3; k++) {
		const double peak = k == 2 ? c.hbm : c.peak;
		if (c.time[k] > 0 && peak > 0)
			eff[k] = c.work[k] / c.time[k] / peak;
	}
	if (c.peak > 0 && c.hbm > 0) {
		vcli_say(o, "\nEfficiencies (work-weighted over the kernels of a layer): gemm %.3f, attention %.3f, "
			    "memory %.3f\n",
			 eff[0], eff[1], eff[2]);
		/* An efficiency above 1 means the peak given is wrong for this GPU: keep it out. */
		cal.has_gemm = eff[0] > 0 && eff[0] <= 1;
		cal.gemm = eff[0];
		cal.has_attention = eff[1] > 0 && eff[1] <= 1;
		cal.attention = eff[1];
		cal.has_memory = eff[2] > 0 && eff[2] <= 1;
		cal.memory = eff[2];
		for (int k = 0; k < 3; k++)
			if (eff[k] > 1)
				vcli_say(o, "%s efficiency %.2f > 1: the peak given is below what this GPU does; not written.\n",
					 names[k], eff[k]);
		/* The engines apply the scalar to the attention training runs use (cuDNN,
		 * FlashAttention): one measured with the slower fallback would make every
		 * calibrated prediction of long sequences too slow. Its points stay, named. */
		const bool fallback =
			!strcmp(cal.attention_kernel, "wmma-fallback") || !strcmp(cal.attention_kernel, "mixed");
		if (cal.has_attention && fallback) {
			cal.has_attention = false;
			vcli_say(o, "attention efficiency %.3f not written: measured (at least in part) with the WMMA fallback "
				    "kernel, not the fused attention training runs use; attention_points keep it under its kernel.\n",
				 eff[1]);
		}
		if (strcmp(t->ops->name, "cpu") == 0)
			vcli_say(o, "(cpu transport: CPU reference kernels against a GPU peak; the calibration's source "
				    "says so. Do not use it for predictions.)\n");
		if (cal.has_gemm || cal.has_attention || cal.has_memory)
			return vcli_calibration_merge(o, &cal);
	}
	return VALIDATE_OK;
}
