/* Calibration files: measured latencies, bandwidths and compute efficiencies that
 * override a platform's datasheet numbers (format in config.h). */
#include "config/config.h"
#include "config/yamltree.h"

#include <string.h>

static bool read_link(const yt_node *t, const char *key, bool *has_lat, double *lat, bool *has_bw, double *bw,
		      config_error *err)
{
	static const char *const keys[] = {"latency", "bandwidth", NULL};
	const yt_node *l;
	if (!yt_map(t, key, false, &l, err))
		return false;
	if (!l)
		return true;
	return yt_check_keys(l, keys, err) && yt_quantity(l, "latency", false, CONFIG_UNIT_TIME, lat, has_lat, err) &&
	       yt_quantity(l, "bandwidth", false, CONFIG_UNIT_BANDWIDTH, bw, has_bw, err);
}

/* attention_points: a sequence of {kernel, seq, head_dim, direction, causal, tflops}
 * mappings (format in config.h). */
static bool read_attn_points(const yt_node *t, config_calibration *c, config_error *err)
{
	static const char *const keys[] = {"kernel", "seq", "head_dim", "direction", "causal", "tflops", NULL};
	static const char *const dirs[] = {"fwd", "bwd"};
	const yt_node *seq = yt_find(t, "attention_points");
	if (!seq)
		return true;
	if (seq->kind != YT_SEQ || seq->n == 0)
		return yt_fail(err, seq, "'attention_points' must be a non-empty list of {kernel, seq, head_dim, "
					 "direction, causal, tflops} mappings");
	if (seq->n > CONFIG_MAX_ATTN_POINTS)
		return yt_fail(err, seq, "'attention_points' holds %zu points, at most %d are read", seq->n,
			       CONFIG_MAX_ATTN_POINTS);
	for (size_t i = 0; i < seq->n; i++) {
		const yt_node *e = seq->items[i];
		config_attn_point *pt = &c->attn_points[i];
		if (e->kind != YT_MAP)
			return yt_fail(err, e, "each attention point must be a mapping {kernel, seq, head_dim, direction, "
					       "causal, tflops}");
		int kernel = 0, dir = 0;
		bool causal = true;
		char text[CONFIG_NAME_MAX];
		long tokens = 0;
		double tflops = 0;
		if (!yt_check_keys(e, keys, err) ||
		    !yt_enum(e, "kernel", true, config_attn_kernel_names, CONFIG_ATTN_KERNELS, &kernel, NULL, err) ||
		    !yt_string(e, "seq", true, text, sizeof text, NULL, err) ||
		    !yt_posint(e, "head_dim", true, &pt->head_dim, NULL, err) ||
		    !yt_enum(e, "direction", true, dirs, 2, &dir, NULL, err) ||
		    !yt_bool(e, "causal", false, &causal, NULL, err) ||
		    !yt_double(e, "tflops", true, 0, true, 1e6, &tflops, NULL, err))
			return false;
		if (!config_parse_tokens(text, &tokens))
			return yt_fail(err, yt_find(e, "seq"),
				       "'seq' must be a positive token count such as 8192 or 8K, got '%s'", text);
		*pt = (config_attn_point){.kernel = kernel, .bwd = dir, .causal = causal, .head_dim = pt->head_dim,
					  .seq = (double)tokens, .flops = tflops * 1e12};
		for (size_t j = 0; j < i; j++) {
			const config_attn_point *q = &c->attn_points[j];
			if (q->kernel == pt->kernel && q->bwd == pt->bwd && q->causal == pt->causal &&
			    q->head_dim == pt->head_dim && q->seq == pt->seq)
				return yt_fail(err, e,
					       "attention point %zu repeats point %zu (same kernel, seq, head_dim, "
					       "direction and causal); give each shape once",
					       i + 1, j + 1);
		}
	}
	c->n_attn_points = (int)seq->n;
	return true;
}

static bool calibration_read(const yt_doc *doc, config_calibration *c, config_error *err)
{
	static const char *const keys[] = {"source",	 "platform",   "intra_node", "inter_node",
					   "efficiency", "collective_overhead", "attention_points", NULL};
	static const char *const eff_keys[] = {"gemm", "attention", "memory", NULL};
	const yt_node *t, *e;
	if (!yt_top(doc, "calibration", &t, err) || !yt_check_keys(t, keys, err) ||
	    !yt_string(t, "source", false, c->source, sizeof c->source, NULL, err) ||
	    !yt_string(t, "platform", false, c->platform, sizeof c->platform, NULL, err) ||
	    !read_link(t, "intra_node", &c->has_intra_latency, &c->intra_latency, &c->has_intra_bw, &c->intra_bw,
		       err) ||
	    !read_link(t, "inter_node", &c->has_inter_latency, &c->inter_latency, &c->has_inter_bw, &c->inter_bw,
		       err) ||
	    !read_attn_points(t, c, err) || !yt_map(t, "efficiency", false, &e, err))
		return false;
	/* a measured overhead of zero is legitimate: accept 0 as well as a time */
	const yt_node *ov = yt_find(t, "collective_overhead");
	if (ov) {
		double d;
		if (yt_double(t, "collective_overhead", false, 0, false, 0, &d, NULL, NULL) && d == 0) {
			c->has_overhead = true;
			c->overhead = 0;
		} else if (!yt_quantity(t, "collective_overhead", false, CONFIG_UNIT_TIME, &c->overhead,
					&c->has_overhead, err)) {
			return false;
		}
	}
	if (!e)
		return true;
	return yt_check_keys(e, eff_keys, err) &&
	       yt_double(e, "gemm", false, 0, true, 1, &c->gemm, &c->has_gemm, err) &&
	       yt_double(e, "attention", false, 0, true, 1, &c->attention, &c->has_attention, err) &&
	       yt_double(e, "memory", false, 0, true, 1, &c->memory, &c->has_memory, err);
}

bool config_load_calibration(const char *path, config_calibration *out, config_error *err)
{
	config_calibration c;
	memset(&c, 0, sizeof c);
	size_t n = strlen(path);
	if (n >= sizeof c.path)
		return config_fail(err, "%s: path too long", path);
	memcpy(c.path, path, n + 1);
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	bool ok = calibration_read(doc, &c, err);
	yt_free(doc);
	if (ok)
		*out = c;
	return ok;
}

/* A YAML double-quoted scalar. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Latencies in microseconds and bandwidths in GB/s with 9 significant digits: the
 * loader reads them back to within 1e-9 relative. */
static void put_link(FILE *f, const char *key, bool has_lat, double lat, bool has_bw, double bw)
{
	if (!has_lat && !has_bw)
		return;
	fprintf(f, "  %s:\n", key);
	if (has_lat)
		fprintf(f, "    latency: %.9gus\n", lat * 1e6);
	if (has_bw)
		fprintf(f, "    bandwidth: %.9gGB/s\n", bw / 1e9);
}

bool config_write_calibration(FILE *f, const config_calibration *c)
{
	fprintf(f, "calibration:\n");
	if (c->source[0]) {
		fprintf(f, "  source: ");
		put_quoted(f, c->source);
		fputc('\n', f);
	}
	if (c->platform[0]) {
		fprintf(f, "  platform: ");
		put_quoted(f, c->platform);
		fputc('\n', f);
	}
	if (c->has_overhead) {
		if (c->overhead > 0)
			fprintf(f, "  collective_overhead: %.9gus\n", c->overhead * 1e6);
		else
			fprintf(f, "  collective_overhead: 0\n");
	}
	put_link(f, "intra_node", c->has_intra_latency, c->intra_latency, c->has_intra_bw, c->intra_bw);
	put_link(f, "inter_node", c->has_inter_latency, c->inter_latency, c->has_inter_bw, c->inter_bw);
	if (c->has_gemm || c->has_attention || c->has_memory) {
		fprintf(f, "  efficiency:\n");
		if (c->has_gemm)
			fprintf(f, "    gemm: %.9g\n", c->gemm);
		if (c->has_attention)
			fprintf(f, "    attention: %.9g\n", c->attention);
		if (c->has_memory)
			fprintf(f, "    memory: %.9g\n", c->memory);
	}
	if (c->n_attn_points > 0) {
		fprintf(f, "  attention_points:\n");
		for (int i = 0; i < c->n_attn_points; i++) {
			const config_attn_point *pt = &c->attn_points[i];
			fprintf(f,
				"    - {kernel: %s, seq: %.0f, head_dim: %d, direction: %s, causal: %s, tflops: %.9g}\n",
				config_attn_kernel_names[pt->kernel], pt->seq, pt->head_dim, pt->bwd ? "bwd" : "fwd",
				pt->causal ? "true" : "false", pt->flops / 1e12);
		}
	}
	return fflush(f) == 0 && !ferror(f);
}

void config_apply_calibration(config_platform *p, const config_calibration *c)
{
	/* Fitted latencies are intercepts that already contain NCCL's per-call cost, so a
	 * calibration with a latency replaces the platform's overhead (by its own, or 0). */
	if (c->has_overhead)
		p->coll_overhead = c->overhead;
	else if (c->has_intra_latency || c->has_inter_latency)
		p->coll_overhead = 0;
	if (c->has_intra_latency)
		p->intra.latency = c->intra_latency;
	if (c->has_inter_latency)
		p->inter.latency = c->inter_latency;
	if (c->has_intra_bw) {
		/* The measurement is per GPU and already includes the link efficiency. */
		p->intra.bandwidth = c->intra_bw;
		if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH && p->gpus_per_node > 1)
			p->intra.pair_bandwidth = c->intra_bw / (p->gpus_per_node - 1);
		else
			p->intra.pair_bandwidth = c->intra_bw;
		p->eff.intra_link = 1.0;
	}
	if (c->has_inter_bw) {
		p->inter.nic_bandwidth = c->inter_bw;
		p->eff.inter_link = 1.0;
	}
	if (c->has_gemm) {
		p->eff.gemm = c->gemm; /* measured on real GEMMs: replaces the shape model */
		p->eff.gemm_measured = true;
	}
	if (c->has_attention)
		p->eff.attention = c->attention;
	if (c->has_memory)
		p->eff.memory = c->memory;
	if (c->n_attn_points > 0) {
		p->n_attn_points = c->n_attn_points;
		memcpy(p->attn_points, c->attn_points, (size_t)c->n_attn_points * sizeof c->attn_points[0]);
	}
}
